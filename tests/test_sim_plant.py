"""rbdiff.sim.Plant: the MuJoCo plant written from an rbdiff Model is the same robot
(mj_fullM and qfrc_bias through the state map == crba and nonlinear_effects), its state
map round-trips, solo12 stands on it under a PD (the noslip fix holds its feet), and bad
input fails clearly."""

import functools
import math

import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")

import rbdiff as rbd  # noqa: E402
from conftest import full_inertia, hide_module  # noqa: E402
from rbdiff.model import robots  # noqa: E402

TOL = 1e-10
FEET = {"solo12": ("FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT"),
        "go2": ("FL_foot", "FR_foot", "RL_foot", "RR_foot"),
        "iiwa14": ()}


@functools.lru_cache(maxsize=None)
def robot(name):
    if robots.example_robot_data_dir() is None:
        pytest.skip("example-robot-data is not installed")
    if name not in rbd.robot_names():
        pytest.skip(f"{name} is not among rbd.robot_names() (older example-robot-data)")
    return rbd.load_robot(name)


def model_of(case):
    """A case: a load_robot name, or iiwa14 with armature on every joint (MuJoCo adds
    armature to M's diagonal as rbdiff does)."""
    if case == "iiwa14+armature":
        return robot("iiwa14").with_armature(np.linspace(0.1, 0.7, 7))
    return robot(case)


@functools.lru_cache(maxsize=None)
def plant_of(case):
    return rbd.sim.Plant(model_of(case), feet=FEET[case.split("+")[0]])


def velocity_map(plant, q):
    """T (mj nv, rbdiff nv): qvel = T v at q (the map is linear in v)."""
    return np.column_stack([plant.to_mujoco(q, e)[1] for e in np.eye(plant.model.nv)])


def rel(x, ref):
    return np.max(np.abs(x - ref)) / max(1.0, np.max(np.abs(ref)))


CASES = ["solo12", "go2", "iiwa14", "iiwa14+armature"]


@pytest.mark.parametrize("case", CASES)
def test_same_robot_mass_matrix_and_bias(case):
    plant, model = plant_of(case), model_of(case)
    rng = np.random.default_rng(7)
    for _ in range(3):
        q = rbd.random_configuration(model, rng)
        v = rng.normal(size=model.nv)
        plant.set_state(q, v)                  # mj_forward: qM, qfrc_bias at (q, v)
        T = velocity_map(plant, q)
        M = full_inertia(plant.mj_model, plant.mj_data)
        # rbdiff's a = 0 is a free joint's qacc_lin = R (w x v_lin) in MuJoCo's coordinates
        qacc = plant.to_mujoco(q, v, np.zeros(model.nv))[2]
        assert rel(T.T @ M @ T, rbd.crba(model, q)) < TOL
        assert rel(T.T @ (plant.mj_data.qfrc_bias + M @ qacc),
                   rbd.nonlinear_effects(model, q, v)) < TOL
    if case == "iiwa14+armature":
        assert np.allclose(plant.mj_model.dof_armature, model.armature, rtol=0, atol=0)


@pytest.mark.parametrize("case", ["solo12", "go2", "iiwa14"])
def test_state_round_trip(case):
    plant, model = plant_of(case), model_of(case)
    rng = np.random.default_rng(3)
    for _ in range(5):
        q = rbd.random_configuration(model, rng)
        v = rng.normal(size=model.nv)
        plant.set_state(q, v)
        q2, v2 = plant.state()
        assert np.array_equal(q2, q)
        assert np.max(np.abs(v2 - v)) < 1e-14 * max(1.0, np.max(np.abs(v)))
    if plant.has_free_flyer:                   # MuJoCo's own free-joint conventions
        d = plant.mj_data
        assert np.array_equal(d.qpos[3:7], q[[6, 3, 4, 5]])          # [w, x, y, z]
        R = plant.base_pose()[1]
        assert np.allclose(d.qvel[:3], R @ v[:3], rtol=0, atol=1e-14)   # world linear
        assert np.array_equal(d.qvel[3:6], v[3:6])                   # body angular


def test_feet_are_the_frames():
    """The foot spheres sit at rbdiff's foot frames (positions map by joint names)."""
    plant, model = plant_of("go2"), model_of("go2")
    q = rbd.random_configuration(model, 11)
    plant.set_state(q)
    for k, name in enumerate(plant.feet):
        T = rbd.frame_placement(model, q, model.get_frame_id(name))
        assert np.allclose(plant.foot_positions()[k], T[:3, 3], rtol=0, atol=1e-12)
    assert np.allclose(plant.foot_radius, 0.02)        # no sphere visual: the default


