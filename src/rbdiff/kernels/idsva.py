"""IDSVA: first-order derivatives of inverse dynamics in the world frame, multi-DoF
joints, floating base and external forces (Singh, Russell & Wensing 2022, Alg. 1; the
listing is restated in DESIGN.md section 5).

Symbols, all in the world frame (see spatial.py for the rest of the glossary):
  S       motion subspace columns of a joint (one 6-vector per dof)
  Psid    crm(v_parent) S: the rate of change of S from the parent's motion
  Psidd   crm(a_parent) S + crm(v_parent) Psid
  Phi     2 Psid + crm(S qd) S: how a dof's rate enters the accelerations below it
  IC      composite rigid-body inertia of the subtree (compact, 13 numbers)
  BC      2 B(IC, v) = Idot(IC, v) + icrf(IC v), summed over the subtree. In the world
          frame its first three columns (those acting on a linear velocity) are zero:
          BC = [[0, -2 [fl]x], [0, B22]], stored compact as 12 numbers, BC[0:3] = fl
          (the linear part of IC v), BC[3:12] = B22 row-major
  f       net force of the subtree: sum of IC a + crf(v) IC v - X* fext
  T1..T4  IC S, BC S + IC Phi, BC Psid + IC Psidd + crf(S) f, BC^T S (only its
          angular half is stored: its linear half is zero)

External forces need nothing beyond f: a force fixed in a body moves with it, so its
q-derivative along an ancestor's dof k is the rigid-motion term crf(S_k) X* fext, which
the listing already takes from f (in T3 for strict descendants, and cancelled by dS/dq
for ancestors).
"""

from ..model.layout import MI_IV, MI_NV, MI_NVSUB, MI_PARENT
from .armature import armature_bias_jacobian, armature_diagonal
from .fk import (acceleration_joint, init_universe_at_base, placement_pass_joint, velocity_joint,
                 world_body_inertia)
from .jit import helper, kernel
from .spatial import (add6, add13, axpy6, force_act, force_cross, inertia_mul, inertia_rate,
                      motion_cross)
from .workspace import D_S, W_A, W_F, W_IA, W_P, W_R, W_T, W_V, W_VJ, W_Y

# joint rows: IC lives in W_Y, f in W_F; BC (12) in the articulated-inertia columns
W_BC = W_IA
# dof rows (after S, which fk writes at D_S)
D_PSID = 6
D_PSIDD = 12
D_PHI = 18
D_T1 = 24
D_T2 = 30
D_T3 = 36
D_T4 = 42           # 3: angular half of BC^T S
IDSVA_WIDTH = W_BC + 12


@helper
def body_bias_inertia(Y, v, Yv, BC):
    """BC (12, compact) = 2 B(Y, v) = crf(v) Y - Y crm(v) + icrf(Y v); Yv = Y v.

    With Y = [[m, -[h]], [[h], Io]]: the lower-right block is
    C + C^T + 2 (vl.h) E - [n]x, C = [w]x Io - h vl^T, n the angular part of Y v."""
    r = inertia_rate(Y, v)      # its lower-right block: C + C^T + 2 (vl.h) E
    n0, n1, n2 = Yv[3], Yv[4], Yv[5]
    BC[0] = Yv[0]
    BC[1] = Yv[1]
    BC[2] = Yv[2]
    BC[3] = r[4]
    BC[4] = r[5] + n2
    BC[5] = r[6] - n1
    BC[6] = r[7] - n2
    BC[7] = r[8]
    BC[8] = r[9] + n0
    BC[9] = r[10] + n1
    BC[10] = r[11] - n0
    BC[11] = r[12]


