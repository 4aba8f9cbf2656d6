"""bench-core pairs of the Lie-group Jacobians (rbdiff.configuration, kernels/lie.py):
rbd.integrate_jacobians against pin.dIntegrate with ARG0 and then ARG1 (two calls: rbdiff
returns both from one), rbd.difference_jacobians against pin.dDifference ARG0 + ARG1,
and rbd.integrate_transport of an (nv, nv) matrix against pin.dIntegrateTransport
(ARG0: "q", ARG1: "v"). Listed in rbdiff.bench.core.PAIR_MODULES. Both sides of the
Jacobian rows go through a closure (rbdiff returns a NamedTuple, Pinocchio needs two
calls), so both pay one Python call more."""

from functools import partial

import numpy as np

import rbdiff as rbd

try:
    import pinocchio as pin
except ImportError:
    pin = None


def calls(model, pm, q, v, a):
    """{name: (rbdiff call, Pinocchio call or None, post)} at the state (q, v): the
    Jacobians of integrate(q, v), of difference(q, integrate(q, v)), and the transport of
    a (nv, nv) matrix (a's outer product with v: any fixed matrix)."""
    q1 = rbd.integrate(model, q, v)
    J = np.ascontiguousarray(np.outer(a, v))

    def integrate_jacobians():
        return rbd.integrate_jacobians(model, q, v)

    def difference_jacobians():
        return rbd.difference_jacobians(model, q, q1)

    ours = {"integrate_jacobians": integrate_jacobians,
            "difference_jacobians": difference_jacobians,
            "integrate_transport_q": partial(rbd.integrate_transport, model, q, v, J, "q"),
            "integrate_transport_v": partial(rbd.integrate_transport, model, q, v, J, "v")}
    if pm is None or pin is None:
        return {k: (f, None, None) for k, f in ours.items()}

    def d_integrate():
        return pin.dIntegrate(pm, q, v, pin.ARG0), pin.dIntegrate(pm, q, v, pin.ARG1)

    def d_difference():
        return pin.dDifference(pm, q, q1, pin.ARG0), pin.dDifference(pm, q, q1, pin.ARG1)

    theirs = {"integrate_jacobians": d_integrate,
              "difference_jacobians": d_difference,
              "integrate_transport_q": partial(pin.dIntegrateTransport, pm, q, v, J, pin.ARG0),
              "integrate_transport_v": partial(pin.dIntegrateTransport, pm, q, v, J, pin.ARG1)}
    return {k: (ours[k], theirs[k], np.array) for k in ours}
