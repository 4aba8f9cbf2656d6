"""Public dynamics functions: validate, pick the compiled entry point (single or batch),
and return caller-owned arrays.

Every function takes a single state (q of shape (nq,), ...) or a batch with a leading
axis (q of shape (B, nq), ...), computed on all cores. Inputs may be float64, float32
(computed in float32) or complex128 (complex step); mixed inputs are promoted.
Arrays on a CUDA device (``__cuda_array_interface__``: Numba, CuPy, PyTorch) are computed
there by rbdiff.gpu and the results stay there (Numba device arrays).
"""

import numpy as np

from . import cpu
from .model.layout import FREE_FLYER, REVOLUTE_UNBOUNDED, SPHERICAL
from .kernels.checks import QUAT_TOL
from .kernels.jit import native
from .kernels.workspace import single_call_scratch

_ND = np.ndarray
_F64 = np.dtype(np.float64)
_SUPPORTED = (np.dtype(np.float64), np.dtype(np.float32), np.dtype(np.complex128))
# The fast paths ask only for dtype float64 and ndim 1 (no type() checks: ~70 ns less,
# with np.empty bound below). Anything else leaves them: no .dtype (AttributeError), not a
# NumPy array (the compiled entry's unboxing raises TypeError), or input the entry
# refuses (ValueError); the general path then validates it and names the argument.
_FAST_MISS = (AttributeError, TypeError, ValueError)
# module globals: one dictionary lookup on the fast path instead of two
_empty = np.empty
# compiled entries without Numba's type dispatch, for the fast paths (float64, 1-D)
# (scratch: the model's single_call_scratch, model._ws and model._F)
_rnea_one = native(cpu.rnea_one, "_rnea_one", globals())
_aba_one = native(cpu.aba_one, "_aba_one", globals())
_crba_one = native(cpu.crba_one, "_crba_one", globals(), inputs=(2,))
_minverse_one = native(cpu.minverse_one, "_minverse_one", globals(), inputs=(2,))


def _array(x, n, name):
    """x as an array of a supported dtype whose last axis has length n (1-D or 2-D)."""
    if x is None:
        raise TypeError(f"{name}: expected an array of shape ({n},) or (B, {n}), got None")
    x = np.asarray(x)
    if x.dtype not in _SUPPORTED:
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


def _fext(model, fext, batch, dtype, wanted):
    if not wanted:
        return None
    if fext is None:
        return None if batch is None else np.zeros((batch, 0, 6), dtype)
    f = np.asarray(fext)
    want = (model.njoints, 6) if batch is None else (batch, model.njoints, 6)
    if f.shape != want:
        raise ValueError(f"fext: expected shape {want} (one local-frame spatial force "
                         f"[linear, angular] per joint), got {f.shape}")
    if f.dtype.kind not in "biufc":
        raise TypeError(f"fext: expected a numeric array, got dtype {f.dtype}")
    return np.ascontiguousarray(f, dtype=dtype)


def _prepare(model, fext, named, wants_fext=True):
    """Validated, dtype-promoted, C-contiguous arrays; batch size or None; model floats."""
    arrays = [_array(x, n, name) for name, x, n in named]
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
    if dtype not in _SUPPORTED:
        dtype = np.dtype(np.complex128) if dtype.kind == "c" else _F64
    arrays = [x.astype(dtype, copy=False) for x in arrays]
    batch = arrays[0].shape[0] if ndim == 2 else None
    f = _fext(model, fext, batch, dtype, wants_fext)
    mf = model.mf32 if dtype == np.float32 else model.mf
    return arrays, f, batch, mf


def _explain(model, named, fext):
    """The precise reason a compiled entry point refused its input."""
    for name, x in list(named) + [("fext", fext)]:
        if x is None:
            continue
        x = np.asarray(x)
        bad = np.argwhere(~np.isfinite(x))
        if len(bad):
            return ValueError(f"{name} contains NaN or Inf at index "
                              f"{tuple(int(k) for k in bad[0])}")
    q = np.atleast_2d(np.asarray(named[0][1]))
    for i in range(1, model.njoints + 1):
        t, iq = int(model.joint_types[i]), int(model.idx_q[i])
        span = {SPHERICAL: (iq, 4), FREE_FLYER: (iq + 3, 4), REVOLUTE_UNBOUNDED: (iq, 2)}
        if t in span:
            s, k = span[t]
            norms = np.linalg.norm(q[:, s:s + k].real, axis=1)
            worst = int(np.argmax(np.abs(norms - 1.0)))
            if abs(norms[worst] - 1.0) > QUAT_TOL:
                what = "(cos, sin) pair" if t == REVOLUTE_UNBOUNDED else "quaternion"
                return ValueError(
                    f"q: the {what} of joint {model.names[i]!r} (q[{s}:{s + k}]"
                    f"{'' if q.shape[0] == 1 else f' of batch item {worst}'}) has norm "
                    f"{norms[worst]:.9g}, expected 1 (tolerance {QUAT_TOL}); normalise it")
    return ValueError("invalid input")


def _on_device(*xs):
    """True when an argument lives on a CUDA device (``__cuda_array_interface__``, or a
    Numba device array, the simulator's included). Asked only after the NumPy fast
    paths, so it costs them nothing."""
    for x in xs:
        if type(x) is not _ND and x is not None and (
                hasattr(x, "__cuda_array_interface__") or hasattr(x, "__cuda_ndarray__")):
            return True
    return False


def _gpu(name, *args, **kwargs):
    """rbdiff.gpu.<name>(*args, **kwargs); numba.cuda is imported on first use only."""
    from . import gpu
    return getattr(gpu, name)(*args, **kwargs)


