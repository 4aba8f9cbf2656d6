"""Composite Rigid Body Algorithm, world frame (Featherstone Table 6.2): the joint-space
inertia matrix M(q), full and symmetric."""

from ..model.layout import MI_IV, MI_NV, MI_NVSUB, MI_PARENT
from .armature import armature_diagonal
from .fk import placement_pass, world_body_inertia
from .jit import helper, kernel
from .spatial import add13, inertia_mul
from .workspace import D_S, D_U, W_Y


@kernel
def body_inertias(mi, mf, ws):
    """Y_i = world-frame inertia of body i, for every joint (after placement_pass)."""
    for i in range(1, mi[0, 0] + 1):
        world_body_inertia(mf, i, ws)


@helper
def crba_joint_rows(mi, i, ws, M, nvi):
    """F_k = IC_i S_k for joint i's nvi dofs (kept in the dof rows' U), then its rows of
    the upper triangle and their mirror: M[k, c] = M[c, k] = S_k^T F_c for every dof c of
    its subtree (contiguous, their F already computed: M_kc = S_k^T IC_j(c) S_c,
    Featherstone eq. 6.22). Stored twice here rather than mirrored after: the mirror's
    pass reloaded every entry (~7% of solo12's crba)."""
    n = mi[0, 0]
    iv = mi[i, MI_IV]
    end = iv + mi[i, MI_NVSUB]
    for k in range(nvi):
        inertia_mul(ws[i, W_Y:W_Y + 13], ws[n + 1 + iv + k, D_S:D_S + 6],
                    ws[n + 1 + iv + k, D_U:D_U + 6])
    for k in range(nvi):
        r = n + 1 + iv + k
        s0, s1, s2 = ws[r, D_S], ws[r, D_S + 1], ws[r, D_S + 2]
        s3, s4, s5 = ws[r, D_S + 3], ws[r, D_S + 4], ws[r, D_S + 5]
        for c in range(iv + k, end):       # the joint's own block from its diagonal on
            rc = n + 1 + c
            m = (s0 * ws[rc, D_U] + s1 * ws[rc, D_U + 1] + s2 * ws[rc, D_U + 2]
                 + s3 * ws[rc, D_U + 3] + s4 * ws[rc, D_U + 4] + s5 * ws[rc, D_U + 5])
            M[iv + k, c] = m
            M[c, iv + k] = m


@kernel
def crba_backward_pass(mi, ws, M):
    """Leaves to root: joint i's rows of M (crba_joint_rows), then
    IC_parent += IC_i. Rows by subtree, as Pinocchio's world-convention CRBA, instead
    of walking each column's ancestors: contiguous loops, and 1-dof and 6-dof joints
    take compiled-in sizes (~13% faster on hyq and talos)."""
    for i in range(mi[0, 0], 0, -1):
        nvi = mi[i, MI_NV]
        if nvi == 1:
            crba_joint_rows(mi, i, ws, M, 1)
        elif nvi == 6:
            crba_joint_rows(mi, i, ws, M, 6)
        else:
            crba_joint_rows(mi, i, ws, M, nvi)
        lam = mi[i, MI_PARENT]
        if lam > 0:
            add13(ws[i, W_Y:W_Y + 13], ws[lam, W_Y:W_Y + 13])


@kernel
def mirror_upper(A):
    """Copy the upper triangle of A (n, n) into its lower triangle (M and M^-1)."""
    n = A.shape[0]
    for r in range(n):
        for c in range(r):
            A[r, c] = A[c, r]


@kernel
def crba(mi, mf, q, ws, M):
    """M (nv, nv) = joint-space inertia matrix at q (every entry written)."""
    M[:, :] = 0.0          # entries of unrelated joints stay zero
    placement_pass(mi, mf, q, ws)
    body_inertias(mi, mf, ws)
    crba_backward_pass(mi, ws, M)
    armature_diagonal(mi, mf, M)
