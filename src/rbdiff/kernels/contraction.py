"""Second-order derivatives of inverse and forward dynamics contracted with a costate,
without forming a tensor, O(N d) (Nganga & Wensing, RA-L 2021; the idea of issue 27).

RNEA. With P(q, v, a) = lam^T ID(q, v, a) and Q, V, X, D the IDSVA-SO tensors
(idsva_so.py: Q[i, j, k] = d2tau_i/dq_j dq_k, V = d2tau/dv2, X = d2tau/dqdv,
D[i, j, k] = dM_ij/dq_k), the outputs are their contractions over the output index,
C_T[j, k] = sum_i lam_i T[i, j, k]: HQ, HV, HX, HD (each (nv, nv)); HQ, HV, HX are the
Hessian blocks d2P/dq2, d2P/dv2, d2P/dqdv (tangent-space q, the tensors' index order)
and HD[j, k] = sum_i lam_i dM_ij/dq_k = d2P/da_j dq_k.

Derivation. IDSVA-SO (DESIGN.md section 5) visits every triple of dofs (a, b, c) on one
root-leaf path, a in joint i, b in joint j, c in joint k with k <= j <= i (ancestor or
self), and writes each tensor entry of the triple with the output index equal to a, b
or c: O(N d^2) triples. Every entry is a dot product that is LINEAR in the quantities
of the dof that is the output index, so the sum over that index, weighted by lam,
moves inside the dot products and the remaining pair is O(1):

- output c (the shallowest; sum over c above j, listing rows k != j): the entries are
  u.s_c with u a u-vector of the pair (a, b), so they sum to u.N with
  N = nu_lambda(j), where nu_i = sum over the joints on the path root..i of S lam (the
  "velocity" the costate induces), rewritten with (m x* f).n = f.(n x m) as dot
  products with Z = N x s_b and ZP = N x psid_b, which depend on b alone (dof rows,
  costate_pass).
- output b (the middle one, b strictly above a's joint; listing rows j != i): the
  u-vectors u12 = A1 s_b, u1 = A3^T s_b, u11 = A1 s_b - s_b x* T1 are linear in s_b,
  so the sum over the b between c's joint k (included) and a's joint i (excluded) uses
  W = nu_lambda(i) - nu_lambda(k): A1 W, A3^T W, A1 W - W x* T1.
- output a (the deepest; sum over a in subtree(j), j's own dofs included): u12, u9, u11
  and u8 = s_b x* T4 - A1 psid_b + psid_b x* T1 are linear in a's T1, T4 and
  A1 = Idot(IC_i, s_a), so the sums use lam-weighted subtree sums ST1 = sum lam_a T1_a,
  ST4 = sum lam_a T4_a, SA1 = sum lam_a A1_a, accumulated leaves first like IC.

A dof d strictly above a's joint is both a "b" (output b, its c above) and a "c"
(output c, its b between); adding the two, the terms of A1 nu_lambda(x) and
A3^T nu_lambda(x) (x: d's joint) cancel, and with nl = nu_lambda(i),
Y1 = A1 nl, Y3 = A3^T nl, G = Y1 - nl x* T1 (per dof a, O(1)) each pair (a, d) is six
dot products:
  C_Q[a, d] = C_Q[d, a] += psid_d.Y3 + psidd_d.Y1 + T3.Z_d
  C_X[d, a] += psid_d.G + T2.Z_d          C_X[a, d] += s_d.Y3 + phi_d.Y1
  C_V[a, d] = C_V[d, a] += s_d.G
  C_D[a, d] += T1.Z_d                     C_D[d, a] += s_d.Y1
and for b in a's own joint (output c only, N = nl):
  C_Q[a, b] += psid_b.Y3 + psidd_b.Y1 + T3.Z_b     C_X[b, a] += psid_b.Y1 + T1.ZP_b + T2.Z_b
  C_D[a, b] += T1.Z_b                              C_V[b, a] += s_b.(IC Z_a) + T1.Z_b.
Output a, for b in joint i and c in i or an ancestor k, with U12 = SA1 s_b,
U9 = s_b x* ST1, U8 = s_b x* ST4 - SA1 psid_b + psid_b x* ST1, p2 = U8.psid_c + U9.psidd_c:
  C_Q[b, c] += p2                         C_X[c, b] -= (U12 - U9).psid_c
  k != i: C_Q[c, b] += p2, C_V[b, c] = C_V[c, b] += (U9 - U12).s_c,
          C_X[b, c] += U8.s_c + U9.phi_c, C_D[c, b] += U9.s_c
  k == i: C_V[b, c] -= U12.s_c
Each entry of the listing is counted once: where the listing writes one position twice
(D[c, b, a] = D[b, c, a] when b and c share a joint, by the triples (a, b, c) and
(a, c, b)), only the output-b term is kept. For a pair of a dof b of joint i and a dof
d above it, output a (b the middle dof, d its c) and outputs b and c (b the deepest,
d both) touch the same entries and read the same rows of d: pairs_of_dof adds them in
one loop, with E1 = U8 + Y3, E2 = Y1 + U9, E3 = G - U12 + U9 of b:
  C_Q[b, d] = C_Q[d, b] += psid_d.E1 + psidd_d.E2 + T3.Z_d    C_V[b, d] = C_V[d, b] += s_d.E3
  C_X[b, d] += s_d.E1 + phi_d.E2      C_X[d, b] += psid_d.E3 + T2.Z_d
  C_D[b, d] += T1.Z_d                 C_D[d, b] += s_d.E2
(ten dot products a pair). One loop over pairs of dofs on one branch, O(1) each:
O(N d) in all, O(N^2) on a chain.

ABA (FDSVA-SO, fdsva_so.py: the ABA tensors are -Minv times the ID ones at
qdd = ABA(q, v, tau), plus products of D with P = dqdd/dq, Pv = dqdd/dv and Minv). With
mu = Minv lam (Minv symmetric) and C_T the RNEA contractions at (q, v, qdd) and mu:
  lam.d2qdd/dq2    = -(C_Q + P^T C_D + C_D^T P)
  lam.d2qdd/dv2    = -C_V
  lam.d2qdd/dqdv   = -(C_X + C_D^T Pv)
  lam.d2qdd/dtaudq = -Minv C_D
P and Pv are never formed: with Y = Minv C_D, P^T C_D = -dtau_dq^T Y and
C_D^T Pv = -(dtau_dv^T Y)^T (Minv symmetric), three products instead of
aba_derivatives' two plus three; C_D, dtau_dq and dtau_dv have the branch pattern (zero
unless their two dofs lie on one branch), so each product is O(nv nnz) (fd_products).

Symbols as in idsva.py and idsva_so.py (A1, A3, T1..T4 of a dof, IC, BC, f subtree sums);
all world frame.
"""

