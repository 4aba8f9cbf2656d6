"""Accuracy metrics (singh-2023 eqs. 40-43) on hand-checkable inputs."""

import numpy as np
import pytest

from rbdiff import metrics


def test_hand_checked_values():
    ref = np.array([1.0, -2.0, 4.0, 0.0])
    x = np.array([1.5, -2.0, 3.0, 0.0])
    # errors 0.5, 0, 1, 0; relative errors 0.5, 0, 0.25, 0 (the zero reference matched)
    assert metrics.mae(x, ref) == 1.0
    assert metrics.rmsae(x, ref) == pytest.approx(np.sqrt((0.25 + 1.0) / 4))
    assert metrics.mre(x, ref) == 0.5
    assert metrics.rmsre(x, ref) == pytest.approx(np.sqrt((0.25 + 0.0625) / 4))


def test_tensor_shapes_and_exact_match():
    rng = np.random.default_rng(0)
    ref = rng.normal(size=(5, 5, 5))
    for fn in (metrics.mae, metrics.rmsae, metrics.mre, metrics.rmsre):
        assert fn(ref.copy(), ref) == 0.0
    x = ref.copy()
    x[1, 2, 3] += 1e-3 * ref[1, 2, 3]
    assert metrics.mre(x, ref) == pytest.approx(1e-3)
    assert metrics.rmsre(x, ref) == pytest.approx(1e-3 / np.sqrt(125))
    assert metrics.mae(x, ref) == pytest.approx(1e-3 * abs(ref[1, 2, 3]))


def test_zero_reference():
    ref = np.array([0.0, 2.0])
    with pytest.warns(RuntimeWarning, match="floor="):
        assert metrics.mre(np.array([1e-12, 2.0]), ref) == np.inf
    assert metrics.mre(np.array([1e-12, 2.0]), ref, floor=1e-6) == pytest.approx(1e-6)
    assert metrics.rmsre(np.array([0.0, 3.0]), ref) == pytest.approx(np.sqrt(0.25 / 2))
    assert metrics.mae(np.array([1e-12, 2.0]), ref) == 1e-12


def test_bad_input():
    with pytest.raises(ValueError, match="shapes"):
        metrics.mae(np.zeros(3), np.zeros(4))
    with pytest.raises(ValueError, match="empty"):
        metrics.rmsae(np.zeros(0), np.zeros(0))
    with pytest.raises(ValueError, match="floor"):
        metrics.mre(np.ones(2), np.ones(2), floor=-1.0)
    with pytest.raises(TypeError, match="numeric"):
        metrics.rmsre(np.array(["a"]), np.array(["b"]))


def test_inf_from_exact_zero_reference_warns_and_names_floor():
    """rmsre (Singh 2023's definition, kept) is inf when a reference entry is exactly zero
    and x is not; it says so, how many entries are zero, and points at floor=."""
    ref = np.array([[0.0, 2.0, 0.0], [4.0, 0.0, -1.0]])
    x = ref + 1e-12                     # every entry off by rounding noise
    with pytest.warns(RuntimeWarning) as rec:
        assert metrics.rmsre(x, ref) == np.inf
    assert len(rec) == 1
    msg = str(rec[0].message)
    assert "rmsre" in msg and "3 of the 6 reference entries are exactly zero" in msg
    assert "floor=" in msg
    # the call site the user wrote, not metrics.py
    assert rec[0].filename == __file__
    # with a floor the same pair gives a finite, meaningful number and no warning
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert metrics.rmsre(x, ref, floor=1e-10 * np.abs(ref).max()) == pytest.approx(
            np.sqrt((3 * (1e-12 / 4e-10) ** 2 + (1e-12 / 2) ** 2 + (1e-12 / 4) ** 2
                     + 1e-24) / 6))
        # zeros matched exactly are no error: no warning either
        assert metrics.rmsre(ref, ref) == 0.0
