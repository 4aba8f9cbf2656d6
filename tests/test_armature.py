"""Armature (rotor inertia) as Pinocchio's model.armature: against Pinocchio for every
function that sees it, batches equal loops, second order against complex step."""

import numpy as np
import pinocchio as pin
import pytest

import rbdiff as rbd
from conftest import _pair, full, pin_fext, random_state, rel_err
from rbdiff.cpu import policy
from rbdiff.model import layout as L

KEYS = [("robot", "iiwa14", False), ("robot", "hyq", True), ("tree", 0, True),
        ("tree", 1, False)]


def _with_armature(key, seed=7):
    model, pm = _pair(key)
    arm = np.random.default_rng(seed).uniform(0.01, 0.5, model.nv)
    pm = pin.Model(pm)
    pm.armature = arm
    return model.with_armature(arm), pm, model


@pytest.mark.parametrize("key", KEYS, ids=lambda k: f"{k[1]}{'+ff' if k[2] else ''}")
def test_against_pinocchio(key):
    model, pm, bare = _with_armature(key)     # bare: pin_fext knows its bridged twin
    pd = pm.createData()
    rng = np.random.default_rng(3)
    q, v, a = random_state(pm, rng)
    fext = rng.normal(size=(model.njoints, 6))
    tau = rbd.rnea(model, q, v, a, fext)
    tol = 1e-11
    assert rel_err(tau, pin.rnea(pm, pd, q, v, a, pin_fext(bare, fext))) < tol
    assert rel_err(rbd.crba(model, q), full(pin.crba(pm, pd, q))) < tol
    assert rel_err(rbd.aba(model, q, v, tau, fext),
                   pin.aba(pm, pd, q, v, tau, pin_fext(bare, fext))) < tol
    assert rel_err(rbd.minverse(model, q), full(pin.computeMinverse(pm, pd, q))) < tol
    ref = pin.computeRNEADerivatives(pm, pd, q, v, a)
    for method in ("idsva", "chain_rule"):
        got = rbd.rnea_derivatives(model, q, v, a, method=method)
        for x, y in zip(got, (ref[0], ref[1], full(ref[2]))):
            assert rel_err(x, y) < tol, method
    ref = pin.computeABADerivatives(pm, pd, q, v, tau)
    for method, product in (("idsva", "dmm"), ("idsva", "aza"), ("chain_rule", "dmm")):
        got = rbd.aba_derivatives(model, q, v, tau, method=method, product=product)
        for x, y in zip(got, (ref[0], ref[1], full(ref[2]))):
            assert rel_err(x, y) < 1e-9, (method, product)


@pytest.mark.parametrize("key", KEYS[1:3], ids=lambda k: f"{k[1]}{'+ff' if k[2] else ''}")
def test_second_order(key):
    """d2tau and dM/dq do not see a constant armature; FDSVA-SO (every route) equals the
    complex-step derivatives of aba_derivatives on the armature model."""
    model, pm, bare = _with_armature(key)
    rng = np.random.default_rng(4)
    q, v, a = random_state(pm, rng)
    for x, y in zip(rbd.rnea_second_order_derivatives(model, q, v, a),
                    rbd.rnea_second_order_derivatives(bare, q, v, a)):
        np.testing.assert_array_equal(x, y)
    tau = rbd.rnea(model, q, v, a)
    ref = rbd.aba_second_order_derivatives(model, q, v, tau, method="complex_step")
    assert rel_err(ref[0], rbd.aba_second_order_derivatives(bare, q, v, tau,
                                                            method="complex_step")[0]) > 1e-6
    for inner in ("dtm", "idfoza"):
        for outer in ("dense", "aza"):
            got = rbd.aba_second_order_derivatives(model, q, v, tau, inner=inner, outer=outer)
            for x, y in zip(got, ref):
                assert rel_err(x, y) < 1e-8, (inner, outer)


