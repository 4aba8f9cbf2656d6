"""IDSVA-SO: second-order derivatives of inverse dynamics in the world frame, multi-DoF
joints, floating base and external forces (Singh, Russell & Wensing 2023, Appendix C;
the listing is restated in DESIGN.md section 5), O(N d^2).

Outputs, each (nv, nv, nv), the output index first (tangent-space q):
  Q[i, j, k] = d^2 tau_i / dq_j dq_k = d/dq_k (dtau/dq)[i, j]
  V[i, j, k] = d^2 tau_i / dv_j dv_k                      (symmetric in j, k)
  X[i, j, k] = d^2 tau_i / dq_j dv_k = d/dv_k (dtau/dq)[i, j]
  D[i, j, k] = d M_ij / dq_k                              (symmetric in i, j)
Q[i, j, k] = Q[i, k, j] except where dofs j and k belong to one multi-DoF joint: there
the tangent-space coordinates do not commute and Q carries their Lie bracket.

Symbols beyond idsva.py's (all world frame; s, psid, psidd, phi = psid + sd are one
column of S, Psid, Psidd, Phi, with sd = crm(v_i) s):
  Idot(I, s)   crf(s) I - I crm(s)   (symmetric for a symmetric I)
  icrf(f)      the 6x6 matrix with icrf(f) m = crf(m) f (antisymmetric)
  A0 = icrf(IC s), A1 = Idot(IC, s), Bphi = 2 B(IC, s) = A1 + A0,
  A3 = 2 B(IC, psid) + Idot(BC, s), A4 = icrf(BC^T s) = icrf(T4),
  A5 = icrf(T3), A7 = icrf(T2), A2 = 2 A0 - Bphi = A0 - A1, A6 = crf(s) IC + A0.
Products with the icrf matrices are cross products (icrf(f) m = m x* f), so only A1 and
A3 are formed as dense 6x6 blocks; the listing's u-vectors of a dof pair (a, b) then
reduce to (u2 = u12, u5 = u8, u10 = u12 + u9, u11 = u12 - u9):
  u12 = A1 s_t              u9 = s_t x* T1           u1 = A3^T s_t
  u3 = A3 psid_t + A1 psidd_t + s_t x* T3            u4 = s x* (IC s_t) + u9
  u8 = s_t x* T4 - A1 psid_t + psid_t x* T1          u6 = A1 psid_t + psid_t x* T1 + s_t x* T2
  u7 = A3 s_t + A1 phi_t
External forces need nothing beyond f (as in first order): checked against complex step.

Entries the listing does not write are zero: triples of dofs whose joints do not lie on
one root-leaf path, and for D those whose derivative dof is in or above the shallower
joint of the other two (its motion moves both rigidly). ``zero_fill`` clears the tensors
first.
"""

import numpy as np

from ..model.layout import MI_IV, MI_NV, MI_PARENT
from .idsva import (D_PHI, D_PSID, D_PSIDD, D_T1, D_T2, D_T3, D_T4, W_BC, add12,
                    bc_mul, bct_mul_ang, body_bias_inertia, idsva_forward_pass,
                    joint_fill, joint_terms)
from .armature import armature_bias_hessian
from .jit import helper, kernel
from .spatial import add6, add13, axpy6, force_cross, inertia_mul, inertia_rate
from .workspace import D_S, W_F, W_Y

# scratch vector `sc` layout (caller allocates SC_SIZE scalars)
SC_A1 = 0           # 13: A1 = Idot(IC, s), compact as an inertia [0, fl, B] (see a1_block)
SC_A3 = 13          # 12: A3, compact like BC: [g, B22] for [[0, -2 [g]x], [0, B22]]
SC_T4 = 25          # 6: BC^T s, full (its linear half is zero)
SC_W = 31           # 6: scratch
SC_Y = 37           # 6: scratch
SC_U = 43           # u-vectors of the current dof pair, 6 each, see U_* below
U_12, U_9, U_1, U_3, U_4, U_8, U_6, U_7, U_11 = 0, 6, 12, 18, 24, 30, 36, 42, 48
SC_SIZE = SC_U + 54


# ---- compact 6x6 blocks -------------------------------------------------------------------

