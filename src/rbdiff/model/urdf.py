"""URDF parser (no URDF dependency) producing a :class:`~rbdiff.model.model.Model`.

The joint order, ``nq``, ``nv`` and configuration layout are those of Pinocchio's
``buildModelFromUrdf``: a depth-first traversal from the root link in which the child
joints of a link are visited sorted by joint name (urdfdom keeps joints in a
``std::map``). Fixed joints are merged into the moving joint they hang from.

Each moving joint's ``<limit effort=... velocity=...>`` are ``model.effort_limits`` /
``model.velocity_limits`` at its dofs, as Pinocchio's effortLimit / velocityLimit (for
revolute, prismatic and continuous joints; a continuous joint's ``<limit>`` is optional).
Where the file gives none (a continuous joint without ``<limit>``, a floating joint, the
"root_joint" free flyer of ``floating_base``, a ``<limit>`` lacking the attribute, which
urdfdom would refuse) the limit is +inf. Pinocchio gives +inf there too, except for the
free flyer it adds itself (``buildModelFromUrdf(path, JointModelFreeFlyer())``), which
gets its numeric maximum (1.797e308): rbdiff's is +inf, no limit, whatever made it.

The frames are Pinocchio's too, in its order: "universe" (FIXED_JOINT), with a floating
base the "root_joint" JOINT frame, then depth first as the joints are numbered, for each
URDF joint its frame (JOINT for a moving joint, FIXED_JOINT at the child link's origin
for a fixed one) followed by the child link's BODY frame; the root link's BODY frame
comes first. A link and a joint may share a name (different types).

Each link's ``<visual>`` elements (box, cylinder, sphere, mesh; a material's colour given
inline or by name at the robot level) are kept in ``model.visuals`` on the link's BODY
frame, mesh file names as written (rbdiff.viewer resolves and loads them); collision
geometry is checked, not kept. A ``<visual>`` or ``<collision>`` element (or robot-level
material) that can't be read is skipped with a warning naming its link, as urdfdom logs
and skips it: the dynamics never depend on it.
"""

from __future__ import annotations

import math
import os
import warnings
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .model import FrameType, Model, ModelBuilder, check_inertia, combine_inertias
from .visuals import Visual
from .warn import warn_user

_MOVING = {"revolute": "revolute", "continuous": "continuous", "prismatic": "prismatic",
           "floating": "free_flyer"}
_LIMITED = ("revolute", "prismatic")


@dataclass
class _Link:
    name: str
    inertial: tuple | None          # (mass, com, inertia about com, in the link frame)
    child_joints: list = field(default_factory=list)
    parent_joint: str | None = None
    visuals: list = field(default_factory=list)     # (origin, shape, size, rgba, filename)


@dataclass
class _Joint:
    name: str
    type: str
    parent: str
    child: str
    origin: np.ndarray
    axis: np.ndarray
    lower: float | None
    upper: float | None
    effort: float | None = None         # <limit effort=...>; None: no limit (+inf)
    velocity: float | None = None       # <limit velocity=...>


