"""The immutable robot Model and the builder that makes one.

Joints are numbered like Pinocchio's: 0 is the universe, 1..njoints-1 the joints, a parent
always before its children. ``model.names[i]`` is joint i's name (``names[0] ==
"universe"``). Placements are homogeneous 4x4 transforms ``[[R, p], [0, 1]]`` taking
coordinates in the child frame to the parent frame.
"""

from __future__ import annotations

import dataclasses
import difflib
import hashlib
from dataclasses import dataclass
from types import MappingProxyType
from enum import IntEnum

import numpy as np

from . import configuration as _configuration
from . import layout as L
from .warn import warn_user

_SPHERICAL_S = np.hstack([np.zeros((3, 3)), np.eye(3)]).T   # columns [0; e_k]


class FrameType(IntEnum):
    """Pinocchio's FrameType, same names and values (bit flags: ``get_frame_id`` takes an
    OR of several as a mask, as Pinocchio's getFrameId does)."""

    OP_FRAME = 1        # operational frame, added by the user
    JOINT = 2           # a joint's own frame (identity placement on that joint)
    FIXED_JOINT = 4     # a URDF fixed joint (and the universe)
    BODY = 8            # a URDF link
    SENSOR = 16


_ALL_TYPES = 31


@dataclass(frozen=True, eq=False)
class Frame:
    """A named frame attached to joint ``parent`` (0 = universe) at ``placement`` (4x4, in
    that joint's frame), as Pinocchio's Frame: ``parent`` is its parentJoint (also readable
    as ``parent_joint``), ``parent_frame`` the index in ``model.frames`` of the frame it
    hangs from in the frame tree, ``type`` a :class:`FrameType`."""

    name: str
    parent: int
    placement: np.ndarray
    type: FrameType = FrameType.OP_FRAME
    parent_frame: int = 0

    def __post_init__(self):
        object.__setattr__(self, "type", FrameType(int(self.type)))   # e.g. pin.BODY

    @property
    def parent_joint(self):
        """Pinocchio's name for ``parent``."""
        return self.parent

    def __repr__(self):
        return (f"Frame({self.name!r}, type={self.type.name}, parent_joint={self.parent}, "
                f"parent_frame={self.parent_frame})")


def _frame_type(t, where="type"):
    """A FrameType mask (int) from a FrameType, an int (Pinocchio's FrameType, or an OR of
    several) or a name such as "BODY" (any case)."""
    if isinstance(t, str):
        try:
            return int(FrameType[t.upper()])
        except KeyError:
            raise ValueError(f"{where}: unknown frame type {t!r}; expected one of "
                             f"{[m.name for m in FrameType]}") from None
    try:
        mask = int(t)
    except (TypeError, ValueError):
        raise TypeError(f"{where}: expected a FrameType, an int or a name, "
                        f"got {type(t).__name__}") from None
    if not 0 < mask <= _ALL_TYPES:
        raise ValueError(f"{where}: {t!r} is not a FrameType or an OR of FrameTypes")
    return mask


def _readonly(a, dtype=np.float64):
    a = np.array(a, dtype=dtype)
    a.setflags(write=False)
    return a


def _dof_limits(values, nv, what):
    """A read-only (nv,) array of non-negative limits (+inf: none) from ``values``
    (None: all +inf)."""
    a = _readonly(np.full(nv, np.inf) if values is None else values)
    if a.shape != (nv,) or np.any(np.isnan(a)) or np.any(a < 0):
        raise ValueError(f"{what}: expected {nv} non-negative values (one per velocity "
                         f"coordinate, inf for none), got {values!r}")
    return a


def check_inertia(mass, com, inertia, where, strict=True):
    """Raise ValueError unless (mass, com, inertia about com) is a physical rigid body.
    ``strict=False`` lets principal moments that violate the triangle inequality through
    with a warning (real URDFs carry such inertias, and Pinocchio loads them)."""
    com = np.asarray(com, dtype=float)
    inertia = np.asarray(inertia, dtype=float)
    if not np.isfinite(mass) or mass < 0.0:
        raise ValueError(f"{where}: mass must be finite and non-negative, got {mass}")
    if com.shape != (3,) or not np.all(np.isfinite(com)):
        raise ValueError(f"{where}: centre of mass must be 3 finite numbers, got {com}")
    if inertia.shape != (3, 3) or not np.all(np.isfinite(inertia)):
        raise ValueError(f"{where}: rotational inertia must be a finite 3x3 matrix")
    if np.max(np.abs(inertia - inertia.T)) > 1e-9 * max(1.0, np.max(np.abs(inertia))):
        raise ValueError(f"{where}: rotational inertia is not symmetric")
    if mass == 0.0 and not np.any(inertia):
        return
    ev = np.linalg.eigvalsh(inertia)
    tol = 1e-12 * max(1.0, ev[-1])
    if ev[0] < -tol:
        raise ValueError(f"{where}: rotational inertia is not positive semi-definite "
                         f"(eigenvalues {ev})")
    if ev[0] + ev[1] < ev[2] - max(tol, 1e-9 * ev[2]):
        msg = f"{where}: rotational inertia violates the triangle inequality " \
              f"(principal moments {ev})"
        if strict:
            raise ValueError(msg)
        warn_user(msg + "; loaded as given, as Pinocchio does (strict=True refuses it)")


