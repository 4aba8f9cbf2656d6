"""The first partials that rbdiff.jax's and rbdiff.torch's derivative rules use for the
contact kinematics functions (frame velocity and acceleration, centre of mass, centroidal
momentum, energies): each a function's value and its TRUE partial derivatives, q in the
tangent space, from rbdiff's analytical kernels (NumPy API; q (nq,) or a batch (B, nq),
already on the manifold).

True, not Pinocchio's getters: in "local_world_aligned" the spatial frame derivatives
hold the frame origin fixed (frame_motion.py); the derivative of the returned value adds
[w x dp/dq; 0] to dv_dq and [dw/dt x dp/dq; 0] to da_dq, with dp/dq the linear rows of
the frame's "local_world_aligned" Jacobian (= dv_dv = da_da there) and w, dw/dt the
angular parts of the velocity and acceleration. The classical derivatives are true in
every reference already.

Energies: d potential / dq = gravity(q) (the generalised gravity is the gradient of the
potential); d kinetic / dv = M v, and d kinetic / dq_k = 0.5 v^T (dM/dq_k) v, where
dM/dq_k v = d(M(q) w)/dq_k at w = v is rnea_derivatives' dtau_dq at (q, 0, v) less
its gravity part dtau_dq at (q, 0, 0) (the Euler-Lagrange route through C(q, v) fails
for a free flyer, whose body-twist coordinates add Euler-Poincare terms).
"""

import numpy as np

from . import api as _api
from . import centroidal as _c
from . import derivatives as _d
from . import frame_motion as _fm
from .results import reference_name

_LWA = "local_world_aligned"


def _cross_columns(w, J):
    """[w x J[..., :, k]] for every column k: w (..., 3), J (..., 3, nv) -> (..., 3, nv)."""
    return np.cross(w[..., None, :], np.swapaxes(J, -1, -2), axis=-1).swapaxes(-1, -2)


def frame_velocity(model, q, v, frame, reference):
    """(value (6,), dv_dq, dv_dv (6, nv)): true partials of frame_velocity."""
    val = _fm.frame_velocity(model, q, v, frame, reference)
    dq, dv = _fm.frame_velocity_derivatives(model, q, v, frame, reference)
    if reference_name(reference) == _LWA:
        dq = dq + np.concatenate([_cross_columns(val[..., 3:], dv[..., :3, :]),
                                  np.zeros_like(dq[..., 3:, :])], -2)
    return val, dq, dv


def frame_acceleration(model, q, v, a, frame, reference, classical):
    """(value (6,), da_dq, da_dv, da_da (6, nv)): true partials of frame_acceleration."""
    val = _fm.frame_acceleration(model, q, v, a, frame, reference, classical)
    _vq, dq, dv, da = _fm.frame_acceleration_derivatives(model, q, v, a, frame, reference,
                                                          classical)
    if not classical and reference_name(reference) == _LWA:
        dq = dq + np.concatenate([_cross_columns(val[..., 3:], da[..., :3, :]),
                                  np.zeros_like(dq[..., 3:, :])], -2)
    return val, dq, dv, da


def center_of_mass(model, q):
    """(com (3,), com_jacobian (3, nv))."""
    return _c.center_of_mass(model, q), _c.com_jacobian(model, q)


def centroidal_momentum(model, q, v):
    """(h (6,), dh_dq, dh_dv = Ag (6, nv)) from one centroidal_dynamics_derivatives call."""
    h = _c.centroidal_momentum(model, q, v)
    d = _c.centroidal_dynamics_derivatives(model, q, v, np.zeros_like(v))
    return h, d.dh_dq, d.dhdot_da


def potential_energy(model, q):
    """(V (), dV_dq = gravity(q) (nv,))."""
    return np.asarray(_c.potential_energy(model, q)), _api.gravity(model, q)


def kinetic_energy(model, q, v):
    """(T (), dT_dq, dT_dv = M v (nv,)): two rnea_derivatives calls (at a = v and a = 0,
    both with zero velocity), see the module docstring."""
    z = np.zeros_like(v)
    with_v = _d.rnea_derivatives(model, q, z, v)
    gravity_part = _d.rnea_derivatives(model, q, z, z).dtau_dq
    dMv = with_v.dtau_dq - gravity_part                 # d(M(q) w)/dq at w = v
    dq = 0.5 * np.einsum("...i,...ij->...j", v, dMv)
    Mv = np.einsum("...ij,...j->...i", with_v.dtau_da, v)
    return np.asarray(_c.kinetic_energy(model, q, v)), dq, Mv
