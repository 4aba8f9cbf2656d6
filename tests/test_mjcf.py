"""MJCF import (rbdiff/model/mjcf.py) and MuJoCo state mapping (rbdiff/mujoco.py), with
MuJoCo itself as the oracle: with everything but the rigid-body tree switched off,
mj_inverse == rnea, mj_fullM == crba and mj_forward == aba through the mapping, and
frames == xpos/xmat, site_xpos/site_xmat after mj_kinematics."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")

import rbdiff as rbd  # noqa: E402
from rbdiff import mujoco as rm  # noqa: E402
from conftest import full_inertia, hide_module  # noqa: E402
from rbdiff.model.model import FrameType  # noqa: E402

TOL = 1e-10

# free body with children: a ball joint, a body with three joints (hinge and slide with
# ref, anchors off the body origin, armature), a welded body, sites; names left out on
# purpose (generated), and a body named like a generated name; inertias from geoms and
# from defaults
TREE = """
<mujoco model="tree">
  <option gravity="0.3 -0.2 -7"/>
  <default>
    <joint armature="0.01"/>
    <geom type="capsule" size="0.04" density="800"/>
    <default class="heavy"><geom density="3000"/></default>
  </default>
  <worldbody>
    <geom type="plane" size="5 5 0.1"/>
    <body name="static" pos="0 0 0.3" euler="10 0 0">
      <geom type="box" size="0.1 0.1 0.1"/>
      <site name="on_static" pos="0.1 0 0"/>
    </body>
    <body name="torso" pos="0 0 1" quat="0.9 0.1 0.2 0.3">
      <freejoint name="root"/>
      <geom fromto="-0.2 0 0 0.2 0.05 0" class="heavy"/>
      <site name="imu" pos="0.05 0.01 0" euler="0 30 0"/>
      <body name="shoulder" pos="0.2 0.1 0" euler="0 0 40">
        <joint type="ball" pos="0 0 0.05" armature="0.02"/>
        <geom fromto="0 0 0 0 0 -0.3"/>
        <body name="elbow" pos="0 0 -0.3">
          <joint name="e1" type="hinge" axis="0 1 0" pos="0 0.02 0.01" ref="20"
                 range="-30 60" limited="true"/>
          <joint name="e2" type="slide" axis="0.3 0 1" pos="0.01 0 0" ref="0.05"/>
          <joint name="e3" type="hinge" axis="1 0 0" pos="0 0 -0.05" armature="0.5"/>
          <geom fromto="0 0 0 0.3 0 0" class="heavy"/>
          <site pos="0.3 0 0"/>
          <body pos="0.3 0 0" euler="0 40 0">
            <geom type="sphere" size="0.05" pos="0.02 0 0"/>
            <site name="tip" pos="0.05 0 0"/>
          </body>
        </body>
      </body>
      <body name="body7" pos="-0.2 0 0">
        <joint type="slide" axis="0 0 1"/>
        <joint type="hinge" axis="0 1 0" pos="0 0 -0.1"/>
        <geom fromto="0 0 0 0 0 -0.3"/>
      </body>
    </body>
    <body pos="1 0 0">
      <joint type="hinge" axis="0 0 1"/>
      <inertial pos="0.1 0 0" mass="2" fullinertia="0.1 0.2 0.25 0.01 0.02 0.03"/>
    </body>
  </worldbody>
</mujoco>
"""

PENDULUM = """
<mujoco>
  <compiler angle="radian"/>
  <option><flag gravity="disable"/></option>
  <worldbody>
    <body name="link1"><joint name="j1" axis="0 1 0" ref="0.4"/>
      <geom type="capsule" fromto="0 0 0 0 0 -1" size="0.05"/>
      <body name="link2" pos="0 0 -1"><joint name="j2" axis="0 1 0"/>
        <geom type="capsule" fromto="0 0 0 0 0 -1" size="0.05"/>
      </body>
    </body>
  </worldbody>
