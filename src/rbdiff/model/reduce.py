"""Model.reduced: a model with some joints locked, as Pinocchio's buildReducedModel.

Pinocchio's algorithm, step for step, so that joints, bodies, frames (their order included)
and reference configurations come out as Pinocchio's (the kept joints keep their position,
effort and velocity limits and armature): joints are visited in order; a locked
joint becomes a FIXED_JOINT frame placed at its parent placement times its motion at q_ref,
its body is added to the nearest kept ancestor's, and the children of a locked joint hang
from that ancestor at the locked frame's placement; the other frames are copied in their
order, re-parented the same way.
"""

from __future__ import annotations

import numpy as np

from . import layout as L
from .configuration import quat_to_rot
from .model import Frame, FrameType, Model, combine_inertias
from .visuals import remap_visuals


def _rotation(axis, c, s):
    """Rotation by the angle (cos c, sin s) about the unit ``axis`` (Rodrigues)."""
    K = np.array([[0.0, -axis[2], axis[1]], [axis[2], 0.0, -axis[0]],
                  [-axis[1], axis[0], 0.0]])
    return np.eye(3) + s * K + (1.0 - c) * (K @ K)


def joint_motion(model, i, q):
    """Joint i's motion transform (4x4, child in parent's joint frame after its placement)
    at configuration q (nq,), as Pinocchio's JointModel.calc(q).M()."""
    t = int(model.joint_types[i])
    qi = np.asarray(q, dtype=float)[int(model.idx_q[i]):int(model.idx_q[i] + model.nqs[i])]
    T = np.eye(4)
    if t == L.REVOLUTE:
        T[:3, :3] = _rotation(model.axes[i], np.cos(qi[0]), np.sin(qi[0]))
    elif t == L.REVOLUTE_UNBOUNDED:   # Pinocchio uses (cos, sin) as given
        T[:3, :3] = _rotation(model.axes[i], qi[0], qi[1])
    elif t == L.PRISMATIC:
        T[:3, 3] = model.axes[i] * qi[0]
    elif t == L.SPHERICAL:
        T[:3, :3] = quat_to_rot(qi)
    else:
        T[:3, :3] = quat_to_rot(qi[3:])
        T[:3, 3] = qi[:3]
    return T


def _lock_list(model, joints_to_lock):
    if isinstance(joints_to_lock, (str, int, np.integer)):
        joints_to_lock = [joints_to_lock]
    ids = []
    for j in joints_to_lock:
        if isinstance(j, str):
            if j not in model.names[1:]:
                raise KeyError(f"no joint named {j!r} to lock; the model's joints: "
                               f"{', '.join(model.names[1:])}")
            ids.append(model.names.index(j))
        elif isinstance(j, (int, np.integer)) and 1 <= int(j) < model.njoints:
            ids.append(int(j))
        else:
            raise KeyError(f"joint {j!r} to lock: expected a joint name or an index in "
                           f"1..{model.njoints - 1}")
    if len(set(ids)) != len(ids):
        dup = sorted({model.names[i] for i in ids if ids.count(i) > 1})
        raise ValueError(f"joints to lock named more than once: {', '.join(dup)}")
    return sorted(ids)


class _Reduced:
    """The reduced model under construction (Pinocchio's Model calls it uses)."""

    def __init__(self, model):
        self.names, self.parents, self.types = ["universe"], [0], [-1]
        self.placements, self.axes = [np.eye(4)], [np.zeros(3)]
        self.bodies = [(float(model.masses[0]), np.array(model.coms[0]),
                        np.array(model.inertias[0]))]
        self.lower, self.upper, self.armature, self.armature_world = [], [], [], [False]
        self.effort, self.velocity = [], []
        self.frames = []

    def frame_id(self, name):
        """Pinocchio's getFrameId(name): the first frame with that name, any type; none:
        the number of frames (the index of the frame about to be added, which a fixed
        joint's frame copied from a reduced model then gets as its parent, as in
        Pinocchio)."""
        for k, f in enumerate(self.frames):
            if f.name == name:
                return k
        return len(self.frames)

    def exists(self, name, ftype=None):
        return any(f.name == name and (ftype is None or f.type == ftype) for f in self.frames)

    def add_frame(self, frame, body=None):
        """Pinocchio's addFrame: a second frame of the same name and type is not added;
        ``body`` (mass, com, inertia in the frame) joins the frame's joint's body."""
        if self.exists(frame.name, frame.type):
            return self.frame_id(frame.name)
        self.frames.append(frame)
        if body is not None:
            m, c, I = body
            R, p = frame.placement[:3, :3], frame.placement[:3, 3]
            j = frame.parent
            self.bodies[j] = combine_inertias(*self.bodies[j], m, R @ c + p, R @ I @ R.T)
        return len(self.frames) - 1


