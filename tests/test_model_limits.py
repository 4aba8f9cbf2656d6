"""model.effort_limits / model.velocity_limits against Pinocchio's effortLimit /
velocityLimit (URDF, Pinocchio models), MuJoCo's actuators (MJCF), and through reduced
models, copies, pickling and equality."""

import importlib.util
import pickle
from pathlib import Path

import numpy as np
import pytest

import rbdiff as rbd
from rbdiff.model.model import ModelBuilder
from rbdiff.model.from_pinocchio import from_pinocchio

pin = pytest.importorskip("pinocchio")

ROBOTS = [n for n in ("go2", "solo12", "anymal", "talos_legs", "panda", "iiwa14")
          if n == "iiwa14" or n in rbd.robot_names()]
DBL_MAX = np.finfo(float).max


def _pinocchio_limits(pm, root_free_flyer):
    """Pinocchio's (effortLimit, velocityLimit), the numeric maximum it gives the free
    flyer it adds itself read as rbdiff's +inf (the documented difference)."""
    out = []
    for a in (np.array(pm.effortLimit), np.array(pm.velocityLimit)):
        if root_free_flyer:
            assert np.all(a[:6] >= DBL_MAX)     # its maximum (inf once reduced)
            a[:6] = np.inf
        out.append(a)
    return out


@pytest.mark.parametrize("floating", [False, True], ids=["fixed", "floating"])
@pytest.mark.parametrize("name", ROBOTS)
def test_urdf_limits_equal_pinocchios(name, floating):
    path = str(rbd.robot_path(name))
    pm = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer()) if floating \
        else pin.buildModelFromUrdf(path)
    model = rbd.load_urdf(path, floating_base=floating)
    effort, velocity = _pinocchio_limits(pm, floating)
    assert model.effort_limits.shape == model.velocity_limits.shape == (model.nv,)
    np.testing.assert_array_equal(model.effort_limits, effort)
    np.testing.assert_array_equal(model.velocity_limits, velocity)
    assert np.all(np.isfinite(model.effort_limits[6 if floating else 0:]))
    for a in (model.effort_limits, model.velocity_limits):
        with pytest.raises(ValueError):
            a[0] = 1.0                          # read-only


def test_go2_limits_are_the_urdfs():
    """The numbers the user had to read from go2's URDF by hand (hip, thigh, calf)."""
    if "go2" not in rbd.robot_names():
        pytest.skip("go2 is not in this example-robot-data")
    model = rbd.load_robot("go2")
    np.testing.assert_array_equal(model.effort_limits[6:9], [23.7, 23.7, 45.43])
    np.testing.assert_array_equal(model.velocity_limits[6:9], [30.1, 30.1, 15.7])
    assert np.all(np.isinf(model.effort_limits[:6]))


@pytest.mark.parametrize("name", ROBOTS)
def test_load_robot_limits_equal_the_loaders(name):
    """load_robot (its URDF, or the loader's edited model through from_pinocchio for
    talos_legs) has the limits of the model example-robot-data's loader builds."""
    model = rbd.load_robot(name)
    if name == "iiwa14":
        pm = pin.buildModelFromUrdf(str(rbd.robot_path(name)))
    else:
        from example_robot_data import robots_loader
        pm = robots_loader.load(name).model
    floating = pm.joints[1].shortname() == "JointModelFreeFlyer"
    effort, velocity = _pinocchio_limits(pm, floating)
    np.testing.assert_array_equal(model.effort_limits, effort)
    np.testing.assert_array_equal(model.velocity_limits, velocity)


def test_from_pinocchio_keeps_limits_and_reads_the_maximum_as_inf():
    path = str(rbd.robot_path("panda"))
    pm = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer())
    pm.effortLimit[7] = 3.5
    model = from_pinocchio(pm)
    assert np.all(np.isinf(model.effort_limits[:6]))
    assert np.all(np.isinf(model.velocity_limits[:6]))
    assert model.effort_limits[7] == 3.5
    np.testing.assert_array_equal(model.velocity_limits[6:], pm.velocityLimit[6:])


