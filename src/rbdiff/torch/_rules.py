"""The derivative tables: which rbdiff kernel gives which partial derivative.

Every function is a chain of Levels (rbdiff.torch._function): its value, its first
partials (rnea_derivatives, aba_derivatives, ...), their partials (the second-order
tensors, rearranged so that the last axis is always the differentiation variable), and
then a clear error where rbdiff has no kernel for the next order. The kernels are looked
up on the rbdiff module at call time (tests count the calls by monkeypatching them).
Second-order index conventions (rbdiff.second_order): d2tau_dq2[i, j, k] is the
derivative along q_k of dtau_dq[i, j]; d2tau_dqdv[i, j, k] = d^2 tau_i / dq_j dv_k;
dM_dq[i, j, k] = dM_ij / dq_k; d2qdd_dtaudq[i, j, k] = d^2 qdd_i / dtau_j dq_k.
"""

import numpy as np

import rbdiff as rbd
from rbdiff import motion_partials as MP
from rbdiff.cpu import vjp as VJP

from ._function import Level


def _no_kernel(what):
    """The error text for a derivative that no rbdiff kernel computes."""
    return (f"{what} was asked for: rbdiff has no kernel for it (its analytical kernels "
            "stop at second-order derivatives of the dynamics); rbdiff.torch raises rather "
            "than return zeros")


def _swap(t):
    """t[..., i, j, k] -> t[..., i, k, j]."""
    return np.ascontiguousarray(np.swapaxes(t, -1, -2))


def _zeros(q, nv):
    return np.zeros(q.shape[:-1] + (nv,))


def _second(s):
    """The six partials of (d_q, d_v, d_u) from (d2_dq2, d2_dv2, d2_dqdv, d2_dudq-like
    T with T[i, j, k] = d (d_u)[i, j] / dq_k): see the tables below."""
    dq2, dv2, dqdv, T = s
    return [dq2, dqdv, _swap(T), _swap(dqdv), dv2, T]


# row: the first partials (d_q, d_v, d_u) of f(q, v, u); column: (q, v, u); entry: the
# index of its derivative among _second's six tensors. f is affine in u with d_u a
# function of q alone (M for rnea, M^-1 for aba), hence the zeros (None)
_SECOND_TABLE = [[0, 1, 2], [3, 4, None], [5, None, None]]


def _dynamics(name, value, first, second, one):
    """The Levels of rnea or aba: value, first (NamedTuple of 3), second (tuple of 4);
    one: the cpu.vjp code of its One Function."""
    lv2 = Level(f"{name}_second_order", lambda m, x, e: _second(second(m, *x)),
                (True, False, False), missing=_no_kernel(f"{name}: a third derivative"))
    lv1 = Level(f"{name}_derivatives", lambda m, x, e: list(first(m, *x)),
                (True, False, False), _SECOND_TABLE, lv2)
    return Level(name, lambda m, x, e: [value(m, *x)], (True, False, False), [[0, 1, 2]], lv1,
                 one=one)


RNEA = _dynamics("rnea", lambda m, q, v, a: rbd.rnea(m, q, v, a),
                 lambda m, q, v, a: rbd.rnea_derivatives(m, q, v, a),
                 lambda m, q, v, a: _rnea_so(m, q, v, a), VJP.RNEA)
ABA = _dynamics("aba", lambda m, q, v, t: rbd.aba(m, q, v, t),
                lambda m, q, v, t: rbd.aba_derivatives(m, q, v, t),
                lambda m, q, v, t: _aba_so(m, q, v, t), VJP.ABA)


def _rnea_so(m, q, v, a):
    """(d2tau_dq2, d2tau_dv2, d2tau_dqdv, dM_dq)"""
    return tuple(rbd.rnea_second_order_derivatives(m, q, v, a))


def _aba_so(m, q, v, tau):
    """(d2qdd_dq2, d2qdd_dv2, d2qdd_dqdv, d2qdd_dtaudq)"""
    return tuple(rbd.aba_second_order_derivatives(m, q, v, tau))


# nonlinear_effects(q, v) = rnea(q, v, 0)
def _nle_second(m, q, v):
    dq2, dv2, dqdv, _ = _rnea_so(m, q, v, _zeros(q, m.nv))
    return [dq2, dqdv, _swap(dqdv), dv2]


_NLE2 = Level("nonlinear_effects_second_order", lambda m, x, e: _nle_second(m, *x),
              (True, False), missing=_no_kernel("nonlinear_effects: a third derivative"))
NLE = Level("nonlinear_effects",
            lambda m, x, e: [rbd.nonlinear_effects(m, *x)], (True, False), [[0, 1]],
            Level("nonlinear_effects_derivatives",
                  lambda m, x, e: list(rbd.rnea_derivatives(m, *x, _zeros(x[0], m.nv)))[:2],
                  (True, False), [[0, 1], [2, 3]], _NLE2))

# gravity(q) = rnea(q, 0, 0)
GRAVITY = Level("gravity", lambda m, x, e: [rbd.gravity(m, x[0])], (True,), [[0]],
                Level("gravity_derivatives",
                      lambda m, x, e: [rbd.rnea_derivatives(m, x[0], _zeros(x[0], m.nv),
                                                            _zeros(x[0], m.nv))[0]],
                      (True,), [[0]],
                      Level("gravity_second_order",
                            lambda m, x, e: [_rnea_so(m, x[0], _zeros(x[0], m.nv),
                                                      _zeros(x[0], m.nv))[0]],
                            (True,), missing=_no_kernel("gravity: a third derivative"))))

