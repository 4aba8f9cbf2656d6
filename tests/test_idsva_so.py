"""Second-order derivatives of inverse dynamics (IDSVA-SO) against a plain NumPy version of
the listing, complex step through the first-order kernels, central differences of
Pinocchio's computeRNEADerivatives along the tangent space, complex step of CRBA, the
Lie-bracket identity of the tangent coordinates, and the numerical baselines; external
forces, batches, dtypes and bad input."""

import numpy as np
import pinocchio as pin
import pytest

import rbdiff as rbd
from conftest import full, pin_fext, random_state, rel_err
from rbdiff.cpu import single as cso
from rbdiff.kernels.workspace import D_S, W_A, W_P, W_R, W_V
from conftest import kinematics_workspace as _workspace
from rbdiff.model.layout import FREE_FLYER, SPHERICAL
from rbdiff.second_order import RNEASecondOrderDerivatives, rnea_second_order_derivatives
from test_idsva import _skew, crf, crm, icrf

CS_TOL = 1e-9      # vs complex step: both exact to rounding
# Central differences of Pinocchio's first-order derivatives, step h = 1e-5: truncation
# h^2 |f'''| / 6 ~ 2e-11 and rounding eps |f| / h ~ 2e-11 relative to the first-order
# magnitudes |f|, which exceed the second-order ones by at most ~100 on these robots.
PIN_H = 1e-5
PIN_TOL = 1e-7


# ---- plain NumPy reference: DESIGN.md section 5's IDSVA-SO listing, dense 6x6 blocks ---

def Idot(I, v):
    return crf(v) @ I - I @ crm(v)


def B(I, v):
    return 0.5 * (crf(v) @ I - I @ crm(v) + icrf(I @ v))


def idsva_so_reference(model, q, v, a, fext=None):
    """Q, V, X, D by the IDSVA-SO listing word for word, every quantity a dense
    world-frame array (placements, S, v, a with -gravity from forward kinematics)."""
    ws = _workspace(model, q, v, a)
    n, nv, par = model.njoints - 1, model.nv, model.parents    # moving joints
    iv, nvs = model.idx_v, model.nvs
    S = ws[n + 1:, D_S:D_S + 6].T
    IC, BC, f = np.zeros((n + 1, 6, 6)), np.zeros((n + 1, 6, 6)), np.zeros((n + 1, 6))
    Psid, Psidd, Sd = np.zeros((6, nv)), np.zeros((6, nv)), np.zeros((6, nv))
    for i in range(1, n + 1):
        R, p = ws[i, W_R:W_R + 9].reshape(3, 3), ws[i, W_P:W_P + 3]
        Xf = np.block([[R, np.zeros((3, 3))], [_skew(p) @ R, R]])
        m, c = model.masses[i], model.coms[i]
        Il = np.block([[m * np.eye(3), -m * _skew(c)],
                       [m * _skew(c), model.inertias[i] - m * _skew(c) @ _skew(c)]])
        IC[i] = Xf @ Il @ Xf.T
        vi, ai, lam = ws[i, W_V:W_V + 6], ws[i, W_A:W_A + 6], par[i]
        BC[i] = 2 * B(IC[i], vi)
        f[i] = IC[i] @ ai + crf(vi) @ IC[i] @ vi
        if fext is not None:
            f[i] -= Xf @ fext[i]
        d = slice(iv[i], iv[i] + nvs[i])
        Psid[:, d] = crm(ws[lam, W_V:W_V + 6]) @ S[:, d]
        Psidd[:, d] = crm(ws[lam, W_A:W_A + 6]) @ S[:, d] + crm(ws[lam, W_V:W_V + 6]) @ Psid[:, d]
        Sd[:, d] = crm(vi) @ S[:, d]
    Q, V, X, D = (np.zeros((nv, nv, nv)) for _ in range(4))

    def dofs(j):
        return range(iv[j], iv[j] + nvs[j])

    for i in range(n, 0, -1):
        for a_ in dofs(i):
            s, psid, psidd, sd = S[:, a_], Psid[:, a_], Psidd[:, a_], Sd[:, a_]
            I, Bc, fi = IC[i], BC[i], f[i]
            Bphi, Bpsi = 2 * B(I, s), 2 * B(I, psid)
            A0, A1 = icrf(I @ s), Idot(I, s)
            A2, A3, A4 = 2 * A0 - Bphi, Bpsi + Idot(Bc, s), icrf(Bc.T @ s)
            A5 = icrf(Bc @ psid + I @ psidd + crf(s) @ fi)
            A6, A7 = crf(s) @ I + A0, icrf(Bc @ s + I @ (psid + sd))
            j = i
            while j > 0:
                for b in dofs(j):
                    st, sdt, pst, psdt = S[:, b], Sd[:, b], Psid[:, b], Psidd[:, b]
                    u1, u2 = A3.T @ st, A1.T @ st
                    u3 = A3 @ pst + A1 @ psdt + A5 @ st
                    u4, u5 = A6 @ st, A2 @ pst + A4 @ st
                    u6, u7 = Bphi @ pst + A7 @ st, A3 @ st + A1 @ (pst + sdt)
                    u8, u9 = A4 @ st - Bphi.T @ pst, A0 @ st
                    u10, u11, u12 = Bphi @ st, Bphi.T @ st, A1 @ st
                    k = j
                    while k > 0:
                        for c in dofs(k):
                            sr, sdr, psr, psdr = S[:, c], Sd[:, c], Psid[:, c], Psidd[:, c]
                            p1, p2 = u11 @ psr, u8 @ psr + u9 @ psdr
                            Q[a_, b, c] = p2
                            X[a_, c, b] = -p1
                            if j != i:
                                Q[b, c, a_] = Q[b, a_, c] = u1 @ psr + u2 @ psdr
                                X[b, c, a_] = p1
                                X[b, a_, c] = u1 @ sr + u2 @ (psr + sdr)
                                V[b, c, a_] = V[b, a_, c] = u11 @ sr
                                D[c, b, a_] = D[b, c, a_] = sr @ u12
                            if k != j:
                                Q[a_, c, b] = p2
                                Q[c, a_, b] = sr @ u3
                                V[a_, b, c] = V[a_, c, b] = -u11 @ sr
                                X[a_, b, c] = sr @ u5 + u9 @ (psr + sdr)
                                X[c, b, a_] = sr @ u6
                                D[c, a_, b] = D[a_, c, b] = sr @ u9
                                if j != i:
                                    Q[c, b, a_] = Q[c, a_, b]
                                    V[c, a_, b] = V[c, b, a_] = sr @ u10
                                    X[c, a_, b] = sr @ u7
                                else:
                                    V[c, b, a_] = sr @ u4
                            else:
                                V[a_, b, c] = -u2 @ sr
                        k = par[k]
                j = par[j]
        if par[i] > 0:
            IC[par[i]] += IC[i]
            BC[par[i]] += BC[i]
            f[par[i]] += f[i]
    return Q, V, X, D


