"""RNEA, CRBA, ABA and M^-1 against Pinocchio on real robots and random trees
(differential tests, relative error 1e-10), with and without external forces."""

import numpy as np
import pinocchio as pin
import pytest

import rbdiff as rbd
from conftest import full, pin_fext, random_state, rel_err

TOL = 1e-10


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_rnea_matches_pinocchio(pair, seed):
    model, pm = pair
    pd = pm.createData()
    q, v, a = random_state(pm, np.random.default_rng(seed))
    assert rel_err(rbd.rnea(model, q, v, a), pin.rnea(pm, pd, q, v, a)) < TOL


@pytest.mark.parametrize("seed", [0, 1])
def test_rnea_with_fext_matches_pinocchio(pair, seed):
    model, pm = pair
    pd = pm.createData()
    rng = np.random.default_rng(seed)
    q, v, a = random_state(pm, rng)
    fext = rng.normal(size=(model.njoints, 6)) * 10
    ref = pin.rnea(pm, pd, q, v, a, pin_fext(model, fext)).copy()
    assert rel_err(rbd.rnea(model, q, v, a, fext), ref) < TOL
    assert rel_err(rbd.rnea(model, q, v, a), ref) > 1e-6   # the forces do matter


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_crba_matches_pinocchio(pair, seed):
    model, pm = pair
    pd = pm.createData()
    q, _, _ = random_state(pm, np.random.default_rng(seed))
    M = rbd.crba(model, q)
    assert rel_err(M, full(pin.crba(pm, pd, q))) < TOL
    assert np.array_equal(M, M.T)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_aba_matches_pinocchio(pair, seed):
    model, pm = pair
    pd = pm.createData()
    q, v, tau = random_state(pm, np.random.default_rng(seed))
    assert rel_err(rbd.aba(model, q, v, tau), pin.aba(pm, pd, q, v, tau)) < TOL


def test_aba_with_fext_matches_pinocchio(pair):
    model, pm = pair
    pd = pm.createData()
    rng = np.random.default_rng(7)
    q, v, tau = random_state(pm, rng)
    fext = rng.normal(size=(model.njoints, 6)) * 10
    ref = pin.aba(pm, pd, q, v, tau, pin_fext(model, fext)).copy()
    assert rel_err(rbd.aba(model, q, v, tau, fext), ref) < TOL


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_minverse_matches_pinocchio(pair, seed):
    model, pm = pair
    pd = pm.createData()
    q, _, _ = random_state(pm, np.random.default_rng(seed))
    Minv = rbd.minverse(model, q)
    assert rel_err(Minv, full(pin.computeMinverse(pm, pd, q))) < TOL
    assert np.allclose(Minv, Minv.T, rtol=0, atol=1e-12 * np.abs(Minv).max())


def test_nonlinear_effects_and_gravity(pair):
    model, pm = pair
    pd = pm.createData()
    q, v, _ = random_state(pm, np.random.default_rng(3))
    assert rel_err(rbd.nonlinear_effects(model, q, v), pin.nonLinearEffects(pm, pd, q, v)) < TOL
    assert rel_err(rbd.gravity(model, q), pin.computeGeneralizedGravity(pm, pd, q)) < TOL


def test_identities(pair):
    """ID(FD(tau)) = tau; M from CRBA = columns of RNEA; M Minv = I."""
    model, pm = pair
    q, v, tau = random_state(pm, np.random.default_rng(11))
    qdd = rbd.aba(model, q, v, tau)
    assert rel_err(rbd.rnea(model, q, v, qdd), tau) < 1e-9
    M = rbd.crba(model, q)
    h = rbd.nonlinear_effects(model, q, v)
    cols = np.array([rbd.rnea(model, q, v, e) - h for e in np.eye(model.nv)]).T
    assert rel_err(cols, M) < 1e-9
    assert rel_err(M @ rbd.minverse(model, q), np.eye(model.nv)) < 1e-8


def test_batch_equals_loop(pair):
    model, pm = pair
    rng = np.random.default_rng(5)
    B = 5
    states = [random_state(pm, rng) for _ in range(B)]
    q, v, a = (np.array([s[k] for s in states]) for k in range(3))
    fext = rng.normal(size=(B, model.njoints, 6))
    for b, (tau, tauf, qdd, M, Minv) in enumerate(zip(
            rbd.rnea(model, q, v, a), rbd.rnea(model, q, v, a, fext), rbd.aba(model, q, v, a),
            rbd.crba(model, q), rbd.minverse(model, q))):
        assert np.array_equal(tau, rbd.rnea(model, q[b], v[b], a[b]))
        assert np.array_equal(tauf, rbd.rnea(model, q[b], v[b], a[b], fext[b]))
        assert np.array_equal(qdd, rbd.aba(model, q[b], v[b], a[b]))
        assert np.array_equal(M, rbd.crba(model, q[b]))
        assert np.array_equal(Minv, rbd.minverse(model, q[b]))
    assert np.array_equal(rbd.gravity(model, q)[2], rbd.gravity(model, q[2]))


def test_results_are_owned_by_the_caller():
    model = rbd.load_robot("iiwa14")
    q = rbd.neutral(model)
    tau1 = rbd.rnea(model, q, np.zeros(7), np.zeros(7))
    keep = tau1.copy()
    rbd.rnea(model, q, np.ones(7), np.ones(7))
    assert np.array_equal(tau1, keep)
