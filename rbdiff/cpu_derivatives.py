"""CPU entry points for first-order dynamics derivatives, once (``*_one``) or over a
batch on all cores (``*_batch``, ``prange``); the same pattern as cpu.py: check inputs,
allocate the workspace, call the kernels. Outputs (three (nv, nv) or (B, nv, nv) arrays)
are allocated by the caller. (One (3, nv, nv) output would save ~0.5 us of dispatch, but
indexing its three views from Python costs as much again.)"""

import numpy as np
from numba import prange

from .cpu import BAD_Q, BAD_STATE, _configurations_ok, state_ok
from .kernels.aba_derivatives import aba_derivatives
from .kernels.checks import all_finite
from .kernels.idsva import IDSVA_WIDTH, idsva
from .kernels.jit import entry, pentry
from .kernels.workspace import W_WIDTH, workspace_rows


@entry
def rnea_derivatives_one(mi, mf, q, v, a, fext, dq, dv, da):
    state_ok(mi, q, v, a, fext)
    ws = np.empty((workspace_rows(mi), IDSVA_WIDTH), q.dtype)
    idsva(mi, mf, q, v, a, fext, ws, dq, dv, da)


@pentry
def rnea_derivatives_batch(mi, mf, q, v, a, fext, dq, dv, da):
    if not _configurations_ok(mi, q):
        raise ValueError(BAD_Q)
    if not (all_finite(v.ravel()) and all_finite(a.ravel()) and all_finite(fext.ravel())):
        raise ValueError(BAD_STATE)
    for b in prange(q.shape[0]):
        ws = np.empty((workspace_rows(mi), IDSVA_WIDTH), q.dtype)
        idsva(mi, mf, q[b], v[b], a[b], fext[b], ws, dq[b], dv[b], da[b])


@entry
def aba_derivatives_one(mi, mf, q, v, tau, fext, dq, dv, dtau):
    state_ok(mi, q, v, tau, fext)
    nv = mi[0, 2]
    ws = np.empty((workspace_rows(mi), W_WIDTH), q.dtype)
    qdd = np.empty(nv, q.dtype)
    S3 = np.empty((3, nv, nv), q.dtype)
    F = np.empty((mi[0, 0] + 1, nv, 6), q.dtype)
    aba_derivatives(mi, mf, q, v, tau, fext, ws, qdd, S3, F, dq, dv, dtau)


@pentry
def aba_derivatives_batch(mi, mf, q, v, tau, fext, dq, dv, dtau):
    if not _configurations_ok(mi, q):
        raise ValueError(BAD_Q)
    if not (all_finite(v.ravel()) and all_finite(tau.ravel()) and all_finite(fext.ravel())):
        raise ValueError(BAD_STATE)
    nv = mi[0, 2]
    for b in prange(q.shape[0]):
        ws = np.empty((workspace_rows(mi), W_WIDTH), q.dtype)
        qdd = np.empty(nv, q.dtype)
        S3 = np.empty((3, nv, nv), q.dtype)
        F = np.empty((mi[0, 0] + 1, nv, 6), q.dtype)
        aba_derivatives(mi, mf, q[b], v[b], tau[b], fext[b], ws, qdd, S3, F,
                        dq[b], dv[b], dtau[b])


# ---- chain rule (Carpentier & Mansard 2018 Alg. 2/3), AZA product, kinematics ----------

from .kernels.aza import AZA_WIDTH, aba_derivatives_aza, use_aza          # noqa: E402
from .kernels.kinematics_derivatives import kinematics_derivatives       # noqa: E402
from .kernels.rnea_chain_rule import (KIN_WIDTH, REC_WIDTH,               # noqa: E402
                                      aba_derivatives_chain_rule, record_offsets,
                                      rnea_chain_rule)


@entry
def rnea_chain_rule_one(mi, mf, q, v, a, fext, dq, dv, da):
    state_ok(mi, q, v, a, fext)
    ws = np.empty((workspace_rows(mi), W_WIDTH), q.dtype)
    off = np.empty(mi[0, 0] + 2, np.int64)
    G = np.empty((record_offsets(mi, off), REC_WIDTH), q.dtype)
    rnea_chain_rule(mi, mf, q, v, a, fext, ws, G, off, dq, dv, da)


@pentry
def rnea_chain_rule_batch(mi, mf, q, v, a, fext, dq, dv, da):
    if not _configurations_ok(mi, q):
        raise ValueError(BAD_Q)
    if not (all_finite(v.ravel()) and all_finite(a.ravel()) and all_finite(fext.ravel())):
        raise ValueError(BAD_STATE)
    for b in prange(q.shape[0]):
        ws = np.empty((workspace_rows(mi), W_WIDTH), q.dtype)
        off = np.empty(mi[0, 0] + 2, np.int64)
        G = np.empty((record_offsets(mi, off), REC_WIDTH), q.dtype)
        rnea_chain_rule(mi, mf, q[b], v[b], a[b], fext[b], ws, G, off, dq[b], dv[b], da[b])