def load_urdf(path_or_xml, floating_base=False, allow_singular=False, strict=False) -> Model:
    """Parse a URDF file path (str or Path) or an XML string; returns the Model.

    With ``floating_base`` the root link is carried by a free-flyer joint named
    "root_joint"; otherwise the root link is welded to the universe (its inertia is
    kept in ``model.masses[0]`` etc., like Pinocchio's ``inertias[0]``, and never moves).
    Each joint's body combines the inertias of the links welded to it; that composite
    must be a physical rigid body (a single link may not be on its own: real URDFs such
    as PR2's carry a few such links, which Pinocchio accepts too).
    A moving joint whose links are all massless (M(q) singular for every q) is refused
    with a ValueError naming it unless ``allow_singular`` (kinematics-only use; see
    ModelBuilder.build).
    Forgiving where Pinocchio's parser is (``strict=False``): inertias that violate the
    triangle inequality (xArm6, Mini Cheetah), blank lines before the XML declaration and
    a lower limit above the upper one load with a warning naming the link or joint;
    ``strict=True`` refuses them.
    A ``<visual>`` or ``<collision>`` element that can't be read is skipped with a
    warning naming the link and the element, whatever ``strict``.
    Raises ValueError for malformed or unsupported input (links, joints, inertials),
    FileNotFoundError for a missing file.
    """
    robot, path = _parse_xml(path_or_xml, strict)
    links, joints, root = _read_tree(robot)
    base_dir = None if path is None else str(path.resolve().parent)
    b = ModelBuilder(strict=strict)
    top = b.add_joint(0, "free_flyer", "root_joint") if floating_base else 0
    jnames = ["universe"] + (["root_joint"] if floating_base else [])
    bodies = {}             # moving joint -> [(link, mass, com, inertia)] in the joint frame
    visited = set()
    # (URDF joint into the link, link, moving joint, placement of the parent link in that
    # joint, BODY frame of the parent link); the root link hangs from frame 0 or root_joint
    stack = [(None, root, top, np.eye(4), 1 if floating_base else 0)]
    while stack:
        jt, lname, j, T, pf = stack.pop()
        if jt is not None:      # joints are added when popped: depth-first preorder numbering
            T = T @ jt.origin
            if jt.type != "fixed":
                j = b.add_joint(j, _MOVING[jt.type], jt.name, T, jt.axis, jt.lower, jt.upper,
                                parent_frame=pf, effort=jt.effort, velocity=jt.velocity)
                jnames.append(jt.name)
                pf = b.nframes - 1      # the joint's JOINT frame
                T = np.eye(4)
            elif jt.name == "universe":
                pf = 0  # Pinocchio's addFrame keeps one frame per (name, type): the universe
            else:
                pf = b.add_frame(jt.name, j, T, FrameType.FIXED_JOINT, pf)
        visited.add(lname)
        if links[lname].inertial is not None:
            m, c, I = links[lname].inertial
            R, p = T[:3, :3], T[:3, 3]
            bodies.setdefault(j, []).append((lname, m, R @ c + p, R @ I @ R.T))
        body = b.add_frame(lname, j, T, FrameType.BODY, pf)
        for origin, shape, size, rgba, filename in links[lname].visuals:
            b.add_visual(Visual(lname, body, origin, shape, size, rgba, filename, base_dir))
        for jn in reversed(links[lname].child_joints):
            stack.append((joints[jn], joints[jn].child, j, T, body))
    if len(visited) != len(links):
        cyc = sorted(set(links) - visited)[0]
        raise ValueError(f"link {cyc!r} is part of a cycle in the kinematic graph "
                         "(not reachable from the root link)")
    for j, parts in bodies.items():
        body = _composite(parts, jnames[j], links, strict)
        with warnings.catch_warnings():     # _composite has named the link at fault
            warnings.simplefilter("ignore")
            b.append_body(j, *body)
    return b.build(allow_singular=allow_singular)


def _composite(parts, joint, links, strict):
    """Mass, com and inertia about the com of ``parts`` combined; checks it is physical
    (not strict: warns about the triangle inequality, naming the link)."""
    m, c, I = 0.0, np.zeros(3), np.zeros((3, 3))
    for _, mk, ck, Ik in parts:
        m, c, I = combine_inertias(m, c, I, mk, ck, Ik)
    try:
        check_inertia(m, c, I, "")
    except ValueError:
        for name, *_ in parts:      # name the link that makes the body unphysical
            check_inertia(*links[name].inertial, f"link {name!r}", strict)
        with warnings.catch_warnings():     # the links' warnings said it
            warnings.simplefilter("ignore")
            check_inertia(m, c, I, f"links {[p[0] for p in parts]} welded to joint "
                          f"{joint!r}", strict)
    return m, c, I