@helper
def a1_block(Y, s, Ys, A1):
    """A1 = Idot(Y, s) = crf(s) Y - Y crm(s) for a compact inertia Y, Ys = Y s. In the
    world frame it is [[0, -[fl]x], [[fl]x, B]] with fl the linear half of Y s and
    B = C + C^T + 2 (v.h) E, C = [w]x Io - h v^T (symmetric): the matrix of a compact
    inertia [0, fl, B], so that inertia_mul applies it."""
    r = inertia_rate(Y, s)      # its lower-right block is B
    A1[0] = 0.0
    A1[1] = Ys[0]
    A1[2] = Ys[1]
    A1[3] = Ys[2]
    A1[4] = r[4]
    A1[5] = r[5]
    A1[6] = r[6]
    A1[7] = r[7]
    A1[8] = r[8]
    A1[9] = r[9]
    A1[10] = r[10]
    A1[11] = r[11]
    A1[12] = r[12]


@helper
def add_idot_bc(BC, s, A):
    """A += Idot(BC, s) for BC and A compact ([[0, -2 [fl]x], [0, B22]]):
    Idot(BC, s) = [[0, -2 [w x fl]x], [0, [w]x B22 - B22 [w]x - 2 [v]x [fl]x]], with
    [v]x [fl]x = fl v^T - (v.fl) E."""
    v0, v1, v2, w0, w1, w2 = s[0], s[1], s[2], s[3], s[4], s[5]
    f0, f1, f2 = BC[0], BC[1], BC[2]
    b0, b1, b2, b3, b4, b5, b6, b7, b8 = (BC[3], BC[4], BC[5], BC[6], BC[7], BC[8],
                                          BC[9], BC[10], BC[11])
    A[0] += w1 * f2 - w2 * f1
    A[1] += w2 * f0 - w0 * f2
    A[2] += w0 * f1 - w1 * f0
    vf = 2.0 * (v0 * f0 + v1 * f1 + v2 * f2)
    # [w]x B: row 0 = -w2 B[1] + w1 B[2], row 1 = w2 B[0] - w0 B[2], row 2 = -w1 B[0] + w0 B[1]
    # B [w]x: col 0 = B[:,1] w2 - B[:,2] w1, col 1 = -B[:,0] w2 + B[:,2] w0,
    #         col 2 = B[:,0] w1 - B[:,1] w0
    A[3] += (-w2 * b3 + w1 * b6) - (b1 * w2 - b2 * w1) - 2.0 * f0 * v0 + vf
    A[4] += (-w2 * b4 + w1 * b7) - (-b0 * w2 + b2 * w0) - 2.0 * f0 * v1
    A[5] += (-w2 * b5 + w1 * b8) - (b0 * w1 - b1 * w0) - 2.0 * f0 * v2
    A[6] += (w2 * b0 - w0 * b6) - (b4 * w2 - b5 * w1) - 2.0 * f1 * v0
    A[7] += (w2 * b1 - w0 * b7) - (-b3 * w2 + b5 * w0) - 2.0 * f1 * v1 + vf
    A[8] += (w2 * b2 - w0 * b8) - (b3 * w1 - b4 * w0) - 2.0 * f1 * v2
    A[9] += (-w1 * b0 + w0 * b3) - (b7 * w2 - b8 * w1) - 2.0 * f2 * v0
    A[10] += (-w1 * b1 + w0 * b4) - (-b6 * w2 + b8 * w0) - 2.0 * f2 * v1
    A[11] += (-w1 * b2 + w0 * b5) - (b6 * w1 - b7 * w0) - 2.0 * f2 * v2 + vf


@helper
def force_cross_ang(v, f, out):
    """out = v x* f for a force f whose linear half is zero."""
    out[0] = 0.0
    out[1] = 0.0
    out[2] = 0.0
    out[3] = v[4] * f[5] - v[5] * f[4]
    out[4] = v[5] * f[3] - v[3] * f[5]
    out[5] = v[3] * f[4] - v[4] * f[3]


