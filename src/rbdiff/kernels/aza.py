"""AZA, the ABA-zero algorithm (Singh, Russell & Wensing 2022, sec. V-A): the product
C = -M^-1 B of Carpentier & Mansard 2018 eq. 24 (B = dtau/dq or dtau/dv at
qdd = ABA) computed column by column, each column by ABA with zero velocity, zero gravity
and no external force, tau = the column of B, instead of a dense multiplication by M^-1
(DMM, O(nv^2 d) with the tree sparsity of B, O(nv^3) on a chain). Each column costs
O(N): O(N nv) in all.

With v = 0 and g = 0, ABA's bias accelerations c_i and its initial bias forces vanish and
the articulated inertias IA_i do not depend on tau at all. They are computed once, by
ABA's articulated-inertia step ``aba.articulated_joint`` (minverse's backward pass runs
it, and M^-1 is returned anyway), which leaves S, U = IA S, D^-1 = (S^T U)^-1 and U D^-1
in the workspace. Per column only ABA's two cheap sweeps run (aba_backward_pass without
the inertia update, aba_forward_pass2 with c = 0):

  backward, i = N..1:  u_i = b_i - S_i^T pA_i;  pA_parent += pA_i + U_i D_i^-1 u_i
  forward,  i = 1..N:  a_i = a_parent;  qdd_i = D_i^-1 (u_i - U_i^T a_i);  a_i += S_i qdd_i

The sweeps carry BLOCK columns of dtau/dq and the same columns of dtau/dv at once (eight
independent right-hand sides): one column alone is bound by the latency of the
joint-to-joint dependency, eight fill the SIMD lanes. The sweeps are dense, so B must be
zero outside the branch pattern (the drivers zero it before the ID derivatives fill it).

When AZA pays (``use_aza``): DMM costs about 2 nv sum_j branch(j) multiply-adds in
contiguous, vectorised rows of M^-1 (branch(j): the dofs on dof j's branch), AZA about
nv/BLOCK pairs of O(nv) sweeps. Their ratio is the mean branch length
L = sum_j branch(j) / nv (L = nv on a serial chain, ~ 2 log2 N on a binary tree of N
bodies) over a constant, AZA_MIN_BRANCH, measured on serial chains (see its comment).
"""

from ..model.layout import MI_IV, MI_NV, MI_NVSUB, MI_PARENT
from .aba import aba
from .armature import armature_bias_jacobian
from .idsva import idsva_backward_pass, idsva_dynamics_pass
from .jit import helper, kernel
from .minverse import minverse
from .workspace import D_S, D_U, D_UDINV, W_DINV, W_WIDTH

# product choices (the public keyword product="auto" | "dmm" | "aza")
AUTO = 0
DMM = 1
AZA = 2

# Crossover in mean branch length L (dofs): AZA when L >= AZA_MIN_BRANCH. Measured with
# the whole aba_derivatives (IDSVA, M^-1 included), product forced, interleaved (min of
# 21 rounds, 2-core shared x86-64 AVX2 machine, indicative): serial chains (L = nv),
# aza/dmm = 1.21 (nv 10), 1.13 (30), 0.91 (50), 1.08 (60), 0.94 (70), 0.92 (80),
# 0.88 (100), 0.80 (120), 0.71 (150), 0.88 (200); binary trees of 15..255 bodies
# (L = 5.5..13.1): 1.20, 1.52, 1.88, 1.70, 4.58, DMM always. The product alone:
# aza/dmm = 1.84 (chain 20), 1.17 (50), 0.89 (100), 0.40 (200).
AZA_MIN_BRANCH = 64