def massless_joints(model):
    """Indices of the moving joints that carry no mass or inertia along their motion, for
    every q: every body in the joint's subtree is massless, and for a rotating joint
    (revolute, continuous, spherical) has no rotational inertia either (a prismatic or
    free-flyer joint needs mass), nor armature on every dof. Only the topmost such joint
    of a subtree is listed. M(q) then has a zero row and column whatever q is."""
    n = model.njoints - 1
    mass = np.array(model.masses, dtype=float)
    inertia = np.array([float(np.abs(I).sum()) for I in model.inertias])
    for i in range(n, 0, -1):                       # children come after their parents
        p = int(model.parents[i])
        mass[p] += mass[i]
        inertia[p] += inertia[i]
    bad, inside = [], set()                         # inside: joints in listed subtrees
    for i in range(1, n + 1):
        if int(model.parents[i]) in inside:
            inside.add(i)
            continue
        t = int(model.joint_types[i])
        iv = int(model.idx_v[i])
        if np.all(model.armature[iv:iv + int(model.nvs[i])] > 0):
            continue                                # its rotors carry inertia
        if mass[i] == 0.0 and (t in (L.PRISMATIC, L.FREE_FLYER) or inertia[i] == 0.0):
            bad.append(i)
            inside.add(i)
    return bad


def _check_armature_world(model):
    """armature_world (njoints,): only free flyers, each with one linear armature value
    (MuJoCo's R^T A R is a constant only for an isotropic A)."""
    flags = model.armature_world
    if flags.shape != (model.njoints,) or flags[0]:
        raise ValueError(f"armature_world: expected {model.njoints} flags, the universe's "
                         f"False, got {flags!r}")
    for i in np.flatnonzero(flags):
        name = model.names[i]
        if model.joint_types[i] != L.FREE_FLYER:
            raise ValueError(f"joint {name!r}: armature_world applies to free-flyer "
                             f"joints only, not {model.joint_type_name(i)}")
        iv = int(model.idx_v[i])
        lin = model.armature[iv:iv + 3]
        if not np.all(lin == lin[0]):
            raise ValueError(f"joint {name!r}: a world-frame linear armature (MuJoCo's "
                             f"free joint) must be equal on x, y and z, got {lin}: in "
                             "body-frame velocities R^T A R would depend on q")


def combine_inertias(m1, c1, I1, m2, c2, I2):
    """Mass, com and inertia about com of two bodies given in one frame (exact)."""
    m = m1 + m2
    if m == 0.0:
        return 0.0, np.zeros(3), I1 + I2
    c = (m1 * c1 + m2 * c2) / m
    def shift(mk, ck):
        d = ck - c
        return mk * (d @ d * np.eye(3) - np.outer(d, d))
    return m, c, I1 + I2 + shift(m1, c1) + shift(m2, c2)


