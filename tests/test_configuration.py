"""Configuration-space operations against Pinocchio (integrate, difference, neutral)."""

import numpy as np
import pinocchio as pin
import pytest

import rbdiff as rbd
from conftest import tree_pair


@pytest.mark.parametrize("seed", range(4))
def test_integrate_difference_match_pinocchio(seed):
    model, pm = tree_pair(seed, n=10, floating=True)
    rng = np.random.default_rng(seed)
    q = rbd.random_configuration(model, rng)
    dv = rng.normal(size=model.nv)
    q1 = rbd.integrate(model, q, dv)
    assert np.max(np.abs(q1 - pin.integrate(pm, q, dv))) < 1e-12
    assert np.max(np.abs(rbd.difference(model, q, q1) - dv)) < 1e-10
    assert np.max(np.abs(rbd.difference(model, q, q1) - pin.difference(pm, q, q1))) < 1e-10
    assert np.array_equal(rbd.neutral(model), pin.neutral(pm))


def test_small_steps_use_exact_series():
    model, pm = tree_pair(0, n=8, floating=True)
    q = rbd.random_configuration(model, 0)
    dv = np.full(model.nv, 1e-7)
    assert np.max(np.abs(rbd.integrate(model, q, dv) - pin.integrate(pm, q, dv))) < 1e-15
    assert np.max(np.abs(rbd.difference(model, q, rbd.integrate(model, q, dv)) - dv)) < 1e-15


def test_random_configuration_is_valid_and_batched():
    model = rbd.models.random_tree(10, 4, floating_base=True)
    qs = rbd.random_configuration(model, 0, batch=6)
    assert qs.shape == (6, model.nq)
    for q in qs:
        rbd.rnea(model, q, np.zeros(model.nv), np.zeros(model.nv))   # passes validation
    iiwa = rbd.load_robot("iiwa14")
    qi = rbd.random_configuration(iiwa, 1, batch=200)
    assert np.all(qi >= iiwa.lower_limits) and np.all(qi <= iiwa.upper_limits)
    assert np.array_equal(rbd.random_configuration(model, 3), rbd.random_configuration(model, 3))


def test_integrate_batch_and_errors():
    model = rbd.models.random_tree(5, 1, floating_base=True)
    q = rbd.random_configuration(model, 0, batch=3)
    dv = np.random.default_rng(0).normal(size=(3, model.nv))
    out = rbd.integrate(model, q, dv)
    for b in range(3):
        assert np.array_equal(out[b], rbd.integrate(model, q[b], dv[b]))
    with pytest.raises(ValueError, match="^v: expected shape"):
        rbd.integrate(model, q[0], dv[0, :-1])
