"""Second-order derivatives contracted with a costate (rbdiff.contraction): equal to the
IDSVA-SO / FDSVA-SO tensors contracted with lam, and to the complex step of rbdiff's own
complex128 first-order derivatives contracted with lam along tangent directions; every
joint type, floating bases, external forces; batches bit-equal to loops, float32,
complex128 and bad input."""

import numpy as np
import pytest

import rbdiff as rbd
from conftest import random_state, rel_err, robot_pair, tree_pair
from rbdiff.cpu import contraction as cc
from rbdiff.cpu import policy

TOL = 1e-10
CS_H = 1e-30        # complex step: no subtractive cancellation, exact to rounding


def _setup(name, seed=0, fext=False):
    if name.startswith("tree"):
        model, pm = tree_pair(int(name[4:]), n=9, floating=int(name[4:]) % 2 == 0)
    else:
        model, pm = robot_pair(name, name == "solo12")
    rng = np.random.default_rng(seed)
    q, v, u = random_state(pm, rng)
    q = rbd.integrate(model, rbd.neutral(model), rng.normal(size=model.nv))
    lam = rng.normal(size=model.nv)
    f = rng.normal(size=(model.njoints, 6)) if fext else None
    return model, q, v, u, lam, f


def _contract(lam, tensors):
    return [np.einsum("i,ijk->jk", lam, t) for t in tensors]


# trees 0 and 2 have a free-flyer base, 1 and 3 fixed ones; with every joint type
# (spherical, planar, prismatic, continuous...) along their branches
CASES = [("tree0", False), ("tree1", True), ("tree2", True), ("tree3", False),
         ("iiwa14", False), ("solo12", True)]


@pytest.mark.parametrize("name,fext", CASES)
def test_rnea_equals_contracted_tensors(name, fext):
    model, q, v, a, lam, f = _setup(name, fext=fext)
    got = rbd.rnea_second_order_contraction(model, q, v, a, lam, f)
    ref = _contract(lam, rbd.rnea_second_order_derivatives(model, q, v, a, f))
    assert type(got).__name__ == "RNEASecondOrderContraction"
    for g, r in zip(got, ref):
        assert g.shape == (model.nv, model.nv)
        assert rel_err(g, r) < TOL


@pytest.mark.parametrize("name,fext", CASES)
def test_aba_equals_contracted_tensors(name, fext):
    model, q, v, tau, lam, f = _setup(name, seed=1, fext=fext)
    got = rbd.aba_second_order_contraction(model, q, v, tau, lam, f)
    ref = _contract(lam, rbd.aba_second_order_derivatives(model, q, v, tau, f))
    assert type(got).__name__ == "ABASecondOrderContraction"
    for g, r in zip(got, ref):
        assert rel_err(g, r) < TOL


def _world_armature_model():
    """A free-flyer tree with armature everywhere and MuJoCo's world-frame linear armature
    on its free flyer (a velocity product b(v) in ID: test_armature.py)."""
    model = rbd.models.random_tree(7, 2, floating_base=True)
    arm = np.random.default_rng(11).uniform(0.05, 0.5, model.nv)
    arm[:3] = 0.4
    flags = np.zeros(model.njoints, bool)
    flags[1] = True
    return model.with_armature(arm, flags)


@pytest.mark.parametrize("model", [_world_armature_model(), rbd.models.serial_chain(1),
                                   rbd.models.serial_chain(2)],
                         ids=["world armature", "chain 1", "chain 2"])
def test_armature_and_tiny_models(model):
    rng = np.random.default_rng(4)
    q = rbd.random_configuration(model, rng)
    v, u, lam = rng.normal(size=(3, model.nv))
    for contraction, tensors in ((rbd.rnea_second_order_contraction,
                                  rbd.rnea_second_order_derivatives),
                                 (rbd.aba_second_order_contraction,
                                  rbd.aba_second_order_derivatives)):
        got = contraction(model, q, v, u, lam)
        for g, r in zip(got, _contract(lam, tensors(model, q, v, u))):
            assert rel_err(g, r) < TOL


def _complex_step(model, first_order, q, v, u, lam, f):
    """The four contractions by the complex step of lam^T (first-order derivatives), on
    complex128, along each tangent direction of q and each direction of v:
    [j, k] = d/dx_k (lam^T d/dy_j), as the tensors' index order."""
    nv, h = model.nv, CS_H
    E = np.eye(nv)
    qs = np.concatenate([rbd.integrate(model, q.astype(complex), 1j * h * E),
                         np.broadcast_to(q.astype(complex), (nv, model.nq))])
    vs = np.concatenate([np.broadcast_to(v, (nv, nv)), v + 1j * h * E]).astype(complex)
    us = np.broadcast_to(u, (2 * nv, nv)).astype(complex)
    fs = None if f is None else np.broadcast_to(f, (2 * nv,) + f.shape).astype(complex)
    d_q, d_v, d_u = (np.einsum("i,bij->jb", lam, x.imag / h)
                     for x in first_order(model, qs, vs, us, fs))
    # columns 0..nv-1: steps along q; nv..2nv-1: along v
    return d_q[:, :nv], d_v[:, nv:], d_q[:, nv:], d_u[:, :nv]