@entry
def aba_derivatives_product_one(mi, mf, q, v, tau, fext, dq, dv, dtau, product):
    """IDSVA FD derivatives with the eq. 24 product chosen by ``product`` (aza.AUTO, DMM
    or AZA)."""
    state_ok(mi, q, v, tau, fext)
    nv = mi[0, 2]
    aza = use_aza(mi, product)
    ws = np.empty((workspace_rows(mi), AZA_WIDTH if aza else W_WIDTH), q.dtype)
    qdd = np.empty(nv, q.dtype)
    S3 = np.empty((3, nv, nv), q.dtype)
    F = np.empty((mi[0, 0] + 1, nv, 6), q.dtype)
    if aza:
        aba_derivatives_aza(mi, mf, q, v, tau, fext, ws, qdd, S3, F, dq, dv, dtau)
    else:
        aba_derivatives(mi, mf, q, v, tau, fext, ws, qdd, S3, F, dq, dv, dtau)


@pentry
def aba_derivatives_product_batch(mi, mf, q, v, tau, fext, dq, dv, dtau, product):
    if not _configurations_ok(mi, q):
        raise ValueError(BAD_Q)
    if not (all_finite(v.ravel()) and all_finite(tau.ravel()) and all_finite(fext.ravel())):
        raise ValueError(BAD_STATE)
    nv = mi[0, 2]
    aza = use_aza(mi, product)
    width = AZA_WIDTH if aza else W_WIDTH
    for b in prange(q.shape[0]):
        ws = np.empty((workspace_rows(mi), width), q.dtype)
        qdd = np.empty(nv, q.dtype)
        S3 = np.empty((3, nv, nv), q.dtype)
        F = np.empty((mi[0, 0] + 1, nv, 6), q.dtype)
        if aza:
            aba_derivatives_aza(mi, mf, q[b], v[b], tau[b], fext[b], ws, qdd, S3, F,
                                dq[b], dv[b], dtau[b])
        else:
            aba_derivatives(mi, mf, q[b], v[b], tau[b], fext[b], ws, qdd, S3, F,
                            dq[b], dv[b], dtau[b])


@entry
def aba_chain_rule_one(mi, mf, q, v, tau, fext, dq, dv, dtau, product):
    state_ok(mi, q, v, tau, fext)
    nv = mi[0, 2]
    aza = use_aza(mi, product)
    ws = np.empty((workspace_rows(mi), AZA_WIDTH if aza else W_WIDTH), q.dtype)
    off = np.empty(mi[0, 0] + 2, np.int64)
    G = np.empty((record_offsets(mi, off), REC_WIDTH), q.dtype)
    qdd = np.empty(nv, q.dtype)
    S3 = np.empty((3, nv, nv), q.dtype)
    F = np.empty((mi[0, 0] + 1, nv, 6), q.dtype)
    aba_derivatives_chain_rule(mi, mf, q, v, tau, fext, ws, G, off, qdd, S3, F, dq, dv, dtau,
                               aza)


@pentry
def aba_chain_rule_batch(mi, mf, q, v, tau, fext, dq, dv, dtau, product):
    if not _configurations_ok(mi, q):
        raise ValueError(BAD_Q)
    if not (all_finite(v.ravel()) and all_finite(tau.ravel()) and all_finite(fext.ravel())):
        raise ValueError(BAD_STATE)
    nv = mi[0, 2]
    aza = use_aza(mi, product)
    width = AZA_WIDTH if aza else W_WIDTH
    for b in prange(q.shape[0]):
        ws = np.empty((workspace_rows(mi), width), q.dtype)
        off = np.empty(mi[0, 0] + 2, np.int64)
        G = np.empty((record_offsets(mi, off), REC_WIDTH), q.dtype)
        qdd = np.empty(nv, q.dtype)
        S3 = np.empty((3, nv, nv), q.dtype)
        F = np.empty((mi[0, 0] + 1, nv, 6), q.dtype)
        aba_derivatives_chain_rule(mi, mf, q[b], v[b], tau[b], fext[b], ws, G, off, qdd, S3,
                                   F, dq[b], dv[b], dtau[b], aza)


@entry
def kinematics_derivatives_one(mi, mf, q, v, a, reference, dvq, dvv, daq, dav, daa):
    state_ok(mi, q, v, a, None)
    ws = np.empty((workspace_rows(mi), W_WIDTH), q.dtype)
    off = np.empty(mi[0, 0] + 2, np.int64)
    G = np.empty((record_offsets(mi, off), KIN_WIDTH), q.dtype)
    kinematics_derivatives(mi, mf, q, v, a, reference, ws, G, off, dvq, dvv, daq, dav, daa)


@pentry
def kinematics_derivatives_batch(mi, mf, q, v, a, reference, dvq, dvv, daq, dav, daa):
    if not _configurations_ok(mi, q):
        raise ValueError(BAD_Q)
    if not (all_finite(v.ravel()) and all_finite(a.ravel())):
        raise ValueError(BAD_STATE)
    for b in prange(q.shape[0]):
        ws = np.empty((workspace_rows(mi), W_WIDTH), q.dtype)
        off = np.empty(mi[0, 0] + 2, np.int64)
        G = np.empty((record_offsets(mi, off), KIN_WIDTH), q.dtype)
        kinematics_derivatives(mi, mf, q[b], v[b], a[b], reference, ws, G, off,
                               dvq[b], dvv[b], daq[b], dav[b], daa[b])