def test_urdf_continuous_floating_and_missing_attributes():
    inertial = ('<inertial><mass value="1"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" '
                'iyz="0" izz="1"/></inertial>')
    links = "".join(f'<link name="{n}">{inertial}</link>' for n in "abcde")

    def joint(name, jtype, parent, child, limit=""):
        return (f'<joint name="{name}" type="{jtype}"><parent link="{parent}"/>'
                f'<child link="{child}"/><axis xyz="0 0 1"/>{limit}</joint>')

    xml = (f'<robot name="r">{links}'
           + joint("j1", "continuous", "a", "b", '<limit effort="3" velocity="4"/>')
           + joint("j2", "continuous", "b", "c")
           + joint("j3", "revolute", "c", "d", '<limit lower="-1" upper="1"/>')
           + joint("j4", "prismatic", "d", "e",
                   '<limit lower="-1" upper="1" effort="0" velocity="2.5"/>')
           + "</robot>")
    model = rbd.load_urdf(xml)
    np.testing.assert_array_equal(model.effort_limits, [3.0, np.inf, np.inf, 0.0])
    np.testing.assert_array_equal(model.velocity_limits, [4.0, np.inf, np.inf, 2.5])
    # Pinocchio: the same where urdfdom reads the file (j3 lacks effort: it refuses it)
    pm = pin.buildModelFromXML(xml.replace('upper="1"/>', 'upper="1" effort="1e9" '
                                                         'velocity="1e9"/>', 1))
    np.testing.assert_array_equal(pm.effortLimit, [3.0, np.inf, 1e9, 0.0])
    np.testing.assert_array_equal(pm.velocityLimit, [4.0, np.inf, 1e9, 2.5])
    with pytest.raises(ValueError, match="joint 'j1'.*effort must be non-negative"):
        rbd.load_urdf(xml.replace('effort="3"', 'effort="-3"'))
    with pytest.raises(ValueError, match="joint 'j1'.*velocity is not a number"):
        rbd.load_urdf(xml.replace('velocity="4"', 'velocity="fast"'))


def test_hand_built_model_defaults_and_arguments():
    b = ModelBuilder()
    j1 = b.add_joint(0, "revolute", "j1", axis=[0, 0, 1])
    b.append_body(j1, 1.0, [0, 0, 0.5], np.eye(3) * 0.1)
    j2 = b.add_joint(j1, "spherical", "j2", effort=[1.0, 2.0, 3.0], velocity=5.0)
    b.append_body(j2, 1.0, [0, 0, 0.5], np.eye(3) * 0.1)
    j3 = b.add_joint(j2, "prismatic", "j3", effort=7.0)
    b.append_body(j3, 1.0, [0, 0, 0.5], np.eye(3) * 0.1)
    model = b.build()
    np.testing.assert_array_equal(model.effort_limits, [np.inf, 1, 2, 3, 7])
    np.testing.assert_array_equal(model.velocity_limits, [np.inf, 5, 5, 5, np.inf])
    for bad in (-1.0, np.nan, [1.0, 2.0], "x"):
        with pytest.raises(ValueError, match="joint 'k'.*effort limit"):
            ModelBuilder().add_joint(0, "revolute", "k", effort=bad)
        with pytest.raises(ValueError, match="joint 'k'.*velocity limit"):
            ModelBuilder().add_joint(0, "revolute", "k", velocity=bad)
    with pytest.raises(ValueError, match="effort_limits: expected 5"):
        model._copy(effort_limits=np.ones(4))
    with pytest.raises(ValueError, match="velocity_limits: expected 5"):
        model._copy(velocity_limits=-np.ones(5))


