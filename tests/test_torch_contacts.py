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
