"""Entry points of the frame motion functions (kernels/frame_motion.py): a frame's
velocity, acceleration, Jacobian time variation and their derivatives. No math.

Conventions as cpu/single.py's and cpu/batch.py's frame functions: ``*_one(mi, mf,
frame_parents, frame_mf, *inputs, *options, ws, *outputs)`` checks one state and runs on
the caller's workspace (cpu.scratch.single_call_scratch); ``*_batch(mi, mf, fp, fmf,
*inputs, *outputs, *options, check)`` runs the items in order on one workspace, checking
every item first when ``check``; ``*_parallel(..., *outputs, *options, nchunks)`` checks,
then runs one unchecked ``*_batch`` per chunk in a prange (bit-equal to the serial one).
Options: ``frame`` (an index into model.frames), ``reference`` (kinematics_derivatives'
WORLD, LOCAL, LOCAL_WORLD_ALIGNED codes), ``classic`` (0 or 1: the classical
acceleration)."""

import numpy as np
from numba import prange

from ..kernels.frame_motion import (frame_acceleration, frame_acceleration_derivatives,
                                    frame_jacobian_time_variation, frame_velocity,
                                    frame_velocity_derivatives)
from ..kernels.fastargs import state_args
from ..kernels.jit import entry, fast_entry, helper, pentry
from ..kernels.workspace import W_WIDTH, workspace_rows
from .batch import chunk
from .twin import twin
from .checks import (batch_states_ok, frame_ok, reference_ok, state_ok, velocity_state_ok,
                     workspace_ok)


BAD_CLASSICAL = "classical: expected True or False"


@helper
def classic_ok(classic):
    """classic is 0 (spatial acceleration) or 1 (classical)."""
    if classic < 0 or classic > 1:
        raise ValueError(BAD_CLASSICAL)


# ---- single calls (fast entries on the caller's scratch) -------------------------------
# (q, v, a: arrays, or on the fast paths any objects: kernels.fastargs.state_args; False
# when those are not float64 1-D ndarrays, True when done)


@fast_entry
def frame_velocity_one(mi, mf, fparent, fmf, q, v, frame, reference, ws, out):
    ok, q, v, _, _ = state_args(q, v, None, None, out)
    if not ok:
        return False
    velocity_state_ok(mi, q, v)
    workspace_ok(mi, ws)
    frame_ok(fparent, frame)
    reference_ok(reference)
    frame_velocity(mi, mf, fparent, fmf, q, v, frame, reference, ws, out)
    return True


@fast_entry
def frame_acceleration_one(mi, mf, fparent, fmf, q, v, a, frame, reference, classic, ws,
                           out):
    ok, q, v, a, _ = state_args(q, v, a, None, out)
    if not ok:
        return False
    state_ok(mi, q, v, a, None)
    workspace_ok(mi, ws)
    frame_ok(fparent, frame)
    reference_ok(reference)
    classic_ok(classic)
    frame_acceleration(mi, mf, fparent, fmf, q, v, a, frame, reference, classic, ws, out)
    return True


@fast_entry
def frame_jacobian_time_variation_one(mi, mf, fparent, fmf, q, v, frame, reference, ws, dJ):
    ok, q, v, _, _ = state_args(q, v, None, None, dJ)
    if not ok:
        return False
    velocity_state_ok(mi, q, v)
    workspace_ok(mi, ws)
    frame_ok(fparent, frame)
    reference_ok(reference)
    frame_jacobian_time_variation(mi, mf, fparent, fmf, q, v, frame, reference, ws, dJ)
    return True


@fast_entry
def frame_velocity_derivatives_one(mi, mf, fparent, fmf, q, v, frame, reference, ws,
                                   dv_dq, dv_dv):
    ok, q, v, _, _ = state_args(q, v, None, None, dv_dq)
    if not ok:
        return False
    velocity_state_ok(mi, q, v)
    workspace_ok(mi, ws)
    frame_ok(fparent, frame)
    reference_ok(reference)
    frame_velocity_derivatives(mi, mf, fparent, fmf, q, v, frame, reference, ws, dv_dq, dv_dv)
    return True


@fast_entry
def frame_acceleration_derivatives_one(mi, mf, fparent, fmf, q, v, a, frame, reference,
                                       classic, ws, dv_dq, da_dq, da_dv, da_da):
    ok, q, v, a, _ = state_args(q, v, a, None, dv_dq)
    if not ok:
        return False
    state_ok(mi, q, v, a, None)
    workspace_ok(mi, ws)
    frame_ok(fparent, frame)
    reference_ok(reference)
    classic_ok(classic)
    frame_acceleration_derivatives(mi, mf, fparent, fmf, q, v, a, frame, reference, classic,
                                   ws, dv_dq, da_dq, da_dv, da_da)
    return True


# ---- batches ---------------------------------------------------------------------------


@entry
def frame_velocity_batch(mi, mf, fparent, fmf, q, v, out, frame, reference, check):
    if check:
        batch_states_ok(mi, q, v, v, None)
        frame_ok(fparent, frame)
        reference_ok(reference)
    ws = np.empty((workspace_rows(mi), W_WIDTH), q.dtype)
    for b in range(q.shape[0]):
        frame_velocity(mi, mf, fparent, fmf, q[b], v[b], frame, reference, ws, out[b])