def test_reduced_copies_and_pickles_keep_limits():
    model = rbd.load_robot("panda")
    lock = ["panda_joint2", "panda_finger_joint1"]
    red = model.reduced(lock)
    keep = [k for k in range(1, model.njoints) if model.names[k] not in lock]
    idx = [int(model.idx_v[k]) for k in keep]
    np.testing.assert_array_equal(red.effort_limits, model.effort_limits[idx])
    np.testing.assert_array_equal(red.velocity_limits, model.velocity_limits[idx])
    # Pinocchio's buildReducedModel keeps the same entries
    pm = pin.buildModelFromUrdf(str(rbd.robot_path("panda")))
    pr = pin.buildReducedModel(pm, [pm.getJointId(n) for n in lock], pin.neutral(pm))
    np.testing.assert_array_equal(red.effort_limits, pr.effortLimit)
    np.testing.assert_array_equal(red.velocity_limits, pr.velocityLimit)
    arm = model.with_armature(0.1)
    np.testing.assert_array_equal(arm.effort_limits, model.effort_limits)
    np.testing.assert_array_equal(arm.velocity_limits, model.velocity_limits)
    back = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(back.effort_limits, model.effort_limits)
    np.testing.assert_array_equal(back.velocity_limits, model.velocity_limits)
    assert back == model and hash(back) == hash(model)


def test_equality_counts_the_limits():
    a, b = rbd.load_robot("solo12"), rbd.load_robot("solo12")
    assert a == b and a.fingerprint == b.fingerprint
    eff = a.effort_limits.copy()
    eff[7] = 2.0
    c = a._copy(effort_limits=eff)
    assert c != a and c.fingerprint != a.fingerprint
    vel = a.velocity_limits.copy()
    vel[-1] = np.inf
    d = a._copy(velocity_limits=vel)
    assert d != a and d != c
    assert a._copy(effort_limits=a.effort_limits.copy()) == a


MJCF = """<mujoco><compiler angle="radian"/><worldbody>
<body name="b0" pos="0 0 1"><freejoint name="root"/><geom type="box" size=".1 .1 .1"/>
 <body name="b1" pos="0 0 .2">
  <joint name="j1" type="hinge" axis="0 1 0" range="-1 1" actuatorfrcrange="-7 5"/>
  <geom type="capsule" fromto="0 0 0 0 0 .3" size=".03"/>
  <body name="b2" pos="0 0 .3"><joint name="j2" type="hinge" axis="1 0 0"/>
   <geom type="capsule" fromto="0 0 0 0 0 .3" size=".03"/>
   <body name="b3" pos="0 0 .3"><joint name="j3" type="slide" axis="0 0 1" range="-.1 .1"/>
    <geom type="sphere" size=".05"/>
    <body name="b4" pos="0 0 .1"><joint name="j4" type="hinge" axis="0 0 1"/>
     <geom type="sphere" size=".05"/>
     <body name="b5" pos="0 0 .1"><joint name="j5" type="hinge" axis="0 0 1"/>
      <geom type="sphere" size=".05"/></body>
    </body></body></body></body></body></worldbody>
<actuator>
 <motor joint="j1" gear="2" ctrlrange="-3 3"/>
 <motor joint="j2" gear="10" forcerange="-4 4" ctrlrange="-1 1"/>
 <position joint="j3" kp="100" ctrlrange="-.1 .1"/>
 <motor joint="j5" gear="-2" ctrlrange="-1 3"/>
 <motor joint="j5" gear="1" ctrlrange="-1 1"/>
</actuator></mujoco>"""


