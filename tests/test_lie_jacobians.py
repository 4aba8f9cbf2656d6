"""rbd.integrate_jacobians, rbd.difference_jacobians and rbd.integrate_transport
(kernels/lie.py) against Pinocchio 4.1's dIntegrate, dDifference and dIntegrateTransport
on random trees with every joint type and on real robots; against the complex step
through rbdiff's own complex128 integrate / difference on the manifold; batches bit-equal
to loops; float32; refusals."""

import numpy as np
import pytest

import rbdiff as rbd
from conftest import robot_pair, tree_pair
from rbdiff.cpu import policy

pin = pytest.importorskip("pinocchio")

# (kind, seed or name, floating): trees hold revolute, prismatic, continuous, spherical
# and free-flyer joints
PAIRS = [("tree", 0, True), ("tree", 1, False), ("robot", "solo12", True),
         ("robot", "talos_full_v2", True), ("robot", "panda", False)]
_CACHE = {}


def _pair(key):
    if key not in _CACHE:
        kind, a, floating = key
        _CACHE[key] = tree_pair(a, 8, floating) if kind == "tree" else robot_pair(a, floating)
    return _CACHE[key]


@pytest.fixture(params=PAIRS, ids=lambda k: f"{k[1]}{'+ff' if k[2] else ''}")
def pair(request):
    return _pair(request.param)


def _states(pm, seed, scale=1.0):
    """q, v, q1: random configurations (Pinocchio's integrate from neutral, as DESIGN.md
    advises) and a velocity, v scaled by ``scale`` (small: the series branches)."""
    rng = np.random.default_rng(seed)
    q = pin.integrate(pm, pin.neutral(pm), rng.normal(size=pm.nv))
    v = scale * rng.normal(size=pm.nv)
    q1 = pin.integrate(pm, q, scale * rng.normal(size=pm.nv))
    return q, v, q1


def _close(ours, ref, tol=1e-10):
    ref = np.asarray(ref)
    assert ours.shape == ref.shape
    err = np.abs(ours - ref).max() / max(1.0, np.abs(ref).max())
    assert err <= tol, err


# v's scale: 1e-3 takes the series branches, 0 the identity, 2.5 rotations past pi (the
# differences wrap to the shortest arc)
@pytest.mark.parametrize("scale", [1.0, 1e-3, 0.0, 2.5])
def test_against_pinocchio(pair, scale):
    model, pm = pair
    q, v, q1 = _states(pm, 3, scale)
    ij = rbd.integrate_jacobians(model, q, v)
    assert isinstance(ij, rbd.results.IntegrateJacobians)
    _close(ij.dq, pin.dIntegrate(pm, q, v, pin.ARG0))
    _close(ij.dv, pin.dIntegrate(pm, q, v, pin.ARG1))
    dj = rbd.difference_jacobians(model, q, q1)
    _close(dj.dq0, pin.dDifference(pm, q, q1, pin.ARG0))
    _close(dj.dq1, pin.dDifference(pm, q, q1, pin.ARG1))
    J = np.random.default_rng(4).normal(size=(pm.nv, 5))
    for ours, theirs in (("q", pin.ARG0), ("v", pin.ARG1), (pin.ARG0, pin.ARG0)):
        _close(rbd.integrate_transport(model, q, v, J, ours),
               pin.dIntegrateTransport(pm, q, v, J, theirs))
    # transport is the Jacobian's product
    _close(rbd.integrate_transport(model, q, v, J, "v"), ij.dv @ J, 1e-13)


def _complex_columns(model, f, h=1e-30):
    """Columns k of d f(e) / d e at e = 0 by the complex step, f complex128 (nv,) -> (nv,)."""
    cols = []
    for k in range(model.nv):
        e = np.zeros(model.nv, complex)
        e[k] = 1j * h
        cols.append(f(e).imag / h)
    return np.array(cols).T


@pytest.mark.parametrize("key", [("tree", 0, True), ("tree", 2, True)])
@pytest.mark.parametrize("scale", [1.0, 1e-3, 2.5])
def test_complex_step_on_the_manifold(key, scale):
    """Each Jacobian against the identity it claims, through rbdiff's complex128
    integrate / difference: d/de difference(q', q' moved by e) in the tangent space at
    q' = integrate(q, v)."""
    model, pm = _pair(key)
    q, v, q1 = _states(pm, 5, scale)
    qc, vc, q1c = q.astype(complex), v.astype(complex), q1.astype(complex)
    qn = rbd.integrate(model, qc, vc)

    def integ(a, b):
        return rbd.integrate(model, a, b)

    def diff(a, b):
        return rbd.difference(model, a, b)

    ij = rbd.integrate_jacobians(model, q, v)
    _close(ij.dv, _complex_columns(model, lambda e: diff(qn, integ(qc, vc + e))), 1e-12)
    _close(ij.dq, _complex_columns(model, lambda e: diff(qn, integ(integ(qc, e), vc))), 1e-12)
    dj = rbd.difference_jacobians(model, q, q1)
    _close(dj.dq0, _complex_columns(model, lambda e: diff(integ(qc, e), q1c)), 1e-12)
    _close(dj.dq1, _complex_columns(model, lambda e: diff(qc, integ(q1c, e))), 1e-12)


