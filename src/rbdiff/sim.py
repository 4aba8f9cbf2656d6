"""Simulation: a MuJoCo plant for any rbdiff Model, to close a control loop on.

``rbdiff.sim`` holds what runs a controller against a physics engine rather than what
computes dynamics (the rest of rbdiff); today that is :class:`Plant`, the model's robot in
MuJoCo with a floor and point feet, stepped with rbdiff-ordered torques and read back in
rbdiff's state conventions. (``rbdiff.mujoco`` only converts states of a Model that was
loaded from MJCF; this module compiles a MuJoCo model from any Model.)

How the robot reaches MuJoCo: an MJCF written from the rbdiff Model itself (one body per
joint at its placement, the joint at the body's origin, the Model's masses, centres of
mass and full inertias, its armature and gravity; a massless hinge or slide whose only
child is one too shares that child's body, as MuJoCo's joints-in-one-body, since MuJoCo
refuses massless moving bodies), not the URDF compiled by MuJoCo (``MjSpec`` on the
URDF text). Because:

- it works for every Model: ``load_robot`` / ``load_urdf`` / ``load_mjcf`` / hand-built,
  reduced or re-armatured ones, which carry no URDF (or not the one they were made from);
- it is the same robot by construction (the tests hold mj_fullM and qfrc_bias to crba and
  nonlinear_effects to rounding, ~1e-15 relative), where MuJoCo's URDF compiler fuses
  fixed links, reads inertias its own way and needs example-robot-data's ``package://``
  mesh paths resolved;
- only the feet must collide, and they get spheres at the named frames (or boxes:
  ``sole``): no meshes.

The plant: a plane at z = 0 (``floor=True``), a sphere of ``foot_radius`` at each foot
frame (default: the radius of a sphere visual centred on that frame, else 0.02 m) that
collides with the floor only; nothing else collides. Contacts: elliptic friction cones,
condim 3, friction ``mu`` (0.7). ``noslip_iterations`` (default 10): MuJoCo's soft
contacts let a standing robot's feet slide slowly, and its noslip pass removes that
drift. Measured standing 5 s on a joint PD at the "standing" configuration, 1 ms steps,
the largest horizontal foot travel (in brackets: after the first 0.5 s of settling):
solo12 27.2 mm (21.9) without noslip, 0.93 mm (0.02) with; go2 20.0 mm (14.6) without,
1.86 mm (0.72) with. The pass converges in 2-5 iterations there (1 leaves go2 drifting
2.2 mm) and stops at ``noslip_tolerance``, so a cap of 10 costs no more than needed.
A free flyer (the model's root joint) becomes a free joint; every other dof is driven
by a motor (gear 1; three for a ball joint) whose ``ctrlrange`` is the model's
``effort_limits`` where finite; hinges and slides keep the model's position limits
(``joint_limits=True``).

Flat feet (a biped's soles): ``sole=(length, width)`` makes each foot a box of that
length (along the foot frame's x) and width (y), ``2 foot_radius`` thick, centred on the
frame and aligned with it; MuJoCo's box-plane collision gives four corner contacts per
sole, which resist tipping and twisting. The frame then stands ``foot_radius`` above the
floor, as a sphere's centre does.

The state map goes by joint names: ``plant.state()`` is (q, v) in rbdiff's conventions
(free flyer q = [x, y, z, qx, qy, qz, qw], v its body-frame twist; MuJoCo's free joint
has a [w, x, y, z] quaternion and a world-frame linear velocity, see rbdiff.mujoco) and
``plant.set_state(q, v)`` its inverse. ``plant.step(tau)`` takes the actuated dofs'
torques in rbdiff's order (nv - 6 with a free flyer, nv otherwise), clipped to the
limits. Importing this module does not import mujoco; making a Plant does.
"""

from __future__ import annotations

import difflib
import math
import xml.etree.ElementTree as ET

import numpy as np

from .model import layout as L
from .model.mjcf import _import_mujoco as import_mujoco
from .mujoco import JointMap, _free_rotation

__all__ = ["Plant"]

_EXTRA = "pip install 'rbdiff[sim]'"
_NEEDS = "rbdiff.sim's plant needs"
_DEFAULT_FOOT_RADIUS = 0.02