def test_mjcf_effort_from_actuators_against_mujoco():
    mujoco = pytest.importorskip("mujoco")
    model = rbd.load_mjcf(MJCF)
    m = mujoco.MjModel.from_xml_string(MJCF)
    dof = {n: int(m.jnt_dofadr[mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, n)])
           for n in ("j1", "j2", "j3", "j4", "j5")}
    # MuJoCo's own numbers: gear * ctrlrange (motor), gear * forcerange, the joint cap
    assert m.jnt_actfrcrange[1, 1] == 5.0 and m.actuator_gear[0, 0] * 3 == 6.0
    assert model.effort_limits[dof["j1"]] == 5.0           # min(2 * 3, cap 5)
    assert model.effort_limits[dof["j2"]] == 10 * m.actuator_forcerange[1, 1]
    assert model.effort_limits[dof["j3"]] == np.inf       # a position servo: no force range
    assert model.effort_limits[dof["j4"]] == np.inf       # no actuator
    assert model.effort_limits[dof["j5"]] == 2.0 + 1.0    # -2 * -1 and 1 * 1 add up
    assert np.all(np.isinf(model.effort_limits[:6]))
    assert np.all(np.isinf(model.velocity_limits))        # MuJoCo has no speed limit
    # the joint's range stays a position range
    assert model.upper_limits[int(m.jnt_qposadr[1])] == 1.0
    # Pinocchio's MJCF parser reads actuatorfrcrange's upper end alone
    if hasattr(pin, "buildModelFromMJCF"):
        import tempfile
        with tempfile.NamedTemporaryFile("w", suffix=".xml") as f:
            f.write(MJCF)
            f.flush()
            pm = pin.buildModelFromMJCF(f.name)
        assert pm.effortLimit[dof["j1"]] == model.effort_limits[dof["j1"]] == 5.0
        assert np.all(np.isinf(pm.velocityLimit))


def _gym_humanoid():
    spec = importlib.util.find_spec("gymnasium")
    if spec is None or spec.origin is None:
        return None
    p = Path(spec.origin).parent / "envs" / "mujoco" / "assets" / "humanoid.xml"
    return p if p.is_file() else None


@pytest.mark.skipif(_gym_humanoid() is None, reason="gymnasium's humanoid.xml missing")
def test_mjcf_gymnasium_humanoid_motors():
    mujoco = pytest.importorskip("mujoco")
    path = _gym_humanoid()
    model = rbd.load_mjcf(path)
    m = mujoco.MjModel.from_xml_path(str(path))
    expect = np.full(model.nv, np.inf)
    for a in range(m.nu):
        j = int(m.actuator_trnid[a, 0])
        expect[int(m.jnt_dofadr[j])] = abs(m.actuator_gear[a, 0]) * m.actuator_ctrlrange[a, 1]
    assert m.nu == 17 and np.isfinite(expect).sum() == 17
    np.testing.assert_allclose(model.effort_limits, expect, rtol=1e-15)


def test_quadruped_state_bounds_default_to_the_models_velocity_limits():
    """As Crocoddyl's SimpleQuadrupedalGaitProblem (its StateMultibody's bounds are
    Pinocchio's velocityLimit); velocity_limits= still overrides them."""
    from rbdiff.trajopt.gaits import Quadruped
    m = rbd.load_robot("solo12")
    feet = ("FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT")
    nv = m.nv
    lo, hi = Quadruped(m, *feet)._bounds.lower, Quadruped(m, *feet)._bounds.upper
    np.testing.assert_array_equal(hi[nv + 6:], m.velocity_limits[6:])
    np.testing.assert_array_equal(lo[nv + 6:], -m.velocity_limits[6:])
    assert np.all(np.isinf(hi[nv:nv + 6])) and np.all(np.isfinite(hi[nv + 6:]))
    given = Quadruped(m, *feet, velocity_limits=np.full(nv - 6, 20.0))._bounds.upper
    np.testing.assert_array_equal(given[nv + 6:], 20.0)
    np.testing.assert_array_equal(given[:nv], hi[:nv])      # position bounds unchanged
    unbounded = m._copy(velocity_limits=np.full(nv, np.inf))
    assert np.all(np.isinf(Quadruped(unbounded, *feet)._bounds.upper[nv:]))
