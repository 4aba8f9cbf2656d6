"""bench-core pairs of the derivatives: rbd.rnea_derivatives and rbd.aba_derivatives
against pin.computeRNEADerivatives and pin.computeABADerivatives, and the second-order
derivatives, which Pinocchio does not expose to Python (no peer here: their C++ peer is
``python -m rbdiff.bench.anchor``). Listed in rbdiff.bench.core.PAIR_MODULES."""

from functools import partial

import numpy as np

import rbdiff as rbd

from .core import _full

try:
    import pinocchio as pin
except ImportError:
    pin = None


def calls(model, pm, q, v, a):
    """{name: (rbdiff call, Pinocchio call or None, post)} at the state (q, v, a); aba's
    torque is rnea's, so both sides differentiate the same forward dynamics."""
    from rbdiff.bench.core import external_forces
    tau = rbd.rnea(model, q, v, a)
    f, pf = external_forces(model)
    ours = {"rnea_derivatives": partial(rbd.rnea_derivatives, model, q, v, a),
            "aba_derivatives": partial(rbd.aba_derivatives, model, q, v, tau),
            # fext by position, as core.calls' (a partial's keywords cost ~90 ns a call)
            "rnea_derivatives+fext": partial(rbd.rnea_derivatives, model, q, v, a, f),
            "aba_derivatives+fext": partial(rbd.aba_derivatives, model, q, v, tau, f),
            "rnea_second_order": partial(rbd.rnea_second_order_derivatives, model, q, v, a),
            "aba_second_order": partial(rbd.aba_second_order_derivatives, model, q, v, tau)}
    pairs = {k: (f, None, None) for k, f in ours.items()}
    if pm is None or pin is None:
        return pairs
    pd = pm.createData()
    pairs["rnea_derivatives"] = (
        ours["rnea_derivatives"], partial(pin.computeRNEADerivatives, pm, pd, q, v, a),
        lambda r: np.array([np.array(r[0]), np.array(r[1]), _full(np.array(r[2]))]))
    pairs["aba_derivatives"] = (
        ours["aba_derivatives"], partial(pin.computeABADerivatives, pm, pd, q, v, tau),
        lambda r: np.array([np.array(r[0]), np.array(r[1]), _full(np.array(r[2]))]))
    pairs["rnea_derivatives+fext"] = (
        ours["rnea_derivatives+fext"],
        partial(pin.computeRNEADerivatives, pm, pd, q, v, a, pf),
        lambda r: np.array([np.array(r[0]), np.array(r[1]), _full(np.array(r[2]))]))
    pairs["aba_derivatives+fext"] = (
        ours["aba_derivatives+fext"],
        partial(pin.computeABADerivatives, pm, pd, q, v, tau, pf),
        lambda r: np.array([np.array(r[0]), np.array(r[1]), _full(np.array(r[2]))]))
    return pairs
