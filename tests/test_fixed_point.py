"""The fixed-point emulation of the dynamics gradient (rbdiff.bench.fixed_point)."""

import numpy as np
import pytest

import rbdiff as rbd
from rbdiff.bench.fixed_point import (Emulator, Fixed, aba_derivatives_fixed,
                                      fixed_type, reset_saturations)


def test_fixed_rounds_every_result_to_the_grid():
    Q = fixed_type(8, 4)                    # step 1/16, range [-128, 128 - 1/16]
    a, b = Q.of(1.03), Q.of(0.5)
    assert float(a) == 1.0                  # 1.03 * 16 = 16.48 -> 16
    assert float(Q.of(0.03125)) == 0.0      # half a step: ties to even
    assert float(Q.of(0.09375)) == 0.125    # 1.5 steps: ties to even
    assert float(a * Q.of(0.0625)) == 0.0625
    assert float(Q.of(0.25) * Q.of(0.125)) == 0.0625   # 1/32 rounds (half up) to 1/16
    assert float(Q.of(1.0) / Q.of(3.0)) == 0.3125      # 5.33 steps -> 5
    assert float(Q.of(-1.0) / Q.of(3.0)) == -0.3125
    assert float(a + 0.03) == 1.0 and float(a + 0.04) == 1.0625   # floats rounded first
    assert float(0.5 - a) == -0.5 and float(2 * b) == 1.0 and float(1 / b) == 2.0
    assert float(-a) == -1.0 and float(abs(Q.of(-2.5))) == 2.5
    assert a > b and b < 0.6 and a == 1.0 and a != b
    assert isinstance(a * 3.7, Q) and isinstance(3.7 - a, Q)


def test_fixed_saturates_and_counts():
    Q = fixed_type(8, 4)
    reset_saturations()
    big = Q.of(100.0)
    assert float(big + big) == 128 - 1 / 16
    assert float(-big - big) == -128.0
    assert float(big * big) == 128 - 1 / 16
    assert float(Q.of(1e9)) == 128 - 1 / 16
    assert float(Q.of(1.0) / Q.of(0.0)) == 128 - 1 / 16
    assert reset_saturations() == 5
    assert Fixed.saturations == 0


@pytest.fixture(scope="module")
def emulated():
    """float64 derivatives and Q(i.f) ones at one iiwa14 state, from one worker."""
    m = rbd.load_robot("iiwa14")
    rng = np.random.default_rng(0)
    q, v, tau = rng.uniform(-1, 1, 7), rng.uniform(-1, 1, 7), rng.uniform(-5, 5, 7)
    ref = rbd.aba_derivatives(m, q, v, tau)
    with Emulator(1) as em:
        out = {fmt: aba_derivatives_fixed(m, q, v, tau, *fmt, emulator=em)
               for fmt in [(32, 48), (16, 16), (12, 5)]}
    return ref, out


def _rel(got, ref):
    return max(np.abs(g - r).max() / np.abs(r).max() for g, r in zip(got, ref))


def test_wide_format_matches_float64(emulated):
    # Q32.48, not Q32.32: M^-1 of the iiwa14 reaches ~1e3 from inertias ~1e-3 (small
    # wrist links), so Q32.32's 2e-10 steps become ~3e-7 relative error
    ref, out = emulated
    assert _rel(out[32, 48], ref) < 1e-8


def test_narrow_formats_err_more(emulated):
    ref, out = emulated
    e16, e12 = _rel(out[16, 16], ref), _rel(out[12, 5], ref)
    assert 0 < e16 < 0.1
    assert e12 > 10 * e16


def test_quantize_rounds_and_saturates():
    from rbdiff.bench.fixed_point import quantize
    r, n = quantize([0.02, 0.05, -3.0, 300.0], 8, 4)
    assert r.tolist() == [0.0, 0.0625, -3.0, 128 - 1 / 16] and n == 1
