"""Frames as Pinocchio names them: the frame list of every robot, frame placements and
Jacobians of joint and fixed-joint frames, get_frame_id, and the ModelBuilder's frames."""

import numpy as np
import pinocchio as pin
import pytest

import rbdiff as rbd
from conftest import ROBOTS, robot_pair
from rbdiff.model.urdf import load_urdf

PIN_REFS = {"local": pin.LOCAL, "world": pin.WORLD,
            "local_world_aligned": pin.LOCAL_WORLD_ALIGNED}
IDS = [f"{n}{'+ff' if ff else ''}" for n, ff in ROBOTS]


def test_frame_type_is_pinocchios():
    assert {t.name: int(t) for t in rbd.FrameType} == {
        k: int(v) for k, v in pin.FrameType.names.items()}


def assert_same_frames(model, pm):
    assert [f.name for f in model.frames] == [f.name for f in pm.frames]
    for f, pf in zip(model.frames, pm.frames):
        assert f.type.name == str(pf.type), f.name
        assert (f.parent, f.parent_joint, f.parent_frame) == (
            pf.parentJoint, pf.parentJoint, pf.parentFrame), f.name
        np.testing.assert_allclose(f.placement, pf.placement.homogeneous, atol=1e-12,
                                   rtol=0, err_msg=f.name)


@pytest.mark.parametrize("name,ff", ROBOTS, ids=IDS)
def test_robot_frames_match_pinocchio(name, ff):
    """Frame list, placements of every frame at a random q, get_frame_id of every frame,
    and the Jacobians of a joint frame and a fixed-joint frame in all three references."""
    model, pm = robot_pair(name, ff)
    assert isinstance(model.frames, tuple)
    assert_same_frames(model, pm)
    for k, pf in enumerate(pm.frames):
        assert model.get_frame_id(pf.name, pf.type) == k == pm.getFrameId(pf.name, pf.type)

    pd = pm.createData()
    rng = np.random.default_rng(7)
    q = pin.integrate(pm, pin.neutral(pm), rng.normal(size=pm.nv))
    pin.framesForwardKinematics(pm, pd, q)     # forwardKinematics + updateFramePlacements
    T = rbd.frame_placements(model, q)
    assert T.shape == (len(pm.frames), 4, 4)
    for k, pf in enumerate(pm.frames):
        ref = pd.oMf[k].homogeneous
        np.testing.assert_allclose(T[k], ref, atol=1e-12, rtol=0, err_msg=pf.name)
        np.testing.assert_allclose(rbd.frame_placement(model, q, pf.name),
                                   pd.oMf[pm.getFrameId(pf.name)].homogeneous,
                                   atol=1e-12, rtol=0, err_msg=pf.name)
        np.testing.assert_array_equal(rbd.frame_placement(model, q, k), T[k])

    # the deepest joint frame and fixed-joint frame (the most Jacobian columns)
    joint = max((f for f in model.frames if f.type == rbd.FrameType.JOINT),
                key=lambda f: f.parent)
    fixed = max((f for f in model.frames[1:] if f.type == rbd.FrameType.FIXED_JOINT),
                key=lambda f: f.parent)
    for f in (joint, fixed):
        fid = model.get_frame_id(f.name, f.type)
        for ref, pref in PIN_REFS.items():
            J = rbd.frame_jacobian(model, q, f.name, ref)
            Jp = pin.computeFrameJacobian(pm, pm.createData(), q, fid, pref)
            np.testing.assert_allclose(J, Jp, atol=1e-11, rtol=0, err_msg=f"{f.name} {ref}")
            np.testing.assert_array_equal(rbd.frame_jacobian(model, q, fid, ref), J)


def test_talos_gripper_joint_frame():
    """The case that started it: code written against Pinocchio finds a joint frame."""
    model, pm = robot_pair("talos_full_v2", True)
    pd = pm.createData()
    q = pin.integrate(pm, pin.neutral(pm), np.random.default_rng(3).normal(size=pm.nv))
    pin.framesForwardKinematics(pm, pd, q)
    fid = pm.getFrameId("gripper_left_joint")
    assert model.get_frame_id("gripper_left_joint") == fid
    assert model.frames[fid].type == rbd.FrameType.JOINT
    np.testing.assert_allclose(rbd.frame_placement(model, q, "gripper_left_joint"),
                               pd.oMf[fid].homogeneous, atol=1e-12, rtol=0)


def test_unknown_frame_name_suggests_close_ones():
    model, _ = robot_pair("talos_full_v2", True)
    q = rbd.neutral(model)
    with pytest.raises(KeyError, match="no frame named 'gripper_left_jiont'") as e:
        rbd.frame_placement(model, q, "gripper_left_jiont")
    assert "'gripper_left_joint'" in str(e.value)
    with pytest.raises(KeyError, match="close matches: .*'arm_left_7_link'"):
        rbd.frame_jacobian(model, q, "arm_left_7_lnk")
    with pytest.raises(KeyError, match="no close match"):
        model.get_frame_id("zzzzqqqq")
    with pytest.raises(KeyError, match=r"of type BODY \(there is a frame of that name of "
                                       r"type JOINT\)"):
        model.get_frame_id("gripper_left_joint", rbd.FrameType.BODY)


