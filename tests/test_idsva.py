"""First-order derivatives of inverse and forward dynamics (IDSVA, complex step, central
differences) against Pinocchio's computeRNEADerivatives / computeABADerivatives on real
robots and random trees (spherical and free-flyer joints anywhere), with and without
external forces; the Carpentier & Mansard 2018 Fig. 3 rounding demo; batches."""

import numpy as np
import pinocchio as pin
import pytest

import rbdiff as rbd
from conftest import full, pin_fext, random_state, rel_err
from rbdiff.derivatives import (ABADerivatives, RNEADerivatives, aba_derivatives,
                                rnea_derivatives)
from rbdiff.kernels.workspace import D_S, W_A, W_P, W_R, W_V, W_VJ
from conftest import kinematics_workspace as _workspace

TOL = {"idsva": 1e-9, "complex_step": 1e-9, "finite_difference": 1e-4}
METHODS = list(TOL)


# ---- plain NumPy reference: DESIGN.md section 5's listing, dense 6x6 matrices ----------

def _skew(x):
    return np.array([[0, -x[2], x[1]], [x[2], 0, -x[0]], [-x[1], x[0], 0]])


def crm(v):
    """v x (motion cross product), [linear; angular] ordering."""
    X = np.zeros((6, 6))
    X[:3, :3] = X[3:, 3:] = _skew(v[3:])
    X[:3, 3:] = _skew(v[:3])
    return X


def crf(v):
    return -crm(v).T


def icrf(f):
    """icrf(f) m = crf(m) f."""
    return np.column_stack([crf(e) @ f for e in np.eye(6)])


def idsva_reference(model, q, v, a, fext=None):
    """dtau_dq, dtau_dv, M by the IDSVA listing, every quantity a dense world-frame array
    (world placements, S, v and a, gravity included, from forward kinematics)."""
    ws = _workspace(model, q, v, a)
    n, nv = model.njoints - 1, model.nv      # moving joints
    iv, nvs, par = model.idx_v, model.nvs, model.parents
    S = ws[n + 1:, D_S:D_S + 6].T                         # (6, nv) world motion subspace
    IC, BC, f = np.zeros((n + 1, 6, 6)), np.zeros((n + 1, 6, 6)), np.zeros((n + 1, 6))
    Psid, Psidd, Phi = np.zeros((6, nv)), np.zeros((6, nv)), np.zeros((6, nv))
    for i in range(1, n + 1):
        R, p = ws[i, W_R:W_R + 9].reshape(3, 3), ws[i, W_P:W_P + 3]
        Xf = np.block([[R, np.zeros((3, 3))], [_skew(p) @ R, R]])   # force transform X*
        m, c = model.masses[i], model.coms[i]
        Il = np.block([[m * np.eye(3), -m * _skew(c)],
                       [m * _skew(c), model.inertias[i] - m * _skew(c) @ _skew(c)]])
        IC[i] = Xf @ Il @ Xf.T                            # X* I X^-1 = X* I X*^T
        vi, ai, lam = ws[i, W_V:W_V + 6], ws[i, W_A:W_A + 6], par[i]
        BC[i] = crf(vi) @ IC[i] - IC[i] @ crm(vi) + icrf(IC[i] @ vi)
        f[i] = IC[i] @ ai + crf(vi) @ IC[i] @ vi
        if fext is not None:
            f[i] -= Xf @ fext[i]
        d = slice(iv[i], iv[i] + nvs[i])
        Psid[:, d] = crm(ws[lam, W_V:W_V + 6]) @ S[:, d]
        Psidd[:, d] = crm(ws[lam, W_A:W_A + 6]) @ S[:, d] + crm(ws[lam, W_V:W_V + 6]) @ Psid[:, d]
        Phi[:, d] = 2 * Psid[:, d] + crm(ws[i, W_VJ:W_VJ + 6]) @ S[:, d]
    T1, T2, T3, T4 = (np.zeros((6, nv)) for _ in range(4))
    dq, dv, M = np.zeros((nv, nv)), np.zeros((nv, nv)), np.zeros((nv, nv))
    for i in range(n, 0, -1):
        d = slice(iv[i], iv[i] + nvs[i])
        T1[:, d] = IC[i] @ S[:, d]
        T2[:, d] = BC[i] @ S[:, d] + IC[i] @ Phi[:, d]
        T3[:, d] = BC[i] @ Psid[:, d] + IC[i] @ Psidd[:, d] + icrf(f[i]) @ S[:, d]
        T4[:, d] = BC[i].T @ S[:, d]
        sub = slice(iv[i], iv[i] + model.mi[i, 6])        # dofs of subtree(i)
        dq[d, sub] = S[:, d].T @ T3[:, sub]
        dv[d, sub] = S[:, d].T @ T2[:, sub]
        dq[sub, d] = T1[:, sub].T @ Psidd[:, d] + T4[:, sub].T @ Psid[:, d]
        dv[sub, d] = T1[:, sub].T @ Phi[:, d] + T4[:, sub].T @ S[:, d]
        M[d, sub] = S[:, d].T @ T1[:, sub]
        M[sub, d] = M[d, sub].T
        if par[i] > 0:
            IC[par[i]] += IC[i]
            BC[par[i]] += BC[i]
            f[par[i]] += f[i]
    return dq, dv, M