@helper
def bc_mul(BC, m, out):
    """out = BC m = [-2 fl x m_w; B22 m_w]."""
    m3, m4, m5 = m[3], m[4], m[5]
    out[0] = -2.0 * (BC[1] * m5 - BC[2] * m4)
    out[1] = -2.0 * (BC[2] * m3 - BC[0] * m5)
    out[2] = -2.0 * (BC[0] * m4 - BC[1] * m3)
    out[3] = BC[3] * m3 + BC[4] * m4 + BC[5] * m5
    out[4] = BC[6] * m3 + BC[7] * m4 + BC[8] * m5
    out[5] = BC[9] * m3 + BC[10] * m4 + BC[11] * m5


@helper
def bct_mul_ang(BC, m, out):
    """out (3) = angular half of BC^T m = 2 fl x m_l + B22^T m_w (the linear half is 0)."""
    m0, m1, m2, m3, m4, m5 = m[0], m[1], m[2], m[3], m[4], m[5]
    out[0] = 2.0 * (BC[1] * m2 - BC[2] * m1) + BC[3] * m3 + BC[6] * m4 + BC[9] * m5
    out[1] = 2.0 * (BC[2] * m0 - BC[0] * m2) + BC[4] * m3 + BC[7] * m4 + BC[10] * m5
    out[2] = 2.0 * (BC[0] * m1 - BC[1] * m0) + BC[5] * m3 + BC[8] * m4 + BC[11] * m5


@helper
def add12(x, y):
    """y += x for 12-arrays (unrolled)."""
    y[0] += x[0]
    y[1] += x[1]
    y[2] += x[2]
    y[3] += x[3]
    y[4] += x[4]
    y[5] += x[5]
    y[6] += x[6]
    y[7] += x[7]
    y[8] += x[8]
    y[9] += x[9]
    y[10] += x[10]
    y[11] += x[11]


@helper
def dof_kinematics(mi, i, ws):
    """Psid, Psidd and Phi of joint i's dofs (after v_i, a_i and S qd are known)."""
    n = mi[0, 0]
    lam = mi[i, MI_PARENT]
    iv = mi[i, MI_IV]
    vl = ws[lam, W_V:W_V + 6]
    al = ws[lam, W_A:W_A + 6]
    for k in range(mi[i, MI_NV]):
        r = n + 1 + iv + k
        S = ws[r, D_S:D_S + 6]
        Psid = ws[r, D_PSID:D_PSID + 6]
        Psidd = ws[r, D_PSIDD:D_PSIDD + 6]
        Phi = ws[r, D_PHI:D_PHI + 6]
        motion_cross(vl, S, Psid)
        motion_cross(al, S, Psidd)
        motion_cross(vl, Psid, Phi)         # Phi as scratch
        add6(Phi, Psidd)
        motion_cross(ws[i, W_VJ:W_VJ + 6], S, Phi)
        axpy6(2.0, Psid, Phi)


@helper
def body_forces(i, ws):
    """BC_i = 2 B(Y_i, v_i) and f_i = Y_i a_i + v_i x* Y_i v_i (world; IC_i = Y_i)."""
    Y = ws[i, W_Y:W_Y + 13]
    vi = ws[i, W_V:W_V + 6]
    Yv = ws[i, W_T:W_T + 6]
    fi = ws[i, W_F:W_F + 6]
    inertia_mul(Y, vi, Yv)
    body_bias_inertia(Y, vi, Yv, ws[i, W_BC:W_BC + 12])
    force_cross(vi, Yv, fi)
    inertia_mul(Y, ws[i, W_A:W_A + 6], Yv)
    add6(Yv, fi)


@helper
def joint_dynamics(mi, mf, i, fext, ws):
    """Psid, Psidd, Phi of joint i's dofs; IC_i = Y_i, BC_i and f_i (minus the world-frame
    external force X_i* fext_i), once joint i's placement, S, v and a are known."""
    dof_kinematics(mi, i, ws)
    world_body_inertia(mf, i, ws)
    body_forces(i, ws)
    if fext is not None:    # pruned at compile time when called with None
        if fext.shape[0] > 0:
            T = ws[i, W_T:W_T + 6]
            force_act(ws[i, W_R:W_R + 9], ws[i, W_P:W_P + 3], fext[i], T)
            axpy6(-1.0, T, ws[i, W_F:W_F + 6])