from ..model.layout import MI_IV, MI_NV, MI_NVSUB, MI_PARENT, MF_ARM, MI_ARM_WORLD
from .aba import aba
from .aba_derivatives import branch_axpy2
from .armature import armature_bias_jacobian
from .idsva import (D_PHI, D_PSID, D_PSIDD, D_T1, D_T2, D_T3, D_T4, IDSVA_WIDTH,
                    bct_mul_ang, idsva_dynamics_pass, idsva_forward_pass, joint_fill,
                    joint_terms)
from .idsva_so import (SC_A1, SC_A3, SC_T4, SC_W, dof_blocks, force_cross_ang,
                       subtree_to_parent)
from .jit import helper, kernel
from .minverse import minverse_factored
from .spatial import add6, add13, axpy6, dot6, force_cross, inertia_mul, motion_cross
from .workspace import D_S, W_Y

# joint rows, past IDSVA's columns: nu (costate velocity of the path root..i), the
# lam-weighted subtree sums ST1 (6), ST4 (angular half, 3), SA1 (compact A1-form, 13)
W_NU = IDSVA_WIDTH
W_ST1 = W_NU + 6
W_ST4 = W_ST1 + 6
W_SA1 = W_ST4 + 3
CONTRACTION_WIDTH = W_SA1 + 13
# dof rows, past IDSVA's: Z = nu_lambda x s, ZP = nu_lambda x psid; a dof a's Y1, Y3
# (angular half), G (deepest_vectors)
D_Z = D_T4 + 3
D_ZP = D_Z + 6
D_Y1 = D_ZP + 6
D_Y3 = D_Y1 + 6
D_G = D_Y3 + 3
assert D_G + 6 <= CONTRACTION_WIDTH      # dof rows share the joint rows' width

