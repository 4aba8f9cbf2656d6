"""rbdiff.torch's contact kinematics (frame_velocity, frame_acceleration, center_of_mass,
centroidal_momentum, potential_energy, kinetic_energy), and rbdiff.motion_partials (the
true first partials both front ends use): partials against the complex step of rbdiff's
complex128 NumPy functions on the manifold; torch values against the NumPy API;
torch.func Jacobians through integrate against the NumPy analytical derivatives;
torch.autograd.gradcheck (reverse and forward AD) in ambient coordinates; vmap, batches,
float32, second derivatives refused, bad input. Models: a random tree with a free flyer
and a spherical joint, and solo12 + free flyer at a foot frame."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
from torch.autograd import gradcheck, gradgradcheck  # noqa: E402
from torch.func import hessian, jacfwd, jacrev, vmap  # noqa: E402

import rbdiff as rbd  # noqa: E402
import rbdiff.torch as rt  # noqa: E402
from rbdiff import motion_partials as mp  # noqa: E402
from rbdiff.model import layout as L  # noqa: E402
from rbdiff.model.synthetic import random_tree  # noqa: E402
from rbdiff.model.tangent import normalised_blocks  # noqa: E402

T64 = torch.float64
REFS = ("local", "world", "local_world_aligned")
pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated")


def _tree():
    m = random_tree(4, np.random.default_rng(14), floating_base=True)
    assert {L.FREE_FLYER, L.SPHERICAL} <= {int(t) for t in m.joint_types[1:]}
    return m, m.frames[-1].name


MODELS = {"tree": _tree(), "solo12": (rbd.load_robot("solo12", floating_base=True),
                                      "FL_FOOT")}


def _state(m, seed=1, batch=None):
    rng = np.random.default_rng(seed)
    s = () if batch is None else (batch,)
    return (rbd.random_configuration(m, rng, batch=batch), rng.normal(size=s + (m.nv,)),
            rng.normal(size=s + (m.nv,)))


def _t(*xs, dtype=T64, requires_grad=False):
    return [torch.tensor(x, dtype=dtype, requires_grad=requires_grad) for x in xs]


def _np(x):
    return x.detach().numpy() if isinstance(x, torch.Tensor) else np.asarray(x)


def _near(x, y, rtol=1e-10, atol=1e-10):
    np.testing.assert_allclose(_np(x), _np(y), rtol=rtol, atol=atol)


def _off_manifold(m, q):
    q = q.copy()
    for k, n in normalised_blocks(m):
        q[..., k:k + n] *= 1.3
    return q


def _cases(m, frame):
    """(label, torch function of (q, v, a), NumPy value of (q, v, a), motion_partials of
    (q, v, a) -> (value, partial per input...), the inputs it takes (1, 2 or 3))."""
    out = []
    for ref in REFS:
        out.append((f"frame_velocity[{ref}]",
                    lambda q, v, a, ref=ref: rt.frame_velocity(m, q, v, frame, ref),
                    lambda q, v, a, ref=ref: rbd.frame_velocity(m, q, v, frame, ref),
                    lambda q, v, a, ref=ref: mp.frame_velocity(m, q, v, frame, ref), 2))
        for c in (False, True):
            out.append((f"frame_acceleration[{ref},{c}]",
                        lambda q, v, a, ref=ref, c=c: rt.frame_acceleration(m, q, v, a, frame,
                                                                             ref, c),
                        lambda q, v, a, ref=ref, c=c: rbd.frame_acceleration(m, q, v, a, frame,
                                                                              ref, c),
                        lambda q, v, a, ref=ref, c=c: mp.frame_acceleration(m, q, v, a, frame,
                                                                             ref, c), 3))
    out += [("center_of_mass", lambda q, v, a: rt.center_of_mass(m, q),
             lambda q, v, a: rbd.center_of_mass(m, q),
             lambda q, v, a: mp.center_of_mass(m, q), 1),
            ("centroidal_momentum", lambda q, v, a: rt.centroidal_momentum(m, q, v),
             lambda q, v, a: rbd.centroidal_momentum(m, q, v),
             lambda q, v, a: mp.centroidal_momentum(m, q, v), 2),
            ("potential_energy", lambda q, v, a: rt.potential_energy(m, q),
             lambda q, v, a: rbd.potential_energy(m, q),
             lambda q, v, a: mp.potential_energy(m, q), 1),
            ("kinetic_energy", lambda q, v, a: rt.kinetic_energy(m, q, v),
             lambda q, v, a: rbd.kinetic_energy(m, q, v),
             lambda q, v, a: mp.kinetic_energy(m, q, v), 2)]
    return out


def _complex_step(fn, m, q, v, a, n, h=1e-20):
    """d fn(q, v, a) / d(q (tangent), v, a)[:n] by complex step through rbdiff's complex128
    functions, q moved on the manifold (integrate)."""
    qc, cols = q.astype(complex), [[], [], []]
    for k in range(m.nv):
        e = np.zeros(m.nv)
        e[k] = h
        cols[0].append(np.imag(fn(rbd.integrate(m, qc, 1j * e), v + 0j, a + 0j)) / h)
        cols[1].append(np.imag(fn(qc, v + 1j * e, a + 0j)) / h)
        cols[2].append(np.imag(fn(qc, v + 0j, a + 1j * e)) / h)
    return [np.stack(c, -1) for c in cols[:n]]


@pytest.mark.parametrize("name", list(MODELS))
def test_motion_partials_against_complex_step(name):
    """The true partials (every reference, spatial and classical; LWA with the moving
    origin) equal the complex step of the returned values; a batch equals the loop."""
    m, frame = MODELS[name]
    q, v, a = _state(m)
    for label, _f, value, partials, n in _cases(m, frame):
        got = partials(q, v, a)
        _near(got[0], value(q, v, a))
        for k, (g, w) in enumerate(zip(got[1:], _complex_step(value, m, q, v, a, n))):
            scale = max(1.0, float(np.max(np.abs(w))))
            _near(g / scale, w / scale, 1e-12, 1e-12)
    Q, V, A = _state(m, seed=2, batch=3)
    for label, _f, _value, partials, n in _cases(m, frame):
        batch = partials(Q, V, A)
        for b in range(3):
            for x, y in zip(batch, partials(Q[b], V[b], A[b])):
                _near(x[b], y, 0, 0)


@pytest.mark.parametrize("name", list(MODELS))
def test_values_and_jacobians_through_integrate(name):
    """Values equal the NumPy API (off the manifold: at the retraction); jacfwd / jacrev of
    f(integrate(q, e), v, a) at e = 0 equal the analytical partials; a batch with two
    leading axes equals the NumPy batch."""
    m, frame = MODELS[name]
    q, v, a = _state(m)
    tq, tv, ta = _t(q, v, a)
    toff = _t(_off_manifold(m, q))[0]
    e0 = torch.zeros(m.nv, dtype=T64)
    for label, f, value, partials, n in _cases(m, frame):
        _near(f(tq, tv, ta), value(q, v, a))
        _near(f(toff, tv, ta), value(q, v, a))
        want = partials(q, v, a)[1:]
        for jac in (jacfwd, jacrev):
            J = jac(lambda e, v_, a_, f=f: f(rt.integrate(m, tq, e), v_, a_),
                    argnums=tuple(range(n)))(e0, tv, ta)
            for Jk, Wk in zip(J, want):
                scale = max(1.0, float(np.max(np.abs(Wk))))
                _near(Jk / scale, Wk / scale)
    Q, V, A = _state(m, seed=3, batch=6)
    TQ, TV, TA = (torch.tensor(x.reshape((2, 3, -1))) for x in (Q, V, A))
    for label, f, value, partials, n in _cases(m, frame):
        want = np.asarray(value(Q, V, A))
        _near(f(TQ, TV, TA), want.reshape((2, 3) + want.shape[1:]))


@pytest.mark.parametrize("name", list(MODELS))
def test_gradcheck_reverse_and_forward(name):
    """torch's finite differences in ambient q (off the manifold), v and a; a plain
    .backward() (NumPy fast path) equals autograd.grad's general rule."""
    m, frame = MODELS[name]
    q, v, a = _state(m, seed=4)
    q = _off_manifold(m, q)
    for label, f, _value, _p, n in _cases(m, frame):
        xs = _t(q, v, a, requires_grad=True)[:n]
        def g(*x, f=f):
            return f(*x, *_t(v, a)[len(x) - 1:])
        assert gradcheck(g, xs, check_forward_ad=True), label
        out = g(*xs)
        w = torch.linspace(-1, 1, out.numel(), dtype=T64).reshape(out.shape)
        general = torch.autograd.grad((out * w).sum(), xs, create_graph=True)
        (out * w).sum().backward()
        for x, gr in zip(xs, general):
            _near(x.grad, gr, 1e-13, 1e-13)


