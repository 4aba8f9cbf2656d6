"""Composite Rigid Body Algorithm, world frame (Featherstone Table 6.2): the joint-space
inertia matrix M(q), full and symmetric."""

from ..model.layout import MI_IV, MI_NV, MI_PARENT
from .fk import placement_pass, world_body_inertia
from .jit import kernel
from .spatial import add13, dot6, inertia_mul
from .workspace import D_S, D_U, W_Y


@kernel
def body_inertias(mi, mf, ws):
    """Y_i = world-frame inertia of body i, for every joint (after placement_pass)."""
    for i in range(1, mi[0, 0] + 1):
        world_body_inertia(mf, i, ws)


@kernel
def crba_backward_pass(mi, ws, M):
    """F = IC_i S_i; M[j, i] = S_j^T F for i and its ancestors j; IC_parent += IC_i."""
    n = mi[0, 0]
    for i in range(n, 0, -1):
        iv = mi[i, MI_IV]
        for k in range(mi[i, MI_NV]):
            F = ws[n + 1 + iv + k, D_U:D_U + 6]
            inertia_mul(ws[i, W_Y:W_Y + 13], ws[n + 1 + iv + k, D_S:D_S + 6], F)
            j = i
            while j > 0:
                jv = mi[j, MI_IV]
                for l in range(mi[j, MI_NV]):
                    x = dot6(ws[n + 1 + jv + l, D_S:D_S + 6], F)
                    M[jv + l, iv + k] = x
                    M[iv + k, jv + l] = x
                j = mi[j, MI_PARENT]
        lam = mi[i, MI_PARENT]
        if lam > 0:
            add13(ws[i, W_Y:W_Y + 13], ws[lam, W_Y:W_Y + 13])


@kernel
def crba(mi, mf, q, ws, M):
    """M (nv, nv) = joint-space inertia matrix at q (every entry written)."""
    M[:, :] = 0.0
    placement_pass(mi, mf, q, ws)
    body_inertias(mi, mf, ws)
    crba_backward_pass(mi, ws, M)