def reduced_model(model, joints_to_lock, q_ref=None):
    """See :meth:`Model.reduced`."""
    lock = _lock_list(model, joints_to_lock)
    q_ref = model._neutral if q_ref is None else np.asarray(q_ref, dtype=float)
    if q_ref.shape != (model.nq,) or not np.all(np.isfinite(q_ref)):
        raise ValueError(f"q_ref: expected {model.nq} finite values, got shape "
                         f"{np.shape(q_ref)}")
    red = _Reduced(model)
    red.frames.append(model.frames[0])
    frames = model.frames
    k = 0                                   # the input frame being copied

    def copy_frame(f):
        if f.parent in lock:
            support = model.names[f.parent]
            if f.type == FrameType.JOINT and red.exists(f.name) and support == f.name:
                return          # the locked joint's own frame: its FIXED_JOINT frame is there
            jf = red.frames[red.frame_id(support)]
            red.add_frame(Frame(f.name, jf.parent, jf.placement @ f.placement, f.type,
                                red.frame_id(frames[f.parent_frame].name)))
        else:
            red.add_frame(Frame(f.name, red.names.index(model.names[f.parent]), f.placement,
                                f.type, red.frame_id(frames[f.parent_frame].name)))

    for j in range(1, model.njoints):
        name, pname = model.names[j], model.names[model.parents[j]]
        if pname in red.names:
            parent, Tp, previous = red.names.index(pname), np.eye(4), 0
        else:                               # the parent is locked: hang from its frame
            previous = red.frame_id(pname)
            parent, Tp = red.frames[previous].parent, red.frames[previous].placement
        if j in lock:
            while frames[k].name != name:   # copy the frames that come before it
                k += 1
                if frames[k].name == name:
                    break
                copy_frame(frames[k])
            T = Tp @ model.placements[j] @ joint_motion(model, j, q_ref)
            body = (float(model.masses[j]), np.array(model.coms[j]), np.array(model.inertias[j]))
            fid = red.add_frame(Frame(name, parent, T, FrameType.FIXED_JOINT, previous), body)
            # Pinocchio makes the fixed frame its own parent frame ("a solution for a missing
            # parent frame"): kept so that frame for frame the models agree
            red.frames[fid] = Frame(name, parent, T, FrameType.FIXED_JOINT, fid)
        else:
            iq, iv = int(model.idx_q[j]), int(model.idx_v[j])
            red.names.append(name)
            red.parents.append(parent)
            red.types.append(int(model.joint_types[j]))
            red.placements.append(Tp @ model.placements[j])
            red.axes.append(np.array(model.axes[j]))
            red.bodies.append((float(model.masses[j]), np.array(model.coms[j]),
                               np.array(model.inertias[j])))
            red.lower.append(model.lower_limits[iq:iq + int(model.nqs[j])])
            red.upper.append(model.upper_limits[iq:iq + int(model.nqs[j])])
            red.armature.append(model.armature[iv:iv + int(model.nvs[j])])
            red.effort.append(model.effort_limits[iv:iv + int(model.nvs[j])])
            red.velocity.append(model.velocity_limits[iv:iv + int(model.nvs[j])])
            red.armature_world.append(bool(model.armature_world[j]))
    for f in frames[k:]:
        if f is not frames[0]:
            copy_frame(f)
    kept = [model.names.index(n) for n in red.names[1:]]
    refs = {key: np.concatenate([[]] + [q[int(model.idx_q[j]):int(model.idx_q[j]
                                                                  + model.nqs[j])]
                                        for j in kept])
            for key, q in model.reference_configurations.items()}
    n = len(red.names) - 1
    return Model(red.names, red.parents, red.types, np.array(red.placements),
                 np.array(red.axes), np.array([b[0] for b in red.bodies]),
                 np.array([b[1] for b in red.bodies]), np.array([b[2] for b in red.bodies]),
                 red.frames, model.gravity,
                 np.concatenate(red.lower) if n else np.zeros(0),
                 np.concatenate(red.upper) if n else np.zeros(0),
                 np.concatenate(red.armature) if n else np.zeros(0), red.armature_world,
                 refs, remap_visuals(model.visuals, model.frames, red.frames),
                 np.concatenate(red.effort) if n else np.zeros(0),
                 np.concatenate(red.velocity) if n else np.zeros(0))._freeze()