</mujoco>
"""


# a mobile manipulator's shape: a free base with armature (MuJoCo adds it to the
# world-frame linear velocity: rbdiff's armature_world), hinge, ball and slide joints with
# armature of their own
FREE_ARMATURE = """
<mujoco model="free_armature">
  <option gravity="0.1 0.2 -9.81"/>
  <default><geom type="capsule" size="0.04" density="900"/></default>
  <worldbody>
    <body name="base" pos="0 0 1" quat="0.8 0.2 0.3 0.1">
      <joint name="root" type="free" armature="0.01"/>
      <geom type="box" size="0.2 0.1 0.05"/>
      <body name="arm" pos="0.2 0 0">
        <joint name="j1" type="hinge" axis="0 0 1" armature="0.05"/>
        <geom fromto="0 0 0 0.3 0 0"/>
        <body name="wrist" pos="0.3 0 0">
          <joint name="j2" type="ball" armature="0.02"/>
          <geom fromto="0 0 0 0 0 -0.3"/>
          <body name="finger" pos="0 0 -0.3">
            <joint name="j3" type="slide" axis="0 1 0" armature="0.1"/>
            <geom type="sphere" size="0.05"/>
          </body>
        </body>
      </body>
    </body>
  </worldbody>
</mujoco>
"""


def _gym_assets():
    spec = importlib.util.find_spec("gymnasium")
    if spec is None or spec.origin is None:
        return []
    return sorted((Path(spec.origin).parent / "envs" / "mujoco" / "assets").glob("*.xml"))


MODELS = ([pytest.param(p, id=f"gym-{p.stem}") for p in _gym_assets()]
          + [pytest.param(Path(mujoco.__file__).parent / "testdata" / "model.xml",
                          id="mujoco-testdata"),
             pytest.param(TREE, id="tree"), pytest.param(PENDULUM, id="pendulum"),
             pytest.param(FREE_ARMATURE, id="free-armature")])


def _compile(src):
    if isinstance(src, Path):
        return mujoco.MjModel.from_xml_path(str(src))
    return mujoco.MjModel.from_xml_string(src)


def random_state(m, rng):
    """Random (qpos, qvel, qacc) in MuJoCo's coordinates, quaternions normalised."""
    free, ball = int(mujoco.mjtJoint.mjJNT_FREE), int(mujoco.mjtJoint.mjJNT_BALL)
    qpos = m.qpos0 + 0.5 * rng.normal(size=m.nq)
    for j in range(m.njnt):
        a = m.jnt_qposadr[j] + (3 if m.jnt_type[j] == free else 0)
        if m.jnt_type[j] in (free, ball):
            qpos[a:a + 4] /= np.linalg.norm(qpos[a:a + 4])
    return qpos, rng.normal(size=m.nv), rng.normal(size=m.nv)


def rel(x, y):
    return np.max(np.abs(x - y), initial=0.0) / max(np.max(np.abs(y), initial=0.0), 1e-300)


def _frames_of(model, ftype):
    return [k for k, f in enumerate(model.frames) if f.type == ftype]


