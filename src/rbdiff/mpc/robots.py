"""Which frames are a robot's feet, for the robots of example-robot-data."""

from __future__ import annotations

import re

# (lf, rf, lh, rh) name patterns (case-insensitive), in the order of the quadruped gaits
_QUADRUPED = (("LF", "RF", "LH", "RH"), ("FL", "FR", "HL", "HR"), ("FL", "FR", "RL", "RR"))
_BIPED = (("right_sole_link", "left_sole_link"), ("r_sole", "l_sole"),
          ("right_foot", "left_foot"))


def default_feet(model):
    """The foot frames of a legged model: (lf, rf, lh, rh) for a quadruped whose frames
    are named <leg>_FOOT / <leg>_foot (solo12, go2, anymal, hyq, ...), (right, left)
    for a biped with sole frames (talos, ...). Raises ValueError naming the frames it
    looked for when none match: pass feet= explicitly."""
    names = [f if isinstance(f, str) else f.name for f in model.frames]
    lower = {n.lower(): n for n in names}
    for legs in _QUADRUPED:
        found = [lower.get(f"{leg.lower()}_foot") for leg in legs]
        if all(found):
            return tuple(found)
    for pair in _BIPED:
        if all(p in names for p in pair):
            return pair
    feet = [n for n in names if re.search(r"foot$|sole", n, re.IGNORECASE)]
    raise ValueError("mpc: cannot tell this model's feet (looked for <LF|FL..>_FOOT "
                     "quadruped frames and right/left sole frames); pass feet= (frame "
                     f"names); frames that look like feet: {feet[:8]}")


# sole boxes (length, width) of example-robot-data's bipeds: talos_reduced_box.urdf's feet
_SOLES = {"talos": (0.21, 0.13)}


def default_sole(robot_name):
    """A biped's sole box (length, width) in m for the MuJoCo plant and the wrench cone:
    example-robot-data's where known (talos: its box-foot URDF's 0.21 x 0.13), else
    (0.2, 0.1)."""
    for prefix, box in _SOLES.items():
        if str(robot_name).startswith(prefix):
            return box
    return (0.2, 0.1)