class Model:
    """Immutable kinematic tree with inertias; build one with :class:`ModelBuilder`.

    Attributes: ``nq``, ``nv``, ``njoints`` (the universe included, as Pinocchio's),
    ``names`` (njoints), ``parents`` (njoints, parents[0] = 0), ``joint_types``, ``idx_q``, ``idx_v``,
    ``nqs``, ``nvs``, ``placements`` (njoints, 4, 4), ``axes``, ``masses``, ``coms``,
    ``inertias`` (about the com), ``lower_limits``/``upper_limits`` (nq),
    ``effort_limits``/``velocity_limits`` (nv: Pinocchio's ``effortLimit`` /
    ``velocityLimit``, the largest joint torque or force and speed of each velocity
    coordinate; +inf where the model states none: a free flyer, a joint without limits,
    a model built by hand without them), ``gravity``,
    ``frames`` (a tuple of :class:`Frame`, Pinocchio's list for a URDF model: see
    ``load_urdf``), ``joint_of_dof`` (nv: the joint each velocity coordinate belongs to),
    ``armature`` (nv), ``armature_world`` (njoints, bool: True for a free flyer whose
    linear armature acts on the world-frame linear velocity, MuJoCo's convention, which
    adds armature (w x v_lin) to its linear torques: kernels/armature.py; False,
    Pinocchio's convention, everywhere else);
    ``reference_configurations`` (a read-only mapping name -> q (nq,), Pinocchio's
    ``model.referenceConfigurations``: an SRDF's group states such as "standing" or
    "half_sitting"; empty unless the model came with them, as ``load_robot``'s do);
    ``visuals`` (a tuple of :class:`~rbdiff.model.visuals.Visual`: the URDF's ``<visual>``
    elements or MuJoCo's visible geoms, each on a frame; empty for a model built by hand;
    only rbdiff.viewer reads them);
    ``mi``/``mf``, the packed arrays the kernels read, and ``frame_parents``/``frame_mf``,
    the frames packed likewise (see ``layout``).
    """

    # what every fast path reads, as slots: a Model has ~45 attributes, past the 30 of a
    # shared-key instance dict, so CPython looks the others up by hash (~3 ns more each);
    # _record: what the compiled fronts read, at a fixed offset (cpu/record.py)
    __slots__ = ("mi", "mf", "frame_parents", "frame_mf", "nv", "_scratch_key",
                 "_frame_ids", "_sv", "_svv", "_record", "__dict__", "__weakref__")
    _SLOTS = __slots__[:-2]

    def __init__(self, names, parents, jtypes, placements, axes, masses, coms, inertias,
                 frames, gravity, lower, upper, armature=None, armature_world=None,
                 reference_configurations=None, visuals=None, effort_limits=None,
                 velocity_limits=None):
        n = len(names) - 1                 # moving joints
        self.njoints = n + 1               # Pinocchio's: the universe counts
        self.names = tuple(names)
        self.parents = _readonly(parents, np.int64)
        self.joint_types = _readonly(jtypes, np.int64)
        self.nqs = _readonly([0] + [L.JOINT_NQ[t] for t in jtypes[1:]], np.int64)
        self.nvs = _readonly([0] + [L.JOINT_NV[t] for t in jtypes[1:]], np.int64)
        self.idx_q = _readonly(np.concatenate([[0], np.cumsum(self.nqs)[:-1]]), np.int64)
        self.idx_v = _readonly(np.concatenate([[0], np.cumsum(self.nvs)[:-1]]), np.int64)
        self.nq = int(self.nqs.sum())
        self.nv = int(self.nvs.sum())
        self.armature = _readonly(np.zeros(self.nv) if armature is None else armature)
        if self.armature.shape != (self.nv,) or not (np.all(np.isfinite(self.armature))
                                                     and np.all(self.armature >= 0)):
            raise ValueError(f"armature: expected {self.nv} finite non-negative values "
                             f"(one per velocity coordinate), got {armature!r}")
        self.effort_limits = _dof_limits(effort_limits, self.nv, "effort_limits")
        self.velocity_limits = _dof_limits(velocity_limits, self.nv, "velocity_limits")
        self.armature_world = _readonly(np.zeros(n + 1, bool) if armature_world is None
                                        else armature_world, bool)
        _check_armature_world(self)
        self._reference_configurations = {}
        for key, q in (reference_configurations or {}).items():
            q = _readonly(q)
            if q.shape != (self.nq,) or not np.all(np.isfinite(q)):
                raise ValueError(f"reference configuration {key!r}: expected {self.nq} "
                                 f"finite values, got shape {q.shape}")
            self._reference_configurations[str(key)] = q
        self.placements = _readonly(placements)
        self.axes = _readonly(axes)
        self.masses = _readonly(masses)
        self.coms = _readonly(coms)
        self.inertias = _readonly(inertias)
        self.gravity = _readonly(gravity)
        self.lower_limits = _readonly(lower)
        self.upper_limits = _readonly(upper)
        self.frames = tuple(frames)
        self.visuals = tuple(visuals or ())
        for vis in self.visuals:
            if not 0 <= vis.frame < len(self.frames):
                raise ValueError(f"visual {vis.name!r}: frame {vis.frame} is not one of "
                                 f"the model's {len(self.frames)} frames")
        self._frame_index = {}       # name -> first frame with that name
        for k, f in enumerate(self.frames):
            self._frame_index.setdefault(f.name, k)
        # the fast paths' lookup: a frame name or a valid index (0..nframes-1) -> index
        self._frame_ids = {k: k for k in range(len(self.frames))}
        self._frame_ids.update(self._frame_index)
        # and of a moving joint: its name or its index (1..njoints-1) -> index
        self._joint_ids = {k: k for k in range(1, n + 1)}
        self._joint_ids.update((name, k) for k, name in enumerate(self.names) if k > 0)
        self.mi, self.mf = self._pack()
        self.mf32 = _readonly(self.mf, np.float32)   # float32 kernels read float32 models
        self.frame_parents, self.frame_mf = self._pack_frames()
        self.frame_mf32 = _readonly(self.frame_mf, np.float32)
        self._sq = (self.nq,)                          # output shapes the api allocates
        self._sv = (self.nv,)
        self._svv = (self.nv, self.nv)
        self._sT = (n + 1, 4, 4)
        self._sm = (n + 1, 6)
        self._sframes = (len(self.frames), 4, 4)
        self._sJ = (6, self.nv)
        self._s3v = (3, self.nv)
        self._skd = (n + 1, 6, self.nv)
        self._neutral = _readonly(_configuration.neutral(self))   # rbd.neutral copies it
        self.joint_of_dof = _readonly(np.repeat(np.arange(n + 1), self.nvs), np.int64)
        self._digest = _content_digest(self._attributes())
        self._hash = int.from_bytes(self._digest[:8], "little", signed=True)
        self._attach_caches()

    def _pack(self):
        n = self.njoints - 1
        mi = np.zeros((n + 1, L.MI_WIDTH), np.int64)
        mf = np.zeros((n + 1, L.MF_WIDTH))
        mi[0, :3] = (n, self.nq, self.nv)
        mi[0, L.MI_ARM_WORLD] = int(self.armature_world.sum())   # 0: kernels skip the term
        mi[0, L.MI_ROOT_FREE_FLYER] = next(
            (i for i in range(1, n + 1) if self.parents[i] == 0
             and self.joint_types[i] == L.FREE_FLYER), 0)   # the kernels' base origin
        mf[0, L.MF_GRAVITY:L.MF_GRAVITY + 3] = self.gravity
        for i in range(1, n + 1):
            t = int(self.joint_types[i])
            mi[i, :6] = (self.parents[i], t, self.idx_q[i], self.idx_v[i],
                         self.nqs[i], self.nvs[i])
            mi[i, L.MI_ARM_WORLD] = self.armature_world[i]
            mf[i, L.MF_R:L.MF_R + 9] = self.placements[i, :3, :3].ravel()
            mf[i, L.MF_P:L.MF_P + 3] = self.placements[i, :3, 3]
            mf[i, L.MF_AXIS:L.MF_AXIS + 3] = self.axes[i]
            mf[i, L.MF_MASS] = self.masses[i]
            mf[i, L.MF_COM:L.MF_COM + 3] = self.coms[i]
            iv = int(self.idx_v[i])
            mf[i, L.MF_ARM:L.MF_ARM + self.nvs[i]] = self.armature[iv:iv + self.nvs[i]]
            mf[i, L.MF_IC:L.MF_IC + 9] = self.inertias[i].ravel()
            c, m = self.coms[i], self.masses[i]
            mf[i, L.MF_H:L.MF_H + 3] = m * c
            mf[i, L.MF_IO:L.MF_IO + 9] = (self.inertias[i]
                                          + m * (c @ c * np.eye(3) - np.outer(c, c))).ravel()
            mf[i, L.MF_S:L.MF_S + 6 * self.nvs[i]] = self.motion_subspace(i).T.ravel()
        for i in range(n, 0, -1):
            if self.joint_types[i] in (L.REVOLUTE, L.PRISMATIC):
                mi[i, L.MI_RUN] = 1 + (mi[i + 1, L.MI_RUN] if i < n else 0)
            mi[i, L.MI_NVSUB] += self.nvs[i]
            if self.parents[i] > 0:
                mi[self.parents[i], L.MI_NVSUB] += mi[i, L.MI_NVSUB]
        path = [0]   # depth-first numbering: each parent is on the path to the previous joint
        for j in range(1, n + 1):
            while path and path[-1] != self.parents[j]:
                path.pop()
            if not path:
                raise ValueError("joints must be numbered depth-first (each subtree a "
                                 f"contiguous range); joint {self.names[j]!r} is not")
            path.append(j)
        mi.setflags(write=False)
        mf.setflags(write=False)
        return mi, mf

    def _pack_frames(self):
        """(frame_parents (nframes,) int64, frame_mf (nframes, FM_WIDTH)), read-only."""
        fm = np.zeros((len(self.frames), L.FM_WIDTH))
        for k, f in enumerate(self.frames):
            T = np.asarray(f.placement, dtype=float)
            fm[k, L.FM_R:L.FM_R + 9] = T[:3, :3].ravel()
            fm[k, L.FM_P:L.FM_P + 3] = T[:3, 3]
            fm[k, L.FM_ID] = float(np.array_equal(T[:3, :4], np.eye(3, 4)))
        return _readonly([f.parent for f in self.frames], np.int64), _readonly(fm)

    def motion_subspace(self, i):
        """Joint i's motion subspace S (6, nv_i) in its own frame, rows [linear; angular]."""
        t = int(self.joint_types[i])
        a = self.axes[i]
        if t in (L.REVOLUTE, L.REVOLUTE_UNBOUNDED):
            return np.concatenate([np.zeros(3), a])[:, None]
        if t == L.PRISMATIC:
            return np.concatenate([a, np.zeros(3)])[:, None]
        if t == L.SPHERICAL:
            return _SPHERICAL_S.copy()
        return np.eye(6)

    # -- lookups -----------------------------------------------------------------------
    def get_joint_id(self, name):
        """Index of the joint called ``name`` (1..njoints-1)."""
        try:
            return self.names.index(name)
        except ValueError:
            raise KeyError(f"no joint named {name!r}") from None

    def get_frame_id(self, name, type=None):
        """Index in ``model.frames`` of the first frame called ``name`` (of type ``type``
        when given: a :class:`FrameType`, Pinocchio's FrameType, an OR of several, or a
        name such as "BODY"), as Pinocchio's getFrameId. A URDF joint and link may share a
        name: the joint's frame comes first, pass ``type`` to pick. Raises KeyError naming
        close matches when there is none."""
        if type is None:
            k = self._frame_index.get(name)
            if k is not None:
                return k
        else:
            mask = _frame_type(type)
            for k, f in enumerate(self.frames):
                if f.name == name and int(f.type) & mask:
                    return k
        msg = f"no frame named {name!r}"
        if type is not None:
            kinds = [m.name for m in FrameType if int(m) & mask]
            msg += f" of type {'|'.join(kinds)}"
            others = sorted({f.type.name for f in self.frames if f.name == name})
            if others:
                msg += f" (there is a frame of that name of type {'|'.join(others)})"
        close = difflib.get_close_matches(str(name), list(self._frame_index), n=5, cutoff=0.6)
        msg += f"; close matches: {close}" if close else "; no close match among " \
            f"the {len(self.frames)} frames (see model.frames)"
        raise KeyError(msg)

    def joint_type_name(self, i):
        return L.JOINT_NAMES[int(self.joint_types[i])]

    def __repr__(self):
        return (f"rbdiff.Model(njoints={self.njoints}, nq={self.nq}, nv={self.nv}, "
                f"frames={len(self.frames)})")

    def __eq__(self, other):
        """Equal content: the same joints, bodies, frames, limits, armature, gravity,
        reference configurations and visuals, bit for bit (two loads of one file are
        equal; a model and its pickled copy too), compared by a SHA-256 digest of it."""
        if other is self:
            return True
        if type(other) is not Model:
            return NotImplemented
        return self._digest == other._digest

    def __hash__(self):
        """Stable across processes (the content digest's first 8 bytes, not id())."""
        return self._hash

    @property
    def fingerprint(self):
        """The content digest as hex (SHA-256): equal for equal models, in any process."""
        return self._digest.hex()

    _CACHES = {}    # attribute name -> make(model), registered by the layers above

    @classmethod
    def cache(cls, name, make):
        """Let a layer above attach a constant derived from the model (cpu/scratch.py:
        a kinematics state's shape; centroidal.py: the total mass) to every model,
        without the model importing that layer. Constants only: per-call state (scratch,
        batch plans, memo tables) belongs to the caller or the thread (cpu/scratch.py,
        cpu/policy.py), since one model is shared by threads. Set at construction, not
        on first read: a class with __getattr__ loses CPython's specialised attribute
        loads (~10-30 % of a small call)."""
        cls._CACHES[name] = make

    def _attach_caches(self):
        for name, make in Model._CACHES.items():
            object.__setattr__(self, name, make(self))

    def _attributes(self):
        """Every attribute the model holds, slots included, by name."""
        attrs = dict(self.__dict__)
        attrs.update((k, getattr(self, k)) for k in Model._SLOTS if hasattr(self, k))
        return attrs

    def __getstate__(self):
        """A pickled or copied model leaves its caches behind (made again on unpickling)."""
        return {k: v for k, v in self._attributes().items() if k not in Model._CACHES}

    def __setstate__(self, state):
        for k, v in state.items():
            _read_only(v)               # unpickled arrays come back writeable
            object.__setattr__(self, k, v)
        if self.frame_mf.shape[1] != L.FM_WIDTH:      # pickled by an older rbdiff
            object.__setattr__(self, "frame_mf", self._pack_frames()[1])
            object.__setattr__(self, "frame_mf32", _readonly(self.frame_mf, np.float32))
        self._attach_caches()

    def __setattr__(self, name, value):
        if getattr(self, "_frozen", False):
            raise AttributeError("rbdiff.Model is immutable")
        object.__setattr__(self, name, value)

    @property
    def reference_configurations(self):
        """Named configurations (nq,) each, read-only: Pinocchio's
        ``model.referenceConfigurations`` (an SRDF's group states)."""
        return MappingProxyType(self._reference_configurations)

    def _copy(self, **changes):
        """A copy of this model with some of Model's constructor arguments replaced."""
        args = dict(names=self.names, parents=self.parents, jtypes=self.joint_types,
                    placements=self.placements, axes=self.axes, masses=self.masses,
                    coms=self.coms, inertias=self.inertias, frames=self.frames,
                    gravity=self.gravity, lower=self.lower_limits, upper=self.upper_limits,
                    armature=self.armature, armature_world=self.armature_world,
                    reference_configurations=self._reference_configurations,
                    visuals=self.visuals, effort_limits=self.effort_limits,
                    velocity_limits=self.velocity_limits)
        args.update(changes)
        return Model(**args)._freeze()

    def reduced(self, joints_to_lock, q_ref=None):
        """The model with ``joints_to_lock`` (names or indices) fixed at their value in
        ``q_ref`` (nq,; default the neutral configuration), as Pinocchio's
        ``buildReducedModel(model, joints_to_lock, q_ref)``: each locked joint becomes a
        FIXED_JOINT frame whose bodies join the nearest moving ancestor's, its children
        hang from that ancestor, every frame is kept, and the reference configurations
        keep the remaining joints' values. Raises KeyError for a joint that does not
        exist, ValueError for a joint named twice or a q_ref of the wrong size."""
        from .reduce import reduced_model
        return reduced_model(self, joints_to_lock, q_ref)

    def with_armature(self, armature, armature_world=None):
        """A copy of this model with ``armature`` (nv,) (Pinocchio's ``model.armature``: a
        rotor inertia per velocity coordinate, added to M(q)'s diagonal, so to rnea's
        torque, crba, aba, minverse and their derivatives); a scalar sets every dof.
        ``armature_world`` (njoints,) bool (see the class docstring; free flyers only,
        with equal linear armatures): None keeps this model's."""
        arm = np.broadcast_to(np.asarray(armature, dtype=float), (self.nv,)).copy() \
            if np.ndim(armature) == 0 else np.asarray(armature, dtype=float)
        return self._copy(armature=arm, armature_world=self.armature_world
                          if armature_world is None else np.asarray(armature_world, dtype=bool))

    def _freeze(self):
        object.__setattr__(self, "_frozen", True)
        return self


