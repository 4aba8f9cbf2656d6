"""bench-core pairs of the kinematics and frame functions (rbdiff.kinematics) and of
gravity / nonlinear_effects: one rbdiff call against the Pinocchio sequence that computes
the same thing (bench/core.py's PAIR_MODULES convention: ``calls(model, pm, q, v, a)``).

Frame rows use the deepest frame (the most joints on its support; the last such frame:
an end effector or fingertip), named on the rbdiff side (rbdiff resolves the name per
call, Pinocchio gets the index). Rows whose rbdiff result is not one array, or whose
Pinocchio call returns nothing, go through a small closure on both sides, so both pay
the same Python call.
"""

from functools import partial

import numpy as np

import rbdiff as rbd

try:
    import pinocchio as pin
except ImportError:
    pin = None


def deepest_frame(model):
    """Index in model.frames of the last frame with the most joints on its support."""
    depth = [0] * model.njoints
    for i in range(1, model.njoints):
        depth[i] = depth[int(model.parents[i])] + 1
    return max(range(len(model.frames)), key=lambda k: (depth[model.frames[k].parent], k))


def _accelerations(result):
    return result.accelerations


def _ours(model, q, v, a, name, joint):
    kd = rbd.kinematics_derivatives(model, q, v, a)      # kept pending: joint() reads it

    # timed as Pinocchio's, a partial of the call itself; Kinematics is three arrays:
    # the agreement check compares the accelerations (they need all else) (core.bench_pair)
    forward_kinematics = partial(rbd.forward_kinematics, model, q, v, a)
    forward_kinematics.compared = _accelerations

    jac = partial(rbd.frame_jacobian, model, q, name)
    return {"forward_kinematics": forward_kinematics,
            "frame_placement": partial(rbd.frame_placement, model, q, name),
            "frame_placements": partial(rbd.frame_placements, model, q),
            "frame_jacobian_local": partial(jac, "local"),
            "frame_jacobian_world": partial(jac, "world"),
            "frame_jacobian_lwa": partial(jac, "local_world_aligned"),
            "gravity": partial(rbd.gravity, model, q),
            "nonlinear_effects": partial(rbd.nonlinear_effects, model, q, v),
            # the kinematics state (the fields are written when read) against
            # Pinocchio's compute, which fills its Data and returns nothing
            "kinematics_derivatives": partial(rbd.kinematics_derivatives, model, q, v, a),
            # one joint's five (6, nv) from that state against Pinocchio's two getters
            "kinematics_derivatives.joint": partial(kd.joint, joint),
            # one call for one joint's five (6, nv) against compute + that joint's getters
            "kinematics_derivatives(joint)": partial(rbd.kinematics_derivatives, model, q,
                                                     v, a, joint=joint),
            # every joint's five (6, nv) against compute + the getters of every joint
            "kinematics_derivatives+get": lambda: tuple(rbd.kinematics_derivatives(
                model, q, v, a))}


def _joint_getters(pm, pd, i):
    """Pinocchio's WORLD velocity / acceleration derivatives of joint i (after
    computeForwardKinematicsDerivatives): the getters' own results."""
    return (pin.getJointVelocityDerivatives(pm, pd, i, pin.WORLD),
            pin.getJointAccelerationDerivatives(pm, pd, i, pin.WORLD))


def _as_ours(getters):
    """_joint_getters' result as rbdiff's (5, 6, nv)."""
    (dvq, dvv), (_, daq, dav, daa) = getters
    return np.array([dvq, dvv, daq, dav, daa])


def _joint_derivatives(pm, pd, i):
    """Joint i's derivatives as rbdiff's (5, 6, nv)."""
    return _as_ours(_joint_getters(pm, pd, i))


def _kinematics_derivatives(pm, pd):
    """The same for every joint, as rbdiff's (5, njoints, 6, nv)."""
    out = np.zeros((5, pm.njoints, 6, pm.nv))     # row 0, the universe, stays zero
    for i in range(1, pm.njoints):
        out[:, i] = _joint_derivatives(pm, pd, i)
    return out


def _theirs(pm, q, v, a, fid, joint):
    pd = pm.createData()

    forward_kinematics = partial(pin.forwardKinematics, pm, pd, q, v, a)

    def frame_placement():
        pin.forwardKinematics(pm, pd, q)
        return pin.updateFramePlacement(pm, pd, fid)

    def frame_placements():
        pin.forwardKinematics(pm, pd, q)
        pin.updateFramePlacements(pm, pd)

    def kinematics_derivatives_get():
        pin.computeForwardKinematicsDerivatives(pm, pd, q, v, a)
        return _kinematics_derivatives(pm, pd)

    pk = pm.createData()                    # kept computed: the getters read it
    pin.computeForwardKinematicsDerivatives(pm, pk, q, v, a)

    def joint_derivatives():
        pin.computeForwardKinematicsDerivatives(pm, pd, q, v, a)
        return _joint_getters(pm, pd, joint)

    jac = partial(pin.computeFrameJacobian, pm, pd, q, fid)
    return {"forward_kinematics": (forward_kinematics,
                                   lambda _: np.array([m.vector for m in pd.a])),
            "frame_placement": (frame_placement, lambda M: M.homogeneous),
            "frame_placements": (frame_placements,
                                 lambda _: np.array([M.homogeneous for M in pd.oMf])),
            "frame_jacobian_local": (partial(jac, pin.LOCAL), np.array),
            "frame_jacobian_world": (partial(jac, pin.WORLD), np.array),
            "frame_jacobian_lwa": (partial(jac, pin.LOCAL_WORLD_ALIGNED), np.array),
            "gravity": (partial(pin.computeGeneralizedGravity, pm, pd, q), np.array),
            "nonlinear_effects": (partial(pin.nonLinearEffects, pm, pd, q, v), np.array),
            "kinematics_derivatives": (
                partial(pin.computeForwardKinematicsDerivatives, pm, pd, q, v, a),
                lambda _: _kinematics_derivatives(pm, pd)),
            "kinematics_derivatives.joint": (partial(_joint_getters, pm, pk, joint), _as_ours),
            "kinematics_derivatives(joint)": (joint_derivatives, _as_ours),
            "kinematics_derivatives+get": (kinematics_derivatives_get, lambda out: out)}


def calls(model, pm, q, v, a):
    """{name: (rbdiff call, Pinocchio call or None, post)}: post turns the Pinocchio
    call's result (or its Data) into rbdiff's array."""
    fid = deepest_frame(model)
    joint = model.frames[fid].parent
    ours = _ours(model, q, v, a, model.frames[fid].name, joint)
    if pm is None:
        return {k: (f, None, None) for k, f in ours.items()}
    theirs = _theirs(pm, q, v, a, fid, joint)
    return {k: (ours[k], *theirs[k]) for k in ours}