# -- a joint and a link with one name, and other corners of Pinocchio's rules -----------
L = ('<link name="{}"><inertial><mass value="1"/>'
     '<inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial></link>')


def _joint(name, parent, child, kind="revolute"):
    return (f'<joint name="{name}" type="{kind}"><parent link="{parent}"/>'
            f'<child link="{child}"/><origin xyz="0 0.1 1" rpy="0.3 0 0"/>'
            '<axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>')


def _robot(*parts):
    return '<robot name="r">' + "".join(parts) + "</robot>"


CLASH = _robot(L.format("base"), L.format("a"), L.format("tip"), L.format("b"),
               _joint("a", "base", "a"), _joint("tip", "a", "tip", "fixed"),
               _joint("b_joint", "tip", "b"))


def _pin(xml, ff):
    return (pin.buildModelFromXML(xml, pin.JointModelFreeFlyer()) if ff
            else pin.buildModelFromXML(xml))


@pytest.mark.parametrize("ff", [False, True])
def test_get_frame_id_with_type(ff):
    """A joint and a link both called "a" (and a fixed joint and a link both called
    "tip"): without a type the first frame is returned (the joint's); a type picks,
    given as rbd.FrameType, Pinocchio's FrameType, an OR of types or a name."""
    model, pm = load_urdf(CLASH, floating_base=ff), _pin(CLASH, ff)
    assert_same_frames(model, pm)
    FT = rbd.FrameType
    joint_a, body_a = pm.getFrameId("a", pin.JOINT), pm.getFrameId("a", pin.BODY)
    assert joint_a < body_a
    assert model.get_frame_id("a") == joint_a
    assert model.get_frame_id("a", FT.JOINT) == joint_a
    for t in (FT.BODY, pin.BODY, "BODY", "body", FT.BODY | FT.OP_FRAME):
        assert model.get_frame_id("a", t) == body_a
    assert model.get_frame_id("tip", FT.FIXED_JOINT) == pm.getFrameId("tip", pin.FIXED_JOINT)
    assert model.get_frame_id("tip", FT.BODY) == pm.getFrameId("tip", pin.BODY)
    assert model.get_frame_id("tip", FT.BODY | FT.FIXED_JOINT) == model.get_frame_id("tip")
    with pytest.raises(ValueError, match="Several frames"):    # Pinocchio 4 refuses to pick
        pm.getFrameId("a")
    with pytest.raises(KeyError, match="no frame named 'a' of type OP_FRAME"):
        model.get_frame_id("a", FT.OP_FRAME)
    with pytest.raises(ValueError, match="unknown frame type 'link'"):
        model.get_frame_id("a", "link")
    with pytest.raises(ValueError, match="not a FrameType"):
        model.get_frame_id("a", 0)
    rng = np.random.default_rng(0)
    q = pin.integrate(pm, pin.neutral(pm), rng.normal(size=pm.nv))
    pd = pm.createData()
    pin.framesForwardKinematics(pm, pd, q)
    np.testing.assert_allclose(rbd.frame_placements(model, q),
                               [M.homogeneous for M in pd.oMf], atol=1e-12, rtol=0)


def test_fixed_joint_named_universe():
    """Pinocchio keeps one frame per (name, type): a fixed joint called "universe" makes
    no frame of its own, its child link hangs from frame 0."""
    xml = _robot(L.format("base"), L.format("x"), L.format("y"),
                 _joint("universe", "base", "x", "fixed"), _joint("j", "x", "y"))
    model, pm = load_urdf(xml), _pin(xml, False)
    assert_same_frames(model, pm)
    assert [f.name for f in model.frames] == ["universe", "base", "x", "j", "y"]
    assert model.frames[2].parent_frame == 0


@pytest.mark.parametrize("xml,ff", [
    (_robot(L.format("universe"), L.format("x"), _joint("j", "universe", "x")), False),
    (_robot(L.format("base"), L.format("x"), _joint("root_joint", "base", "x", "fixed")), True),
    (_robot(L.format("root_joint"), L.format("x"), _joint("j", "root_joint", "x")), True),
], ids=["root-link-universe", "fixed-joint-root_joint", "root-link-root_joint"])
def test_names_shared_with_universe_or_root_joint(xml, ff):
    """Other types than the universe's FIXED_JOINT and root_joint's JOINT: a frame each."""
    assert_same_frames(load_urdf(xml, floating_base=ff), _pin(xml, ff))


