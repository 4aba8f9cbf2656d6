"""Spatial-algebra helpers that the dynamics tests exercise only through whole
algorithms: checked here on their own against NumPy."""

import numpy as np
import pytest

from rbdiff.kernels.spatial import sym_inverse


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 6])
def test_sym_inverse_matches_numpy(n):
    rng = np.random.default_rng(n)
    for _ in range(5):
        A = rng.normal(size=(n, n))
        D = A @ A.T + 0.1 * np.eye(n)          # SPD, condition up to ~1e3
        out = np.full(n * n, np.nan)
        sym_inverse(D.ravel().copy(), n, out)
        ref = np.linalg.inv(D)
        assert np.max(np.abs(out.reshape(n, n) - ref)) <= 1e-11 * np.max(np.abs(ref))


def test_sym_inverse_complex_step_gives_the_derivative():
    """d(D^-1) = -D^-1 dD D^-1, by complex step through the same helper."""
    rng = np.random.default_rng(7)
    A = rng.normal(size=(6, 6))
    D = A @ A.T + np.eye(6)
    B = rng.normal(size=(6, 6))
    dD = B + B.T
    h = 1e-30
    out = np.empty(36, complex)
    sym_inverse((D + 1j * h * dD).ravel(), 6, out)
    Dinv = np.linalg.inv(D)
    np.testing.assert_allclose(out.imag.reshape(6, 6) / h, -Dinv @ dD @ Dinv, rtol=1e-10,
                               atol=1e-12)