def _num(x):
    return repr(float(x))


def _nums(xs):
    return " ".join(_num(x) for x in np.ravel(xs))


class Plant:
    """The robot of ``model`` (an rbdiff Model) compiled by MuJoCo, on a floor, with point
    feet at the frames named in ``feet`` (see the module docstring).

    Parameters: ``feet`` (frame names; may be empty), ``floor`` (add the plane z = 0),
    ``timestep`` (s), ``foot_radius`` (m; None: from the foot's sphere visual, else 0.02;
    a box sole's half thickness), ``sole`` (None: spheres; (length, width) in m: box
    soles centred on the foot frames, along their x and y axes),
    ``mu`` (friction), ``noslip_iterations``, ``joint_limits`` (keep hinge / slide
    position limits), ``nominal_height`` (the base height :meth:`fallen` compares with;
    None: the base z of ``model.reference_configurations['standing']`` (else
    ``['half_sitting']``, a biped's) when there is one, else that of the first
    :meth:`set_state`).

    Attributes: ``model``, ``mj_model``, ``mj_data``, ``xml`` (the MJCF compiled),
    ``feet``, ``foot_radius``, ``sole`` (None or (length, width)), ``mu``, ``nu`` (actuated
    dofs, tau's length), ``effort_limits`` (nu,), ``actuated_dofs`` (nu,: the rbdiff
    velocity index each torque drives), ``has_free_flyer``.
    """

    def __init__(self, model, feet=(), floor=True, timestep=1e-3, foot_radius=None,
                 mu=0.7, noslip_iterations=10, joint_limits=True, nominal_height=None,
                 sole=None):
        mujoco = import_mujoco(_NEEDS, _EXTRA)
        self.model = model
        if isinstance(feet, str):
            feet = (feet,)
        self.feet = tuple(feet)
        self._foot_frames = [_frame_id(model, name) for name in self.feet]
        radii = np.broadcast_to(np.asarray(
            [_foot_radius(model, k) for k in self._foot_frames] if foot_radius is None
            else foot_radius, dtype=float), (len(self.feet),))
        if np.any(~np.isfinite(radii)) or np.any(radii <= 0):
            raise ValueError(f"foot_radius: expected positive radii, got {foot_radius!r}")
        self.foot_radius = radii.copy()
        self.sole = None
        if sole is not None:
            lw = np.asarray(sole, dtype=float)
            if lw.shape != (2,) or not np.all(np.isfinite(lw)) or np.any(lw <= 0):
                raise ValueError(f"sole: expected (length, width), two positive lengths "
                                 f"in m, got {sole!r}")
            self.sole = (float(lw[0]), float(lw[1]))
        if not (timestep > 0 and math.isfinite(timestep)):
            raise ValueError(f"timestep: expected a positive time, got {timestep!r}")
        if not (mu >= 0 and math.isfinite(mu)):
            raise ValueError(f"mu: expected a non-negative friction, got {mu!r}")
        self.mu = float(mu)
        self._check_joints()
        self.xml = self._write(floor, timestep, mu, int(noslip_iterations), joint_limits)
        self.mj_model = mujoco.MjModel.from_xml_string(self.xml)
        self._map_indices(mujoco)
        self.mj_model.dof_armature[:] = np.asarray(model.armature)[self._v_rb_of_mj]
        mujoco.mj_setConst(self.mj_model, mujoco.MjData(self.mj_model))
        self.mj_data = mujoco.MjData(self.mj_model)
        self._mujoco = mujoco
        self._foot_geoms = np.array([mujoco.mj_name2id(
            self.mj_model, mujoco.mjtObj.mjOBJ_GEOM, self._geom_name(k))
            for k in range(len(self.feet))], dtype=int)
        self._floor_geom = mujoco.mj_name2id(self.mj_model, mujoco.mjtObj.mjOBJ_GEOM,
                                             "floor") if floor else -1
        refs = model.reference_configurations
        ref = refs.get("standing", refs.get("half_sitting"))
        if nominal_height is None and self.has_free_flyer and ref is not None:
            nominal_height = float(ref[self._free_q + 2])
        self.nominal_height = nominal_height
        q0 = np.asarray(model._neutral) if ref is None else np.asarray(ref)
        self.set_state(q0, np.zeros(model.nv))

    # -- the MJCF ---------------------------------------------------------------------
    def _check_joints(self):
        m = self.model
        self.has_free_flyer = False
        self._free_joint = 0
        for i in range(1, m.njoints):
            if int(m.joint_types[i]) != L.FREE_FLYER:
                continue
            if int(m.parents[i]) != 0 or not np.allclose(m.placements[i], np.eye(4),
                                                         rtol=0, atol=1e-15):
                raise ValueError(f"joint {m.names[i]!r}: a free flyer maps to MuJoCo's "
                                 "free joint only as a root joint at the world's origin")
            if self.has_free_flyer:
                raise ValueError("the plant maps one free flyer, the model has several")
            iv = int(m.idx_v[i])
            arm = np.asarray(m.armature[iv:iv + 6])
            if np.any(arm) and not (m.armature_world[i] and np.all(arm == arm[0])):
                raise ValueError(
                    f"joint {m.names[i]!r}: MuJoCo's free joint has one armature on its "
                    "six dofs, on the world-frame linear velocity (model.armature_world); "
                    f"this model's free-flyer armature {arm} is not that")
            self.has_free_flyer = True
            self._free_joint = i
            self._free_q, self._free_v = int(m.idx_q[i]), iv
        for i in range(1, m.njoints):
            if int(m.joint_types[i]) == L.SPHERICAL:
                iv = int(m.idx_v[i])
                arm = np.asarray(m.armature[iv:iv + 3])
                if not np.all(arm == arm[0]):
                    raise ValueError(f"joint {m.names[i]!r}: MuJoCo's ball joint has one "
                                     f"armature on its three dofs, this model has {arm}")

    def _geom_name(self, k):
        return f"foot:{self.feet[k]}"

    def _write(self, floor, timestep, mu, noslip, joint_limits):
        m = self.model
        root = ET.Element("mujoco", model="rbdiff_plant")
        ET.SubElement(root, "compiler", angle="radian", inertiafromgeom="false",
                      autolimits="true")
        ET.SubElement(root, "option", timestep=_num(timestep), gravity=_nums(m.gravity),
                      cone="elliptic", noslip_iterations=str(noslip))
        world = ET.SubElement(root, "worldbody")
        friction = f"{_num(mu)} 0.005 0.0001"
        if floor:
            ET.SubElement(world, "geom", name="floor", type="plane", size="0 0 1",
                          contype="0", conaffinity="1", condim="3", friction=friction)
        feet_on = {}
        for k, fid in enumerate(self._foot_frames):
            feet_on.setdefault(int(m.frames[fid].parent), []).append(k)
        children = {i: [] for i in range(m.njoints)}
        for i in range(1, m.njoints):
            children[int(m.parents[i])].append(i)
        # MuJoCo refuses a moving body without mass: a massless hinge / slide with one
        # child hinge / slide (e.g. one of the chain rbd.load_mjcf makes of a body with
        # several joints) shares its child's body, MuJoCo's joints-in-one-body. C[i]:
        # joint i's frame (at zero motion) in its MuJoCo body's frame.
        hinge = (L.REVOLUTE, L.PRISMATIC, L.REVOLUTE_UNBOUNDED)
        bodies, C = {0: world}, {0: np.eye(4)}
        for i in range(1, m.njoints):          # parents come first
            p, t, name = int(m.parents[i]), int(m.joint_types[i]), m.names[i]
            if p > 0 and t in hinge and int(m.joint_types[p]) in hinge and \
                    len(children[p]) == 1 and m.masses[p] == 0 and \
                    not np.any(m.inertias[p]):
                body, Ci = bodies[p], C[p] @ np.asarray(m.placements[i])
            else:
                body, Ci = ET.SubElement(bodies[p], "body", name=name), np.eye(4)
                if t != L.FREE_FLYER:
                    T = C[p] @ np.asarray(m.placements[i])
                    body.set("pos", _nums(T[:3, 3]))
                    body.set("quat", _nums(_mat2quat(T[:3, :3])))
            bodies[i], C[i] = body, Ci
            if t == L.FREE_FLYER:
                ET.SubElement(body, "joint", name=name, type="free")
            elif t == L.SPHERICAL:
                ET.SubElement(body, "joint", name=name, type="ball")
            else:
                j = ET.SubElement(body, "joint", name=name,
                                  type="slide" if t == L.PRISMATIC else "hinge",
                                  axis=_nums(Ci[:3, :3] @ m.axes[i]))
                if Ci[:3, 3].any():
                    j.set("pos", _nums(Ci[:3, 3]))
                iq = int(m.idx_q[i])
                lo, hi = m.lower_limits[iq], m.upper_limits[iq]
                if joint_limits and t != L.REVOLUTE_UNBOUNDED and np.isfinite(lo) \
                        and np.isfinite(hi) and lo < hi:
                    j.set("range", _nums([lo, hi]))
            mass = float(m.masses[i])
            if mass > 0:
                R = Ci[:3, :3]
                I = R @ np.asarray(m.inertias[i]) @ R.T
                ET.SubElement(body, "inertial", pos=_nums(R @ m.coms[i] + Ci[:3, 3]),
                              mass=_num(mass), fullinertia=_nums(
                                  [I[0, 0], I[1, 1], I[2, 2], I[0, 1], I[0, 2], I[1, 2]]))
            for k in feet_on.get(i, ()):
                T = Ci @ np.asarray(m.frames[self._foot_frames[k]].placement)
                geom = ET.SubElement(body, "geom", name=self._geom_name(k), type="sphere",
                                     size=_num(self.foot_radius[k]), pos=_nums(T[:3, 3]),
                                     contype="1", conaffinity="0", condim="3",
                                     friction=friction, mass="0")
                if self.sole is not None:       # a box along the foot frame's axes
                    geom.set("type", "box")
                    geom.set("size", _nums([self.sole[0] / 2, self.sole[1] / 2,
                                            self.foot_radius[k]]))
                    geom.set("quat", _nums(_mat2quat(T[:3, :3])))
        act = ET.SubElement(root, "actuator")
        lim = np.asarray(getattr(m, "effort_limits", np.full(m.nv, np.inf)), dtype=float)
        self.actuated_dofs = np.array([iv for iv in range(m.nv) if not (
            self.has_free_flyer and self._free_v <= iv < self._free_v + 6)], dtype=int)
        self.nu = len(self.actuated_dofs)
        self.effort_limits = lim[self.actuated_dofs].copy()
        for iv in self.actuated_dofs:
            i = int(m.joint_of_dof[iv])
            gear = "1"
            if int(m.joint_types[i]) == L.SPHERICAL:
                gear = _nums(np.eye(3)[iv - int(m.idx_v[i])])
            mot = ET.SubElement(act, "motor", name=f"{m.names[i]}:{iv}", joint=m.names[i],
                                gear=gear)
            if np.isfinite(lim[iv]):
                mot.set("ctrlrange", _nums([-lim[iv], lim[iv]]))
        ET.indent(root)
        return ET.tostring(root, encoding="unicode")

    def _map_indices(self, mujoco):
        """The state map (rbdiff.mujoco.JointMap: by joint names, as for any MuJoCo
        model of the robot), the free joint's dof address, and the actuators' order."""
        m, mm = self.model, self.mj_model
        self._map = JointMap(m, mm)
        self._v_rb_of_mj = self._map.dof_of_mj
        if self.has_free_flyer:
            self._free_dof = self._map.free[3]
        # the actuators in MuJoCo's order drive tau[_ctrl_tau]
        tau_of_dof = {int(iv): k for k, iv in enumerate(self.actuated_dofs)}
        self._ctrl_tau = np.array([tau_of_dof[int(mujoco.mj_id2name(
            mm, mujoco.mjtObj.mjOBJ_ACTUATOR, u).rsplit(":", 1)[1])]
            for u in range(mm.nu)], dtype=int)
        self._ctrl_lo = np.asarray(mm.actuator_ctrlrange[:, 0]).copy()
        self._ctrl_hi = np.asarray(mm.actuator_ctrlrange[:, 1]).copy()
        free = ~np.asarray(mm.actuator_ctrllimited, bool)
        self._ctrl_lo[free], self._ctrl_hi[free] = -np.inf, np.inf

    # -- states -----------------------------------------------------------------------
    def to_mujoco(self, q, v=None, a=None):
        """rbdiff's (q, v, a) as MuJoCo's (qpos, qvel, qacc) for this plant (v, a may be
        None; a needs v: a free joint's acceleration has a velocity-product term)."""
        m = self.model
        return self._map.to_mujoco(_vec(q, m.nq, "q"),
                                   None if v is None else _vec(v, m.nv, "v"),
                                   None if a is None else _vec(a, m.nv, "a"))

    def to_rbdiff(self, qpos, qvel=None):
        """MuJoCo's (qpos, qvel) of this plant as rbdiff's (q, v) (v None when qvel is)."""
        mm = self.mj_model
        return self._map.to_rbdiff(_vec(qpos, mm.nq, "qpos"),
                                   None if qvel is None else _vec(qvel, mm.nv, "qvel"))[:2]

    def _rotation(self, q):
        return _free_rotation(q, self._free_q)

    def state(self):
        """(q (nq,), v (nv,)): the plant's state in rbdiff's conventions."""
        return self.to_rbdiff(self.mj_data.qpos, self.mj_data.qvel)

    def set_state(self, q, v=None):
        """Set the plant to rbdiff's (q, v) (v None: at rest) and run mj_forward (so
        contacts and :meth:`foot_forces` are those of this state)."""
        q = _vec(q, self.model.nq, "q")
        if not np.all(np.isfinite(q)):
            raise ValueError("q: not finite")
        v = np.zeros(self.model.nv) if v is None else v
        qpos, qvel, _ = self.to_mujoco(q, v)
        if not np.all(np.isfinite(qvel)):
            raise ValueError("v: not finite")
        d = self.mj_data
        d.qpos[:], d.qvel[:] = qpos, qvel
        d.ctrl[:] = 0.0
        if self.nominal_height is None and self.has_free_flyer:
            self.nominal_height = float(q[self._free_q + 2])
        self._mujoco.mj_forward(self.mj_model, d)

    @property
    def time(self):
        """Simulated time (s)."""
        return float(self.mj_data.time)

    # -- acting -----------------------------------------------------------------------
    def clip(self, tau):
        """tau (nu,) clipped to the effort limits."""
        return np.clip(tau, -self.effort_limits, self.effort_limits)

    def step(self, tau, n=1):
        """Apply the joint torques tau (nu,: the actuated dofs, rbdiff's order; clipped to
        the effort limits) for ``n`` MuJoCo steps."""
        tau = np.asarray(tau, dtype=float)
        if tau.shape != (self.nu,):
            free = " (nv - 6: the free flyer is not actuated)" if self.has_free_flyer \
                else ""
            raise ValueError(f"tau: expected {self.nu} joint torques{free}, one per "
                             f"actuated dof in rbdiff's order, got shape {tau.shape}")
        if not np.all(np.isfinite(tau)):
            bad = [self.model.names[int(self.model.joint_of_dof[self.actuated_dofs[k]])]
                   for k in np.flatnonzero(~np.isfinite(tau))]
            raise ValueError(f"tau: not finite at joints {bad}")
        self.mj_data.ctrl[:] = np.clip(tau[self._ctrl_tau], self._ctrl_lo, self._ctrl_hi)
        for _ in range(int(n)):
            self._mujoco.mj_step(self.mj_model, self.mj_data)

    def push(self, dv_base):
        """Add a velocity change to the base (world frame): dv_base (3,) linear, or (6,)
        [linear, angular], as an impulse would; the free flyer's state changes, the
        joints' not."""
        if not self.has_free_flyer:
            raise ValueError("push: the model has no free flyer (a fixed base)")
        dv = np.asarray(dv_base, dtype=float)
        if dv.shape not in ((3,), (6,)) or not np.all(np.isfinite(dv)):
            raise ValueError(f"dv_base: expected 3 or 6 finite numbers (world frame), got "
                             f"{dv_base!r}")
        d, a = self.mj_data, self._free_dof
        d.qvel[a:a + 3] += dv[:3]                           # MuJoCo: world-frame linear
        if dv.shape == (6,):
            q, _ = self.state()
            d.qvel[a + 3:a + 6] += self._rotation(q).T @ dv[3:]   # body-frame angular
        self._mujoco.mj_forward(self.mj_model, d)

    # -- reading ----------------------------------------------------------------------
    def foot_positions(self):
        """(nfeet, 3) world positions of the foot spheres' (or soles') centres (the foot
        frames)."""
        return np.array(self.mj_data.geom_xpos[self._foot_geoms])

    def foot_forces(self):
        """(nfeet, 3) world-frame contact force on each foot (normal and friction; from
        the last step's, or set_state's, contacts)."""
        mujoco, d = self._mujoco, self.mj_data
        out = np.zeros((len(self.feet), 3))
        which = {int(g): k for k, g in enumerate(self._foot_geoms)}
        f6 = np.zeros(6)
        for c in range(d.ncon):
            con = d.contact[c]
            g1, g2 = int(con.geom1), int(con.geom2)
            k, sign = (which[g2], 1.0) if g2 in which else \
                (which[g1], -1.0) if g1 in which else (None, 0.0)
            if k is None:
                continue
            mujoco.mj_contactForce(self.mj_model, d, c, f6)   # on geom2, contact frame
            out[k] += sign * (np.asarray(con.frame).reshape(3, 3).T @ f6[:3])
        return out

    def base_pose(self):
        """(position (3,), rotation (3, 3)) of the free-flyer's frame in the world."""
        if not self.has_free_flyer:
            raise ValueError("base_pose: the model has no free flyer (a fixed base)")
        q, _ = self.state()
        return q[self._free_q:self._free_q + 3].copy(), self._rotation(q)

    def fallen(self, height_fraction=0.5, max_tilt=math.pi / 4):
        """True when the base is below ``height_fraction`` of ``nominal_height`` or its
        roll or pitch (ZYX Euler angles) exceeds ``max_tilt`` (rad) in magnitude. A fixed
        base never falls."""
        if not self.has_free_flyer:
            return False
        p, R = self.base_pose()
        roll = math.atan2(R[2, 1], R[2, 2])
        pitch = math.asin(max(-1.0, min(1.0, -R[2, 0])))
        return bool(p[2] < height_fraction * self.nominal_height
                    or abs(roll) > max_tilt or abs(pitch) > max_tilt)

    def __repr__(self):
        return (f"Plant({self.model!r}, feet={self.feet}, nu={self.nu}, "
                f"timestep={self.mj_model.opt.timestep})")


