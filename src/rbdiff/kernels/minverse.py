"""M(q)^-1 without forming M (Carpentier & Mansard 2018, sec. IV-C; Pinocchio's
computeMinverse): ABA's articulated-inertia backward pass with the unit-torque responses
of all joints propagated at once, then a forward pass; upper triangle, mirrored."""

from ..model.layout import MI_IV, MI_NV, MI_NVSUB, MI_PARENT
from .aba import articulated_joint
from .crba import body_inertias, mirror_upper
from .fk import placement_pass
from .jit import helper, kernel
from .spatial import add36, inertia_dense
from .workspace import D_S, D_T, D_U, D_UDINV, W_DINV, W_IA, W_Y


@helper
def minverse_backward_block(mi, i, ws, F, Minv, nvi):
    """minverse_backward_joint for a joint of nvi dofs (a literal nvi unrolls the loops)."""
    n = mi[0, 0]
    iv = mi[i, MI_IV]
    end = iv + mi[i, MI_NVSUB]
    for k in range(nvi):
        for l in range(nvi):
            Minv[iv + k, iv + l] = ws[i, W_DINV + nvi * k + l]
    for k in range(nvi):        # (S Dinv)_k into the dof rows' T: then 6 products a column
        for d in range(6):
            x = 0.0 * Minv[0, 0]
            for l in range(nvi):
                x += ws[n + 1 + iv + l, D_S + d] * ws[i, W_DINV + nvi * l + k]
            ws[n + 1 + iv + k, D_T + d] = x
    for k in range(nvi):
        r = n + 1 + iv + k
        s0, s1, s2 = ws[r, D_T], ws[r, D_T + 1], ws[r, D_T + 2]
        s3, s4, s5 = ws[r, D_T + 3], ws[r, D_T + 4], ws[r, D_T + 5]
        for col in range(iv + nvi, end):
            Minv[iv + k, col] = -(s0 * F[0, col, 0] + s1 * F[0, col, 1] + s2 * F[0, col, 2]
                                  + s3 * F[0, col, 3] + s4 * F[0, col, 4]
                                  + s5 * F[0, col, 5])
    if mi[i, MI_PARENT] > 0:
        for k in range(nvi):
            r = n + 1 + iv + k
            u0, u1, u2 = ws[r, D_U], ws[r, D_U + 1], ws[r, D_U + 2]
            u3, u4, u5 = ws[r, D_U + 3], ws[r, D_U + 4], ws[r, D_U + 5]
            for col in range(iv, end):
                m = Minv[iv + k, col]
                F[0, col, 0] += u0 * m
                F[0, col, 1] += u1 * m
                F[0, col, 2] += u2 * m
                F[0, col, 3] += u3 * m
                F[0, col, 4] += u4 * m
                F[0, col, 5] += u5 * m


@helper
def minverse_backward_joint(mi, i, ws, F, Minv):
    """Joint i's step of the backward pass, given its factorisation (U, Dinv in ws):
    Minv[i, i] = Dinv_i; Minv[i, subtree] = -(S_i Dinv_i)^T Fcrb[subtree];
    Fcrb[i..subtree] += U_i Minv[i, i..subtree] (Fcrb = F[0], one world force per column).
    1-dof and 6-dof joints take compiled-in sizes (a 25% faster M^-1 on talos)."""
    nvi = mi[i, MI_NV]
    if nvi == 1:
        minverse_backward_block(mi, i, ws, F, Minv, 1)
    elif nvi == 6:
        minverse_backward_block(mi, i, ws, F, Minv, 6)
    else:
        minverse_backward_block(mi, i, ws, F, Minv, nvi)


@kernel
def minverse_backward_pass(mi, mf, ws, F, Minv):
    """Factorise each joint (articulated_joint: U, D^-1, and IA passed to the parent),
    then its step of the unit-torque backward pass (minverse_backward_joint)."""
    for i in range(mi[0, 0], 0, -1):
        articulated_joint(mi, mf, i, ws)
        minverse_backward_joint(mi, i, ws, F, Minv)
        lam = mi[i, MI_PARENT]
        if lam > 0:
            add36(ws[i, W_IA:W_IA + 36], ws[lam, W_IA:W_IA + 36])


