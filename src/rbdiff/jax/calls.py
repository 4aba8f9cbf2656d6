"""Registration of rbdiff.jax.ffi's handlers with XLA, and the call: ``jax.ffi.ffi_call``
under a ``custom_vmap`` rule that broadcasts the per-item inputs to the batch (never the
model's arrays) and calls the same target once, so any nesting of vmap is one handler
call. The handlers are cached on disk like rbdiff's entries: any edit to an rbdiff source
recompiles them (they link the batch entries).
"""

import ctypes

import numba
import numpy as np
from numba import types
from numba.core import sigutils
from numba.core.ccallback import CFunc
from numba.np.ufunc.parallel import _launch_threads

import jax
import jax.numpy as jnp

from ..kernels.jit import harden_cache
from . import entries
from . import plans
from .ffi import _KERNELS, CONTACT_KERNELS, N_MODEL, N_TABLES, PARALLEL, SERIAL, \
    pack_frame_options

_TARGETS = {}
_SIG = types.voidptr(types.voidptr)


def _compiled(fn):
    """cfunc(_SIG, cache=True)(fn) with its cache stamped as the entries' are
    (kernels/jit.harden_cache): an edit to any rbdiff source recompiles it (cheap: it
    calls the batch entries by address, entries.py), not only an edit to ffi.py."""
    c = CFunc(fn, sigutils.normalize_signature(_SIG), locals={}, options={})
    c.enable_caching()
    harden_cache(c)
    c.compile()
    return c


# the handler whose entries a kernel's derivative rule calls (rules.py): jit(f) is mostly
# followed by jit(grad(f)), so on a cold cache its entries compile in the background too
_DERIVATIVE = {"rnea": "rnea_derivatives", "aba": "aba_derivatives",
               "nonlinear_effects": "rnea_derivatives", "gravity": "rnea_derivatives",
               "crba": "crba_derivatives", "frame_placement": "frame_placement_derivatives",
               "frame_velocity": "frame_velocity_partials",
               "frame_acceleration": "frame_acceleration_partials",
               "center_of_mass": "center_of_mass_partials",
               "centroidal_momentum": "centroidal_momentum_partials",
               "kinetic_energy": "kinetic_energy_partials", "potential_energy": "gravity",
               "contact_dynamics": "contact_dynamics_derivatives",
               "impulse_dynamics": "impulse_dynamics_derivatives"}


def _target(name):
    """Compile (first use) and register the handler of kernel ``name``; its target name."""
    t = _TARGETS.get(name)
    if t is None:
        # the handlers call parallel entries: the threading layer must be up before one
        # is loaded from the cache (its scheduler symbols are bound at load; else a crash)
        _launch_threads()
        # on a cold cache this kernel's serial entries, and its derivative's (a jit(grad)
        # soon waits for them), compile in background children (one each,
        # cpu/background.py) while this process compiles the handler (it calls them by
        # address: it needs none of them to compile); link() then waits for its own and
        # loads them. Started together rather than the derivative's after the handler:
        # jit then grad 12.8 / 11.8 -> 11.0 / 10.4 s (iiwa14, 2 cores, empty cache)
        entries.prefetch(SERIAL[name], urgent=True)
        d = _DERIVATIVE.get(name)
        if d is not None:
            entries.prefetch(SERIAL[d], urgent=True)
        c = _compiled(_KERNELS[name])
        entries.link(SERIAL[name])
        t = f"rbdiff_{name}"
        fn = ctypes.cast(c.address, ctypes.c_void_p)
        jax.ffi.register_ffi_target(t, jax.ffi.pycapsule(fn), platform="cpu")
        _TARGETS[name] = t, c               # keep the compiled cfunc alive
    return _TARGETS[name][0]


# kernel name -> per-item output shapes ("v": (nv,), "vv": (nv, nv), "vvv": (nv, nv, nv),
# "t": (6, nv), "c": (3, nv), "f": (nc,), "fv": (nc, nv) with nc a contact set's rows);
# the handlers in ffi.py write them in this order
_V, _VV, _VVV, _T, _C, _F, _FV = "v", "vv", "vvv", "t", "c", "f", "fv"
_OUTPUTS = {
    "rnea": (_V,), "aba": (_V,), "crba": (_VV,), "minverse": (_VV,),
    "nonlinear_effects": (_V,), "gravity": (_V,),
    "rnea_derivatives": (_V, _VV, _VV, _VV),      # tau, dtau_dq, dtau_dv, M
    "aba_derivatives": (_V, _VV, _VV, _VV),       # qdd, dqdd_dq, dqdd_dv, Minv
    "rnea_second_order_derivatives": (_VVV,) * 4,
    "aba_second_order_derivatives": (_VVV,) * 4,
    "crba_derivatives": (_VV, _VVV),              # M, dM_dq
    "frame_placement": ((4, 4),),
    "frame_placement_derivatives": ((4, 4), _T),  # T, local J
    # contact kinematics: value, then its true first partials (ffi.py)
    "frame_velocity": ((6,),), "frame_velocity_partials": ((6,), _T, _T),
    "frame_acceleration": ((6,),), "frame_acceleration_partials": ((6,), _T, _T, _T),
    "center_of_mass": ((3,),), "center_of_mass_partials": ((3,), _C),
    "centroidal_momentum": ((6,),), "centroidal_momentum_partials": ((6,), _T, _T),
    "kinetic_energy": ((),), "kinetic_energy_partials": ((), _V, _V),
    "potential_energy": ((),),
    # contact and impulse dynamics: the value, then the NumPy API's partials
    "contact_dynamics": (_V, _F),
    "contact_dynamics_derivatives": (_V, _F) + (_VV,) * 3 + (_FV,) * 3,
    "impulse_dynamics": (_V, _F),
    "impulse_dynamics_derivatives": (_V, _F) + (_VV,) * 2 + (_FV,) * 2,
}