def _feed(h, x):
    """Add ``x`` (arrays, numbers, strings, containers, Frames, Visuals) to hash ``h``,
    each value tagged with its type and length so that no two contents feed alike."""
    if isinstance(x, np.ndarray):
        h.update(b"a%s%s;" % (x.dtype.str.encode(), str(x.shape).encode()))
        h.update(np.ascontiguousarray(x).tobytes())
    elif isinstance(x, (str, bytes)):
        b = x.encode() if isinstance(x, str) else x
        h.update(b"s%d;" % len(b) + b)
    elif x is None or isinstance(x, (bool, int, float, np.generic)):
        h.update(b"n%s;" % repr(x).encode())
    elif isinstance(x, (tuple, list)):
        h.update(b"t%d;" % len(x))
        for y in x:
            _feed(h, y)
    elif isinstance(x, (dict, MappingProxyType)):
        h.update(b"d%d;" % len(x))
        for k in sorted(x, key=repr):
            _feed(h, k)
            _feed(h, x[k])
    elif dataclasses.is_dataclass(x):
        h.update(b"c%s;" % type(x).__name__.encode())
        for f in dataclasses.fields(x):
            _feed(h, getattr(x, f.name))
    else:
        raise TypeError(f"Model digest: cannot hash a {type(x).__name__}")


