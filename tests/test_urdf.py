"""URDF parser and robot loader, checked against Pinocchio's buildModelFromUrdf."""

import re
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pinocchio as pin

import rbdiff as rbd
from rbdiff.model import robots
from rbdiff.model.model import FrameType
from rbdiff.model.robots import example_robot_data_dir, load_robot, robot_names
from rbdiff.model.urdf import load_urdf, rpy_matrix

TOL = 1e-12
IIWA = Path(robots.__file__).resolve().parent.parent / "robots_data" / "iiwa14.urdf"

ERD_ROBOTS = {
    "panda": "panda_description/urdf/panda.urdf",
    "ur5": "ur_description/urdf/ur5_robot.urdf",
    "kinova": "kinova_description/robots/kinova.urdf",
    "pr2": "pr2_description/urdf/pr2.urdf",
    "solo12": "solo_description/robots/solo12.urdf",
    "hyq": "hyq_description/robots/hyq_no_sensors.urdf",
    "talos_full_v2": "talos_data/robots/talos_full_v2.urdf",
    "g1": "g1_description/urdf/g1_29dof_rev_1_0.urdf",
}
CASES = [(n, False) for n in ERD_ROBOTS] + [
    (n, True) for n in ("solo12", "hyq", "talos_full_v2", "g1")]


def pin_kind(joint_model):
    s = joint_model.shortname().removeprefix("JointModel")
    if s.startswith(("RUB", "RevoluteUnbounded")):
        return "continuous"
    if s.startswith(("R", "Revolute")):
        return "revolute"
    if s.startswith(("P", "Prismatic")):
        return "prismatic"
    return {"FreeFlyer": "free_flyer"}[s]


def build_pin(source, floating_base, from_xml=False):
    build = pin.buildModelFromXML if from_xml else pin.buildModelFromUrdf
    source = source if from_xml else str(source)
    return build(source, pin.JointModelFreeFlyer()) if floating_base else build(source)


def assert_matches_pinocchio(model, pm, link_names=None):
    assert list(model.names) == list(pm.names)
    assert (model.nq, model.nv, model.njoints) == (pm.nq, pm.nv, pm.njoints)
    assert list(model.parents) == list(pm.parents)
    assert list(model.idx_q[1:]) == list(pm.idx_qs[1:])
    assert list(model.idx_v[1:]) == list(pm.idx_vs[1:])
    q0 = pin.neutral(pm)
    for i in range(1, pm.njoints):
        jm = pm.joints[i]
        assert model.joint_type_name(i) == pin_kind(jm), pm.names[i]
        jd = jm.createData()
        jm.calc(jd, q0)
        np.testing.assert_allclose(model.motion_subspace(i),
                                   np.asarray(jd.S).reshape(6, -1), atol=TOL)
        np.testing.assert_allclose(model.placements[i], pm.jointPlacements[i].homogeneous,
                                   atol=TOL, rtol=0)
        if model.joint_type_name(i) in ("revolute", "prismatic"):
            iq = model.idx_q[i]
            assert model.lower_limits[iq] == pm.lowerPositionLimit[iq]
            assert model.upper_limits[iq] == pm.upperPositionLimit[iq]
    for i in range(pm.njoints):     # the universe too: Pinocchio keeps the welded root there
        Y = pm.inertias[i]
        assert abs(model.masses[i] - Y.mass) <= TOL * max(1.0, Y.mass), pm.names[i]
        np.testing.assert_allclose(model.coms[i], Y.lever, atol=TOL, rtol=0)
        np.testing.assert_allclose(model.inertias[i], Y.inertia, atol=TOL, rtol=0)
    # Pinocchio's frames, in its order: names, types, parent joints and frames, placements
    assert [f.name for f in model.frames] == [f.name for f in pm.frames]
    for f, pf in zip(model.frames, pm.frames):
        assert (int(f.type), f.parent, f.parent_frame) == (
            int(pf.type), pf.parentJoint, pf.parentFrame), f.name
        np.testing.assert_allclose(f.placement, pf.placement.homogeneous, atol=TOL, rtol=0)
    if link_names is not None:
        assert sorted(f.name for f in model.frames if f.type == FrameType.BODY) \
            == sorted(link_names)
    assert model.frames[0].name == "universe"
    np.testing.assert_array_equal(model.gravity, [0.0, 0.0, -9.81])


