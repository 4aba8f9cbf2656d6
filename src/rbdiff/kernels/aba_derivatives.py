"""First-order derivatives of forward dynamics from those of inverse dynamics (FDSVA;
Carpentier & Mansard 2018 eq. 24; Singh et al. 2022 eq. 5):

    qdd = ABA(q, v, tau, fext)
    dqdd/dq = -M^-1 dtau/dq (q, v, qdd),  dqdd/dv = -M^-1 dtau/dv (q, v, qdd),
    dqdd/dtau = M^-1,

with the ID derivatives by IDSVA, M^-1 without forming M, and the products dense in
M^-1 but sparse in the ID derivatives (DMM): dtau_k / du_j vanishes unless joints k and
j lie on one branch (one is the other's ancestor or descendant).
"""

from ..model.layout import MI_IV, MI_NV, MI_NVSUB, MI_PARENT
from .aba import aba
from .armature import armature_bias_jacobian
from .idsva import idsva_backward_pass, idsva_dynamics_pass
from .jit import helper, kernel
from .minverse import minverse, minverse_factored
from .rows import add_rows_x2


@helper
def branch_axpy2(mi, jt, B1, B2, k, A, buf1, buf2):
    """buf1 = sum of B1[m, k] A[m, :], buf2 = sum of B2[m, k] A[m, :] over the dofs m on
    the branch of joint jt (k one of its dofs): its own dofs and its strict
    descendants', then its ancestors'; every inner loop runs along a row of A, shared by
    both. Adjacent dof ranges (a chain's parent just before its child) are merged, so
    the rows go four at a time (rows.add_rows_x2)."""
    nv = A.shape[1]
    for c in range(nv):
        buf1[c] = 0.0
        buf2[c] = 0.0
    lo = mi[jt, MI_IV]
    hi = lo + mi[jt, MI_NVSUB]
    j = mi[jt, MI_PARENT]
    while j > 0:
        jlo = mi[j, MI_IV]
        if jlo + mi[j, MI_NV] != lo:        # not adjacent: this range done
            add_rows_x2(buf1, buf2, A, 0, lo, hi, B1[:, k], B2[:, k], 1.0)
            hi = jlo + mi[j, MI_NV]
        lo = jlo
        j = mi[j, MI_PARENT]
    add_rows_x2(buf1, buf2, A, 0, lo, hi, B1[:, k], B2[:, k], 1.0)


@helper
def neg_minv_mul_column(mi, Minv, B1, B2, C1, C2, jt, j, buf1, buf2):
    """Column j (a dof of joint jt) of C1 = -Minv B1 and C2 = -Minv B2:
    -sum_k B[k, j] Minv[k, :] over the dofs k on joint jt's branch, ancestors (its own
    dofs included) then descendants, so every inner loop is a contiguous row of Minv.
    Columns are independent: the GPU spreads them over a block's threads (Plancher
    2021 sec. IV-B). buf1, buf2: (nv,) scratch."""
    branch_axpy2(mi, jt, B1, B2, j, Minv, buf1, buf2)
    nv = Minv.shape[0]
    for c in range(nv):
        C1[c, j] = -buf1[c]
        C2[c, j] = -buf2[c]


@kernel
def neg_minv_mul_tree(mi, Minv, B1, B2, C1, C2, buf1, buf2):
    """C1 = -Minv B1, C2 = -Minv B2 for symmetric Minv (nv, nv) and B1, B2 (nv, nv)
    zero outside the branch pattern, column by column (neg_minv_mul_column).
    buf1, buf2: (nv,) scratch."""
    for jt in range(1, mi[0, 0] + 1):
        iv = mi[jt, MI_IV]
        for j in range(iv, iv + mi[jt, MI_NV]):
            neg_minv_mul_column(mi, Minv, B1, B2, C1, C2, jt, j, buf1, buf2)


@kernel
def id_derivatives_at_fd(mi, mf, q, v, tau, fext, ws, qdd, dtau_dq, dtau_dv, M):
    """Alg. 3 lines 1-2 (Plancher 2021): qdd = ABA(q, v, tau, fext), then the ID
    derivatives dtau_dq, dtau_dv (and M) by IDSVA at (q, v, qdd). ABA leaves world
    placements, S, v, S qd and a (with qdd) in ws: IDSVA reuses them. No zeroing:
    the backward pass writes every entry of the branch pattern, and
    neg_minv_mul_tree reads no other."""
    aba(mi, mf, q, v, tau, fext, ws, qdd)
    idsva_dynamics_pass(mi, mf, fext, ws)
    idsva_backward_pass(mi, ws, dtau_dq, dtau_dv, M)
    armature_bias_jacobian(mi, mf, v, dtau_dv)


@kernel
def neg_minv_times(mi, mf, q, ws, F, dtau_dq, dtau_dv, dqdd_dq, dqdd_dv, Minv, buf1,
                   buf2):
    """Alg. 3 line 3 (Carpentier & Mansard 2018 eq. 24): Minv = M(q)^-1 without M, then
    dqdd_dq = -Minv dtau_dq and dqdd_dv = -Minv dtau_dv (dtau_* zero or unread outside
    the branch pattern). ws: (workspace_rows, W_WIDTH), F: (njoints, nv, 6),
    buf1, buf2: (nv,) scratch."""
    minverse(mi, mf, q, ws, F, Minv)
    neg_minv_mul_tree(mi, Minv, dtau_dq, dtau_dv, dqdd_dq, dqdd_dv, buf1, buf2)


@kernel
def aba_derivatives(mi, mf, q, v, tau, fext, ws, qdd, S3, F, dqdd_dq, dqdd_dv, Minv):
    """dqdd_dq, dqdd_dv and Minv = dqdd_dtau (each (nv, nv)) at (q, v, tau, fext): Alg. 3
    with M^-1 taken from ABA's own factorisation (minverse_factored) before IDSVA
    overwrites it, so the bodies are placed and factorised once.
    ws: (workspace_rows, W_WIDTH); qdd: (nv,) out; S3: (3, nv, nv) scratch (dtau_dq,
    dtau_dv, then M and the product's row buffers); F: (njoints, nv, 6) scratch."""
    aba(mi, mf, q, v, tau, fext, ws, qdd)
    derivatives_after_aba(mi, mf, v, fext, ws, S3, F, dqdd_dq, dqdd_dv, Minv)


@kernel
def derivatives_after_aba(mi, mf, v, fext, ws, S3, F, dqdd_dq, dqdd_dv, Minv):
    """aba_derivatives once ABA has run on ws (its factorisation, and world placements,
    S, v, S qd and a with qdd, as IDSVA needs): M^-1, IDSVA at qdd, the products."""
    minverse_factored(mi, ws, F, Minv)
    idsva_dynamics_pass(mi, mf, fext, ws)
    idsva_backward_pass(mi, ws, S3[0], S3[1], S3[2])
    armature_bias_jacobian(mi, mf, v, S3[1])
    neg_minv_mul_tree(mi, Minv, S3[0], S3[1], dqdd_dq, dqdd_dv, S3[2, 0], S3[2, 1])
