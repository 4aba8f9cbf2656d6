"""bench-core pairs of the frame motion functions (rbdiff.frame_motion): one rbdiff call
against the Pinocchio sequence that computes the same thing (bench/core.py's PAIR_MODULES
convention: ``calls(model, pm, q, v, a)``).

The frame is a contact frame where the robot has one (the first foot or sole frame:
what a contact model asks for), else core_kinematics' deepest frame (an end effector);
named on the rbdiff side (resolved per call), Pinocchio gets the index. Pinocchio's
sequences: forwardKinematics + the getter; frameJacobianTimeVariation (one call: forward
kinematics, the Jacobians' time variation, the frame's); computeForwardKinematicsDerivatives
+ the frame's getter.
"""

from functools import partial

import numpy as np

import rbdiff as rbd
from rbdiff.bench.core_kinematics import deepest_frame

try:
    import pinocchio as pin
except ImportError:
    pin = None


def contact_frame(model):
    """Index in model.frames of the first frame named like a foot or a sole, else the
    deepest frame."""
    for k, f in enumerate(model.frames):
        name = f.name.lower()
        if "foot" in name or "sole" in name:
            return k
    return deepest_frame(model)


def _ours(model, q, v, a, name):
    acc_d = partial(rbd.frame_acceleration_derivatives, model, q, v, a, name)
    return {"frame_velocity": partial(rbd.frame_velocity, model, q, v, name),
            "frame_velocity_lwa": partial(rbd.frame_velocity, model, q, v, name,
                                          "local_world_aligned"),
            "frame_acceleration": partial(rbd.frame_acceleration, model, q, v, a, name),
            "frame_acceleration_classical_lwa": partial(
                rbd.frame_acceleration, model, q, v, a, name, "local_world_aligned", True),
            "frame_jacobian_time_variation_lwa": partial(
                rbd.frame_jacobian_time_variation, model, q, v, name),
            "frame_jacobian_time_variation_local": partial(
                rbd.frame_jacobian_time_variation, model, q, v, name, "local"),
            "frame_velocity_derivatives": partial(rbd.frame_velocity_derivatives, model, q,
                                                  v, name),
            "frame_acceleration_derivatives": acc_d,
            "frame_acceleration_derivatives_lwa": partial(acc_d, "local_world_aligned")}


def _theirs(pm, q, v, a, fid):
    pd = pm.createData()
    L, LWA = pin.LOCAL, pin.LOCAL_WORLD_ALIGNED

    def velocity(rf):
        pin.forwardKinematics(pm, pd, q, v)
        return pin.getFrameVelocity(pm, pd, fid, rf)

    def acceleration(getter, rf):
        pin.forwardKinematics(pm, pd, q, v, a)
        return getter(pm, pd, fid, rf)

    def velocity_derivatives(rf):
        pin.computeForwardKinematicsDerivatives(pm, pd, q, v, a)
        return pin.getFrameVelocityDerivatives(pm, pd, fid, rf)

    def acceleration_derivatives(rf):
        pin.computeForwardKinematicsDerivatives(pm, pd, q, v, a)
        return pin.getFrameAccelerationDerivatives(pm, pd, fid, rf)

    vec = lambda m: m.vector
    arr = lambda x: np.array([np.array(y) for y in x])
    return {"frame_velocity": (partial(velocity, L), vec),
            "frame_velocity_lwa": (partial(velocity, LWA), vec),
            "frame_acceleration": (partial(acceleration, pin.getFrameAcceleration, L), vec),
            "frame_acceleration_classical_lwa": (
                partial(acceleration, pin.getFrameClassicalAcceleration, LWA), vec),
            "frame_jacobian_time_variation_lwa": (
                partial(pin.frameJacobianTimeVariation, pm, pd, q, v, fid, LWA), np.array),
            "frame_jacobian_time_variation_local": (
                partial(pin.frameJacobianTimeVariation, pm, pd, q, v, fid, L), np.array),
            "frame_velocity_derivatives": (partial(velocity_derivatives, L), arr),
            "frame_acceleration_derivatives": (partial(acceleration_derivatives, L), arr),
            "frame_acceleration_derivatives_lwa": (partial(acceleration_derivatives, LWA),
                                                   arr)}


def calls(model, pm, q, v, a):
    """{name: (rbdiff call, Pinocchio call or None, post)}: post turns the Pinocchio
    call's result into rbdiff's array."""
    fid = contact_frame(model)
    ours = _ours(model, q, v, a, model.frames[fid].name)
    if pm is None:
        return {k: (f, None, None) for k, f in ours.items()}
    theirs = _theirs(pm, q, v, a, fid)
    return {k: (ours[k], *theirs[k]) for k in ours}