# Columns go BLOCK at a time: lane l < BLOCK is column j0 + l of B1, lane BLOCK + l the
# same column of B2. Independent lanes fill the SIMD units and hide the latency of the
# sweeps' joint-to-joint dependency, which one column alone leaves exposed.
# (BLOCK = 1, 2, 4, 8, 16 measured on a 200-link chain: 1.50, 1.18, 1.06, 0.84, 1.04 ms)
BLOCK = 8
LANES = 2 * BLOCK
# AZA's workspace: the usual W_WIDTH columns and, past them, a (6 x LANES) and pA
# (6 x LANES) per joint row; per dof row u (LANES) and qdd (LANES) after S, U and U D^-1
# (the only columns read, with D^-1, once M^-1 is computed)
W_ZA = W_WIDTH
W_ZPA = W_ZA + 6 * LANES
AZA_WIDTH = W_ZPA + 6 * LANES
D_ZU = D_UDINV + 6
D_ZX = D_ZU + LANES
assert D_ZX + LANES <= W_WIDTH


@kernel
def aza_load_block(mi, ws, B1, B2, j0):
    """u = the block's right-hand sides (zero past the last column)."""
    n = mi[0, 0]
    nv = mi[0, 2]
    for k in range(nv):
        r = n + 1 + k
        for l in range(BLOCK):
            c = j0 + l
            if c < nv:
                ws[r, D_ZU + l] = B1[k, c]
                ws[r, D_ZU + BLOCK + l] = B2[k, c]
            else:
                ws[r, D_ZU + l] = 0.0
                ws[r, D_ZU + BLOCK + l] = 0.0


@kernel
def aza_backward_sweep(mi, ws):
    """i = N..1: u_i -= S_i^T pA_i; pA_parent += pA_i + U_i D_i^-1 u_i (all lanes; each
    lane's six components in registers, one store each)."""
    n = mi[0, 0]
    for i in range(1, n + 1):
        for c in range(6 * LANES):
            ws[i, W_ZPA + c] = 0.0
    for i in range(n, 0, -1):
        iv = mi[i, MI_IV]
        nvi = mi[i, MI_NV]
        lam = mi[i, MI_PARENT]
        for k in range(nvi):
            r = n + 1 + iv + k
            s0, s1, s2 = ws[r, D_S], ws[r, D_S + 1], ws[r, D_S + 2]
            s3, s4, s5 = ws[r, D_S + 3], ws[r, D_S + 4], ws[r, D_S + 5]
            for l in range(LANES):
                ws[r, D_ZU + l] -= (s0 * ws[i, W_ZPA + l] + s1 * ws[i, W_ZPA + LANES + l]
                                    + s2 * ws[i, W_ZPA + 2 * LANES + l]
                                    + s3 * ws[i, W_ZPA + 3 * LANES + l]
                                    + s4 * ws[i, W_ZPA + 4 * LANES + l]
                                    + s5 * ws[i, W_ZPA + 5 * LANES + l])
        if lam == 0:
            continue
        for l in range(LANES):
            p0 = ws[i, W_ZPA + l]
            p1 = ws[i, W_ZPA + LANES + l]
            p2 = ws[i, W_ZPA + 2 * LANES + l]
            p3 = ws[i, W_ZPA + 3 * LANES + l]
            p4 = ws[i, W_ZPA + 4 * LANES + l]
            p5 = ws[i, W_ZPA + 5 * LANES + l]
            for k in range(nvi):
                r = n + 1 + iv + k
                u = ws[r, D_ZU + l]
                p0 += ws[r, D_UDINV] * u
                p1 += ws[r, D_UDINV + 1] * u
                p2 += ws[r, D_UDINV + 2] * u
                p3 += ws[r, D_UDINV + 3] * u
                p4 += ws[r, D_UDINV + 4] * u
                p5 += ws[r, D_UDINV + 5] * u
            ws[lam, W_ZPA + l] += p0
            ws[lam, W_ZPA + LANES + l] += p1
            ws[lam, W_ZPA + 2 * LANES + l] += p2
            ws[lam, W_ZPA + 3 * LANES + l] += p3
            ws[lam, W_ZPA + 4 * LANES + l] += p4
            ws[lam, W_ZPA + 5 * LANES + l] += p5


