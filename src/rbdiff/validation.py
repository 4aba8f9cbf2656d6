"""Input validation of the public functions, below the api layer and the GPU dispatch:
dtype promotion, shapes, batch axes, and the precise message when a compiled entry
point refuses its input."""

import numpy as np

from .cpu.checks import BAD_SINGULAR
from .cpu.single import crba_one
from .kernels.checks import QUAT_TOL
from .cpu.scratch import single_call_scratch
from .model.layout import FREE_FLYER, REVOLUTE_UNBOUNDED, SPHERICAL

ND = np.ndarray
F64 = np.dtype(np.float64)
SUPPORTED = (np.dtype(np.float64), np.dtype(np.float32), np.dtype(np.complex128))
# a state entry beyond this (m, rad, m/s, rad/s) is no robot's: a diverged rollout (its
# dynamics mean nothing there, and their refusals would mislead)
DIVERGED = 1e5


def as_array(x, n, name):
    """x as an array of a supported dtype whose last axis has length n (1-D or 2-D)."""
    if x is None:
        raise TypeError(f"{name}: expected an array of shape ({n},) or (B, {n}), got None")
    x = np.asarray(x)
    if x.dtype not in SUPPORTED:
        if x.dtype.kind in "biuf":
            x = x.astype(np.float64)
        elif x.dtype.kind == "c":
            x = x.astype(np.complex128)
        else:
            raise TypeError(f"{name}: expected a real or complex numeric array, "
                            f"got dtype {x.dtype}")
    if x.ndim not in (1, 2) or x.shape[-1] != n:
        raise ValueError(f"{name}: expected shape ({n},) or (B, {n}), got {x.shape}")
    return np.ascontiguousarray(x)


def fext_shape_message(want, got):
    """fext's shape error; the pre-0.2 shape (one row fewer: no universe row) is named,
    so code written for it fails loudly instead of shifting every force by one body."""
    got = tuple(got)
    msg = (f"fext: expected shape {want} (one local-frame spatial force [linear, angular] "
           f"per joint, indexed by joint id as in Pinocchio: row 0 is the universe and is "
           f"ignored, row j is joint j), got {got}")
    if len(got) == len(want) and got[:-2] == want[:-2] and got[-2:] == (want[-2] - 1, 6):
        msg += ("; that is the shape rbdiff < 0.2 took (row j - 1 for joint j): prepend a "
                "zero row for the universe, e.g. np.vstack([np.zeros(6), fext]) (see the "
                "changelog)")
    return msg


def fext_array(model, fext, batch, dtype, wanted):
    if not wanted:
        return None
    if fext is None:
        return None if batch is None else np.zeros((batch, 0, 6), dtype)
    f = np.asarray(fext)
    want = (model.njoints, 6) if batch is None else (batch, model.njoints, 6)
    if f.shape != want:
        raise ValueError(fext_shape_message(want, f.shape))
    if f.dtype.kind not in "biufc":
        raise TypeError(f"fext: expected a numeric array, got dtype {f.dtype}")
    return np.ascontiguousarray(f, dtype=dtype)


def _ready(model, named, wants_fext):
    """prepare()'s result when every input already is a float64 ndarray of the right
    length, all 1-D or all 2-D with one batch size, and fext is None; else None. (The
    common call: ~2 us less than the general checks. Strided inputs are fine: the entry
    points compile for their layout.)"""
    x0 = named[0][1]
    if type(x0) is not ND:
        return None
    nd = x0.ndim
    if nd == 1:
        for _, x, n in named:
            if type(x) is not ND or x.dtype is not F64 or x.shape != (n,):
                return None
        return [x for _, x, _ in named], None, None, model.mf
    if nd != 2:
        return None
    B = x0.shape[0]
    for _, x, n in named:
        if type(x) is not ND or x.dtype is not F64 or x.shape != (B, n):
            return None
    return [x for _, x, _ in named], no_forces(B) if wants_fext else None, B, model.mf


_NO_FORCES = {}      # B -> a (B, 0, 6) array: it holds no data, so calls can share it


def no_forces(batch):
    """fext of a float64 batch without external forces: (B, 0, 6), read by nobody
    (cached for the first 64 batch sizes: a lookup costs half of np.empty)."""
    f = _NO_FORCES.get(batch)
    if f is None:
        f = np.empty((batch, 0, 6))
        if len(_NO_FORCES) < 64:
            _NO_FORCES[batch] = f
    return f


def prepare(model, fext, named, wants_fext=True):
    """Validated, dtype-promoted, C-contiguous arrays; batch size or None; model floats."""
    if fext is None:
        ready = _ready(model, named, wants_fext)
        if ready is not None:
            return ready
    arrays = [as_array(x, n, name) for name, x, n in named]
    ndim = arrays[0].ndim
    for (name, _, _), x in zip(named, arrays):
        if x.ndim != ndim:
            raise ValueError(f"{name}: shape {x.shape} mixes single and batched inputs "
                             f"({named[0][0]} has shape {arrays[0].shape})")
        if ndim == 2 and x.shape[0] != arrays[0].shape[0]:
            raise ValueError(f"{name}: batch size {x.shape[0]} differs from "
                             f"{named[0][0]}'s {arrays[0].shape[0]}")
    dtype = np.result_type(*arrays)
    if fext is not None:
        dtype = np.result_type(dtype, np.asarray(fext).dtype)
    if dtype not in SUPPORTED:
        dtype = np.dtype(np.complex128) if dtype.kind == "c" else F64
    arrays = [x.astype(dtype, copy=False) for x in arrays]
    batch = arrays[0].shape[0] if ndim == 2 else None
    f = fext_array(model, fext, batch, dtype, wants_fext)
    mf = model.mf32 if dtype == np.float32 else model.mf
    return arrays, f, batch, mf