def _state(model, pm, seed, with_fext):
    rng = np.random.default_rng(seed)
    q, v, a = random_state(pm, rng)
    fext = rng.normal(size=(model.njoints, 6)) * 10 if with_fext else None
    return q, v, a, fext


# ---- the kernel and the listing ------------------------------------------------------

@pytest.mark.parametrize("with_fext", [False, True], ids=["", "fext"])
@pytest.mark.parametrize("seed", [0, 1])
def test_kernel_matches_numpy_listing(seed, with_fext):
    model = rbd.models.random_tree(6, seed, floating_base=seed % 2 == 0)
    rng = np.random.default_rng(seed)
    q = rbd.random_configuration(model, rng)
    v, a = rng.normal(size=(2, model.nv))
    fext = rng.normal(size=(model.njoints, 6)) if with_fext else None
    got = rnea_second_order_derivatives(model, q, v, a, fext)
    for x, r in zip(got, idsva_so_reference(model, q, v, a, fext)):
        assert rel_err(x, r) < 1e-12


# ---- against independent oracles -----------------------------------------------------

@pytest.mark.parametrize("with_fext", [False, True], ids=["", "fext"])
def test_matches_complex_step(pair, with_fext):
    """Complex step along the tangent space (and along v) of the first-order IDSVA kernel
    compiled for complex128; with fext this proves that external forces need nothing
    beyond the net forces f of the forward pass."""
    model, pm = pair
    q, v, a, fext = _state(model, pm, 1, with_fext)
    got = rnea_second_order_derivatives(model, q, v, a, fext)
    ref = rnea_second_order_derivatives(model, q, v, a, fext, method="complex_step")
    assert isinstance(got, RNEASecondOrderDerivatives)
    for x, r in zip(got, ref):
        assert x.shape == (model.nv,) * 3
        assert rel_err(x, r) < CS_TOL


def _pin_central(model, pm, q, v, a, fext, h):
    """The four tensors by central differences of Pinocchio's computeRNEADerivatives:
    q stepped by pin.integrate (tangent space), v stepped directly."""
    pd = pm.createData()
    nv = pm.nv
    extra = () if fext is None else (pin_fext(model, fext),)

    def fo(qq, vv):
        dq, dv, M = (np.array(x) for x in pin.computeRNEADerivatives(pm, pd, qq, vv, a, *extra))
        return dq, dv, full(M)

    Q, V, X, D = (np.empty((nv, nv, nv)) for _ in range(4))
    for k in range(nv):
        e = np.zeros(nv)
        e[k] = h
        (pq, _, pM), (mq, _, mM) = fo(pin.integrate(pm, q, e), v), fo(pin.integrate(pm, q, -e), v)
        Q[:, :, k], D[:, :, k] = (pq - mq) / (2 * h), (pM - mM) / (2 * h)
        (pq, pv, _), (mq, mv, _) = fo(q, v + e), fo(q, v - e)
        V[:, :, k], X[:, :, k] = (pv - mv) / (2 * h), (pq - mq) / (2 * h)
    return Q, V, X, D


