"""Robot models by name: the bundled KUKA iiwa14, and example-robot-data's robots as that
package's own loader builds them.

The table of robots is the loader's (``example_robot_data.ROBOTS`` in the
``example-robot-data-loaders`` distribution, which rbdiff's ``test`` and ``bench`` extras
install; since example-robot-data 4.4 the ``example-robot-data`` distribution ships only the
robot files). For each name, the loader class says which URDF to read, whether the robot
has a free flyer, which SRDF to read and whether it carries rotor parameters:

- a loader that keeps the model Pinocchio builds from the URDF (most of them): rbdiff parses
  the same URDF itself (its parser reproduces Pinocchio's ``buildModelFromUrdf``) and takes
  the SRDF's reference configurations and rotor armature from the loader's own
  ``readParamsFromSrdf`` (``armature = rotorInertia * rotorGearRatio**2``, which is what
  Pinocchio's dynamics then add to M(q)'s diagonal);
- a loader that edits that model in its constructor (talos_legs keeps the first 14 joints
  of talos and their bodies, human turns its free flyer): rbdiff runs the loader and copies
  the model it made, joint for joint and frame for frame.
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path

import numpy as np

from .model import Model
from .urdf import load_urdf

_BUNDLED_DIR = Path(__file__).resolve().parent.parent / "robots_data"
_BUNDLED = {"iiwa14": ("iiwa14.urdf", False)}

# rbdiff's earlier names for robots the loader names otherwise (kept: scripts use them)
_ALIASES = {"solo": "solo8", "g1_with_hand": "g1_with_hands", "talos_full_v2": "talos_full"}
# talos_full_v2 is the URDF as it is, without the SRDF's rotor armature: the model rbdiff's
# tests and benchmarks compare with Pinocchio's buildModelFromUrdf of that file
_NO_ROTORS = {"talos_full_v2"}

_ERD_SUBDIR = Path("cmeel.prefix", "share", "example-robot-data", "robots")
_INSTALL = ("pip install example-robot-data-loaders (rbdiff's test and bench extras "
            "install it)")


@functools.lru_cache(maxsize=1)
def _loaders():
    """example-robot-data's loader module, or None when it is not installed."""
    try:
        from example_robot_data import robots_loader
    except ImportError:
        return None
    return robots_loader


def _table():
    mod = _loaders()
    return {} if mod is None else dict(mod.ROBOTS)


def robot_names():
    """Sorted list of the names :func:`load_robot` knows: the bundled robots, rbdiff's
    aliases and every name of example-robot-data's loader (when it is installed)."""
    table = _table()
    return sorted({*_BUNDLED, *(_ALIASES if table else ()), *table})


def _unknown(name):
    return KeyError(f"unknown robot {name!r}; known robots: {', '.join(robot_names())}")


def _loader_class(name):
    """The example-robot-data loader class behind ``name``."""
    if not isinstance(name, str):
        raise TypeError(f"robot name must be a string, got {type(name).__name__}")
    key = _ALIASES.get(name, name)
    mod = _loaders()
    if mod is None:             # its names are the loader's: without it, none is known
        raise ImportError(f"robot {name!r} is not bundled with rbdiff (bundled: "
                          f"{', '.join(_BUNDLED)}); the other robots come from "
                          f"example-robot-data, whose loader is not installed: {_INSTALL}")
    if key not in mod.ROBOTS:
        raise _unknown(name)
    return mod.ROBOTS[key]


def example_robot_data_dir():
    """Path of example-robot-data's ``robots`` directory, or None if not installed."""
    candidates = [Path(p) / _ERD_SUBDIR for p in sys.path if p]
    candidates.append(Path(sys.prefix, "share", "example-robot-data", "robots"))
    for d in candidates:
        if d.is_dir():
            return d
    return None


def _model_dir(cls):
    """The directory the loader reads ``cls``'s files from (its getModelPath)."""
    if example_robot_data_dir() is None:
        raise ImportError("example-robot-data's robot files are not installed: "
                          "pip install example-robot-data")
    if cls.model_path is not None:
        return Path(cls.model_path)
    sub = (Path(cls.path, cls.urdf_subpath, cls.urdf_filename) if cls.urdf_filename
           else Path(cls.path))
    try:
        return Path(_loaders().getModelPath(str(sub)))
    except OSError as e:
        raise FileNotFoundError(f"{sub} is missing from this example-robot-data "
                                f"installation ({e})") from None