# scratch `sc` (SC_SIZE scalars): idsva_so's A1, A3, T4 and W at their offsets (its
# dof_blocks fills them; its u-vectors from 43 on are not used here), then
SC_U8 = 43          # output a's U8, U9, U12 of a dof (6 each), then E1, E2, E3 in place
SC_U9 = 49
SC_U12 = 55
SC_V = 61           # scratch (6)
SC_SIZE = 67


@helper
def costate_pass(mi, lam, ws):
    """nu_i = nu_lambda(i) + S_i lam_i (root first; nu_0 = 0), Z = nu_lambda x s and
    ZP = nu_lambda x psid on every dof row, and the subtree sums ST1, ST4, SA1 = 0."""
    n = mi[0, 0]
    for c in range(W_NU, W_NU + 6):
        ws[0, c] = 0.0
    for i in range(1, n + 1):
        p = mi[i, MI_PARENT]
        nl = ws[p, W_NU:W_NU + 6]
        nu = ws[i, W_NU:W_NU + 6]
        for c in range(6):
            nu[c] = nl[c]
        for c in range(W_ST1, CONTRACTION_WIDTH):
            ws[i, c] = 0.0
        iv = mi[i, MI_IV]
        for d in range(iv, iv + mi[i, MI_NV]):
            r = n + 1 + d
            s = ws[r, D_S:D_S + 6]
            axpy6(lam[d], s, nu)
            motion_cross(nl, s, ws[r, D_Z:D_Z + 6])
            motion_cross(nl, ws[r, D_PSID:D_PSID + 6], ws[r, D_ZP:D_ZP + 6])


@helper
def deepest_vectors(mi, i, ra, ws, sc):
    """Per dof a (row ra, joint i; A1, A3 in sc) with nl = nu_lambda(i), on a's row:
    Y1 = A1 nl, Y3 = A3^T nl (angular half), G = Y1 - nl x* T1; and in sc,
    w = IC_i (nl x s_a)."""
    nl = ws[mi[i, MI_PARENT], W_NU:W_NU + 6]
    Y1 = ws[ra, D_Y1:D_Y1 + 6]
    G = ws[ra, D_G:D_G + 6]
    inertia_mul(sc[SC_A1:SC_A1 + 13], nl, Y1)
    bct_mul_ang(sc[SC_A3:SC_A3 + 12], nl, ws[ra, D_Y3:D_Y3 + 3])
    force_cross(nl, ws[ra, D_T1:D_T1 + 6], G)
    for c in range(6):
        G[c] = Y1[c] - G[c]
    inertia_mul(ws[i, W_Y:W_Y + 13], ws[ra, D_Z:D_Z + 6], sc[SC_W:SC_W + 6])


@helper
def same_joint_c(mi, i, a, ra, ws, sc, HQ, HV, HX, HD):
    """The output-c entries of dof a (row ra) and the dofs b of its own joint i, summed
    over c above i: dot products with N = nl (module docstring)."""
    if mi[i, MI_PARENT] == 0:           # nothing above: N = 0
        return
    n = mi[0, 0]
    T1 = ws[ra, D_T1:D_T1 + 6]
    T2 = ws[ra, D_T2:D_T2 + 6]
    T3 = ws[ra, D_T3:D_T3 + 6]
    Y1 = ws[ra, D_Y1:D_Y1 + 6]
    y30, y31, y32 = ws[ra, D_Y3], ws[ra, D_Y3 + 1], ws[ra, D_Y3 + 2]
    w = sc[SC_W:SC_W + 6]
    iv = mi[i, MI_IV]
    for b in range(iv, iv + mi[i, MI_NV]):
        rb = n + 1 + b
        pst = ws[rb, D_PSID:D_PSID + 6]
        z = ws[rb, D_Z:D_Z + 6]
        u9 = dot6(T1, z)
        u3 = (pst[3] * y30 + pst[4] * y31 + pst[5] * y32
              + dot6(ws[rb, D_PSIDD:D_PSIDD + 6], Y1) + dot6(T3, z))
        u6 = dot6(pst, Y1) + dot6(T1, ws[rb, D_ZP:D_ZP + 6]) + dot6(T2, z)
        u4 = dot6(ws[rb, D_S:D_S + 6], w) + u9
        HQ[a, b] += u3
        HX[b, a] += u6
        HD[a, b] += u9
        HV[b, a] += u4


