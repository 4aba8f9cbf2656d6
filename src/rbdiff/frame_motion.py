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
from .cpu.scratch import HELD as _HELD
from .declare import Function, frame_index, reference_option
from .kernels.jit import native_ref
from .results import REFERENCE_CODES, FrameAccelerationDerivatives, FrameVelocityDerivatives

# The fast paths: float64 1-D inputs only (asked by the entries); a frame or a reference
# the dictionaries do not hold raises KeyError (a subscript: ~10 ns less than .get), and
# every miss takes the general path, which names the problem.
_FAST_MISS = (AttributeError, TypeError, ValueError, KeyError)
_empty = np.empty
_new = tuple.__new__          # a result NamedTuple without its Python __new__
_REF = REFERENCE_CODES
_S6 = (6,)
# the entries check the state's types themselves (jit.native_ref)
_velocity = native_ref(cf.frame_velocity_one, "_velocity", globals(), (4, 5))
_acceleration = native_ref(cf.frame_acceleration_one, "_acceleration", globals(), (4, 5, 6))
_time_variation = native_ref(cf.frame_jacobian_time_variation_one, "_time_variation",
                             globals(), (4, 5))
_velocity_derivatives = native_ref(cf.frame_velocity_derivatives_one,
                                   "_velocity_derivatives", globals(), (4, 5))
_acceleration_derivatives = native_ref(cf.frame_acceleration_derivatives_one,
                                       "_acceleration_derivatives", globals(), (4, 5, 6))


def _classical(model, classical):
    """The kernels' 0 / 1 for the ``classical`` keyword (a bool)."""
    if isinstance(classical, (bool, np.bool_)):
        return int(classical)
    raise TypeError(f"classical: expected True or False, got {classical!r}")


_IN_QV = (("q", "nq"), ("v", "nv"))
_IN_QVA = _IN_QV + (("a", "nv"),)
_FR = (("frame", frame_index), ("reference", reference_option))
_FRC = _FR + (("classical", _classical),)


def _declare(name, inputs, shapes, params, result=None):
    """The general path of frame_motion function ``name`` (declare.py)."""
    return Function(name, getattr(cf, name + "_one"),
                    (getattr(cf, name + "_batch"), getattr(cf, name + "_parallel")), inputs,
                    shapes, model_args="frames", result=result, params=params)


_VELOCITY = _declare("frame_velocity", _IN_QV, ((6,),), _FR)
_ACCELERATION = _declare("frame_acceleration", _IN_QVA, ((6,),), _FRC)
_TIME_VARIATION = _declare("frame_jacobian_time_variation", _IN_QV, ((6, "nv"),), _FR)
_VELOCITY_D = _declare("frame_velocity_derivatives", _IN_QV, ((6, "nv"),) * 2, _FR,
                       FrameVelocityDerivatives)
_ACCELERATION_D = _declare("frame_acceleration_derivatives", _IN_QVA, ((6, "nv"),) * 4,
                           _FRC, FrameAccelerationDerivatives)


def frame_velocity(model, q, v, frame, reference="local"):
    """Spatial velocity (6,) [linear, angular] of ``frame``: in the frame itself ("local"),
    at the world origin in world axes ("world"), or the velocity of the frame's origin with
    the angular velocity, in world axes ("local_world_aligned"). As Pinocchio's
    forwardKinematics(q, v) + getFrameVelocity. q (nq,), v (nv,); a batch (B, nq), (B, nv)
    gives (B, 6)."""
    out = _empty(_S6)
    try:
        if _velocity(model.mi, model.mf, model.frame_parents, model.frame_mf, q, v,
                     model._frame_ids[frame], _REF[reference],
                     _HELD[model._scratch_key], out):
            return out
    except _FAST_MISS:
        pass
    return _VELOCITY(model, q, v, options=_VELOCITY.resolve(model, locals()))


def frame_acceleration(model, q, v, a, frame, reference="local", classical=False):
    """Spatial acceleration (6,) [linear, angular] of ``frame`` (gravity excluded, the
    derivative of the spatial velocity at a point fixed in the reference), in ``reference``
    as frame_velocity: Pinocchio's forwardKinematics(q, v, a) + getFrameAcceleration.
    ``classical``: the classical acceleration, linear part + w x v_lin with (v_lin, w)
    frame_velocity's value in the same reference (getFrameClassicalAcceleration; in
    "local_world_aligned" the acceleration of the frame origin, world axes). q (nq,),
    v, a (nv,); a batch gives (B, 6)."""
    out = _empty(_S6)
    try:
        if _acceleration(model.mi, model.mf, model.frame_parents, model.frame_mf, q, v, a,
                         model._frame_ids[frame], _REF[reference],
                         1 if classical is True else 0 if classical is False else -1,
                         _HELD[model._scratch_key], out):
            return out
    except _FAST_MISS:
        pass
    return _ACCELERATION(model, q, v, a, options=_ACCELERATION.resolve(model, locals()))


