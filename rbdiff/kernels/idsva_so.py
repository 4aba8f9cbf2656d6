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

Entries the listing does not write are zero and are written as zeros by
``zero_unwritten`` (Q, V, X: triples of dofs whose joints do not lie on one root-leaf
path; D additionally where the derivative dof is an ancestor of, or in, the shallower
joint of the pair, whose motion moves both rigidly).
"""

from ..model.layout import MI_IV, MI_NV, MI_NVSUB, MI_PARENT
from .idsva import (D_PHI, D_PSID, D_PSIDD, D_T1, D_T2, D_T3, D_T4, W_BC, add12,
                    idsva_forward_pass, joint_terms)
from .jit import helper, kernel
from .spatial import add6, add13, inertia_dense, inertia_mul, mat6_vec
from .workspace import D_S, W_F, W_Y

# scratch vector `sc` layout (caller allocates SC_SIZE scalars)
SC_YD = 0           # 36: IC_i dense
SC_BCD = 36         # 36: BC_i dense
SC_A1 = 72          # 36: A1 of the current dof
SC_A3 = 108         # 36: A3 of the current dof
SC_T4 = 144         # 6: BC^T s, full (its linear half is zero)
SC_W = 150          # 6: scratch
SC_U = 156          # u-vectors of the current dof pair, 6 each, see U_* below
U_12, U_9, U_1, U_3, U_4, U_8, U_6, U_7, U_11 = 0, 6, 12, 18, 24, 30, 36, 42, 48
SC_SIZE = SC_U + 54


# ---- dense 6x6 helpers (row-major 36-arrays, unrolled) --------------------------------

@helper
def add_force_cross(v, f, out):
    """out += v x* f."""
    out[0] += v[4] * f[2] - v[5] * f[1]
    out[1] += v[5] * f[0] - v[3] * f[2]
    out[2] += v[3] * f[1] - v[4] * f[0]
    out[3] += v[4] * f[5] - v[5] * f[4] + v[1] * f[2] - v[2] * f[1]
    out[4] += v[5] * f[3] - v[3] * f[5] + v[2] * f[0] - v[0] * f[2]
    out[5] += v[3] * f[4] - v[4] * f[3] + v[0] * f[1] - v[1] * f[0]


@helper
def force_cross_to(v, f, out):
    """out = v x* f."""
    out[0] = v[4] * f[2] - v[5] * f[1]
    out[1] = v[5] * f[0] - v[3] * f[2]
    out[2] = v[3] * f[1] - v[4] * f[0]
    out[3] = v[4] * f[5] - v[5] * f[4] + v[1] * f[2] - v[2] * f[1]
    out[4] = v[5] * f[3] - v[3] * f[5] + v[2] * f[0] - v[0] * f[2]
    out[5] = v[3] * f[4] - v[4] * f[3] + v[0] * f[1] - v[1] * f[0]


@helper
def add_idot(A, s, out):
    """out += Idot(A, s) = crf(s) A - A crm(s): columns of A crossed, plus rows of A
    crossed (row r of -A crm(s) is crf(s) applied to row r of A)."""
    add_force_cross(s, A[0:36:6], out[0:36:6])
    add_force_cross(s, A[1:36:6], out[1:36:6])
    add_force_cross(s, A[2:36:6], out[2:36:6])
    add_force_cross(s, A[3:36:6], out[3:36:6])
    add_force_cross(s, A[4:36:6], out[4:36:6])
    add_force_cross(s, A[5:36:6], out[5:36:6])
    add_force_cross(s, A[0:6], out[0:6])
    add_force_cross(s, A[6:12], out[6:12])
    add_force_cross(s, A[12:18], out[12:18])
    add_force_cross(s, A[18:24], out[18:24])
    add_force_cross(s, A[24:30], out[24:30])
    add_force_cross(s, A[30:36], out[30:36])


@helper
def set_icrf(f, out):
    """out = icrf(f) = -[[0, [fl]x], [[fl]x, [fn]x]] (icrf(f) m = m x* f)."""
    l0, l1, l2, n0, n1, n2 = f[0], f[1], f[2], f[3], f[4], f[5]
    out[0] = 0.0
    out[1] = 0.0
    out[2] = 0.0
    out[3] = 0.0
    out[4] = l2
    out[5] = -l1
    out[6] = 0.0
    out[7] = 0.0
    out[8] = 0.0
    out[9] = -l2
    out[10] = 0.0
    out[11] = l0
    out[12] = 0.0
    out[13] = 0.0
    out[14] = 0.0
    out[15] = l1
    out[16] = -l0
    out[17] = 0.0
    out[18] = 0.0
    out[19] = l2
    out[20] = -l1
    out[21] = 0.0
    out[22] = n2
    out[23] = -n1
    out[24] = -l2
    out[25] = 0.0
    out[26] = l0
    out[27] = -n2
    out[28] = 0.0
    out[29] = n0
    out[30] = l1
    out[31] = -l0
    out[32] = 0.0
    out[33] = n1
    out[34] = -n0
    out[35] = 0.0


@helper
def set_zero36(out):
    for k in range(36):
        out[k] = 0.0


@helper
def bc_dense(BC, out):
    """out = the 6x6 BC of its compact form [[0, -2 [fl]x], [0, B22]] (idsva.py)."""
    f0, f1, f2 = BC[0], BC[1], BC[2]
    for k in range(36):
        out[k] = 0.0
    out[4] = 2.0 * f2
    out[5] = -2.0 * f1
    out[9] = -2.0 * f2
    out[11] = 2.0 * f0
    out[15] = 2.0 * f1
    out[16] = -2.0 * f0
    out[21] = BC[3]
    out[22] = BC[4]
    out[23] = BC[5]
    out[27] = BC[6]
    out[28] = BC[7]
    out[29] = BC[8]
    out[33] = BC[9]
    out[34] = BC[10]
    out[35] = BC[11]


@helper
def mat6_tvec(A, x, out):
    """out = A^T x for a row-major 6x6 A."""
    x0, x1, x2, x3, x4, x5 = x[0], x[1], x[2], x[3], x[4], x[5]
    out[0] = A[0] * x0 + A[6] * x1 + A[12] * x2 + A[18] * x3 + A[24] * x4 + A[30] * x5
    out[1] = A[1] * x0 + A[7] * x1 + A[13] * x2 + A[19] * x3 + A[25] * x4 + A[31] * x5
    out[2] = A[2] * x0 + A[8] * x1 + A[14] * x2 + A[20] * x3 + A[26] * x4 + A[32] * x5
    out[3] = A[3] * x0 + A[9] * x1 + A[15] * x2 + A[21] * x3 + A[27] * x4 + A[33] * x5
    out[4] = A[4] * x0 + A[10] * x1 + A[16] * x2 + A[22] * x3 + A[28] * x4 + A[34] * x5
    out[5] = A[5] * x0 + A[11] * x1 + A[17] * x2 + A[23] * x3 + A[29] * x4 + A[35] * x5


@helper
def mat6_vec_add(A, x, out):
    """out += A x for a row-major 6x6 A."""
    x0, x1, x2, x3, x4, x5 = x[0], x[1], x[2], x[3], x[4], x[5]
    out[0] += A[0] * x0 + A[1] * x1 + A[2] * x2 + A[3] * x3 + A[4] * x4 + A[5] * x5
    out[1] += A[6] * x0 + A[7] * x1 + A[8] * x2 + A[9] * x3 + A[10] * x4 + A[11] * x5
    out[2] += A[12] * x0 + A[13] * x1 + A[14] * x2 + A[15] * x3 + A[16] * x4 + A[17] * x5
    out[3] += A[18] * x0 + A[19] * x1 + A[20] * x2 + A[21] * x3 + A[22] * x4 + A[23] * x5
    out[4] += A[24] * x0 + A[25] * x1 + A[26] * x2 + A[27] * x3 + A[28] * x4 + A[29] * x5
    out[5] += A[30] * x0 + A[31] * x1 + A[32] * x2 + A[33] * x3 + A[34] * x4 + A[35] * x5


@helper
def mat6_vec_sub(A, x, out):
    """out -= A x for a row-major 6x6 A."""
    x0, x1, x2, x3, x4, x5 = x[0], x[1], x[2], x[3], x[4], x[5]
    out[0] -= A[0] * x0 + A[1] * x1 + A[2] * x2 + A[3] * x3 + A[4] * x4 + A[5] * x5
    out[1] -= A[6] * x0 + A[7] * x1 + A[8] * x2 + A[9] * x3 + A[10] * x4 + A[11] * x5
    out[2] -= A[12] * x0 + A[13] * x1 + A[14] * x2 + A[15] * x3 + A[16] * x4 + A[17] * x5
    out[3] -= A[18] * x0 + A[19] * x1 + A[20] * x2 + A[21] * x3 + A[22] * x4 + A[23] * x5
    out[4] -= A[24] * x0 + A[25] * x1 + A[26] * x2 + A[27] * x3 + A[28] * x4 + A[29] * x5
    out[5] -= A[30] * x0 + A[31] * x1 + A[32] * x2 + A[33] * x3 + A[34] * x4 + A[35] * x5


# ---- the backward pass ----------------------------------------------------------------

@helper
def dof_blocks(mi, i, ra, ws, sc):
    """A1 = Idot(IC, s), A3 = 2 B(IC, psid) + Idot(BC, s) and T4 (full) of the dof in
    workspace row ra (a dof of joint i), from the subtree sums of joint i."""
    s = ws[ra, D_S:D_S + 6]
    psid = ws[ra, D_PSID:D_PSID + 6]
    Yd = sc[SC_YD:SC_YD + 36]
    A1 = sc[SC_A1:SC_A1 + 36]
    A3 = sc[SC_A3:SC_A3 + 36]
    w = sc[SC_W:SC_W + 6]
    set_zero36(A1)
    add_idot(Yd, s, A1)
    inertia_mul(ws[i, W_Y:W_Y + 13], psid, w)
    set_icrf(w, A3)                          # 2 B(IC, psid) = Idot(IC, psid) + icrf(IC psid)
    add_idot(Yd, psid, A3)
    add_idot(sc[SC_BCD:SC_BCD + 36], s, A3)
    T4 = sc[SC_T4:SC_T4 + 6]
    T4[0] = 0.0
    T4[1] = 0.0
    T4[2] = 0.0
    T4[3] = ws[ra, D_T4]
    T4[4] = ws[ra, D_T4 + 1]
    T4[5] = ws[ra, D_T4 + 2]


@helper
def pair_vectors(i, ra, rb, same, ws, sc):
    """The u-vectors of dof a (row ra, joint i) and dof b (row rb, an ancestor joint of
    i or i itself; same: b's joint is i)."""
    st = ws[rb, D_S:D_S + 6]
    pst = ws[rb, D_PSID:D_PSID + 6]
    A1 = sc[SC_A1:SC_A1 + 36]
    A3 = sc[SC_A3:SC_A3 + 36]
    u = sc[SC_U:SC_U + 54]
    T1 = ws[ra, D_T1:D_T1 + 6]
    u12 = u[U_12:U_12 + 6]
    u9 = u[U_9:U_9 + 6]
    u1 = u[U_1:U_1 + 6]
    u3 = u[U_3:U_3 + 6]
    u4 = u[U_4:U_4 + 6]
    u8 = u[U_8:U_8 + 6]
    u6 = u[U_6:U_6 + 6]
    u7 = u[U_7:U_7 + 6]
    u11 = u[U_11:U_11 + 6]
    w = sc[SC_W:SC_W + 6]
    mat6_vec(A1, st, u12)
    force_cross_to(st, T1, u9)
    mat6_tvec(A3, st, u1)
    # u3 = A3 psid_t + A1 psidd_t + s_t x* T3
    force_cross_to(st, ws[ra, D_T3:D_T3 + 6], u3)
    mat6_vec_add(A3, pst, u3)
    mat6_vec_add(A1, ws[rb, D_PSIDD:D_PSIDD + 6], u3)
    # w = psid_t x* T1; u8 = s_t x* T4 - A1 psid_t + w; u6 = A1 psid_t + w + s_t x* T2
    force_cross_to(pst, T1, w)
    force_cross_to(st, sc[SC_T4:SC_T4 + 6], u8)
    add6(w, u8)
    force_cross_to(st, ws[ra, D_T2:D_T2 + 6], u6)
    add6(w, u6)
    mat6_vec_add(A1, pst, u6)
    mat6_vec_sub(A1, pst, u8)
    # u7 = A3 s_t + A1 phi_t
    mat6_vec(A3, st, u7)
    mat6_vec_add(A1, ws[rb, D_PHI:D_PHI + 6], u7)
    if same:
        # u4 = s x* (IC s_t) + u9
        inertia_mul(ws[i, W_Y:W_Y + 13], st, w)
        force_cross_to(ws[ra, D_S:D_S + 6], w, u4)
        add6(u9, u4)
    for k in range(6):
        u11[k] = u12[k] - u9[k]


@helper
def pair_fill(mi, n, a, b, j, same, ws, sc, Q, V, X, D):
    """The listing's innermost loop: every dof c of j and of j's ancestors."""
    u = sc[SC_U:SC_U + 54]
    k = j
    while k > 0:
        kiv = mi[k, MI_IV]
        for c in range(kiv, kiv + mi[k, MI_NV]):
            rc = n + 1 + c
            sr = ws[rc, D_S:D_S + 6]
            psr = ws[rc, D_PSID:D_PSID + 6]
            psdr = ws[rc, D_PSIDD:D_PSIDD + 6]
            phr = ws[rc, D_PHI:D_PHI + 6]
            ds12 = 0.0 * sr[0]
            ds9 = 0.0 * sr[0]
            p1 = 0.0 * sr[0]
            p2 = 0.0 * sr[0]
            for e in range(6):
                ds12 += u[U_12 + e] * sr[e]
                ds9 += u[U_9 + e] * sr[e]
                p1 += u[U_11 + e] * psr[e]
                p2 += u[U_8 + e] * psr[e] + u[U_9 + e] * psdr[e]
            Q[a, b, c] = p2
            X[a, c, b] = -p1
            if not same:
                qb = 0.0 * sr[0]
                xb = 0.0 * sr[0]
                for e in range(6):
                    qb += u[U_1 + e] * psr[e] + u[U_12 + e] * psdr[e]
                    xb += u[U_1 + e] * sr[e] + u[U_12 + e] * phr[e]
                Q[b, c, a] = qb
                Q[b, a, c] = qb
                X[b, c, a] = p1
                X[b, a, c] = xb
                vb = ds12 - ds9
                V[b, c, a] = vb
                V[b, a, c] = vb
                D[c, b, a] = ds12
                D[b, c, a] = ds12
            if k != j:
                qc = 0.0 * sr[0]
                xa = 0.0 * sr[0]
                xc = 0.0 * sr[0]
                for e in range(6):
                    qc += u[U_3 + e] * sr[e]
                    xa += u[U_8 + e] * sr[e] + u[U_9 + e] * phr[e]
                    xc += u[U_6 + e] * sr[e]
                Q[a, c, b] = p2
                Q[c, a, b] = qc
                va = ds9 - ds12
                V[a, b, c] = va
                V[a, c, b] = va
                X[a, b, c] = xa
                X[c, b, a] = xc
                D[c, a, b] = ds9
                D[a, c, b] = ds9
                if not same:
                    x7 = 0.0 * sr[0]
                    for e in range(6):
                        x7 += u[U_7 + e] * sr[e]
                    Q[c, b, a] = qc
                    vc = ds12 + ds9
                    V[c, a, b] = vc
                    V[c, b, a] = vc
                    X[c, a, b] = x7
                else:
                    x4 = 0.0 * sr[0]
                    for e in range(6):
                        x4 += u[U_4 + e] * sr[e]
                    V[c, b, a] = x4
            else:
                V[a, b, c] = -ds12
        k = mi[k, MI_PARENT]


@helper
def joint_so(mi, i, ws, sc, Q, V, X, D):
    """Every entry of the four tensors whose deepest dof belongs to joint i."""
    n = mi[0, 0]
    inertia_dense(ws[i, W_Y:W_Y + 13], sc[SC_YD:SC_YD + 36])
    bc_dense(ws[i, W_BC:W_BC + 12], sc[SC_BCD:SC_BCD + 36])
    iv = mi[i, MI_IV]
    for a in range(iv, iv + mi[i, MI_NV]):
        ra = n + 1 + a
        dof_blocks(mi, i, ra, ws, sc)
        j = i
        while j > 0:
            jiv = mi[j, MI_IV]
            for b in range(jiv, jiv + mi[j, MI_NV]):
                pair_vectors(i, ra, n + 1 + b, j == i, ws, sc)
                pair_fill(mi, n, a, b, j, j == i, ws, sc, Q, V, X, D)
            j = mi[j, MI_PARENT]


@kernel
def idsva_so_backward_pass(mi, ws, sc, Q, V, X, D):
    """i = N..1: T1..T4 of joint i (IDSVA), the entries whose deepest dof is in joint i,
    then IC, BC and f of the subtree move to the parent."""
    for i in range(mi[0, 0], 0, -1):
        joint_terms(mi, i, ws)
        joint_so(mi, i, ws, sc, Q, V, X, D)
        lam = mi[i, MI_PARENT]
        if lam > 0:
            add13(ws[i, W_Y:W_Y + 13], ws[lam, W_Y:W_Y + 13])
            add12(ws[i, W_BC:W_BC + 12], ws[lam, W_BC:W_BC + 12])
            add6(ws[i, W_F:W_F + 6], ws[lam, W_F:W_F + 6])


# ---- zeros ------------------------------------------------------------------------------

@helper
def _zero_rows(T, x0, x1, y0, y1, lo, hi):
    """T[x, y, lo:hi] = 0 for x in [x0, x1), y in [y0, y1)."""
    if hi > lo:
        for x in range(x0, x1):
            for y in range(y0, y1):
                for z in range(lo, hi):
                    T[x, y, z] = 0.0


@kernel
def zero_unwritten(mi, Q, V, X, D):
    """Zeros exactly where the backward pass writes nothing: rows T[x, y, :] of dofs x, y
    of joints jx, jy. Off one branch (neither joint an ancestor of the other) the row is
    zero; else, with d the deeper and s the shallower joint, Q, V and X vanish outside
    the dofs of d's ancestors and subtree, and D outside those strictly below s."""
    n = mi[0, 0]
    nv = mi[0, 2]
    for jx in range(1, n + 1):
        x0 = mi[jx, MI_IV]
        x1 = x0 + mi[jx, MI_NV]
        for jy in range(1, n + 1):
            y0 = mi[jy, MI_IV]
            y1 = y0 + mi[jy, MI_NV]
            # deeper / shallower: depth-first numbering, so an ancestor has the lower id
            d = jx if jx > jy else jy
            s = jy if jx > jy else jx
            dv = mi[d, MI_IV]
            if not (dv >= mi[s, MI_IV] and dv < mi[s, MI_IV] + mi[s, MI_NVSUB]):
                _zero_rows(Q, x0, x1, y0, y1, 0, nv)
                _zero_rows(V, x0, x1, y0, y1, 0, nv)
                _zero_rows(X, x0, x1, y0, y1, 0, nv)
                _zero_rows(D, x0, x1, y0, y1, 0, nv)
                continue
            top = dv + mi[d, MI_NVSUB]
            _zero_rows(Q, x0, x1, y0, y1, top, nv)
            _zero_rows(V, x0, x1, y0, y1, top, nv)
            _zero_rows(X, x0, x1, y0, y1, top, nv)
            _zero_rows(D, x0, x1, y0, y1, top, nv)
            # Q, V, X: gaps between the dof ranges of d's ancestors
            hi = dv
            k = mi[d, MI_PARENT]
            while k > 0:
                lo = mi[k, MI_IV] + mi[k, MI_NV]
                _zero_rows(Q, x0, x1, y0, y1, lo, hi)
                _zero_rows(V, x0, x1, y0, y1, lo, hi)
                _zero_rows(X, x0, x1, y0, y1, lo, hi)
                hi = mi[k, MI_IV]
                k = mi[k, MI_PARENT]
            _zero_rows(Q, x0, x1, y0, y1, 0, hi)
            _zero_rows(V, x0, x1, y0, y1, 0, hi)
            _zero_rows(X, x0, x1, y0, y1, 0, hi)
            # D: nonzero only for dofs strictly below s on the path to d, or in subtree(d)
            if d == s:
                _zero_rows(D, x0, x1, y0, y1, 0, dv + mi[d, MI_NV])
            else:
                hi = dv
                k = mi[d, MI_PARENT]
                while k != s:
                    lo = mi[k, MI_IV] + mi[k, MI_NV]
                    _zero_rows(D, x0, x1, y0, y1, lo, hi)
                    hi = mi[k, MI_IV]
                    k = mi[k, MI_PARENT]
                _zero_rows(D, x0, x1, y0, y1, 0, hi)


@kernel
def idsva_so(mi, mf, q, v, a, fext, ws, sc, Q, V, X, D):
    """Q = d2tau/dq2, V = d2tau/dv2, X = d2tau/dqdv, D = dM/dq (each (nv, nv, nv), every
    entry written) at (q, v, a, fext). ws: (workspace_rows, >= IDSVA_WIDTH); sc: (SC_SIZE,)
    scratch; fext (njoints, 6) local-frame forces, (0, 6) or None."""
    zero_unwritten(mi, Q, V, X, D)
    idsva_forward_pass(mi, mf, q, v, a, fext, ws)
    idsva_so_backward_pass(mi, ws, sc, Q, V, X, D)
