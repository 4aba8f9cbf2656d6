"""FDSVA-SO: second-order derivatives of forward dynamics from those of inverse dynamics
(Singh, Russell & Wensing 2023, eq. 46; restated in DESIGN.md section 5):

    qdd = ABA(q, v, tau, fext),  everything below at (q, v, qdd)
    d2qdd/dq2    = -Minv (Q + D.P + swap23(D.P))        P  = dqdd/dq
    d2qdd/dv2    = -Minv V
    d2qdd/dqdv   = -Minv (X + swap23(D.Pv))             Pv = dqdd/dv
    d2qdd/dtaudq = -Minv (D.Minv)

with Q, V, X, D = d2tau/dq2, d2tau/dv2, d2tau/dqdv, dM/dq by IDSVA-SO (idsva_so.py),
P and Pv by FDSVA first order (aba_derivatives.py: -Minv times IDSVA's dtau/dq, dtau/dv),
Minv from ABA's own factorisation (minverse.minverse_factored, before IDSVA-SO overwrites
it). Tensors are (nv, nv, nv), output index first;
swap23(T)[i, j, k] = T[i, k, j]; (D.P)[i, j, k] = sum_l D[i, l, k] P[l, j]; the products
with Minv act on the output index.

The inner products D.P are either tensor-matrix products (DTM) that skip the rows
D[i, l, :] that dM/dq's pattern makes zero (dofs i and l off one branch) and, within a
row, the dofs outside the range that can be nonzero, O(nnz(D) nv), or one IDFOZA call
per column of P (idfoza.py: IDSVA at zero velocity and gravity with a = P[:, j] gives
d/dq (M P[:, j]), singh-2023 eq. 52), O(nnz(branch pattern) nv); idfoza_beats_dtm is the
measured crossover (long chains only). The outer products -Minv T are
either the dense product (DTM, O(nv^4); chains) or, when M's L^T D L factor is sparse
enough (trees, floating bases), sparse triangular solves on all nv^2 columns at once
(the batched form of the paper's per-column AZA route: ABA with zero velocity and
gravity applies M^-1 through the same tree structure), O(nnz(L) nv^2); SPARSE_RATIO is
the measured crossover.
"""

from ..model.layout import MI_IV, MI_NV, MI_NVSUB, MI_PARENT
from .armature import armature_bias_hessian, armature_bias_jacobian, armature_diagonal
from .aba import aba
from .aba_derivatives import neg_minv_mul_tree
from .crba import body_inertias
from .idfoza import idfoza_beats_dtm, idfoza_matrix_t
from .idsva import idsva_dynamics_pass
from .idsva_so import idsva_fo_so_backward_pass, zero_fill
from .jit import helper, kernel
from .minverse import minverse_factored


# routes (the public keywords inner="auto" | "dtm" | "idfoza", outer="auto" | "dense" | "aza")
AUTO = 0
DTM = 1             # inner: tensor_matrix_t
IDFOZA = 2          # inner: idfoza.idfoza_matrix_t
DENSE = 1           # outer: neg_minv_tensor
AZA = 2             # outer: neg_minv_tensor_ltdl

GEMM_BLOCK = 256    # columns of the flattened (nv, nv^2) tensor per block of the outer product
# factorised outer products when 2 nnz(L) + nv < SPARSE_RATIO nv^2 row updates; measured on
# the development machine: ratio 0.43 (talos+ff) 2.1x, 0.53 (g1+ff) 1.7x, 0.67 (hyq+ff)
# 1.3x faster than the dense product, serial chains (ratio 1) 1.1-1.2x slower. Re-checked
# with the two outer kernels timed alone (interleaved, median of 11 rounds), ltdl/dense:
# binary trees N = 7, 15, 31, 63, 110 (ratio 0.55, 0.37, 0.24, 0.15, 0.10): 0.75, 0.36,
# 0.26, 0.12, 0.14; hyq+ff (0.67) 0.66, talos+ff (0.43) 0.39; panda (0.98) 1.19; serial
# chains N = 5..110 (1.0): 0.89-1.44, mostly > 1.
SPARSE_RATIO = 0.85