@pentry
def frame_velocity_parallel(mi, mf, fparent, fmf, q, v, out, frame, reference, nchunks):
    batch_states_ok(mi, q, v, v, None)
    frame_ok(fparent, frame)
    reference_ok(reference)
    for c in prange(nchunks):
        lo, hi = chunk(q.shape[0], nchunks, c)
        twin(frame_velocity_batch, (mi, mf, fparent, fmf, q[lo:hi], v[lo:hi], out[lo:hi],
                                    frame, reference, False))


@entry
def frame_acceleration_batch(mi, mf, fparent, fmf, q, v, a, out, frame, reference, classic,
                             check):
    if check:
        batch_states_ok(mi, q, v, a, None)
        frame_ok(fparent, frame)
        reference_ok(reference)
    ws = np.empty((workspace_rows(mi), W_WIDTH), q.dtype)
    for b in range(q.shape[0]):
        frame_acceleration(mi, mf, fparent, fmf, q[b], v[b], a[b], frame, reference, classic,
                           ws, out[b])


@pentry
def frame_acceleration_parallel(mi, mf, fparent, fmf, q, v, a, out, frame, reference,
                                classic, nchunks):
    batch_states_ok(mi, q, v, a, None)
    frame_ok(fparent, frame)
    reference_ok(reference)
    for c in prange(nchunks):
        lo, hi = chunk(q.shape[0], nchunks, c)
        twin(frame_acceleration_batch, (mi, mf, fparent, fmf, q[lo:hi], v[lo:hi], a[lo:hi],
                                        out[lo:hi], frame, reference, classic, False))


@entry
def frame_jacobian_time_variation_batch(mi, mf, fparent, fmf, q, v, dJ, frame, reference,
                                        check):
    if check:
        batch_states_ok(mi, q, v, v, None)
        frame_ok(fparent, frame)
        reference_ok(reference)
    ws = np.empty((workspace_rows(mi), W_WIDTH), q.dtype)
    for b in range(q.shape[0]):
        frame_jacobian_time_variation(mi, mf, fparent, fmf, q[b], v[b], frame, reference, ws,
                                      dJ[b])


@pentry
def frame_jacobian_time_variation_parallel(mi, mf, fparent, fmf, q, v, dJ, frame, reference,
                                           nchunks):
    batch_states_ok(mi, q, v, v, None)
    frame_ok(fparent, frame)
    reference_ok(reference)
    for c in prange(nchunks):
        lo, hi = chunk(q.shape[0], nchunks, c)
        twin(frame_jacobian_time_variation_batch, (mi, mf, fparent, fmf, q[lo:hi], v[lo:hi],
                                                   dJ[lo:hi], frame, reference, False))


@entry
def frame_velocity_derivatives_batch(mi, mf, fparent, fmf, q, v, dv_dq, dv_dv, frame,
                                     reference, check):
    if check:
        batch_states_ok(mi, q, v, v, None)
        frame_ok(fparent, frame)
        reference_ok(reference)
    ws = np.empty((workspace_rows(mi), W_WIDTH), q.dtype)
    for b in range(q.shape[0]):
        frame_velocity_derivatives(mi, mf, fparent, fmf, q[b], v[b], frame, reference, ws,
                                   dv_dq[b], dv_dv[b])


@pentry
def frame_velocity_derivatives_parallel(mi, mf, fparent, fmf, q, v, dv_dq, dv_dv, frame,
                                        reference, nchunks):
    batch_states_ok(mi, q, v, v, None)
    frame_ok(fparent, frame)
    reference_ok(reference)
    for c in prange(nchunks):
        lo, hi = chunk(q.shape[0], nchunks, c)
        twin(frame_velocity_derivatives_batch, (mi, mf, fparent, fmf, q[lo:hi], v[lo:hi],
                                                dv_dq[lo:hi], dv_dv[lo:hi], frame, reference,
                                                False))


@entry
def frame_acceleration_derivatives_batch(mi, mf, fparent, fmf, q, v, a, dv_dq, da_dq, da_dv,
                                         da_da, frame, reference, classic, check):
    if check:
        batch_states_ok(mi, q, v, a, None)
        frame_ok(fparent, frame)
        reference_ok(reference)
    ws = np.empty((workspace_rows(mi), W_WIDTH), q.dtype)
    for b in range(q.shape[0]):
        frame_acceleration_derivatives(mi, mf, fparent, fmf, q[b], v[b], a[b], frame,
                                       reference, classic, ws, dv_dq[b], da_dq[b], da_dv[b],
                                       da_da[b])


@pentry
def frame_acceleration_derivatives_parallel(mi, mf, fparent, fmf, q, v, a, dv_dq, da_dq,
                                            da_dv, da_da, frame, reference, classic, nchunks):
    batch_states_ok(mi, q, v, a, None)
    frame_ok(fparent, frame)
    reference_ok(reference)
    for c in prange(nchunks):
        lo, hi = chunk(q.shape[0], nchunks, c)
        twin(frame_acceleration_derivatives_batch, (mi, mf, fparent, fmf, q[lo:hi], v[lo:hi],
                                                    a[lo:hi], dv_dq[lo:hi], da_dq[lo:hi],
                                                    da_dv[lo:hi], da_da[lo:hi], frame,
                                                    reference, classic, False))
