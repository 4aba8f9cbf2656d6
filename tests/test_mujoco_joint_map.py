"""rbdiff.mujoco.joint_map: any rbdiff Model against MuJoCo's own compile of the same
robot, by joint names. Oracle: MuJoCo's mass matrix and bias forces at the mapped state
equal crba and nonlinear_effects (the free flyer's linear velocity changes frame: qvel =
T v, qacc = T a + dT/dt v, so M_rbdiff = T' M_mujoco T and bias_rbdiff = T' (bias_mujoco
+ M_mujoco dT/dt v), dT/dt v = R (w x v_lin) in the free joint's linear rows)."""

import re

import numpy as np
import pytest

import rbdiff as rbd
from rbdiff.model.configuration import quat_to_rot

mujoco = pytest.importorskip("mujoco", reason="needs the sim extra")
from rbdiff.mujoco import joint_map, rigid_body_only, to_mujoco, to_rbdiff  # noqa: E402

from conftest import full_inertia  # noqa: E402


def _mujoco_urdf(name, free=True):
    """MuJoCo's own compile of example-robot-data's URDF (its visuals and collisions
    dropped: their package:// meshes are what MuJoCo cannot open), a free joint added
    (MuJoCo's URDF import fixes the base) under another name than rbdiff's."""
    text = open(rbd.robot_path(name)).read()
    text = re.sub(r"<visual>.*?</visual>|<collision>.*?</collision>", "", text, flags=re.S)
    spec = mujoco.MjSpec.from_string(text)
    if free:
        spec.worldbody.first_body().add_freejoint(name="floating_base")
    return spec.compile()


def _tangent_map(jm, q):
    T = np.zeros((jm.mj_nv, jm.nv))
    T[np.arange(jm.mj_nv), jm.dof_of_mj] = 1.0
    if jm.free is not None:
        iq, iv, _, d = jm.free
        T[d:d + 3, iv:iv + 3] = quat_to_rot(q[iq + 3:iq + 7])
    return T


@pytest.mark.parametrize("name", ["solo12", "panda"])
def test_dynamics_agree_through_the_name_map(name):
    model = rbd.load_robot(name)
    mm = _mujoco_urdf(name, free=model.nqs[1] == 7)
    jm = joint_map(model, mm)
    mr = rigid_body_only(mm)
    d = mujoco.MjData(mr)
    rng = np.random.default_rng(1)
    for _ in range(3):
        q = rbd.random_configuration(model, rng)
        v = rng.standard_normal(model.nv)
        qpos, qvel, _ = to_mujoco(jm, q, v)
        d.qpos[:], d.qvel[:] = qpos, qvel
        mujoco.mj_forward(mr, d)
        T = _tangent_map(jm, q)
        M, b = rbd.crba(model, q), rbd.nonlinear_effects(model, q, v)
        Mmj = full_inertia(mr, d)
        Tdv = np.zeros(jm.mj_nv)
        if jm.free is not None:
            iq, iv, _, dof = jm.free
            Tdv[dof:dof + 3] = quat_to_rot(q[iq + 3:iq + 7]) @ np.cross(v[iv + 3:iv + 6],
                                                                       v[iv:iv + 3])
        assert np.abs(T.T @ Mmj @ T - M).max() < 1e-10 * np.abs(M).max()
        bias = T.T @ (d.qfrc_bias + Mmj @ Tdv)
        assert np.abs(bias - b).max() < 1e-10 * max(np.abs(b).max(), 1.0)
        q2, v2, _ = to_rbdiff(jm, qpos, qvel)
        assert np.allclose(q2, q, atol=1e-14) and np.allclose(v2, v, atol=1e-14)


def test_accelerations_round_trip_and_batches():
    model = rbd.load_robot("solo12")
    jm = joint_map(model, _mujoco_urdf("solo12"))
    rng = np.random.default_rng(2)
    q = np.stack([rbd.random_configuration(model, rng) for _ in range(4)])
    v, a = rng.standard_normal((2, 4, model.nv))
    qpos, qvel, qacc = jm.to_mujoco(q, v, a)
    assert qpos.shape == (4, jm.mj_nq)
    q2, v2, a2 = jm.to_rbdiff(qpos, qvel, qacc)
    assert np.allclose(q2, q, atol=1e-14) and np.allclose(v2, v, atol=1e-13)
    assert np.allclose(a2, a, atol=1e-13)


def test_missing_or_different_joints_are_named():
    model = rbd.load_robot("solo12")
    fixed = _mujoco_urdf("solo12", free=False)
    with pytest.raises(ValueError, match="no joint named"):
        joint_map(model, fixed)          # the free flyer has no MuJoCo twin
    with pytest.raises(ValueError, match="expected shape"):
        joint_map(model, _mujoco_urdf("solo12")).to_mujoco(np.zeros(5))