def stand(noslip, seconds=2.0):
    """solo12 on the floor from its standing configuration (feet touching), held by a
    joint PD for ``seconds``; returns (plant, largest horizontal foot travel)."""
    model = robot("solo12")
    plant = rbd.sim.Plant(model, feet=FEET["solo12"], noslip_iterations=noslip)
    q_ref = np.array(model.reference_configurations["standing"])
    plant.set_state(q_ref)
    q_ref[2] -= plant.foot_positions()[:, 2].min() - plant.foot_radius.min()
    plant.set_state(q_ref)
    start = plant.foot_positions()
    for _ in range(int(round(seconds / plant.mj_model.opt.timestep))):
        q, v = plant.state()
        plant.step(5.0 * (q_ref[7:] - q[7:]) - 0.1 * v[6:])
    travel = np.linalg.norm((plant.foot_positions() - start)[:, :2], axis=1).max()
    return plant, travel


def test_solo12_stands():
    plant, creep = stand(noslip=10)
    assert plant.time == pytest.approx(2.0)
    assert not plant.fallen()
    assert creep < 3e-3                          # 0.9 mm: settling, then ~0.01 mm
    F = plant.foot_forces()
    weight = rbd.total_mass(plant.model) * 9.81
    assert np.all(F[:, 2] > 0.1 * weight / 4)   # every foot carries load
    assert abs(F[:, 2].sum() / weight - 1) < 0.03
    assert np.all(np.hypot(F[:, 0], F[:, 1]) <= 0.7 * F[:, 2] + 1e-9)   # in the cone
    _, creep_without = stand(noslip=0)
    assert creep_without > 5 * creep           # what noslip is for (17.7 mm vs 0.9 mm)


def test_torques_reach_the_joints_clipped():
    plant, model = plant_of("solo12"), model_of("solo12")
    assert plant.nu == model.nv - 6
    assert np.array_equal(plant.effort_limits, model.effort_limits[6:])
    go2 = plant_of("go2")
    assert np.array_equal(go2.effort_limits, model_of("go2").effort_limits[6:])
    q = np.array(model.reference_configurations["standing"])
    plant.set_state(q)
    tau = np.linspace(-1.0, 1.0, plant.nu)
    plant.step(tau)
    T = velocity_map(plant, q)     # the force map is T^T (same power), T at the step's q
    assert np.allclose(T.T @ plant.mj_data.qfrc_actuator, np.r_[np.zeros(6), tau],
                       rtol=0, atol=1e-12)
    iiwa = plant_of("iiwa14")
    iiwa.set_state(rbd.neutral(iiwa.model))
    big = np.full(7, 1e4) * np.array([1, -1, 1, -1, 1, -1, 1])
    iiwa.step(big)
    lim = iiwa.model.effort_limits                    # iiwa14: 320 ... 40 N m
    assert np.array_equal(iiwa.mj_data.qfrc_actuator, np.clip(big, -lim, lim))


def test_push_and_fallen():
    plant, model = plant_of("solo12"), model_of("solo12")
    rng = np.random.default_rng(5)
    q = np.array(model.reference_configurations["standing"])
    q[3:7] = rbd.random_configuration(model, rng)[3:7]
    v = rng.normal(size=model.nv)
    plant.set_state(q, v)
    R = plant.base_pose()[1]
    dv = np.array([0.3, -0.2, 0.1, 0.5, 0.0, -0.4])
    plant.push(dv)
    q2, v2 = plant.state()
    assert np.array_equal(q2, q)
    assert np.allclose(R @ v2[:3], R @ v[:3] + dv[:3], rtol=0, atol=1e-13)  # world frame
    assert np.allclose(R @ v2[3:6], R @ v[3:6] + dv[3:], rtol=0, atol=1e-13)
    assert np.array_equal(v2[6:], v[6:])
    q = np.array(model.reference_configurations["standing"])
    plant.set_state(q)
    assert not plant.fallen()
    low = q.copy()
    low[2] = 0.4 * plant.nominal_height
    plant.set_state(low)
    assert plant.fallen()
    for axis, angle in ((0, 1.0), (1, -1.0), (2, 2.0)):      # roll, pitch, yaw
        tilted = q.copy()
        tilted[3 + axis], tilted[6] = math.sin(angle / 2), math.cos(angle / 2)
        plant.set_state(tilted)
        assert plant.fallen() == (axis != 2)                 # yaw is not a fall
    assert not plant_of("iiwa14").fallen()