@pytest.mark.parametrize("src", MODELS)
def test_dynamics_and_frames_match_mujoco(src):
    m = rm.rigid_body_only(_compile(src))
    model = rbd.from_mujoco(m)
    d = mujoco.MjData(m)
    rng = np.random.default_rng(0)
    assert (model.nq, model.nv, model.njoints) == (m.nq, m.nv, m.njnt + 1)
    bodies, sites = _frames_of(model, FrameType.BODY), _frames_of(model, FrameType.OP_FRAME)
    assert (len(bodies), len(sites)) == (m.nbody, m.nsite)
    for _ in range(2):
        qpos, qvel, qacc = random_state(m, rng)
        q, v, a = rm.to_rbdiff(model, qpos, qvel, qacc)
        d.qpos[:], d.qvel[:], d.qacc[:] = qpos, qvel, qacc
        mujoco.mj_inverse(m, d)
        assert rel(rm.force_to_mujoco(model, q, rbd.rnea(model, q, v, a)),
                   d.qfrc_inverse) < TOL

        d.qfrc_applied[:] = rng.normal(size=m.nv)
        mujoco.mj_forward(m, d)
        M = full_inertia(m, d)
        # J: qvel = J v (the velocity map is linear in v at fixed q)
        J = rm.to_mujoco(model, np.broadcast_to(q, (m.nv, m.nq)), np.eye(m.nv))[1].T
        assert rel(J @ rbd.crba(model, q) @ J.T, M) < TOL
        tau = rm.force_to_rbdiff(model, qpos, d.qfrc_applied)
        assert rel(rm.to_mujoco(model, q, v, rbd.aba(model, q, v, tau))[2], d.qacc) < TOL

        F = rbd.frame_placements(model, q)
        for k, x, R in [(bodies, d.xpos, d.xmat), (sites, d.site_xpos, d.site_xmat)]:
            np.testing.assert_allclose(F[k][:, :3, 3], x, atol=1e-12, rtol=0)
            np.testing.assert_allclose(F[k][:, :3, :3], R.reshape(-1, 3, 3), atol=1e-12,
                                       rtol=0)


def test_tree_structure():
    m = _compile(TREE)
    model = rbd.load_mjcf(TREE)
    types = [model.joint_type_name(i) for i in range(1, model.njoints)]
    assert types == ["free_flyer", "spherical", "revolute", "prismatic", "revolute",
                     "prismatic", "revolute", "revolute"]
    assert model.names[1:] == ("root", "joint1", "e1", "e2", "e3", "joint5", "joint6",
                               "joint7")
    names = [model.frames[k].name for k in _frames_of(model, FrameType.BODY)]
    assert names == ["world", "static", "torso", "shoulder", "elbow", "body5", "body7",
                     "body7_"]
    assert [model.frames[k].name for k in _frames_of(model, FrameType.OP_FRAME)] == [
        "on_static", "imu", "site2", "tip"]
    # the static body stays on the universe; the welded tip body on e3
    assert model.frames[model.get_frame_id("static")].parent == 0
    assert model.frames[model.get_frame_id("body5")].parent == model.get_joint_id("e3")
    np.testing.assert_allclose(model.armature, m.dof_armature, rtol=0, atol=0)
    np.testing.assert_allclose(model.gravity, [0.3, -0.2, -7])
    np.testing.assert_allclose(model.masses.sum(), m.body_mass.sum(), rtol=1e-14)
    assert model.masses[0] == m.body_mass[1] > 0     # the static box is the universe's
    e1 = model.idx_q[model.get_joint_id("e1")]
    np.testing.assert_allclose([model.lower_limits[e1], model.upper_limits[e1]],
                               np.radians([-30 - 20, 60 - 20]), rtol=1e-14)
    e2 = model.idx_q[model.get_joint_id("e2")]
    assert model.lower_limits[e2] == -np.inf and model.upper_limits[e2] == np.inf
    mp = model.mujoco_map
    np.testing.assert_allclose(mp.offset[[e1, e2]], [np.radians(20), 0.05], rtol=1e-14)


