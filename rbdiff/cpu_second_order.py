"""CPU entry points for second-order dynamics derivatives, once (``*_one``) or over a
batch on all cores (``*_batch``, ``prange``); the pattern of cpu_derivatives.py: check
inputs, allocate the workspaces, call the kernels. Outputs (four (nv, nv, nv) or
(B, nv, nv, nv) arrays) are allocated by the caller."""

import numpy as np
from numba import prange

from .cpu import BAD_Q, BAD_STATE, _configurations_ok, state_ok
from .kernels.checks import all_finite
from .kernels.fdsva_so import fdsva_so_routes
from .kernels.idsva import IDSVA_WIDTH
from .kernels.idsva_so import SC_SIZE, idsva_so
from .kernels.jit import entry, pentry
from .kernels.workspace import W_WIDTH, workspace_rows


@entry
def rnea_second_order_one(mi, mf, q, v, a, fext, Q, V, X, D):
    state_ok(mi, q, v, a, fext)
    ws = np.empty((workspace_rows(mi), IDSVA_WIDTH), q.dtype)
    sc = np.empty(SC_SIZE, q.dtype)
    idsva_so(mi, mf, q, v, a, fext, ws, sc, Q, V, X, D)


@pentry
def rnea_second_order_batch(mi, mf, q, v, a, fext, Q, V, X, D):
    if not _configurations_ok(mi, q):
        raise ValueError(BAD_Q)
    if not (all_finite(v.ravel()) and all_finite(a.ravel()) and all_finite(fext.ravel())):
        raise ValueError(BAD_STATE)
    for b in prange(q.shape[0]):
        ws = np.empty((workspace_rows(mi), IDSVA_WIDTH), q.dtype)
        sc = np.empty(SC_SIZE, q.dtype)
        idsva_so(mi, mf, q[b], v[b], a[b], fext[b], ws, sc, Q[b], V[b], X[b], D[b])


@entry
def aba_second_order_one(mi, mf, q, v, tau, fext, dQ, dV, dX, dT, inner, outer):
    """FDSVA-SO with the routes inner (fdsva_so.AUTO, DTM, IDFOZA) and outer (AUTO,
    DENSE, AZA)."""
    state_ok(mi, q, v, tau, fext)
    nv = mi[0, 2]
    ws = np.empty((workspace_rows(mi), W_WIDTH), q.dtype)
    sc = np.empty(SC_SIZE, q.dtype)
    qdd = np.empty(nv, q.dtype)
    lam = np.empty(nv, np.int64)
    Mt = np.empty((7, nv, nv), q.dtype)
    F = np.empty((mi[0, 0] + 1, nv, 6), q.dtype)
    T = np.empty((5, nv, nv, nv), q.dtype)
    fdsva_so_routes(mi, mf, q, v, tau, fext, ws, sc, qdd, lam, Mt, F, T, dQ, dV, dX, dT,
                    inner, outer)


@pentry
def aba_second_order_batch(mi, mf, q, v, tau, fext, dQ, dV, dX, dT, inner, outer):
    if not _configurations_ok(mi, q):
        raise ValueError(BAD_Q)
    if not (all_finite(v.ravel()) and all_finite(tau.ravel()) and all_finite(fext.ravel())):
        raise ValueError(BAD_STATE)
    nv = mi[0, 2]
    for b in prange(q.shape[0]):
        ws = np.empty((workspace_rows(mi), W_WIDTH), q.dtype)
        sc = np.empty(SC_SIZE, q.dtype)
        qdd = np.empty(nv, q.dtype)
        lam = np.empty(nv, np.int64)
        Mt = np.empty((7, nv, nv), q.dtype)
        F = np.empty((mi[0, 0] + 1, nv, 6), q.dtype)
        T = np.empty((5, nv, nv, nv), q.dtype)
        fdsva_so_routes(mi, mf, q[b], v[b], tau[b], fext[b], ws, sc, qdd, lam, Mt, F, T,
                        dQ[b], dV[b], dX[b], dT[b], inner, outer)
