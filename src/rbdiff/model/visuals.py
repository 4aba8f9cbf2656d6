"""Visual geometry carried by a Model as plain data (rbdiff.viewer draws it; no kernel
reads it).

A :class:`Visual` hangs from one of the model's frames (the BODY frame of a URDF link or
of a MuJoCo body) at a fixed placement. Shapes and their ``size``:

- ``"box"``: (lx, ly, lz) full side lengths;
- ``"cylinder"``, ``"capsule"``: (radius, length) along the shape's z axis (a capsule's
  length between its two sphere centres);
- ``"sphere"``: (radius,); ``"ellipsoid"``: (rx, ry, rz);
- ``"mesh"``: (sx, sy, sz), the scale applied to the file's (or the given) vertices.

A URDF mesh keeps its ``filename`` as the file writes it (``package://...``, relative or
absolute) and ``base_dir``, the URDF's folder, for the viewer to resolve and load; an MJCF
mesh carries MuJoCo's compiled ``vertices`` (n, 3) and ``faces`` (m, 3) in the geom frame.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

SHAPES = ("box", "cylinder", "capsule", "sphere", "ellipsoid", "mesh")


def _readonly(a, dtype=float):
    a = np.array(a, dtype=dtype)
    a.setflags(write=False)
    return a


@dataclass(frozen=True, eq=False)
class Visual:
    """One visual shape: ``name`` (the link or geom it came from), ``frame`` (index in
    ``model.frames``), ``placement`` (4x4 in that frame), ``shape`` (see SHAPES), ``size``,
    ``rgba`` (4 floats in [0, 1], or None: the viewer's default), and for meshes
    ``filename`` / ``base_dir`` or ``vertices`` / ``faces``."""

    name: str
    frame: int
    placement: np.ndarray
    shape: str
    size: tuple
    rgba: tuple | None = None
    filename: str | None = None
    base_dir: str | None = None
    vertices: np.ndarray | None = None
    faces: np.ndarray | None = None

    def __post_init__(self):
        if self.shape not in SHAPES:
            raise ValueError(f"visual {self.name!r}: unknown shape {self.shape!r}; "
                             f"expected one of {SHAPES}")
        object.__setattr__(self, "placement", _readonly(self.placement))
        object.__setattr__(self, "size", tuple(float(s) for s in self.size))
        if self.rgba is not None:
            object.__setattr__(self, "rgba", tuple(float(c) for c in self.rgba))
        if self.vertices is not None:
            object.__setattr__(self, "vertices", _readonly(self.vertices))
            object.__setattr__(self, "faces", _readonly(self.faces, np.int64))

    def on_frame(self, frame, placement=None):
        """This visual moved to frame index ``frame`` (at ``placement`` in it, if given)."""
        return Visual(self.name, int(frame), self.placement if placement is None
                      else placement, self.shape, self.size, self.rgba, self.filename,
                      self.base_dir, self.vertices, self.faces)


def remap_visuals(visuals, old_frames, new_frames):
    """``visuals`` hung on ``old_frames`` moved onto the frame of the same name and type
    in ``new_frames``, at the same placement in it (a reduced model keeps every frame by
    name, a locked link's BODY frame re-placed on the kept ancestor, so a visual stays on
    its link); visuals whose frame is gone are dropped."""
    index = {}
    for k, f in enumerate(new_frames):
        index.setdefault((f.name, f.type), k)
    out = []
    for v in visuals:
        f = old_frames[v.frame]
        k = index.get((f.name, f.type))
        if k is not None:
            out.append(v.on_frame(k))
    return tuple(out)