def test_clear_errors(monkeypatch):
    model = robot("solo12")
    with pytest.raises(KeyError, match="FL_FOOT"):
        rbd.sim.Plant(model, feet=("FL_FOT",))
    plant = plant_of("solo12")
    with pytest.raises(ValueError, match=r"expected 12 joint torques \(nv - 6"):
        plant.step(np.zeros(18))
    tau = np.zeros(12)
    tau[4] = np.nan
    with pytest.raises(ValueError, match="not finite.*FR_HFE"):
        plant.step(tau)
    with pytest.raises(ValueError, match="free flyer"):
        plant_of("iiwa14").push([1.0, 0, 0])
    hide_module(monkeypatch, "mujoco")
    with pytest.raises(ImportError, match=r"pip install 'rbdiff\[sim\]'"):
        rbd.sim.Plant(model, feet=FEET["solo12"])


# a free body; a body with two hinges (one anchored off the origin: rbd.load_mjcf makes a
# massless joint of the first, the plant puts both back in one body), a ball joint below
# it, a slide; armature everywhere (the free joint's on its world-frame velocity)
MJCF = """
<mujoco>
  <default><joint armature="0.02"/><geom type="capsule" size="0.04 0.1"/></default>
  <worldbody>
    <body name="torso" pos="0 0 1">
      <freejoint name="root"/>
      <geom type="box" size="0.2 0.1 0.05"/>
      <body name="thigh" pos="0.2 0.1 0" euler="0.3 0 0.2">
        <joint name="hip_x" type="hinge" axis="1 0 0"/>
        <joint name="hip_y" type="hinge" axis="0 1 0.2" pos="0 0.02 -0.01"/>
        <geom fromto="0 0 0 0 0 -0.3"/>
        <site name="knee_site" pos="0 0 -0.3"/>
        <body name="shin" pos="0 0 -0.3">
          <joint name="knee" type="ball"/>
          <geom fromto="0 0 0 0.05 0 -0.3"/>
          <site name="toe" pos="0.05 0 -0.3"/>
        </body>
      </body>
      <body name="tail" pos="-0.2 0 0">
        <joint name="tail_slide" type="slide" axis="-1 0 0.3" range="-0.1 0.1"/>
        <geom fromto="0 0 0 -0.2 0 0"/>
      </body>
    </body>
  </worldbody>
</mujoco>
"""


def test_mjcf_model_with_joints_in_one_body_and_ball():
    model = rbd.load_mjcf(MJCF)
    assert model.masses[model.get_joint_id("hip_x")] == 0     # the chain load_mjcf made
    plant = rbd.sim.Plant(model, feet=("toe",), foot_radius=0.03)
    m = plant.mj_model
    assert m.nbody == model.njoints - 1                        # hip_x, hip_y: one body
    assert plant.nu == model.nv - 6 == m.nu
    rng = np.random.default_rng(2)
    for _ in range(3):
        q = rbd.random_configuration(model, rng)
        v = rng.normal(size=model.nv)
        plant.set_state(q, v)
        q2, v2 = plant.state()
        assert np.max(np.abs(q2 - q)) < 1e-15 and np.max(np.abs(v2 - v)) < 1e-14
        T = velocity_map(plant, q)
        M = full_inertia(m, plant.mj_data)
        qacc = plant.to_mujoco(q, v, np.zeros(model.nv))[2]
        assert rel(T.T @ M @ T, rbd.crba(model, q)) < TOL
        assert rel(T.T @ (plant.mj_data.qfrc_bias + M @ qacc),
                   rbd.nonlinear_effects(model, q, v)) < TOL
        toe = rbd.frame_placement(model, q, model.get_frame_id("toe"))[:3, 3]
        assert np.allclose(plant.foot_positions()[0], toe, rtol=0, atol=1e-12)
    tau = rng.normal(size=plant.nu)              # the ball joint's three motors included
    plant.step(tau)
    assert np.allclose(T.T @ plant.mj_data.qfrc_actuator, np.r_[np.zeros(6), tau],
                       rtol=0, atol=1e-12)
