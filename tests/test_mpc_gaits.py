"""rbdiff.mpc's contact schedule against phases computed by hand."""

import numpy as np
import pytest

from rbdiff.mpc.gaits import GAITS, Gait, gait

FEET = ("lf", "rf", "lh", "rh")


def test_trot_phases_by_hand():
    # period 0.36 s, duty 0.6: a swing lasts 0.144 s; lf and rh lift off at start (0.1),
    # rf and lh half a period later (0.28)
    g = gait("trot", FEET, start=0.1)
    assert g.swing_time == pytest.approx(0.144)
    cases = {0.0: (1, 1, 1, 1), 0.099: (1, 1, 1, 1), 0.1: (0, 1, 1, 0),
             0.2: (0, 1, 1, 0), 0.25: (1, 1, 1, 1), 0.28: (1, 0, 0, 1),
             0.42: (1, 0, 0, 1), 0.43: (1, 1, 1, 1), 0.46: (0, 1, 1, 0),
             0.1 + 10 * 0.36 + 0.01: (0, 1, 1, 0)}
    for t, want in cases.items():
        assert tuple(g.support(t).astype(int)) == want, t
    assert np.ravel(g.swings(0, 0.0, 0.5)) == pytest.approx([0.1, 0.244, 0.46, 0.604])
    assert np.ravel(g.swings(1, 0.3, 0.5)) == pytest.approx([0.28, 0.424])   # under way
    table = g.table(0.08, 0.02, 6)                  # knots at 0.08, 0.10, ..., 0.18
    assert table[:, 0].tolist() == [True] + [False] * 5
    assert table[:, 1].all()


def test_walk_one_foot_at_a_time_in_crocoddyls_order():
    g = gait("walk", FEET)                          # period 0.8, duty 0.75
    t = np.arange(0.0, 0.8, 0.01) + 0.005
    sup = g.support(t)
    assert (sup.sum(axis=1) == 3).all()             # exactly one foot swings
    first = [int(np.argmax(~sup[:, i])) for i in range(4)]
    assert np.argsort(first).tolist() == [3, 1, 2, 0]     # rh, rf, lh, lf


@pytest.mark.parametrize("name", GAITS)
def test_every_preset_has_support_and_its_duty(name):
    g = gait(name, FEET)
    t = np.linspace(0, g.period, 400, endpoint=False) + 1e-4
    sup = g.support(t)
    assert sup.any(axis=1).all()
    assert sup.mean(axis=0) == pytest.approx([g.duty] * 4, abs=0.01)


def test_biped_presets_and_bad_input():
    g = gait("walk", ("right", "left"), period=1.0)
    assert g.support(0.05).tolist() == [False, True]
    assert g.support(0.55).tolist() == [True, False]
    with pytest.raises(ValueError, match="unknown gait 'gallop'"):
        gait("gallop", FEET)
    with pytest.raises(ValueError, match="needs four feet"):
        gait("trot", ("right", "left"))
    with pytest.raises(ValueError, match="no supporting foot"):
        gait("bound", FEET, duty=0.4)
    with pytest.raises(ValueError, match="duty"):
        Gait("x", 0.5, 0.0, (0.0,))
    with pytest.raises(ValueError, match="period"):
        gait("trot", FEET, period=float("nan"))
    with pytest.raises(ValueError, match="4 feet"):
        gait("trot", ("a", "b", "c"))