# -- XML -------------------------------------------------------------------------------
_BLANK = "\ufeff \t\r\n"


def xml_source(src, kind):
    """(text, None) for an XML string (str or UTF-8 bytes, leading blanks and BOM kept),
    (None, Path) for the path of an existing file; FileNotFoundError naming ``kind``
    ("URDF", "MJCF") for a missing one, TypeError for anything else."""
    if isinstance(src, bytes):
        src = src.decode("utf-8")
    if isinstance(src, str) and src.lstrip(_BLANK).startswith("<"):
        return src, None
    if not isinstance(src, (str, os.PathLike)):
        raise TypeError(f"expected a path or an XML string, got {type(src).__name__}")
    path = Path(src)
    try:
        found = path.is_file()
    except (OSError, ValueError):       # e.g. a name too long or with a NUL byte
        found = False
    if not found:
        raise FileNotFoundError(f"{kind} file not found: {str(path)!r}")
    return None, path


def _parse_xml(src, strict=True):
    text, path = xml_source(src, "URDF")
    if text is not None:
        try:
            root = ET.fromstring(text.lstrip(_BLANK))
        except ET.ParseError as e:
            raise ValueError(f"URDF string is not valid XML: {e}") from None
    else:
        data = path.read_bytes()
        text = data[3:] if data.startswith(b"\xef\xbb\xbf") else data       # a UTF-8 BOM
        if not strict and text[:1].isspace() and text.lstrip().startswith(b"<?xml"):
            warn_user(f"URDF file {str(path)!r}: blank space before the XML declaration"
                      " ignored, as Pinocchio does (strict=True refuses it)")
            data = text.lstrip()
        try:
            root = ET.fromstring(data)
        except ET.ParseError as e:
            raise ValueError(f"URDF file {str(path)!r} is not valid XML: {e}") from None
    if root.tag != "robot":
        raise ValueError(f"URDF root element must be <robot>, got <{root.tag}>")
    return root, path


def _read_tree(robot):
    """Links and joints by name, child joints sorted by name, and the root link."""
    links = {}
    materials = _read_materials(robot)
    for el in robot.findall("link"):
        name = el.get("name")
        if not name:
            raise ValueError("a <link> has no name attribute")
        if name in links:
            raise ValueError(f"link {name!r} is defined twice")
        links[name] = _Link(name, _read_inertial(el, name),
                            visuals=_read_visuals(el, name, materials))
    joints = {}
    for el in robot.findall("joint"):
        jt = _read_joint(el)
        if jt.name in joints:
            raise ValueError(f"joint {jt.name!r} is defined twice")
        joints[jt.name] = jt
    for jt in sorted(joints.values(), key=lambda j: j.name):
        for role in ("parent", "child"):
            if getattr(jt, role) not in links:
                raise ValueError(f"joint {jt.name!r}: {role} link {getattr(jt, role)!r} "
                                 "does not exist")
        child = links[jt.child]
        if child.parent_joint is not None:
            raise ValueError(f"link {jt.child!r} has two parents (joints "
                             f"{child.parent_joint!r} and {jt.name!r})")
        child.parent_joint = jt.name
        links[jt.parent].child_joints.append(jt.name)
    if not links:
        raise ValueError("URDF has no <link>")
    roots = sorted(n for n, lk in links.items() if lk.parent_joint is None)
    if not roots:
        raise ValueError("URDF has no root link: the kinematic graph has a cycle "
                         f"(e.g. through link {sorted(links)[0]!r})")
    if len(roots) > 1:
        raise ValueError(f"URDF has several root links: {roots}")
    return links, joints, roots[0]


