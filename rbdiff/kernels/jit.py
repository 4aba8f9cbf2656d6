"""Compile policy, in one place.

``kernel``  marks algorithm math: a plain function registered with Numba as jitable for
            every target (``register_jitable``), so the CPU entry points and the GPU launch
            code compile the very same source. It is typed by its arguments, so one source
            serves float64, float32 and complex128 (complex step).
``entry``   compiles a CPU entry point: ``cache=True`` (compilation is the slow part of a
            cold start), ``error_model="numpy"`` (no ZeroDivisionError checks in hot loops:
            divisions by a joint inertia are guarded by model validation instead),
            ``boundscheck=False``.
``pentry``  the same with ``parallel=True`` for batch entry points (``prange``).
"""

import numba
from numba.extending import register_jitable

_OPTS = dict(cache=True, error_model="numpy", boundscheck=False, nogil=True)


def kernel(fn):
    return register_jitable(fn)


def entry(fn):
    return numba.njit(**_OPTS)(fn)


def pentry(fn):
    return numba.njit(parallel=True, **_OPTS)(fn)
