"""AZA, the ABA-zero algorithm for the product -M^-1 dtau/du of FD derivatives
(kernels/aza.py): equal to the dense product (DMM) and to Pinocchio's
computeABADerivatives, the automatic DMM/AZA switch, float32 and batches."""

import numpy as np
import pinocchio as pin
import pytest

import rbdiff as rbd
from conftest import full, pin_fext, random_state, rel_err
from rbdiff.derivatives import _product_code, aba_derivatives
from rbdiff.kernels.aza import (AZA, AZA_MIN_BRANCH, AZA_WIDTH, BLOCK, DMM,
                                mean_branch_ge, neg_minv_mul_aza)
from rbdiff.kernels.minverse import minverse


def _state(model, pm, seed, with_fext):
    rng = np.random.default_rng(seed)
    q, v, tau = random_state(pm, rng)
    fext = rng.normal(size=(model.njoints, 6)) * 10 if with_fext else None
    return q, v, tau, fext


@pytest.mark.parametrize("method", ["idsva", "chain_rule"])
@pytest.mark.parametrize("with_fext", [False, True], ids=["", "fext"])
def test_aza_matches_pinocchio(pair, with_fext, method):
    model, pm = pair
    q, v, tau, fext = _state(model, pm, 41, with_fext)
    pd = pm.createData()
    args = (pm, pd, q, v, tau) + (() if fext is None else (pin_fext(model, fext),))
    ref = [np.array(x) for x in pin.computeABADerivatives(*args)]
    ref[2] = full(ref[2])
    got = aba_derivatives(model, q, v, tau, fext, method=method, product="aza")
    for x, r in zip(got, ref):
        assert rel_err(x, r) < 1e-9


@pytest.mark.parametrize("with_fext", [False, True], ids=["", "fext"])
def test_aza_equals_dmm(pair, with_fext):
    model, pm = pair
    q, v, tau, fext = _state(model, pm, 42, with_fext)
    for method in ("idsva", "chain_rule"):
        aza = aba_derivatives(model, q, v, tau, fext, method=method, product="aza")
        dmm = aba_derivatives(model, q, v, tau, fext, method=method, product="dmm")
        for x, y in zip(aza, dmm):
            assert rel_err(x, y) < 1e-12


def _branch_pattern(model):
    """(nv, nv) bool: dofs r and c lie on one branch (one joint is the other's ancestor)."""
    nv, par = model.nv, model.parents
    joint = np.repeat(np.arange(1, model.njoints), model.nvs[1:])
    anc = [set() for _ in range(model.njoints)]
    for i in range(1, model.njoints):
        j = i
        while j > 0:
            anc[i].add(j)
            j = par[j]
    return np.array([[joint[c] in anc[joint[r]] or joint[r] in anc[joint[c]]
                      for c in range(nv)] for r in range(nv)])


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4])
def test_sweeps_against_dense_inverse(seed):
    """neg_minv_mul_aza on its own: -M^-1 B for random B on the branch pattern, with
    spherical and free-flyer joints, and a chain whose nv is not a multiple of BLOCK."""
    model = (rbd.models.random_tree(9 + seed, seed, floating_base=seed % 2 == 0)
             if seed < 4 else rbd.models.serial_chain(2 * BLOCK + 3))
    nv = model.nv
    rng = np.random.default_rng(seed)
    q = rbd.random_configuration(model, rng)
    mask = _branch_pattern(model)
    B1, B2 = rng.normal(size=(2, nv, nv)) * mask
    ws = np.empty((model.njoints + nv, AZA_WIDTH))
    Minv = np.empty((nv, nv))
    minverse(model.mi, model.mf, q, ws, np.empty((model.njoints, nv, 6)), Minv)
    C1, C2 = np.full((2, nv, nv), np.nan)
    neg_minv_mul_aza(model.mi, ws, B1, B2, C1, C2)
    M = rbd.crba(model, q)
    assert rel_err(C1, -np.linalg.solve(M, B1)) < 1e-11
    assert rel_err(C2, -np.linalg.solve(M, B2)) < 1e-11


def _mean_branch(model):
    total = 0
    for i in range(1, model.njoints):
        depth, j = 0, i
        while j > 0:
            depth += int(model.nvs[j])
            j = int(model.parents[j])
        total += int(model.nvs[i]) * (depth + int(model.mi[i, 6]) - int(model.nvs[i]))
    return total / model.nv


@pytest.mark.parametrize("make,n", [(rbd.models.serial_chain, 20), (rbd.models.serial_chain, 70),
                                    (rbd.models.binary_tree, 127)])
def test_auto_switch_follows_mean_branch(make, n):
    """product="auto" picks AZA exactly when the mean branch length reaches
    AZA_MIN_BRANCH (serial chains: L = nv; binary trees: ~ 2 log2 N), and the result is
    the DMM one either way."""
    model = make(n)
    L = _mean_branch(model)
    assert bool(mean_branch_ge(model.mi, AZA_MIN_BRANCH)) == (L >= AZA_MIN_BRANCH)
    assert _product_code(model, "auto") == (AZA if L >= AZA_MIN_BRANCH else DMM)
    if make is rbd.models.serial_chain:
        assert L == model.nv
    rng = np.random.default_rng(n)
    q = rbd.random_configuration(model, rng)
    v, tau = rng.normal(size=(2, model.nv))
    auto = aba_derivatives(model, q, v, tau)
    dmm = aba_derivatives(model, q, v, tau, product="dmm")
    for x, y in zip(auto, dmm):
        assert rel_err(x, y) < 1e-11


def test_real_robots_stay_on_dmm(pair):
    model, _ = pair
    assert _product_code(model, "auto") == (AZA if _mean_branch(model) >= AZA_MIN_BRANCH
                                            else DMM)


def test_float32_aza():
    model = rbd.models.random_tree(10, 1, floating_base=True)
    rng = np.random.default_rng(5)
    q = rbd.random_configuration(model, rng)
    v, tau = rng.normal(size=(2, model.nv))
    q32, v32, t32 = (x.astype(np.float32) for x in (q, v, tau))
    ref = aba_derivatives(model, q32.astype(float), v32.astype(float), t32.astype(float),
                          product="aza")
    for method in ("idsva", "chain_rule"):
        got = aba_derivatives(model, q32, v32, t32, method=method, product="aza")
        for x, r in zip(got, ref):
            assert x.dtype == np.float32
            assert rel_err(x, r) < 2e-4


@pytest.mark.parametrize("method", ["idsva", "chain_rule"])
def test_batch_equals_loop(pair, method):
    model, pm = pair
    B = 3
    states = [_state(model, pm, 50 + b, True) for b in range(B)]
    q, v, u, f = (np.stack([s[k] for s in states]) for k in range(4))
    batch = aba_derivatives(model, q, v, u, f, method=method, product="aza")
    for b in range(B):
        one = aba_derivatives(model, q[b], v[b], u[b], f[b], method=method, product="aza")
        for x, y in zip(batch, one):
            np.testing.assert_allclose(x[b], y, rtol=1e-13, atol=1e-11)


def test_bad_product_raises():
    model = rbd.models.random_tree(4, 0)
    q = rbd.neutral(model)
    z = np.zeros(model.nv)
    with pytest.raises(ValueError, match="product.*'auto', 'dmm', 'aza'.*'blas'"):
        aba_derivatives(model, q, z, z, product="blas")
