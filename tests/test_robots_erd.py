"""rbd.load_robot against example-robot-data's own loader, and Model.reduced against
Pinocchio's buildReducedModel (and against the full model with the locked joints still)."""

import numpy as np
import pytest

import rbdiff as rbd
from rbdiff.model import robots

from conftest import full, pin, random_state, rel_err, tree_pair

erd = pytest.importorskip("example_robot_data", reason="example-robot-data-loaders is "
                          "not installed")
if robots.example_robot_data_dir() is None:
    pytest.skip("example-robot-data is not installed", allow_module_level=True)

TOL = 1e-10
NAMES = ["talos_legs", "solo12", "anymal", "hyq", "talos", "panda"]
_LOADED = {}


def _loader_model(name):
    """The model example-robot-data's loader builds for ``name`` (meshes and all: slow)."""
    if name not in _LOADED:
        _LOADED[name] = erd.load(name).model
    return _LOADED[name]


def _refs(pm):
    return {e.key(): np.array(e.data()) for e in pm.referenceConfigurations}


def assert_same_model(model, pm):
    """Joints, bodies, frames, armature and reference configurations as Pinocchio's."""
    assert (model.nq, model.nv, model.njoints) == (pm.nq, pm.nv, pm.njoints)
    assert list(model.names) == list(pm.names)
    np.testing.assert_array_equal(model.parents, list(pm.parents))
    for i in range(pm.njoints):
        Y = pm.inertias[i]
        np.testing.assert_allclose(model.masses[i], Y.mass, rtol=TOL, atol=TOL)
        np.testing.assert_allclose(model.coms[i], Y.lever, rtol=0, atol=TOL)
        np.testing.assert_allclose(model.inertias[i], Y.inertia, rtol=0, atol=TOL)
        np.testing.assert_allclose(model.placements[i], pm.jointPlacements[i].homogeneous,
                                   rtol=0, atol=TOL)
    np.testing.assert_array_equal(model.armature, pm.armature)
    assert [(f.name, int(f.type), f.parent, f.parent_frame) for f in model.frames] == \
        [(f.name, int(f.type), f.parentJoint, f.parentFrame) for f in pm.frames]
    for f, pf in zip(model.frames, pm.frames):
        np.testing.assert_allclose(f.placement, pf.placement.homogeneous, rtol=0, atol=TOL)
    refs = _refs(pm)
    assert sorted(model.reference_configurations) == sorted(refs)
    for key, q in refs.items():
        np.testing.assert_array_equal(model.reference_configurations[key], q)


def assert_same_dynamics(model, pm, seed=0):
    """rnea and crba (armature included) at a random state, to 1e-10 relative."""
    q, v, a = random_state(pm, np.random.default_rng(seed))
    data = pm.createData()
    assert rel_err(rbd.rnea(model, q, v, a), np.array(pin.rnea(pm, data, q, v, a))) < TOL
    assert rel_err(rbd.crba(model, q), full(pin.crba(pm, data, q))) < TOL


@pytest.mark.parametrize("name", NAMES)
def test_load_robot_is_the_loaders_model(name):
    model = rbd.load_robot(name)
    pm = _loader_model(name)
    assert_same_model(model, pm)
    assert_same_dynamics(model, pm)
    assert robots.default_floating_base(name) == (model.names[1] == "root_joint")


def test_what_the_loader_sets():
    """The facts the loader adds to the URDF, seen in rbdiff's models."""
    legs = rbd.load_robot("talos_legs")          # the first 14 joints of talos, no more
    assert legs.names[-1] == "leg_right_6_joint" and legs.nv == 18
    talos = rbd.load_robot("talos")
    # the torso, arms and head are dropped, not welded to the base as a reduced model would
    assert legs.masses.sum() < talos.masses.sum() - 20.0
    # rotor inertia * gear ratio^2 from talos.srdf on the actuated joints, 0 on the base
    assert np.all(talos.armature[:6] == 0) and np.all(legs.armature[6:] > 0)
    solo = rbd.load_robot("solo12")
    assert np.all(solo.armature == 0)
    q = solo.reference_configurations["standing"]
    np.testing.assert_allclose(np.linalg.norm(q[3:7]), 1.0)
    assert set(talos.reference_configurations) == {"half_sitting"}
    with pytest.raises(TypeError):              # read-only mapping of read-only arrays
        talos.reference_configurations["x"] = q
    with pytest.raises(ValueError):
        talos.reference_configurations["half_sitting"][0] = 1.0


