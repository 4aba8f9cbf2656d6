"""rbdiff.torch.contact_dynamics: values equal the NumPy API; Jacobians (torch.func,
through rt.integrate for q) equal rbd.contact_dynamics_derivatives; gradcheck (reverse
and forward AD) in ambient coordinates; the graph-free backward; vmap and batches;
float32; a second derivative and bad input refused. solo12 + free flyer on its four
feet (3D, LOCAL_WORLD_ALIGNED, Baumgarte gains)."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
from torch.autograd import gradcheck  # noqa: E402
from torch.func import jacfwd, jacrev, vmap  # noqa: E402

import rbdiff as rbd  # noqa: E402
import rbdiff.torch as rt  # noqa: E402
from rbdiff.torch._function import retract  # noqa: E402

T64 = torch.float64
MODEL = rbd.load_robot("solo12", floating_base=True)
FEET = ("FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT")
CS = tuple(rbd.Contact(f, "3d", "local_world_aligned", gains=(2.0, 1.0),
                       placement=np.eye(4)) for f in FEET)
pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated")


def _state(seed=1, batch=None):
    rng = np.random.default_rng(seed)
    s = () if batch is None else (batch,)
    return (rbd.random_configuration(MODEL, rng, batch=batch),
            rng.normal(size=s + (MODEL.nv,)), rng.normal(size=s + (MODEL.nv,)))


def _near(x, y, tol=1e-10):
    x, y = (z.detach().numpy() if isinstance(z, torch.Tensor) else np.asarray(z)
            for z in (x, y))
    assert np.max(np.abs(x - y)) <= tol * max(1.0, np.max(np.abs(y)))


def test_values_and_jacobians_equal_numpy():
    q, v, tau = _state()
    Q, V, U = (torch.tensor(x) for x in (q, v, tau))
    out = rt.contact_dynamics(MODEL, Q, V, U, CS)
    ref = rbd.contact_dynamics(MODEL, retract(MODEL, q), v, tau, CS)
    assert isinstance(out, rbd.results.ContactDynamics)
    # bit-equal at the retracted q (the quaternion divided by its norm again: an ulp)
    assert torch.equal(out.qdd, torch.tensor(ref.qdd))
    assert torch.equal(out.forces, torch.tensor(ref.forces))
    d = rbd.contact_dynamics_derivatives(MODEL, q, v, tau, CS)

    def through(dq, v, tau):       # q moved on the manifold: tangent derivatives
        return tuple(rt.contact_dynamics(MODEL, rt.integrate(MODEL, Q, dq), v, tau, CS))

    z = torch.zeros(MODEL.nv, dtype=T64)
    for jac in (jacrev, jacfwd):
        (qq, qv, qt), (fq, fv, ft) = jac(through, argnums=(0, 1, 2))(z, V, U)
        for ours, theirs in zip((qq, qv, qt, fq, fv, ft), d):
            _near(ours, theirs)


def test_gradcheck_ambient_and_graph_free_backward():
    q, v, tau = _state(2)
    xs = [torch.tensor(x, requires_grad=True) for x in (q, v, tau)]

    def f(q, v, tau):
        return tuple(rt.contact_dynamics(MODEL, q, v, tau, CS))

    assert gradcheck(f, xs, check_forward_ad=True, check_backward_ad=True)
    # plain .backward() (NumPy contraction) against the analytical blocks
    w = torch.tensor(np.random.default_rng(3).normal(size=MODEL.nv + 12))
    qdd, forces = f(*xs)
    (w[:MODEL.nv] @ qdd + w[MODEL.nv:] @ forces).backward()
    d = rbd.contact_dynamics_derivatives(MODEL, q, v, tau, CS)
    wn = w.numpy()
    _near(xs[1].grad, wn[:MODEL.nv] @ d.dqdd_dv + wn[MODEL.nv:] @ d.dforces_dv)
    _near(xs[2].grad, wn[:MODEL.nv] @ d.dqdd_dtau + wn[MODEL.nv:] @ d.dforces_dtau)
    # the q gradient (NumPy closed-form pull-back) equals the torch-op route's
    qdd, forces = f(*xs)
    g = torch.autograd.grad(w[:MODEL.nv] @ qdd + w[MODEL.nv:] @ forces, xs[0],
                            create_graph=True)[0]
    _near(g, xs[0].grad)


def test_batches_vmap_float32_and_refusals():
    q, v, tau = _state(4, batch=3)
    Q, V, U = (torch.tensor(x) for x in (q, v, tau))
    ref = rbd.contact_dynamics(MODEL, retract(MODEL, q), v, tau, CS)
    out = rt.contact_dynamics(MODEL, Q, V, U, CS)
    assert out.forces.shape == (3, 12)
    assert torch.equal(out.qdd, torch.tensor(ref.qdd))
    vm = vmap(lambda a, b, c: tuple(rt.contact_dynamics(MODEL, a, b, c, CS)))(Q, V, U)
    assert torch.equal(vm[1], out.forces)
    jb = vmap(jacrev(lambda c, a, b: rt.contact_dynamics(MODEL, a, b, c, CS).forces))(U, Q, V)
    _near(jb, rbd.contact_dynamics_derivatives(MODEL, q, v, tau, CS).dforces_dtau)
    o32 = rt.contact_dynamics(MODEL, *(x.float() for x in (Q, V, U)), CS)
    assert o32.qdd.dtype == torch.float32
    _near(o32.forces.double(), ref.forces, 1e-4)
    x = [torch.tensor(a, requires_grad=True) for a in _state(5)]
    qdd = rt.contact_dynamics(MODEL, *x, CS).qdd
    (g,) = torch.autograd.grad(qdd.sum(), x[2], create_graph=True)
    with pytest.raises(RuntimeError, match="differentiable once"):
        torch.autograd.grad(g.sum(), x[2])
    with pytest.raises(KeyError):
        rt.contact_dynamics(MODEL, Q[0], V[0], U[0], (rbd.Contact("NO_FOOT"),))
    with pytest.raises(rbd.DependentContacts, match="damping"):
        rt.contact_dynamics(MODEL, Q[0], V[0], U[0], CS + CS[:1])
    with pytest.raises(ValueError, match="tau"):
        rt.contact_dynamics(MODEL, Q[0], V[0], U[0, :-1], CS)


# ---- impulse_dynamics: the same checks against rbd.impulse_dynamics(_derivatives)
RESTITUTION = 0.4


def _impulse(q, v, contacts=CS):
    return tuple(rt.impulse_dynamics(MODEL, q, v, contacts, RESTITUTION))


def test_impulse_values_gradients_and_jacobians_equal_numpy(monkeypatch):
    from rbdiff.torch import api
    from rbdiff.torch._function import _tangent_vjp_general
    q, v, _ = _state(6)
    Q, V = (torch.tensor(x, requires_grad=True) for x in (q, v))
    out = rt.impulse_dynamics(MODEL, Q, V, CS, RESTITUTION)
    ref = rbd.impulse_dynamics(MODEL, retract(MODEL, q), v, CS, RESTITUTION)
    assert isinstance(out, rbd.results.ImpulseDynamics)
    assert torch.equal(out.v_after, torch.tensor(ref.v_after))
    assert torch.equal(out.impulses, torch.tensor(ref.impulses))
    # plain .backward() against the analytical blocks contracted; q through the tangent
    # map evaluated at the unit vectors (not the closed form the backward uses)
    nv = MODEL.nv
    w = np.random.default_rng(7).normal(size=nv + 12)
    (torch.tensor(w[:nv]) @ out.v_after + torch.tensor(w[nv:]) @ out.impulses).backward()
    d = rbd.impulse_dynamics_derivatives(MODEL, q, v, CS, RESTITUTION)
    _near(V.grad, w[:nv] @ d.dvafter_dv + w[nv:] @ d.dimpulses_dv)
    _near(Q.grad, _tangent_vjp_general(MODEL, q, w[:nv] @ d.dvafter_dq
                                       + w[nv:] @ d.dimpulses_dq))
    # the general path (check() and call()) gives the same values and gradients
    monkeypatch.setattr(api, "call_single", lambda *a: None)
    Q2, V2 = (torch.tensor(x, requires_grad=True) for x in (q, v))
    slow = rt.impulse_dynamics(MODEL, Q2, V2, CS, RESTITUTION)
    assert torch.equal(slow.v_after, out.v_after) and torch.equal(slow.impulses, out.impulses)
    (torch.tensor(w[:nv]) @ slow.v_after + torch.tensor(w[nv:]) @ slow.impulses).backward()
    assert torch.equal(Q2.grad, Q.grad) and torch.equal(V2.grad, V.grad)
    monkeypatch.undo()
    # torch.func through rt.integrate: the tangent derivatives themselves
    z = torch.zeros(nv, dtype=T64)
    Qd, Vd = Q.detach(), V.detach()
    for jac in (jacrev, jacfwd):
        (aq, av), (iq, iv) = jac(lambda dq, v_: _impulse(rt.integrate(MODEL, Qd, dq), v_),
                                 argnums=(0, 1))(z, Vd)
        for ours, theirs in zip((aq, av, iq, iv), d):
            _near(ours, theirs)
    # reverse and forward AD in ambient coordinates against finite differences
    assert gradcheck(_impulse, (Q, V), check_forward_ad=True)


def test_impulse_batches_vmap_refusals():
    q, v, _ = _state(8, batch=3)
    Q, V = torch.tensor(q), torch.tensor(v)
    out = rt.impulse_dynamics(MODEL, Q, V, CS, RESTITUTION)
    assert out.impulses.shape == (3, 12)
    vm = vmap(lambda a, b: _impulse(a, b))(Q, V)
    loop = [_impulse(Q[i], V[i]) for i in range(3)]
    for k in range(2):
        assert torch.equal(vm[k], out[k])
        _near(vm[k], torch.stack([x[k] for x in loop]), 1e-13)
    jb = vmap(jacrev(lambda b, a: rt.impulse_dynamics(MODEL, a, b, CS).impulses))(V, Q)
    _near(jb, rbd.impulse_dynamics_derivatives(MODEL, q, v, CS).dimpulses_dv)
    o32 = rt.impulse_dynamics(MODEL, Q.float(), V.float(), list(CS))
    assert o32.v_after.dtype == torch.float32
    # no contacts: no jump, an identity Jacobian in v_before
    x = [torch.tensor(a, requires_grad=True) for a in _state(9)[:2]]
    free = rt.impulse_dynamics(MODEL, *x, ())
    assert torch.equal(free.v_after, x[1]) and free.impulses.shape == (0,)
    free.v_after.sum().backward()
    assert torch.equal(x[1].grad, torch.ones(MODEL.nv, dtype=T64))
    # a second derivative raises
    (g,) = torch.autograd.grad(_impulse(*x)[1].sum(), x[1], create_graph=True)
    with pytest.raises(RuntimeError, match="impulse_dynamics is differentiable once"):
        torch.autograd.grad(g.sum(), x[1])
    # bad input: named errors, never NaN
    q1, v1 = Q[0], V[0]
    with pytest.raises(ValueError, match="v_before: expected shape"):
        rt.impulse_dynamics(MODEL, q1, v1[:-1], CS)
    bad = v1.clone()
    bad[4] = float("nan")
    with pytest.raises(ValueError, match="v_before contains NaN"):
        rt.impulse_dynamics(MODEL, q1, bad, CS)
    bad = q1.clone()
    bad[4] = float("nan")               # the free flyer's quaternion
    with pytest.raises(ValueError, match=r"q: the rotation coordinates .* contain NaN"):
        rt.impulse_dynamics(MODEL, bad, v1, CS)
    with pytest.raises(ValueError, match="restitution"):
        rt.impulse_dynamics(MODEL, q1, v1, CS, 1.5)
    with pytest.raises(TypeError, match="rbd.Contact"):
        rt.impulse_dynamics(MODEL, q1, v1, ("FL_FOOT",))
    with pytest.raises(rbd.DependentContacts):
        rt.impulse_dynamics(MODEL, q1, v1, CS + CS[:1])


def test_bench_contact_rows():
    """rbdiff.bench.torch's contact rows: every function, batch and case, each with its
    floor and ratio (one short round)."""
    from rbdiff.bench import torch as bt
    rows = bt.contact_floors(repeats=1, min_time=1e-4)
    assert [(r["function"], r["B"], r["case"]) for r in rows] == [
        (f, B, c) for B in (1, bt.CONTACT_BATCH)
        for f in ("contact_dynamics", "impulse_dynamics")
        for c in ("value", "forward+backward")]
    for r in rows:
        k, s = bt.CONTACT_FLOORS[r["case"]]
        assert min(r["rbdiff"], r["numpy"]) > 0
        assert r["floor"] == pytest.approx(k * r["numpy"] + s)
        assert r["ratio"] == pytest.approx(r["rbdiff"] / r["floor"])
        assert (r["trivial"] is not None) == (r["B"] == 1 and r["case"] != "value")
    assert "| impulse_dynamics | 64 | forward+backward |" in bt.contact_table(rows)