@helper
def subtree_vectors(i, rb, ws, sc):
    """Output a's vectors of dof b (row rb, joint i) from joint i's lam-weighted subtree
    sums: U12 = SA1 s_b, U9 = s_b x* ST1, U8 = s_b x* ST4 - SA1 psid_b + psid_b x* ST1;
    U11 = U12 - U9 in U12's place."""
    ST1 = ws[i, W_ST1:W_ST1 + 6]
    SA1 = ws[i, W_SA1:W_SA1 + 13]
    T4 = sc[SC_T4:SC_T4 + 6]                 # ST4, full
    T4[0] = 0.0
    T4[1] = 0.0
    T4[2] = 0.0
    T4[3] = ws[i, W_ST4]
    T4[4] = ws[i, W_ST4 + 1]
    T4[5] = ws[i, W_ST4 + 2]
    U8 = sc[SC_U8:SC_U8 + 6]
    U9 = sc[SC_U9:SC_U9 + 6]
    U12 = sc[SC_U12:SC_U12 + 6]
    y = sc[SC_V:SC_V + 6]
    st = ws[rb, D_S:D_S + 6]
    pst = ws[rb, D_PSID:D_PSID + 6]
    inertia_mul(SA1, st, U12)
    force_cross(st, ST1, U9)
    force_cross_ang(st, T4, U8)
    force_cross(pst, ST1, y)
    add6(y, U8)
    inertia_mul(SA1, pst, y)
    axpy6(-1.0, y, U8)