@pytest.fixture(scope="module")
def erd():
    d = example_robot_data_dir()
    if d is None:
        pytest.skip("example-robot-data is not installed")
    return d


def _links(path):
    import xml.etree.ElementTree as ET
    return [el.get("name") for el in ET.parse(path).getroot().findall("link")]


@pytest.mark.parametrize("name,floating", CASES,
                         ids=[f"{n}{'-ff' if ff else ''}" for n, ff in CASES])
def test_example_robot_data_matches_pinocchio(erd, name, floating):
    path = erd / ERD_ROBOTS[name]
    model = load_urdf(path, floating_base=floating)
    assert_matches_pinocchio(model, build_pin(path, floating), _links(path))
    if floating:
        assert model.names[1] == "root_joint" and model.joint_type_name(1) == "free_flyer"


@pytest.mark.parametrize("floating", [False, True])
def test_bundled_iiwa14_matches_pinocchio(floating):
    model = load_urdf(IIWA, floating_base=floating)
    assert_matches_pinocchio(model, build_pin(IIWA, floating), _links(IIWA))


def test_iiwa14_kinematics():
    model = load_robot("iiwa14")
    assert (model.nq, model.nv) == (7, 7)
    assert model.names[1:] == tuple(f"iiwa_joint_{k}" for k in range(1, 8))
    np.testing.assert_allclose(model.masses[1:], [4, 4, 3, 2.7, 1.7, 1.8, 0.3])
    assert model.masses[0] == 5.0       # the base, welded to the universe
    deg = np.pi / 180
    np.testing.assert_allclose(model.upper_limits, np.array([170, 120, 170, 120, 170,
                                                             120, 175]) * deg)
    np.testing.assert_allclose(model.lower_limits, -model.upper_limits)
    # zero configuration: the arm stands upright, axes z, y, z, -y, z, y, z
    T = np.eye(4)
    axes = []
    for i in range(1, 8):
        T = T @ model.placements[i]
        axes.append(T[:3, :3] @ model.axes[i])
    np.testing.assert_allclose(axes, [[0, 0, 1], [0, 1, 0], [0, 0, 1], [0, -1, 0],
                                      [0, 0, 1], [0, 1, 0], [0, 0, 1]], atol=1e-12)
    ee = model.frames[model.get_frame_id("iiwa_link_ee")]
    assert ee.parent == 7
    np.testing.assert_allclose((T @ ee.placement)[:3, 3], [0, 0, 1.306], atol=1e-12)


# -- small hand-written URDFs -----------------------------------------------------------
INERTIAL = ('<inertial><origin xyz="{c}" rpy="{r}"/><mass value="{m}"/>'
            '<inertia ixx="{i[0]}" ixy="{i[1]}" ixz="{i[2]}" iyy="{i[3]}" iyz="{i[4]}" '
            'izz="{i[5]}"/></inertial>')
LIMIT = '<limit lower="-1.5" upper="2" effort="1" velocity="1"/>'


def link(name, m=None, c="0 0 0", r="0 0 0", i=(0.1, 0, 0, 0.2, 0, 0.25)):
    body = "" if m is None else INERTIAL.format(m=m, c=c, r=r, i=i)
    return f'<link name="{name}">{body}</link>'


def joint(name, parent, child, type="revolute", xyz="0 0 0", rpy="0 0 0", extra=None):
    if extra is None:
        extra = '<axis xyz="0 0 1"/>' + (LIMIT if type in ("revolute", "prismatic") else "")
    return (f'<joint name="{name}" type="{type}"><parent link="{parent}"/>'
            f'<child link="{child}"/><origin xyz="{xyz}" rpy="{rpy}"/>{extra}</joint>')


def robot(*parts):
    return '<?xml version="1.0"?>\n<robot name="test">' + "".join(parts) + "</robot>"


