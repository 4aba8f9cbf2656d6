"""The shapes the viewer draws: a Model's visuals as triangle meshes (trimesh loads the
files), resolved the way example-robot-data lays its packages out, and capsules between
joint frames for a model without visuals; the camera that sees them (:func:`fit_camera`).

Every shape becomes one or more ``Part``: a mesh (vertices (n, 3), faces (m, 3)) in the
frame ``frame`` of the model at ``placement``, with one colour (RGB 0-255). A file with
several coloured meshes (COLLADA materials) gives a Part per mesh, each with its
material's colour: single-colour meshes render synchronously in the browser (a textured
glTF loads asynchronously, and a render could catch it half-loaded).
"""

from __future__ import annotations

import functools
import math
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..model.model import FrameType
from ..model.robots import example_robot_data_dir
from ..model.visuals import Visual
from ..model.warn import warn_user

DEFAULT_RGB = (190, 190, 205)       # a visual without a colour of its own


@dataclass(frozen=True)
class Camera:
    """A pinhole camera: ``position`` and ``look_at`` (world, 3 each), ``up`` (world),
    ``fov`` the vertical field of view in radians."""

    position: tuple
    look_at: tuple
    up: tuple = (0.0, 0.0, 1.0)
    fov: float = math.radians(45.0)

    def rotation(self):
        """R (3, 3): the camera's axes in the world (OpenCV's: x right, y down, z
        forward), as viser reads a camera orientation."""
        z = np.subtract(self.look_at, self.position).astype(float)
        z /= np.linalg.norm(z)
        x = np.cross(z, self.up)
        x /= np.linalg.norm(x)
        return np.column_stack([x, np.cross(z, x), z])

    def project(self, points, width, height):
        """Pixel coordinates (n, 2) (column, row from the top-left corner) of world
        ``points`` (n, 3) in a ``width`` x ``height`` image, and their depth (n,)."""
        p = (np.asarray(points, dtype=float) - np.asarray(self.position)) @ self.rotation()
        f = 0.5 * height / math.tan(0.5 * self.fov)
        uv = f * p[:, :2] / p[:, 2:3] + [0.5 * width, 0.5 * height]
        return uv, p[:, 2]


# where the fitted camera stands from what it looks at: in front (+x), to the right (-y;
# y is left) and slightly above (+z) the robot, in the x-forward, z-up convention
FIT_DIRECTION = (1.0, -1.3, 0.6)


def frame_points(oMf):
    """World positions (n, 3) of every frame but the universe in frame placements oMf
    (..., nframes, 4, 4): the universe stays at the origin, where a floating base isn't."""
    return np.asarray(oMf)[..., 1:, :3, 3].reshape(-1, 3)


def fit_camera(points, fov=math.radians(45.0)):
    """A :class:`Camera` (vertical field of view ``fov``) that sees world ``points``
    (n, 3; none: the origin): it looks at the centre of their bounding box from
    FIT_DIRECTION (front right, slightly above), at 0.95 of the distance where the box's
    enclosing sphere (radius at least 0.25 m) just fits the vertical field of view."""
    pts = np.asarray(points, dtype=float).reshape(-1, 3)
    if len(pts) == 0:
        pts = np.zeros((1, 3))
    lo, hi = pts.min(axis=0), pts.max(axis=0)
    c = 0.5 * (lo + hi)
    r = max(0.5 * float(np.linalg.norm(hi - lo)), 0.25)
    d = np.array(FIT_DIRECTION) / np.linalg.norm(FIT_DIRECTION)
    eye = c + d * 0.95 * r / math.sin(0.5 * fov)
    return Camera(tuple(map(float, eye)), tuple(map(float, c)), (0.0, 0.0, 1.0), fov)


@dataclass(frozen=True, eq=False)
class Part:
    """One drawable: ``name``, ``frame`` (index in model.frames), ``placement`` (4x4 in
    that frame), ``vertices`` (n, 3) and ``faces`` (m, 3) already scaled, ``rgb`` (3
    ints) and ``textured``: the trimesh to draw with its own materials, or None."""

    name: str
    frame: int
    placement: np.ndarray
    vertices: np.ndarray
    faces: np.ndarray
    rgb: tuple
    textured: object = None