@pytest.mark.parametrize("with_fext", [False, True], ids=["", "fext"])
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_kernel_matches_numpy_reference(seed, with_fext):
    model = rbd.models.random_tree(10, seed, floating_base=seed % 2 == 0)
    rng = np.random.default_rng(seed)
    q = rbd.random_configuration(model, rng)
    v, a = rng.normal(size=(2, model.nv))
    fext = rng.normal(size=(model.njoints, 6)) if with_fext else None
    for x, r in zip(rnea_derivatives(model, q, v, a, fext), idsva_reference(model, q, v, a, fext)):
        assert rel_err(x, r) < 1e-12


def _state(model, pm, seed, with_fext):
    rng = np.random.default_rng(seed)
    q, v, a = random_state(pm, rng)
    fext = rng.normal(size=(model.njoints, 6)) * 10 if with_fext else None
    return q, v, a, fext


def _pin(fn, model, pm, q, v, u, fext):
    pd = pm.createData()
    args = (pm, pd, q, v, u) + (() if fext is None else (pin_fext(model, fext),))
    dq, dv, du = (np.array(x) for x in fn(*args))   # views into pd: copy now
    return dq, dv, full(du)                          # M / Minv: upper triangle only


@pytest.mark.parametrize("with_fext", [False, True], ids=["", "fext"])
@pytest.mark.parametrize("method", METHODS)
def test_rnea_derivatives_match_pinocchio(pair, method, with_fext):
    model, pm = pair
    q, v, a, fext = _state(model, pm, 3, with_fext)
    ref = _pin(pin.computeRNEADerivatives, model, pm, q, v, a, fext)
    got = rnea_derivatives(model, q, v, a, fext, method=method)
    assert isinstance(got, RNEADerivatives)
    for x, r in zip(got, ref):
        assert x.shape == (model.nv, model.nv)
        assert rel_err(x, r) < TOL[method]


@pytest.mark.parametrize("with_fext", [False, True], ids=["", "fext"])
@pytest.mark.parametrize("method", METHODS)
def test_aba_derivatives_match_pinocchio(pair, method, with_fext):
    model, pm = pair
    q, v, tau, fext = _state(model, pm, 4, with_fext)
    ref = _pin(pin.computeABADerivatives, model, pm, q, v, tau, fext)
    got = aba_derivatives(model, q, v, tau, fext, method=method)
    assert isinstance(got, ABADerivatives)
    for x, r in zip(got, ref):
        assert x.shape == (model.nv, model.nv)
        assert rel_err(x, r) < TOL[method]


def test_external_forces_change_dtau_dq(pair):
    """World-frame external forces move with their bodies: their q-derivative counts."""
    model, pm = pair
    q, v, a, fext = _state(model, pm, 5, True)
    with_f = rnea_derivatives(model, q, v, a, fext).dtau_dq
    ref = _pin(pin.computeRNEADerivatives, model, pm, q, v, a, fext)[0]
    assert rel_err(with_f, ref) < TOL["idsva"]
    assert rel_err(rnea_derivatives(model, q, v, a).dtau_dq, ref) > 1e-6