def _read_only(x):
    """Make every array in x (containers, Frames, Visuals) read-only, in place."""
    if isinstance(x, np.ndarray):
        x.setflags(write=False)
    elif isinstance(x, (tuple, list)):
        for y in x:
            _read_only(y)
    elif isinstance(x, dict):
        for y in x.values():
            _read_only(y)
    elif dataclasses.is_dataclass(x):
        for f in dataclasses.fields(x):
            _read_only(getattr(x, f.name))


def _content_digest(attrs):
    """SHA-256 of a model's attributes (its __dict__ while it is being made), in name
    order: every array and table the constructor made, so a new field counts by itself."""
    h = hashlib.sha256()
    for name in sorted(attrs):
        if name not in Model._CACHES:
            h.update(name.encode() + b"=")
            _feed(h, attrs[name])
    return h.digest()


def _placement(placement):
    if placement is None:
        return np.eye(4)
    if isinstance(placement, tuple) and len(placement) == 2:
        R, p = placement
        T = np.eye(4)
        T[:3, :3] = R
        T[:3, 3] = p
        placement = T
    T = np.array(placement, dtype=float)
    if T.shape != (4, 4) or not np.all(np.isfinite(T)):
        raise ValueError("placement must be a finite 4x4 transform or an (R, p) pair")
    R = T[:3, :3]
    if np.max(np.abs(R @ R.T - np.eye(3))) > 1e-9 or np.linalg.det(R) < 0:
        raise ValueError("placement rotation is not a proper rotation matrix")
    return T


