"""Second-order derivatives of forward dynamics (FDSVA-SO, singh-2023 eq. 46) against a
dense NumPy evaluation of eq. 46, complex step through the first-order ABA derivatives,
central differences of Pinocchio's computeABADerivatives along the tangent space, the
Lie-bracket identity; the inner (DTM, IDFOZA) and outer (dense, L^T D L) routes against
each other; external forces, float32, batches and bad input."""

import numpy as np
import pinocchio as pin
import pytest

import rbdiff as rbd
from conftest import full, pin_fext, random_state, rel_err, robot_pair
from rbdiff.second_order import (ABASecondOrderDerivatives, aba_second_order_derivatives,
                                 rnea_second_order_derivatives)
from test_idsva_so import _bracket

CS_TOL = 1e-9
# Two exact evaluations of eq. 46 that apply M^-1 by different routes (the kernel's
# L^T D L solves or dense M^-1, the reference's dense M^-1) differ by rounding of order
# cond(M) eps, with cond(M) up to ~1e4 on these robots.
ROUTE_TOL = 1e-10
# Central differences of Pinocchio's first-order ABA derivatives, step h = 1e-5: the
# rounding error eps |f| / h of a first-order derivative f is amplified by its size,
# up to ~1e4 |second-order| on talos and g1 (light gripper links: M^-1 up to ~1e3),
# giving ~2e-6 of the largest second-order entry there; truncation h^2 |f'''| is ~1e-10.
PIN_H = 1e-5
PIN_TOL = 1e-5


def _state(model, pm, seed, with_fext):
    rng = np.random.default_rng(seed)
    q, v, tau = random_state(pm, rng)
    fext = rng.normal(size=(model.njoints, 6)) * 10 if with_fext else None
    return q, v, tau, fext


def eq46_reference(model, q, v, tau, fext=None):
    """Singh 2023 eq. 46 with dense einsum products: the inverse-dynamics tensors at
    (q, v, qdd = ABA(q, v, tau)), the first-order FD derivatives and M^-1."""
    qdd = rbd.aba(model, q, v, tau, fext)
    Q, V, X, D = rnea_second_order_derivatives(model, q, v, qdd, fext)
    P, Pv, Minv = rbd.aba_derivatives(model, q, v, tau, fext)
    DP = np.einsum("ilk,lj->ijk", D, P)
    DPv = np.einsum("ilk,lj->ijk", D, Pv)
    DM = np.einsum("ilk,lj->ijk", D, Minv)

    def outer(T):
        return -np.einsum("il,ljk->ijk", Minv, T)

    return (outer(Q + DP + DP.transpose(0, 2, 1)), outer(V), outer(X + DPv.transpose(0, 2, 1)),
            outer(DM))


@pytest.mark.parametrize("with_fext", [False, True], ids=["", "fext"])
def test_matches_dense_eq46(pair, with_fext):
    """The sparse tensor-matrix products of the kernel against dense einsum."""
    model, pm = pair
    q, v, tau, fext = _state(model, pm, 0, with_fext)
    got = aba_second_order_derivatives(model, q, v, tau, fext)
    for x, r in zip(got, eq46_reference(model, q, v, tau, fext)):
        assert rel_err(x, r) < ROUTE_TOL


@pytest.mark.parametrize("with_fext", [False, True], ids=["", "fext"])
def test_matches_complex_step(pair, with_fext):
    """Complex step along the tangent space and v of the first-order ABA derivatives
    (ABA, IDSVA and M^-1 kernels on complex128)."""
    model, pm = pair
    q, v, tau, fext = _state(model, pm, 1, with_fext)
    got = aba_second_order_derivatives(model, q, v, tau, fext)
    ref = aba_second_order_derivatives(model, q, v, tau, fext, method="complex_step")
    assert isinstance(got, ABASecondOrderDerivatives)
    for x, r in zip(got, ref):
        assert x.shape == (model.nv,) * 3
        assert rel_err(x, r) < CS_TOL


def _pin_central(model, pm, q, v, tau, fext, h):
    pd = pm.createData()
    nv = pm.nv
    extra = () if fext is None else (pin_fext(model, fext),)

    def fo(qq, vv):
        dq, dv, Minv = (np.array(x) for x in pin.computeABADerivatives(pm, pd, qq, vv, tau,
                                                                       *extra))
        return dq, dv, full(Minv)

    Q, V, X, T = (np.empty((nv, nv, nv)) for _ in range(4))
    for k in range(nv):
        e = np.zeros(nv)
        e[k] = h
        (pq, _, pM), (mq, _, mM) = fo(pin.integrate(pm, q, e), v), fo(pin.integrate(pm, q, -e), v)
        Q[:, :, k], T[:, :, k] = (pq - mq) / (2 * h), (pM - mM) / (2 * h)
        (pq, pv, _), (mq, mv, _) = fo(q, v + e), fo(q, v - e)
        V[:, :, k], X[:, :, k] = (pv - mv) / (2 * h), (pq - mq) / (2 * h)
    return Q, V, X, T


