"""CPU entry points: compiled drivers that check inputs, allocate the workspace and the
outputs, and call the kernels, once (``*_one``) or over a batch on all cores
(``*_batch``, ``prange``). No algorithm math lives here."""

import numpy as np
from numba import prange

from .kernels.checks import all_finite, configuration_ok
from .kernels.jit import entry, pentry
from .kernels.aba import aba
from .kernels.crba import crba
from .kernels.fk import kinematics_pass
from .kernels.minverse import minverse
from .kernels.rnea import rnea
from .kernels.workspace import W_WIDTH, workspace_rows

BAD_Q = "q: not finite, or a quaternion / (cos, sin) pair is not unit"


@entry
def rnea_one(mi, mf, q, v, a, fext):
    if not configuration_ok(mi, q):
        raise ValueError(BAD_Q)
    if not (all_finite(v) and all_finite(a) and all_finite(fext)):
        raise ValueError("v, a, fext: not finite")
    ws = np.empty((workspace_rows(mi), W_WIDTH), q.dtype)
    tau = np.empty(mi[0, 2], q.dtype)
    rnea(mi, mf, q, v, a, fext, ws, tau)
    return tau


@pentry
def rnea_batch(mi, mf, q, v, a, fext):
    B = q.shape[0]
    for b in range(B):
        if not configuration_ok(mi, q[b]):
            raise ValueError(BAD_Q)
    if not (all_finite(v) and all_finite(a) and all_finite(fext)):
        raise ValueError("v, a, fext: not finite")
    tau = np.empty((B, mi[0, 2]), q.dtype)
    for b in prange(B):
        ws = np.empty((workspace_rows(mi), W_WIDTH), q.dtype)
        rnea(mi, mf, q[b], v[b], a[b], fext[min(b, fext.shape[0] - 1)], ws, tau[b])
    return tau


@entry
def crba_one(mi, mf, q):
    if not configuration_ok(mi, q):
        raise ValueError(BAD_Q)
    ws = np.empty((workspace_rows(mi), W_WIDTH), q.dtype)
    M = np.zeros((mi[0, 2], mi[0, 2]), q.dtype)
    crba(mi, mf, q, ws, M)
    return M


@pentry
def crba_batch(mi, mf, q):
    B = q.shape[0]
    for b in range(B):
        if not configuration_ok(mi, q[b]):
            raise ValueError(BAD_Q)
    M = np.zeros((B, mi[0, 2], mi[0, 2]), q.dtype)
    for b in prange(B):
        ws = np.empty((workspace_rows(mi), W_WIDTH), q.dtype)
        crba(mi, mf, q[b], ws, M[b])
    return M


@entry
def aba_one(mi, mf, q, v, tau, fext):
    if not configuration_ok(mi, q):
        raise ValueError(BAD_Q)
    if not (all_finite(v) and all_finite(tau) and all_finite(fext)):
        raise ValueError("v, tau, fext: not finite")
    ws = np.empty((workspace_rows(mi), W_WIDTH), q.dtype)
    qdd = np.empty(mi[0, 2], q.dtype)
    aba(mi, mf, q, v, tau, fext, ws, qdd)
    return qdd


@pentry
def aba_batch(mi, mf, q, v, tau, fext):
    B = q.shape[0]
    for b in range(B):
        if not configuration_ok(mi, q[b]):
            raise ValueError(BAD_Q)
    if not (all_finite(v) and all_finite(tau) and all_finite(fext)):
        raise ValueError("v, tau, fext: not finite")
    qdd = np.empty((B, mi[0, 2]), q.dtype)
    for b in prange(B):
        ws = np.empty((workspace_rows(mi), W_WIDTH), q.dtype)
        aba(mi, mf, q[b], v[b], tau[b], fext[min(b, fext.shape[0] - 1)], ws, qdd[b])
    return qdd


@entry
def minverse_one(mi, mf, q):
    if not configuration_ok(mi, q):
        raise ValueError(BAD_Q)
    ws = np.empty((workspace_rows(mi), W_WIDTH), q.dtype)
    F = np.empty((mi[0, 0] + 1, mi[0, 2], 6), q.dtype)
    Minv = np.empty((mi[0, 2], mi[0, 2]), q.dtype)
    minverse(mi, mf, q, ws, F, Minv)
    return Minv


@pentry
def minverse_batch(mi, mf, q):
    B = q.shape[0]
    for b in range(B):
        if not configuration_ok(mi, q[b]):
            raise ValueError(BAD_Q)
    Minv = np.empty((B, mi[0, 2], mi[0, 2]), q.dtype)
    for b in prange(B):
        ws = np.empty((workspace_rows(mi), W_WIDTH), q.dtype)
        F = np.empty((mi[0, 0] + 1, mi[0, 2], 6), q.dtype)
        minverse(mi, mf, q[b], ws, F, Minv[b])
    return Minv


@entry
def kinematics_one(mi, mf, q, v, a):
    """The filled workspace of kinematics_pass: world placements, S, v, a (with -g)."""
    if not configuration_ok(mi, q):
        raise ValueError(BAD_Q)
    if not (all_finite(v) and all_finite(a)):
        raise ValueError("v, a: not finite")
    ws = np.empty((workspace_rows(mi), W_WIDTH), q.dtype)
    kinematics_pass(mi, mf, q, v, a, ws)
    return ws
