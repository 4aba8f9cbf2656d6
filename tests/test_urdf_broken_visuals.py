"""A <visual> or <collision> element that can't be read never stops a URDF from loading
(pybullet's racecar_differential.urdf has a mesh scale of 4 numbers): one warning naming
the link and the element, the element skipped, the other visuals kept, the dynamics
Pinocchio's. The dynamics elements stay hard errors."""

import numpy as np
import pytest

import pinocchio as pin

import rbdiff as rbd
from conftest import full, random_state, rel_err
from rbdiff.model.model import FrameType
from rbdiff.model.urdf import load_urdf
from test_urdf import assert_matches_pinocchio, build_pin, joint, robot

TOL = 1e-10
WHEELS = ("left_rear", "right_rear", "left_front", "right_front")
STEER = '<axis xyz="0 0 1"/><limit lower="-0.7" upper="0.7" effort="10" velocity="1"/>'
SPIN = '<axis xyz="0 1 0"/>'


def vehicle_link(name, mass, inertia, elements=""):
    ixx, iyy, izz = inertia
    return (f'<link name="{name}"><inertial><origin xyz="0 0 0.01"/><mass value="{mass}"/>'
            f'<inertia ixx="{ixx}" ixy="0" ixz="0" iyy="{iyy}" iyz="0" izz="{izz}"/>'
            f'</inertial>{elements}</link>')


def visual(geometry, extra=""):
    return f'<visual>{extra}<geometry>{geometry}</geometry></visual>'


def collision(geometry):
    return f'<collision><geometry>{geometry}</geometry></collision>'


WHEEL_GEOM = '<cylinder radius="0.05" length="0.04"/>'
WHEEL_VISUAL = visual(WHEEL_GEOM, '<origin rpy="1.5708 0 0"/><material name="black"/>')
# element -> the warning it gives; each is the only broken one of its link
BROKEN = {
    "chassis visual 0": "mesh scale needs 3 numbers, got '1 1 1 1'",
    "left_front_wheel collision 0": "cylinder radius is not a number: 'r'",
    "right_steering_hinge visual 1": "origin xyz needs 3 numbers, got '0 0'",
    "right_steering_hinge visual 2": "unknown geometry <capsule>",
    "left_rear_wheel visual 1": "color rgba needs 4 numbers",
    "right_rear_wheel visual 1": "<mesh> has no filename",
}


def vehicle_urdf():
    """A racecar-like vehicle: a base with the chassis welded on, rear wheels spinning on
    the chassis, front wheels on steering hinges; the elements in BROKEN broken."""
    parts = [
        '<material name="black"><color rgba="0 0 0 1"/></material>',
        vehicle_link("base_link", 0.1, (1e-4, 1e-4, 1e-4)),
        vehicle_link("chassis", 4.0, (0.01, 0.04, 0.045),
                     visual('<mesh filename="package://car/chassis.stl" scale="1 1 1 1"/>')
                     + visual('<box size="0.4 0.2 0.1"/>', '<origin xyz="0 0 0.05"/>')
                     + collision('<box size="0.4 0.2 0.1"/>')),
        joint("base_link_joint", "base_link", "chassis", "fixed", "0 0 0.05"),
    ]
    for w in WHEELS:
        front = w.endswith("front")
        bad = {"left_front": collision('<cylinder radius="r" length="0.04"/>'),
               "left_rear": visual(WHEEL_GEOM, '<material name="m"><color rgba="1 0 0"/>'
                                               '</material>'),
               "right_rear": visual('<mesh scale="1 1 1"/>')}.get(w, "")
        parts.append(vehicle_link(f"{w}_wheel", 0.34, (2.6e-4, 4.3e-4, 2.6e-4),
                                  WHEEL_VISUAL + bad + collision(WHEEL_GEOM)))
        x, y = (0.16 if front else -0.16), (0.1 if w.startswith("left") else -0.1)
        parent = "chassis"
        if front:
            hinge = f"{w.split('_')[0]}_steering_hinge"
            bad = (visual('<sphere radius="0.01"/>', '<origin xyz="0 0"/>')
                   + visual('<capsule radius="0.01" length="0.1"/>')
                   if hinge.startswith("right") else "")
            parts += [vehicle_link(hinge, 0.1, (4e-6, 4e-6, 4e-6),
                                   visual('<sphere radius="0.01"/>') + bad),
                      joint(f"{hinge}_joint", "chassis", hinge, "revolute", f"{x} {y} 0",
                            extra=STEER)]
            parent, x, y = hinge, 0.0, 0.0
        parts.append(joint(f"{w}_wheel_joint", parent, f"{w}_wheel", "continuous",
                           f"{x} {y} 0", extra=SPIN))
    return robot(*parts)


