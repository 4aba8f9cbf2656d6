"""CPU entry points for second-order dynamics derivatives, once (``*_one``) or over a
batch on all cores (``*_batch``, ``prange``); the pattern of cpu_derivatives.py: check
inputs, allocate the workspaces, call the kernels. Outputs (four (nv, nv, nv) or
(B, nv, nv, nv) arrays) are allocated by the caller."""

import numpy as np
from numba import prange

from .cpu import BAD_Q, BAD_STATE, _configurations_ok, state_ok
from .kernels.checks import all_finite
from .kernels.idsva import IDSVA_WIDTH
from .kernels.idsva_so import SC_SIZE, idsva_so
from .kernels.jit import entry, pentry
from .kernels.workspace import workspace_rows


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
