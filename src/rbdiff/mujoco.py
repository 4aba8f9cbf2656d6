"""States and forces between MuJoCo's conventions and rbdiff's, for a Model loaded with
``rbd.load_mjcf`` / ``rbd.from_mujoco`` (``rbd.mujoco.to_rbdiff`` etc.).

Both sides order joints and coordinates alike (model.mujoco_map); they differ in:

- hinge and slide joints: q = qpos - qpos0 (MuJoCo moves a joint by qpos - qpos0, its
  ``ref``); velocities, accelerations and forces are equal;
- quaternions (ball and free joints): MuJoCo's [w, x, y, z], rbdiff's [x, y, z, w];
  ball joint velocities (local angular velocity) are equal;
- free joints: MuJoCo's qvel is [world-frame linear velocity of the body origin,
  body-frame angular velocity w], rbdiff's v the body-frame twist [R^T pdot, w] (R the
  body's rotation). Differentiating qvel_lin = R v_lin gives the accelerations,
  qacc_lin = R (a_lin + w x v_lin), and the power tau . v = qfrc . qvel the forces,
  qfrc_lin = R tau_lin. MuJoCo adds a free joint's armature a in those coordinates:
  in rbdiff's it is a (a_lin + w x v_lin), which the Model carries
  (``model.armature_world``), so rnea, aba and their derivatives agree with MuJoCo.

Every function takes ``model_or_map`` (a Model from MJCF, or its ``mujoco_map``) and
accepts a leading batch axis (q (B, nq), v (B, nv), ...; the arrays of one call share
it). Importing this
module does not import mujoco; only :func:`rigid_body_only` needs it.
"""

from __future__ import annotations

import numpy as np

from .model.configuration import quat_to_rot
from .model.mjcf import MujocoMap

__all__ = ["to_rbdiff", "to_mujoco", "force_to_rbdiff", "force_to_mujoco", "rigid_body_only",
           "mujoco_map", "MujocoMap"]


def mujoco_map(model_or_map) -> MujocoMap:
    """The :class:`~rbdiff.model.mjcf.MujocoMap` of a Model loaded from MJCF (copies made
    with ``Model.with_armature`` don't carry it: pass the original's)."""
    if isinstance(model_or_map, MujocoMap):
        return model_or_map
    mp = getattr(model_or_map, "mujoco_map", None)
    if mp is None:
        raise TypeError("expected a Model loaded with rbd.load_mjcf / rbd.from_mujoco or "
                        f"its mujoco_map, got {model_or_map!r}")
    return mp


def to_rbdiff(model_or_map, qpos, qvel=None, qacc=None):
    """MuJoCo's (qpos (..., nq), qvel (..., nv), qacc (..., nv)) as rbdiff's (q, v, a);
    v (a) is None when qvel (qacc) is. qacc needs qvel (a free joint's acceleration has a
    velocity-product term)."""
    mp = mujoco_map(model_or_map)
    q = _vec(qpos, mp.nq, "qpos")[..., mp.perm] - mp.offset
    v = None if qvel is None else _vec(qvel, mp.nv, "qvel").copy()
    a = None if qacc is None else _vec(qacc, mp.nv, "qacc").copy()
    if a is not None and v is None:
        raise ValueError("qacc needs qvel (free joints' accelerations depend on it)")
    for iq, iv in zip(mp.free_q, mp.free_v) if v is not None else ():
        lin, ang = slice(iv, iv + 3), slice(iv + 3, iv + 6)
        R = _free_rotation(q, iq)
        v[..., lin] = _rotate_back(R, v[..., lin])                  # R^T qvel_lin
        if a is not None:                                           # R^T qacc_lin - w x v
            a[..., lin] = _rotate_back(R, a[..., lin]) - np.cross(v[..., ang], v[..., lin])
    return q, v, a


