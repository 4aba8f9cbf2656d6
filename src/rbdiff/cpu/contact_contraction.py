"""Entry points of contact dynamics' second derivatives contracted with a costate
(kernels/contact_contraction.py). No math.

Conventions as cpu/contacts.py's: ``contact_contraction_one(mi, mf, frame_parents,
frame_mf, q, v, tau, lam_a, lam_f, cint, cflt, damping, ws, HQ, HV, HX, HT)`` checks one
state and runs on the caller's workspace; ``*_batch(..., HQ, HV, HX, HT, cint, cflt,
damping, check)`` runs the items in order on one set of scratch, checking every item
first when ``check``; ``*_parallel(..., nchunks)`` checks, then runs one unchecked
``*_batch`` per chunk in a prange (bit-equal to the serial one). The impulse entries
take (q, v_before, lam_v, lam_f), the options (cint, cflt, restitution, damping) and two
outputs (HQ, HX)."""

import numpy as np
from numba import prange

from ..kernels.checks import all_finite
from ..kernels.contact_contraction import (C_SIZE, contact_contraction,
                                          contact_contraction_given, impulse_contraction)
from ..kernels.contraction import CONTRACTION_WIDTH, SC_SIZE
from ..kernels.jit import entry, helper, pentry
from ..kernels.workspace import W_WIDTH, workspace_rows
from .batch import chunk
from .checks import (batch_states_ok, dynamics_finite, rows_finite, state_ok,
                     velocity_state_ok, workspace_ok)
from .contacts import (contact_scratch, contacts_ok, dependent_found, derivative_scratch,
                       impulse_scratch, restitution_ok)
from .twin import twin

BAD_COSTATE = ("lam_a (lam_v) or lam_f: wrong length (lam_a or lam_v (nv,), lam_f (nc,): "
               "one per contact row) or not finite")


@helper
def costates_ok(mi, lam_a, lam_f, nc):
    """lam_a (nv,), lam_f (nc,) finite."""
    if lam_a.shape[0] != mi[0, 2] or lam_f.shape[0] != nc:
        raise ValueError(BAD_COSTATE)
    if not (all_finite(lam_a) and all_finite(lam_f)):
        raise ValueError(BAD_COSTATE)


@helper
def batch_costates_ok(mi, q, lam_a, lam_f, nc):
    """lam_a (B, nv), lam_f (B, nc) finite, B the batch of q."""
    if lam_a.shape[0] != q.shape[0] or lam_f.shape[0] != q.shape[0] \
            or lam_a.shape[1] != mi[0, 2] or lam_f.shape[1] != nc:
        raise ValueError(BAD_COSTATE)
    if not (rows_finite(lam_a) and rows_finite(lam_f)):
        raise ValueError(BAD_COSTATE)


@entry
def contraction_scratch(mi, nc, dtype):
    """ws2 and sc (the RNEA contraction's), Y (3, nv + nc, nv), B (nv + nc, nv), vecs
    (4, max(nv, nc)), idx (2, nv) int, C (C_SIZE, nv, 6)."""
    nv = mi[0, 2]
    return (np.empty((workspace_rows(mi), CONTRACTION_WIDTH), dtype),
            np.empty(SC_SIZE, dtype), np.empty((3, nv + nc, nv), dtype),
            np.empty((nv + nc, nv), dtype), np.empty((4, max(nv, nc)), dtype),
            np.empty((2, nv), np.int64), np.empty((C_SIZE, nv, 6), dtype))


@entry
def contact_contraction_one(mi, mf, fparent, fmf, q, v, tau, lam_a, lam_f, cint, cflt,
                            damping, ws, HQ, HV, HX, HT):
    state_ok(mi, q, v, tau, None)
    workspace_ok(mi, ws)
    nc = lam_f.shape[0]
    contacts_ok(fparent, cint, cflt, nc, damping)
    costates_ok(mi, lam_a, lam_f, nc)
    qdd = np.empty(mi[0, 2], q.dtype)
    forces = np.empty(nc, q.dtype)
    F, Minv, J, Yt, W, lam = contact_scratch(mi, nc, q.dtype)
    S3, D6, G, fc, qdd2 = derivative_scratch(mi, nc, q.dtype)
    ws2, sc, Y, B, vecs, idx, C = contraction_scratch(mi, nc, q.dtype)
    bad = contact_contraction(mi, mf, fparent, fmf, q, v, tau, lam_a, lam_f, cint, cflt,
                              damping, ws, ws2, sc, F, Minv, J, Yt, W, lam, S3, D6, G, fc,
                              qdd2, qdd, forces, Y, B, vecs, idx, C, HQ, HV, HX, HT)
    dependent_found(bad, True)
    dynamics_finite(qdd)