@helper
def pairs_of_dof(mi, i, b, rb, ws, sc, HQ, HV, HX, HD):
    """Every entry left for dof b (row rb) of joint i: output a for c in joint i, then
    for each dof d strictly above joint i output a (b as the middle dof, d as c) and
    outputs b and c (b as the deepest dof, d as b and c) at once, which share d's rows
    and their writes (module docstring)."""
    n = mi[0, 0]
    subtree_vectors(i, rb, ws, sc)
    U8 = sc[SC_U8:SC_U8 + 6]
    U9 = sc[SC_U9:SC_U9 + 6]
    U12 = sc[SC_U12:SC_U12 + 6]
    iv = mi[i, MI_IV]
    for c in range(iv, iv + mi[i, MI_NV]):        # output a, c in joint i
        rc = n + 1 + c
        psr = ws[rc, D_PSID:D_PSID + 6]
        p2 = dot6(U8, psr) + dot6(U9, ws[rc, D_PSIDD:D_PSIDD + 6])
        HQ[b, c] += p2
        HX[c, b] -= dot6(U12, psr) - dot6(U9, psr)
        HV[b, c] -= dot6(U12, ws[rc, D_S:D_S + 6])
    if mi[i, MI_PARENT] == 0:
        return
    # E1 = U8 + Y3, E2 = Y1 + U9, E3 = G - U12 + U9 (U8, U12 and U9 no longer needed)
    E1 = U8
    E2 = U9
    E3 = U12
    for c in range(6):
        u9 = U9[c]
        E3[c] = ws[rb, D_G + c] - U12[c] + u9       # E3 aliases U12
        E2[c] = u9 + ws[rb, D_Y1 + c]                # E2 aliases U9
    E1[3] += ws[rb, D_Y3]
    E1[4] += ws[rb, D_Y3 + 1]
    E1[5] += ws[rb, D_Y3 + 2]
    # b's vectors in scalars: for the compiler the writes below may alias them, and it
    # would reload each after every write
    e10, e11, e12, e13, e14, e15 = E1[0], E1[1], E1[2], E1[3], E1[4], E1[5]
    e20, e21, e22, e23, e24, e25 = E2[0], E2[1], E2[2], E2[3], E2[4], E2[5]
    e30, e31, e32, e33, e34, e35 = E3[0], E3[1], E3[2], E3[3], E3[4], E3[5]
    T1 = ws[rb, D_T1:D_T1 + 6]
    t10, t11, t12, t13, t14, t15 = T1[0], T1[1], T1[2], T1[3], T1[4], T1[5]
    T2 = ws[rb, D_T2:D_T2 + 6]
    t20, t21, t22, t23, t24, t25 = T2[0], T2[1], T2[2], T2[3], T2[4], T2[5]
    T3 = ws[rb, D_T3:D_T3 + 6]
    t30, t31, t32, t33, t34, t35 = T3[0], T3[1], T3[2], T3[3], T3[4], T3[5]
    x = mi[i, MI_PARENT]
    while x > 0:
        xiv = mi[x, MI_IV]
        for d in range(xiv, xiv + mi[x, MI_NV]):
            rd = n + 1 + d
            s = ws[rd, D_S:D_S + 6]
            ps = ws[rd, D_PSID:D_PSID + 6]
            pp = ws[rd, D_PSIDD:D_PSIDD + 6]
            ph = ws[rd, D_PHI:D_PHI + 6]
            z = ws[rd, D_Z:D_Z + 6]
            hq = (e10 * ps[0] + e11 * ps[1] + e12 * ps[2] + e13 * ps[3] + e14 * ps[4]
                  + e15 * ps[5] + e20 * pp[0] + e21 * pp[1] + e22 * pp[2] + e23 * pp[3]
                  + e24 * pp[4] + e25 * pp[5] + t30 * z[0] + t31 * z[1] + t32 * z[2]
                  + t33 * z[3] + t34 * z[4] + t35 * z[5])
            hv = e30 * s[0] + e31 * s[1] + e32 * s[2] + e33 * s[3] + e34 * s[4] + e35 * s[5]
            xbd = (e10 * s[0] + e11 * s[1] + e12 * s[2] + e13 * s[3] + e14 * s[4]
                   + e15 * s[5] + e20 * ph[0] + e21 * ph[1] + e22 * ph[2] + e23 * ph[3]
                   + e24 * ph[4] + e25 * ph[5])
            xdb = (e30 * ps[0] + e31 * ps[1] + e32 * ps[2] + e33 * ps[3] + e34 * ps[4]
                   + e35 * ps[5] + t20 * z[0] + t21 * z[1] + t22 * z[2] + t23 * z[3]
                   + t24 * z[4] + t25 * z[5])
            dbd = t10 * z[0] + t11 * z[1] + t12 * z[2] + t13 * z[3] + t14 * z[4] + t15 * z[5]
            ddb = e20 * s[0] + e21 * s[1] + e22 * s[2] + e23 * s[3] + e24 * s[4] + e25 * s[5]
            HQ[b, d] += hq
            HQ[d, b] += hq
            HV[b, d] += hv
            HV[d, b] += hv
            HX[b, d] += xbd
            HX[d, b] += xdb
            HD[b, d] += dbd
            HD[d, b] += ddb
        x = mi[x, MI_PARENT]


@helper
def joint_contraction(mi, i, lam, ws, sc, HQ, HV, HX, HD):
    """Joint i's share: for each dof a of i its blocks A1, A3, its share of the
    lam-weighted subtree sums, its vectors Y1, Y3, G and the output-c entries within
    joint i; then, the sums complete, every pair of a dof of i with a dof of i or above
    (pairs_of_dof)."""
    n = mi[0, 0]
    iv = mi[i, MI_IV]
    for a in range(iv, iv + mi[i, MI_NV]):
        ra = n + 1 + a
        dof_blocks(i, ra, ws, sc)
        la = lam[a]
        axpy6(la, ws[ra, D_T1:D_T1 + 6], ws[i, W_ST1:W_ST1 + 6])
        ws[i, W_ST4] += la * ws[ra, D_T4]
        ws[i, W_ST4 + 1] += la * ws[ra, D_T4 + 1]
        ws[i, W_ST4 + 2] += la * ws[ra, D_T4 + 2]
        A1 = sc[SC_A1:SC_A1 + 13]
        SA1 = ws[i, W_SA1:W_SA1 + 13]
        for c in range(13):
            SA1[c] += la * A1[c]
        deepest_vectors(mi, i, ra, ws, sc)
        same_joint_c(mi, i, a, ra, ws, sc, HQ, HV, HX, HD)
    for b in range(iv, iv + mi[i, MI_NV]):
        pairs_of_dof(mi, i, b, n + 1 + b, ws, sc, HQ, HV, HX, HD)


