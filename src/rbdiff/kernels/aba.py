"""Articulated Body Algorithm, world frame (Featherstone Table 7.1; Carpentier & Mansard
2018 Alg. 1 companion): qdd = FD(q, v, tau, fext) in O(N). The articulated-inertia step
is shared with M^-1 (minverse.py)."""

from ..model.layout import MF_ARM, MI_ARM_WORLD, MI_IV, MI_NV, MI_PARENT
from .armature import world_armature_bias
from .fk import init_universe_at_base, placement_pass_joint, velocity_joint, world_body_inertia
from .jit import helper, kernel
from .spatial import (add6, add36, axpy6, copy6, dot6, force_act, force_cross,
                      inertia_dense, inertia_mul, mat6_vec, motion_cross, scale6,
                      set6, sub_outer6, sym_inverse)
from .workspace import (D_S, D_T, D_U, D_UDINV, D_UU, W_A, W_C, W_D, W_DINV, W_IA, W_P,
                        W_PA, W_R, W_T, W_V, W_VJ, W_Y)


@helper
def articulated_dof(r, i, ws, downdate, armature):
    """articulated_joint for a 1-dof joint i whose dof row is r: scalar D, no loops."""
    IA = ws[i, W_IA:W_IA + 36]
    U = ws[r, D_U:D_U + 6]
    mat6_vec(IA, ws[r, D_S:D_S + 6], U)
    d = dot6(ws[r, D_S:D_S + 6], U) + armature
    ws[i, W_D] = d
    dinv = 1.0 / d
    ws[i, W_DINV] = dinv
    if downdate:
        UDinv = ws[r, D_UDINV:D_UDINV + 6]
        copy6(U, UDinv)
        scale6(dinv, UDinv)
        sub_outer6(IA, UDinv, U)


@helper
def articulated_joint(mi, mf, i, ws):
    """U = IA_i S_i, D = S_i^T U, Dinv = D^-1, UDinv = U Dinv (per dof rows), and
    IA_i <- IA_i - U Dinv U^T, the inertia the parent sees (left in IA_i). A root joint
    has no parent, and only a parent reads U Dinv or that IA: for a root both are left
    unset."""
    n = mi[0, 0]
    iv = mi[i, MI_IV]
    nvi = mi[i, MI_NV]
    IA = ws[i, W_IA:W_IA + 36]
    downdate = mi[i, MI_PARENT] > 0
    if nvi == 1:
        articulated_dof(n + 1 + iv, i, ws, downdate, mf[i, MF_ARM])
        return
    for k in range(nvi):
        mat6_vec(IA, ws[n + 1 + iv + k, D_S:D_S + 6], ws[n + 1 + iv + k, D_U:D_U + 6])
    for k in range(nvi):
        for l in range(nvi):
            ws[i, W_D + nvi * k + l] = dot6(ws[n + 1 + iv + k, D_S:D_S + 6],
                                            ws[n + 1 + iv + l, D_U:D_U + 6])
        ws[i, W_D + nvi * k + k] += mf[i, MF_ARM + k]          # armature
    sym_inverse(ws[i, W_D:W_D + 36], nvi, ws[i, W_DINV:W_DINV + 36])
    if not downdate:
        return
    for k in range(nvi):
        UDinv = ws[n + 1 + iv + k, D_UDINV:D_UDINV + 6]
        set6(UDinv, 0.0)
        for l in range(nvi):
            axpy6(ws[i, W_DINV + nvi * l + k], ws[n + 1 + iv + l, D_U:D_U + 6], UDinv)
        sub_outer6(IA, UDinv, ws[n + 1 + iv + k, D_U:D_U + 6])