def robot_path(name):
    """Path of the URDF that :func:`load_robot` reads for ``name`` (for a loader that edits
    its model, such as talos_legs, the URDF it starts from)."""
    if name in _BUNDLED:
        return _BUNDLED_DIR / _BUNDLED[name][0]
    cls = _loader_class(name)
    if not cls.urdf_filename:
        raise ValueError(f"robot {name!r}: example-robot-data describes it in SDF "
                         f"({cls.sdf_filename}), which rbdiff does not read")
    path = _model_dir(cls) / cls.path / cls.urdf_subpath / cls.urdf_filename
    if not path.is_file():
        raise FileNotFoundError(f"robot {name!r}: {path} is missing from this "
                                "example-robot-data installation")
    return path


def srdf_path(name):
    """Path of the SRDF the loader reads for ``name``, or None when it reads none."""
    if name in _BUNDLED:
        return None
    cls = _loader_class(name)
    if not cls.srdf_filename:
        return None
    return _model_dir(cls) / cls.path / cls.srdf_subpath / cls.srdf_filename


def default_floating_base(name):
    """True if example-robot-data's loader gives ``name`` a free flyer."""
    if name in _BUNDLED:
        return _BUNDLED[name][1]
    return bool(_loader_class(name).free_flyer)


def _edits_model(cls):
    """True if the loader class changes the model in its own constructor."""
    return cls.__init__ is not _loaders().RobotLoader.__init__


def load_robot(name, floating_base=None, allow_singular=False) -> Model:
    """The Model of robot ``name`` (see :func:`robot_names`): the bundled iiwa14, or the
    model example-robot-data's loader builds for that name (its URDF, its free flyer, the
    joints it keeps for reduced robots such as talos_legs, the armature from the SRDF's
    rotor parameters), with the SRDF's group states in ``model.reference_configurations``
    (e.g. ``["standing"]``, ``["half_sitting"]``).

    ``floating_base=None`` follows the loader (a free flyer for legged robots and
    humanoids); True or False builds the loader's URDF with or without one (not for a
    loader that edits its model, such as talos_legs). ``allow_singular``: as load_urdf
    (romeo's hands, whose links carry no inertia, need it). Raises KeyError listing the
    known names for an unknown one, ImportError naming the package when
    example-robot-data or its loader is missing.
    """
    if name in _BUNDLED:
        path = robot_path(name)
        if floating_base is None:
            floating_base = default_floating_base(name)
        return load_urdf(path, floating_base=floating_base, allow_singular=allow_singular)
    cls = _loader_class(name)
    path = robot_path(name)
    free_flyer = bool(cls.free_flyer)
    floating = free_flyer if floating_base is None else bool(floating_base)
    if _edits_model(cls):
        if floating != free_flyer:
            raise ValueError(f"robot {name!r}: example-robot-data's loader edits the model "
                             f"it builds {'with' if free_flyer else 'without'} a free "
                             f"flyer; floating_base={floating_base} is not available")
        from .from_pinocchio import from_pinocchio
        from .visuals import remap_visuals
        model = from_pinocchio(cls().robot.model, allow_singular=allow_singular)
        # the loader's model keeps the URDF's frame names: its links' visuals follow them
        # (a URDF rbdiff's parser refuses leaves the loader's model without visuals)
        try:
            urdf = load_urdf(path, floating_base=free_flyer, allow_singular=True)
        except ValueError:
            return model
        return model._copy(visuals=remap_visuals(urdf.visuals, urdf.frames, model.frames))
    model = load_urdf(path, floating_base=floating, allow_singular=allow_singular)
    srdf = srdf_path(name)
    if srdf is None:
        return model
    import pinocchio as pin

    from .from_pinocchio import _reference_configurations
    root = (pin.JointModelFreeFlyer(),) if floating else ()
    pm = pin.buildModelFromUrdf(str(path), *root)
    if list(pm.names) != list(model.names):
        raise RuntimeError(f"robot {name!r}: rbdiff's joints differ from Pinocchio's "
                           f"for {path}")
    # the loader's own reading of the SRDF (rotor parameters -> armature, group states);
    # referencePose=None: the default posture is the caller's to pick from the mapping
    _loaders().readParamsFromSrdf(pm, str(srdf), False,
                                  cls.has_rotor_parameters and name not in _NO_ROTORS, None)
    refs = _reference_configurations(pm)
    return model._copy(armature=np.array(pm.armature), reference_configurations=refs)
