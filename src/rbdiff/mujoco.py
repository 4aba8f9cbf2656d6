"""States and forces between MuJoCo's conventions and rbdiff's, for a Model loaded with
``rbd.load_mjcf`` / ``rbd.from_mujoco`` (``rbd.mujoco.to_rbdiff`` etc.), and for any
Model and any MuJoCo model of the same robot by joint names (:func:`joint_map`: a
``load_robot`` / ``load_urdf`` model against MuJoCo's own compile of the URDF, or
rbdiff.sim's plant).

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
           "mujoco_map", "MujocoMap", "joint_map", "JointMap"]


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
    velocity-product term). ``model_or_map`` may be a :class:`JointMap`."""
    if isinstance(model_or_map, JointMap):
        return model_or_map.to_rbdiff(qpos, qvel, qacc)
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
    the inverse of :func:`to_rbdiff` (a needs v). ``model_or_map`` may be a
    :class:`JointMap`."""
    if isinstance(model_or_map, JointMap):
        return model_or_map.to_mujoco(q, v, a)
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


class JointMap:
    """rbdiff's state of ``model`` <-> MuJoCo's state of ``mj_model``, the same robot,
    matched by joint names (:func:`joint_map`). The MuJoCo model may order its joints
    and dofs its own way and hold more of them (other bodies' joints keep their qpos0 and
    zero velocity in :meth:`to_mujoco`); hinges and slides: q = qpos - qpos0, as for a
    Model from MJCF; a continuous joint (cos, sin) <-> a hinge angle; ball joints and the
    free flyer reorder their quaternions and the free flyer's linear velocity changes
    frame (module docstring).

    Attributes: ``q_rb`` / ``q_mj`` (qpos[q_mj] = q[q_rb] + offset), ``v_rb`` / ``v_mj``
    (qvel[v_mj] = v[v_rb], a free flyer's linear part apart), ``dof_of_mj`` (mj nv,: the
    rbdiff velocity index of each MuJoCo dof, -1 for one rbdiff does not have), and
    ``free`` ((iq, iv, qposadr, dofadr) of the free flyer, or None)."""

    def __init__(self, model, mj_model):
        from .model import layout as L
        from .model.mjcf import _import_mujoco
        mujoco = _import_mujoco("rbdiff.mujoco.joint_map needs")
        mm = mj_model
        self.model, self.mj_model = model, mm
        self.nq, self.nv, self.mj_nq, self.mj_nv = model.nq, model.nv, mm.nq, mm.nv
        free_mj = [j for j in range(mm.njnt)
                   if int(mm.jnt_type[j]) == int(mujoco.mjtJoint.mjJNT_FREE)]
        q_rb, q_mj, v_rb, v_mj, cont = [], [], [], [], []
        offset = []
        dof_of_mj = np.full(mm.nv, -1, dtype=int)
        self.free = None
        missing = []
        for i in range(1, model.njoints):
            t, name = int(model.joint_types[i]), model.names[i]
            j = mujoco.mj_name2id(mm, mujoco.mjtObj.mjOBJ_JOINT, name)
            if j < 0 and t == L.FREE_FLYER and len(free_mj) == 1:
                j = free_mj[0]              # the one free joint, whatever its name
            if j < 0:
                missing.append(name)
                continue
            a, d = int(mm.jnt_qposadr[j]), int(mm.jnt_dofadr[j])
            iq, iv, nv = int(model.idx_q[i]), int(model.idx_v[i]), int(model.nvs[i])
            jt = int(mm.jnt_type[j])
            want = {L.FREE_FLYER: mujoco.mjtJoint.mjJNT_FREE,
                    L.SPHERICAL: mujoco.mjtJoint.mjJNT_BALL}.get(t)
            if want is not None and jt != int(want) or want is None and jt not in (
                    int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE)):
                raise ValueError(f"joint_map: joint {name!r} is of another kind in the "
                                 "MuJoCo model")
            if want is None and nv != 1:
                raise ValueError(f"joint_map: joint {name!r} has {nv} dofs in rbdiff, one "
                                 "in MuJoCo")
            dof_of_mj[d:d + nv] = np.arange(iv, iv + nv)
            if t == L.FREE_FLYER:
                q_rb += [iq, iq + 1, iq + 2, iq + 6, iq + 3, iq + 4, iq + 5]
                q_mj += list(range(a, a + 7))
                offset += [0.0] * 7
                v_rb += list(range(iv + 3, iv + 6))
                v_mj += list(range(d + 3, d + 6))
                self.free = (iq, iv, a, d)
                continue
            if t == L.REVOLUTE_UNBOUNDED:
                cont.append((iq, a, float(mm.qpos0[a])))
            elif t == L.SPHERICAL:
                q_rb += [iq + 3, iq, iq + 1, iq + 2]
                q_mj += list(range(a, a + 4))
                offset += [0.0] * 4
            else:
                q_rb.append(iq)
                q_mj.append(a)
                offset.append(float(mm.qpos0[a]))
            v_rb += list(range(iv, iv + nv))
            v_mj += list(range(d, d + nv))
        if missing:
            names = [mujoco.mj_id2name(mm, mujoco.mjtObj.mjOBJ_JOINT, j)
                     for j in range(mm.njnt)]
            raise ValueError(f"joint_map: the MuJoCo model has no joint named {missing} "
                             f"(its joints: {names})")
        self.q_rb, self.q_mj = np.array(q_rb, int), np.array(q_mj, int)
        self.v_rb, self.v_mj = np.array(v_rb, int), np.array(v_mj, int)
        self.offset = np.array(offset)
        self.cont = cont
        self.dof_of_mj = dof_of_mj
        self.qpos0 = np.array(mm.qpos0)

    def to_mujoco(self, q, v=None, a=None):
        """rbdiff's (q (..., nq), v, a) as MuJoCo's (qpos (..., mj nq), qvel, qacc); the
        MuJoCo model's other joints at qpos0 and rest; v, a may be None (a needs v)."""
        q = _vec(q, self.nq, "q")
        batch = q.shape[:-1]
        qpos = np.broadcast_to(self.qpos0, batch + (self.mj_nq,)).copy()
        qpos[..., self.q_mj] = q[..., self.q_rb] + self.offset
        for iq, adr, ref in self.cont:
            qpos[..., adr] = np.arctan2(q[..., iq + 1], q[..., iq]) + ref
        qvel = qacc = None
        if a is not None and v is None:
            raise ValueError("a needs v (free joints' accelerations depend on it)")
        if v is not None:
            v = _vec(v, self.nv, "v")
            qvel = np.zeros(batch + (self.mj_nv,))
            qvel[..., self.v_mj] = v[..., self.v_rb]
        if a is not None:
            a = _vec(a, self.nv, "a")
            qacc = np.zeros(batch + (self.mj_nv,))
            qacc[..., self.v_mj] = a[..., self.v_rb]
        if self.free is not None and v is not None:
            iq, iv, _, d = self.free
            R = _free_rotation(q, iq)
            lin, ang = slice(iv, iv + 3), slice(iv + 3, iv + 6)
            qvel[..., d:d + 3] = _rotate(R, v[..., lin])
            if a is not None:
                qacc[..., d:d + 3] = _rotate(R, a[..., lin] + np.cross(v[..., ang],
                                                                       v[..., lin]))
        return qpos, qvel, qacc

    def to_rbdiff(self, qpos, qvel=None, qacc=None):
        """MuJoCo's (qpos, qvel, qacc) as rbdiff's (q, v, a) (v, a None when qvel, qacc
        are; qacc needs qvel)."""
        qpos = _vec(qpos, self.mj_nq, "qpos")
        batch = qpos.shape[:-1]
        q = np.zeros(batch + (self.nq,))
        q[..., self.q_rb] = qpos[..., self.q_mj] - self.offset
        for iq, adr, ref in self.cont:
            q[..., iq], q[..., iq + 1] = np.cos(qpos[..., adr] - ref), np.sin(
                qpos[..., adr] - ref)
        v = a = None
        if qacc is not None and qvel is None:
            raise ValueError("qacc needs qvel (free joints' accelerations depend on it)")
        if qvel is not None:
            qvel = _vec(qvel, self.mj_nv, "qvel")
            v = np.zeros(batch + (self.nv,))
            v[..., self.v_rb] = qvel[..., self.v_mj]
        if qacc is not None:
            qacc = _vec(qacc, self.mj_nv, "qacc")
            a = np.zeros(batch + (self.nv,))
            a[..., self.v_rb] = qacc[..., self.v_mj]
        if self.free is not None and qvel is not None:
            iq, iv, _, d = self.free
            R = _free_rotation(q, iq)
            lin, ang = slice(iv, iv + 3), slice(iv + 3, iv + 6)
            v[..., lin] = _rotate_back(R, qvel[..., d:d + 3])
            if a is not None:
                a[..., lin] = _rotate_back(R, qacc[..., d:d + 3]) - np.cross(v[..., ang],
                                                                           v[..., lin])
        return q, v, a


def joint_map(model, mj_model):
    """The :class:`JointMap` between ``model`` (any rbdiff Model) and ``mj_model`` (a
    ``mujoco.MjModel`` of the same robot) by joint names (the rbdiff free flyer to the
    MuJoCo model's only free joint when the names differ). Raises ValueError naming a
    joint MuJoCo does not have, or one of another kind."""
    return JointMap(model, mj_model)


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
