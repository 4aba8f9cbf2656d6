"""A frame's spatial velocity and acceleration, the time variation of its Jacobian, and
their derivatives (Pinocchio's getFrameVelocity, getFrameAcceleration,
getFrameClassicalAcceleration, getFrameJacobianTimeVariation, getFrameVelocityDerivatives,
getFrameAccelerationDerivatives), each in one pass over the joints that carry the frame
(kernels/frame_motion.py).

Every function takes one state (q (nq,), v and a (nv,)) or a batch (leading axis B) and
returns the same leading axis; float32 and complex128 inputs compute in their dtype. A
batch runs through rbdiff.cpu.frame_motion's batch entries (on all cores when
rbdiff.cpu.policy finds it worth it) and equals a loop of single calls bit for bit.
``frame`` is a name or an index into model.frames; ``reference`` "local", "world" or
"local_world_aligned" (any case) or Pinocchio's pin.LOCAL, pin.WORLD,
pin.LOCAL_WORLD_ALIGNED. Single float64 1-D calls take a fast path as
kinematics.frame_jacobian's: natively bound entries on the model's scratch, the frame and
the reference found by one dictionary lookup each.
"""

import numpy as np

from .cpu import frame_motion as cf
from .cpu import policy
from .kernels.jit import native
from .kernels.workspace import single_call_scratch
from .kinematics import _frame_id
from .results import (REFERENCE_CODES, FrameAccelerationDerivatives,
                      FrameVelocityDerivatives, reference_name)
from .validation import F64 as _F64
from .validation import explain, prepare

# The fast paths: float64 1-D inputs only; a frame or a reference the dictionaries do not
# hold gives -1, which the entry refuses (ValueError), and every miss takes the general
# path, which names the problem.
_FAST_MISS = (AttributeError, TypeError, ValueError)
_empty = np.empty
_new = tuple.__new__          # a result NamedTuple without its Python __new__
_REF = REFERENCE_CODES
_S6 = (6,)
_velocity = native(cf.frame_velocity_one, "_velocity", globals(), inputs=(4, 5))
_acceleration = native(cf.frame_acceleration_one, "_acceleration", globals(),
                       inputs=(4, 5, 6))
_time_variation = native(cf.frame_jacobian_time_variation_one, "_time_variation", globals(),
                         inputs=(4, 5))
_velocity_derivatives = native(cf.frame_velocity_derivatives_one, "_velocity_derivatives",
                               globals(), inputs=(4, 5))
_acceleration_derivatives = native(cf.frame_acceleration_derivatives_one,
                                   "_acceleration_derivatives", globals(), inputs=(4, 5, 6))


def _general(model, named, frame, options, one, batched, shapes):
    """The general path: validate and promote the inputs ``named`` ([(name, x, length)],
    q first), resolve ``frame``, then ``one`` (single) or the pair ``batched`` on (mi, mf,
    frame_parents, frame_mf, inputs...) into new arrays of ``shapes`` (after the batch
    axis); options: (frame index, *options)."""
    arrays, _, batch, mf = prepare(model, None, named, wants_fext=False)
    dt = arrays[0].dtype
    fmf = model.frame_mf32 if dt == np.float32 else model.frame_mf
    opts = (_frame_id(model, frame),) + options
    lead = () if batch is None else (batch,)
    outs = tuple(np.empty(lead + s, dt) for s in shapes)
    args = (model.mi, mf, model.frame_parents, fmf, *arrays)
    try:
        if batch is None:
            one(*args, *opts, single_call_scratch(model.njoints, model.nv, dt, False)[0],
                *outs)
        else:
            policy.run(model, *batched, batch, args + outs, opts)
    except ValueError:
        raise explain(model, [(n, x) for (n, _, _), x in zip(named, arrays)], None) from None
    return outs


def _code(reference):
    return REFERENCE_CODES[reference_name(reference)]