@helper
def inertia_mul_add(Y, m, out, alpha):
    """out += alpha Y m for a compact inertia Y."""
    ms, h0, h1, h2 = Y[0], Y[1], Y[2], Y[3]
    out[0] += alpha * (ms * m[0] - (h1 * m[5] - h2 * m[4]))
    out[1] += alpha * (ms * m[1] - (h2 * m[3] - h0 * m[5]))
    out[2] += alpha * (ms * m[2] - (h0 * m[4] - h1 * m[3]))
    out[3] += alpha * (h1 * m[2] - h2 * m[1] + Y[4] * m[3] + Y[5] * m[4] + Y[6] * m[5])
    out[4] += alpha * (h2 * m[0] - h0 * m[2] + Y[7] * m[3] + Y[8] * m[4] + Y[9] * m[5])
    out[5] += alpha * (h0 * m[1] - h1 * m[0] + Y[10] * m[3] + Y[11] * m[4] + Y[12] * m[5])


@helper
def bc_mul_add(BC, m, out):
    """out += BC m for a compact BC-form block."""
    m3, m4, m5 = m[3], m[4], m[5]
    out[0] -= 2.0 * (BC[1] * m5 - BC[2] * m4)
    out[1] -= 2.0 * (BC[2] * m3 - BC[0] * m5)
    out[2] -= 2.0 * (BC[0] * m4 - BC[1] * m3)
    out[3] += BC[3] * m3 + BC[4] * m4 + BC[5] * m5
    out[4] += BC[6] * m3 + BC[7] * m4 + BC[8] * m5
    out[5] += BC[9] * m3 + BC[10] * m4 + BC[11] * m5


# ---- the backward pass ----------------------------------------------------------------

@helper
def dof_blocks(i, ra, ws, sc):
    """A1 = Idot(IC, s), A3 = 2 B(IC, psid) + Idot(BC, s) and T4 (full) of the dof in
    workspace row ra (a dof of joint i), from the subtree sums of joint i."""
    s = ws[ra, D_S:D_S + 6]
    psid = ws[ra, D_PSID:D_PSID + 6]
    Y = ws[i, W_Y:W_Y + 13]
    w = sc[SC_W:SC_W + 6]
    A3 = sc[SC_A3:SC_A3 + 12]
    inertia_mul(Y, s, w)
    a1_block(Y, s, w, sc[SC_A1:SC_A1 + 13])
    inertia_mul(Y, psid, w)
    body_bias_inertia(Y, psid, w, A3)        # 2 B(IC, psid)
    add_idot_bc(ws[i, W_BC:W_BC + 12], s, A3)
    T4 = sc[SC_T4:SC_T4 + 6]
    T4[0] = 0.0
    T4[1] = 0.0
    T4[2] = 0.0
    T4[3] = ws[ra, D_T4]
    T4[4] = ws[ra, D_T4 + 1]
    T4[5] = ws[ra, D_T4 + 2]