@kernel
def aba_forward_pass(mi, mf, q, v, fext, ws):
    """Placements, S, v_i, bias acceleration c_i = v_parent x S_i qd_i, IA_i = Y_i and
    pA_i = v_i x* Y_i v_i - X_i* fext_i. World frame with its origin at the base
    (init_universe_at_base): qdd does not depend on where the base is."""
    init_universe_at_base(mi, mf, q, ws)
    for i in range(1, mi[0, 0] + 1):
        lam = mi[i, MI_PARENT]
        placement_pass_joint(mi, mf, i, q, ws)
        velocity_joint(mi, i, v, ws)
        motion_cross(ws[lam, W_V:W_V + 6], ws[i, W_VJ:W_VJ + 6], ws[i, W_C:W_C + 6])
        world_body_inertia(mf, i, ws)
        inertia_dense(ws[i, W_Y:W_Y + 13], ws[i, W_IA:W_IA + 36])
        inertia_mul(ws[i, W_Y:W_Y + 13], ws[i, W_V:W_V + 6], ws[i, W_T:W_T + 6])
        force_cross(ws[i, W_V:W_V + 6], ws[i, W_T:W_T + 6], ws[i, W_PA:W_PA + 6])
        if fext is not None:    # pruned at compile time when called with None
            if fext.shape[0] > 0:
                force_act(ws[i, W_R:W_R + 9], ws[i, W_P:W_P + 3], fext[i],
                          ws[i, W_T:W_T + 6])
                axpy6(-1.0, ws[i, W_T:W_T + 6], ws[i, W_PA:W_PA + 6])


@kernel
def aba_backward_pass(mi, mf, v, tau, ws):
    """u_i = tau_i - S_i^T pA_i (minus MuJoCo's free-joint armature bias b(v),
    armature.py); IA_parent += Ia; pA_parent += pA_i + Ia c_i + U Dinv u."""
    n = mi[0, 0]
    for i in range(n, 0, -1):
        iv = mi[i, MI_IV]
        nvi = mi[i, MI_NV]
        for k in range(nvi):
            ws[n + 1 + iv + k, D_UU] = tau[iv + k] - dot6(ws[n + 1 + iv + k, D_S:D_S + 6],
                                                          ws[i, W_PA:W_PA + 6])
        if mi[i, MI_ARM_WORLD] != 0:    # qdd = ABA(tau - b(v)): b is a joint-space force
            for k in range(3):
                ws[n + 1 + iv + k, D_UU] -= world_armature_bias(mf, i, v, iv, k)
        articulated_joint(mi, mf, i, ws)
        lam = mi[i, MI_PARENT]
        if lam > 0:
            pa = ws[i, W_T:W_T + 6]
            mat6_vec(ws[i, W_IA:W_IA + 36], ws[i, W_C:W_C + 6], pa)
            add6(ws[i, W_PA:W_PA + 6], pa)
            for k in range(nvi):
                axpy6(ws[n + 1 + iv + k, D_UU], ws[n + 1 + iv + k, D_UDINV:D_UDINV + 6], pa)
            add6(pa, ws[lam, W_PA:W_PA + 6])
            add36(ws[i, W_IA:W_IA + 36], ws[lam, W_IA:W_IA + 36])


@kernel
def aba_forward_pass2(mi, ws, qdd):
    """a_i = a_parent + c_i; qdd_i = Dinv (u - U^T a_i); a_i += S_i qdd_i."""
    n = mi[0, 0]
    for i in range(1, n + 1):
        lam = mi[i, MI_PARENT]
        iv = mi[i, MI_IV]
        nvi = mi[i, MI_NV]
        ai = ws[i, W_A:W_A + 6]
        copy6(ws[i, W_C:W_C + 6], ai)
        add6(ws[lam, W_A:W_A + 6], ai)
        for k in range(nvi):
            ws[n + 1 + iv + k, D_T] = ws[n + 1 + iv + k, D_UU] - dot6(
                ws[n + 1 + iv + k, D_U:D_U + 6], ai)
        for k in range(nvi):
            x = 0.0 * ws[i, W_DINV]
            for l in range(nvi):
                x += ws[i, W_DINV + nvi * k + l] * ws[n + 1 + iv + l, D_T]
            qdd[iv + k] = x
        for k in range(nvi):
            axpy6(qdd[iv + k], ws[n + 1 + iv + k, D_S:D_S + 6], ai)


@kernel
def aba(mi, mf, q, v, tau, fext, ws, qdd):
    """qdd (nv) = ABA(q, v, tau, fext); fext: (njoints, 6) local-frame forces, (0, 6) or None."""
    aba_forward_pass(mi, mf, q, v, fext, ws)
    aba_backward_pass(mi, mf, v, tau, ws)
    aba_forward_pass2(mi, ws, qdd)