def frame_velocity(model, q, v, frame, reference="local"):
    """Spatial velocity (6,) [linear, angular] of ``frame``: in the frame itself ("local"),
    at the world origin in world axes ("world"), or the velocity of the frame's origin with
    the angular velocity, in world axes ("local_world_aligned"). As Pinocchio's
    forwardKinematics(q, v) + getFrameVelocity. q (nq,), v (nv,); a batch (B, nq), (B, nv)
    gives (B, 6)."""
    try:
        if q.dtype is v.dtype is _F64 and q.ndim == v.ndim == 1:
            out = _empty(_S6)
            _velocity(model.mi, model.mf, model.frame_parents, model.frame_mf, q, v,
                      model._frame_ids.get(frame, -1), _REF.get(reference, -1), model._ws,
                      out)
            return out
    except _FAST_MISS:
        pass
    return _general(model, [("q", q, model.nq), ("v", v, model.nv)], frame,
                    (_code(reference),), cf.frame_velocity_one,
                    (cf.frame_velocity_batch, cf.frame_velocity_parallel), (_S6,))[0]


def frame_acceleration(model, q, v, a, frame, reference="local", classical=False):
    """Spatial acceleration (6,) [linear, angular] of ``frame`` (gravity excluded, the
    derivative of the spatial velocity at a point fixed in the reference), in ``reference``
    as frame_velocity: Pinocchio's forwardKinematics(q, v, a) + getFrameAcceleration.
    ``classical``: the classical acceleration, linear part + w x v_lin with (v_lin, w)
    frame_velocity's value in the same reference (getFrameClassicalAcceleration; in
    "local_world_aligned" the acceleration of the frame origin, world axes). q (nq,),
    v, a (nv,); a batch gives (B, 6)."""
    try:
        if q.dtype is v.dtype is a.dtype is _F64 and q.ndim == v.ndim == a.ndim == 1:
            out = _empty(_S6)
            _acceleration(model.mi, model.mf, model.frame_parents, model.frame_mf, q, v, a,
                          model._frame_ids.get(frame, -1), _REF.get(reference, -1),
                          1 if classical is True else 0 if classical is False else -1,
                          model._ws, out)
            return out
    except _FAST_MISS:
        pass
    return _general(model, [("q", q, model.nq), ("v", v, model.nv), ("a", a, model.nv)],
                    frame, (_code(reference), int(bool(classical))),
                    cf.frame_acceleration_one,
                    (cf.frame_acceleration_batch, cf.frame_acceleration_parallel), (_S6,))[0]


def frame_jacobian_time_variation(model, q, v, frame, reference="local_world_aligned"):
    """dJ/dt (6, nv): the time derivative of frame_jacobian(model, q, frame, reference)
    along v, as Pinocchio's computeJointJacobiansTimeVariation +
    getFrameJacobianTimeVariation. dJ v + J a is frame_acceleration(q, v, a) in "local"
    and "world", its classical acceleration in "local_world_aligned". q (nq,), v (nv,);
    a batch gives (B, 6, nv)."""
    try:
        if q.dtype is v.dtype is _F64 and q.ndim == v.ndim == 1:
            dJ = _empty(model._sJ)
            _time_variation(model.mi, model.mf, model.frame_parents, model.frame_mf, q, v,
                            model._frame_ids.get(frame, -1), _REF.get(reference, -1),
                            model._ws, dJ)
            return dJ
    except _FAST_MISS:
        pass
    return _general(model, [("q", q, model.nq), ("v", v, model.nv)], frame,
                    (_code(reference),), cf.frame_jacobian_time_variation_one,
                    (cf.frame_jacobian_time_variation_batch,
                     cf.frame_jacobian_time_variation_parallel), (model._sJ,))[0]