@kernel
def idsva_forward_pass(mi, mf, q, v, a, fext, ws):
    """World placements, S, v, a (with -gravity at the base), then joint_dynamics; the
    world origin at the base (init_universe_at_base): the derivatives do not depend on it."""
    init_universe_at_base(mi, mf, q, ws)
    for i in range(1, mi[0, 0] + 1):
        placement_pass_joint(mi, mf, i, q, ws)
        velocity_joint(mi, i, v, ws)
        acceleration_joint(mi, i, a, ws)
        joint_dynamics(mi, mf, i, fext, ws)


@kernel
def idsva_dynamics_pass(mi, mf, fext, ws):
    """joint_dynamics for every joint, on a workspace whose world placements, S, v, S qd
    and a (with qdd) an earlier pass left (ABA's two forward passes do)."""
    for i in range(1, mi[0, 0] + 1):
        joint_dynamics(mi, mf, i, fext, ws)


@helper
def joint_terms(mi, i, ws):
    """T1..T4 of joint i's dofs from the subtree sums IC_i, BC_i, f_i."""
    n = mi[0, 0]
    iv = mi[i, MI_IV]
    Y = ws[i, W_Y:W_Y + 13]
    BC = ws[i, W_BC:W_BC + 12]
    fi = ws[i, W_F:W_F + 6]
    tmp = ws[i, W_T:W_T + 6]
    for k in range(mi[i, MI_NV]):
        r = n + 1 + iv + k
        S = ws[r, D_S:D_S + 6]
        T1 = ws[r, D_T1:D_T1 + 6]
        T2 = ws[r, D_T2:D_T2 + 6]
        T3 = ws[r, D_T3:D_T3 + 6]
        inertia_mul(Y, S, T1)
        bc_mul(BC, S, T2)
        inertia_mul(Y, ws[r, D_PHI:D_PHI + 6], tmp)
        add6(tmp, T2)
        bc_mul(BC, ws[r, D_PSID:D_PSID + 6], T3)
        inertia_mul(Y, ws[r, D_PSIDD:D_PSIDD + 6], tmp)
        add6(tmp, T3)
        force_cross(S, fi, tmp)
        add6(tmp, T3)
        bct_mul_ang(BC, S, ws[r, D_T4:D_T4 + 3])