@kernel
def aza_forward_sweep(mi, ws, C1, C2, j0):
    """i = 1..N: a_i = a_parent; qdd_i = D_i^-1 (u_i - U_i^T a_i); a_i += S_i qdd_i
    (zero gravity); columns j0.. of C1, C2 = -qdd."""
    n = mi[0, 0]
    nv = mi[0, 2]
    for c in range(6 * LANES):
        ws[0, W_ZA + c] = 0.0
    for i in range(1, n + 1):
        lam = mi[i, MI_PARENT]
        iv = mi[i, MI_IV]
        nvi = mi[i, MI_NV]
        if nvi == 1:            # one dof: the whole joint in registers, lane by lane
            r = n + 1 + iv
            u0, u1, u2 = ws[r, D_U], ws[r, D_U + 1], ws[r, D_U + 2]
            u3, u4, u5 = ws[r, D_U + 3], ws[r, D_U + 4], ws[r, D_U + 5]
            s0, s1, s2 = ws[r, D_S], ws[r, D_S + 1], ws[r, D_S + 2]
            s3, s4, s5 = ws[r, D_S + 3], ws[r, D_S + 4], ws[r, D_S + 5]
            d = ws[i, W_DINV]
            for l in range(LANES):
                a0 = ws[lam, W_ZA + l]
                a1 = ws[lam, W_ZA + LANES + l]
                a2 = ws[lam, W_ZA + 2 * LANES + l]
                a3 = ws[lam, W_ZA + 3 * LANES + l]
                a4 = ws[lam, W_ZA + 4 * LANES + l]
                a5 = ws[lam, W_ZA + 5 * LANES + l]
                x = d * (ws[r, D_ZU + l] - (u0 * a0 + u1 * a1 + u2 * a2 + u3 * a3
                                            + u4 * a4 + u5 * a5))
                ws[r, D_ZX + l] = x
                ws[i, W_ZA + l] = a0 + s0 * x
                ws[i, W_ZA + LANES + l] = a1 + s1 * x
                ws[i, W_ZA + 2 * LANES + l] = a2 + s2 * x
                ws[i, W_ZA + 3 * LANES + l] = a3 + s3 * x
                ws[i, W_ZA + 4 * LANES + l] = a4 + s4 * x
                ws[i, W_ZA + 5 * LANES + l] = a5 + s5 * x
        else:
            for c in range(6 * LANES):
                ws[i, W_ZA + c] = ws[lam, W_ZA + c]
            for k in range(nvi):        # u - U^T a (into ZU, read once)
                r = n + 1 + iv + k
                u0, u1, u2 = ws[r, D_U], ws[r, D_U + 1], ws[r, D_U + 2]
                u3, u4, u5 = ws[r, D_U + 3], ws[r, D_U + 4], ws[r, D_U + 5]
                for l in range(LANES):
                    ws[r, D_ZU + l] -= (u0 * ws[i, W_ZA + l] + u1 * ws[i, W_ZA + LANES + l]
                                        + u2 * ws[i, W_ZA + 2 * LANES + l]
                                        + u3 * ws[i, W_ZA + 3 * LANES + l]
                                        + u4 * ws[i, W_ZA + 4 * LANES + l]
                                        + u5 * ws[i, W_ZA + 5 * LANES + l])
            for k in range(nvi):        # qdd_k = sum_m Dinv[k, m] (u - U^T a)_m
                r = n + 1 + iv + k
                for l in range(LANES):
                    x = 0.0 * ws[r, D_ZU + l]
                    for m in range(nvi):
                        x += ws[i, W_DINV + nvi * k + m] * ws[n + 1 + iv + m, D_ZU + l]
                    ws[r, D_ZX + l] = x
            for k in range(nvi):        # a_i += S qdd
                r = n + 1 + iv + k
                s0, s1, s2 = ws[r, D_S], ws[r, D_S + 1], ws[r, D_S + 2]
                s3, s4, s5 = ws[r, D_S + 3], ws[r, D_S + 4], ws[r, D_S + 5]
                for l in range(LANES):
                    x = ws[r, D_ZX + l]
                    ws[i, W_ZA + l] += s0 * x
                    ws[i, W_ZA + LANES + l] += s1 * x
                    ws[i, W_ZA + 2 * LANES + l] += s2 * x
                    ws[i, W_ZA + 3 * LANES + l] += s3 * x
                    ws[i, W_ZA + 4 * LANES + l] += s4 * x
                    ws[i, W_ZA + 5 * LANES + l] += s5 * x
        for k in range(nvi):
            r = n + 1 + iv + k
            for l in range(BLOCK):
                if j0 + l < nv:
                    C1[iv + k, j0 + l] = -ws[r, D_ZX + l]
                    C2[iv + k, j0 + l] = -ws[r, D_ZX + BLOCK + l]


