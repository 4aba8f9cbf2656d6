"""An rbdiff Model from a Pinocchio Model, joint for joint and frame for frame.

load_robot uses it for the example-robot-data robots whose loader edits the model Pinocchio
built from the URDF (talos_legs keeps the legs of talos, human turns its free flyer): the
model is then the loader's own, whatever the edit was.
"""

from __future__ import annotations

import numpy as np

from . import layout as L
from .model import Frame, FrameType, Model, check_singular

_AXES = {"X": (1.0, 0.0, 0.0), "Y": (0.0, 1.0, 0.0), "Z": (0.0, 0.0, 1.0)}


def _joint(jm):
    """(rbdiff joint type, axis) of a Pinocchio JointModel."""
    short = jm.shortname()
    kind = short[len("JointModel"):]
    if kind == "FreeFlyer":
        return L.FREE_FLYER, np.zeros(3)
    if kind == "Spherical":
        return L.SPHERICAL, np.zeros(3)
    for prefix, t in (("RUB", L.REVOLUTE_UNBOUNDED), ("R", L.REVOLUTE), ("P", L.PRISMATIC)):
        if kind in (prefix + "X", prefix + "Y", prefix + "Z"):
            return t, np.array(_AXES[kind[-1]])
    unaligned = {"RevoluteUnaligned": L.REVOLUTE, "PrismaticUnaligned": L.PRISMATIC,
                 "RevoluteUnboundedUnaligned": L.REVOLUTE_UNBOUNDED}
    if kind in unaligned:
        return unaligned[kind], np.array(jm.extract().axis, dtype=float)   # the concrete joint
    raise ValueError(f"Pinocchio joint type {short} has no rbdiff counterpart (rbdiff has "
                     "revolute, prismatic, continuous, spherical and free-flyer joints)")


def from_pinocchio(pm, allow_singular=False) -> Model:
    """The rbdiff Model of Pinocchio model ``pm``: same joints, bodies, frames, armature,
    gravity and reference configurations; position limits for revolute and prismatic
    joints (rbdiff keeps none for the others, as its URDF parser); Pinocchio's
    effortLimit / velocityLimit as ``effort_limits`` / ``velocity_limits``, its numeric
    maximum (what a JointModelFreeFlyer root gets) read as +inf, as rbdiff's parsers
    give a joint without limits."""
    names, parents, types, placements, axes = ["universe"], [0], [-1], [np.eye(4)], [np.zeros(3)]
    lower, upper = [], []
    for i in range(1, pm.njoints):
        jm = pm.joints[i]
        t, axis = _joint(jm)
        names.append(pm.names[i])
        parents.append(int(pm.parents[i]))
        types.append(t)
        placements.append(np.array(pm.jointPlacements[i].homogeneous))
        axes.append(axis)
        nq = L.JOINT_NQ[t]
        if t in (L.REVOLUTE, L.PRISMATIC):
            lower.append(np.array(pm.lowerPositionLimit[jm.idx_q:jm.idx_q + nq]))
            upper.append(np.array(pm.upperPositionLimit[jm.idx_q:jm.idx_q + nq]))
        else:
            lower.append(np.full(nq, -np.inf))
            upper.append(np.full(nq, np.inf))
    inertias = [pm.inertias[i] for i in range(pm.njoints)]
    frames = [Frame(f.name, int(f.parentJoint), np.array(f.placement.homogeneous),
                    FrameType(int(f.type)), int(f.parentFrame)) for f in pm.frames]
    refs = _reference_configurations(pm)
    n = pm.njoints - 1
    model = Model(names, parents, types, np.array(placements), np.array(axes),
                  np.array([float(Y.mass) for Y in inertias]),
                  np.array([np.array(Y.lever) for Y in inertias]),
                  np.array([np.array(Y.inertia) for Y in inertias]), frames,
                  np.array(pm.gravity.linear),
                  np.concatenate(lower) if n else np.zeros(0),
                  np.concatenate(upper) if n else np.zeros(0),
                  np.array(pm.armature), None, refs, effort_limits=_limits(pm.effortLimit),
                  velocity_limits=_limits(pm.velocityLimit))._freeze()
    return check_singular(model, allow_singular)


def _limits(values):
    """Pinocchio's effort or velocity limits, its numeric maximum (no limit) as +inf."""
    a = np.array(values, dtype=float)
    a[a >= np.finfo(float).max] = np.inf
    return a


def _reference_configurations(pm):
    """Pinocchio's referenceConfigurations as a dict (its map iterates as entries)."""
    return {e.key(): np.array(e.data()) for e in pm.referenceConfigurations}
