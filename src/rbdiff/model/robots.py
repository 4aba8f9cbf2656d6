"""Robot models by name: the bundled KUKA iiwa14 and example-robot-data's URDFs."""

from __future__ import annotations

import sys
from pathlib import Path

from .model import Model
from .urdf import load_urdf

_BUNDLED_DIR = Path(__file__).resolve().parent.parent / "robots_data"
_BUNDLED = {"iiwa14": ("iiwa14.urdf", False)}

# name -> (path under example-robot-data's robots/ directory, floating base by default)
_ERD = {
    "panda": ("panda_description/urdf/panda.urdf", False),
    "ur3": ("ur_description/urdf/ur3_robot.urdf", False),
    "ur5": ("ur_description/urdf/ur5_robot.urdf", False),
    "ur10": ("ur_description/urdf/ur10_robot.urdf", False),
    "ur3_gripper": ("ur_description/urdf/ur3_gripper.urdf", False),
    "ur5_gripper": ("ur_description/urdf/ur5_gripper.urdf", False),
    "kinova": ("kinova_description/robots/kinova.urdf", False),
    "z1": ("z1_description/urdf/z1.urdf", False),
    "xarm7": ("xarm_description/urdf/xarm7.urdf", False),
    "baxter": ("baxter_description/urdf/baxter.urdf", False),
    "pr2": ("pr2_description/urdf/pr2.urdf", False),
    "tiago": ("tiago_description/robots/tiago.urdf", False),
    "tiago_dual": ("tiago_description/robots/tiago_dual.urdf", False),
    "tiago_no_hand": ("tiago_description/robots/tiago_no_hand.urdf", False),
    "talos_arm": ("talos_data/robots/talos_left_arm.urdf", False),
    "double_pendulum": ("double_pendulum_description/urdf/double_pendulum.urdf", False),
    "double_pendulum_continuous":
        ("double_pendulum_description/urdf/double_pendulum_continuous.urdf", False),
    "finger_edu": ("finger_edu_description/robots/finger_edu.urdf", False),
    "solo": ("solo_description/robots/solo.urdf", True),
    "solo12": ("solo_description/robots/solo12.urdf", True),
    "bolt": ("bolt_description/robots/bolt.urdf", True),
    "hyq": ("hyq_description/robots/hyq_no_sensors.urdf", True),
    "anymal": ("anymal_b_simple_description/robots/anymal.urdf", True),
    "anymal_c": ("anymal_c_simple_description/urdf/anymal.urdf", True),
    "a1": ("a1_description/urdf/a1.urdf", True),
    "go1": ("go1_description/urdf/go1.urdf", True),
    "go2": ("go2_description/urdf/go2.urdf", True),
    "b1": ("b1_description/urdf/b1.urdf", True),
    "laikago": ("laikago_description/urdf/laikago.urdf", True),
    "talos": ("talos_data/robots/talos_reduced.urdf", True),
    "talos_full_v2": ("talos_data/robots/talos_full_v2.urdf", True),
    "g1": ("g1_description/urdf/g1_29dof_rev_1_0.urdf", True),
    "g1_with_hand": ("g1_description/urdf/g1_29dof_with_hand_rev_1_0.urdf", True),
    "romeo": ("romeo_description/urdf/romeo.urdf", True),
    "icub": ("icub_description/robots/icub.urdf", True),
    "icub_reduced": ("icub_description/robots/icub_reduced.urdf", True),
}

_ERD_SUBDIR = Path("cmeel.prefix", "share", "example-robot-data", "robots")


def robot_names():
    """Sorted list of the names :func:`load_robot` knows."""
    return sorted([*_BUNDLED, *_ERD])


def example_robot_data_dir():
    """Path of example-robot-data's ``robots`` directory, or None if not installed."""
    candidates = [Path(p) / _ERD_SUBDIR for p in sys.path if p]
    candidates.append(Path(sys.prefix, "share", "example-robot-data", "robots"))
    for d in candidates:
        if d.is_dir():
            return d
    return None


def robot_path(name):
    """Path of the URDF that :func:`load_robot` reads for ``name``."""
    if name in _BUNDLED:
        return _BUNDLED_DIR / _BUNDLED[name][0]
    if name not in _ERD:
        raise KeyError(f"unknown robot {name!r}; known robots: {', '.join(robot_names())}")
    d = example_robot_data_dir()
    if d is None:
        raise ImportError(f"robot {name!r} comes from example-robot-data, which is not "
                          "installed: pip install example-robot-data")
    path = d / _ERD[name][0]
    if not path.is_file():
        raise FileNotFoundError(f"robot {name!r}: {path} is missing from this "
                                "example-robot-data installation")
    return path


def default_floating_base(name):
    """True if ``name`` is a legged robot or humanoid (floating base by default)."""
    if name in _BUNDLED:
        return _BUNDLED[name][1]
    if name in _ERD:
        return _ERD[name][1]
    raise KeyError(f"unknown robot {name!r}; known robots: {', '.join(robot_names())}")


def load_robot(name, floating_base=None, allow_singular=False) -> Model:
    """The Model of robot ``name`` (see :func:`robot_names`).

    ``floating_base=None`` uses the robot's usual base: a free flyer for legged robots
    and humanoids, fixed for arms and the rest. ``allow_singular``: as load_urdf (romeo's
    hands, whose links carry no inertia, need it).
    """
    path = robot_path(name)
    if floating_base is None:
        floating_base = default_floating_base(name)
    return load_urdf(path, floating_base=floating_base, allow_singular=allow_singular)