@kernel
def neg_minv_mul_aza(mi, ws, B1, B2, C1, C2):
    """C1 = -M^-1 B1 and C2 = -M^-1 B2 (each (nv, nv)) by AZA, BLOCK columns per pair of
    sweeps; B1 and B2 must be zero outside the branch pattern (the sweeps are dense).
    ws must hold the articulated factorization (S, U, D^-1, U D^-1) that minverse or
    ABA's backward pass leaves."""
    for j0 in range(0, mi[0, 2], BLOCK):
        aza_load_block(mi, ws, B1, B2, j0)
        aza_backward_sweep(mi, ws)
        aza_forward_sweep(mi, ws, C1, C2, j0)


@helper
def branch_pattern_nnz(mi):
    """sum_j branch(j), the dofs on dof j's branch (its joint's ancestors, the joint's own
    dofs and its strict descendants) summed over all dofs j: the nonzeros of M's pattern."""
    n = mi[0, 0]
    total = 0
    for i in range(1, n + 1):
        depth = 0
        a = i
        while a > 0:
            depth += mi[a, MI_NV]
            a = mi[a, MI_PARENT]
        total += mi[i, MI_NV] * (depth + mi[i, MI_NVSUB] - mi[i, MI_NV])
    return total


@helper
def mean_branch_ge(mi, length):
    """sum_j branch(j) >= length * nv (see branch_pattern_nnz)."""
    return branch_pattern_nnz(mi) >= length * mi[0, 2]


def mean_branch_ge_interpreted(mi, length):
    """mean_branch_ge for a Python caller, run by the interpreter: a decision taken once
    per model, for which compiling a Python-callable twin cost 0.45 s of the first
    aba_derivatives."""
    return branch_pattern_nnz.py_func(mi) >= length * mi[0, 2]


@helper
def use_aza(mi, product):
    """The product to run: AZA when asked, or when auto and the branches are long."""
    if product == AZA:
        return True
    if product == DMM:
        return False
    return mean_branch_ge(mi, AZA_MIN_BRANCH)


@kernel
def aba_derivatives_aza(mi, mf, q, v, tau, fext, ws, qdd, S3, F, dqdd_dq, dqdd_dv, Minv):
    """aba_derivatives.aba_derivatives with the product of eq. 24 by AZA: qdd = ABA,
    IDSVA at (q, v, qdd), M^-1 (which leaves the articulated factorization in ws), then
    dqdd_dq = -M^-1 dtau_dq and dqdd_dv = -M^-1 dtau_dv by AZA sweeps. ws
    (workspace_rows, AZA_WIDTH); as there: qdd (nv,), S3 (3, nv, nv),
    F (njoints, nv, 6)."""
    aba(mi, mf, q, v, tau, fext, ws, qdd)
    idsva_dynamics_pass(mi, mf, fext, ws)
    S3[0, :, :] = 0.0       # the sweeps read whole columns: zero off the branch pattern
    S3[1, :, :] = 0.0
    idsva_backward_pass(mi, ws, S3[0], S3[1], S3[2])
    armature_bias_jacobian(mi, mf, v, S3[1])
    minverse(mi, mf, q, ws, F, Minv)
    neg_minv_mul_aza(mi, ws, S3[0], S3[1], dqdd_dq, dqdd_dv)
