"""Input checks compiled into the entry points: cheap loops that raise before any math
runs. Their messages are generic; api.py catches them and names the joint or entry."""

import numpy as np

from ..model.layout import (FREE_FLYER, MI_IQ, MI_RUN, MI_TYPE, PRISMATIC,
                            REVOLUTE_UNBOUNDED, SPHERICAL)
from .jit import helper

QUAT_TOL = 1e-6   # |norm - 1| allowed in quaternions and (cos, sin) pairs
FLOAT_MAX = float(np.finfo(np.float64).max)


@helper
def all_finite(x):
    for k in range(x.size):
        if not np.isfinite(x.flat[k]):
            return False
    return True


@helper
def vector_finite(x):
    """all_finite for a 1-D array, without branches (|x| <= FLOAT_MAX is false for NaN and
    +-Inf): 2-4x faster than x.flat on arrays of any strides."""
    ok = True
    for k in range(np.uint64(x.shape[0])):      # unsigned: no negative-index wraparound
        ok &= (abs(x[k].real) <= FLOAT_MAX) & (abs(x[k].imag) <= FLOAT_MAX)
    return ok


@helper
def _unit(x, first, count):
    s = 0.0
    for k in range(first, first + count):
        s += x[k].real * x[k].real
    return abs(np.sqrt(s) - 1.0) <= QUAT_TOL


@helper
def configuration_ok(mi, q):
    """True when q (1-D) is finite and every quaternion / (cos, sin) pair is unit (runs
    of revolute / prismatic joints are skipped whole: layout.MI_RUN)."""
    if not vector_finite(q):
        return False
    n = mi[0, 0]
    i = 1
    while i <= n:
        t = mi[i, MI_TYPE]
        if t <= PRISMATIC:
            i += max(mi[i, MI_RUN], 1)
            continue
        iq = mi[i, MI_IQ]
        if t == SPHERICAL and not _unit(q, iq, 4):
            return False
        if t == FREE_FLYER and not _unit(q, iq + 3, 4):
            return False
        if t == REVOLUTE_UNBOUNDED and not _unit(q, iq, 2):
            return False
        i += 1
    return True