@pytest.mark.parametrize("with_fext", [False, True], ids=["", "fext"])
def test_matches_pinocchio_central_differences(pair, with_fext):
    model, pm = pair
    q, v, a, fext = _state(model, pm, 2, with_fext)
    got = rnea_second_order_derivatives(model, q, v, a, fext)
    for x, r in zip(got, _pin_central(model, pm, q, v, a, fext, PIN_H)):
        assert rel_err(x, r) < PIN_TOL


def test_dM_dq_is_complex_step_of_crba(pair):
    model, pm = pair
    q, v, a, _ = _state(model, pm, 3, False)
    h = 1e-20
    E = np.eye(model.nv)
    Ms = rbd.crba(model, rbd.integrate(model, q.astype(complex), 1j * h * E))
    ref = np.transpose(Ms.imag / h, (1, 2, 0))
    assert rel_err(rnea_second_order_derivatives(model, q, v, a).dM_dq, ref) < CS_TOL


def test_external_forces_change_d2tau_dq2(pair):
    model, pm = pair
    q, v, a, fext = _state(model, pm, 4, True)
    with_f = rnea_second_order_derivatives(model, q, v, a, fext)
    without = rnea_second_order_derivatives(model, q, v, a)
    assert rel_err(with_f.d2tau_dq2, without.d2tau_dq2) > 1e-6
    for k in (1, 2, 3):                        # fext is constant in v and a
        assert rel_err(with_f[k], without[k]) < 1e-13


# ---- symmetries ------------------------------------------------------------------------

def _bracket(model, dtau_dq):
    """B[:, j, k] = dtau_dq @ [e_k, e_j] for dofs j, k of one multi-DoF joint (0 elsewhere):
    d/de_k of dtau/de_j at q exp(e) exp(e') minus the same with j and k exchanged is
    dtau_dq applied to the Lie bracket (BCH: exp(sA) exp(tB) = exp(sA + tB + st/2 [A, B]
    + ...)). Tangent coordinates: spherical w, bracket w_k x w_j; free-flyer [v, w],
    bracket crm(e_k) e_j."""
    nv = model.nv
    out = np.zeros((nv, nv, nv))
    for i in range(1, model.njoints):
        t, iv = int(model.joint_types[i]), int(model.idx_v[i])
        if t not in (SPHERICAL, FREE_FLYER):
            continue
        n = 3 if t == SPHERICAL else 6
        E = np.eye(6)
        for j in range(n):
            for k in range(n):
                if n == 3:
                    br = np.cross(E[k, :3], E[j, :3])
                else:
                    br = crm(E[k]) @ E[j]
                out[:, iv + j, iv + k] = dtau_dq[:, iv:iv + n] @ br
    return out


def test_symmetries(pair):
    model, pm = pair
    q, v, a, fext = _state(model, pm, 5, True)
    Q, V, X, D = rnea_second_order_derivatives(model, q, v, a, fext)
    scale = max(1.0, np.max(np.abs(Q)))
    assert np.max(np.abs(V - V.transpose(0, 2, 1))) < 1e-12 * max(1.0, np.max(np.abs(V)))
    assert np.max(np.abs(D - D.transpose(1, 0, 2))) < 1e-12 * max(1.0, np.max(np.abs(D)))
    dtau_dq = rbd.rnea_derivatives(model, q, v, a, fext).dtau_dq
    asym = Q - Q.transpose(0, 2, 1)
    assert np.max(np.abs(asym - _bracket(model, dtau_dq))) < 1e-11 * scale
    multi = any(t in (SPHERICAL, FREE_FLYER)
                for t in model.joint_types[1:])
    assert (np.max(np.abs(asym)) > 1e-6 * scale) == multi   # the bracket is no artefact


def test_zero_where_branches_do_not_meet():
    """Entries whose three dofs are not on one root-leaf path vanish, and the entry point
    writes every entry of the caller's (here NaN-filled) outputs."""
    model = rbd.models.random_tree(9, 7, floating_base=False)
    rng = np.random.default_rng(0)
    q = rbd.random_configuration(model, rng)
    v, a = rng.normal(size=(2, model.nv))
    anc = [set() for _ in range(model.njoints)]
    for i in range(1, model.njoints):
        anc[i] = anc[int(model.parents[i])] | {i}
    J = model.joint_of_dof
    on = np.array([[J[x] in anc[J[y]] or J[y] in anc[J[x]] for y in range(model.nv)]
                   for x in range(model.nv)])
    off = ~(on[:, :, None] & on[:, None, :] & on[None, :, :])
    assert off.any()
    out = np.full((4, model.nv, model.nv, model.nv), np.nan)
    cso.rnea_second_order_one(model.mi, model.mf, q, v, a, None, *out)
    assert not np.isnan(out).any()
    for T in out:
        assert np.all(T[off] == 0.0)
        assert np.any(T[~off] != 0.0)


