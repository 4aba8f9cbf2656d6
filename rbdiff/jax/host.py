"""The compiled kernels as JAX operations: one table of kernels, one call.

Each kernel is a function of per-item vectors (q, v, u), evaluated by rbdiff's NumPy API
on a leading batch axis (one compiled batched entry, all cores). :func:`call` hands it to
XLA through ``rbdiff.jax.ffi`` (an XLA FFI custom call, a Numba ``cfunc``) where that is
available, and through ``jax.pure_callback`` otherwise; both with the vmap rule
"broadcast_all", so any nesting of vmap becomes a single batched kernel call.

Kernels compute in float64 and the results are cast to the inputs' dtype (float32 when
``jax_enable_x64`` is off).
"""

import numpy as np

import jax

import rbdiff as rbd


def _rnea_d(model, q, v, a):
    d = rbd.rnea_derivatives(model, q, v, a)
    return (rbd.rnea(model, q, v, a),) + tuple(d)


def _aba_d(model, q, v, tau):
    d = rbd.aba_derivatives(model, q, v, tau)
    return (rbd.aba(model, q, v, tau),) + tuple(d)


def _crba_d(model, q):
    z = np.zeros(q.shape[:-1] + (model.nv,))
    return rbd.crba(model, q), rbd.rnea_second_order_derivatives(model, q, z, z).dM_dq


def _frame_placement_d(model, q, frame):
    return (rbd.frame_placement(model, q, frame),
            rbd.frame_jacobian(model, q, frame, reference="local"))


# name: (function of (model, *per-item arrays, *static), output shapes after the batch axes)
_V, _VV, _VVV, _T = "v", "vv", "vvv", "t"
KERNELS = {
    "rnea": (rbd.rnea, (_V,)),
    "aba": (rbd.aba, (_V,)),
    "crba": (rbd.crba, (_VV,)),
    "minverse": (rbd.minverse, (_VV,)),
    "nonlinear_effects": (rbd.nonlinear_effects, (_V,)),
    "gravity": (rbd.gravity, (_V,)),
    "rnea_derivatives": (_rnea_d, (_V, _VV, _VV, _VV)),      # tau, dtau_dq, dtau_dv, M
    "aba_derivatives": (_aba_d, (_V, _VV, _VV, _VV)),        # qdd, dqdd_dq, dqdd_dv, Minv
    "rnea_second_order_derivatives": (
        lambda m, q, v, a: tuple(rbd.rnea_second_order_derivatives(m, q, v, a)), (_VVV,) * 4),
    "aba_second_order_derivatives": (
        lambda m, q, v, t: tuple(rbd.aba_second_order_derivatives(m, q, v, t)), (_VVV,) * 4),
    "crba_derivatives": (_crba_d, (_VV, _VVV)),               # M, dM_dq
    "frame_placement": (rbd.frame_placement, ((4, 4),)),
    "frame_placement_derivatives": (_frame_placement_d, ((4, 4), _T)),   # T, local J
}


def out_shapes(model, name):
    """The per-item output shapes of kernel ``name``."""
    nv = model.nv
    sizes = {_V: (nv,), _VV: (nv, nv), _VVV: (nv, nv, nv), _T: (6, nv)}
    return [sizes[s] if isinstance(s, str) else s for s in KERNELS[name][1]]


def host(model, name, static, *arrays):
    """Run kernel ``name`` on NumPy arrays with any leading batch axes (all the same, as
    vmap's "broadcast_all" gives them): flattened to one batch axis, one batched call."""
    fn, _ = KERNELS[name]
    lead = arrays[0].shape[:-1]
    dtype = arrays[0].dtype
    shapes = out_shapes(model, name)
    n = int(np.prod(lead))
    if n == 0:
        return tuple(np.zeros(lead + s, dtype) for s in shapes)
    flat = [np.ascontiguousarray(x, np.float64).reshape((n, x.shape[-1]) if lead else
                                                        x.shape) for x in arrays]
    out = fn(model, *flat, *static)
    out = out if isinstance(out, tuple) else (out,)
    return tuple(np.asarray(y, dtype).reshape(lead + s) for y, s in zip(out, shapes))


def call(model, name, *arrays, static=()):
    """Kernel ``name`` of the per-item arrays (each (..., n), the same leading axes) as a
    JAX operation; a tuple of outputs (..., *shape)."""
    lead, dtype = arrays[0].shape[:-1], arrays[0].dtype
    results = tuple(jax.ShapeDtypeStruct(lead + s, dtype) for s in out_shapes(model, name))
    from . import calls    # the FFI route (ffi.py), imported on first use: it compiles
    if calls.available(name):
        return calls.call(model, name, results, *arrays, static=static)
    return tuple(jax.pure_callback(_callback(model, name, static), results, *arrays,
                                   vmap_method="broadcast_all"))


_CALLBACKS = {}


def _callback(model, name, static):
    """One callback object per (model, kernel, static): JAX caches compiled computations by
    the callback's identity, so a new closure per call would recompile every call."""
    key = (id(model), name, static)
    hit = _CALLBACKS.get(key)
    if hit is None or hit[0] is not model:
        hit = _CALLBACKS[key] = (model, lambda *xs: host(model, name, static, *xs))
    return hit[1]
