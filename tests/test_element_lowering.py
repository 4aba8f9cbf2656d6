"""rbdiff.kernels.element_lowering: kernels' array elements and row views, built from the
array value, agree with NumPy's (Python's) indexing on the edge cases: negative indices
(constant and at run time), unsigned indices, slices past either end or empty, rows of a
3-D array, strided ('A') arrays, complex and float32 elements, writes with casts.

Oracle: the same kernel run uncompiled (``py_func``) on NumPy arrays. The counters prove
the accesses went through this module, not Numba's general indexing."""

import numba
import numpy as np
import pytest

from rbdiff.kernels import element_lowering
from rbdiff.kernels.jit import kernel

pytestmark = pytest.mark.skipif(not element_lowering.AVAILABLE, reason="another Numba")


def _reads(x, A, T, i, j, u, out):
    out[0] = x[-1]
    out[1] = x[i]                     # i < 0 at run time
    out[2] = A[i, -2]
    out[3] = A[1, j]
    v = A[j, 1:4]
    out[4] = v[0] + 10.0 * v.shape[0]
    w = A[j, i:]                      # a negative start wraps
    out[5] = w.shape[0] + w[0]
    c = A[0, 2:100]                   # a stop past the end clamps
    out[6] = c.shape[0] + c[-1]
    e = A[0, 5:2]                     # empty
    out[7] = e.shape[0]
    R = T[1]                          # a row of a 3-D array: 2-D
    out[8] = R[2, 3] + 100.0 * R.shape[0] + 1000.0 * R.shape[1]
    out[9] = x[u]                     # unsigned
    h = A[j, :]
    out[10] = h[h.shape[0] - 1] + h.size
    t = x[-100:2]                     # a start before the beginning clamps to 0
    out[11] = t.shape[0] + t[1]


def _writes(A, f, i, z):
    A[0, 1] = 1.5
    A[-1, -1] = 2.5                   # constant, negative
    A[i, 0] = 3.5                     # run time, negative
    f[i] = z                          # float64 into float32
    f[0] = A[1, 2] * 2.0
    row = A[2, 1:]
    row[0] = -7.0                     # writes through a view


def _complex(c, out):
    out[0] = c[1]
    c[0] = c[-1] * 2.0


reads, writes, complex_ = kernel(_reads), kernel(_writes), kernel(_complex)


@numba.njit
def _drive_reads(x, A, T, i, j, u, out):
    reads(x, A, T, i, j, u, out)


@numba.njit
def _drive_writes(A, f, i, z):
    writes(A, f, i, z)


@numba.njit
def _drive_complex(c, out):
    complex_(c, out)


@pytest.fixture
def counted(monkeypatch):
    """Count the accesses ElementLower builds (its _get and _set)."""
    n = {"get": 0, "set": 0}
    for name in ("get", "set"):
        orig = getattr(element_lowering.ElementLower, "_" + name)

        def wrapped(self, *a, _orig=orig, _name=name):
            n[_name] += 1
            return _orig(self, *a)
        monkeypatch.setattr(element_lowering.ElementLower, "_" + name, wrapped)
    return n


def _arrays(rng):
    x = rng.normal(size=9)
    A = rng.normal(size=(5, 6))
    T = rng.normal(size=(3, 4, 5))
    return x, A, T


@pytest.mark.parametrize("strided", [False, True])
def test_reads_match_numpy(counted, strided):
    rng = np.random.default_rng(1)
    x, A, T = _arrays(rng)
    if strided:                       # layout 'A' arrays (compiled as a second signature)
        x = np.repeat(x, 2)[::2]
        A = np.repeat(A, 2, axis=1)[:, ::2]
        assert not x.flags.c_contiguous and not A.flags.c_contiguous
    want = np.zeros(12)
    got = np.zeros(12)
    reads.py_func(x, A, T, -3, 2, np.uint64(4), want)
    _drive_reads(x, A, T, -3, 2, np.uint64(4), got)
    np.testing.assert_array_equal(got, want)
    assert counted["get"] == 18       # every read above


def test_writes_match_numpy(counted):
    rng = np.random.default_rng(2)
    A0 = rng.normal(size=(4, 5))
    f0 = rng.normal(size=6).astype(np.float32)
    A, f = A0.copy(), f0.copy()
    A_want, f_want = A0.copy(), f0.copy()
    writes.py_func(A_want, f_want, -2, 0.1)
    _drive_writes(A, f, -2, 0.1)
    np.testing.assert_array_equal(A, A_want)
    np.testing.assert_array_equal(f, f_want)
    assert f.dtype == np.float32
    assert counted == {"get": 2, "set": 6}


def test_complex_elements(counted):
    c = np.array([1 + 2j, 3 - 4j, 5 + 6j])
    want, got = np.zeros(1, complex), np.zeros(1, complex)
    c_want = c.copy()
    complex_.py_func(c_want, want)
    _drive_complex(c, got)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(c, c_want)
    assert counted == {"get": 2, "set": 2}