# ---- numerical baselines ---------------------------------------------------------------

# Finite-Diff-2 (step eps^(1/3)): error ~ eps^(2/3) ~ 4e-11 times derivative-scale ratios;
# Finite-Diff-1 (step eps^(1/4)): error ~ eps^(1/2) ~ 1.5e-8 times the same ratios.
@pytest.mark.parametrize("method,tol", [("finite_difference", 1e-7),
                                        ("finite_difference_rnea", 1e-5)])
def test_finite_difference_methods(pair, method, tol):
    model, pm = pair
    q, v, a, fext = _state(model, pm, 6, True)
    ref = rnea_second_order_derivatives(model, q, v, a, fext)
    got = rnea_second_order_derivatives(model, q, v, a, fext, method=method)
    for x, r in zip(got, ref):
        assert x.shape == r.shape
        assert rel_err(x, r) < tol


# ---- API -------------------------------------------------------------------------------

@pytest.mark.parametrize("method", ["idsva", "complex_step"])
def test_batch_equals_loop(method):
    model = rbd.models.random_tree(7, 3, floating_base=True)
    rng = np.random.default_rng(0)
    B = 3
    q = rbd.random_configuration(model, rng, batch=B)
    v, a = rng.normal(size=(2, B, model.nv))
    fext = rng.normal(size=(B, model.njoints, 6))
    for f in (None, fext):
        batch = rnea_second_order_derivatives(model, q, v, a, f, method=method)
        for b in range(B):
            one = rnea_second_order_derivatives(model, q[b], v[b], a[b],
                                                None if f is None else f[b], method=method)
            for x, y in zip(batch, one):
                assert x.shape == (B,) + (model.nv,) * 3
                np.testing.assert_allclose(x[b], y, rtol=1e-13, atol=1e-11)


def test_outputs_are_new_arrays():
    model = rbd.models.random_tree(5, 0)
    q = rbd.neutral(model)
    z = np.ones(model.nv)
    first = rnea_second_order_derivatives(model, q, z, z)
    kept = [x.copy() for x in first]
    rnea_second_order_derivatives(model, q, 2 * z, z)
    for x, y in zip(first, kept):
        assert np.array_equal(x, y)


def test_float32_follows_dtype():
    """float32 inputs run the float32 kernels (complex ones compile from the same source:
    the first-order tests cover that route)."""
    model = rbd.models.random_tree(6, 2, floating_base=True)
    rng = np.random.default_rng(0)
    q = rbd.random_configuration(model, rng)
    v, a = rng.normal(size=(2, model.nv))
    ref = rnea_second_order_derivatives(model, q, v, a)
    d32 = rnea_second_order_derivatives(model, q.astype(np.float32), v.astype(np.float32),
                                        a.astype(np.float32))
    assert d32.d2tau_dq2.dtype == np.float32
    for x, r in zip(d32, ref):
        assert rel_err(x, r) < 1e-3


def test_unknown_method_raises():
    model = rbd.models.random_tree(4, 0)
    z = np.zeros(model.nv)
    with pytest.raises(ValueError, match="idsva.*complex_step.*finite_difference_rnea"):
        rnea_second_order_derivatives(model, rbd.neutral(model), z, z, method="autodiff")


@pytest.mark.parametrize("method", ["idsva", "complex_step", "finite_difference_rnea"])
def test_bad_input_explained(method):
    model = rbd.models.random_tree(6, 1, floating_base=True)
    q = rbd.neutral(model)
    q[3:7] = [1.0, 1.0, 0.0, 0.0]
    z = np.zeros(model.nv)
    with pytest.raises(ValueError, match="quaternion"):
        rnea_second_order_derivatives(model, q, z, z, method=method)
    with pytest.raises(ValueError, match="v contains NaN"):
        rnea_second_order_derivatives(model, rbd.neutral(model), np.full(model.nv, np.nan), z,
                                      method=method)
    with pytest.raises(ValueError, match="shape"):
        rnea_second_order_derivatives(model, rbd.neutral(model), z[:-1], z, method=method)
    with pytest.raises(ValueError, match="fext"):
        rnea_second_order_derivatives(model, rbd.neutral(model), z, z, np.zeros((2, 6)),
                                      method=method)
