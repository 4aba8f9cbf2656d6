"""Recursive Newton-Euler Algorithm, world frame (Featherstone Table 5.1;
Carpentier & Mansard 2018, Alg. 1): tau = M(q) a + C(q, v) v + g(q) - J^T fext."""

from ..model.layout import MI_IV, MI_NV, MI_PARENT
from .fk import (acceleration_joint, init_universe, placement_pass_joint, velocity_joint,
                 world_body_inertia)
from .jit import helper, kernel
from .spatial import add6, axpy6, dot6, force_act, force_cross, inertia_mul
from .workspace import D_S, W_A, W_F, W_P, W_R, W_T, W_V, W_Y


@helper
def body_force(mi, mf, i, fext, ws):
    """Y_i (world body inertia) and f_i = Y_i a_i + v_i x* Y_i v_i - X_i* fext_i."""
    world_body_inertia(mf, i, ws)
    inertia_mul(ws[i, W_Y:W_Y + 13], ws[i, W_V:W_V + 6], ws[i, W_T:W_T + 6])
    force_cross(ws[i, W_V:W_V + 6], ws[i, W_T:W_T + 6], ws[i, W_F:W_F + 6])
    inertia_mul(ws[i, W_Y:W_Y + 13], ws[i, W_A:W_A + 6], ws[i, W_T:W_T + 6])
    add6(ws[i, W_T:W_T + 6], ws[i, W_F:W_F + 6])
    if fext.shape[0] > 0:
        force_act(ws[i, W_R:W_R + 9], ws[i, W_P:W_P + 3], fext[i - 1], ws[i, W_T:W_T + 6])
        axpy6(-1.0, ws[i, W_T:W_T + 6], ws[i, W_F:W_F + 6])


@kernel
def rnea_forward_pass(mi, mf, q, v, a, fext, ws):
    init_universe(mf, ws)
    for i in range(1, mi[0, 0] + 1):
        placement_pass_joint(mi, mf, i, q, ws)
        velocity_joint(mi, i, v, ws)
        acceleration_joint(mi, i, a, ws)
        body_force(mi, mf, i, fext, ws)


@kernel
def rnea_backward_pass(mi, ws, tau):
    """tau_i = S_i^T f_i; f_parent += f_i (world frame: no transform)."""
    n = mi[0, 0]
    for i in range(n, 0, -1):
        iv = mi[i, MI_IV]
        for k in range(mi[i, MI_NV]):
            tau[iv + k] = dot6(ws[n + 1 + iv + k, D_S:D_S + 6], ws[i, W_F:W_F + 6])
        lam = mi[i, MI_PARENT]
        if lam > 0:
            add6(ws[i, W_F:W_F + 6], ws[lam, W_F:W_F + 6])


@kernel
def rnea(mi, mf, q, v, a, fext, ws, tau):
    """tau (nv) = RNEA(q, v, a, fext); fext is (njoints, 6) local-frame forces or (0, 6)."""
    rnea_forward_pass(mi, mf, q, v, a, fext, ws)
    rnea_backward_pass(mi, ws, tau)
