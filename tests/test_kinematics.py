"""Forward kinematics, frame placements and frame Jacobians against Pinocchio."""

import numpy as np
import pinocchio as pin
import pytest

import rbdiff as rbd
from conftest import random_state, robot_pair


@pytest.mark.parametrize("name,ff", [("iiwa14", False), ("pr2", False), ("hyq", True)])
def test_forward_kinematics(name, ff):
    model, pm = robot_pair(name, ff)
    pd = pm.createData()
    q, v, a = random_state(pm, np.random.default_rng(0))
    kin = rbd.forward_kinematics(model, q, v, a)
    pin.forwardKinematics(pm, pd, q, v, a)
    for i in range(model.njoints + 1):
        assert np.allclose(kin.placements[i], pd.oMi[i].homogeneous, atol=1e-12)
        assert np.allclose(kin.velocities[i], pd.v[i].vector, atol=1e-11)
        assert np.allclose(kin.accelerations[i], pd.a[i].vector, atol=1e-10)


@pytest.mark.parametrize("name,ff", [("iiwa14", False), ("pr2", False), ("talos_full_v2", True)])
def test_frames_and_jacobians(name, ff):
    model, pm = robot_pair(name, ff)
    pd = pm.createData()
    q, _, _ = random_state(pm, np.random.default_rng(1))
    pin.computeJointJacobians(pm, pd, q)
    pin.updateFramePlacements(pm, pd)
    T = rbd.frame_placements(model, q)
    refs = {"local": pin.LOCAL, "world": pin.WORLD,
            "local_world_aligned": pin.LOCAL_WORLD_ALIGNED}
    for k, f in enumerate(model.frames[1:], start=1):
        fid = pm.getFrameId(f.name)
        assert np.allclose(T[k], pd.oMf[fid].homogeneous, atol=1e-12)
        if k % 7 == 0:
            for ref, pref in refs.items():
                J = rbd.frame_jacobian(model, q, f.name, ref)
                assert np.allclose(J, pin.getFrameJacobian(pm, pd, fid, pref), atol=1e-11)
    last = model.frames[-1].name
    assert np.allclose(rbd.frame_placement(model, q, last), T[-1])
    with pytest.raises(ValueError, match="reference"):
        rbd.frame_jacobian(model, q, last, "body")
    with pytest.raises(KeyError, match="no frame named"):
        rbd.frame_jacobian(model, q, "nope")