@helper
def pair_vectors(i, ra, rb, same, below, ws, sc):
    """The u-vectors of dof a (row ra, joint i) and dof b (row rb, joint i or one of its
    ancestors; same: b's joint is i; below: b's joint has a parent). Only those the
    innermost loop reads: u1 when b is above joint i, u3, u6 and u7 or u4 when some
    dof lies above b's joint."""
    st = ws[rb, D_S:D_S + 6]
    pst = ws[rb, D_PSID:D_PSID + 6]
    A1 = sc[SC_A1:SC_A1 + 13]
    A3 = sc[SC_A3:SC_A3 + 12]
    T1 = ws[ra, D_T1:D_T1 + 6]
    u12 = sc[SC_U + U_12:SC_U + U_12 + 6]
    u9 = sc[SC_U + U_9:SC_U + U_9 + 6]
    u1 = sc[SC_U + U_1:SC_U + U_1 + 6]
    u3 = sc[SC_U + U_3:SC_U + U_3 + 6]
    u4 = sc[SC_U + U_4:SC_U + U_4 + 6]
    u8 = sc[SC_U + U_8:SC_U + U_8 + 6]
    u6 = sc[SC_U + U_6:SC_U + U_6 + 6]
    u7 = sc[SC_U + U_7:SC_U + U_7 + 6]
    u11 = sc[SC_U + U_11:SC_U + U_11 + 6]
    w = sc[SC_W:SC_W + 6]
    y = sc[SC_Y:SC_Y + 6]
    inertia_mul(A1, st, u12)
    force_cross(st, T1, u9)
    u11[0] = u12[0] - u9[0]
    u11[1] = u12[1] - u9[1]
    u11[2] = u12[2] - u9[2]
    u11[3] = u12[3] - u9[3]
    u11[4] = u12[4] - u9[4]
    u11[5] = u12[5] - u9[5]
    # w = psid_t x* T1, y = A1 psid_t; u8 = s_t x* T4 - y + w. On a root joint (not
    # below) psid_t = crm(v_universe) s_t = 0
    force_cross_ang(st, sc[SC_T4:SC_T4 + 6], u8)
    if below:
        force_cross(pst, T1, w)
        inertia_mul(A1, pst, y)
        add6(w, u8)
        axpy6(-1.0, y, u8)
    if not same:
        bct_mul_ang(A3, st, u1[3:6])      # u1 = A3^T s_t: its linear half is zero
    if below:
        # u3 = A3 psid_t + A1 psidd_t + s_t x* T3
        force_cross(st, ws[ra, D_T3:D_T3 + 6], u3)
        bc_mul_add(A3, pst, u3)
        inertia_mul_add(A1, ws[rb, D_PSIDD:D_PSIDD + 6], u3, 1.0)
        # u6 = y + w + s_t x* T2
        force_cross(st, ws[ra, D_T2:D_T2 + 6], u6)
        add6(w, u6)
        add6(y, u6)
        if same:
            # u4 = s x* (IC s_t) + u9
            inertia_mul(ws[i, W_Y:W_Y + 13], st, w)
            force_cross(ws[ra, D_S:D_S + 6], w, u4)
            add6(u9, u4)
        else:
            # u7 = A3 s_t + A1 phi_t
            bc_mul(A3, st, u7)
            inertia_mul_add(A1, ws[rb, D_PHI:D_PHI + 6], u7, 1.0)


