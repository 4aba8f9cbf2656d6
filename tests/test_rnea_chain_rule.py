"""RNEA chain-rule derivatives (Carpentier & Mansard 2018 Alg. 2 and 3, world frame,
kernels/rnea_chain_rule.py) against a plain NumPy transcription of the same listing,
Pinocchio's computeRNEADerivatives / computeABADerivatives (with and without external
forces), IDSVA, exact zeros (Fig. 3), float32 and batches."""

import numpy as np
import pinocchio as pin
import pytest

import rbdiff as rbd
from conftest import full, pin_fext, random_state, rel_err
from rbdiff.derivatives import aba_derivatives, rnea_derivatives
from rbdiff.kernels.workspace import D_S, W_A, W_P, W_R, W_V, W_VJ
from conftest import kinematics_workspace as _workspace
from test_idsva import _skew, crf, crm


# ---- plain NumPy reference: the module docstring's listing, dense 6x6 matrices ---------

def chain_rule_reference(model, q, v, a, fext=None):
    """dtau_dq, dtau_dv by forward accumulation of the chain rule through world-frame
    RNEA: motion sets dv_i/du, da_i/du and force sets df_i/du for every dof u on the
    path from the root to body i, then the backward sum over subtrees. Also returns the
    motion sets (n+1, nv, 6) dv_i/dq, da_i/dq, da_i/dv."""
    ws = _workspace(model, q, v, a)
    n, nv = model.njoints - 1, model.nv      # moving joints
    iv, nvs, par = model.idx_v, model.nvs, model.parents
    S = ws[n + 1:, D_S:D_S + 6].T
    V, A = ws[:n + 1, W_V:W_V + 6], ws[:n + 1, W_A:W_A + 6]
    dV, dA, dAv, dFq, dFv = (np.zeros((n + 1, nv, 6)) for _ in range(5))
    F = np.zeros((n + 1, 6))

    def anc(i):          # dofs of joint i, then of its ancestors
        while i > 0:
            yield from range(iv[i], iv[i] + nvs[i])
            i = par[i]

    for i in range(1, n + 1):
        lam, own = par[i], range(iv[i], iv[i] + nvs[i])
        R, p = ws[i, W_R:W_R + 9].reshape(3, 3), ws[i, W_P:W_P + 3]
        Xf = np.block([[R, np.zeros((3, 3))], [_skew(p) @ R, R]])
        m, c = model.masses[i], model.coms[i]
        Il = np.block([[m * np.eye(3), -m * _skew(c)],
                       [m * _skew(c), model.inertias[i] - m * _skew(c) @ _skew(c)]])
        Y = Xf @ Il @ Xf.T
        vi, ai, vl, vJ = V[i], A[i], V[lam], ws[i, W_VJ:W_VJ + 6]
        aJ = S[:, own] @ a[own]
        h = Y @ vi
        fx = np.zeros(6) if fext is None else Xf @ fext[i]
        F[i] = Y @ ai + crf(vi) @ h - fx
        for k in anc(i):
            s = S[:, k]
            dvl, dal, davl = ((np.zeros(6),) * 3 if k in own
                              else (dV[lam, k], dA[lam, k], dAv[lam, k]))
            dv = dvl + crm(s) @ vJ                                     # Alg. 2 line 3
            da = dal + crm(dvl) @ vJ + crm(vl) @ crm(s) @ vJ + crm(s) @ aJ   # line 5
            dav = crm(vl) @ s if k in own else davl + crm(s) @ vJ
            dh = crf(s) @ h + Y @ (dv - crm(s) @ vi)                   # line 4
            dV[i, k], dA[i, k], dAv[i, k] = dv, da, dav
            dFq[i, k] = (crf(s) @ (Y @ ai - fx) + Y @ (da - crm(s) @ ai) + crf(dv) @ h
                         + crf(vi) @ dh)                               # line 6
            dFv[i, k] = Y @ dav + crf(s) @ h + crf(vi) @ Y @ s
    dq, dv = np.zeros((nv, nv)), np.zeros((nv, nv))
    for i in range(n, 0, -1):                                          # Alg. 3
        lam, own = par[i], list(range(iv[i], iv[i] + nvs[i]))
        for k in own:
            for m in anc(i):
                dq[k, m] = S[:, k] @ dFq[i, m] + (crm(S[:, m]) @ S[:, k]) @ F[i]
                dv[k, m] = S[:, k] @ dFv[i, m]
                if m not in own:
                    dq[m, k] = S[:, m] @ dFq[i, k]
                    dv[m, k] = S[:, m] @ dFv[i, k]
        if lam > 0:
            for m in anc(lam):
                dFq[lam, m] += dFq[i, m]
                dFv[lam, m] += dFv[i, m]
            F[lam] += F[i]
    return dq, dv, dV, dA, dAv