@entry
def contact_contraction_given_one(mi, mf, fparent, fmf, q, v, tau, lam_a, lam_f, D, cint,
                                  cflt, damping, ws, HQ, HV, HX, HT):
    """contact_contraction_one with the first-order derivatives D (3, nv + nc, nv) given
    (contact_dynamics_derivatives' blocks at (q, v, tau): dqdd_dq over dforces_dq, the v
    ones, the tau ones) instead of computed (trajopt's ddp: its derivative step has them)."""
    state_ok(mi, q, v, tau, None)
    workspace_ok(mi, ws)
    nc = lam_f.shape[0]
    contacts_ok(fparent, cint, cflt, nc, damping)
    costates_ok(mi, lam_a, lam_f, nc)
    nv = mi[0, 2]
    if D.shape[0] != 3 or D.shape[1] != nv + nc or D.shape[2] != nv:
        raise ValueError("D: expected (3, nv + nc, nv), the first-order blocks")
    qdd = np.empty(nv, q.dtype)
    forces = np.empty(nc, q.dtype)
    F, Minv, J, Yt, W, lam = contact_scratch(mi, nc, q.dtype)
    S3, _, _, fc, _ = derivative_scratch(mi, nc, q.dtype)
    ws2, sc, Y, B, vecs, idx, C = contraction_scratch(mi, nc, q.dtype)
    bad = contact_contraction_given(mi, mf, fmf, q, v, tau, lam_a, lam_f, cint, cflt, damping,
                                    ws, ws2, sc, F, Minv, J, Yt, W, lam, S3, fc, qdd, forces,
                                    D, Y, B, vecs, idx, C, HQ, HV, HX, HT)
    dependent_found(bad, True)
    dynamics_finite(qdd)


@entry
def contact_contraction_batch(mi, mf, fparent, fmf, q, v, tau, lam_a, lam_f, HQ, HV, HX, HT,
                              cint, cflt, damping, check):
    nc = lam_f.shape[1]
    if check:
        batch_states_ok(mi, q, v, tau, None)
        contacts_ok(fparent, cint, cflt, nc, damping)
        batch_costates_ok(mi, q, lam_a, lam_f, nc)
    qdd = np.empty(mi[0, 2], q.dtype)     # outside the checks: the parallel twin skips them
    forces = np.empty(nc, q.dtype)
    ws = np.empty((workspace_rows(mi), W_WIDTH), q.dtype)
    F, Minv, J, Yt, W, lam = contact_scratch(mi, nc, q.dtype)
    S3, D6, G, fc, qdd2 = derivative_scratch(mi, nc, q.dtype)
    ws2, sc, Y, B, vecs, idx, C = contraction_scratch(mi, nc, q.dtype)
    bad = -1
    for b in range(q.shape[0]):
        r = contact_contraction(mi, mf, fparent, fmf, q[b], v[b], tau[b], lam_a[b], lam_f[b],
                                cint, cflt, damping, ws, ws2, sc, F, Minv, J, Yt, W, lam, S3,
                                D6, G, fc, qdd2, qdd, forces, Y, B, vecs, idx, C, HQ[b],
                                HV[b], HX[b], HT[b])
        if bad < 0 and r >= 0:
            bad = b
    return dependent_found(bad, check)