def test_free_joint_armature_matches_mujoco():
    """MuJoCo's free-joint armature acts on its world-frame linear velocity: rbdiff's
    armature_world model matches mj_inverse and mj_forward (as every model above), the
    same model in Pinocchio's convention (armature on the body-frame velocity) does not,
    and the difference is armature (w x v_lin) on the linear rows."""
    m = rm.rigid_body_only(_compile(FREE_ARMATURE))
    model = rbd.from_mujoco(m)
    np.testing.assert_array_equal(model.armature_world, [False, True, False, False, False])
    np.testing.assert_array_equal(model.armature, m.dof_armature)
    pinocchio_convention = model.with_armature(model.armature, np.zeros(5, bool))
    d = mujoco.MjData(m)
    rng = np.random.default_rng(3)
    qpos, qvel, qacc = random_state(m, rng)
    q, v, a = rm.to_rbdiff(model, qpos, qvel, qacc)
    d.qpos[:], d.qvel[:], d.qacc[:] = qpos, qvel, qacc
    mujoco.mj_inverse(m, d)
    tau = rbd.rnea(model, q, v, a)
    assert rel(rm.force_to_mujoco(model, q, tau), d.qfrc_inverse) < TOL
    other = rbd.rnea(pinocchio_convention, q, v, a)
    assert rel(rm.force_to_mujoco(model, q, other), d.qfrc_inverse) > 1e-6
    b = np.zeros(m.nv)
    b[:3] = 0.01 * np.cross(v[3:6], v[:3])
    np.testing.assert_allclose(tau - other, b, rtol=0, atol=1e-13)
    d.qfrc_applied[:] = rng.normal(size=m.nv)
    mujoco.mj_forward(m, d)
    tau = rm.force_to_rbdiff(model, qpos, d.qfrc_applied)
    assert rel(rm.to_mujoco(model, q, v, rbd.aba(model, q, v, tau))[2], d.qacc) < TOL
    assert rel(rm.to_mujoco(model, q, v, rbd.aba(pinocchio_convention, q, v, tau))[2],
               d.qacc) > 1e-6


def test_unequal_free_joint_armature_is_refused():
    m = _compile(FREE_ARMATURE)
    m.dof_armature[1] = 0.02             # MuJoCo's compiler sets one value; a user may not
    with pytest.raises(ValueError, match="'root': the free joint's linear armatures differ"):
        rbd.from_mujoco(m)
    m.dof_armature[1] = 0.01
    m.dof_armature[3] = 0.5              # angular ones are body-frame on both sides
    assert rbd.from_mujoco(m).armature[3] == 0.5


def test_gravity_disabled_and_ref():
    model = rbd.load_mjcf(PENDULUM)
    np.testing.assert_array_equal(model.gravity, np.zeros(3))
    # q = qpos - ref: at qpos0 the model is at its neutral configuration
    q, _, _ = rm.to_rbdiff(model, _compile(PENDULUM).qpos0)
    np.testing.assert_array_equal(q, rbd.neutral(model))


def test_settotalmass(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)          # MuJoCo 4 logs its deprecation to the cwd
    xml = PENDULUM.replace('angle="radian"', 'angle="radian" settotalmass="7"')
    model = rbd.load_mjcf(xml)
    np.testing.assert_allclose(model.masses.sum(), 7.0, rtol=1e-12)
    assert abs(rbd.load_mjcf(PENDULUM).masses.sum() - 7.0) > 1.0


def test_state_round_trips_single_and_batched():
    model = rbd.load_mjcf(TREE)
    m = _compile(TREE)
    rng = np.random.default_rng(1)
    states = [random_state(m, rng) for _ in range(4)]
    qpos, qvel, qacc = (np.stack(s) for s in zip(*states))
    back = rm.to_mujoco(model, *rm.to_rbdiff(model, qpos, qvel, qacc))
    for x, y in zip(back, (qpos, qvel, qacc)):
        np.testing.assert_allclose(x, y, rtol=0, atol=1e-13)
    q, v, a = rm.to_rbdiff(model.mujoco_map, qpos, qvel, qacc)      # a map works too
    for k in range(4):                       # a batch is the stack of single calls
        single = rm.to_rbdiff(model, qpos[k], qvel[k], qacc[k])
        for x, y in zip(single, (q[k], v[k], a[k])):
            np.testing.assert_allclose(x, y, rtol=0, atol=1e-15)
    f = rng.normal(size=qvel.shape)
    np.testing.assert_allclose(rm.force_to_mujoco(model, q, rm.force_to_rbdiff(
        model, qpos, f)), f, rtol=0, atol=1e-13)
    # the free joint's power is the same on both sides: tau . v == qfrc . qvel
    np.testing.assert_allclose(np.sum(rm.force_to_rbdiff(model, qpos, f) * v, -1),
                               np.sum(f * qvel, -1), rtol=1e-12)
    assert rm.to_rbdiff(model, qpos[0])[1:] == (None, None)