def check_xml(xml, floating=(False, True)):
    for ff in floating:
        assert_matches_pinocchio(load_urdf(xml, floating_base=ff),
                                 build_pin(xml, ff, from_xml=True))


FEATURES = robot(
    link("base", 2.0, "0.1 0 0", "0.3 0.2 0.1", (0.2, 0.01, 0.0, 0.3, 0.02, 0.4)),
    link("cam", 0.5, "0 0.1 0", "0 1 0"),
    link("a", 1.0, "0 0 0.2", "0.1 0 0.5"),
    link("tool"),
    link("tip", 0.2, "0.01 0 0"),
    link("b", 1.5),
    link("c", 0.7, "0.3 0 0"),
    link("d", 0.3, "0 0 0.1"),
    link("e", 0.9),
    joint("z_first", "base", "a", "revolute", "0 0 0.3", "0.1 0.2 0.3",
          '<axis xyz="0 1 2"/>' + LIMIT),
    joint("cam_mount", "base", "cam", "fixed", "0.2 0 0.1", "0 0.5 0"),
    joint("a_tool", "a", "tool", "fixed", "0 0 0.4", "1.57 0 0"),
    joint("tool_tip", "tool", "tip", "fixed", "0.1 0 0", "0 0 0.7"),
    joint("B_slider", "tip", "b", "prismatic", "0 0.1 0", "0 0 0",
          '<axis xyz="0 0 -3"/>' + LIMIT),
    joint("a_wheel", "base", "c", "continuous", "0 -0.2 0", "0 0 1",
          '<axis xyz="0 1 0"/>'),
    joint("mid", "c", "d", "revolute", "0.4 0 0", "0 0 0", LIMIT),   # default axis x
    joint("mimic_j", "d", "e", "revolute", "0.1 0 0", "0 0 0",
          '<axis xyz="1 0 0"/>' + LIMIT + '<mimic joint="mid" multiplier="2"/>'),
)


def test_features_match_pinocchio():
    check_xml(FEATURES)
    m = load_urdf(FEATURES)
    # children visited sorted by joint name (byte order: "B" < "a" < "z"), depth first
    assert m.names == ("universe", "a_wheel", "mid", "mimic_j", "z_first", "B_slider")
    assert m.joint_type_name(1) == "continuous" and m.nqs[1] == 2
    np.testing.assert_allclose(m.axes[2], [1, 0, 0])
    np.testing.assert_allclose(m.axes[5], [0, 0, -1])
    assert m.frames[m.get_frame_id("tool")].parent == m.get_joint_id("z_first")
    assert m.masses[0] == 2.5       # base and cam, welded to the universe
    assert m.masses[m.get_joint_id("z_first")] == pytest.approx(1.2)


def test_floating_joint_and_link_without_inertial():
    xml = robot(link("world"), link("body", 3.0, "0 0 0.1"), link("arm", 1.0),
                joint("free", "world", "body", "floating", extra=""),
                joint("j", "body", "arm", "revolute", "0 0 0.5"))
    check_xml(xml)
    m = load_urdf(xml)
    assert m.joint_type_name(1) == "free_flyer" and (m.nq, m.nv) == (8, 7)
    assert m.masses[0] == 0.0


def test_single_link():
    m = load_urdf(robot(link("only", 1.0)))
    assert (m.njoints, m.nq) == (1, 0) and [f.name for f in m.frames] == ["universe", "only"]
    m = load_urdf(robot(link("only", 1.0)), floating_base=True)
    assert (m.njoints, m.nq, m.nv, m.masses[1]) == (2, 7, 6, 1.0)


def test_rpy_convention():
    r, p, y = 0.3, -0.7, 1.1
    def rot(axis, a):
        return pin.AngleAxis(a, np.eye(3)[axis]).matrix()
    np.testing.assert_allclose(rpy_matrix(r, p, y), rot(2, y) @ rot(1, p) @ rot(0, r),
                               atol=1e-15)
    np.testing.assert_allclose(rpy_matrix(r, p, y), pin.rpy.rpyToMatrix(r, p, y), atol=1e-15)