def test_dtau_da_is_crba(pair):
    model, pm = pair
    q, v, a, _ = _state(model, pm, 6, False)
    d = rnea_derivatives(model, q, v, a)
    assert rel_err(d.dtau_da, rbd.crba(model, q)) < 1e-12
    assert np.array_equal(d.dtau_da, d.dtau_da.T)
    f = aba_derivatives(model, q, v, a)
    assert rel_err(f.dqdd_dtau, rbd.minverse(model, q)) < 1e-12


@pytest.mark.parametrize("seed", [0, 1])
def test_fig3_rounding_analytical_exact_zero(seed):
    """Carpentier & Mansard 2018 Fig. 3: v = a = 0, zero gravity, no fext. dtau/dv and
    dqdd/dv vanish; IDSVA gives exact zeros, one-sided finite differences do not.
    (Central differences also give exact zeros here: tau is even in v and negation is
    exact in floating point.)"""
    model = rbd.models.random_tree(12, seed, gravity=(0.0, 0.0, 0.0))
    q = rbd.random_configuration(model, seed)
    z = np.zeros(model.nv)
    d = rnea_derivatives(model, q, z, z)
    assert np.all(d.dtau_dv == 0.0)
    assert np.all(d.dtau_dq == 0.0)
    assert np.all(aba_derivatives(model, q, z, z).dqdd_dv == 0.0)
    h = np.sqrt(np.finfo(float).eps)
    E = h * np.eye(model.nv)
    fd_rnea = (rbd.rnea(model, np.tile(q, (model.nv, 1)), E, np.zeros_like(E))
               - rbd.rnea(model, q, z, z)).T / h
    fd_aba = (rbd.aba(model, np.tile(q, (model.nv, 1)), E, np.zeros_like(E))
              - rbd.aba(model, q, z, z)).T / h
    assert np.max(np.abs(fd_rnea)) > 0.0
    assert np.max(np.abs(fd_aba)) > 0.0


@pytest.mark.parametrize("fn", [rnea_derivatives, aba_derivatives])
@pytest.mark.parametrize("method", METHODS)
def test_batch_equals_loop(pair, fn, method):
    model, pm = pair
    B = 3
    states = [_state(model, pm, 10 + b, True) for b in range(B)]
    q, v, u, f = (np.stack([s[k] for s in states]) for k in range(4))
    batch = fn(model, q, v, u, f, method=method)
    for b in range(B):
        one = fn(model, q[b], v[b], u[b], f[b], method=method)
        for x, y in zip(batch, one):
            assert x.shape == (B, model.nv, model.nv)
            np.testing.assert_allclose(x[b], y, rtol=1e-13, atol=1e-11)


@pytest.mark.parametrize("fn", [rnea_derivatives, aba_derivatives])
def test_unknown_method_raises(fn):
    model = rbd.models.random_tree(4, 0)
    q = rbd.neutral(model)
    z = np.zeros(model.nv)
    with pytest.raises(ValueError, match="idsva.*complex_step.*finite_difference"):
        fn(model, q, z, z, method="autodiff")


@pytest.mark.parametrize("fn", [rnea_derivatives, aba_derivatives])
def test_bad_input_explained(fn):
    model = rbd.models.random_tree(6, 1, floating_base=True)
    q = rbd.neutral(model)
    q[3:7] = [1.0, 1.0, 0.0, 0.0]
    z = np.zeros(model.nv)
    with pytest.raises(ValueError, match="quaternion"):
        fn(model, q, z, z)
    with pytest.raises(ValueError, match="v contains NaN"):
        fn(model, rbd.neutral(model), np.full(model.nv, np.nan), z)
    with pytest.raises(ValueError, match="shape"):
        fn(model, rbd.neutral(model), z[:-1], z)


def test_float32_and_complex_inputs_follow_dtype():
    model = rbd.models.random_tree(8, 2, floating_base=True)
    rng = np.random.default_rng(0)
    q = rbd.random_configuration(model, rng)
    v, a = rng.normal(size=(2, model.nv))
    ref = rnea_derivatives(model, q, v, a)
    d32 = rnea_derivatives(model, q.astype(np.float32), v.astype(np.float32),
                           a.astype(np.float32))
    assert d32.dtau_dq.dtype == np.float32
    assert rel_err(d32.dtau_dq, ref.dtau_dq) < 1e-3
    dc = rnea_derivatives(model, q.astype(complex), v, a)
    assert dc.dtau_dq.dtype == np.complex128
    assert rel_err(dc.dtau_dq, ref.dtau_dq) < 1e-14
