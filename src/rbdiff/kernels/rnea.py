"""Recursive Newton-Euler Algorithm (Featherstone Table 5.1; Carpentier & Mansard 2018,
Alg. 1): tau = M(q) a + C(q, v) v + g(q) - sum_i J_i^T fext_i.

Computed in local joint frames, as Pinocchio does: body inertias and motion subspaces
are constant there, so each joint costs two motion transforms and one force transform
instead of re-expressing its inertia in the world.

nonlinear_effects (qdd = 0) and gravity (qd = qdd = 0) are the same passes without the
terms that vanish, as Pinocchio's nonLinearEffects and computeGeneralizedGravity."""

from ..model.layout import MF_S, MF_Y, MI_IV, MI_NV, MI_PARENT
from .armature import armature_bias, armature_torque
from .fk import init_universe, joint_placement
from .jit import helper, kernel
from .spatial import (add6, axpy6, dot6, force_act, force_cross, inertia_mul, motion_act_inv,
                      motion_cross, set6)
from .workspace import W_A, W_F, W_LP, W_LR, W_T, W_V, W_VJ


@helper
def velocity_step(mi, mf, i, q, v, ws):
    """liMi; v_i = liMi^-1 v_parent + S qd (S qd left in VJ); a_i = liMi^-1 a_parent."""
    lam = mi[i, MI_PARENT]
    iv = mi[i, MI_IV]
    R = ws[i, W_LR:W_LR + 9]
    p = ws[i, W_LP:W_LP + 3]
    joint_placement(mi, mf, i, q, R, p, ws[i, W_T:W_T + 9])
    vi = ws[i, W_V:W_V + 6]
    vJ = ws[i, W_VJ:W_VJ + 6]
    motion_act_inv(R, p, ws[lam, W_V:W_V + 6], vi)
    motion_act_inv(R, p, ws[lam, W_A:W_A + 6], ws[i, W_A:W_A + 6])
    set6(vJ, 0.0)
    for k in range(mi[i, MI_NV]):
        axpy6(v[iv + k], mf[i, MF_S + 6 * k:MF_S + 6 * k + 6], vJ)
    add6(vJ, vi)


@helper
def body_force(mf, i, ws):
    """a_i += v_i x S qd; f_i = I_i a_i + v_i x* I_i v_i."""
    vi = ws[i, W_V:W_V + 6]
    ai = ws[i, W_A:W_A + 6]
    T = ws[i, W_T:W_T + 6]
    motion_cross(vi, ws[i, W_VJ:W_VJ + 6], T)
    add6(T, ai)
    Y = mf[i, MF_Y:MF_Y + 13]
    fi = ws[i, W_F:W_F + 6]
    inertia_mul(Y, vi, T)
    force_cross(vi, T, fi)
    inertia_mul(Y, ai, T)
    add6(T, fi)


@kernel
def rnea_forward_pass(mi, mf, q, v, a, fext, ws):
    """liMi; v_i = liMi^-1 v_parent + S qd; a_i = liMi^-1 a_parent + S qdd + v_i x S qd;
    f_i = I_i a_i + v_i x* I_i v_i - fext_i, all in joint i's frame."""
    init_universe(mf, ws)
    for i in range(1, mi[0, 0] + 1):
        velocity_step(mi, mf, i, q, v, ws)
        iv = mi[i, MI_IV]
        ai = ws[i, W_A:W_A + 6]
        for k in range(mi[i, MI_NV]):
            axpy6(a[iv + k], mf[i, MF_S + 6 * k:MF_S + 6 * k + 6], ai)
        body_force(mf, i, ws)
        if fext is not None:    # pruned at compile time when called with None
            if fext.shape[0] > 0:
                axpy6(-1.0, fext[i], ws[i, W_F:W_F + 6])


@kernel
def bias_forward_pass(mi, mf, q, v, ws):
    """RNEA's forward pass with qdd = 0 (no external forces)."""
    init_universe(mf, ws)
    for i in range(1, mi[0, 0] + 1):
        velocity_step(mi, mf, i, q, v, ws)
        body_force(mf, i, ws)


@kernel
def gravity_forward_pass(mi, mf, q, ws):
    """RNEA's forward pass with qd = qdd = 0: a_i = liMi^-1 a_parent (a_0 = -g), f_i =
    I_i a_i."""
    init_universe(mf, ws)
    for i in range(1, mi[0, 0] + 1):
        lam = mi[i, MI_PARENT]
        R = ws[i, W_LR:W_LR + 9]
        p = ws[i, W_LP:W_LP + 3]
        joint_placement(mi, mf, i, q, R, p, ws[i, W_T:W_T + 9])
        ai = ws[i, W_A:W_A + 6]
        motion_act_inv(R, p, ws[lam, W_A:W_A + 6], ai)
        inertia_mul(mf[i, MF_Y:MF_Y + 13], ai, ws[i, W_F:W_F + 6])


@kernel
def rnea_backward_pass(mi, mf, ws, tau):
    """tau_i = S_i^T f_i; f_parent += liMi* f_i."""
    for i in range(mi[0, 0], 0, -1):
        iv = mi[i, MI_IV]
        fi = ws[i, W_F:W_F + 6]
        for k in range(mi[i, MI_NV]):
            tau[iv + k] = dot6(mf[i, MF_S + 6 * k:MF_S + 6 * k + 6], fi)
        lam = mi[i, MI_PARENT]
        if lam > 0:
            T = ws[i, W_T:W_T + 6]
            force_act(ws[i, W_LR:W_LR + 9], ws[i, W_LP:W_LP + 3], fi, T)
            add6(T, ws[lam, W_F:W_F + 6])


@kernel
def rnea(mi, mf, q, v, a, fext, ws, tau):
    """tau (nv) = RNEA(q, v, a, fext); fext: (njoints, 6) local-frame forces, (0, 6) or None."""
    rnea_forward_pass(mi, mf, q, v, a, fext, ws)
    rnea_backward_pass(mi, mf, ws, tau)
    armature_torque(mi, mf, a, tau)
    armature_bias(mi, mf, v, tau)


@kernel
def nonlinear_effects(mi, mf, q, v, ws, tau):
    """tau (nv) = C(q, v) v + g(q) = RNEA(q, v, 0)."""
    bias_forward_pass(mi, mf, q, v, ws)
    rnea_backward_pass(mi, mf, ws, tau)
    armature_bias(mi, mf, v, tau)


@kernel
def gravity(mi, mf, q, ws, tau):
    """tau (nv) = g(q) = RNEA(q, 0, 0)."""
    gravity_forward_pass(mi, mf, q, ws)
    rnea_backward_pass(mi, mf, ws, tau)