def test_path_forms(tmp_path):
    f = tmp_path / "r.urdf"
    f.write_text(FEATURES)
    a, b, c = load_urdf(f), load_urdf(str(f)), load_urdf("\n  " + FEATURES)
    assert a.names == b.names == c.names
    np.testing.assert_array_equal(a.placements, c.placements)


# -- bad input --------------------------------------------------------------------------
ARM = [link("base", 1.0), link("l1", 1.0)]


@pytest.mark.parametrize("xml,match", [
    ("<robot><link name='a'>", "not valid XML"),
    ("<model><link name='a'/></model>", "<robot>"),
    (robot(), "no <link>"),
    (robot(link("a"), "<link/>"), "no name"),
    (robot(link("a"), link("a")), "link 'a' is defined twice"),
    (robot(*ARM, joint("j1", "base", "l1"), joint("j1", "base", "l1")),
     "joint 'j1' is defined twice"),
    (robot(*ARM, '<joint name="j1" type="fixed"><child link="l1"/></joint>'),
     "joint 'j1'.*parent"),
    (robot(*ARM, '<joint name="j1" type="fixed"><parent link="base"/><child/></joint>'),
     "joint 'j1'.*child"),
    (robot(*ARM, '<joint name="j1" type="fixed"><parent link="base"/></joint>'),
     "joint 'j1'.*child"),
    (robot(*ARM, joint("j1", "base", "nowhere")), "joint 'j1'.*'nowhere'"),
    (robot(*ARM, joint("j1", "ghost", "l1")), "joint 'j1'.*'ghost'"),
    (robot(*ARM, link("l2"), joint("j1", "base", "l2"), joint("j2", "l1", "l2"),
           joint("j3", "base", "l1")), "link 'l2' has two parents"),
    (robot(*ARM, link("l2"), joint("j1", "l1", "l2"), joint("j2", "l2", "l1")),
     "link 'l1'.*cycle"),
    (robot(*ARM, joint("j1", "base", "l1"), joint("j2", "l1", "base")), "cycle"),
    (robot(*ARM), "several root links.*'base'.*'l1'"),
    (robot(*ARM, joint("j1", "base", "l1", "planar")),
     "joint 'j1'.*unsupported joint type 'planar'"),
    (robot(*ARM, joint("j1", "base", "l1", "spherical")), "joint 'j1'.*unsupported"),
    (robot(*ARM, '<joint name="j1"><parent link="base"/><child link="l1"/></joint>'),
     "joint 'j1'.*unsupported joint type None"),
    (robot(*ARM, joint("j1", "base", "l1", extra='<axis xyz="0 0 0"/>' + LIMIT)),
     "joint 'j1'.*axis"),
    (robot(*ARM, joint("j1", "base", "l1", "continuous", extra='<axis xyz="0 0"/>')),
     "joint 'j1'.*axis"),
    (robot(*ARM, joint("j1", "base", "l1", "prismatic", extra='<axis xyz="0 0 x"/>' + LIMIT)),
     "joint 'j1'.*axis.*not a number"),
    (robot(*ARM, joint("j1", "base", "l1", extra='<axis xyz="0 0 1"/>')),
     "joint 'j1'.*<limit>"),
    (robot(*ARM, joint("j1", "base", "l1", extra='<axis xyz="0 0 1"/>'
                       '<limit lower="1" upper="-1"/>')), "joint 'j1'.*lower limit"),
    (robot(*ARM, joint("j1", "base", "l1", extra='<axis xyz="0 0 1"/>'
                       '<limit lower="-inf" upper="1"/>')), "joint 'j1'.*not finite"),
    (robot(*ARM, joint("j1", "base", "l1", xyz="0 nan 0")), "joint 'j1'.*not finite"),
    (robot(*ARM, joint("j1", "base", "l1", rpy="0 0 inf")), "joint 'j1'.*not finite"),
    (robot(link("base"), link("l1", -1.0), joint("j1", "base", "l1")),
     "link 'l1'.*mass.*non-negative"),
    (robot(link("base"), link("l1", "nan"), joint("j1", "base", "l1")),
     "link 'l1'.*mass.*not finite"),
    (robot(link("base"), link("l1", 1.0, c="0 inf 0"), joint("j1", "base", "l1")),
     "link 'l1'.*not finite"),
    (robot(link("base"), link("l1", 1.0, i=(1, 0, 0, 1, 0, "1e400")),
           joint("j1", "base", "l1")), "link 'l1'.*izz.*not finite"),
    (robot(link("base"), '<link name="l1"><inertial><mass value="1"/></inertial></link>',
           joint("j1", "base", "l1")), "link 'l1'.*<inertia>"),
    (robot(link("base"), '<link name="l1"><inertial><inertia ixx="1" ixy="0" ixz="0" '
           'iyy="1" iyz="0" izz="1"/></inertial></link>', joint("j1", "base", "l1")),
     "link 'l1'.*<mass"),
    (robot(link("base"), '<link name="l1"><inertial><mass value="1"/><inertia ixx="1" '
           'iyy="1" izz="1"/></inertial></link>', joint("j1", "base", "l1")),
     "link 'l1'.*ixy"),
    (robot(link("base"), link("l1", 1.0, i=(1, 2, 0, 1, 0, 1)), joint("j1", "base", "l1")),
     "link 'l1'.*not positive semi-definite"),
    (robot(link("base"), link("l1", 1.0, i=(1, 0, 0, 1, 0, 3)), joint("j1", "base", "l1")),
     "link 'l1'.*triangle inequality"),
    (robot(link("base", 1.0, i=(1, 0, 0, 1, 0, 3)), link("l1"), joint("j1", "base", "l1")),
     "link 'base'.*triangle inequality"),
])
def test_bad_input(xml, match):
    with pytest.raises(ValueError, match=match):
        load_urdf(xml, strict=True)
    if "lower limit" in match or "triangle" in match:
        return          # the forgiving default loads these: test_forgiving_like_pinocchio
    with pytest.raises(ValueError, match=match):
        load_urdf(xml)


