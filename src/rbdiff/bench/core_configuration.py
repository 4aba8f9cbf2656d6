"""bench-core pairs of the configuration-space functions: rbd.integrate, rbd.difference and
rbd.neutral against pin.integrate, pin.difference and pin.neutral (listed in
rbdiff.bench.core.PAIR_MODULES; run ``python -m rbdiff bench-core``)."""

from functools import partial

import numpy as np

import rbdiff as rbd

try:
    import pinocchio as pin
except ImportError:
    pin = None


def calls(model, pm, q, v, a):
    """{name: (rbdiff call, Pinocchio call or None, post)} at the state (q, v): integrate
    q by v, the difference from q to that configuration, and the neutral configuration.
    Calls are ``functools.partial`` objects, as in bench.core.dynamics_calls."""
    q1 = rbd.integrate(model, q, v)
    ours = {"integrate": partial(rbd.integrate, model, q, v),
            "difference": partial(rbd.difference, model, q, q1),
            "neutral": partial(rbd.neutral, model)}
    if pm is None or pin is None:
        return {k: (f, None, None) for k, f in ours.items()}
    theirs = {"integrate": partial(pin.integrate, pm, q, v),
              "difference": partial(pin.difference, pm, q, q1),
              "neutral": partial(pin.neutral, pm)}
    return {k: (ours[k], theirs[k], np.array) for k in ours}
