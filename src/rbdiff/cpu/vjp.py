"""One-state entries of the front ends' forward and backward (rbdiff.torch's One
Function for rnea and aba): the forward and the whole backward each one compiled call, with q in its ambient layout
(retracted here). The dynamics and their derivatives are the NumPy fast paths' own
entries, called by address (cpu/twin.py: no second compile of them, and only the ones a
model needs, on first use); the products and the tangent map are kernels/vjp.py's. Fast
entries: they hold the GIL, so the caller's scratch (per model) is never shared by two
threads at once."""

from ..kernels.aza import AZA
from ..kernels.configuration import retract
from ..kernels.jit import fast_entry, helper
from ..kernels.vjp import dynamics_vjp
from .checks import BAD_Q, BAD_SHAPE
from .single import (aba_derivatives_one, aba_derivatives_product_one, aba_one,
                     rnea_derivatives_one, rnea_one)
from .twin import twin_later_ok

RNEA = 0         # the dynamics: inverse (rnea), forward with the DMM product (aba),
ABA = 1          # forward with the AZA product (aba on long branches: kernels/aza.py,
ABA_AZA = 2      # the choice rbd.aba_derivatives' product="auto" makes)


@helper
def _retracted(mi, q, qr):
    """qr = retract(q), or ValueError (lengths, a zero rotation)."""
    if q.shape[0] != mi[0, 1] or qr.shape[0] != mi[0, 1]:
        raise ValueError(BAD_SHAPE)
    if not retract(mi, q, qr):
        raise ValueError(BAD_Q)


@fast_entry
def dynamics_retracted_one(mi, mf, q, v, u, fn, ws, qr, out):
    """out (nv,) = rnea (fn RNEA) or aba (else) at (retract(q), v, u); qr (nq,) scratch
    (retract(q) on return), ws the model's workspace. ValueError as rnea_one / aba_one,
    or BAD_Q for a zero (or NaN) quaternion or (cos, sin) pair."""
    _retracted(mi, q, qr)
    if fn == RNEA:
        twin_later_ok(rnea_one, (mi, mf, qr, v, u, None, ws, out))
    else:
        twin_later_ok(aba_one, (mi, mf, qr, v, u, None, ws, out))


@fast_entry
def dynamics_vjp_one(mi, mf, q, v, u, g, fn, qr, D, grad):
    """grad (nq + 2 nv) = the cotangents of (q, v, u) of g (nv,) through rnea or aba (fn)
    at (retract(q), v, u) (kernels.vjp.dynamics_vjp); qr (nq,) and D (4, nv, nv)
    scratch (D[:3] the three partial derivatives on return)."""
    nv = mi[0, 2]
    if (g.shape[0] != nv or grad.shape[0] != mi[0, 1] + 2 * nv or D.shape[0] < 4
            or D.shape[1] != nv or D.shape[2] != nv):
        raise ValueError(BAD_SHAPE)
    _retracted(mi, q, qr)
    if fn == RNEA:
        twin_later_ok(rnea_derivatives_one, (mi, mf, qr, v, u, None, D[0], D[1], D[2]))
    elif fn == ABA:
        twin_later_ok(aba_derivatives_one, (mi, mf, qr, v, u, None, D[0], D[1], D[2]))
    else:
        twin_later_ok(aba_derivatives_product_one, (mi, mf, qr, v, u, None, D[0], D[1],
                                                    D[2], AZA))
    dynamics_vjp(mi, q, g, D, grad)