def test_bad_input_floating_root_joint_inertia():
    xml = robot(link("base", 1.0, i=(1, 0, 0, 1, 0, 3)), link("l1"), joint("j1", "base", "l1"))
    with pytest.raises(ValueError, match="link 'base'.*triangle"):
        load_urdf(xml, floating_base=True, strict=True)


# what Pinocchio's parser loads and strict=True refuses: inertias whose principal moments
# violate the triangle inequality (as the xArm6 and Mini Cheetah descriptions carry) and a
# lower limit above the upper one
FORGIVEN = [
    (robot(link("base"), link("l1", 1.0, "0 0 0.1", i=(1, 0, 0, 1, 0, 3)),
           link("l2", 0.5, "0.1 0 0"), joint("j1", "base", "l1"),
           joint("j2", "l1", "l2", "revolute", "0 0 0.3", "0 0 0", LIMIT)),
     "link 'l1'.*triangle inequality.*loaded as given"),
    (robot(link("base", 1.0, i=(1, 0, 0, 1, 0, 3)), link("l1", 1.0),
           joint("j1", "base", "l1")), "link 'base'.*triangle inequality"),
    (robot(link("base", 2.0), link("l1", 1.0), joint("j1", "base", "l1", "revolute", "0 0 0",
                                                    "0 0 0",
                                                '<axis xyz="0 0 1"/><limit lower="1" '
                                                'upper="-1" effort="1" velocity="1"/>')),
     "joint 'j1': lower limit 1.0 above upper limit -1.0; kept as given"),
]


@pytest.mark.parametrize("xml, match", FORGIVEN)
def test_forgiving_like_pinocchio(xml, match):
    """Loaded with a warning naming the link or joint, and equal to Pinocchio's model."""
    for ff in (False, True):
        with pytest.warns(UserWarning, match=match) as record:
            model = load_urdf(xml, floating_base=ff)
        assert {w.filename for w in record} == {__file__}    # the caller's line, not rbdiff's
        assert_matches_pinocchio(model, build_pin(xml, ff, from_xml=True))
        q = rbd.random_configuration(model, np.random.default_rng(0), batch=64)
        z = np.zeros((64, model.nv))
        assert np.all(np.isfinite(rbd.aba(model, q, z, z)))