@helper
def minverse_forward_block(mi, i, ws, F, Minv, nvi):
    """Joint i's step of the forward pass, for a joint of nvi dofs."""
    n = mi[0, 0]
    nv = mi[0, 2]
    lam = mi[i, MI_PARENT]
    iv = mi[i, MI_IV]
    if lam > 0:
        for k in range(nvi):
            r = n + 1 + iv + k
            u0, u1, u2 = ws[r, D_UDINV], ws[r, D_UDINV + 1], ws[r, D_UDINV + 2]
            u3, u4, u5 = ws[r, D_UDINV + 3], ws[r, D_UDINV + 4], ws[r, D_UDINV + 5]
            for col in range(iv, nv):
                Minv[iv + k, col] -= (u0 * F[lam, col, 0] + u1 * F[lam, col, 1]
                                      + u2 * F[lam, col, 2] + u3 * F[lam, col, 3]
                                      + u4 * F[lam, col, 4] + u5 * F[lam, col, 5])
    if mi[i, MI_NVSUB] == nvi:
        return              # a leaf: no child reads F_i
    for col in range(iv + nvi, nv):     # children read only columns past joint i's
        if lam > 0:
            x0, x1, x2 = F[lam, col, 0], F[lam, col, 1], F[lam, col, 2]
            x3, x4, x5 = F[lam, col, 3], F[lam, col, 4], F[lam, col, 5]
        else:
            x0 = x1 = x2 = x3 = x4 = x5 = 0.0 * Minv[0, 0]
        for k in range(nvi):
            r = n + 1 + iv + k
            m = Minv[iv + k, col]
            x0 += m * ws[r, D_S]
            x1 += m * ws[r, D_S + 1]
            x2 += m * ws[r, D_S + 2]
            x3 += m * ws[r, D_S + 3]
            x4 += m * ws[r, D_S + 4]
            x5 += m * ws[r, D_S + 5]
        F[i, col, 0] = x0
        F[i, col, 1] = x1
        F[i, col, 2] = x2
        F[i, col, 3] = x3
        F[i, col, 4] = x4
        F[i, col, 5] = x5


@kernel
def minverse_forward_pass(mi, ws, F, Minv):
    """Minv[i, i:] -= (U Dinv)_i^T F_parent[i:]; F_i[i:] = S_i Minv[i, i:] + F_parent[i:]
    (F_i only where a child will read it). Scalar loads, no views: this pass is
    O(N nv) and views in its inner loops cost more than the arithmetic."""
    for i in range(1, mi[0, 0] + 1):
        nvi = mi[i, MI_NV]
        if nvi == 1:
            minverse_forward_block(mi, i, ws, F, Minv, 1)
        elif nvi == 6:
            minverse_forward_block(mi, i, ws, F, Minv, 6)
        else:
            minverse_forward_block(mi, i, ws, F, Minv, nvi)


@kernel
def minverse(mi, mf, q, ws, F, Minv):
    """Minv (nv, nv) = M(q)^-1; F: (njoints, nv, 6) scratch."""
    placement_pass(mi, mf, q, ws)
    body_inertias(mi, mf, ws)
    n = mi[0, 0]
    for i in range(1, n + 1):
        inertia_dense(ws[i, W_Y:W_Y + 13], ws[i, W_IA:W_IA + 36])
    F[0, :, :] = 0.0
    Minv[:, :] = 0.0      # entries outside a joint's subtree are only ever updated
    minverse_backward_pass(mi, mf, ws, F, Minv)
    minverse_forward_pass(mi, ws, F, Minv)
    mirror_upper(Minv)


@kernel
def minverse_factored(mi, ws, F, Minv):
    """Minv (nv, nv) from the articulated-body factorisation that ABA's backward pass
    leaves in ws (world S, U, D^-1 and U D^-1 of every joint): the same two passes as
    minverse without placing the bodies or factorising again. F: (njoints, nv, 6)."""
    F[0, :, :] = 0.0
    Minv[:, :] = 0.0
    for i in range(mi[0, 0], 0, -1):
        minverse_backward_joint(mi, i, ws, F, Minv)
    minverse_forward_pass(mi, ws, F, Minv)
    mirror_upper(Minv)