@pentry
def contact_contraction_parallel(mi, mf, fparent, fmf, q, v, tau, lam_a, lam_f, HQ, HV, HX,
                                 HT, cint, cflt, damping, nchunks):
    nc = lam_f.shape[1]
    batch_states_ok(mi, q, v, tau, None)
    contacts_ok(fparent, cint, cflt, nc, damping)
    batch_costates_ok(mi, q, lam_a, lam_f, nc)
    bad = np.full(nchunks, -1, np.int64)
    for c in prange(nchunks):
        lo, hi = chunk(q.shape[0], nchunks, c)
        bad[c] = twin(contact_contraction_batch, (mi, mf, fparent, fmf, q[lo:hi], v[lo:hi],
                                                  tau[lo:hi], lam_a[lo:hi], lam_f[lo:hi],
                                                  HQ[lo:hi], HV[lo:hi], HX[lo:hi], HT[lo:hi],
                                                  cint, cflt, damping, False))
    dependent_found(bad.max(), True)


# ---- impulse dynamics ------------------------------------------------------------------


@entry
def impulse_contraction_one(mi, mf, fparent, fmf, q, v, lam_v, lam_f, cint, cflt, r, damping,
                            ws, HQ, HX):
    velocity_state_ok(mi, q, v)
    workspace_ok(mi, ws)
    nc = lam_f.shape[0]
    contacts_ok(fparent, cint, cflt, nc, damping)
    restitution_ok(r)
    costates_ok(mi, lam_v, lam_f, nc)
    F, Minv, J, Yt, W, lam = contact_scratch(mi, nc, q.dtype)
    S3, D6, G, fc, dv, vout, imp = impulse_scratch(mi, nc, q.dtype)
    ws2, sc, Y, B, vecs, idx, C = contraction_scratch(mi, nc, q.dtype)
    bad = impulse_contraction(mi, mf, fparent, fmf, q, v, lam_v, lam_f, cint, r, damping, ws,
                              ws2, sc, F, Minv, J, Yt, W, lam, S3, D6, G, fc, dv, vout, imp, Y,
                              B, vecs, idx, C, HQ, HX)
    dependent_found(bad, True)
    dynamics_finite(vout)


@entry
def impulse_contraction_batch(mi, mf, fparent, fmf, q, v, lam_v, lam_f, HQ, HX, cint, cflt, r,
                              damping, check):
    nc = lam_f.shape[1]
    if check:
        batch_states_ok(mi, q, v, v, None)
        contacts_ok(fparent, cint, cflt, nc, damping)
        restitution_ok(r)
        batch_costates_ok(mi, q, lam_v, lam_f, nc)
    ws = np.empty((workspace_rows(mi), W_WIDTH), q.dtype)
    F, Minv, J, Yt, W, lam = contact_scratch(mi, nc, q.dtype)
    S3, D6, G, fc, dv, vout, imp = impulse_scratch(mi, nc, q.dtype)
    ws2, sc, Y, B, vecs, idx, C = contraction_scratch(mi, nc, q.dtype)
    bad = -1
    for b in range(q.shape[0]):
        x = impulse_contraction(mi, mf, fparent, fmf, q[b], v[b], lam_v[b], lam_f[b], cint, r,
                                damping, ws, ws2, sc, F, Minv, J, Yt, W, lam, S3, D6, G, fc,
                                dv, vout, imp, Y, B, vecs, idx, C, HQ[b], HX[b])
        if bad < 0 and x >= 0:
            bad = b
    return dependent_found(bad, check)


@pentry
def impulse_contraction_parallel(mi, mf, fparent, fmf, q, v, lam_v, lam_f, HQ, HX, cint, cflt,
                                 r, damping, nchunks):
    nc = lam_f.shape[1]
    batch_states_ok(mi, q, v, v, None)
    contacts_ok(fparent, cint, cflt, nc, damping)
    restitution_ok(r)
    batch_costates_ok(mi, q, lam_v, lam_f, nc)
    bad = np.full(nchunks, -1, np.int64)
    for c in prange(nchunks):
        lo, hi = chunk(q.shape[0], nchunks, c)
        bad[c] = twin(impulse_contraction_batch, (mi, mf, fparent, fmf, q[lo:hi], v[lo:hi],
                                                  lam_v[lo:hi], lam_f[lo:hi], HQ[lo:hi],
                                                  HX[lo:hi], cint, cflt, r, damping, False))
    dependent_found(bad.max(), True)