@pytest.mark.parametrize("with_fext", [False, True], ids=["", "fext"])
def test_matches_pinocchio_central_differences(pair, with_fext):
    model, pm = pair
    q, v, tau, fext = _state(model, pm, 2, with_fext)
    got = aba_second_order_derivatives(model, q, v, tau, fext)
    for x, r in zip(got, _pin_central(model, pm, q, v, tau, fext, PIN_H)):
        assert rel_err(x, r) < PIN_TOL


def test_d2qdd_dtaudq_is_dminv_dq(pair):
    """d Minv/dq_k = -Minv (dM/dq_k) Minv, with dM/dq from IDSVA-SO and Minv from
    minverse."""
    model, pm = pair
    q, v, tau, _ = _state(model, pm, 3, False)
    Minv = rbd.minverse(model, q)
    D = rnea_second_order_derivatives(model, q, v, tau).dM_dq
    ref = -np.einsum("il,lmk,mj->ijk", Minv, D, Minv)
    assert rel_err(aba_second_order_derivatives(model, q, v, tau).d2qdd_dtaudq, ref) < ROUTE_TOL


def test_symmetries(pair):
    model, pm = pair
    q, v, tau, fext = _state(model, pm, 4, True)
    Q, V, X, T = aba_second_order_derivatives(model, q, v, tau, fext)
    assert rel_err(V, V.transpose(0, 2, 1)) < 1e-11
    assert rel_err(T, T.transpose(1, 0, 2)) < 1e-11
    dqdd_dq = rbd.aba_derivatives(model, q, v, tau, fext).dqdd_dq
    assert rel_err(Q - Q.transpose(0, 2, 1), _bracket(model, dqdd_dq)) < 1e-10


def test_external_forces_change_d2qdd_dq2(pair):
    model, pm = pair
    q, v, tau, fext = _state(model, pm, 5, True)
    with_f = aba_second_order_derivatives(model, q, v, tau, fext)
    without = aba_second_order_derivatives(model, q, v, tau)
    assert rel_err(with_f.d2qdd_dq2, without.d2qdd_dq2) > 1e-6
    assert rel_err(with_f.d2qdd_dtaudq, without.d2qdd_dtaudq) < 1e-13  # Minv(q) only


def test_finite_difference_method(pair):
    """Finite-Diff-2 (step eps^(1/3)) through the first-order ABA derivatives. Its
    truncation error h^2 |d3 qdd| follows the third derivatives of qdd, whose scale is
    that of the largest second-order tensor (d2qdd_dq2: up to ~1e7 on solo12 with these
    forces), not that of each tensor; errors are measured against that common scale."""
    model, pm = pair
    q, v, tau, fext = _state(model, pm, 6, True)
    ref = aba_second_order_derivatives(model, q, v, tau, fext)
    got = aba_second_order_derivatives(model, q, v, tau, fext, method="finite_difference")
    scale = max(np.max(np.abs(r)) for r in ref)
    for x, r in zip(got, ref):
        assert np.max(np.abs(x - r)) < 1e-4 * scale


# IDFOZA and DTM form the same inner sums in a different order: rounding only
INNER_TOL = 1e-12
ROUTE_MODELS = {
    "tree0+ff": lambda: rbd.models.random_tree(9, 0, floating_base=True),
    "tree1": lambda: rbd.models.random_tree(9, 1),
    "tree2+ff": lambda: rbd.models.random_tree(12, 2, floating_base=True),
    "chain": lambda: rbd.models.serial_chain(7),
    "panda": lambda: robot_pair("panda", False)[0],
    "hyq+ff": lambda: robot_pair("hyq", True)[0],
}


def _model_state(model, seed):
    """q, v, tau and local-frame external forces of one random state of model."""
    rng = np.random.default_rng(seed)
    q = rbd.random_configuration(model, rng)
    v, tau = rng.normal(size=(2, model.nv))
    return q, v, tau, rng.normal(size=(model.njoints, 6)) * 10


