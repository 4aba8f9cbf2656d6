"""CPU entry points: compiled drivers that check inputs and call the kernels, once
(``*_one``, on the caller's scratch: kernels.workspace.single_call_scratch) or over a batch
on all cores (``*_batch``, ``prange``, allocating a workspace per item).
Outputs are allocated by the caller (api.py): returning a Numba-allocated array to Python
costs ~0.7 us, three times a NumPy allocation. No algorithm math lives here."""

import numpy as np
from numba import prange

from .kernels.aba import aba
from .kernels.checks import all_finite, configuration_ok
from .kernels.crba import crba
from .kernels.fk import kinematics_pass
from .kernels.jit import entry, fast_entry, helper, pentry
from .kernels.minverse import minverse
from .kernels.rnea import rnea
from .kernels.workspace import W_WIDTH, workspace_rows

BAD_Q = "q: not finite, or a quaternion / (cos, sin) pair is not unit"
BAD_STATE = "v, a/tau or fext: not finite"
BAD_SHAPE = "q, v or a/tau: wrong length"


@helper
def state_ok(mi, q, v, a, fext):
    """Lengths right, q a valid configuration, v, a (or tau) and fext finite."""
    if q.shape[0] != mi[0, 1] or v.shape[0] != mi[0, 2] or a.shape[0] != mi[0, 2]:
        raise ValueError(BAD_SHAPE)
    if not configuration_ok(mi, q):
        raise ValueError(BAD_Q)
    if not (all_finite(v) and all_finite(a)):
        raise ValueError(BAD_STATE)
    if fext is not None:
        if not all_finite(fext):
            raise ValueError(BAD_STATE)


@entry
def _configurations_ok(mi, q):
    for b in range(q.shape[0]):
        if not configuration_ok(mi, q[b]):
            return False
    return True


@helper
def workspace_ok(mi, ws):
    """ws has the rows and columns the kernels index (the fast entries trust their caller
    for everything else about it)."""
    if ws.shape[0] < workspace_rows(mi) or ws.shape[1] < W_WIDTH:
        raise ValueError("ws: too small")


@fast_entry
def rnea_one(mi, mf, q, v, a, fext, ws, tau):
    """tau = RNEA; ws: (workspace_rows, W_WIDTH) scratch of q's dtype (as every *_one)."""
    state_ok(mi, q, v, a, fext)
    workspace_ok(mi, ws)
    rnea(mi, mf, q, v, a, fext, ws, tau)


@pentry
def rnea_batch(mi, mf, q, v, a, fext, tau):
    if not _configurations_ok(mi, q):
        raise ValueError(BAD_Q)
    if not (all_finite(v.ravel()) and all_finite(a.ravel()) and all_finite(fext.ravel())):
        raise ValueError(BAD_STATE)
    for b in prange(q.shape[0]):
        ws = np.empty((workspace_rows(mi), W_WIDTH), q.dtype)
        rnea(mi, mf, q[b], v[b], a[b], fext[b], ws, tau[b])


@helper
def configuration_checked(mi, q, ws):
    """Length of q right, q a valid configuration, ws large enough."""
    if q.shape[0] != mi[0, 1]:
        raise ValueError(BAD_SHAPE)
    if not configuration_ok(mi, q):
        raise ValueError(BAD_Q)
    workspace_ok(mi, ws)


@fast_entry
def crba_one(mi, mf, q, ws, M):
    configuration_checked(mi, q, ws)
    crba(mi, mf, q, ws, M)


@pentry
def crba_batch(mi, mf, q, M):
    if not _configurations_ok(mi, q):
        raise ValueError(BAD_Q)
    for b in prange(q.shape[0]):
        ws = np.empty((workspace_rows(mi), W_WIDTH), q.dtype)
        crba(mi, mf, q[b], ws, M[b])


@fast_entry
def aba_one(mi, mf, q, v, tau, fext, ws, qdd):
    state_ok(mi, q, v, tau, fext)
    workspace_ok(mi, ws)
    aba(mi, mf, q, v, tau, fext, ws, qdd)


@pentry
def aba_batch(mi, mf, q, v, tau, fext, qdd):
    if not _configurations_ok(mi, q):
        raise ValueError(BAD_Q)
    if not (all_finite(v.ravel()) and all_finite(tau.ravel()) and all_finite(fext.ravel())):
        raise ValueError(BAD_STATE)
    for b in prange(q.shape[0]):
        ws = np.empty((workspace_rows(mi), W_WIDTH), q.dtype)
        aba(mi, mf, q[b], v[b], tau[b], fext[b], ws, qdd[b])


@fast_entry
def minverse_one(mi, mf, q, ws, F, Minv):
    """Minv; F: (njoints+1, nv, 6) scratch of q's dtype."""
    configuration_checked(mi, q, ws)
    if F.shape[0] < mi[0, 0] + 1 or F.shape[1] < mi[0, 2]:
        raise ValueError("F: too small")
    minverse(mi, mf, q, ws, F, Minv)


@pentry
def minverse_batch(mi, mf, q, Minv):
    if not _configurations_ok(mi, q):
        raise ValueError(BAD_Q)
    for b in prange(q.shape[0]):
        ws = np.empty((workspace_rows(mi), W_WIDTH), q.dtype)
        F = np.empty((mi[0, 0] + 1, mi[0, 2], 6), q.dtype)
        minverse(mi, mf, q[b], ws, F, Minv[b])


@entry
def kinematics_one(mi, mf, q, v, a, ws):
    """Fill ws (workspace_rows x W_WIDTH) with world placements, S, v and a (with -g)."""
    if not configuration_ok(mi, q):
        raise ValueError(BAD_Q)
    if not (all_finite(v) and all_finite(a)):
        raise ValueError(BAD_STATE)
    kinematics_pass(mi, mf, q, v, a, ws)


@pentry
def kinematics_batch(mi, mf, q, v, a, ws):
    """kinematics_one over a batch: ws (B, workspace_rows, W_WIDTH), one slab per item."""
    if not _configurations_ok(mi, q):
        raise ValueError(BAD_Q)
    if not (all_finite(v.ravel()) and all_finite(a.ravel())):
        raise ValueError(BAD_STATE)
    for b in prange(q.shape[0]):
        kinematics_pass(mi, mf, q[b], v[b], a[b], ws[b])