class ModelBuilder:
    """Builds a :class:`Model` joint by joint (Pinocchio's addJoint / appendBodyToJoint).

    Frames as Pinocchio's: frame 0 is the universe (FIXED_JOINT); ``add_joint`` adds the
    joint's JOINT frame (Pinocchio's addJointFrame), ``append_body(..., name=...)`` a BODY
    frame and ``add_frame`` any other (OP_FRAME unless told).

    >>> b = ModelBuilder()
    >>> j = b.add_joint(0, "revolute", "shoulder", placement=np.eye(4), axis=[0, 0, 1])
    >>> b.append_body(j, mass=1.0, com=[0, 0, 0.5], inertia=np.eye(3) * 0.1)
    >>> model = b.build()
    """

    _TYPES = {"revolute": L.REVOLUTE, "prismatic": L.PRISMATIC,
              "continuous": L.REVOLUTE_UNBOUNDED, "revolute_unbounded": L.REVOLUTE_UNBOUNDED,
              "spherical": L.SPHERICAL, "free_flyer": L.FREE_FLYER, "floating": L.FREE_FLYER}

    def __init__(self, gravity=(0.0, 0.0, -9.81), strict=True):
        """``strict=False``: a lower limit above the upper one and inertias that violate
        the triangle inequality are kept, with a warning, instead of refused."""
        self.gravity = np.array(gravity, dtype=float)
        self._strict = bool(strict)
        self._armature = []
        self._armature_world = [False]
        self._effort = []
        self._velocity = []
        self._names = ["universe"]
        self._parents = [0]
        self._types = [-1]
        self._placements = [np.eye(4)]
        self._axes = [np.zeros(3)]
        self._bodies = [(0.0, np.zeros(3), np.zeros((3, 3)))]
        self._lower = []
        self._upper = []
        self._frames = []
        self._frame_keys = {}       # (name, type) -> index in _frames
        self._visuals = []
        self._append_frame(Frame("universe", 0, np.eye(4), FrameType.FIXED_JOINT, 0))

    @property
    def njoints(self):
        """Joints so far, the universe included (the next joint's index), as Model's."""
        return len(self._names)

    @property
    def nframes(self):
        """Frames so far, the universe included (the next frame's index)."""
        return len(self._frames)

    def add_joint(self, parent, joint_type, name, placement=None, axis=None,
                  lower=None, upper=None, parent_frame=None, armature=0.0,
                  armature_world=False, effort=None, velocity=None):
        """Add a joint under joint ``parent`` (0 = universe) and its JOINT frame; returns
        the joint's index.

        joint_type: "revolute", "prismatic", "continuous", "spherical" or "free_flyer".
        placement: 4x4 (or (R, p)) of the joint frame in the parent joint's frame.
        axis: unit 3-vector for revolute, prismatic and continuous joints.
        lower/upper: position limits (revolute, prismatic) used by random_configuration.
        parent_frame: the JOINT frame's parent in the frame tree; None: the parent joint's
        own frame (Pinocchio's addJointFrame default; its URDF parser passes the parent
        link's BODY frame).
        armature: rotor inertia of the joint's dofs (a scalar or one per dof; Pinocchio's
        ``model.armature``), added to M(q)'s diagonal.
        armature_world: free flyers only: the linear armature acts on the world-frame
        linear velocity, as MuJoCo's free joint (``Model.armature_world``); its three
        linear values must then be equal.
        effort, velocity: the largest torque (force) and speed of the joint's dofs
        (a scalar or one per dof; Pinocchio's ``effortLimit`` / ``velocityLimit``);
        None: +inf, no limit.
        """
        if joint_type not in self._TYPES:
            raise ValueError(f"joint {name!r}: unsupported joint type {joint_type!r}; "
                             f"expected one of {sorted(self._TYPES)}")
        if name in self._names:
            raise ValueError(f"joint {name!r}: a joint with this name already exists")
        if not (0 <= parent < self.njoints):
            raise ValueError(f"joint {name!r}: parent {parent} is not an existing joint")
        self._check_new_frame(name, FrameType.JOINT, parent_frame)
        t = self._TYPES[joint_type]
        ax = np.zeros(3)
        if t in (L.REVOLUTE, L.PRISMATIC, L.REVOLUTE_UNBOUNDED):
            ax = np.array([0.0, 0.0, 1.0] if axis is None else axis, dtype=float)
            nrm = np.linalg.norm(ax) if ax.shape == (3,) else 0.0
            if ax.shape != (3,) or not np.isfinite(nrm) or nrm < 1e-12:
                raise ValueError(f"joint {name!r}: axis must be a non-zero 3-vector, got {axis}")
            ax = ax / nrm
        T = _placement(placement)
        nq = L.JOINT_NQ[t]
        try:
            arm = np.broadcast_to(np.asarray(armature, dtype=float),
                                  (L.JOINT_NV[t],)).copy()
        except (TypeError, ValueError):
            arm = np.full(1, np.nan)
        if arm.shape != (L.JOINT_NV[t],) or not np.all(np.isfinite(arm) & (arm >= 0)):
            raise ValueError(f"joint {name!r}: armature must be a finite non-negative "
                             f"scalar or {L.JOINT_NV[t]} values (one per dof), got "
                             f"{armature!r}")
        dof_limits = []
        for what, value in (("effort", effort), ("velocity", velocity)):
            try:
                lim = np.broadcast_to(np.asarray(np.inf if value is None else value,
                                                 dtype=float), (L.JOINT_NV[t],)).copy()
            except (TypeError, ValueError):
                lim = np.full(1, np.nan)
            if lim.shape != (L.JOINT_NV[t],) or np.any(np.isnan(lim)) or np.any(lim < 0):
                raise ValueError(f"joint {name!r}: {what} limit must be a non-negative "
                                 f"scalar or {L.JOINT_NV[t]} values (one per dof; inf: "
                                 f"none), got {value!r}")
            dof_limits.append(lim)
        if armature_world and (t != L.FREE_FLYER or not np.all(arm[:3] == arm[0])):
            raise ValueError(f"joint {name!r}: armature_world needs a free flyer with "
                             f"equal linear armatures, got {joint_type!r}, {armature!r}")
        lo, hi = [-np.inf] * nq, [np.inf] * nq
        if t in (L.REVOLUTE, L.PRISMATIC):
            lo = [-np.pi if lower is None else float(lower)]
            hi = [np.pi if upper is None else float(upper)]
            if not lo[0] <= hi[0]:
                msg = f"joint {name!r}: lower limit {lo[0]} above upper limit {hi[0]}"
                if self._strict or not lo[0] > hi[0]:     # NaN limits are never let through
                    raise ValueError(msg)
                warn_user(msg + "; kept as given, as Pinocchio does (random "
                          "configurations fall between them)")
        # checked: nothing above changed the builder, so a refused joint leaves no trace
        self._names.append(name)
        self._parents.append(int(parent))
        self._types.append(t)
        self._placements.append(T)
        self._axes.append(ax)
        self._bodies.append((0.0, np.zeros(3), np.zeros((3, 3))))
        self._armature.append(arm)
        self._armature_world.append(bool(armature_world))
        self._effort.append(dof_limits[0])
        self._velocity.append(dof_limits[1])
        self._lower.append(lo)
        self._upper.append(hi)
        j = self.njoints - 1
        if parent_frame is None:
            parent_frame = self._joint_frame(int(parent))
        self._append_frame(Frame(name, j, np.eye(4), FrameType.JOINT, int(parent_frame)))
        return j

    def append_body(self, joint, mass, com, inertia, placement=None, name=None):
        """Rigidly attach a body to ``joint``: mass, com and inertia about the com given in
        the frame ``placement`` relative to the joint frame (identity if None). Bodies on
        one joint are combined exactly. ``name`` adds a BODY frame at ``placement``."""
        where = name or f"body on joint {self._names[joint]!r}"
        check_inertia(mass, com, inertia, where, self._strict)
        if name is not None:
            self._validate_frame(name, joint, FrameType.BODY, None)
        T = _placement(placement)
        R, p = T[:3, :3], T[:3, 3]
        c = R @ np.asarray(com, dtype=float) + p
        I = R @ np.asarray(inertia, dtype=float) @ R.T
        self._bodies[joint] = combine_inertias(*self._bodies[joint], float(mass), c, I)
        if name is not None:
            self.add_frame(name, joint, T, FrameType.BODY)

    def add_frame(self, name, joint, placement=None, type=FrameType.OP_FRAME,
                  parent_frame=None):
        """Add a frame called ``name`` on ``joint`` at ``placement`` (in the joint's frame);
        returns its index in ``model.frames``. ``type``: a :class:`FrameType` (or its name);
        ``parent_frame``: its parent in the frame tree, None for the joint's own frame.
        A second frame with the same name and type is refused (Pinocchio's addFrame
        would silently return the first)."""
        joint, ftype = self._validate_frame(name, joint, type, parent_frame)
        if parent_frame is None:
            parent_frame = self._joint_frame(joint)
        return self._append_frame(Frame(name, joint, _placement(placement), ftype,
                                        int(parent_frame)))

    def add_visual(self, visual):
        """Attach a :class:`~rbdiff.model.visuals.Visual` (its ``frame`` an index of a
        frame added so far) to the model being built."""
        if not 0 <= visual.frame < self.nframes:
            raise ValueError(f"visual {visual.name!r}: frame {visual.frame} is not an "
                             "existing frame")
        self._visuals.append(visual)

    def _append_frame(self, frame):
        self._frame_keys[(frame.name, frame.type)] = len(self._frames)
        self._frames.append(frame)
        return len(self._frames) - 1

    def _joint_frame(self, joint):
        """Joint ``joint``'s own frame: the first JOINT or FIXED_JOINT frame with its name
        (Pinocchio's rule; the universe's is frame 0)."""
        name = self._names[joint]
        found = [self._frame_keys.get((name, t)) for t in (FrameType.JOINT,
                                                            FrameType.FIXED_JOINT)]
        found = [k for k in found if k is not None]
        return min(found) if found else 0

    def _validate_frame(self, name, joint, ftype, parent_frame):
        """(joint, FrameType) of a frame about to be added; raises ValueError if it can't."""
        if not isinstance(name, str) or not name:
            raise ValueError(f"frame name must be a non-empty string, got {name!r}")
        joint = int(joint)
        if not 0 <= joint < self.njoints:
            raise ValueError(f"frame {name!r}: joint {joint} is not an existing joint")
        mask = _frame_type(ftype, f"frame {name!r}")
        try:
            ftype = FrameType(mask)
        except ValueError:
            raise ValueError(f"frame {name!r}: type must be one FrameType, got {ftype!r}") \
                from None
        self._check_new_frame(name, ftype, parent_frame)
        return joint, ftype

    def _check_new_frame(self, name, ftype, parent_frame):
        if (name, ftype) in self._frame_keys:
            raise ValueError(f"frame {name!r}: a {ftype.name} frame with this name "
                             "already exists")
        if parent_frame is not None and not 0 <= int(parent_frame) < len(self._frames):
            raise ValueError(f"frame {name!r}: parent_frame {parent_frame} is not an "
                             "existing frame")

    def build(self, allow_singular=False):
        """The immutable Model. Refuses (ValueError naming the joint) a model in which a
        moving joint carries no mass or inertia along its motion (:func:`massless_joints`:
        M(q) singular for every q, forward dynamics undefined) unless ``allow_singular``
        (kinematics-only use; aba, minverse and the forward-dynamics derivatives then
        raise)."""
        n = self.njoints - 1
        lower = np.concatenate(self._lower) if n else np.zeros(0)
        upper = np.concatenate(self._upper) if n else np.zeros(0)
        frames = [Frame(f.name, f.parent, _readonly(f.placement), f.type, f.parent_frame)
                  for f in self._frames]
        model = Model(self._names, self._parents, self._types, np.array(self._placements),
                     np.array(self._axes), np.array([b[0] for b in self._bodies]),
                     np.array([b[1] for b in self._bodies]),
                     np.array([b[2] for b in self._bodies]), frames, self.gravity,
                     lower, upper,
                     np.concatenate(self._armature) if n else np.zeros(0),
                     self._armature_world, visuals=self._visuals,
                     effort_limits=np.concatenate(self._effort) if n else np.zeros(0),
                     velocity_limits=np.concatenate(self._velocity) if n else np.zeros(0)
                     )._freeze()
        return check_singular(model, allow_singular)


def check_singular(model, allow_singular=False):
    """``model``, unless one of its moving joints carries no mass or inertia along its
    motion (:func:`massless_joints`) and not ``allow_singular``: then a ValueError naming
    those joints."""
    bad = [] if allow_singular else massless_joints(model)
    if bad:
        names = ", ".join(repr(model.names[i]) for i in bad)
        raise ValueError(
            f"{'joints' if len(bad) > 1 else 'joint'} {names}: no mass or inertia along"
            " the motion (every body moved is massless), so M(q) is singular for every "
            "q and forward dynamics is undefined. Give those bodies mass and inertia (a "
            "URDF <inertial>), or pass allow_singular=True for kinematics-only use")
    return model