def _call(model, one, batch_fn, fext, named, out_shape, forces=False):
    """Validate and run the single or batch entry point into a new output array of shape
    (B,) + out_shape or out_shape; explain a refusal precisely. Functions of (q, v, a/tau)
    take fext (None allowed); functions of q alone do not. Single calls get scratch of the
    input dtype: a workspace, and M^-1's force scratch F when ``forces``."""
    takes_fext = len(named) > 1
    arrays, f, batch, mf = _prepare(model, fext, named, wants_fext=takes_fext)
    dt = arrays[0].dtype
    shape = out_shape if batch is None else (batch,) + out_shape
    out = np.empty(shape, dt)
    scratch = () if batch is not None else single_call_scratch(model.njoints, model.nv,
                                                                 dt, forces)
    args = (model.mi, mf, *arrays) + ((f,) if takes_fext else ()) + scratch + (out,)
    try:
        (one if batch is None else batch_fn)(*args)
    except ValueError:
        raise _explain(model, [(n, x) for (n, _, _), x in zip(named, arrays)], f) from None
    return out


def rnea(model, q, v, a, fext=None):
    """Inverse dynamics tau = M(q) a + C(q, v) v + g(q) - sum_i J_i^T fext_i (RNEA,
    Featherstone 2008 Table 5.1; Carpentier & Mansard 2018 Alg. 1).

    q (nq,), v (nv,), a (nv,); fext (njoints, 6) spatial forces [linear, angular] on each
    joint's body in the joint's local frame, or None. Returns tau (nv,). A leading batch
    axis on every argument gives (B, nv)."""
    try:    # fast path (see _FAST_MISS); the entry checks lengths and values
        if fext is None and q.dtype is v.dtype is a.dtype is _F64 and \
                q.ndim == v.ndim == a.ndim == 1:
            tau = _empty(model.nv)
            _rnea_one(model.mi, model.mf, q, v, a, None, model._ws, tau)
            return tau
    except _FAST_MISS:
        pass
    if _on_device(q, v, a, fext):
        return _gpu("rnea", model, q, v, a, fext)
    return _call(model, cpu.rnea_one, cpu.rnea_batch, fext,
                 [("q", q, model.nq), ("v", v, model.nv), ("a", a, model.nv)], model._sv)


def aba(model, q, v, tau, fext=None):
    """Forward dynamics qdd = M(q)^-1 (tau + sum_i J_i^T fext_i - C(q, v) v - g(q)) by the
    Articulated Body Algorithm (Featherstone 2008 Table 7.1), O(N).

    q (nq,), v (nv,), tau (nv,), fext (njoints, 6) local-frame forces or None.
    Returns qdd (nv,); a leading batch axis gives (B, nv)."""
    try:
        if fext is None and q.dtype is v.dtype is tau.dtype is _F64 and \
                q.ndim == v.ndim == tau.ndim == 1:
            qdd = _empty(model.nv)
            _aba_one(model.mi, model.mf, q, v, tau, None, model._ws, qdd)
            return qdd
    except _FAST_MISS:
        pass
    if _on_device(q, v, tau, fext):
        return _gpu("aba", model, q, v, tau, fext)
    return _call(model, cpu.aba_one, cpu.aba_batch, fext,
                 [("q", q, model.nq), ("v", v, model.nv), ("tau", tau, model.nv)], model._sv)


def crba(model, q):
    """Joint-space inertia matrix M(q) (nv, nv), full and symmetric, by the Composite
    Rigid Body Algorithm (Featherstone 2008 Table 6.2). Batch: q (B, nq) -> (B, nv, nv)."""
    try:
        if q.dtype is _F64 and q.ndim == 1:
            M = _empty(model._svv)
            _crba_one(model.mi, model.mf, q, model._ws, M)
            return M
    except _FAST_MISS:
        pass
    if _on_device(q):
        return _gpu("crba", model, q)
    return _call(model, cpu.crba_one, cpu.crba_batch, None, [("q", q, model.nq)], model._svv)


def minverse(model, q):
    """M(q)^-1 (nv, nv), full and symmetric, computed without forming M (Carpentier &
    Mansard 2018 sec. IV-C: ABA's backward pass on unit torques). Batch: (B, nv, nv)."""
    try:
        if q.dtype is _F64 and q.ndim == 1:
            Minv = _empty(model._svv)
            _minverse_one(model.mi, model.mf, q, model._ws, model._F, Minv)
            return Minv
    except _FAST_MISS:
        pass
    if _on_device(q):
        return _gpu("minverse", model, q)
    return _call(model, cpu.minverse_one, cpu.minverse_batch, None, [("q", q, model.nq)],
                 model._svv, forces=True)


def nonlinear_effects(model, q, v):
    """C(q, v) v + g(q) (nv,) = rnea(q, v, 0). Batch: (B, nv)."""
    if _on_device(q, v):
        return _gpu("nonlinear_effects", model, q, v)
    v = np.asarray(v)
    return rnea(model, q, v, np.zeros(v.shape, dtype=v.dtype if v.dtype.kind in "fc"
                                      else np.float64))


def gravity(model, q):
    """Generalised gravity g(q) (nv,) = rnea(q, 0, 0). Batch: (B, nv)."""
    if _on_device(q):
        return _gpu("gravity", model, q)
    q = np.asarray(q)
    shape = q.shape[:-1] + (model.nv,)
    dt = q.dtype if q.dtype.kind in "fc" else np.float64
    z = np.zeros(shape, dtype=dt)
    return rnea(model, q, z, z)