@helper
def joint_fill(mi, i, ws, dtau_dq, dtau_dv, M):
    """Rows and columns of joint i's dofs against the dofs jj of subtree(i):
    dq[ii, jj] = S_ii.T3_jj (jj below joint i), dq[jj, ii] = T1_jj.Psidd_ii + T4_jj.Psid_ii,
    dv[ii, jj] = S_ii.T2_jj, dv[jj, ii] = T1_jj.Phi_ii + T4_jj.S_ii, M = S_ii.T1_jj.
    Within joint i only the column formulas hold (the row ones would add
    S_ii.crf(S_jj) f, which dS_ii/dq_jj cancels). Scalar loads: this is the O(N d) loop."""
    n = mi[0, 0]
    iv = mi[i, MI_IV]
    nvi = mi[i, MI_NV]
    end = iv + mi[i, MI_NVSUB]
    for k in range(nvi):
        ii = iv + k
        r = n + 1 + ii
        s0, s1, s2 = ws[r, D_S], ws[r, D_S + 1], ws[r, D_S + 2]
        s3, s4, s5 = ws[r, D_S + 3], ws[r, D_S + 4], ws[r, D_S + 5]
        p3, p4, p5 = ws[r, D_PSID + 3], ws[r, D_PSID + 4], ws[r, D_PSID + 5]
        pp0, pp1, pp2 = ws[r, D_PSIDD], ws[r, D_PSIDD + 1], ws[r, D_PSIDD + 2]
        pp3, pp4, pp5 = ws[r, D_PSIDD + 3], ws[r, D_PSIDD + 4], ws[r, D_PSIDD + 5]
        h0, h1, h2 = ws[r, D_PHI], ws[r, D_PHI + 1], ws[r, D_PHI + 2]
        h3, h4, h5 = ws[r, D_PHI + 3], ws[r, D_PHI + 4], ws[r, D_PHI + 5]
        for jj in range(iv, end):
            c = n + 1 + jj
            a0, a1, a2 = ws[c, D_T1], ws[c, D_T1 + 1], ws[c, D_T1 + 2]
            a3, a4, a5 = ws[c, D_T1 + 3], ws[c, D_T1 + 4], ws[c, D_T1 + 5]
            b3, b4, b5 = ws[c, D_T4], ws[c, D_T4 + 1], ws[c, D_T4 + 2]
            dtau_dq[jj, ii] = (a0 * pp0 + a1 * pp1 + a2 * pp2 + a3 * pp3 + a4 * pp4
                               + a5 * pp5 + b3 * p3 + b4 * p4 + b5 * p5)
            dtau_dv[jj, ii] = (a0 * h0 + a1 * h1 + a2 * h2 + a3 * h3 + a4 * h4 + a5 * h5
                               + b3 * s3 + b4 * s4 + b5 * s5)
            m = a0 * s0 + a1 * s1 + a2 * s2 + a3 * s3 + a4 * s4 + a5 * s5
            M[ii, jj] = m
            M[jj, ii] = m
        for jj in range(iv + nvi, end):
            c = n + 1 + jj
            dtau_dq[ii, jj] = (s0 * ws[c, D_T3] + s1 * ws[c, D_T3 + 1] + s2 * ws[c, D_T3 + 2]
                               + s3 * ws[c, D_T3 + 3] + s4 * ws[c, D_T3 + 4]
                               + s5 * ws[c, D_T3 + 5])
            dtau_dv[ii, jj] = (s0 * ws[c, D_T2] + s1 * ws[c, D_T2 + 1] + s2 * ws[c, D_T2 + 2]
                               + s3 * ws[c, D_T2 + 3] + s4 * ws[c, D_T2 + 4]
                               + s5 * ws[c, D_T2 + 5])


@kernel
def idsva_backward_pass(mi, ws, dtau_dq, dtau_dv, M):
    """i = N..1: T1..T4 of joint i, fill its rows and columns, then IC, BC and f of the
    subtree move to the parent."""
    for i in range(mi[0, 0], 0, -1):
        joint_terms(mi, i, ws)
        joint_fill(mi, i, ws, dtau_dq, dtau_dv, M)
        lam = mi[i, MI_PARENT]
        if lam > 0:
            add13(ws[i, W_Y:W_Y + 13], ws[lam, W_Y:W_Y + 13])
            add12(ws[i, W_BC:W_BC + 12], ws[lam, W_BC:W_BC + 12])
            add6(ws[i, W_F:W_F + 6], ws[lam, W_F:W_F + 6])


@kernel
def idsva(mi, mf, q, v, a, fext, ws, dtau_dq, dtau_dv, M):
    """dtau_dq, dtau_dv, M = dtau_da (each (nv, nv), every entry written) at (q, v, a,
    fext); ws: (workspace_rows, >= IDSVA_WIDTH); fext (njoints, 6) local-frame forces,
    (0, 6) or None."""
    dtau_dq[:, :] = 0.0
    dtau_dv[:, :] = 0.0
    M[:, :] = 0.0
    idsva_forward_pass(mi, mf, q, v, a, fext, ws)
    idsva_backward_pass(mi, ws, dtau_dq, dtau_dv, M)
    armature_diagonal(mi, mf, M)
    armature_bias_jacobian(mi, mf, v, dtau_dv)