@pytest.mark.parametrize("name,fext", [("tree0", True), ("tree1", False), ("tree2", False)])
def test_equals_complex_step_of_first_order(name, fext):
    model, q, v, u, lam, f = _setup(name, seed=2, fext=fext)
    for contraction, first_order in ((rbd.rnea_second_order_contraction, rbd.rnea_derivatives),
                                     (rbd.aba_second_order_contraction, rbd.aba_derivatives)):
        got = contraction(model, q, v, u, lam, f)
        ref = _complex_step(model, first_order, q, v, u, lam, f)
        for g, r in zip(got, ref):
            assert rel_err(g, r) < 1e-9


def test_hessian_symmetries():
    """d2P/dv2 is symmetric; the dM_dq contraction with a unit costate e_i is dM/dq's
    slice i."""
    model, q, v, a, lam, _ = _setup("tree1")       # fixed base: no free flyer
    got = rbd.rnea_second_order_contraction(model, q, v, a, lam)
    np.testing.assert_allclose(got.d2tau_dv2, got.d2tau_dv2.T, atol=1e-12)
    T = rbd.rnea_second_order_derivatives(model, q, v, a)
    e = np.zeros(model.nv)
    e[model.nv - 1] = 1.0
    one = rbd.rnea_second_order_contraction(model, q, v, a, e)
    np.testing.assert_array_almost_equal(one.dM_dq, T.dM_dq[model.nv - 1], decimal=12)


@pytest.mark.parametrize("fn", ["rnea", "aba"])
def test_batch_bit_equal_to_loop(fn):
    public = getattr(rbd, f"{fn}_second_order_contraction")
    model = rbd.models.random_tree(7, 3, floating_base=True)
    rng = np.random.default_rng(0)
    B = 4
    q = rbd.random_configuration(model, rng, batch=B)
    v, u, lam = rng.normal(size=(3, B, model.nv))
    fext = rng.normal(size=(B, model.njoints, 6))
    for f in (None, fext):
        loop = [public(model, q[b], v[b], u[b], lam[b], None if f is None else f[b])
                for b in range(B)]
        for mode in ("serial", "parallel"):
            with policy.forced(mode):
                batch = public(model, q, v, u, lam, f)
            for k in range(4):
                assert batch[k].shape == (B, model.nv, model.nv)
                for b in range(B):
                    np.testing.assert_array_equal(batch[k][b], loop[b][k])


def test_float32_and_complex128():
    model, q, v, u, lam, _ = _setup("tree2")
    for fn in (rbd.rnea_second_order_contraction, rbd.aba_second_order_contraction):
        ref = fn(model, q, v, u, lam)
        got = fn(model, *(x.astype(np.float32) for x in (q, v, u, lam)))
        for g, r in zip(got, ref):
            assert g.dtype == np.float32
            assert rel_err(g, r) < 1e-3
        got = fn(model, *(x.astype(complex) for x in (q, v, u, lam)))
        for g, r in zip(got, ref):
            assert g.dtype == np.complex128
            assert rel_err(g.real, r) < 1e-13 and not g.imag.any()


@pytest.mark.parametrize("fn", ["rnea", "aba"])
def test_bad_input_refused(fn):
    public = getattr(rbd, f"{fn}_second_order_contraction")
    model = rbd.models.random_tree(5, 1, floating_base=True)
    q = rbd.neutral(model)
    z = np.zeros(model.nv)
    with pytest.raises(ValueError, match="^lam: expected shape"):
        public(model, q, z, z, z[:-1])
    with pytest.raises(ValueError, match="lam contains NaN"):
        public(model, q, z, z, np.full(model.nv, np.nan))
    with pytest.raises(ValueError, match="lam"):
        public(model, np.stack([q, q]), np.zeros((2, model.nv)), np.zeros((2, model.nv)),
               np.zeros((3, model.nv)))
    bad = q.copy()
    bad[3:7] = [1.0, 1.0, 0.0, 0.0]
    with pytest.raises(ValueError, match="quaternion"):
        public(model, bad, z, z, z)
    with pytest.raises(ValueError, match="fext"):
        public(model, q, z, z, z, np.zeros((2, 6)))


def test_entries_refuse_wrong_costate_length():
    """The compiled entries check lam themselves (a caller that skips the api layer)."""
    model = rbd.models.random_tree(4, 0)
    q, z = rbd.neutral(model), np.zeros(model.nv)
    out = [np.empty((model.nv, model.nv)) for _ in range(4)]
    with pytest.raises(ValueError):
        cc.rnea_contraction_one(model.mi, model.mf, q, z, z, z[:-1], None, *out)