@pytest.mark.parametrize("name", list(ROUTE_MODELS))
def test_routes_agree(name):
    """inner="idfoza" (IDSVA at v = 0, g = 0, a = one column, singh-2023 eq. 52) gives
    DTM's inner terms, so the tensors match with the outer route fixed; the L^T D L
    solves ("aza") match the dense -M^-1 products to cond(M) eps. Random trees mix
    spherical and free-flyer joints into the tree."""
    model = ROUTE_MODELS[name]()
    q, v, tau, fext = _model_state(model, 7)
    for f in (None, fext):
        ref = aba_second_order_derivatives(model, q, v, tau, f, inner="dtm", outer="dense")
        for outer in ("dense", "aza"):
            got = aba_second_order_derivatives(model, q, v, tau, f, inner="idfoza",
                                               outer=outer)
            for x, r in zip(got, ref):
                assert rel_err(x, r) < (INNER_TOL if outer == "dense" else ROUTE_TOL)
        auto = aba_second_order_derivatives(model, q, v, tau, f)
        for x, r in zip(auto, ref):
            assert rel_err(x, r) < ROUTE_TOL


def test_idfoza_auto_switch():
    """"auto" picks IDFOZA on long chains only (kernels/idfoza.py's crossover)."""
    from rbdiff.kernels.idfoza import idfoza_beats_dtm
    assert not idfoza_beats_dtm(rbd.models.serial_chain(20).mi)
    assert idfoza_beats_dtm(rbd.models.serial_chain(110).mi)
    assert not idfoza_beats_dtm(rbd.models.binary_tree(110).mi)


def test_unknown_route_raises():
    model = rbd.models.random_tree(4, 0)
    z = np.zeros(model.nv)
    q = rbd.neutral(model)
    with pytest.raises(ValueError, match="inner: expected one of 'auto', 'dtm', 'idfoza'"):
        aba_second_order_derivatives(model, q, z, z, inner="aza")
    with pytest.raises(ValueError, match="outer: expected one of 'auto', 'dense', 'aza'"):
        aba_second_order_derivatives(model, q, z, z, outer="idfoza")


def test_float32_routes():
    """float32 inputs compile and compute in float32 on both inner routes."""
    model = rbd.models.random_tree(8, 3, floating_base=True)
    q32, v32, t32 = (x.astype(np.float32) for x in _model_state(model, 8)[:3])
    ref = aba_second_order_derivatives(model, q32.astype(float), v32.astype(float),
                                       t32.astype(float))
    for inner in ("dtm", "idfoza"):
        got = aba_second_order_derivatives(model, q32, v32, t32, inner=inner)
        for x, r in zip(got, ref):
            assert x.dtype == np.float32
            assert rel_err(x, r) < 1e-3


@pytest.mark.parametrize("method", ["idsva", "complex_step"])
def test_batch_equals_loop(method):
    model = rbd.models.random_tree(7, 3, floating_base=True)
    rng = np.random.default_rng(0)
    B = 3
    q = rbd.random_configuration(model, rng, batch=B)
    v, tau = rng.normal(size=(2, B, model.nv))
    fext = rng.normal(size=(B, model.njoints, 6))
    routes = [{}] if method != "idsva" else [{}, dict(inner="idfoza", outer="dense")]
    for f in (None, fext):
        for kw in routes:
            batch = aba_second_order_derivatives(model, q, v, tau, f, method=method, **kw)
            for b in range(B):
                one = aba_second_order_derivatives(model, q[b], v[b], tau[b],
                                                   None if f is None else f[b],
                                                   method=method, **kw)
                for x, y in zip(batch, one):
                    assert x.shape == (B,) + (model.nv,) * 3
                    np.testing.assert_allclose(x[b], y, rtol=1e-13, atol=1e-10)


def test_unknown_method_raises():
    model = rbd.models.random_tree(4, 0)
    z = np.zeros(model.nv)
    with pytest.raises(ValueError, match="idsva.*complex_step.*finite_difference'"):
        aba_second_order_derivatives(model, rbd.neutral(model), z, z,
                                     method="finite_difference_rnea")


@pytest.mark.parametrize("method", ["idsva", "finite_difference"])
def test_bad_input_explained(method):
    model = rbd.models.random_tree(6, 1, floating_base=True)
    q = rbd.neutral(model)
    q[3:7] = [1.0, 1.0, 0.0, 0.0]
    z = np.zeros(model.nv)
    with pytest.raises(ValueError, match="quaternion"):
        aba_second_order_derivatives(model, q, z, z, method=method)
    with pytest.raises(ValueError, match="tau contains NaN"):
        aba_second_order_derivatives(model, rbd.neutral(model), z, np.full(model.nv, np.inf),
                                     method=method)
    with pytest.raises(ValueError, match="shape"):
        aba_second_order_derivatives(model, rbd.neutral(model), z, z[:-1], method=method)
    with pytest.raises(ValueError, match="fext"):
        aba_second_order_derivatives(model, rbd.neutral(model), z, z, np.zeros((2, 6)),
                                     method=method)