@helper
def _row_times_matrix_t(D, P, E, i, l, lo, hi):
    """E[i, k, :] += D[i, l, k] P[l, :] for k in [lo, hi) (contiguous rows of P and E)."""
    nv = P.shape[1]
    for k in range(lo, hi):
        d = D[i, l, k]
        for j in range(nv):
            E[i, k, j] += d * P[l, j]


@kernel
def tensor_matrix_t(mi, D, P, E):
    """E = swap23(D.P): E[i, k, j] = sum_l D[i, l, k] P[l, j] (singh-2023 eq. 46's inner
    products, transposed so that the innermost loop runs along rows of P) for D = dM/dq
    (nv, nv, nv) and any P (nv, nv). D[i, l, k] = dM_il/dq_k vanishes unless the joints
    of i, l and k lie on one branch and k is strictly below the shallower of i's and l's
    joints (s) and at most in the subtree of the deeper (d): k in [iv_s + nv_s,
    iv_d + nvsub_d); only those rows and ranges are read, O(nnz(D) nv) in all."""
    n = mi[0, 0]
    for ji in range(1, n + 1):
        iv = mi[ji, MI_IV]
        end = iv + mi[ji, MI_NVSUB]
        for i in range(iv, iv + mi[ji, MI_NV]):
            E[i, :, :] = 0.0
            jl = ji                                   # l on joint i or above: d = ji
            while jl > 0:
                l0 = mi[jl, MI_IV]
                l1 = l0 + mi[jl, MI_NV]
                for l in range(l0, l1):
                    _row_times_matrix_t(D, P, E, i, l, l1, end)
                jl = mi[jl, MI_PARENT]
            jl = ji + 1                               # l strictly below: s = ji
            while jl <= n and mi[jl, MI_IV] < end:
                l0 = mi[jl, MI_IV]
                hi = l0 + mi[jl, MI_NVSUB]
                for l in range(l0, l0 + mi[jl, MI_NV]):
                    _row_times_matrix_t(D, P, E, i, l, iv + mi[ji, MI_NV], hi)
                jl += 1


@kernel
def add_sym23(E, T):
    """T[i, j, k] += E[i, j, k] + E[i, k, j]."""
    nv = T.shape[0]
    for i in range(nv):
        for j in range(nv):
            for k in range(nv):
                T[i, j, k] += E[i, j, k] + E[i, k, j]


@kernel
def swap23(E, T):
    """T[i, j, k] = E[i, k, j]."""
    nv = T.shape[0]
    for i in range(nv):
        for j in range(nv):
            for k in range(nv):
                T[i, j, k] = E[i, k, j]


@kernel
def neg_minv_tensor(Minv, T, out):
    """out[i] = -sum_l Minv[i, l] T[l] (the outer products of eq. 46) as a GEMM on the
    flattened (nv, nv^2) tensors, in column blocks of GEMM_BLOCK that stay in cache."""
    nv = T.shape[0]
    R = nv * nv
    T2 = T.reshape(nv, R)
    O2 = out.reshape(nv, R)
    for r0 in range(0, R, GEMM_BLOCK):
        r1 = min(r0 + GEMM_BLOCK, R)
        for i in range(nv):
            o = O2[i, r0:r1]
            o[:] = 0.0
            for l in range(nv):
                m = -Minv[i, l]
                t = T2[l, r0:r1]
                for r in range(r1 - r0):
                    o[r] += m * t[r]


@kernel
def dof_parents(mi, lam):
    """lam[k] = the dof before dof k on its root path (the previous dof of its joint, or
    the last dof of the parent joint), -1 at the root."""
    for j in range(1, mi[0, 0] + 1):
        iv = mi[j, MI_IV]
        p = mi[j, MI_PARENT]
        lam[iv] = mi[p, MI_IV] + mi[p, MI_NV] - 1 if p > 0 else -1
        for k in range(iv + 1, iv + mi[j, MI_NV]):
            lam[k] = k - 1


@kernel
def ltdl(lam, H):
    """M = L^T D L in place (Featherstone 2008, Table 6.3): H holds M (its entries on the
    branch pattern, both triangles) and leaves with D on its diagonal and the unit
    lower-triangular L (nonzero only at H[k, i], i an ancestor dof of k) below it."""
    for k in range(H.shape[0] - 1, -1, -1):
        i = lam[k]
        while i >= 0:
            a = H[k, i] / H[k, k]
            j = i
            while j >= 0:
                H[i, j] -= a * H[k, j]
                j = lam[j]
            H[k, i] = a
            i = lam[i]