def test_blank_line_before_xml_declaration(tmp_path):
    path = tmp_path / "r.urdf"
    path.write_text("\n  \n" + FEATURES)                 # FEATURES starts <?xml ...?>
    with pytest.warns(UserWarning, match="blank space before the XML declaration") as rec:
        model = load_urdf(path)
    assert [w.filename for w in rec] == [__file__]
    with pytest.raises(ValueError, match="not valid XML"):
        load_urdf(path, strict=True)
    assert_matches_pinocchio(model, build_pin(FEATURES, False, from_xml=True))


def test_unphysical_link_inside_physical_body():
    # like PR2's sensor_mount_link: a thin-rod-like link welded to a large body is kept
    xml = robot(link("base"), link("l1", 5.0), link("rod", 0.01, i=(1e-6, 0, 0, 1e-6, 0, 1e-5)),
                joint("j1", "base", "l1"), joint("weld", "l1", "rod", "fixed", "0 0 0.1"))
    check_xml(xml, floating=(False,))


def test_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError):
        load_urdf(tmp_path / "nope.urdf")
    with pytest.raises(FileNotFoundError):
        load_urdf("no/such/robot.urdf")


# -- load_robot -------------------------------------------------------------------------
def test_robot_names_and_errors(monkeypatch):
    pytest.importorskip("example_robot_data", reason="example-robot-data-loaders is not "
                        "installed")
    names = robot_names()
    for n in ["iiwa14", "panda", "ur5", "ur3", "ur10", "kinova", "pr2", "solo12", "solo",
              "hyq", "talos_full_v2", "talos", "g1", "go1", "go2", "a1", "anymal",
              "anymal_c", "tiago", "baxter", "romeo", "icub", "double_pendulum", "z1",
              "xarm7"]:
        assert n in names
    with pytest.raises(KeyError, match="unknown robot 'nao'.*iiwa14"):
        load_robot("nao")
    monkeypatch.setattr(robots, "example_robot_data_dir", lambda: None)
    with pytest.raises(ImportError, match="pip install example-robot-data"):
        load_robot("panda")
    assert load_robot("iiwa14").nq == 7      # bundled, needs no example-robot-data


def test_load_robot_iiwa14_defaults():
    assert load_robot("iiwa14").names[1] == "iiwa_joint_1"
    m = load_robot("iiwa14", floating_base=True)
    assert (m.names[1], m.nq, m.nv) == ("root_joint", 14, 13)


@pytest.mark.parametrize("name", [n for n in robot_names() if n != "iiwa14"])
def test_load_robot_all_names(erd, name):
    try:
        path = robots.robot_path(name)
    except (FileNotFoundError, ValueError) as e:    # SDF; files of another release
        pytest.skip(str(e))
    assert path.is_file()
    # romeo's hands and the bravo7 grippers' fingers carry no inertia: M(q) is singular
    # for every q, and only a kinematics-only load (allow_singular) may build them
    singular = {"romeo": "'LHand'.*'RHand'", "bravo7_gripper": "'bravo_finger1_joint'",
                "bluevolta_bravo7_gripper": "'bravo_finger1_joint'",
                "falcon_bravo7_gripper": "'bravo_finger1_joint'"}
    if name in singular:
        with pytest.raises(ValueError, match=singular[name] + ".*allow_singular=True"):
            load_robot(name)
    model = load_robot(name, allow_singular=name in singular)
    floating = robots.default_floating_base(name)     # the loader's free_flyer
    assert (model.njoints > 1 and model.names[1] == "root_joint") == floating
    if robots._edits_model(robots._loader_class(name)):
        return                   # not the URDF's model: tests/test_robots_erd.py
    pm = build_pin(path, floating)
    assert list(model.names) == list(pm.names)
    assert (model.nq, model.nv) == (pm.nq, pm.nv)