@helper
def sums_to_parent(mi, i, ws):
    """IC, BC, f and the lam-weighted sums of joint i's subtree join its parent's."""
    subtree_to_parent(mi, i, ws)
    p = mi[i, MI_PARENT]
    if p > 0:
        add6(ws[i, W_ST1:W_ST1 + 6], ws[p, W_ST1:W_ST1 + 6])
        ws[p, W_ST4] += ws[i, W_ST4]
        ws[p, W_ST4 + 1] += ws[i, W_ST4 + 1]
        ws[p, W_ST4 + 2] += ws[i, W_ST4 + 2]
        add13(ws[i, W_SA1:W_SA1 + 13], ws[p, W_SA1:W_SA1 + 13])


@helper
def armature_bias_hessian_contracted(mi, mf, lam, HV):
    """HV += sum_i lam_i d2b_i/dv2 (armature.armature_bias_hessian contracted)."""
    if mi[0, MI_ARM_WORLD] == 0:
        return
    for i in range(1, mi[0, 0] + 1):
        if mi[i, MI_ARM_WORLD] != 0:
            iv = mi[i, MI_IV]
            for k in range(3):
                k1 = (k + 1) % 3
                k2 = (k + 2) % 3
                a = lam[iv + k] * mf[i, MF_ARM + k]
                HV[iv + 3 + k1, iv + k2] += a
                HV[iv + k2, iv + 3 + k1] += a
                HV[iv + 3 + k2, iv + k1] -= a
                HV[iv + k1, iv + 3 + k2] -= a


@kernel
def contraction_backward_pass(mi, lam, ws, sc, HQ, HV, HX, HD):
    """i = N..1: T1..T4 of joint i, its share of the contraction, then the subtree sums
    move to the parent."""
    for i in range(mi[0, 0], 0, -1):
        joint_terms(mi, i, ws)
        joint_contraction(mi, i, lam, ws, sc, HQ, HV, HX, HD)
        sums_to_parent(mi, i, ws)


@kernel
def fo_contraction_backward_pass(mi, lam, ws, sc, dtau_dq, dtau_dv, M, HQ, HV, HX, HD):
    """The same pass that also fills IDSVA's first-order derivatives (joint_fill: the
    branch pattern of dtau_dq, dtau_dv and M, no zeroing), as the ABA contraction needs."""
    for i in range(mi[0, 0], 0, -1):
        joint_terms(mi, i, ws)
        joint_fill(mi, i, ws, dtau_dq, dtau_dv, M)
        joint_contraction(mi, i, lam, ws, sc, HQ, HV, HX, HD)
        sums_to_parent(mi, i, ws)


@kernel
def zero4(HQ, HV, HX, HD):
    HQ[:, :] = 0.0
    HV[:, :] = 0.0
    HX[:, :] = 0.0
    HD[:, :] = 0.0


@kernel
def rnea_contraction(mi, mf, q, v, a, lam, fext, ws, sc, HQ, HV, HX, HD):
    """HQ, HV, HX, HD (each (nv, nv), every entry written): the IDSVA-SO tensors at
    (q, v, a, fext) contracted with lam over their output index. ws: (workspace_rows,
    >= CONTRACTION_WIDTH); sc: (SC_SIZE,)."""
    zero4(HQ, HV, HX, HD)
    idsva_forward_pass(mi, mf, q, v, a, fext, ws)
    costate_pass(mi, lam, ws)
    contraction_backward_pass(mi, lam, ws, sc, HQ, HV, HX, HD)
    armature_bias_hessian_contracted(mi, mf, lam, HV)