@pytest.mark.parametrize("mode", ["serial", "parallel"])
def test_batches_equal_loops(mode):
    model, pm, _ = _with_armature(KEYS[2])
    rng = np.random.default_rng(5)
    Q = rbd.random_configuration(model, rng, batch=5)
    V, T = rng.normal(size=(5, model.nv)), rng.normal(size=(5, model.nv))
    with policy.forced(mode):
        for fn, args in ((rbd.rnea, (Q, V, T)), (rbd.aba, (Q, V, T)), (rbd.crba, (Q,)),
                         (rbd.minverse, (Q,)), (rbd.aba_derivatives, (Q, V, T)),
                         (rbd.rnea_derivatives, (Q, V, T))):
            batched = fn(model, *args)
            for b in range(5):
                single = fn(model, *(x[b] for x in args))
                for x, y in zip(batched if isinstance(batched, tuple) else (batched,),
                                single if isinstance(single, tuple) else (single,)):
                    np.testing.assert_array_equal(x[b], y)


def test_setting_armature():
    b = rbd.ModelBuilder()
    j = b.add_joint(0, "revolute", "motor", axis=[0, 0, 1], armature=0.2)
    b.add_joint(j, "spherical", "ball", armature=[0.1, 0.2, 0.3])   # a massless ball
    b.append_body(j, mass=1.0, com=[0.1, 0, 0], inertia=np.eye(3) * 0.01)
    model = b.build()                     # its rotors carry inertia: M is regular
    np.testing.assert_array_equal(model.armature, [0.2, 0.1, 0.2, 0.3])
    q = rbd.neutral(model)
    M = rbd.crba(model, q)
    assert np.all(np.linalg.eigvalsh(M) > 0)
    np.testing.assert_allclose(np.diag(rbd.crba(model.with_armature(0.0), q))
                               + model.armature, np.diag(M), rtol=0, atol=1e-15)
    assert np.all(rbd.load_robot("iiwa14").armature == 0)
    for bad in (-0.1, [0.1, 0.2], np.nan):
        with pytest.raises(ValueError, match="armature: expected 4 finite non-negative"):
            model.with_armature(bad)
    with pytest.raises(AttributeError):
        model.armature = np.ones(4)
    for bad in (-1.0, [0.1, 0.2], np.inf, "x"):
        with pytest.raises(ValueError, match="joint 'ball2': armature must be a finite"):
            b.add_joint(j, "spherical", "ball2", armature=bad)


# ---- MuJoCo's free-joint armature (Model.armature_world) ---------------------------------

def _world_armature_model(seed=11):
    """A random tree on a free flyer with armature everywhere, its free flyer's linear
    armature in MuJoCo's convention (one value on x, y, z), and its Pinocchio twin."""
    model = rbd.models.random_tree(7, 2, floating_base=True)
    arm = np.random.default_rng(seed).uniform(0.05, 0.5, model.nv)
    arm[:3] = 0.4
    flags = np.zeros(model.njoints, bool)
    flags[1] = True
    assert model.joint_type_name(1) == "free_flyer"
    return model.with_armature(arm, flags), model.with_armature(arm)


def _state(model, seed):
    rng = np.random.default_rng(seed)
    return (rbd.random_configuration(model, rng), 2 * rng.normal(size=model.nv),
            rng.normal(size=model.nv))


def test_world_armature_dynamics():
    """rnea adds armature (w x v_lin) to the free flyer's linear rows and nothing else;
    nonlinear_effects is rnea at a = 0, aba its inverse; crba and minverse unchanged."""
    model, bare = _world_armature_model()
    q, v, a = _state(model, 1)
    b = np.zeros(model.nv)
    b[:3] = 0.4 * np.cross(v[3:6], v[:3])
    tau = rbd.rnea(model, q, v, a)
    np.testing.assert_allclose(tau - rbd.rnea(bare, q, v, a), b, rtol=0, atol=1e-12)
    np.testing.assert_allclose(rbd.nonlinear_effects(model, q, v),
                               rbd.rnea(model, q, v, np.zeros(model.nv)), rtol=0, atol=1e-12)
    assert rel_err(rbd.aba(model, q, v, tau), a) < 1e-12
    assert rel_err(rbd.aba(model, q, v, tau + b), rbd.aba(bare, q, v, tau + b)) > 1e-6
    np.testing.assert_array_equal(rbd.crba(model, q), rbd.crba(bare, q))
    np.testing.assert_array_equal(rbd.minverse(model, q), rbd.minverse(bare, q))