def prepare_broadcast(model, named):
    """prepare() for functions whose single argument is broadcast along the other's batch
    axis (integrate, difference): C-contiguous arrays of one supported dtype, no fext."""
    arrays = [as_array(x, n, name) for name, x, n in named]
    dtype = np.result_type(*arrays)
    if dtype not in SUPPORTED:
        dtype = np.dtype(np.complex128) if dtype.kind == "c" else F64
    nb = None
    for (name, _, _), x in zip(named, arrays):
        if x.ndim == 2:
            if nb is None:
                nb, first = x.shape[0], name
            elif x.shape[0] != nb:
                raise ValueError(f"{name}: batch size {x.shape[0]} differs from "
                                 f"{first}'s {nb}")
    if nb is not None:
        arrays = [x if x.ndim == 2 else np.broadcast_to(x, (nb, x.shape[0])) for x in arrays]
    arrays = [np.ascontiguousarray(x, dtype=dtype) for x in arrays]
    return arrays, None, nb, model.mf32 if dtype == np.float32 else model.mf


def explain(model, named, fext, configurations=None, error=None):
    """The precise reason a compiled entry point refused its input. ``configurations``:
    the names in ``named`` that are configurations (default: the first one, q); ``error``:
    the entry's ValueError (its code says when valid input met a singular M(q))."""
    if error is not None and str(error) == BAD_SINGULAR:
        return singular_error(model, named[0][1])
    for name, x in list(named) + [("fext", fext)]:
        if x is None:
            continue
        x = np.asarray(x)
        bad = np.argwhere(~np.isfinite(x))
        if len(bad):
            return ValueError(f"{name} contains NaN or Inf at index "
                              f"{tuple(int(k) for k in bad[0])}")
    if configurations is None:
        configurations = (named[0][0],)
    for name, x in named:
        if name in configurations:
            err = _configuration_error(model, name, x)
            if err is not None:
                return err
    return ValueError("invalid input")


def _configuration_error(model, name, q):
    """ValueError naming the first joint whose quaternion or (cos, sin) pair in the
    configuration ``q`` (nq,) or (B, nq) is not unit, or None."""
    q = np.atleast_2d(np.asarray(q))
    for i in range(1, model.njoints):
        t, iq = int(model.joint_types[i]), int(model.idx_q[i])
        span = {SPHERICAL: (iq, 4), FREE_FLYER: (iq + 3, 4), REVOLUTE_UNBOUNDED: (iq, 2)}
        if t in span:
            s, k = span[t]
            norms = np.linalg.norm(q[:, s:s + k].real, axis=1)
            worst = int(np.argmax(np.abs(norms - 1.0)))
            if abs(norms[worst] - 1.0) > QUAT_TOL:
                what = "(cos, sin) pair" if t == REVOLUTE_UNBOUNDED else "quaternion"
                return ValueError(
                    f"{name}: the {what} of joint {model.names[i]!r} ({name}[{s}:{s + k}]"
                    f"{'' if q.shape[0] == 1 else f' of batch item {worst}'}) has norm "
                    f"{norms[worst]:.9g}, expected 1 (tolerance {QUAT_TOL}); normalise it")
    return None


def on_device(*xs):
    """True when an argument lives on a CUDA device (``__cuda_array_interface__``, or a
    Numba device array, the simulator's included). Asked only after the NumPy fast
    paths, so it costs them nothing."""
    for x in xs:
        if type(x) is not ND and x is not None and (
                hasattr(x, "__cuda_array_interface__") or hasattr(x, "__cuda_ndarray__")):
            return True
    return False


def gpu_call(name, *args, **kwargs):
    """rbdiff.gpu.<name>(*args, **kwargs); numba.cuda is imported on first use only."""
    from . import gpu   # the GPU backend, imported on first use
    return getattr(gpu, name)(*args, **kwargs)


def singular_error(model, q):
    """ValueError for forward dynamics at the configuration q (nq,) or (B, nq) where M(q)
    is singular: names the batch item and the joint whose dof has the smallest pivot of
    M(q) (a joint whose subtree carries no mass or inertia along its motion there)."""
    qs = np.atleast_2d(np.asarray(q).real.astype(np.float64))
    ws = single_call_scratch(model.njoints, model.nv, np.dtype(np.float64), False)[0]
    M = np.empty((model.nv, model.nv))
    for b, qb in enumerate(qs):
        crba_one(model.mi, model.mf, np.ascontiguousarray(qb), ws, M)
        w, V = np.linalg.eigh(M)
        scale = max(float(np.max(np.abs(np.diag(M)))), np.finfo(float).tiny)
        if w[0] <= model.nv * np.finfo(float).eps * scale:     # singular to working precision
            k = int(np.argmax(np.abs(V[:, 0])))             # the dof the null vector moves most
            joint = model.names[int(model.joint_of_dof[k])]
            where = "" if qs.shape[0] == 1 else f" of batch item {b}"
            return ValueError(
                f"forward dynamics undefined: M(q){where} is singular (smallest eigenvalue "
                f"{w[0]:.3g}, largest diagonal {scale:.3g}); joint {joint!r} (dof {k}) carries"
                " no mass or inertia along its motion at this q")
    return ValueError("forward dynamics undefined: an articulated inertia is not positive "
                      "definite (M(q) is nearly singular)")
