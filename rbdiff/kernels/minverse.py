"""M(q)^-1 without forming M (Carpentier & Mansard 2018, sec. IV-C; Pinocchio's
computeMinverse): ABA's articulated-inertia backward pass with the unit-torque responses
of all joints propagated at once, then a forward pass; upper triangle, mirrored."""

from ..model.layout import MI_IV, MI_NV, MI_NVSUB, MI_PARENT
from .aba import articulated_joint
from .crba import body_inertias
from .fk import placement_pass
from .jit import kernel
from .spatial import inertia_dense
from .workspace import D_S, D_U, D_UDINV, W_DINV, W_IA, W_Y


@kernel
def minverse_backward_pass(mi, ws, F, Minv):
    """Minv[i, i] = Dinv_i; Minv[i, subtree] = -Dinv_i S_i^T Fcrb[:, subtree];
    Fcrb[:, i..subtree] += U_i Minv[i, i..subtree] (Fcrb = F[0], world frame)."""
    n = mi[0, 0]
    for i in range(n, 0, -1):
        iv = mi[i, MI_IV]
        nvi = mi[i, MI_NV]
        end = iv + mi[i, MI_NVSUB]
        articulated_joint(mi, i, ws)
        for k in range(nvi):
            for l in range(nvi):
                Minv[iv + k, iv + l] = ws[i, W_DINV + nvi * k + l]
        for col in range(iv + nvi, end):
            for l in range(nvi):
                x = 0.0 * Minv[0, 0]
                for r in range(6):
                    x += ws[n + 1 + iv + l, D_S + r] * F[0, r, col]
                for k in range(nvi):
                    Minv[iv + k, col] -= ws[i, W_DINV + nvi * k + l] * x
        if mi[i, MI_PARENT] > 0:
            for col in range(iv, end):
                for r in range(6):
                    x = 0.0 * Minv[0, 0]
                    for k in range(nvi):
                        x += ws[n + 1 + iv + k, D_U + r] * Minv[iv + k, col]
                    F[0, r, col] += x
            lam = mi[i, MI_PARENT]
            for r in range(36):
                ws[lam, W_IA + r] += ws[i, W_IA + r]


@kernel
def minverse_forward_pass(mi, ws, F, Minv):
    """Minv[i, i:] -= (U Dinv)_i^T F_parent[:, i:]; F_i[:, i:] = S_i Minv[i, i:] + F_parent."""
    n = mi[0, 0]
    nv = mi[0, 2]
    for i in range(1, n + 1):
        lam = mi[i, MI_PARENT]
        iv = mi[i, MI_IV]
        nvi = mi[i, MI_NV]
        if lam > 0:
            for k in range(nvi):
                for col in range(iv, nv):
                    x = 0.0 * Minv[0, 0]
                    for r in range(6):
                        x += ws[n + 1 + iv + k, D_UDINV + r] * F[lam, r, col]
                    Minv[iv + k, col] -= x
        for col in range(iv, nv):
            for r in range(6):
                x = F[lam, r, col] if lam > 0 else 0.0 * Minv[0, 0]
                for k in range(nvi):
                    x += ws[n + 1 + iv + k, D_S + r] * Minv[iv + k, col]
                F[i, r, col] = x


@kernel
def minverse(mi, mf, q, ws, F, Minv):
    """Minv (nv, nv) = M(q)^-1; F: (njoints+1, 6, nv) scratch, Minv must start at zero."""
    placement_pass(mi, mf, q, ws)
    body_inertias(mi, mf, ws)
    n = mi[0, 0]
    for i in range(1, n + 1):
        inertia_dense(ws[i, W_Y:W_Y + 13], ws[i, W_IA:W_IA + 36])
    for r in range(6):
        for col in range(mi[0, 2]):
            F[0, r, col] = 0.0
    minverse_backward_pass(mi, ws, F, Minv)
    minverse_forward_pass(mi, ws, F, Minv)
    nv = mi[0, 2]
    for r in range(nv):
        for c in range(r):
            Minv[r, c] = Minv[c, r]