# crba(q) = d rnea / da: dM/dq is rnea_second_order_derivatives' dM_dq
CRBA = Level("crba", lambda m, x, e: [rbd.crba(m, x[0])], (True,), [[0]],
             Level("crba_derivatives",
                   lambda m, x, e: [_rnea_so(m, x[0], _zeros(x[0], m.nv),
                                             _zeros(x[0], m.nv))[3]],
                   (True,), missing=_no_kernel("crba: a second derivative (a third of rnea)")))

# minverse(q) = d aba / dtau: dMinv/dq is aba_second_order_derivatives' d2qdd_dtaudq
MINVERSE = Level("minverse", lambda m, x, e: [rbd.minverse(m, x[0])], (True,), [[0]],
                 Level("minverse_derivatives",
                       lambda m, x, e: [_aba_so(m, x[0], _zeros(x[0], m.nv),
                                                _zeros(x[0], m.nv))[3]],
                       (True,),
                       missing=_no_kernel("minverse: a second derivative (a third of aba)")))


def _hat(J):
    """The 4x4 matrices [[skew(w), nu], [0, 0]] of the twists J[..., :, k] = [nu, w]:
    (..., 4, 4, nv)."""
    H = np.zeros(J.shape[:-2] + (4, 4, J.shape[-1]))
    nu, w = J[..., :3, :], J[..., 3:, :]
    H[..., 0, 1, :], H[..., 0, 2, :] = -w[..., 2, :], w[..., 1, :]
    H[..., 1, 0, :], H[..., 1, 2, :] = w[..., 2, :], -w[..., 0, :]
    H[..., 2, 0, :], H[..., 2, 1, :] = -w[..., 1, :], w[..., 0, :]
    H[..., :3, 3, :] = nu
    return H


def _placement_derivative(m, q, frame):
    """d oMf / dq_k = oMf hat(J_local[:, k]) (the frame's body-frame Jacobian), (..., 4, 4, nv)."""
    T = rbd.frame_placement(m, q, frame)
    J = rbd.frame_jacobian(m, q, frame, reference="local")
    return [np.einsum("...ij,...jkn->...ikn", T, _hat(J))]


FRAME_PLACEMENT = Level(
    "frame_placement", lambda m, x, frame: [rbd.frame_placement(m, x[0], frame)], (True,),
    [[0]], Level("frame_placement_derivatives",
                 lambda m, x, frame: _placement_derivative(m, x[0], frame), (True,),
                 missing="frame_placement is differentiable once: rbdiff has no kernel for "
                         "its second derivative (no Hessian, double backward or "
                         "jacfwd(jacrev) of it)"))


# ---- contact kinematics (issue 24): first partials from rbdiff.motion_partials (true
# derivatives, q in the tangent space); a second derivative raises, except potential
# energy's (its gradient is gravity, whose Levels above carry rnea's kernels)
def _first_only(name):
    return (f"{name} is differentiable once: rbdiff has no kernel for its second "
            "derivative (no Hessian, double backward or jacfwd(jacrev) of it)")


def _contact(name, value, partials, q_inputs):
    """Levels value -> partials(m, *x, *extra)[1:] (one per input) -> a clear error."""
    n = len(q_inputs)
    return Level(name, lambda m, x, e: [np.asarray(value(m, *x, *e))], q_inputs,
                 [list(range(n))],
                 Level(f"{name}_derivatives", lambda m, x, e: list(partials(m, *x, *e)[1:]),
                       q_inputs, missing=_first_only(name)))


FRAME_VELOCITY = _contact("frame_velocity", lambda *x: rbd.frame_velocity(*x),
                          MP.frame_velocity, (True, False))
FRAME_ACCELERATION = _contact("frame_acceleration", lambda *x: rbd.frame_acceleration(*x),
                              MP.frame_acceleration, (True, False, False))
CENTER_OF_MASS = _contact("center_of_mass", lambda *x: rbd.center_of_mass(*x),
                          MP.center_of_mass, (True,))
CENTROIDAL_MOMENTUM = _contact("centroidal_momentum", lambda *x: rbd.centroidal_momentum(*x),
                               MP.centroidal_momentum, (True, False))
KINETIC_ENERGY = _contact("kinetic_energy", lambda *x: rbd.kinetic_energy(*x),
                          MP.kinetic_energy, (True, False))
# potential energy's gradient is gravity(q): its Levels (rnea's kernels) give the Hessian
POTENTIAL_ENERGY = Level("potential_energy",
                         lambda m, x, e: [np.asarray(rbd.potential_energy(m, x[0]))], (True,),
                         [[0]], GRAVITY)


# ---- contact dynamics (issue 25): extra = the contacts tuple; the value (qdd, forces)
# and its six true first partials (rbd.contact_dynamics_derivatives: q in the tangent
# space, LOCAL_WORLD_ALIGNED forces' rotation included); a second derivative raises
CONTACT_DYNAMICS = Level(
    "contact_dynamics", lambda m, x, e: list(rbd.contact_dynamics(m, *x, e)),
    (True, False, False), [[0, 1, 2], [3, 4, 5]],
    Level("contact_dynamics_derivatives",
          lambda m, x, e: list(rbd.contact_dynamics_derivatives(m, *x, e)),
          (True, False, False), missing=_first_only("contact_dynamics")))

# impulse dynamics: extra = (contacts tuple, restitution); the value (v_after, impulses)
# and its four true first partials (rbd.impulse_dynamics_derivatives, q tangent)
IMPULSE_DYNAMICS = Level(
    "impulse_dynamics", lambda m, x, e: list(rbd.impulse_dynamics(m, *x, *e)),
    (True, False), [[0, 1], [2, 3]],
    Level("impulse_dynamics_derivatives",
          lambda m, x, e: list(rbd.impulse_dynamics_derivatives(m, *x, *e)),
          (True, False), missing=_first_only("impulse_dynamics")))
