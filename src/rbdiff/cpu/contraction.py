"""Entry points of the second-order derivatives contracted with a costate
(kernels/contraction.py). No math.

``*_one(mi, mf, q, v, u, lam, fext, *outputs)`` checks one state and allocates its own
scratch (as the second-order entries in cpu/single.py: the ABA route needs several
(nv, nv) blocks beside the workspace); ``*_batch(mi, mf, q, v, u, lam, fext, *outputs,
check)`` runs the items in order on one set of scratch, checking every item first when
``check``; ``*_parallel(..., *outputs, nchunks)`` checks, then runs one unchecked
``*_batch`` per chunk in a prange (bit-equal to the serial one). u is a (RNEA) or tau
(ABA); the four outputs are (nv, nv) each, (B, nv, nv) in a batch."""

import numpy as np
from numba import prange

from ..kernels.checks import all_finite, vector_finite
from ..kernels.contraction import (CONTRACTION_WIDTH, SC_SIZE, aba_contraction,
                                   rnea_contraction)
from ..kernels.jit import entry, helper, pentry
from ..kernels.workspace import W_WIDTH, workspace_rows
from .batch import chunk
from .twin import twin
from .checks import (BAD_SHAPE, BAD_STATE, batch_states_ok, dynamics_finite, rows_finite,
                     singular_found, state_ok)


@helper
def costate_ok(mi, lam):
    """lam (nv,) finite."""
    if lam.shape[0] != mi[0, 2]:
        raise ValueError(BAD_SHAPE)
    if not all_finite(lam):
        raise ValueError(BAD_STATE)


@helper
def batch_costates_ok(mi, q, lam):
    """lam (B, nv) finite, B the batch of q."""
    if lam.shape[0] != q.shape[0] or lam.shape[1] != mi[0, 2]:
        raise ValueError(BAD_SHAPE)
    if not rows_finite(lam):
        raise ValueError(BAD_STATE)


# ---- inverse dynamics ---------------------------------------------------------------------


@entry
def rnea_contraction_one(mi, mf, q, v, a, lam, fext, HQ, HV, HX, HD):
    state_ok(mi, q, v, a, fext)
    costate_ok(mi, lam)
    ws = np.empty((workspace_rows(mi), CONTRACTION_WIDTH), q.dtype)
    sc = np.empty(SC_SIZE, q.dtype)
    rnea_contraction(mi, mf, q, v, a, lam, fext, ws, sc, HQ, HV, HX, HD)


@entry
def rnea_contraction_batch(mi, mf, q, v, a, lam, fext, HQ, HV, HX, HD, check):
    if check:
        batch_states_ok(mi, q, v, a, fext)
        batch_costates_ok(mi, q, lam)
    ws = np.empty((workspace_rows(mi), CONTRACTION_WIDTH), q.dtype)
    sc = np.empty(SC_SIZE, q.dtype)
    for b in range(q.shape[0]):
        rnea_contraction(mi, mf, q[b], v[b], a[b], lam[b], fext[b], ws, sc, HQ[b], HV[b],
                         HX[b], HD[b])


@pentry
def rnea_contraction_parallel(mi, mf, q, v, a, lam, fext, HQ, HV, HX, HD, nchunks):
    batch_states_ok(mi, q, v, a, fext)
    batch_costates_ok(mi, q, lam)
    for c in prange(nchunks):
        lo, hi = chunk(q.shape[0], nchunks, c)
        twin(rnea_contraction_batch, (mi, mf, q[lo:hi], v[lo:hi], a[lo:hi], lam[lo:hi],
                                      fext[lo:hi], HQ[lo:hi], HV[lo:hi], HX[lo:hi], HD[lo:hi],
                                      False))


# ---- forward dynamics ---------------------------------------------------------------------


@entry
def aba_contraction_one(mi, mf, q, v, tau, lam, fext, dQ, dV, dX, dT):
    state_ok(mi, q, v, tau, fext)
    costate_ok(mi, lam)
    nv = mi[0, 2]
    ws = np.empty((workspace_rows(mi), W_WIDTH), q.dtype)
    sc = np.empty(SC_SIZE, q.dtype)
    qdd = np.empty(nv, q.dtype)
    mu = np.empty(nv, q.dtype)
    G = np.empty((3, nv), q.dtype)
    Mt = np.empty((5, nv, nv), q.dtype)
    F = np.empty((mi[0, 0] + 1, nv, 6), q.dtype)
    aba_contraction(mi, mf, q, v, tau, lam, fext, ws, sc, qdd, mu, G, Mt, F, dQ, dV, dX,
                    dT)
    dynamics_finite(qdd)


@entry
def aba_contraction_batch(mi, mf, q, v, tau, lam, fext, dQ, dV, dX, dT, check):
    if check:
        batch_states_ok(mi, q, v, tau, fext)
        batch_costates_ok(mi, q, lam)
    nv = mi[0, 2]
    ws = np.empty((workspace_rows(mi), W_WIDTH), q.dtype)
    sc = np.empty(SC_SIZE, q.dtype)
    qdd = np.empty(nv, q.dtype)
    mu = np.empty(nv, q.dtype)
    G = np.empty((3, nv), q.dtype)
    Mt = np.empty((5, nv, nv), q.dtype)
    F = np.empty((mi[0, 0] + 1, nv, 6), q.dtype)
    bad = -1
    for b in range(q.shape[0]):
        aba_contraction(mi, mf, q[b], v[b], tau[b], lam[b], fext[b], ws, sc, qdd, mu, G,
                        Mt, F, dQ[b], dV[b], dX[b], dT[b])
        if bad < 0 and not vector_finite(qdd):
            bad = b
    return singular_found(bad, check)


@pentry
def aba_contraction_parallel(mi, mf, q, v, tau, lam, fext, dQ, dV, dX, dT, nchunks):
    batch_states_ok(mi, q, v, tau, fext)
    batch_costates_ok(mi, q, lam)
    bad = np.full(nchunks, -1, np.int64)
    for c in prange(nchunks):
        lo, hi = chunk(q.shape[0], nchunks, c)
        bad[c] = twin(aba_contraction_batch, (mi, mf, q[lo:hi], v[lo:hi], tau[lo:hi],
                                              lam[lo:hi], fext[lo:hi], dQ[lo:hi], dV[lo:hi],
                                              dX[lo:hi], dT[lo:hi], False))
    singular_found(bad.max(), True)