@kernel
def neg_minv_tensor_ltdl(lam, H, T, out):
    """out = -M^-1 T with M = L^T D L (ltdl): the outer products of eq. 46 as sparse
    triangular solves on the flattened (nv, nv^2) tensor, 2 nnz(L) + nv row updates
    instead of the nv^2 of the dense product (the batched form of the paper's AZA
    route, which applies M^-1 through the same tree structure), in cache-sized column
    blocks."""
    nv = T.shape[0]
    R = nv * nv
    T2 = T.reshape(nv, R)
    Y = out.reshape(nv, R)
    for r0 in range(0, R, GEMM_BLOCK):
        r1 = min(r0 + GEMM_BLOCK, R)
        w = r1 - r0
        for k in range(nv):
            yk = Y[k, r0:r1]
            tk = T2[k, r0:r1]
            for r in range(w):
                yk[r] = tk[r]
        for k in range(nv - 1, -1, -1):          # L^T z = y, leaves first
            yk = Y[k, r0:r1]
            i = lam[k]
            while i >= 0:
                h = H[k, i]
                yi = Y[i, r0:r1]
                for r in range(w):
                    yi[r] -= h * yk[r]
                i = lam[i]
        for k in range(nv):                      # -D^-1, then L z = y, root first
            yk = Y[k, r0:r1]
            d = -1.0 / H[k, k]
            for r in range(w):
                yk[r] *= d
            i = lam[k]
            while i >= 0:
                h = H[k, i]
                yi = Y[i, r0:r1]
                for r in range(w):
                    yk[r] -= h * yi[r]
                i = lam[i]


@helper
def outer(mi, lam, H, Minv, sparse, T, out):
    """out = -Minv T, by the factorisation (sparse) or the dense product."""
    if sparse:
        neg_minv_tensor_ltdl(lam, H, T, out)
    else:
        neg_minv_tensor(Minv, T, out)


@helper
def inner_t(mi, mf, ws, use_idfoza, D, P, G3, E):
    """E = swap23(D.P), by IDFOZA (one IDSVA call at v = 0, g = 0, a = P[:, j] per
    column; G3 (3, nv, nv) scratch) or DTM (tensor_matrix_t); ws None: DTM."""
    if ws is None:       # Numba prunes on the None type: IDFOZA is not compiled in
        tensor_matrix_t(mi, D, P, E)
    elif use_idfoza:
        idfoza_matrix_t(mi, mf, ws, P, G3, E)
    else:
        tensor_matrix_t(mi, D, P, E)


@helper
def uses_idfoza(mi, inner):
    """True when the inner products take the IDFOZA route (inner IDFOZA, or AUTO where
    idfoza_beats_dtm)."""
    return inner == IDFOZA or (inner == AUTO and idfoza_beats_dtm(mi))


@kernel
def fdsva_so(mi, mf, q, v, tau, fext, ws, sc, qdd, lam, Mt, F, T, dQ, dV, dX, dT):
    """d2qdd/dq2, d2qdd/dv2, d2qdd/dqdv, d2qdd/dtaudq (dQ, dV, dX, dT, each (nv, nv, nv),
    every entry written) at (q, v, tau, fext), with the routes chosen automatically
    (fdsva_so_routes with AUTO, AUTO). Scratch: ws (workspace_rows, W_WIDTH),
    sc (SC_SIZE,), qdd (nv,), lam (nv,) int64, Mt (7, nv, nv), F (njoints, nv, 6),
    T (5, nv, nv, nv)."""
    fdsva_so_routes(mi, mf, q, v, tau, fext, ws, sc, qdd, lam, Mt, F, T, dQ, dV, dX, dT,
                    AUTO, AUTO)