def out_shapes(model, name, nc=0):
    """The per-item output shapes of kernel ``name`` (``nc``: a contact set's rows)."""
    nv = model.nv
    sizes = {_V: (nv,), _VV: (nv, nv), _VVV: (nv, nv, nv), _T: (6, nv), _C: (3, nv),
             _F: (nc,), _FV: (nc, nv)}
    return [sizes[s] if isinstance(s, str) else s for s in _OUTPUTS[name]]


def _chunks(batch):
    """The most chunks a batch of ``batch`` items may run on: Numba's thread count when
    the threading layer is safe to enter from several threads at once (omp, tbb: XLA may
    run two handlers concurrently; workqueue would abort), else 0 (always serial). Whether
    a call uses them is decided per call at run time (plans.py: rbdiff.cpu.policy's
    rule), not here."""
    if batch < 2 or numba.get_num_threads() < 2:   # one chunk: the serial entry's work
        return 0
    try:
        layer = numba.threading_layer()
    except ValueError:            # not initialised yet: no parallel entry has run
        return 0
    return min(numba.get_num_threads(), batch) if layer in ("omp", "tbb") else 0


def _model_operands(model):
    """The model's int64 / float64 arrays as 32-bit words (their bytes unchanged): JAX
    without x64 would truncate them to int32 / float32."""
    return tuple(jnp.asarray(np.ascontiguousarray(x).view(t)) for x, t in
                 ((model.mi, np.int32), (model.mf, np.uint32),
                  (model.frame_parents, np.int32), (model.frame_mf, np.uint32)))


def contact_operands(cint, cflt, damping=0.0, restitution=0.0):
    """A contact set's packed tables (rbd.contacts.pack) as 32-bit words (their bytes
    unchanged, as _model_operands), NumPy arrays: the contact kernels' ``tables``. cflt
    gets a last row [damping, restitution, 0...]: a separate [0, 0] operand would be a
    splat constant, which XLA makes a broadcast run on every call."""
    extra = np.zeros((1, cflt.shape[1]))
    extra[0, :2] = damping, restitution
    return (np.ascontiguousarray(cint).view(np.int32),
            np.ascontiguousarray(np.vstack([cflt, extra])).view(np.uint32))


def call(model, name, *arrays, static=(), tables=(), nc=0):
    """Kernel ``name`` of the per-item arrays (each (..., n), the same leading axes) as one
    ffi_call, for any nesting of vmap (custom_vmap rule); a tuple of outputs (..., *shape)
    in the arrays' dtype (the handler computes in float64). A contact kernel takes its
    set's ``tables`` (contact_operands: operands never batched) and rows ``nc``."""
    if (name in CONTACT_KERNELS) != bool(tables):
        raise ValueError(f"rbdiff.jax: kernel {name} takes {N_TABLES} contact tables")
    lead, dtype = arrays[0].shape[:-1], arrays[0].dtype
    results = tuple(jax.ShapeDtypeStruct(lead + s, dtype)
                    for s in out_shapes(model, name, nc))
    frame = pack_frame_options(*static) if static else 0
    # a plan row per contact row count too: the sets' costs differ
    plan = plans.slot(model, f"{name}[{nc}]" if tables else name)
    return _batched(name, results, frame, plan, len(tables))(
        *_model_operands(model), *map(jnp.asarray, tables), *arrays)


_BATCHED = {}


def _batched(name, results, frame, plan, ntables=0):
    """The custom_vmap kernel call for these results (one object per key: JAX's eager
    dispatch caches compiled calls by the function's identity); ``ntables`` unbatched
    operands (a contact set's) follow the model's."""
    key = (name, tuple((r.shape, np.dtype(r.dtype).str) for r in results), frame, plan,
           ntables)
    hit = _BATCHED.get(key)
    if hit is None:
        hit = _BATCHED[key] = _make_batched(name, results, frame, plan, ntables)
    return hit


def _make_batched(name, results, frame, plan, ntables):
    target = _target(name)
    m = N_MODEL - 1 + ntables   # operands never batched: the model's, the contact tables

    @jax.custom_batching.custom_vmap
    def kernel(*ops):
        B = int(np.prod(ops[m].shape[:-1]))
        nch = _chunks(B)
        if nch:                   # a possible parallel run: its entries if ready, else
            entries.link_or_prefetch(PARALLEL[name])    # compiling in the background
        # the mode is read when traced (policy.forced pins a computation's choice); the
        # plan row decides each call's at run time
        opts = jnp.asarray(np.array([frame, nch, plan, plans.mode()], np.int32))
        return tuple(jax.ffi.ffi_call(target, results)(*ops[:N_MODEL - 1], opts,
                                                       *ops[N_MODEL - 1:]))

    @kernel.def_vmap
    def rule(axis_size, in_batched, *ops):
        # (the options are made in kernel)
        if any(in_batched[:m]):
            raise NotImplementedError("rbdiff.jax: vmap over the model's arrays or a "
                                      "contact set's tables")
        xs = [x if b else jnp.broadcast_to(x, (axis_size,) + x.shape)
              for x, b in zip(ops[m:], in_batched[m:])]
        inner = _batched(name, tuple(jax.ShapeDtypeStruct((axis_size,) + r.shape, r.dtype)
                                       for r in results), frame, plan, ntables)
        return inner(*ops[:m], *xs), (True,) * len(results)

    return kernel


def compile_handlers():
    """Compile (or load from the cache) and register every handler: for a warm-up step
    such as ``python -m rbdiff compile`` (a cold handler: about a second once its serial
    entries are compiled)."""
    for name in _KERNELS:
        _target(name)
