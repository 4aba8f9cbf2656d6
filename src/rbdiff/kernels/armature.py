"""Armature (rotor inertia), as Pinocchio's ``model.armature``: a constant inertia per
velocity coordinate added to M(q)'s diagonal. RNEA adds armature_k a_k to tau_k, every
algorithm that forms M adds it to the diagonal, and the articulated-body algorithms add
it to D = S^T I^A S before inverting (so aba, minverse and their derivatives see
M + diag(armature)). dM/dq and the second-order tensors do not change.

MuJoCo's free joints (``layout.MI_ARM_WORLD``, set by ``from_mujoco``): MuJoCo adds the
armature A to M's diagonal in its own velocity coordinates, whose linear part is the
world-frame velocity R v_lin (v = [v_lin, w] rbdiff's body-frame twist, R the body's
rotation). Its generalised force on rbdiff's linear dofs is R^T A d/dt(R v_lin) =
R^T A R (a_lin + w x v_lin), which for an isotropic A = a I (MuJoCo gives a free joint's
dofs one value; ``from_mujoco`` refuses others) is a a_lin plus the bias

    b(v) = a (w x v_lin)          on the joint's three linear rows, 0 elsewhere,

a velocity product beyond Pinocchio's convention (the angular dofs agree: both are
body-frame). RNEA and nonlinear_effects add b, ABA solves with tau - b, and the
v-derivatives of ID add db/dv = a [[w]x, -[v_lin]x] and d2b/dv2 (constant); b does not
depend on q. Row 0 of MI_ARM_WORLD counts the flagged joints: a model without any skips
these loops after one read."""

from ..model.layout import MF_ARM, MI_ARM_WORLD, MI_IV, MI_NV
from .jit import helper


@helper
def armature_torque(mi, mf, a, tau):
    """tau_k += armature_k a_k."""
    for i in range(1, mi[0, 0] + 1):
        iv = mi[i, MI_IV]
        for k in range(mi[i, MI_NV]):
            tau[iv + k] += mf[i, MF_ARM + k] * a[iv + k]


@helper
def armature_diagonal(mi, mf, M):
    """M_kk += armature_k."""
    for i in range(1, mi[0, 0] + 1):
        iv = mi[i, MI_IV]
        for k in range(mi[i, MI_NV]):
            M[iv + k, iv + k] += mf[i, MF_ARM + k]


@helper
def world_armature_bias(mf, i, v, iv, k):
    """b_k = a_k (w x v_lin)_k, k in 0..2, for flagged free flyer i whose dofs start at
    iv (v = [v_lin, w] at iv..iv+6)."""
    k1 = (k + 1) % 3
    k2 = (k + 2) % 3
    return mf[i, MF_ARM + k] * (v[iv + 3 + k1] * v[iv + k2] - v[iv + 3 + k2] * v[iv + k1])


@helper
def armature_bias(mi, mf, v, tau):
    """tau (nv) += b(v) on every flagged free flyer's linear rows."""
    if mi[0, MI_ARM_WORLD] == 0:
        return
    for i in range(1, mi[0, 0] + 1):
        if mi[i, MI_ARM_WORLD] != 0:
            iv = mi[i, MI_IV]
            for k in range(3):
                tau[iv + k] += world_armature_bias(mf, i, v, iv, k)


@helper
def armature_bias_jacobian(mi, mf, v, dtau_dv):
    """dtau_dv (nv, nv) += db/dv: on a flagged joint's linear row k, a_k w_k1 at column
    v_k2, -a_k w_k2 at v_k1, a_k v_k2 at w_k1 and -a_k v_k1 at w_k2 (k1, k2 = k+1, k+2
    mod 3), within the joint's own block."""
    if mi[0, MI_ARM_WORLD] == 0:
        return
    for i in range(1, mi[0, 0] + 1):
        if mi[i, MI_ARM_WORLD] != 0:
            iv = mi[i, MI_IV]
            for k in range(3):
                k1 = (k + 1) % 3
                k2 = (k + 2) % 3
                a = mf[i, MF_ARM + k]
                dtau_dv[iv + k, iv + k2] += a * v[iv + 3 + k1]
                dtau_dv[iv + k, iv + k1] -= a * v[iv + 3 + k2]
                dtau_dv[iv + k, iv + 3 + k1] += a * v[iv + k2]
                dtau_dv[iv + k, iv + 3 + k2] -= a * v[iv + k1]


@helper
def armature_bias_hessian(mi, mf, V):
    """V (nv, nv, nv) += d2b/dv2, V[i, j, l] = d2tau_i / dv_j dv_l: on a flagged joint's
    linear row k, +a_k at (w_k1, v_k2) and -a_k at (w_k2, v_k1), both orders."""
    if mi[0, MI_ARM_WORLD] == 0:
        return
    for i in range(1, mi[0, 0] + 1):
        if mi[i, MI_ARM_WORLD] != 0:
            iv = mi[i, MI_IV]
            for k in range(3):
                k1 = (k + 1) % 3
                k2 = (k + 2) % 3
                a = mf[i, MF_ARM + k]
                V[iv + k, iv + 3 + k1, iv + k2] += a
                V[iv + k, iv + k2, iv + 3 + k1] += a
                V[iv + k, iv + 3 + k2, iv + k1] -= a
                V[iv + k, iv + k1, iv + 3 + k2] -= a