def to_mujoco(model_or_map, q, v=None, a=None):
    """rbdiff's (q (..., nq), v (..., nv), a (..., nv)) as MuJoCo's (qpos, qvel, qacc);
    the inverse of :func:`to_rbdiff` (a needs v)."""
    mp = mujoco_map(model_or_map)
    q = _vec(q, mp.nq, "q")
    qpos = (q + mp.offset)[..., mp.inverse_perm]
    qvel = None if v is None else _vec(v, mp.nv, "v").copy()
    qacc = None if a is None else _vec(a, mp.nv, "a").copy()
    if qacc is not None and qvel is None:
        raise ValueError("a needs v (free joints' accelerations depend on it)")
    for iq, iv in zip(mp.free_q, mp.free_v) if qvel is not None else ():
        lin, ang = slice(iv, iv + 3), slice(iv + 3, iv + 6)
        R = _free_rotation(q, iq)
        if qacc is not None:         # R (a_lin + w x v_lin), v_lin still body-frame here
            qacc[..., lin] = _rotate(R, qacc[..., lin] + np.cross(qvel[..., ang],
                                                                   qvel[..., lin]))
        qvel[..., lin] = _rotate(R, qvel[..., lin])
    return qpos, qvel, qacc


def force_to_rbdiff(model_or_map, qpos, qfrc):
    """A generalised force in MuJoCo's coordinates (qfrc (..., nv), e.g. qfrc_applied or
    qfrc_inverse) at MuJoCo's qpos (..., nq) as rbdiff's tau (..., nv) (same power)."""
    mp = mujoco_map(model_or_map)
    q = _vec(qpos, mp.nq, "qpos")[..., mp.perm]
    tau = _vec(qfrc, mp.nv, "qfrc").copy()
    for iq, iv in zip(mp.free_q, mp.free_v):
        tau[..., iv:iv + 3] = _rotate_back(_free_rotation(q, iq), tau[..., iv:iv + 3])
    return tau


def force_to_mujoco(model_or_map, q, tau):
    """rbdiff's generalised force tau (..., nv) at rbdiff's q (..., nq) as MuJoCo's qfrc
    (..., nv): e.g. rnea's tau as mj_inverse's qfrc_inverse."""
    mp = mujoco_map(model_or_map)
    q = _vec(q, mp.nq, "q")
    qfrc = _vec(tau, mp.nv, "tau").copy()
    for iq, iv in zip(mp.free_q, mp.free_v):
        qfrc[..., iv:iv + 3] = _rotate(_free_rotation(q, iq), qfrc[..., iv:iv + 3])
    return qfrc


def rigid_body_only(mj_model):
    """A copy of the ``mujoco.MjModel`` whose dynamics are the rigid-body tree's alone
    (what rbdiff computes): contacts, constraints (limits, equalities, friction loss),
    springs, dampers, actuation, fluid forces and gravity compensation switched off.
    mj_inverse, mj_forward and mj_fullM on it match rbd.rnea, rbd.aba and rbd.crba."""
    import copy

    from .model.mjcf import _import_mujoco
    bits = _import_mujoco().mjtDisableBit
    m = copy.deepcopy(mj_model)
    for name in ("CONTACT", "CONSTRAINT", "LIMIT", "EQUALITY", "FRICTIONLOSS", "SPRING",
                 "DAMPER", "PASSIVE", "ACTUATION"):
        bit = getattr(bits, f"mjDSBL_{name}", None)     # PASSIVE: MuJoCo before 3.3
        if bit is not None:
            m.opt.disableflags |= int(bit)
    m.opt.enableflags = 0           # e.g. INVDISCRETE: mj_inverse in discrete time
    m.opt.density = 0.0
    m.opt.viscosity = 0.0
    m.body_gravcomp[:] = 0.0
    return m


def _vec(x, n, what):
    x = np.asarray(x, dtype=float)
    if x.ndim < 1 or x.shape[-1] != n:
        raise ValueError(f"{what}: expected shape (..., {n}), got {x.shape}")
    return x


def _free_rotation(q, iq):
    """R (..., 3, 3) of the free joint whose rbdiff coordinates start at iq (its
    quaternion normalised, as MuJoCo's kinematics does)."""
    quat = q[..., iq + 3:iq + 7]
    return quat_to_rot(quat / np.linalg.norm(quat, axis=-1, keepdims=True))


def _rotate(R, x):
    return np.einsum("...ij,...j->...i", R, x)


def _rotate_back(R, x):
    return np.einsum("...ji,...j->...i", R, x)