# -- ModelBuilder -----------------------------------------------------------------------
def test_builder_frames():
    """add_joint adds a JOINT frame, append_body(name=...) a BODY frame, add_frame an
    OP_FRAME unless told; parent frames default as Pinocchio's addJointFrame and
    addBodyFrame; a second frame with one name and type is refused."""
    FT = rbd.FrameType
    T = np.eye(4)
    T[:3, 3] = [0.1, 0.2, 0.3]
    b = rbd.ModelBuilder()
    j1 = b.add_joint(0, "revolute", "shoulder", T, [0, 0, 1])
    b.append_body(j1, 1.0, [0, 0, 0.5], np.eye(3) * 0.1, placement=T, name="upper_arm")
    j2 = b.add_joint(j1, "prismatic", "slide", T, [1, 0, 0])
    b.append_body(j2, 1.0, [0, 0, 0.5], np.eye(3) * 0.1)            # no name: no frame
    tool = b.add_frame("tool", j2, T)
    assert b.add_frame("shoulder", j1, type="body") == 5            # other type: allowed
    with pytest.raises(ValueError, match="a JOINT frame with this name already exists"):
        b.add_frame("slide", j2, type=FT.JOINT)
    with pytest.raises(ValueError, match="a BODY frame with this name already exists"):
        b.append_body(j2, 1.0, [0, 0, 0], np.eye(3), name="upper_arm")
    with pytest.raises(ValueError, match="one FrameType"):
        b.add_frame("x", j2, type=FT.BODY | FT.JOINT)
    with pytest.raises(ValueError, match="parent_frame 99"):
        b.add_frame("x", j2, parent_frame=99)
    with pytest.raises(ValueError, match="joint 7 is not an existing joint"):
        b.add_frame("x", 7)
    m = b.build()
    got = [(f.name, f.type, f.parent, f.parent_frame) for f in m.frames]
    assert got == [("universe", FT.FIXED_JOINT, 0, 0), ("shoulder", FT.JOINT, 1, 0),
                   ("upper_arm", FT.BODY, 1, 1), ("slide", FT.JOINT, 2, 1),
                   ("tool", FT.OP_FRAME, 2, 3), ("shoulder", FT.BODY, 1, 1)]
    assert tool == 4 and m.get_frame_id("tool") == 4 and m.get_frame_id("shoulder") == 1
    np.testing.assert_array_equal(m.frames[2].placement, T)
    assert not m.frames[2].placement.flags.writeable

    # the same sequence in Pinocchio; -1 asks for C++'s default parent frame (the Python
    # binding of addJointFrame defaults to frame 0 instead)
    pm = pin.Model()
    S = pin.SE3(T)
    p1 = pm.addJoint(0, pin.JointModelRZ(), S, "shoulder")
    pm.addJointFrame(p1, -1)
    pm.addBodyFrame("upper_arm", p1, S, -1)
    p2 = pm.addJoint(p1, pin.JointModelPX(), S, "slide")
    pm.addJointFrame(p2, -1)
    pm.addFrame(pin.Frame("tool", p2, pm.getFrameId("slide"), S, pin.OP_FRAME))
    pm.addBodyFrame("shoulder", p1, pin.SE3.Identity(), -1)
    assert_same_frames(m, pm)


@pytest.mark.parametrize("make", [lambda: rbd.models.serial_chain(4),
                                  lambda: rbd.models.binary_tree(7),
                                  lambda: rbd.models.random_tree(9, 3, floating_base=True)])
def test_synthetic_models_frames(make):
    """Synthetic models: the universe, a JOINT frame per joint (parent frame: the parent
    joint's), and random_tree's BODY frames; frame_placement of a joint frame is the
    joint's placement."""
    m = make()
    joints = [f for f in m.frames if f.type == rbd.FrameType.JOINT]
    assert [f.name for f in joints] == list(m.names[1:])
    for f in joints:
        assert f.parent_frame == m.get_frame_id(m.names[m.parents[f.parent]])
        np.testing.assert_array_equal(f.placement, np.eye(4))
    q = rbd.random_configuration(m, np.random.default_rng(1))
    oMi = rbd.forward_kinematics(m, q).placements
    for i in range(1, m.njoints):
        np.testing.assert_allclose(rbd.frame_placement(m, q, m.names[i]), oMi[i], atol=1e-14)


def test_reference_frames_in_any_case_and_pinocchios_enum():
    """"LOCAL_WORLD_ALIGNED", "World" and pin.LOCAL name the same frames as the lower-case
    names, on the Jacobian and the kinematics derivatives; anything else is refused."""
    model = rbd.models.random_tree(6, 2, floating_base=True)
    rng = np.random.default_rng(8)
    q = rbd.random_configuration(model, rng)
    v, a = rng.normal(size=(2, model.nv))
    for name, pin_ref in (("local", pin.LOCAL), ("world", pin.WORLD),
                          ("local_world_aligned", pin.LOCAL_WORLD_ALIGNED)):
        want = rbd.frame_jacobian(model, q, 3, name)
        for ref in (name.upper(), name.title(), pin_ref):
            np.testing.assert_array_equal(rbd.frame_jacobian(model, q, 3, ref), want)
            np.testing.assert_array_equal(
                rbd.kinematics_derivatives(model, q, v, a, ref).da_dq,
                rbd.kinematics_derivatives(model, q, v, a, name).da_dq)
            np.testing.assert_array_equal(
                rbd.kinematics_derivatives(model, q, v, a, ref, joint=2).dv_dq,
                rbd.kinematics_derivatives(model, q, v, a, name, joint=2).dv_dq)
    for bad in ("body", 1, None):
        with pytest.raises(ValueError, match="reference: expected one of .*any case"):
            rbd.frame_jacobian(model, q, 3, bad)
