"""Test helper: the Pinocchio twin of an rbdiff Model, and random states for both.

Pinocchio's Python bindings cannot set the axis of a continuous joint, so a continuous
joint about axis a becomes Pinocchio's RUBZ in a frame rotated by Ra (Ra e_z = a); its
body inertia, its children's placements and its external force are re-expressed in that
frame. ``fext_to_pinocchio`` applies the same change to external forces."""

import numpy as np
import pinocchio as pin

from rbdiff.model import layout as L


def _z_to(a):
    z = np.array([0.0, 0.0, 1.0])
    v = np.cross(z, a)
    s, c = np.linalg.norm(v), z @ a
    if s < 1e-12:
        return np.eye(3) if c > 0 else np.diag([1.0, -1.0, -1.0])
    K = np.array([[0, -v[2], v[1]], [v[2], 0, -v[0]], [-v[1], v[0], 0]]) / s
    return np.eye(3) + s * K + (1 - c) * K @ K


def frame_rotations(model):
    """Ra per joint (identity except for continuous joints)."""
    out = [np.eye(3) for _ in range(model.njoints)]
    for i in range(1, model.njoints):
        if model.joint_types[i] == L.REVOLUTE_UNBOUNDED:
            out[i] = _z_to(model.axes[i])
    return out


def to_pinocchio(model):
    Ra = frame_rotations(model)
    pm = pin.Model()
    pm.gravity = pin.Motion(np.concatenate([model.gravity, np.zeros(3)]))
    for i in range(1, model.njoints):
        t = int(model.joint_types[i])
        ax = model.axes[i]
        if t == L.REVOLUTE:
            jm = pin.JointModelRevoluteUnaligned(ax)
        elif t == L.PRISMATIC:
            jm = pin.JointModelPrismaticUnaligned(ax)
        elif t == L.REVOLUTE_UNBOUNDED:
            jm = pin.JointModelRUBZ()
        elif t == L.SPHERICAL:
            jm = pin.JointModelSpherical()
        else:
            jm = pin.JointModelFreeFlyer()
        T = model.placements[i]
        lam = int(model.parents[i])
        R = Ra[lam].T @ T[:3, :3] @ Ra[i]
        p = Ra[lam].T @ T[:3, 3]
        jid = pm.addJoint(lam, jm, pin.SE3(R, p), model.names[i])
        pm.appendBodyToJoint(jid, pin.Inertia(model.masses[i], Ra[i].T @ model.coms[i],
                                              Ra[i].T @ model.inertias[i] @ Ra[i]),
                             pin.SE3.Identity())
    return pm


def fext_to_pinocchio(model, fext):
    Ra = frame_rotations(model)
    out = [pin.Force.Zero()]
    for i in range(1, model.njoints):
        f = fext[i]
        out.append(pin.Force(np.concatenate([Ra[i].T @ f[:3], Ra[i].T @ f[3:]])))
    return out


def random_state(pm, rng):
    q = pin.integrate(pm, pin.neutral(pm), rng.normal(size=pm.nv))
    return q, rng.normal(size=pm.nv), rng.normal(size=pm.nv)