@helper
def fill_dofs(n, a, b, c0, c1, same, below, rootk, ws, sc, Q, V, X, D, nv):
    """The listing's innermost loop over the dofs c in [c0, c1) of one joint k; same:
    b's joint is a's, below: k is a strict ancestor of b's joint, rootk: k is a root
    joint, whose psid = crm(v_universe) s = 0 (the floating base: a third of the
    iterations on a humanoid, skipping those dot products saves 6-13%). Q, V, X, D are the
    flattened tensors and every offset is unsigned (nv: np.uint64): entry [x, y, z] is at
    (x nv + y) nv + z, and unsigned indices spare the negative-index checks (8% of the
    pass on talos)."""
    u = sc[SC_U:SC_U + 54]
    a = np.uint64(a)
    b = np.uint64(b)
    nv2 = nv * nv
    abz = (a * nv + b) * nv             # [a, b, c] = abz + c
    baz = (b * nv + a) * nv             # [b, a, c]
    ayb = a * nv2 + b                   # [a, c, b] = ayb + c nv
    bya = b * nv2 + a                   # [b, c, a]
    xab = a * nv + b                    # [c, a, b] = c nv2 + xab
    xba = b * nv + a                    # [c, b, a]
    for ci in range(c0, c1):
        rc = n + 1 + ci
        c = np.uint64(ci)
        cy = c * nv
        cx = c * nv2
        sr = ws[rc, D_S:D_S + 6]
        psr = ws[rc, D_PSID:D_PSID + 6]
        psdr = ws[rc, D_PSIDD:D_PSIDD + 6]
        phr = ws[rc, D_PHI:D_PHI + 6]
        s0, s1, s2, s3, s4, s5 = sr[0], sr[1], sr[2], sr[3], sr[4], sr[5]
        ds12 = (u[U_12] * s0 + u[U_12 + 1] * s1 + u[U_12 + 2] * s2 + u[U_12 + 3] * s3
                + u[U_12 + 4] * s4 + u[U_12 + 5] * s5)
        ds9 = (u[U_9] * s0 + u[U_9 + 1] * s1 + u[U_9 + 2] * s2 + u[U_9 + 3] * s3
               + u[U_9 + 4] * s4 + u[U_9 + 5] * s5)
        p2 = (u[U_9] * psdr[0] + u[U_9 + 1] * psdr[1] + u[U_9 + 2] * psdr[2]
              + u[U_9 + 3] * psdr[3] + u[U_9 + 4] * psdr[4] + u[U_9 + 5] * psdr[5])
        if rootk:
            p1 = 0.0 * p2
        else:
            p1 = (u[U_11] * psr[0] + u[U_11 + 1] * psr[1] + u[U_11 + 2] * psr[2]
                  + u[U_11 + 3] * psr[3] + u[U_11 + 4] * psr[4] + u[U_11 + 5] * psr[5])
            p2 += (u[U_8] * psr[0] + u[U_8 + 1] * psr[1] + u[U_8 + 2] * psr[2]
                   + u[U_8 + 3] * psr[3] + u[U_8 + 4] * psr[4] + u[U_8 + 5] * psr[5])
        Q[abz + c] = p2
        X[ayb + cy] = -p1
        if not same:
            qb = (u[U_12] * psdr[0] + u[U_12 + 1] * psdr[1] + u[U_12 + 2] * psdr[2]
                  + u[U_12 + 3] * psdr[3] + u[U_12 + 4] * psdr[4] + u[U_12 + 5] * psdr[5])
            if not rootk:
                qb += u[U_1 + 3] * psr[3] + u[U_1 + 4] * psr[4] + u[U_1 + 5] * psr[5]
            xb = (u[U_1 + 3] * s3 + u[U_1 + 4] * s4 + u[U_1 + 5] * s5
                  + u[U_12] * phr[0] + u[U_12 + 1] * phr[1] + u[U_12 + 2] * phr[2]
                  + u[U_12 + 3] * phr[3] + u[U_12 + 4] * phr[4] + u[U_12 + 5] * phr[5])
            Q[bya + cy] = qb
            Q[baz + c] = qb
            X[bya + cy] = p1
            X[baz + c] = xb
            vb = ds12 - ds9
            V[bya + cy] = vb
            V[baz + c] = vb
            D[cx + xba] = ds12
            D[bya + cy] = ds12
        if below:
            qc = (u[U_3] * s0 + u[U_3 + 1] * s1 + u[U_3 + 2] * s2 + u[U_3 + 3] * s3
                  + u[U_3 + 4] * s4 + u[U_3 + 5] * s5)
            xa = (u[U_8] * s0 + u[U_8 + 1] * s1 + u[U_8 + 2] * s2 + u[U_8 + 3] * s3
                  + u[U_8 + 4] * s4 + u[U_8 + 5] * s5
                  + u[U_9] * phr[0] + u[U_9 + 1] * phr[1] + u[U_9 + 2] * phr[2]
                  + u[U_9 + 3] * phr[3] + u[U_9 + 4] * phr[4] + u[U_9 + 5] * phr[5])
            xc = (u[U_6] * s0 + u[U_6 + 1] * s1 + u[U_6 + 2] * s2 + u[U_6 + 3] * s3
                  + u[U_6 + 4] * s4 + u[U_6 + 5] * s5)
            Q[ayb + cy] = p2
            Q[cx + xab] = qc
            va = ds9 - ds12
            V[abz + c] = va
            V[ayb + cy] = va
            X[abz + c] = xa
            X[cx + xba] = xc
            D[cx + xab] = ds9
            D[ayb + cy] = ds9
            if not same:
                x7 = (u[U_7] * s0 + u[U_7 + 1] * s1 + u[U_7 + 2] * s2 + u[U_7 + 3] * s3
                      + u[U_7 + 4] * s4 + u[U_7 + 5] * s5)
                Q[cx + xba] = qc
                vc = ds12 + ds9
                V[cx + xab] = vc
                V[cx + xba] = vc
                X[cx + xab] = x7
            else:
                x4 = (u[U_4] * s0 + u[U_4 + 1] * s1 + u[U_4 + 2] * s2 + u[U_4 + 3] * s3
                      + u[U_4 + 4] * s4 + u[U_4 + 5] * s5)
                V[cx + xba] = x4
        else:
            V[abz + c] = -ds12