def frame_jacobian_time_variation(model, q, v, frame, reference="local_world_aligned"):
    """dJ/dt (6, nv): the time derivative of frame_jacobian(model, q, frame, reference)
    along v, as Pinocchio's computeJointJacobiansTimeVariation +
    getFrameJacobianTimeVariation. dJ v + J a is frame_acceleration(q, v, a) in "local"
    and "world", its classical acceleration in "local_world_aligned". q (nq,), v (nv,);
    a batch gives (B, 6, nv)."""
    dJ = _empty(model._sJ)
    try:
        if _time_variation(model.mi, model.mf, model.frame_parents, model.frame_mf, q, v,
                           model._frame_ids[frame], _REF[reference],
                           _HELD[model._scratch_key], dJ):
            return dJ
    except _FAST_MISS:
        pass
    return _TIME_VARIATION(model, q, v, options=_TIME_VARIATION.resolve(model, locals()))


def frame_velocity_derivatives(model, q, v, frame, reference="local"):
    """Partial derivatives of frame_velocity(model, q, v, frame, reference) with respect to
    q (tangent space) and v: FrameVelocityDerivatives(dv_dq, dv_dv), each (6, nv) ((B, 6,
    nv) for a batch); columns of dofs not carrying the frame are zero. dv_dv is the frame
    Jacobian.

    As Pinocchio's computeForwardKinematicsDerivatives + getFrameVelocityDerivatives in
    every reference: in "local" and "world" the derivatives of the returned velocity
    (checked by complex step); in "local_world_aligned", as Pinocchio and
    kinematics_derivatives, with the frame origin held fixed: the derivative of the
    returned velocity is dv_dq + [w x dp/dq; 0] (w the angular velocity, dp/dq the linear
    rows of the frame's "local_world_aligned" Jacobian)."""
    s = model._sJ
    dv_dq, dv_dv = _empty(s), _empty(s)
    try:
        if _velocity_derivatives(model.mi, model.mf, model.frame_parents, model.frame_mf,
                                 q, v, model._frame_ids[frame],
                                 _REF[reference], _HELD[model._scratch_key],
                                 dv_dq, dv_dv):
            return _new(FrameVelocityDerivatives, (dv_dq, dv_dv))
    except _FAST_MISS:
        pass
    return _VELOCITY_D(model, q, v, options=_VELOCITY_D.resolve(model, locals()))


def frame_acceleration_derivatives(model, q, v, a, frame, reference="local",
                                   classical=False):
    """Partial derivatives of frame_velocity and frame_acceleration(model, q, v, a, frame,
    reference, classical): FrameAccelerationDerivatives(dv_dq, da_dq, da_dv, da_da), each
    (6, nv) ((B, 6, nv) for a batch); columns of dofs not carrying the frame are zero.
    dv_dq is the spatial velocity's (as frame_velocity_derivatives); da_da is the frame
    Jacobian (the classical acceleration's linear part too: v does not depend on a).

    As Pinocchio's computeForwardKinematicsDerivatives + getFrameAccelerationDerivatives:
    equal on every joint type in "local"; in "world" and "local_world_aligned" but for
    da_dq's columns of a multi-dof joint (spherical, free-flyer) that has a parent, where
    Pinocchio's getter is not the derivative and rbdiff's is (kinematics_derivatives'
    note). In "local_world_aligned" the frame origin is held fixed, as Pinocchio: the
    derivatives of the returned values are dv_dq + [w x dp/dq; 0] and da_dq + [dw/dt x
    dp/dq; 0] (dp/dq the linear rows of the frame's "local_world_aligned" Jacobian).
    ``classical``: the true derivatives of the classical acceleration (a_lin + w x v_lin,
    the product rule on the true spatial ones, the origin moving; Pinocchio has no getter
    for it), which a point contact's drift needs; dv_dq stays the spatial velocity's."""
    s = model._sJ
    out = (_empty(s), _empty(s), _empty(s), _empty(s))
    try:
        if _acceleration_derivatives(
                model.mi, model.mf, model.frame_parents, model.frame_mf, q, v, a,
                model._frame_ids[frame], _REF[reference],
                1 if classical is True else 0 if classical is False else -1,
                _HELD[model._scratch_key], *out):
            return _new(FrameAccelerationDerivatives, out)
    except _FAST_MISS:
        pass
    return _ACCELERATION_D(model, q, v, a, options=_ACCELERATION_D.resolve(model, locals()))