def test_free_joint_velocity_and_acceleration_by_finite_differences():
    """Independent of MuJoCo's dynamics: qvel from MuJoCo's own mj_integratePos, and
    qacc as the derivative of qvel along an rbdiff trajectory (central differences)."""
    model = rbd.load_mjcf(TREE)
    m = _compile(TREE)
    rng = np.random.default_rng(2)
    qpos, qvel, qacc = random_state(m, rng)
    q, v, a = rm.to_rbdiff(model, qpos, qvel, qacc)
    h = 1e-6
    moved = qpos.copy()
    mujoco.mj_integratePos(m, moved, qvel, h)
    fd = rbd.difference(model, q, rm.to_rbdiff(model, moved)[0]) / h
    np.testing.assert_allclose(fd, v, rtol=0, atol=1e-6)
    h = 1e-4

    def qvel_at(t):      # q(t) to second order, v(t) = v + t a
        return rm.to_mujoco(model, rbd.integrate(model, q, t * v + t * t / 2 * a),
                            v + t * a)[1]
    np.testing.assert_allclose((qvel_at(h) - qvel_at(-h)) / (2 * h), qacc, rtol=0,
                               atol=1e-6)


def test_mapping_needs_an_mjcf_model():
    with pytest.raises(TypeError, match="load_mjcf"):
        rm.to_rbdiff(rbd.load_robot("iiwa14"), np.zeros(7))
    model = rbd.load_mjcf(PENDULUM)
    with pytest.raises(ValueError, match=r"qpos: expected shape \(\.\.\., 2\)"):
        rm.to_rbdiff(model, np.zeros(3))
    with pytest.raises(ValueError, match="qacc needs qvel"):
        rm.to_rbdiff(model, np.zeros(2), qacc=np.zeros(2))


def test_bad_input(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.xml"):
        rbd.load_mjcf(tmp_path / "nope.xml")
    with pytest.raises(ValueError, match="MuJoCo refused the MJCF string: .*XML"):
        rbd.load_mjcf("<mujoco><worldbody><body>")
    bad = tmp_path / "bad.xml"
    bad.write_text("<mujoco><worldbody><body><joint type='screw'/></body></worldbody>"
                   "</mujoco>")
    with pytest.raises(ValueError, match="bad.xml.*screw"):
        rbd.load_mjcf(bad)
    with pytest.raises(TypeError, match="path or an XML string"):
        rbd.load_mjcf(3)


def test_massless_moving_body_is_refused_unless_allowed():
    m = _compile(PENDULUM)
    m.body_mass[2] = 0.0                 # MuJoCo's compiler refuses it; a user may not
    m.body_inertia[2] = 0.0
    with pytest.raises(ValueError, match="'j2': no mass or inertia"):
        rbd.from_mujoco(m)
    assert rbd.from_mujoco(m, allow_singular=True).nv == 2


def test_free_joint_below_a_moving_body_is_refused():
    m = _compile("<mujoco><worldbody><body><joint/><geom size='1'/></body>"
                 "<body><freejoint/><geom size='1'/></body></worldbody></mujoco>")
    m.body_parentid[2] = 1               # MuJoCo's compiler refuses it; a user may not
    with pytest.raises(ValueError, match="free joint below a moving body"):
        rbd.from_mujoco(m)


def test_missing_mujoco_names_the_extra(monkeypatch):
    hide_module(monkeypatch, "mujoco")
    with pytest.raises(ImportError, match=r"pip install 'rbdiff\[mujoco\]'"):
        rbd.load_mjcf(PENDULUM)