def _trimesh():
    try:
        import trimesh
    except ImportError as e:
        raise ImportError("rbdiff.viewer needs trimesh: pip install 'rbdiff[viewer]'") from e
    return trimesh


def package_roots(base_dir=None):
    """Folders a ``package://NAME/...`` may live in, in the order tried: each folder
    above the URDF's (``base_dir``), example-robot-data's robots folder and the share
    folder above it (where ``package://example-robot-data/robots/...`` points), then
    ROS_PACKAGE_PATH's entries."""
    roots = []
    if base_dir is not None:
        roots += [Path(base_dir), *Path(base_dir).parents]
    erd = example_robot_data_dir()
    if erd is not None:
        roots += [erd, erd.parent.parent]
    roots += [Path(p) for p in os.environ.get("ROS_PACKAGE_PATH", "").split(os.pathsep) if p]
    return roots


def resolve_mesh(filename, base_dir=None):
    """The mesh file a URDF names: ``package://NAME/rest`` looked up as NAME in the
    package roots (a folder called NAME, or NAME inside a root), ``file://`` and absolute
    paths as they are, relative paths from the URDF's folder. Returns a Path (which may
    not exist: the caller warns) ."""
    if filename.startswith("package://"):
        rest = filename[len("package://"):].lstrip("/")
        pkg, _, sub = rest.partition("/")
        for root in package_roots(base_dir):
            for cand in ((root / sub) if root.name == pkg else None, root / pkg / sub):
                if cand is not None and cand.is_file():
                    return cand
        return Path(rest)
    if filename.startswith("file://"):
        return Path(filename[len("file://"):])
    p = Path(filename)
    if not p.is_absolute() and base_dir is not None:
        p = Path(base_dir) / p
    return p


@functools.lru_cache(maxsize=256)
def _load_file(path):
    """[(vertices, faces, own RGB or None)] of a mesh file, one entry per coloured mesh
    in it; raises on failure."""
    trimesh = _trimesh()
    loaded = trimesh.load(path)
    meshes = loaded.dump() if isinstance(loaded, trimesh.Scene) else [loaded]
    out = []
    for m in meshes:
        if isinstance(m, trimesh.Trimesh) and len(m.faces):
            out.append((np.asarray(m.vertices, dtype=float), np.asarray(m.faces, np.int64),
                        _own_colour(m)))
    if not out:
        raise ValueError(f"no triangle mesh in it (trimesh read a {type(loaded).__name__})")
    return out


def _own_colour(mesh):
    """The colour a mesh file gives this mesh (a material's, or uniform face or vertex
    colours), or None (an STL)."""
    vis = mesh.visual
    try:
        if vis.kind == "texture" and getattr(vis, "material", None) is not None:
            return tuple(int(c) for c in vis.material.main_color[:3])
        if vis.kind in ("face", "vertex"):
            return tuple(int(c) for c in vis.main_color[:3])
    except (AttributeError, ValueError, TypeError):     # a material trimesh can't reduce
        pass
    return None


def _rgb(rgba, override):
    if override is not None:
        return tuple(int(c) for c in override)
    if rgba is None:
        return DEFAULT_RGB
    return tuple(int(round(255 * min(max(c, 0.0), 1.0))) for c in rgba[:3])


def _primitive(shape, size):
    trimesh = _trimesh()
    if shape == "box":
        m = trimesh.creation.box(extents=size)
    elif shape == "sphere":
        m = trimesh.creation.icosphere(subdivisions=2, radius=size[0])
    elif shape == "ellipsoid":
        m = trimesh.creation.icosphere(subdivisions=2, radius=1.0)
        m.apply_scale(size)
    elif shape == "cylinder":
        m = trimesh.creation.cylinder(radius=size[0], height=size[1], sections=24)
    else:
        m = trimesh.creation.capsule(height=size[1], radius=size[0], count=[12, 12])
    return np.asarray(m.vertices, dtype=float), np.asarray(m.faces, np.int64)


