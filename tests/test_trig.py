"""kernels/trig.py: sincos against libm (within 1 ulp), its libm fallback, complex step."""

import numpy as np
import pytest
from numba import njit

from rbdiff.kernels.trig import HUGE, sincos


@njit
def _many(x, c, s):
    for i in range(x.shape[0]):
        c[i], s[i] = sincos(x[i])


def _run(x):
    c, s = np.empty_like(x), np.empty_like(x)
    _many(x, c, s)
    return c, s


def _ulps(got, want):
    """Worst error in ulps of libm's value, errors under 1e-26 (next to a zero) as 0."""
    err = np.abs(got - want)
    return np.max(np.where(err <= 1e-26, 0.0, err / np.spacing(np.abs(want))))


@pytest.mark.parametrize("scale", [1e-9, 0.5, 3.2, 40.0, HUGE])
def test_within_one_ulp_of_libm(scale):
    x = np.random.default_rng(1).uniform(-scale, scale, 50_000)
    x = np.concatenate([x, np.arange(-8, 9) * np.pi / 4, [0.0, -0.0]])
    c, s = _run(x)
    assert _ulps(c, np.cos(x)) <= 1.0
    assert _ulps(s, np.sin(x)) <= 1.0
    assert np.all(s[x == 0] == x[x == 0])


def test_outside_the_reduction_range_is_libm():
    x = np.array([HUGE, -3 * HUGE, 1e300, np.inf, -np.inf, np.nan])
    c, s = _run(x)
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(c, np.cos(x))
        np.testing.assert_array_equal(s, np.sin(x))


def test_complex_step_gives_the_derivatives():
    x = np.random.default_rng(2).uniform(-20, 20, 2000)
    c, s = _run(x + 1e-30j)
    np.testing.assert_allclose(c.imag / 1e-30, -np.sin(x), rtol=0, atol=1e-15)
    np.testing.assert_allclose(s.imag / 1e-30, np.cos(x), rtol=0, atol=1e-15)
    np.testing.assert_array_equal(c.real, _run(x)[0])


def test_python_source_agrees():
    """The GPU simulator runs the Python source: it must give the compiled results."""
    x = np.random.default_rng(3).uniform(-7, 7, 200)
    c, s = _run(x)
    py = np.array([sincos.py_func(v) for v in x])
    np.testing.assert_array_equal(py[:, 0], c)
    np.testing.assert_array_equal(py[:, 1], s)
