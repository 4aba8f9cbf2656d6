"""MJCF (MuJoCo) models, read from MuJoCo's own compiler.

``load_mjcf`` compiles the XML with ``mujoco.MjModel`` and ``from_mujoco`` reads the
compiled arrays, so every mass and inertia (inferred from geoms, set by defaults,
``settotalmass``, ``<include>``, ...) is exactly the one MuJoCo simulates. MuJoCo's
kinematic tree maps one to one:

- rbdiff's joints are MuJoCo's joints, in MuJoCo's order, so ``model.idx_q`` /
  ``model.idx_v`` are MuJoCo's ``jnt_qposadr`` / ``jnt_dofadr`` and nq, nv are equal;
  hinge -> revolute (scalar q, never continuous), slide -> prismatic, ball -> spherical,
  free -> free_flyer.
- MuJoCo moves a body by its joints in order, each about its anchor ``jnt_pos`` (body
  frame) in the frame already moved by the ones before: body = parent * body_pose *
  prod_k (Tr(p_k) J_k(q_k) Tr(-p_k)). So joint 1 sits at body_pose Tr(p_1), joint k+1 at
  Tr(p_{k+1} - p_k) on joint k, and the body at Tr(-p_K) on its last joint K. A free
  joint sets the body's world pose from qpos (MuJoCo allows it only on top-level
  bodies), so it sits at the identity on the universe, the body on it.
- A body without joints is welded to its parent: its inertia joins the parent's last
  joint (the world body's and those welded to it stay on the universe, ``masses[0]``).
- Every body is a BODY frame and every site an OP_FRAME under its MuJoCo name; unnamed
  ones are called ``body<id>`` / ``site<id>`` and unnamed joints ``joint<id>`` (MuJoCo's
  id; a trailing ``_`` is added while the name is taken). The world body is "world".
- ``dof_armature`` is the armature; gravity is ``opt.gravity``, zero when
  ``<flag gravity="disable"/>``. MuJoCo adds a free joint's armature in its own
  velocity coordinates, whose linear part is world-frame: its free joints are
  ``model.armature_world`` (the linear armature then adds armature (w x v_lin) to the
  body-frame linear torques; kernels/armature.py), and their three linear armatures must
  be equal (MuJoCo's compiler makes them so; a hand-edited ``dof_armature`` is refused).
- ``model.effort_limits`` (nv): the largest generalised force MuJoCo's actuators can
  put on each hinge or slide dof (the upper end of the range, as Pinocchio's
  effortLimit is its upperEffortLimit): for each actuator with a joint transmission on
  it, gear times its ``forcerange`` when force-limited, else (a motor: fixed gain, no
  bias, no activation dynamics) gear times gain times its ``ctrlrange`` when
  control-limited, else no limit; the actuators on one joint add up, and the joint's
  ``actuatorfrcrange`` (upper end) caps the sum. A dof that no actuator drives, and ball
  and free joints, get +inf (no limit stated; rbdiff's Model carries no actuation
  matrix, so an undriven joint is not marked 0). ``model.velocity_limits`` are all +inf:
  MuJoCo has no joint speed limit (its ``range`` is a position range, kept in
  ``lower_limits`` / ``upper_limits``). Pinocchio's buildModelFromMJCF (checked with
  Pinocchio 4.1) reads only the joints' ``actuatorfrcrange`` upper end as effortLimit,
  ignoring ``<actuator>``, and +inf velocityLimit: the two agree for a model whose
  limits are all ``actuatorfrcrange``.
- The geoms MuJoCo's viewer shows by default (groups 0-2, not fully transparent) are
  ``model.visuals`` on their body's BODY frame, as compiled (sizes, poses, a material's
  colour, mesh vertices and faces); height fields and SDFs are left out, a plane is a
  thin box (20 m wide where it is infinite).

Configurations differ only where MuJoCo's conventions differ from Pinocchio's
(``model.mujoco_map``, used by rbdiff.mujoco): a hinge or slide rotates or slides by
qpos - qpos0 (``ref``), so q = qpos - qpos0 and the limits shift likewise; quaternions are
[w, x, y, z] in MuJoCo, [x, y, z, w] here; a free joint's linear velocity is world-frame
in MuJoCo, body-frame here. Everything outside the rigid-body tree (contacts, equality
constraints, tendons, actuators, passive forces, gravity compensation, mocap motion)
is not part of the Model.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import layout as L
from .configuration import quat_to_rot
from .model import FrameType, Model, ModelBuilder
from .urdf import xml_source
from .visuals import Visual

_EXTRA = "pip install 'rbdiff[mujoco]'"
_FREE, _BALL, _SLIDE, _HINGE = 0, 1, 2, 3          # mujoco.mjtJoint values
_KIND = {_FREE: "free_flyer", _BALL: "spherical", _SLIDE: "prismatic", _HINGE: "revolute"}
_NV = {_FREE: 6, _BALL: 3, _SLIDE: 1, _HINGE: 1}


@dataclass(frozen=True, eq=False)
class MujocoMap:
    """What relates a Model loaded from MJCF to MuJoCo's state vectors (rbdiff.mujoco
    uses it). Addresses coincide (qpos[idx_q[i]:...] is joint i's), so it keeps only:

    ``nq``, ``nv``; ``perm`` (nq,): q = qpos[perm] - offset reorders each quaternion
    from [w, x, y, z] to [x, y, z, w]; ``offset`` (nq,): qpos0 at hinge and slide
    coordinates, 0 elsewhere; ``free_q`` / ``free_v``: the first q and v index of each
    free joint (their linear velocities change frame). Read-only arrays."""

    nq: int
    nv: int
    perm: np.ndarray
    offset: np.ndarray
    free_q: np.ndarray
    free_v: np.ndarray

    @property
    def inverse_perm(self):
        """(nq,): qpos = (q + offset)[inverse_perm]."""
        return np.argsort(self.perm)


def _readonly(a, dtype=None):
    a = np.array(a, dtype=dtype)
    a.setflags(write=False)
    return a


def _import_mujoco(who="MJCF models need", extra=_EXTRA):
    """The mujoco module, or ImportError saying who needs it and the extra to install."""
    try:
        import mujoco
    except ImportError as e:
        raise ImportError(f"{who} the mujoco package: {extra}") from e
    return mujoco


def load_mjcf(path_or_xml, allow_singular=False) -> Model:
    """Compile an MJCF file path (str or Path) or XML string with MuJoCo and return the
    Model (see :func:`from_mujoco`). Raises FileNotFoundError for a missing file,
    ValueError with MuJoCo's message for a model MuJoCo refuses, ImportError naming the
    extra when mujoco is not installed."""
    return from_mujoco(_compile(_import_mujoco(), path_or_xml), allow_singular)


def _compile(mujoco, src):
    text, path = xml_source(src, "MJCF")
    if text is not None:
        try:
            return mujoco.MjModel.from_xml_string(text)
        except ValueError as e:
            raise ValueError(f"MuJoCo refused the MJCF string: {e}") from None
    try:
        return mujoco.MjModel.from_xml_path(str(path))
    except ValueError as e:
        raise ValueError(f"MuJoCo refused MJCF file {str(path)!r}: {e}") from None


def from_mujoco(mj_model, allow_singular=False) -> Model:
    """The Model of a compiled ``mujoco.MjModel`` (its masses, inertias, armature and
    gravity as MuJoCo uses them; see the module docstring for the mapping). The Model
    carries ``model.mujoco_map`` (a :class:`MujocoMap`) for rbdiff.mujoco's state
    conversions. ``allow_singular`` as in ModelBuilder.build (massless moving bodies).
    Raises ValueError for a tree rbdiff can't express."""
    mujoco = _import_mujoco()
    m = mj_model
    names = {kind: _names(mujoco, m, kind, n) for kind, n in
             (("body", m.nbody), ("joint", m.njnt), ("site", m.nsite))}
    gravity = np.zeros(3) if m.opt.disableflags & int(mujoco.mjtDisableBit.mjDSBL_GRAVITY) \
        else np.array(m.opt.gravity, dtype=float)
    b = ModelBuilder(gravity=gravity, strict=False)   # MuJoCo accepted the inertias
    joint_of = np.zeros(m.nbody, dtype=int)     # each body's rbdiff joint (0: universe)
    in_joint = [np.eye(4)] * m.nbody             # each body's placement on that joint
    body_frame = [0] * m.nbody
    body_frame[0] = _add_body(b, m, 0, 0, np.eye(4), names["body"][0], 0)
    effort = _effort_limits(m)
    for k in range(1, m.nbody):
        parent = int(m.body_parentid[k])
        j, T = int(joint_of[parent]), in_joint[parent] @ _pose(m.body_pos[k], m.body_quat[k])
        pf = body_frame[parent]
        for jid in range(m.body_jntadr[k], m.body_jntadr[k] + m.body_jntnum[k]):
            j, T = _add_joint(b, m, jid, j, T, pf, names, effort)
            pf = b.nframes - 1                   # the joint's JOINT frame
        joint_of[k], in_joint[k] = j, T
        body_frame[k] = _add_body(b, m, k, j, T, names["body"][k], pf)
    for s in range(m.nsite):
        k = int(m.site_bodyid[s])
        b.add_frame(names["site"][s], int(joint_of[k]),
                    in_joint[k] @ _pose(m.site_pos[s], m.site_quat[s]),
                    FrameType.OP_FRAME, body_frame[k])
    for g in range(m.ngeom):
        vis = _visual(m, g, body_frame[int(m.geom_bodyid[g])])
        if vis is not None:
            b.add_visual(vis)
    model = b.build(allow_singular=allow_singular)
    if not (np.array_equal(model.idx_q[1:], m.jnt_qposadr)
            and np.array_equal(model.idx_v[1:], m.jnt_dofadr)):
        raise ValueError("MuJoCo's joints are not numbered depth-first; rbdiff can't "
                         "keep their qpos / qvel addresses")
    # set once, before anyone holds the model: it stays immutable for its users
    object.__setattr__(model, "mujoco_map", _map(model, np.array(m.qpos0, dtype=float)))
    return model


_TRN_JOINT, _TRN_JOINTINPARENT = 0, 1          # mujoco.mjtTrn
_GAIN_FIXED, _BIAS_NONE, _DYN_NONE = 0, 0, 0     # mujoco.mjtGain, mjtBias, mjtDyn


def _effort_limits(m):
    """(njnt,) the upper end of the generalised force MuJoCo's actuators can put on each
    hinge or slide joint (see the module docstring); +inf where none is stated."""
    total = np.zeros(m.njnt)
    driven = np.zeros(m.njnt, bool)
    for a in range(m.nu):
        j = int(m.actuator_trnid[a, 0])
        if int(m.actuator_trntype[a]) not in (_TRN_JOINT, _TRN_JOINTINPARENT) or \
                int(m.jnt_type[j]) not in (_HINGE, _SLIDE):
            continue
        g = float(m.actuator_gear[a, 0])
        driven[j] = True
        if g == 0.0:
            continue
        if m.actuator_forcelimited[a]:
            lo, hi = m.actuator_forcerange[a]
        elif (m.actuator_ctrllimited[a] and int(m.actuator_gaintype[a]) == _GAIN_FIXED
              and int(m.actuator_biastype[a]) == _BIAS_NONE
              and int(m.actuator_dyntype[a]) == _DYN_NONE):
            lo, hi = float(m.actuator_gainprm[a, 0]) * m.actuator_ctrlrange[a]
        else:
            lo, hi = -np.inf, np.inf
        total[j] += max(g * lo, g * hi)
    total[~driven] = np.inf
    capped = np.asarray(m.jnt_actfrclimited, bool)
    total[capped] = np.minimum(total[capped], m.jnt_actfrcrange[capped, 1])
    return np.maximum(total, 0.0)


def _add_joint(b, m, jid, parent, T, parent_frame, names, effort):
    """Add MuJoCo joint ``jid`` on rbdiff joint ``parent``, where its body frame (as moved
    by the body's earlier joints) is at ``T``; returns (the new joint, the body frame's
    placement on it)."""
    jtype, name = int(m.jnt_type[jid]), names["joint"][jid]
    if jtype not in _KIND:
        raise ValueError(f"joint {name!r}: unsupported MuJoCo joint type {jtype}")
    if jtype == _FREE:
        if parent != 0:
            raise ValueError(f"joint {name!r}: a free joint below a moving body (MuJoCo "
                             "sets its pose in the world frame) is not supported")
        adr = int(m.jnt_dofadr[jid])
        arm = np.array(m.dof_armature[adr:adr + 6], dtype=float)
        if not np.all(arm[:3] == arm[0]):
            raise ValueError(f"joint {name!r}: the free joint's linear armatures differ "
                             f"({arm[:3]}); MuJoCo applies them to the world-frame "
                             "velocity, where unequal ones make rbdiff's body-frame "
                             "armature depend on q: set dof_armature equal on its first "
                             "three dofs")
        # MuJoCo's linear armature acts on the world-frame velocity (kernels/armature.py)
        return b.add_joint(0, "free_flyer", name, np.eye(4), parent_frame=0,
                           armature=arm, armature_world=True), np.eye(4)
    p = np.array(m.jnt_pos[jid], dtype=float)
    lower = upper = None
    if jtype in (_HINGE, _SLIDE):                # limits in q = qpos - qpos0
        q0 = float(m.qpos0[m.jnt_qposadr[jid]])
        lower, upper = (m.jnt_range[jid] - q0) if m.jnt_limited[jid] else (-np.inf, np.inf)
    adr = int(m.jnt_dofadr[jid])
    j = b.add_joint(parent, _KIND[jtype], name, T @ _translation(p),
                    axis=np.array(m.jnt_axis[jid], dtype=float), lower=lower, upper=upper,
                    parent_frame=parent_frame,
                    armature=m.dof_armature[adr:adr + _NV[jtype]],
                    effort=effort[jid] if jtype in (_HINGE, _SLIDE) else None)
    return j, _translation(-p)


def _add_body(b, m, k, j, T, name, parent_frame):
    """Body k's inertia and BODY frame on joint j at T; returns the frame's index."""
    R = _rot(m.body_iquat[k])
    inertia = R @ np.diag(np.array(m.body_inertia[k], dtype=float)) @ R.T
    b.append_body(j, float(m.body_mass[k]), np.array(m.body_ipos[k], dtype=float),
                  inertia, placement=T)
    return b.add_frame(name, j, T, FrameType.BODY, parent_frame)


_PLANE, _SPHERE, _CAPSULE, _ELLIPSOID, _CYLINDER, _BOX, _MESH = 0, 2, 3, 4, 5, 6, 7


def _visual(m, g, frame):
    """Geom g as a Visual on its body's BODY frame ``frame``, or None for a geom MuJoCo's
    viewer hides by default (group 3 and up, alpha 0) or one rbdiff can't draw."""
    matid = int(m.geom_matid[g])
    rgba = np.array(m.mat_rgba[matid] if matid >= 0 else m.geom_rgba[g], dtype=float)
    t, size = int(m.geom_type[g]), np.array(m.geom_size[g], dtype=float)
    if m.geom_group[g] > 2 or rgba[3] == 0.0:
        return None
    kw = {}
    if t == _PLANE:             # size: half extents, 0 for an infinite plane
        shape, size = "box", [2 * size[0] or 20.0, 2 * size[1] or 20.0, 1e-3]
    elif t == _SPHERE:
        shape, size = "sphere", size[:1]
    elif t in (_CAPSULE, _CYLINDER):
        shape, size = ("capsule" if t == _CAPSULE else "cylinder"), [size[0], 2 * size[1]]
    elif t == _ELLIPSOID:
        shape = "ellipsoid"
    elif t == _BOX:
        shape, size = "box", 2 * size
    elif t == _MESH:
        k = int(m.geom_dataid[g])
        v0, nv = int(m.mesh_vertadr[k]), int(m.mesh_vertnum[k])
        f0, nf = int(m.mesh_faceadr[k]), int(m.mesh_facenum[k])
        shape, size = "mesh", [1.0, 1.0, 1.0]
        kw = dict(vertices=m.mesh_vert[v0:v0 + nv], faces=m.mesh_face[f0:f0 + nf])
    else:                       # height field, SDF
        return None
    return Visual(_mujoco_name(m, "geom", g), frame, _pose(m.geom_pos[g], m.geom_quat[g]),
                  shape, size, tuple(rgba), **kw)


def _mujoco_name(m, kind, i):
    """MuJoCo's name of object ``i`` of ``kind``, or ``<kind><i>`` when it has none."""
    mujoco = _import_mujoco()
    obj = getattr(mujoco.mjtObj, f"mjOBJ_{kind.upper()}")
    return mujoco.mj_id2name(m, obj, i) or f"{kind}{i}"


def _names(mujoco, m, kind, n):
    """MuJoCo's names of the n objects of ``kind``; ``<kind><id>`` for unnamed ones."""
    obj = getattr(mujoco.mjtObj, f"mjOBJ_{kind.upper()}")
    given = [mujoco.mj_id2name(m, obj, i) or None for i in range(n)]
    taken = set(given)
    out = []
    for i, name in enumerate(given):
        if name is None:
            name = f"{kind}{i}"
            while name in taken:
                name += "_"
            taken.add(name)
        out.append(name)
    return out


def _map(model, qpos0):
    perm = np.arange(model.nq)
    offset = np.zeros(model.nq)
    free_q, free_v = [], []
    for i in range(1, model.njoints):
        t, iq = int(model.joint_types[i]), int(model.idx_q[i])
        if t in (L.REVOLUTE, L.PRISMATIC):
            offset[iq] = qpos0[iq]
        elif t == L.SPHERICAL:
            perm[iq:iq + 4] = iq + np.array([1, 2, 3, 0])
        elif t == L.FREE_FLYER:
            perm[iq + 3:iq + 7] = iq + np.array([4, 5, 6, 3])
            free_q.append(iq)
            free_v.append(int(model.idx_v[i]))
    return MujocoMap(model.nq, model.nv, _readonly(perm), _readonly(offset),
                     _readonly(free_q, np.int64), _readonly(free_v, np.int64))


def _rot(wxyz):
    """Rotation matrix of a MuJoCo quaternion [w, x, y, z]."""
    w, x, y, z = np.asarray(wxyz, dtype=float)
    return quat_to_rot(np.array([x, y, z, w]))


def _pose(pos, wxyz):
    T = np.eye(4)
    T[:3, :3] = _rot(wxyz)
    T[:3, 3] = pos
    return T


def _translation(p):
    T = np.eye(4)
    T[:3, 3] = p
    return T
