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
the inertia update, aba_forward_pass2 with c = 0), on two right-hand sides at once (column
j of dtau/dq and of dtau/dv share their sparsity):

  backward, i = N..1:  u_i = b_i - S_i^T pA_i;  pA_parent += pA_i + U_i D_i^-1 u_i
  forward,  i = 1..N:  a_i = a_parent;  qdd_i = D_i^-1 (u_i - U_i^T a_i);  a_i += S_i qdd_i

Column j of B is zero outside dof j's branch (its joint's ancestors and subtree), so the
backward sweep visits only those joints; the forward sweep visits every joint (M^-1 b is
dense).

When AZA pays (``aza_pays``): DMM costs about 2 nv sum_j branch(j) multiply-adds in
contiguous, vectorised rows of M^-1 (branch(j): the dofs on dof j's branch), AZA about
2 nv sweeps of O(nv) scalar work. Their ratio is the mean branch length
L = sum_j branch(j) / nv (L = nv on a serial chain, ~ 2 log2 N on a binary tree of N
bodies) over a constant, AZA_MIN_BRANCH, measured on serial chains (see its comment).
"""

from ..model.layout import MI_IV, MI_NV, MI_NVSUB, MI_PARENT
from .aba import aba
from .idsva import idsva_backward_pass, idsva_dynamics_pass
from .jit import helper, kernel
from .minverse import minverse
from .workspace import D_S, D_T, D_U, D_UDINV, W_A, W_C, W_DINV, W_PA, W_V

# product choices (the public keyword product="auto" | "dmm" | "aza")
AUTO = 0
DMM = 1
AZA = 2

# Crossover in mean branch length L (dofs): AZA when L >= AZA_MIN_BRANCH. Measured on
# serial chains (L = nv), aba_derivatives(product="dmm") vs product="aza", interleaved.
AZA_MIN_BRANCH = 48

# workspace columns (free once M^-1 is computed): pA and a of the two right-hand sides,
# 12 each (W_PA, W_C and W_V, W_A are adjacent); per dof: u (2) and U^T a scratch (2)
W_ZPA = W_PA
W_ZA = W_V
D_ZU = D_T
D_ZX = D_T + 2
assert W_C == W_PA + 6 and W_A == W_V + 6


@helper
def zero12(x):
    for k in range(12):
        x[k] = 0.0


@helper
def aza_bias_joint(mi, i, ws, B1, B2, j):
    """u_i = b_i - S_i^T pA_i for both right-hand sides; pA_parent += pA_i + U D^-1 u_i."""
    n = mi[0, 0]
    iv = mi[i, MI_IV]
    lam = mi[i, MI_PARENT]
    p0, p1, p2 = ws[i, W_ZPA], ws[i, W_ZPA + 1], ws[i, W_ZPA + 2]
    p3, p4, p5 = ws[i, W_ZPA + 3], ws[i, W_ZPA + 4], ws[i, W_ZPA + 5]
    q0, q1, q2 = ws[i, W_ZPA + 6], ws[i, W_ZPA + 7], ws[i, W_ZPA + 8]
    q3, q4, q5 = ws[i, W_ZPA + 9], ws[i, W_ZPA + 10], ws[i, W_ZPA + 11]
    for k in range(mi[i, MI_NV]):
        r = n + 1 + iv + k
        s0, s1, s2 = ws[r, D_S], ws[r, D_S + 1], ws[r, D_S + 2]
        s3, s4, s5 = ws[r, D_S + 3], ws[r, D_S + 4], ws[r, D_S + 5]
        u1 = B1[iv + k, j] - (s0 * p0 + s1 * p1 + s2 * p2 + s3 * p3 + s4 * p4 + s5 * p5)
        u2 = B2[iv + k, j] - (s0 * q0 + s1 * q1 + s2 * q2 + s3 * q3 + s4 * q4 + s5 * q5)
        ws[r, D_ZU] = u1
        ws[r, D_ZU + 1] = u2
    if lam > 0:
        for k in range(mi[i, MI_NV]):
            r = n + 1 + iv + k
            u1 = ws[r, D_ZU]
            u2 = ws[r, D_ZU + 1]
            for c in range(6):
                x = ws[r, D_UDINV + c]
                ws[i, W_ZPA + c] += x * u1
                ws[i, W_ZPA + 6 + c] += x * u2
        for c in range(12):
            ws[lam, W_ZPA + c] += ws[i, W_ZPA + c]


@kernel
def aza_backward_sweep(mi, ws, B1, B2, jt, j):
    """u and pA for column j (a dof of joint jt): only jt's subtree and ancestors carry
    a nonzero pA; u is zero on every other dof."""
    n = mi[0, 0]
    nv = mi[0, 2]
    for r in range(n + 1, n + 1 + nv):
        ws[r, D_ZU] = 0.0
        ws[r, D_ZU + 1] = 0.0
    end = mi[jt, MI_IV] + mi[jt, MI_NVSUB]
    last = jt
    while last < n and mi[last + 1, MI_IV] < end:
        last += 1
    for i in range(jt, last + 1):
        zero12(ws[i, W_ZPA:W_ZPA + 12])
    a = mi[jt, MI_PARENT]
    while a > 0:
        zero12(ws[a, W_ZPA:W_ZPA + 12])
        a = mi[a, MI_PARENT]
    for i in range(last, jt - 1, -1):
        aza_bias_joint(mi, i, ws, B1, B2, j)
    a = mi[jt, MI_PARENT]
    while a > 0:
        aza_bias_joint(mi, a, ws, B1, B2, j)
        a = mi[a, MI_PARENT]


@kernel
def aza_forward_sweep(mi, ws, C1, C2, j):
    """a_i = a_parent, qdd_i = D^-1 (u_i - U^T a_i), a_i += S qdd_i (zero gravity);
    column j of C1, C2 = -qdd."""
    n = mi[0, 0]
    zero12(ws[0, W_ZA:W_ZA + 12])
    for i in range(1, n + 1):
        lam = mi[i, MI_PARENT]
        iv = mi[i, MI_IV]
        nvi = mi[i, MI_NV]
        a0, a1, a2 = ws[lam, W_ZA], ws[lam, W_ZA + 1], ws[lam, W_ZA + 2]
        a3, a4, a5 = ws[lam, W_ZA + 3], ws[lam, W_ZA + 4], ws[lam, W_ZA + 5]
        b0, b1, b2 = ws[lam, W_ZA + 6], ws[lam, W_ZA + 7], ws[lam, W_ZA + 8]
        b3, b4, b5 = ws[lam, W_ZA + 9], ws[lam, W_ZA + 10], ws[lam, W_ZA + 11]
        for k in range(nvi):
            r = n + 1 + iv + k
            u0, u1, u2 = ws[r, D_U], ws[r, D_U + 1], ws[r, D_U + 2]
            u3, u4, u5 = ws[r, D_U + 3], ws[r, D_U + 4], ws[r, D_U + 5]
            ws[r, D_ZX] = ws[r, D_ZU] - (u0 * a0 + u1 * a1 + u2 * a2 + u3 * a3 + u4 * a4
                                         + u5 * a5)
            ws[r, D_ZX + 1] = ws[r, D_ZU + 1] - (u0 * b0 + u1 * b1 + u2 * b2 + u3 * b3
                                                 + u4 * b4 + u5 * b5)
        for k in range(nvi):
            r = n + 1 + iv + k
            if nvi == 1:
                d = ws[i, W_DINV]
                x1 = d * ws[r, D_ZX]
                x2 = d * ws[r, D_ZX + 1]
            else:
                x1 = 0.0 * ws[r, D_ZX]
                x2 = 0.0 * ws[r, D_ZX]
                for l in range(nvi):
                    d = ws[i, W_DINV + nvi * k + l]
                    x1 += d * ws[n + 1 + iv + l, D_ZX]
                    x2 += d * ws[n + 1 + iv + l, D_ZX + 1]
            C1[iv + k, j] = -x1
            C2[iv + k, j] = -x2
            s0, s1, s2 = ws[r, D_S], ws[r, D_S + 1], ws[r, D_S + 2]
            s3, s4, s5 = ws[r, D_S + 3], ws[r, D_S + 4], ws[r, D_S + 5]
            a0 += s0 * x1
            a1 += s1 * x1
            a2 += s2 * x1
            a3 += s3 * x1
            a4 += s4 * x1
            a5 += s5 * x1
            b0 += s0 * x2
            b1 += s1 * x2
            b2 += s2 * x2
            b3 += s3 * x2
            b4 += s4 * x2
            b5 += s5 * x2
        ws[i, W_ZA] = a0
        ws[i, W_ZA + 1] = a1
        ws[i, W_ZA + 2] = a2
        ws[i, W_ZA + 3] = a3
        ws[i, W_ZA + 4] = a4
        ws[i, W_ZA + 5] = a5
        ws[i, W_ZA + 6] = b0
        ws[i, W_ZA + 7] = b1
        ws[i, W_ZA + 8] = b2
        ws[i, W_ZA + 9] = b3
        ws[i, W_ZA + 10] = b4
        ws[i, W_ZA + 11] = b5


@kernel
def neg_minv_mul_aza(mi, ws, B1, B2, C1, C2):
    """C1 = -M^-1 B1 and C2 = -M^-1 B2 (each (nv, nv)) by AZA, for B1, B2 zero outside
    the branch pattern (only branch entries are read). ws must hold the articulated
    factorization (S, U, D^-1, U D^-1) that minverse or ABA's backward pass leaves."""
    for jt in range(1, mi[0, 0] + 1):
        iv = mi[jt, MI_IV]
        for j in range(iv, iv + mi[jt, MI_NV]):
            aza_backward_sweep(mi, ws, B1, B2, jt, j)
            aza_forward_sweep(mi, ws, C1, C2, j)


@helper
def mean_branch_ge(mi, length):
    """sum_j branch(j) >= length * nv: the dofs on dof j's branch (its joint's ancestors,
    the joint's own dofs and its strict descendants), summed over all dofs j."""
    n = mi[0, 0]
    total = 0
    for i in range(1, n + 1):
        depth = 0
        a = i
        while a > 0:
            depth += mi[a, MI_NV]
            a = mi[a, MI_PARENT]
        total += mi[i, MI_NV] * (depth + mi[i, MI_NVSUB] - mi[i, MI_NV])
    return total >= length * mi[0, 2]


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
    dqdd_dq = -M^-1 dtau_dq and dqdd_dv = -M^-1 dtau_dv column by column. Shapes as
    there: ws (workspace_rows, W_WIDTH), qdd (nv,), S3 (3, nv, nv), F (njoints+1, nv, 6)."""
    aba(mi, mf, q, v, tau, fext, ws, qdd)
    idsva_dynamics_pass(mi, mf, fext, ws)
    idsva_backward_pass(mi, ws, S3[0], S3[1], S3[2])
    minverse(mi, mf, q, ws, F, Minv)
    neg_minv_mul_aza(mi, ws, S3[0], S3[1], dqdd_dq, dqdd_dv)
