"""Kernel calls through ``jax.pure_callback``: the contact kinematics functions (frame
velocity and acceleration, centre of mass, centroidal momentum, energies) and their
partials run rbdiff's NumPy API on the host, not an XLA FFI handler (ffi.py).

Why a callback: each FFI handler needs an entries.py slot per batch entry and a handler
per kernel (13 so far); the contact kinematics would add about ten of each, for
functions whose use in an optimisation loop is one call beside the dynamics. The
callback costs more per call (JAX's host-callback round trip, measured in bench and in
the report: tens of microseconds), nothing to compile, and the NumPy API's own checks
(a NaN input raises at run time, with the NumPy API's message, rather than NaN-filling).

- vmap: ``vmap_method="broadcast_all"``: the callback receives every input broadcast to
  the batch, batch axes leading, and flattens them into the NumPy API's one batch axis,
  so any nesting of vmap is one batched rbdiff call;
- dtype: float64 under x64; float32 inputs compute in float64 and are cast back (as the
  FFI handlers do).
- One callback object per (model, kernel, options, dtype): JAX's eager dispatch caches
  compiled calls by the callback's identity, so a fresh closure per call would recompile.
"""

import numpy as np

import jax


class HostCalls:
    """The pure_callback kernel calls of one model."""

    def __init__(self, model):
        self.model = model
        self._callbacks = {}

    def __call__(self, name, fn, shapes, *arrays, options=()):
        """fn(model, *arrays (float64, q on the manifold, one batch axis at most),
        *options) -> outputs of per-item shapes ``shapes``, as arrays (..., *shape) in the
        inputs' dtype (inputs already broadcast to one leading shape)."""
        lead, dtype = arrays[0].shape[:-1], np.dtype(arrays[0].dtype)
        results = tuple(jax.ShapeDtypeStruct(lead + tuple(s), dtype) for s in shapes)
        key = (name, options, dtype.str)
        cb = self._callbacks.get(key)
        if cb is None:
            cb = self._callbacks[key] = _callback(self.model, fn, shapes, dtype, options)
        return jax.pure_callback(cb, results, *arrays, vmap_method="broadcast_all")


def _callback(model, fn, shapes, dtype, options):
    shapes = tuple(tuple(s) for s in shapes)

    def run(*xs):
        lead = xs[0].shape[:-1]
        flat = [np.asarray(x, np.float64) for x in xs]
        if len(lead) > 1:                  # nested vmap: the NumPy API's one batch axis
            flat = [x.reshape((-1, x.shape[-1])) for x in flat]
        outs = fn(model, *flat, *options)
        return tuple(np.asarray(o, dtype).reshape(lead + s) for o, s in zip(outs, shapes))
    return run