# -- mutated URDFs: a model with finite results, or a clear error (hypothesis) ----------
_BAD_NUMBERS = ["0", "-1", "nan", "inf", "1e-300", "1e12", "x", ""]


def _mutate(xml, draws):
    """FEATURES with the mutations ``draws`` [(kind, index, value index)] applied."""
    import xml.etree.ElementTree as ET
    root = ET.fromstring(xml)
    links, joints = root.findall("link"), root.findall("joint")
    for kind, k, v in draws:
        bad = _BAD_NUMBERS[v % len(_BAD_NUMBERS)]
        link, jt = links[k % len(links)], joints[k % len(joints)]
        inertial = link.find("inertial")
        if kind == "drop_inertial" and inertial is not None:
            link.remove(inertial)
        elif kind == "mass" and inertial is not None:
            inertial.find("mass").set("value", bad)
        elif kind == "inertia" and inertial is not None:
            inertial.find("inertia").set(("ixx", "ixy", "iyy", "izz")[v % 4], bad)
        elif kind == "limit" and jt.find("limit") is not None:
            lim = jt.find("limit")
            if v % 2:
                lim.set("lower", lim.get("upper")), lim.set("upper", "-3")
            else:
                lim.set("upper", bad)
        elif kind == "axis" and jt.find("axis") is not None:
            jt.find("axis").set("xyz", ("0 0 0", "nan 0 1", "1 2", "1e-300 0 0")[v % 4])
        elif kind == "child":
            jt.find("child").set("link", ("nowhere", links[v % len(links)].get("name"))[v % 2])
        elif kind == "type":
            jt.set("type", ("floating", "planar", "bogus", "fixed", "continuous")[v % 5])
        elif kind == "origin":
            origin = jt.find("origin")
            if origin is not None:
                origin.set("rpy", ("nan 0 0", "0 0", "1e308 0 0")[v % 3])
    return ET.tostring(root, encoding="unicode")


_KINDS = ["drop_inertial", "mass", "inertia", "limit", "axis", "child", "type", "origin"]


@settings(max_examples=60, deadline=None)
@given(draws=st.lists(st.tuples(st.sampled_from(_KINDS), st.integers(0, 20),
                                st.integers(0, 40)), min_size=1, max_size=3),
       floating=st.booleans(), seed=st.integers(0, 2**31 - 1))
def test_mutated_urdf_loads_finite_or_raises_clearly(draws, floating, seed):
    """Whatever the mutation, load_urdf gives a model whose dynamics are finite (or whose
    forward dynamics refuse a singular M(q) by name), or raises a ValueError that names
    the link or joint (or the XML) - never NaN, never an unrelated exception."""
    xml = _mutate(FEATURES, draws)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = load_urdf(xml, floating_base=floating)
    except ValueError as e:
        msg = str(e)
        assert re.search(r"link|joint|XML|URDF|frame", msg), msg
        if "allow_singular=True" not in msg:
            return
        model = load_urdf(xml, floating_base=floating, allow_singular=True)
    rng = np.random.default_rng(seed)
    q = rbd.random_configuration(model, rng)
    v, a = rng.normal(size=model.nv), rng.normal(size=model.nv)
    for x in (rbd.rnea(model, q, v, a), rbd.crba(model, q),
              rbd.frame_placements(model, q), rbd.frame_jacobian(model, q, -1)):
        assert np.all(np.isfinite(x))
    try:
        qdd = rbd.aba(model, q, v, a)
    except ValueError as e:
        assert "forward dynamics undefined" in str(e) and "joint" in str(e), str(e)
    else:
        assert np.all(np.isfinite(qdd))


def test_robot_path_is_public():
    """rbd.robot_path gives the file load_robot reads (bundled or example-robot-data)."""
    for name in ("iiwa14", "panda"):
        path = rbd.robot_path(name)
        assert path.is_file() and path.suffix == ".urdf"
        a, b = load_urdf(path), rbd.load_robot(name)
        assert a.names == b.names and np.array_equal(a.mf, b.mf)
    with pytest.raises(KeyError, match="unknown robot 'nope'"):
        rbd.robot_path("nope")
