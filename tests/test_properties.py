"""Property tests on random trees (hypothesis): the physical identities hold for any tree,
any joint mix, any state."""

import numpy as np
from hypothesis import given, settings, strategies as st

import rbdiff as rbd

trees = st.builds(lambda n, seed, ff: rbd.models.random_tree(n, seed, floating_base=ff),
                  st.integers(1, 14), st.integers(0, 2**31 - 1), st.booleans())


@settings(max_examples=40, deadline=None)
@given(model=trees, seed=st.integers(0, 2**31 - 1))
def test_dynamics_identities(model, seed):
    rng = np.random.default_rng(seed)
    q = rbd.random_configuration(model, rng)
    v, tau = rng.normal(size=model.nv), rng.normal(size=model.nv) * 5
    M = rbd.crba(model, q)
    Minv = rbd.minverse(model, q)
    qdd = rbd.aba(model, q, v, tau)
    scale = max(1.0, np.abs(tau).max())
    assert np.abs(rbd.rnea(model, q, v, qdd) - tau).max() < 1e-9 * scale * np.linalg.cond(M)
    assert np.abs(M @ Minv - np.eye(model.nv)).max() < 1e-10 * np.linalg.cond(M)
    assert np.all(np.linalg.eigvalsh(M) > 0)                  # M is positive definite
    h = rbd.nonlinear_effects(model, q, v)
    assert np.allclose(M @ qdd + h, tau, rtol=0, atol=1e-9 * scale * np.linalg.cond(M))


@settings(max_examples=25, deadline=None)
@given(model=trees, seed=st.integers(0, 2**31 - 1))
def test_kinetic_energy_power_balance(model, seed):
    """Mdot - 2C is skew-symmetric, so v^T C(q, v) v = v^T Mdot v / 2; Mdot by central
    differences of CRBA along v on the manifold."""
    rng = np.random.default_rng(seed)
    q = rbd.random_configuration(model, rng)
    v = rng.normal(size=model.nv)
    g = rbd.gravity(model, q)
    c = rbd.nonlinear_effects(model, q, v) - g        # C(q, v) v
    h = 1e-6
    Mdot = (rbd.crba(model, rbd.integrate(model, q, h * v))
            - rbd.crba(model, rbd.integrate(model, q, -h * v))) / (2 * h)
    lhs, rhs = v @ c, 0.5 * v @ Mdot @ v
    assert abs(lhs - rhs) < 1e-5 * max(1.0, abs(rhs), np.abs(Mdot).max() * (v @ v))
