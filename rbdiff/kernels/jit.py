"""Compile policy, in one place.

``kernel``  marks algorithm math (a pass, a joint step): compiled by Numba for whatever
            target calls it, typed by its arguments, so one source serves float64,
            float32 and complex128 (complex step).
``helper``  marks the small fixed-size spatial-algebra functions; they are inlined at
            Numba-IR level into their callers, because an out-of-line call passes every
            array view as ~7 scalars plus reference counting, which costs more than the
            few flops inside.
``entry``   compiles a CPU entry point: ``cache=True`` (compilation is the slow part of a
            cold start), ``error_model="numpy"`` (no ZeroDivisionError checks in hot loops:
            joint inertias are validated when the model is built), ``boundscheck=False``,
            ``nogil=True`` so Python threads can call in parallel.
``fast_entry`` an entry point compiled without Numba's runtime, for the single-call
            fast paths: its array arguments are then unboxed without a meminfo each
            (measured ~45 ns an array less), so it cannot allocate: the caller passes
            the scratch, which the model keeps. It holds the GIL (releasing and taking
            it back cost ~55 ns a call), so no two threads run on that scratch at once.
``pentry``  the same with ``parallel=True`` for batch entry points (``prange``).
``native``  binds a compiled entry for a fast path, without Numba's type dispatch; its
            arguments typed ``fastargs.REF`` are checked in the entry, not in Python.
"""

import numba

from .fastargs import REF

_MATH = dict(error_model="numpy", boundscheck=False)
_NO_NRT = dict(_nrt=False)   # kernels never allocate; views then cost no reference counting
_OPTS = dict(cache=True, nogil=True, **_MATH)


def kernel(fn):
    return numba.njit(**_MATH, **_NO_NRT)(fn)


def helper(fn):
    return numba.njit(inline="always", **_MATH, **_NO_NRT)(fn)


def entry(fn):
    return numba.njit(**_OPTS)(fn)


def fast_entry(fn):
    return numba.njit(cache=True, nogil=False, **_MATH, **_NO_NRT)(fn)


def pentry(fn):
    return numba.njit(parallel=True, **_OPTS)(fn)


def native(dispatcher, name, namespace, inputs=(2, 3, 4), refs=()):
    """A stand-in for ``namespace[name]`` that, on its first call, compiles ``dispatcher``
    for that call's argument types and rebinds ``namespace[name]`` to the compiled
    function itself: later calls skip Numba's per-call type dispatch (~0.4 us).

    The compiled function trusts its caller: it does not check dtypes, ndim or layout,
    so only fast paths that have checked dtype and ndim may call it. The user's arrays
    (positions ``inputs``) are compiled for any strides (layout 'A'), so views stay
    correct; the model's arrays and the outputs the fast path allocates stay C-contiguous
    (strided 2-D outputs would slow the inner loops). Positions ``refs`` are compiled as
    ``fastargs.REF`` (any object): the entry checks those itself (fastargs.float64_vector),
    so the fast path need not."""
    def first_call(*args):
        sig = []
        for k, x in enumerate(args):
            if k in refs:
                sig.append(REF)
                continue
            t = numba.typeof(x)
            if k in inputs and isinstance(t, numba.types.Array):
                t = t.copy(layout="A", readonly=False)
            sig.append(t)
        sig = tuple(sig)
        dispatcher.compile(sig)
        fn = dispatcher.overloads[sig].entry_point
        namespace[name] = fn
        return fn(*args)
    return first_call