def _read_joint(el):
    name = el.get("name")
    if not name:
        raise ValueError("a <joint> has no name attribute")
    jtype = el.get("type")
    if jtype != "fixed" and jtype not in _MOVING:
        raise ValueError(f"joint {name!r}: unsupported joint type {jtype!r} (supported: "
                         f"fixed, {', '.join(_MOVING)})")
    ends = []
    for role in ("parent", "child"):
        sub = el.find(role)
        if sub is None or not sub.get("link"):
            raise ValueError(f"joint {name!r}: missing <{role} link=...> element")
        ends.append(sub.get("link"))
    where = f"joint {name!r}"
    origin = _read_origin(el.find("origin"), where)
    axis = np.array([1.0, 0.0, 0.0])
    ax_el = el.find("axis")
    if ax_el is not None:
        axis = _vec(ax_el.get("xyz"), where, "axis xyz", np.array([1.0, 0.0, 0.0]))
    nrm = np.linalg.norm(axis)
    if jtype in ("revolute", "continuous", "prismatic"):
        if nrm < 1e-12:
            raise ValueError(f"{where}: axis must be non-zero, got {axis.tolist()}")
        axis = axis / nrm
    lower = upper = effort = velocity = None
    lim = el.find("limit")
    if jtype in _LIMITED:
        if lim is None:
            raise ValueError(f"{where}: a {jtype} joint needs a <limit> element")
        lower = _num(lim.get("lower", "0"), where, "limit lower")
        upper = _num(lim.get("upper", "0"), where, "limit upper")   # ordered: add_joint
    if lim is not None and jtype in ("revolute", "continuous", "prismatic"):
        effort, velocity = (_limit(lim, key, where) for key in ("effort", "velocity"))
    return _Joint(name, jtype, ends[0], ends[1], origin, axis, lower, upper, effort,
                  velocity)


def _limit(lim, key, where):
    """<limit>'s effort or velocity: a non-negative number, None when absent (urdfdom
    refuses a <limit> without them; rbdiff loads it, the joint unlimited there)."""
    text = lim.get(key)
    if text is None:
        return None
    x = _num(text, where, f"limit {key}")
    if x < 0:
        raise ValueError(f"{where}: limit {key} must be non-negative, got {text!r} "
                         "(Pinocchio refuses it too)")
    return x


def _read_inertial(link_el, name):
    el = link_el.find("inertial")
    if el is None:
        return None
    where = f"link {name!r}"
    mass_el = el.find("mass")
    if mass_el is None or mass_el.get("value") is None:
        raise ValueError(f"{where}: <inertial> needs <mass value=...>")
    mass = _num(mass_el.get("value"), where, "mass")
    in_el = el.find("inertia")
    if in_el is None:
        raise ValueError(f"{where}: <inertial> needs an <inertia> element")
    keys = ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")
    missing = [k for k in keys if in_el.get(k) is None]
    if missing:
        raise ValueError(f"{where}: <inertia> lacks attribute(s) {', '.join(missing)}")
    xx, xy, xz, yy, yz, zz = (_num(in_el.get(k), where, f"inertia {k}") for k in keys)
    I = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
    T = _read_origin(el.find("origin"), where + " inertial")
    if mass < 0:
        raise ValueError(f"{where}: mass must be non-negative, got {mass}")
    R = T[:3, :3]
    return mass, T[:3, 3].copy(), R @ I @ R.T


def _read_visuals(link_el, name, materials):
    """The link's <visual> elements as (origin 4x4, shape, size, rgba or None, mesh file
    name or None). A <visual> or <collision> element that can't be read (geometry,
    origin, material) is skipped with one warning naming the link and the element, as
    urdfdom does: the dynamics never depend on it. Collision elements are checked only."""
    out = []
    for tag in ("visual", "collision"):
        for k, el in enumerate(link_el.findall(tag)):
            where = f"link {name!r} {tag} {k}"
            try:
                origin, shape, size, filename = _read_geometry(el, where)
                rgba = _read_material(el, where, materials) if tag == "visual" else None
            except ValueError as e:
                warn_user(f"{e}; element skipped")
                continue
            if tag == "visual":
                out.append((origin, shape, size, rgba, filename))
    return out