def _frame_id(model, name):
    try:
        return model.get_frame_id(name)
    except KeyError:
        close = difflib.get_close_matches(str(name), [f.name for f in model.frames], n=5,
                                          cutoff=0.5)
        raise KeyError(f"feet: no frame named {name!r} in the model; close matches: "
                       f"{close}" if close else f"feet: no frame named {name!r} in the "
                       "model (see model.frames)") from None


def _foot_radius(model, fid):
    """The radius of a sphere visual centred on frame ``fid``'s origin (on the same
    joint), else the default."""
    f = model.frames[fid]
    at = np.asarray(f.placement)[:3, 3]
    for vis in model.visuals:
        g = model.frames[vis.frame]
        if vis.shape == "sphere" and g.parent == f.parent and np.allclose(
                (np.asarray(g.placement) @ np.asarray(vis.placement))[:3, 3], at,
                rtol=0, atol=1e-9):
            return float(vis.size[0])
    return _DEFAULT_FOOT_RADIUS


def _vec(x, n, what):
    x = np.asarray(x, dtype=float)
    if x.shape != (n,):
        raise ValueError(f"{what}: expected shape ({n},), got {x.shape}")
    return x


def _mat2quat(R):
    """MuJoCo's [w, x, y, z] of a rotation matrix."""
    mujoco = import_mujoco(_NEEDS, _EXTRA)
    out = np.zeros(4)
    mujoco.mju_mat2Quat(out, np.ascontiguousarray(R, dtype=float).ravel())
    return out