def _load(path, floating):
    with pytest.warns(UserWarning) as record:
        model = load_urdf(path, floating_base=floating)
    return model, [str(w.message) for w in record]


@pytest.mark.parametrize("floating", [False, True], ids=["fixed", "free-flyer"])
def test_broken_visuals_skipped_dynamics_match_pinocchio(tmp_path, floating):
    path = tmp_path / "vehicle.urdf"
    path.write_text(vehicle_urdf())
    model, messages = _load(path, floating)
    # one warning per broken element, naming its link and the element, nothing else
    assert len(messages) == len(BROKEN), messages
    for element, why in BROKEN.items():
        link, rest = element.split(" ", 1)
        hits = [m for m in messages if m.startswith(f"link {link!r} {rest}: ")]
        assert len(hits) == 1 and why in hits[0] and hits[0].endswith("; element skipped"), \
            (element, messages)
    # the good visuals are kept, on their link's BODY frame
    kept = sorted((v.name, v.shape) for v in model.visuals)
    assert kept == sorted([("chassis", "box")] + [(f"{w}_wheel", "cylinder") for w in WHEELS]
                          + [("left_steering_hinge", "sphere"),
                             ("right_steering_hinge", "sphere")])
    for v in model.visuals:
        f = model.frames[v.frame]
        assert (f.name, f.type) == (v.name, FrameType.BODY)
        if v.shape == "cylinder":
            assert v.rgba == (0.0, 0.0, 0.0, 1.0)       # the robot-level material
    # the dynamics are Pinocchio's (urdfdom skips those elements too)
    pm = build_pin(path, floating)
    assert_matches_pinocchio(model, pm)
    assert model.nq == pm.nq == 10 + 7 * floating
    pd = pm.createData()
    for seed in range(3):
        q, v, a = random_state(pm, np.random.default_rng(seed))
        assert rel_err(rbd.rnea(model, q, v, a), pin.rnea(pm, pd, q, v, a)) < TOL
        assert rel_err(rbd.aba(model, q, v, a), pin.aba(pm, pd, q, v, a)) < TOL
        assert rel_err(rbd.crba(model, q), full(pin.crba(pm, pd, q))) < TOL


def test_bad_robot_material_skipped():
    xml = robot('<material name="red"><color rgba="1 0 0"/></material>',
                vehicle_link("a", 1.0, (1, 1, 1), visual('<box size="1 1 1"/>',
                                                         '<material name="red"/>')))
    with pytest.warns(UserWarning, match=r"^material 'red': color rgba needs 4 numbers, "
                      r"got '1 0 0'; material skipped$"):
        model = load_urdf(xml)
    assert [(v.shape, v.rgba) for v in model.visuals] == [("box", None)]


@pytest.mark.parametrize("inertial, match", [
    ('<mass value="1"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="x"/>',
     "inertia izz is not a number"),
    ('<mass value="1"/>', "needs an <inertia>"),
    ('<origin xyz="0 0"/><mass value="1"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" '
     'iyz="0" izz="1"/>', "origin xyz needs 3 numbers"),
])
def test_broken_dynamics_still_raise(inertial, match):
    """Only the visual and collision elements are forgiven: a link whose visuals are
    broken too still fails on its <inertial>, naming the link."""
    xml = robot(vehicle_link("base", 1.0, (1, 1, 1)),
                f'<link name="wheel"><inertial>{inertial}</inertial>'
                + visual('<mesh filename="w.stl" scale="1 1 1 1"/>') + '</link>',
                joint("spin", "base", "wheel", "continuous", extra=SPIN))
    for floating in (False, True):
        with pytest.raises(ValueError, match=f"link 'wheel'.*{match}"):
            load_urdf(xml, floating_base=floating)