def test_complex128_and_float32():
    """complex128 inputs with a zero imaginary part reproduce float64; float32 stays
    float32 and close."""
    model, pm = _pair(("tree", 0, True))
    q, v, q1 = _states(pm, 6)
    J = np.random.default_rng(7).normal(size=(pm.nv, 3))
    ref = (*rbd.integrate_jacobians(model, q, v), *rbd.difference_jacobians(model, q, q1),
           rbd.integrate_transport(model, q, v, J, "v"))
    for dtype, tol in ((np.complex128, 1e-14), (np.float32, 2e-5)):
        c = lambda x: x.astype(dtype)     # noqa: E731
        got = (*rbd.integrate_jacobians(model, c(q), c(v)),
               *rbd.difference_jacobians(model, c(q), c(q1)),
               rbd.integrate_transport(model, c(q), c(v), c(J), "v"))
        for g, r in zip(got, ref):
            assert g.dtype == dtype
            _close(g, r, tol)
    # float32 configurations carry unit quaternions to float32 precision only
    assert rbd.integrate_transport(model, q.astype(np.float32), v, J, "q").dtype == np.float64


@pytest.mark.parametrize("key", [("tree", 0, True), ("robot", "solo12", True)])
def test_batches_equal_loops(key):
    model, pm = _pair(key)
    B = 4
    states = [_states(pm, 10 + b) for b in range(B)]
    q, v, q1 = (np.array(x) for x in zip(*states))
    J = np.random.default_rng(8).normal(size=(B, pm.nv, 3))
    calls = [(rbd.integrate_jacobians, (q, v), {}),
             (rbd.difference_jacobians, (q, q1), {}),
             (rbd.integrate_transport, (q, v, J), {"argument": "q"}),
             (rbd.integrate_transport, (q, v, J), {"argument": "v"})]
    for fn, args, kw in calls:
        looped = [fn(model, *(x[b] for x in args), **kw) for b in range(B)]
        for mode in ("serial", "parallel"):
            with policy.forced(mode):
                got = fn(model, *args, **kw)
            if isinstance(got, tuple):
                for g, k in zip(got, zip(*looped)):
                    np.testing.assert_array_equal(g, np.stack(k))
            else:
                np.testing.assert_array_equal(got, np.stack(looped))


def test_bad_input():
    model, pm = _pair(("tree", 0, True))
    q, v, q1 = _states(pm, 9)
    J = np.ones((pm.nv, 2))
    free = [i for i in range(1, model.njoints) if model.joint_types[i] == 4][0]
    bad = q.copy()
    bad[model.idx_q[free] + 3:model.idx_q[free] + 7] *= 1.1
    with pytest.raises(ValueError, match="quaternion"):
        rbd.integrate_jacobians(model, bad, v)
    with pytest.raises(ValueError, match="q1: the quaternion"):
        rbd.difference_jacobians(model, q, bad)
    with pytest.raises(ValueError, match="quaternion"):
        rbd.integrate_transport(model, bad, v, J)
    nan = v.copy()
    nan[2] = np.nan
    with pytest.raises(ValueError, match="v contains NaN"):
        rbd.integrate_jacobians(model, q, nan)
    with pytest.raises(ValueError, match="NaN"):
        rbd.integrate_transport(model, q, nan, J)
    with pytest.raises(ValueError, match="J contains NaN"):
        rbd.integrate_transport(model, q, v, np.full((pm.nv, 2), np.nan))
    with pytest.raises(ValueError, match="shape"):
        rbd.integrate_jacobians(model, q, v[:-1])
    with pytest.raises(ValueError, match="shape"):
        rbd.difference_jacobians(model, q[:-1], q1)
    with pytest.raises(ValueError, match="J: expected shape"):
        rbd.integrate_transport(model, q, v, np.ones((pm.nv + 1, 2)))
    with pytest.raises(ValueError, match="J: expected shape"):
        rbd.integrate_transport(model, q, v, np.ones((2, pm.nv, 2)))
    with pytest.raises(ValueError, match="argument"):
        rbd.integrate_transport(model, q, v, J, "a")
    with pytest.raises(ValueError, match="batch size"):      # equal batch axes required
        rbd.integrate_jacobians(model, np.array([q, q]), np.array([v, v, v]))
    with pytest.raises(ValueError, match="mixes single and batched"):
        rbd.difference_jacobians(model, np.array([q, q]), q1)