def _read_geometry(el, where):
    """A <visual> or <collision>'s (origin 4x4, shape, size, mesh file name or None);
    ValueError naming ``where`` for what can't be read."""
    geom = el.find("geometry")
    shape = None if geom is None or len(geom) == 0 else geom[0]
    if shape is None:
        raise ValueError(f"{where}: no <geometry> with a box, cylinder, sphere or mesh")
    filename = None
    if shape.tag == "box":
        size = _vec(shape.get("size"), where, "box size", np.zeros(3))
    elif shape.tag == "cylinder":
        size = [_num(shape.get("radius"), where, "cylinder radius"),
                _num(shape.get("length"), where, "cylinder length")]
    elif shape.tag == "sphere":
        size = [_num(shape.get("radius"), where, "sphere radius")]
    elif shape.tag == "mesh":
        filename = shape.get("filename")
        if not filename:
            raise ValueError(f"{where}: <mesh> has no filename")
        size = _vec(shape.get("scale"), where, "mesh scale", np.ones(3))
    else:
        raise ValueError(f"{where}: unknown geometry <{shape.tag}> (expected box, "
                         "cylinder, sphere or mesh)")
    return _read_origin(el.find("origin"), where), shape.tag, size, filename


def _read_material(el, where, materials):
    """A <visual>'s colour: its <material>'s own rgba, else the robot-level material of
    that name's, else None (the viewer's default)."""
    mat = el.find("material")
    if mat is None:
        return None
    return _read_rgba(mat, where) or materials.get(mat.get("name"))


def _read_materials(robot):
    """The robot-level <material> colours by name; one that can't be read is left out
    with a warning (the visuals naming it get the viewer's default colour)."""
    out = {}
    for m in robot.findall("material"):
        try:
            out[m.get("name")] = _read_rgba(m, f"material {m.get('name')!r}")
        except ValueError as e:
            warn_user(f"{e}; material skipped")
    return out


def _read_rgba(material_el, where):
    """A <material>'s <color rgba> as 4 floats, or None when it has none (a texture, or
    a reference to a robot-level material)."""
    c = material_el.find("color")
    if c is None or c.get("rgba") is None:
        return None
    parts = c.get("rgba").split()
    if len(parts) != 4:
        raise ValueError(f"{where}: color rgba needs 4 numbers, got {c.get('rgba')!r}")
    return tuple(_num(p, where, "color rgba") for p in parts)


def _read_origin(el, where):
    T = np.eye(4)
    if el is None:
        return T
    zero = np.zeros(3)
    T[:3, :3] = rpy_matrix(*_vec(el.get("rpy"), where, "origin rpy", zero))
    T[:3, 3] = _vec(el.get("xyz"), where, "origin xyz", zero)
    return T


def rpy_matrix(roll, pitch, yaw):
    """URDF fixed-axis roll-pitch-yaw: returns R = Rz(yaw) Ry(pitch) Rx(roll)."""
    cr, sr = math.cos(roll), math.sin(roll)
    cp, sp = math.cos(pitch), math.sin(pitch)
    cy, sy = math.cos(yaw), math.sin(yaw)
    return np.array([
        [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
        [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
        [-sp, cp * sr, cp * cr],
    ])


def _num(text, where, what):
    try:
        x = float(text)
    except (TypeError, ValueError):
        raise ValueError(f"{where}: {what} is not a number: {text!r}") from None
    if not math.isfinite(x):
        raise ValueError(f"{where}: {what} is not finite: {text!r}")
    return x


def _vec(text, where, what, default):
    if text is None:
        return default.copy()
    parts = text.split()
    if len(parts) != 3:
        raise ValueError(f"{where}: {what} needs 3 numbers, got {text!r}")
    return np.array([_num(p, where, what) for p in parts])