def test_world_armature_first_order():
    """Every first-order route against complex step through rnea / aba (complex128)."""
    model, bare = _world_armature_model()
    q, v, a = _state(model, 2)
    ref = rbd.rnea_derivatives(model, q, v, a, method="complex_step")
    assert rel_err(rbd.rnea_derivatives(bare, q, v, a)[1], ref[1]) > 1e-6
    for method in ("idsva", "chain_rule"):
        for x, y in zip(rbd.rnea_derivatives(model, q, v, a, method=method), ref):
            assert rel_err(x, y) < 1e-12, method
    tau = rbd.rnea(model, q, v, a)
    ref = rbd.aba_derivatives(model, q, v, tau, method="complex_step")
    for method in ("idsva", "chain_rule"):
        for product in ("dmm", "aza"):
            got = rbd.aba_derivatives(model, q, v, tau, method=method, product=product)
            for x, y in zip(got, ref):
                assert rel_err(x, y) < 1e-10, (method, product)


def test_world_armature_second_order():
    """IDSVA-SO against central second differences of rnea (independent of the analytical
    first order) and complex step through it; FDSVA-SO (every route) against complex step
    through aba_derivatives."""
    model, bare = _world_armature_model()
    q, v, a = _state(model, 3)
    got = rbd.rnea_second_order_derivatives(model, q, v, a)
    assert rel_err(rbd.rnea_second_order_derivatives(bare, q, v, a)[1], got[1]) > 1e-3
    for method, tol in (("complex_step", 1e-12), ("finite_difference", 1e-6)):
        ref = rbd.rnea_second_order_derivatives(model, q, v, a, method=method)
        for x, y in zip(got, ref):
            assert rel_err(x, y) < tol, method
    tau = rbd.rnea(model, q, v, a)
    ref = rbd.aba_second_order_derivatives(model, q, v, tau, method="complex_step")
    for inner in ("dtm", "idfoza"):
        for outer in ("dense", "aza"):
            got = rbd.aba_second_order_derivatives(model, q, v, tau, inner=inner, outer=outer)
            for x, y in zip(got, ref):
                assert rel_err(x, y) < 1e-9, (inner, outer)


@pytest.mark.parametrize("mode", ["serial", "parallel"])
def test_world_armature_batches_equal_loops(mode):
    model, _ = _world_armature_model()
    rng = np.random.default_rng(5)
    Q = rbd.random_configuration(model, rng, batch=4)
    V, T = rng.normal(size=(4, model.nv)), rng.normal(size=(4, model.nv))
    with policy.forced(mode):
        for fn, args in ((rbd.rnea, (Q, V, T)), (rbd.aba, (Q, V, T)),
                         (rbd.nonlinear_effects, (Q, V)), (rbd.aba_derivatives, (Q, V, T)),
                         (rbd.rnea_derivatives, (Q, V, T))):
            batched = fn(model, *args)
            for b in range(4):
                single = fn(model, *(x[b] for x in args))
                for x, y in zip(batched if isinstance(batched, tuple) else (batched,),
                                single if isinstance(single, tuple) else (single,)):
                    np.testing.assert_array_equal(x[b], y)


def test_setting_armature_world():
    model, bare = _world_armature_model()
    np.testing.assert_array_equal(model.armature_world,
                                  [False, True] + [False] * (model.njoints - 2))
    assert model.mi[0, L.MI_ARM_WORLD] == 1 and model.mi[1, L.MI_ARM_WORLD] == 1
    assert not bare.armature_world.any() and bare.mi[0, L.MI_ARM_WORLD] == 0
    assert not rbd.load_robot("iiwa14").armature_world.any()
    assert model.with_armature(0.2).armature_world[1]         # kept
    with pytest.raises(ValueError, match="equal on x, y and z"):
        model.with_armature(np.arange(model.nv) * 0.1)
    with pytest.raises(ValueError, match="free-flyer joints only"):
        bare.with_armature(0.1, np.arange(model.njoints) == 3)     # a revolute joint
    b = rbd.ModelBuilder()
    j = b.add_joint(0, "free_flyer", "base", armature=[0.1] * 3 + [0.2] * 3,
                    armature_world=True)
    b.append_body(j, mass=1.0, com=[0.1, 0, 0], inertia=np.eye(3) * 0.01)
    np.testing.assert_array_equal(b.build().armature_world, [False, True])
    for kind, arm in (("revolute", 0.1), ("free_flyer", [0.1, 0.2, 0.1, 0, 0, 0])):
        with pytest.raises(ValueError, match="armature_world needs a free flyer"):
            b.add_joint(j, kind, "x", armature=arm, armature_world=True)