@kernel
def fdsva_so_routes(mi, mf, q, v, tau, fext, ws, sc, qdd, lam, Mt, F, T, dQ, dV, dX, dT,
                    inner, outer_route):
    """fdsva_so with the routes given: inner (AUTO, DTM or IDFOZA) for the products with
    D = dM/dq, outer_route (AUTO, DENSE or AZA) for the products with -M^-1. AUTO: IDFOZA
    when idfoza_beats_dtm, the L^T D L solves when M's factor has fewer than
    SPARSE_RATIO nv^2 nonzeros (trees), the dense M^-1 otherwise (chains)."""
    aba(mi, mf, q, v, tau, fext, ws, qdd)
    minverse_factored(mi, ws, F, Mt[3])
    fdsva_so_terms(mi, mf, v, fext, ws, sc, Mt, T)
    fdsva_so_products(mi, mf, ws, lam, Mt, T, dQ, dV, dX, dT, inner, outer_route)


@kernel
def fdsva_so_terms(mi, mf, v, fext, ws, sc, Mt, T):
    """Eq. 46's terms at (q, v, qdd), after ABA (which leaves world placements, S, v,
    S qd and a with qdd in ws, as IDSVA needs) and Minv in Mt[3] (minverse_factored on
    ABA's factorisation): Q, V, X, D = T[0:4] by IDSVA-SO, M in Mt[6] (armature
    included), P = dqdd/dq and Pv = dqdd/dv in Mt[4], Mt[5] (FDSVA first order);
    Mt[0:3] are scratch."""
    Q, V, X, D = T[0], T[1], T[2], T[3]
    H = Mt[6]
    zero_fill(Q, V, X, D)
    idsva_dynamics_pass(mi, mf, fext, ws)
    idsva_fo_so_backward_pass(mi, ws, sc, Mt[0], Mt[1], H, Q, V, X, D)
    armature_diagonal(mi, mf, H)              # the LTDL route factorises M itself
    armature_bias_jacobian(mi, mf, v, Mt[1])
    armature_bias_hessian(mi, mf, V)
    Minv = Mt[3]
    neg_minv_mul_tree(mi, Minv, Mt[0], Mt[1], Mt[4], Mt[5], Mt[2, 0], Mt[2, 1])


@kernel
def fdsva_so_products(mi, mf, ws, lam, Mt, T, dQ, dV, dX, dT, inner, outer_route):
    """Eq. 46's products from fdsva_so_terms' Mt and T (T[4] and Mt[0:3] scratch; ws as
    IDSVA-SO left it, for IDFOZA) into dQ, dV, dX, dT, by the routes (fdsva_so_routes).
    ws None: the DTM route whatever ``inner`` says, IDFOZA not compiled in (the CPU
    single entry calls IDFOZA's apart, on the models that take it)."""
    Q, V, X, D, E = T[0], T[1], T[2], T[3], T[4]
    H, Minv = Mt[6], Mt[3]
    dof_parents(mi, lam)
    nnz = 0
    for k in range(lam.shape[0]):
        i = lam[k]
        while i >= 0:
            nnz += 1
            i = lam[i]
    nv = lam.shape[0]
    sparse = outer_route == AZA or (outer_route == AUTO
                                    and 2 * nnz + nv < SPARSE_RATIO * nv * nv)
    use_idfoza = False
    if ws is not None:       # pruned on the None type, as in inner_t
        use_idfoza = uses_idfoza(mi, inner)
        if use_idfoza:       # IDSVA-SO left composite inertias in ws' body rows
            body_inertias(mi, mf, ws)
    if sparse:
        ltdl(lam, H)
    G3 = Mt[0:3]                              # free from here on
    inner_t(mi, mf, ws, use_idfoza, D, Mt[4], G3, E)    # swap23(D.P)
    add_sym23(E, Q)                           # Q + D.P + swap23(D.P)
    outer(mi, lam, H, Minv, sparse, Q, dQ)
    outer(mi, lam, H, Minv, sparse, V, dV)
    inner_t(mi, mf, ws, use_idfoza, D, Mt[5], G3, E)    # swap23(D.Pv)
    add_tensor(E, X)
    outer(mi, lam, H, Minv, sparse, X, dX)
    inner_t(mi, mf, ws, use_idfoza, D, Minv, G3, E)     # swap23(D.Minv)
    outer(mi, lam, H, Minv, sparse, E, Q)     # swap23(d2qdd/dtaudq), Q as scratch
    swap23(Q, dT)


@kernel
def add_tensor(E, T):
    """T += E."""
    nv = T.shape[0]
    for i in range(nv):
        for j in range(nv):
            for k in range(nv):
                T[i, j, k] += E[i, j, k]