def test_existing_names_keep_their_models():
    """talos_full_v2 (rbdiff's own name) stays the URDF as Pinocchio's parser builds it;
    the aliases name the loader's robots."""
    model = rbd.load_robot("talos_full_v2")
    path = str(rbd.robot_path("talos_full_v2"))
    pm = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer())
    assert list(model.names) == list(pm.names) and np.all(model.armature == 0)
    assert_same_dynamics(model, pm)
    assert "half_sitting" in model.reference_configurations
    assert rbd.robot_path("solo") == rbd.robot_path("solo8")
    assert rbd.load_robot("solo12", floating_base=False).nq == 12
    assert rbd.load_robot("iiwa14").reference_configurations == {}


def test_bad_names():
    with pytest.raises(KeyError, match="unknown robot 'nao'.*talos_legs"):
        rbd.load_robot("nao")
    with pytest.raises(ValueError, match="talos_legs.*floating_base=False"):
        rbd.load_robot("talos_legs", floating_base=False)
    with pytest.raises(ValueError, match="SDF"):
        rbd.load_robot("cassie")


# -- Model.reduced ----------------------------------------------------------------------
def _q_ref(pm, seed):
    return random_state(pm, np.random.default_rng(seed))[0]


@pytest.mark.parametrize("name", ["talos", "solo12"])
def test_reduced_matches_build_reduced_model(name):
    model, pm = rbd.load_robot(name), _loader_model(name)
    keep = ("leg",) if name == "talos" else ("FL", "HR")
    lock = [n for n in pm.names[1:] if n != "root_joint" and not any(k in n for k in keep)]
    q_ref = _q_ref(pm, 1)
    pr = pin.buildReducedModel(pm, [pm.getJointId(n) for n in lock], q_ref)
    assert_same_model(model.reduced(lock, q_ref), pr)
    assert_same_dynamics(model.reduced(lock, q_ref), pr, seed=2)
    # by index, in any order, as Pinocchio takes them
    ids = [model.get_joint_id(n) for n in reversed(lock)]
    np.testing.assert_array_equal(model.reduced(ids, q_ref).mf, model.reduced(lock, q_ref).mf)


def test_reduced_is_the_model_with_locked_joints_still():
    """A random tree with every joint type: the reduced model's rnea and crba are the full
    model's at q_ref with zero velocity and acceleration on the locked joints."""
    model, _ = tree_pair(3, n=9, floating=True)
    rng = np.random.default_rng(4)
    lock = [2, 5, 6]
    q_ref = rbd.random_configuration(model, rng)
    red = model.reduced([model.names[j] for j in lock], q_ref)
    kept = np.concatenate([np.arange(model.idx_v[j], model.idx_v[j] + model.nvs[j])
                           for j in range(1, model.njoints) if j not in lock])
    kept_q = np.concatenate([np.arange(model.idx_q[j], model.idx_q[j] + model.nqs[j])
                             for j in range(1, model.njoints) if j not in lock])
    q = q_ref.copy()
    q[kept_q] = rbd.random_configuration(red, rng)
    v, a = np.zeros(model.nv), np.zeros(model.nv)
    v[kept], a[kept] = rng.normal(size=red.nv), rng.normal(size=red.nv)
    assert rel_err(rbd.rnea(red, q[kept_q], v[kept], a[kept]),
                   rbd.rnea(model, q, v, a)[kept]) < TOL
    assert rel_err(rbd.crba(red, q[kept_q]), rbd.crba(model, q)[np.ix_(kept, kept)]) < TOL
    assert red.reduced([]).nq == red.nq


def test_reduced_bad_input():
    model = rbd.load_robot("solo12")
    with pytest.raises(KeyError, match="no joint named 'FL_KFE_nope'.*FL_KFE"):
        model.reduced(["FL_KFE_nope"])
    with pytest.raises(KeyError, match="joint 99"):
        model.reduced([99])
    with pytest.raises(ValueError, match="more than once.*FL_KFE"):
        model.reduced(["FL_KFE", model.get_joint_id("FL_KFE")])
    with pytest.raises(ValueError, match="q_ref: expected 19"):
        model.reduced(["FL_KFE"], np.zeros(3))