def visual_parts(vis: Visual, override=None):
    """The Parts that draw ``vis``; a mesh file that is missing or unreadable is drawn as
    a 5 cm box, with a warning naming the file. Colours: ``override``, else the mesh
    file's own (COLLADA materials), else the visual's rgba, else DEFAULT_RGB."""
    rgb = _rgb(vis.rgba, override)
    if vis.shape != "mesh":
        v, f = _primitive(vis.shape, vis.size)
        return [Part(vis.name, vis.frame, vis.placement, v, f, rgb)]
    scale = np.asarray(vis.size)
    if vis.vertices is not None:
        return [Part(vis.name, vis.frame, vis.placement, vis.vertices * scale, vis.faces,
                     rgb)]
    path = resolve_mesh(vis.filename, vis.base_dir)
    try:
        meshes = _load_file(str(path))
    except Exception as e:      # trimesh raises many kinds for a bad file
        reason = "missing" if not path.is_file() else f"unreadable ({type(e).__name__}: {e})"
        warn_user(f"rbdiff.viewer: mesh file {str(path)!r} of {vis.name!r} "
                  f"({vis.filename!r}) is {reason}; drawn as a box")
        v, f = _primitive("box", (0.05, 0.05, 0.05))
        return [Part(vis.name, vis.frame, vis.placement, v, f, rgb)]
    return [Part(vis.name, vis.frame, vis.placement, v * scale, f,
                 rgb if override is not None or own is None else own)
            for v, f, own in meshes]


def _segment_visual(name, frame, a, b, radius):
    """A capsule Visual on ``frame`` from point a to point b (in that frame)."""
    d = b - a
    length = float(np.linalg.norm(d))
    z = d / length
    x = np.cross(z, [1.0, 0.0, 0.0] if abs(z[0]) < 0.9 else [0.0, 1.0, 0.0])
    x /= np.linalg.norm(x)
    T = np.eye(4)
    T[:3, :3] = np.column_stack([x, np.cross(z, x), z])
    T[:3, 3] = 0.5 * (a + b)
    return Visual(name, frame, T, "capsule", (radius, length))


def skeleton_visuals(model):
    """Capsules for a model without visuals: from each joint to each child joint and to
    the frames that hang from it (a link's BODY frame, a fixed joint, a tool frame), on
    the joint's own frame, and a sphere on every joint. Radii scale with the robot."""
    segments = []
    jframe = {}
    for k, f in enumerate(model.frames):
        if f.type == FrameType.JOINT or k == 0:
            jframe.setdefault(f.parent, k)
    for i in range(1, model.njoints):
        p = int(model.parents[i])
        segments.append((f"{model.names[p]}->{model.names[i]}", p, model.placements[i][:3, 3]))
    seen = set()
    for f in model.frames[1:]:
        if f.type != FrameType.JOINT:
            key = tuple(np.round(f.placement[:3, 3], 6)) + (f.parent,)
            if key not in seen:
                seen.add(key)
                segments.append((f"{model.names[f.parent]}->{f.name}", f.parent,
                                 np.asarray(f.placement[:3, 3])))
    lengths = [np.linalg.norm(p) for *_, p in segments if np.linalg.norm(p) > 1e-6]
    radius = float(np.clip(0.12 * np.median(lengths), 0.005, 0.05)) if lengths else 0.03
    out = []
    for name, j, p in segments:
        if np.linalg.norm(p) > 1e-6 and j in jframe:
            out.append(_segment_visual(name, jframe[j], np.zeros(3), np.asarray(p), radius))
    for i in range(1, model.njoints):
        if i in jframe:
            out.append(Visual(model.names[i], jframe[i], np.eye(4), "sphere",
                              (1.4 * radius,)))
    return tuple(out)


def model_parts(model, color=None):
    """The Parts of ``model``: its visuals, or capsules between its joints when it has
    none. ``color`` (RGB 0-255) paints every part."""
    visuals = model.visuals or skeleton_visuals(model)
    return [p for v in visuals for p in visual_parts(v, color)]