def test_potential_energy_second_order_and_others_refuse():
    m, frame = MODELS["tree"]
    q, v, a = _state(m, seed=5)
    tq, tv, ta = _t(q, v, a, requires_grad=True)
    assert gradgradcheck(lambda x: rt.potential_energy(m, x), (tq,))
    z = np.zeros(m.nv)
    G = jacfwd(lambda e: rt.gravity(m, rt.integrate(m, tq.detach(), e)))(
        torch.zeros(m.nv, dtype=T64))
    _near(G, rbd.rnea_derivatives(m, q, z, z).dtau_dq)
    for label, f, _value, _p, n in _cases(m, frame):
        if label == "potential_energy":
            continue
        xs = [tq, tv, ta][:n]
        out = f(tq, tv, ta)
        gs = torch.autograd.grad(out.sum(), xs, create_graph=True)
        with pytest.raises(RuntimeError, match="differentiable once"):
            torch.autograd.grad(sum(g.sum() for g in gs), xs)
        with pytest.raises(RuntimeError, match="differentiable once"):
            hessian(lambda x, f=f: f(x, tv.detach(), ta.detach()).sum())(tq.detach())


def test_vmap_is_one_batched_call(monkeypatch):
    m, frame = MODELS["solo12"]
    Q, V, A = _state(m, seed=6, batch=4)
    TQ, TV, TA = _t(Q, V, A)
    calls = []
    original = rbd.frame_acceleration_derivatives
    monkeypatch.setattr(rbd.frame_motion, "frame_acceleration_derivatives",
                        lambda *x, **k: calls.append(1) or original(*x, **k))
    f = lambda q, v, a: rt.frame_acceleration(m, q, v, a, frame, "local_world_aligned")
    J = vmap(jacrev(f, argnums=(0, 1, 2)))(TQ, TV, TA)
    assert len(calls) == 1
    for b in range(4):
        Jb = jacrev(f, argnums=(0, 1, 2))(TQ[b], TV[b], TA[b])
        for x, y in zip(J, Jb):
            _near(x[b], y, 1e-14, 1e-14)
    for label, g, value, _p, _n in _cases(m, frame):
        _near(vmap(g)(TQ, TV, TA), value(Q, V, A))