@helper
def branch_axpy(mi, jt, B, k, A, buf):
    """buf = sum of B[m, k] A[m, :] over the dofs m on the branch of joint jt (k one of
    its dofs): its ancestors' dofs and its own, then its strict descendants'; every
    inner loop runs along a row of A."""
    nv = A.shape[1]
    for c in range(nv):
        buf[c] = 0.0
    j = jt
    while j > 0:
        for m in range(mi[j, MI_IV], mi[j, MI_IV] + mi[j, MI_NV]):
            d = B[m, k]
            for c in range(nv):
                buf[c] += d * A[m, c]
        j = mi[j, MI_PARENT]
    iv = mi[jt, MI_IV]
    for m in range(iv + mi[jt, MI_NV], iv + mi[jt, MI_NVSUB]):
        d = B[m, k]
        for c in range(nv):
            buf[c] += d * A[m, c]


@kernel
def fd_products(mi, Minv, CD, dtau_dq, dtau_dv, dQ, dX, dT, G):
    """The products of the ABA contraction (module docstring) without P and Pv:
    dT = -Minv C_D (Y = Minv C_D), and with P = -Minv dtau_dq, Pv = -Minv dtau_dv
    (Minv symmetric) P^T C_D = -dtau_dq^T Y and C_D^T Pv = -(dtau_dv^T Y)^T, so
    dQ += dtau_dq^T Y + (dtau_dq^T Y)^T and dX += (dtau_dv^T Y)^T. C_D, dtau_dq and
    dtau_dv are read on the branch pattern only (zero or unwritten elsewhere): three
    products of O(nv nnz) each, the last two sharing their reads of Y. G: (3, nv)
    scratch."""
    nv = CD.shape[0]
    n = mi[0, 0]
    for jt in range(1, n + 1):
        iv = mi[jt, MI_IV]
        for k in range(iv, iv + mi[jt, MI_NV]):
            branch_axpy(mi, jt, CD, k, Minv, G[0])        # Y[:, k] (Minv symmetric)
            for c in range(nv):
                dT[c, k] = -G[0, c]
    for jt in range(1, n + 1):
        iv = mi[jt, MI_IV]
        for c in range(iv, iv + mi[jt, MI_NV]):
            # -(dtau_dq^T Y)[c, :] and -(dtau_dv^T Y)[c, :]
            branch_axpy2(mi, jt, dtau_dq, dtau_dv, c, dT, G[1], G[2])
            for k in range(nv):
                dQ[c, k] -= G[1, k]
                dQ[k, c] -= G[1, k]
                dX[k, c] -= G[2, k]


@kernel
def aba_contraction(mi, mf, q, v, tau, lam, fext, ws, sc, qdd, mu, G, Mt, F, dQ, dV, dX,
                    dT):
    """dQ, dV, dX, dT (each (nv, nv), every entry written): the FDSVA-SO tensors
    d2qdd/dq2, d2qdd/dv2, d2qdd/dqdv, d2qdd/dtaudq at (q, v, tau, fext) contracted with
    lam over their output index. Scratch: ws (workspace_rows, W_WIDTH), sc (SC_SIZE,),
    qdd (nv,) (out), mu (nv,), G (3, nv), Mt (5, nv, nv), F (njoints, nv, 6)."""
    nv = mu.shape[0]
    dtau_dq, dtau_dv, M, Minv, CD = Mt[0], Mt[1], Mt[2], Mt[3], Mt[4]
    zero4(dQ, dV, dX, CD)
    aba(mi, mf, q, v, tau, fext, ws, qdd)
    minverse_factored(mi, ws, F, Minv)
    for r in range(nv):
        s = Minv[r, 0] * lam[0]
        for c in range(1, nv):
            s += Minv[r, c] * lam[c]
        mu[r] = s
    # ABA leaves world placements, S, v, S qd and a (with qdd) in ws, as IDSVA needs
    idsva_dynamics_pass(mi, mf, fext, ws)
    costate_pass(mi, mu, ws)
    fo_contraction_backward_pass(mi, mu, ws, sc, dtau_dq, dtau_dv, M, dQ, dV, dX, CD)
    armature_bias_jacobian(mi, mf, v, dtau_dv)
    armature_bias_hessian_contracted(mi, mf, mu, dV)
    for r in range(nv):
        for c in range(nv):
            dQ[r, c] = -dQ[r, c]
            dV[r, c] = -dV[r, c]
            dX[r, c] = -dX[r, c]
    fd_products(mi, Minv, CD, dtau_dq, dtau_dv, dQ, dX, dT, G)