@helper
def joint_so(mi, i, ws, sc, Q, V, X, D, nv):
    """Every entry of the four tensors whose deepest dof belongs to joint i: for each dof
    a of joint i, each dof b of joint i or an ancestor j, each dof c of j or an ancestor
    k. (One call site per helper, with the listing's conditions j != i and k != j as
    runtime flags: one copy of the loop body keeps the compile time reasonable.)"""
    n = mi[0, 0]
    iv = mi[i, MI_IV]
    for a in range(iv, iv + mi[i, MI_NV]):
        ra = n + 1 + a
        dof_blocks(i, ra, ws, sc)
        j = i
        while j > 0:
            same = j == i
            jiv = mi[j, MI_IV]
            for b in range(jiv, jiv + mi[j, MI_NV]):
                pair_vectors(i, ra, n + 1 + b, same, mi[j, MI_PARENT] > 0, ws, sc)
                k = j
                while k > 0:
                    kiv = mi[k, MI_IV]
                    fill_dofs(n, a, b, kiv, kiv + mi[k, MI_NV], same, k != j,
                              mi[k, MI_PARENT] == 0, ws, sc, Q, V, X, D, nv)
                    k = mi[k, MI_PARENT]
            j = mi[j, MI_PARENT]


@helper
def subtree_to_parent(mi, i, ws):
    """IC, BC and f of joint i's subtree join its parent's."""
    lam = mi[i, MI_PARENT]
    if lam > 0:
        add13(ws[i, W_Y:W_Y + 13], ws[lam, W_Y:W_Y + 13])
        add12(ws[i, W_BC:W_BC + 12], ws[lam, W_BC:W_BC + 12])
        add6(ws[i, W_F:W_F + 6], ws[lam, W_F:W_F + 6])


@kernel
def idsva_so_backward_pass(mi, ws, sc, Q, V, X, D):
    """i = N..1: T1..T4 of joint i (IDSVA), the entries whose deepest dof is in joint i,
    then IC, BC and f of the subtree move to the parent."""
    nv = np.uint64(Q.shape[0])
    Qf, Vf, Xf, Df = Q.reshape(-1), V.reshape(-1), X.reshape(-1), D.reshape(-1)
    for i in range(mi[0, 0], 0, -1):
        joint_terms(mi, i, ws)
        joint_so(mi, i, ws, sc, Qf, Vf, Xf, Df, nv)
        subtree_to_parent(mi, i, ws)


@kernel
def idsva_fo_so_backward_pass(mi, ws, sc, dtau_dq, dtau_dv, M, Q, V, X, D):
    """The same pass that also fills the first-order derivatives (IDSVA's joint_fill:
    dtau_dq, dtau_dv and M on the branch pattern only, no zeroing), as FDSVA-SO needs."""
    nv = np.uint64(Q.shape[0])
    Qf, Vf, Xf, Df = Q.reshape(-1), V.reshape(-1), X.reshape(-1), D.reshape(-1)
    for i in range(mi[0, 0], 0, -1):
        joint_terms(mi, i, ws)
        joint_fill(mi, i, ws, dtau_dq, dtau_dv, M)
        joint_so(mi, i, ws, sc, Qf, Vf, Xf, Df, nv)
        subtree_to_parent(mi, i, ws)


# ---- zeros ------------------------------------------------------------------------------

@kernel
def zero_fill(Q, V, X, D):
    """Q = V = X = D = 0 (memset). The listing writes every entry of a triple of dofs whose
    joints lie on one root-leaf path (but for D where the derivative dof moves both other
    dofs rigidly); the rest is zero. Writing only those zeros was measured slower than
    this fill on every robot (panda 3.8 vs 1.7 us, talos 360 vs 120 us on the development
    machine): they form many short row segments."""
    Q[:] = 0.0
    V[:] = 0.0
    X[:] = 0.0
    D[:] = 0.0


@kernel
def idsva_so(mi, mf, q, v, a, fext, ws, sc, Q, V, X, D):
    """Q = d2tau/dq2, V = d2tau/dv2, X = d2tau/dqdv, D = dM/dq (each (nv, nv, nv), every
    entry written) at (q, v, a, fext). ws: (workspace_rows, >= IDSVA_WIDTH); sc: (SC_SIZE,)
    scratch; fext (njoints, 6) local-frame forces, (0, 6) or None."""
    zero_fill(Q, V, X, D)
    idsva_forward_pass(mi, mf, q, v, a, fext, ws)
    idsva_so_backward_pass(mi, ws, sc, Q, V, X, D)
    armature_bias_hessian(mi, mf, V)