def frame_velocity_derivatives(model, q, v, frame, reference="local"):
    """Partial derivatives of frame_velocity(model, q, v, frame, reference) with respect to
    q (tangent space) and v: FrameVelocityDerivatives(dv_dq, dv_dv), each (6, nv) ((B, 6,
    nv) for a batch); columns of dofs not carrying the frame are zero. dv_dv is the frame
    Jacobian.

    These are the derivatives of the returned velocity in every reference (checked by
    complex step). They equal Pinocchio's computeForwardKinematicsDerivatives +
    getFrameVelocityDerivatives in "local" and "world"; in "local_world_aligned" Pinocchio
    holds the frame origin fixed, and its dv_dq lacks w x dp/dq (w the angular velocity,
    dp/dq the linear rows of the frame's "local_world_aligned" Jacobian)."""
    try:
        if q.dtype is v.dtype is _F64 and q.ndim == v.ndim == 1:
            s = model._sJ
            dv_dq, dv_dv = _empty(s), _empty(s)
            _velocity_derivatives(model.mi, model.mf, model.frame_parents, model.frame_mf,
                                  q, v, model._frame_ids.get(frame, -1),
                                  _REF.get(reference, -1), model._ws, dv_dq, dv_dv)
            return _new(FrameVelocityDerivatives, (dv_dq, dv_dv))
    except _FAST_MISS:
        pass
    return FrameVelocityDerivatives(*_general(
        model, [("q", q, model.nq), ("v", v, model.nv)], frame, (_code(reference),),
        cf.frame_velocity_derivatives_one,
        (cf.frame_velocity_derivatives_batch, cf.frame_velocity_derivatives_parallel),
        (model._sJ,) * 2))


def frame_acceleration_derivatives(model, q, v, a, frame, reference="local",
                                   classical=False):
    """Partial derivatives of frame_velocity and frame_acceleration(model, q, v, a, frame,
    reference, classical): FrameAccelerationDerivatives(dv_dq, da_dq, da_dv, da_da), each
    (6, nv) ((B, 6, nv) for a batch); columns of dofs not carrying the frame are zero.
    dv_dq is the spatial velocity's (as frame_velocity_derivatives); da_da is the frame
    Jacobian (the classical acceleration's linear part too: v does not depend on a).

    These are the derivatives of the returned values in every reference (checked by
    complex step). They equal Pinocchio's computeForwardKinematicsDerivatives +
    getFrameAccelerationDerivatives in "local" on every joint type; in "world" but for
    da_dq's columns of a multi-dof joint (spherical, free-flyer) that has a parent, where
    Pinocchio's getter is not the derivative (kinematics_derivatives' note); in
    "local_world_aligned" Pinocchio also holds the frame origin fixed: its dv_dq and da_dq
    lack w x dp/dq and dw/dt x dp/dq (dp/dq the linear rows of the frame's
    "local_world_aligned" Jacobian); its da_dv and da_da are the derivatives.
    ``classical``: the derivatives of the classical acceleration (a_lin + w x v_lin, the
    product rule on the spatial ones; Pinocchio has no getter for it), which a point
    contact's drift needs."""
    try:
        if q.dtype is v.dtype is a.dtype is _F64 and q.ndim == v.ndim == a.ndim == 1:
            s = model._sJ
            out = (_empty(s), _empty(s), _empty(s), _empty(s))
            _acceleration_derivatives(
                model.mi, model.mf, model.frame_parents, model.frame_mf, q, v, a,
                model._frame_ids.get(frame, -1), _REF.get(reference, -1),
                1 if classical is True else 0 if classical is False else -1, model._ws, *out)
            return _new(FrameAccelerationDerivatives, out)
    except _FAST_MISS:
        pass
    return FrameAccelerationDerivatives(*_general(
        model, [("q", q, model.nq), ("v", v, model.nv), ("a", a, model.nv)], frame,
        (_code(reference), int(bool(classical))), cf.frame_acceleration_derivatives_one,
        (cf.frame_acceleration_derivatives_batch, cf.frame_acceleration_derivatives_parallel),
        (model._sJ,) * 4))