@pytest.mark.parametrize("with_fext", [False, True], ids=["", "fext"])
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_kernel_matches_numpy_reference(seed, with_fext):
    model = rbd.models.random_tree(10, seed, floating_base=seed % 2 == 0)
    rng = np.random.default_rng(seed)
    q = rbd.random_configuration(model, rng)
    v, a = rng.normal(size=(2, model.nv))
    fext = rng.normal(size=(model.njoints, 6)) if with_fext else None
    got = rnea_derivatives(model, q, v, a, fext, method="chain_rule")
    ref = chain_rule_reference(model, q, v, a, fext)
    assert rel_err(got.dtau_dq, ref[0]) < 1e-12
    assert rel_err(got.dtau_dv, ref[1]) < 1e-12
    assert rel_err(got.dtau_da, rbd.crba(model, q)) < 1e-13


def _state(model, pm, seed, with_fext):
    rng = np.random.default_rng(seed)
    q, v, a = random_state(pm, rng)
    fext = rng.normal(size=(model.njoints, 6)) * 10 if with_fext else None
    return q, v, a, fext


def _pin(fn, model, pm, q, v, u, fext):
    pd = pm.createData()
    args = (pm, pd, q, v, u) + (() if fext is None else (pin_fext(model, fext),))
    dq, dv, du = (np.array(x) for x in fn(*args))   # views into pd: copy now
    return dq, dv, full(du)


@pytest.mark.parametrize("with_fext", [False, True], ids=["", "fext"])
def test_rnea_chain_rule_matches_pinocchio(pair, with_fext):
    model, pm = pair
    q, v, a, fext = _state(model, pm, 21, with_fext)
    ref = _pin(pin.computeRNEADerivatives, model, pm, q, v, a, fext)
    got = rnea_derivatives(model, q, v, a, fext, method="chain_rule")
    for x, r in zip(got, ref):
        assert x.shape == (model.nv, model.nv)
        assert rel_err(x, r) < 1e-9


@pytest.mark.parametrize("product", ["dmm", "aza"])
@pytest.mark.parametrize("with_fext", [False, True], ids=["", "fext"])
def test_aba_chain_rule_matches_pinocchio(pair, with_fext, product):
    model, pm = pair
    q, v, tau, fext = _state(model, pm, 22, with_fext)
    ref = _pin(pin.computeABADerivatives, model, pm, q, v, tau, fext)
    got = aba_derivatives(model, q, v, tau, fext, method="chain_rule", product=product)
    for x, r in zip(got, ref):
        assert x.shape == (model.nv, model.nv)
        assert rel_err(x, r) < 1e-9


@pytest.mark.parametrize("with_fext", [False, True], ids=["", "fext"])
def test_chain_rule_equals_idsva(pair, with_fext):
    """Two analytical algorithms, one answer (to rounding)."""
    model, pm = pair
    q, v, a, fext = _state(model, pm, 23, with_fext)
    for x, y in zip(rnea_derivatives(model, q, v, a, fext, method="chain_rule"),
                    rnea_derivatives(model, q, v, a, fext, method="idsva")):
        assert rel_err(x, y) < 1e-12
    for x, y in zip(aba_derivatives(model, q, v, a, fext, method="chain_rule"),
                    aba_derivatives(model, q, v, a, fext, method="idsva")):
        assert rel_err(x, y) < 1e-11