def test_float32():
    m, frame = MODELS["tree"]
    q, v, _a = _state(m, seed=7)
    tq, tv = _t(q, v, dtype=torch.float32, requires_grad=True)
    out = rt.frame_velocity(m, tq, tv, frame, "world")
    assert out.dtype == torch.float32
    _near(out, rbd.frame_velocity(m, q, v, frame, "world"), 1e-5, 1e-5)
    rt.kinetic_energy(m, tq, tv).backward()
    assert tv.grad.dtype == torch.float32
    _near(tv.grad, rbd.crba(m, q) @ v, 1e-5, 1e-4)


def test_bad_input():
    m, frame = MODELS["tree"]
    q, v, a = _state(m)
    tq, tv, ta = _t(q, v, a)
    with pytest.raises(ValueError, match="v: expected shape"):
        rt.frame_velocity(m, tq, tv[:-1], frame)
    with pytest.raises(TypeError, match="q: expected a torch.Tensor"):
        rt.center_of_mass(m, q)
    with pytest.raises(KeyError):
        rt.frame_velocity(m, tq, tv, "no such frame")
    with pytest.raises(ValueError, match="reference"):
        rt.frame_acceleration(m, tq, tv, ta, frame, "nowhere")
    with pytest.raises(TypeError, match="classical"):
        rt.frame_acceleration(m, tq, tv, ta, frame, classical=1)
    with pytest.raises(TypeError, match="frame"):
        rt.frame_velocity(m, tq, tv, 1.5)
    bad = tq.clone()
    bad[0] = float("nan")
    with pytest.raises(ValueError, match="NaN|nan|finite"):
        rt.potential_energy(m, bad)