@pytest.mark.parametrize("seed", [0, 1])
def test_fig3_exact_zeros(seed):
    """v = a = 0, zero gravity, no fext: the chain rule gives exact zeros."""
    model = rbd.models.random_tree(12, seed, gravity=(0.0, 0.0, 0.0),
                                   floating_base=seed == 0)
    q = rbd.random_configuration(model, seed)
    z = np.zeros(model.nv)
    d = rnea_derivatives(model, q, z, z, method="chain_rule")
    assert np.all(d.dtau_dq == 0.0) and np.all(d.dtau_dv == 0.0)
    assert np.all(aba_derivatives(model, q, z, z, method="chain_rule").dqdd_dv == 0.0)


def test_float32_compiles_and_agrees():
    """The same kernels compiled for float32 (float32 in, float32 out)."""
    model = rbd.load_robot("iiwa14")
    tree = rbd.models.random_tree(10, 3, floating_base=True)
    for m in (model, tree):
        rng = np.random.default_rng(4)
        q = rbd.random_configuration(m, rng)
        v, a = rng.normal(size=(2, m.nv))
        f = rng.normal(size=(m.njoints, 6))
        q32, v32, a32, f32 = (x.astype(np.float32) for x in (q, v, a, f))
        for fn in (rnea_derivatives, aba_derivatives):
            ref = fn(m, q32.astype(float), v32.astype(float), a32.astype(float),
                     f32.astype(float), method="chain_rule")
            got = fn(m, q32, v32, a32, f32, method="chain_rule")
            for x, r in zip(got, ref):
                assert x.dtype == np.float32
                assert rel_err(x, r) < 2e-4


def test_complex_input_follows_dtype():
    model = rbd.models.random_tree(8, 2, floating_base=True)
    rng = np.random.default_rng(0)
    q = rbd.random_configuration(model, rng)
    v, a = rng.normal(size=(2, model.nv))
    ref = rnea_derivatives(model, q, v, a, method="chain_rule")
    dc = rnea_derivatives(model, q.astype(complex), v, a, method="chain_rule")
    assert dc.dtau_dq.dtype == np.complex128
    assert rel_err(dc.dtau_dq, ref.dtau_dq) < 1e-14


@pytest.mark.parametrize("fn", [rnea_derivatives, aba_derivatives])
def test_batch_equals_loop(pair, fn):
    model, pm = pair
    B = 3
    states = [_state(model, pm, 30 + b, True) for b in range(B)]
    q, v, u, f = (np.stack([s[k] for s in states]) for k in range(4))
    batch = fn(model, q, v, u, f, method="chain_rule")
    for b in range(B):
        one = fn(model, q[b], v[b], u[b], f[b], method="chain_rule")
        for x, y in zip(batch, one):
            assert x.shape == (B, model.nv, model.nv)
            np.testing.assert_allclose(x[b], y, rtol=1e-13, atol=1e-11)


@pytest.mark.parametrize("fn", [rnea_derivatives, aba_derivatives])
def test_bad_input_explained(fn):
    model = rbd.models.random_tree(6, 1, floating_base=True)
    q = rbd.neutral(model)
    q[3:7] = [1.0, 1.0, 0.0, 0.0]
    z = np.zeros(model.nv)
    with pytest.raises(ValueError, match="quaternion"):
        fn(model, q, z, z, method="chain_rule")
    with pytest.raises(ValueError, match="v contains NaN"):
        fn(model, rbd.neutral(model), np.full(model.nv, np.nan), z, method="chain_rule")
    with pytest.raises(ValueError, match="fext"):
        fn(model, rbd.neutral(model), z, z, np.zeros((2, 6)), method="chain_rule")
