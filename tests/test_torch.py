"""rbdiff.torch against independent oracles: values against the NumPy API; derivatives
against torch's finite-difference checkers (gradcheck with forward AD, gradgradcheck),
against rbdiff's tangent-space kernels (jacfwd / jacrev / hessian of
f(integrate(q, dq)) at dq = 0) and, for frame_placement, against central differences of
the NumPy API; vmap against the NumPy batch, counted as one rbdiff call. Models: a random
tree with a free flyer, revolute, prismatic, continuous and spherical joints, and iiwa14."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
from torch.autograd import gradcheck, gradgradcheck  # noqa: E402
from torch.func import grad, hessian, jacfwd, jacrev, vmap  # noqa: E402

import rbdiff as rbd  # noqa: E402
import rbdiff.torch as rt  # noqa: E402
from rbdiff.model import layout as L  # noqa: E402
from rbdiff.model import lie  # noqa: E402
from rbdiff.model import configuration as reference  # noqa: E402

T64 = torch.float64
# torch's forward-AD decompositions call the deprecated torch.jit.script on first use
pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated")


def _tree():
    model = rbd.models.random_tree(6, 19, floating_base=True)
    types = {int(t) for t in model.joint_types[1:]}
    assert {L.FREE_FLYER, L.REVOLUTE, L.PRISMATIC, L.REVOLUTE_UNBOUNDED, L.SPHERICAL} <= types
    return model


MODELS = {"tree": _tree(), "iiwa14": rbd.load_robot("iiwa14")}
FRAME = {"tree": "body3", "iiwa14": 5}


def _state(model, rng, batch=None):
    """q, v, u as NumPy arrays (q on the manifold)."""
    shape = () if batch is None else (batch,)
    return (rbd.random_configuration(model, rng, batch=batch),
            rng.normal(size=shape + (model.nv,)), rng.normal(size=shape + (model.nv,)))


def _t(*xs, dtype=T64, requires_grad=False):
    return [torch.tensor(x, dtype=dtype, requires_grad=requires_grad) for x in xs]


def _off_manifold(model, q, scale=1.3):
    """q with every quaternion and (cos, sin) pair scaled (retract(q) unchanged)."""
    q = q.copy()
    for i in range(1, model.njoints):
        t, k = int(model.joint_types[i]), int(model.idx_q[i])
        block = {L.REVOLUTE_UNBOUNDED: (k, 2), L.SPHERICAL: (k, 4), L.FREE_FLYER: (k + 3, 4)}
        if t in block:
            a, n = block[t]
            q[..., a:a + n] *= scale
    return q


# name: (torch function of (model, *tensors), NumPy function, arguments: q, v, u)
FUNCTIONS = {
    "rnea": (rt.rnea, rbd.rnea, 3),
    "aba": (rt.aba, rbd.aba, 3),
    "crba": (rt.crba, rbd.crba, 1),
    "minverse": (rt.minverse, rbd.minverse, 1),
    "nonlinear_effects": (rt.nonlinear_effects, rbd.nonlinear_effects, 2),
    "gravity": (rt.gravity, rbd.gravity, 1),
}
SECOND_ORDER = ("rnea", "aba", "nonlinear_effects", "gravity")


def _call(name, model, args):
    if name == "frame_placement":
        key = next(k for k, m in MODELS.items() if m is model)
        return rt.frame_placement(model, args[0], FRAME[key])
    return FUNCTIONS[name][0](model, *args)


def _numpy(name, model, args):
    if name == "frame_placement":
        key = next(k for k, m in MODELS.items() if m is model)
        return rbd.frame_placement(model, args[0], FRAME[key])
    return FUNCTIONS[name][1](model, *args)


def _nargs(name):
    return 1 if name == "frame_placement" else FUNCTIONS[name][2]


ALL = list(FUNCTIONS) + ["frame_placement"]


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("key", list(MODELS))
def test_values_equal_numpy_api(key, name):
    model, rng = MODELS[key], np.random.default_rng(0)
    k = _nargs(name)
    for batch in (None, 4):
        args = _state(model, rng, batch)[:k]
        ref = _numpy(name, model, args)
        out = _call(name, model, _t(*args))
        assert out.dtype == T64 and out.shape == ref.shape
        scale = max(1.0, np.max(np.abs(ref)))
        assert np.max(np.abs(out.numpy() - ref)) < 1e-13 * scale
    # two leading axes: one flattened batch; float32 in, float32 out (computed in float64)
    args = [x.reshape((2, 2) + x.shape[1:]) for x in args]
    out = _call(name, model, _t(*args))
    assert out.shape == (2, 2) + ref.shape[1:]
    assert np.max(np.abs(out.numpy().reshape(ref.shape) - ref)) < 1e-13 * scale
    out32 = _call(name, model, _t(*args, dtype=torch.float32))
    assert out32.dtype == torch.float32
    assert np.allclose(out32.numpy(), out.numpy().astype(np.float32), rtol=1e-6, atol=1e-6 * scale)


@pytest.mark.parametrize("name", ALL)
def test_value_off_the_manifold_is_at_the_retraction(name):
    model, rng = MODELS["tree"], np.random.default_rng(1)
    args = list(_state(model, rng)[:_nargs(name)])
    on = _call(name, model, _t(*args))
    args[0] = _off_manifold(model, args[0])
    assert torch.allclose(_call(name, model, _t(*args)), on, rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("off", [False, True])
@pytest.mark.parametrize("name", ALL)
def test_gradcheck_forward_and_reverse(name, off):
    """Finite differences of the ambient function (off the manifold too) against the
    backward and jvp rules; check_batched_grad runs the backward under vmap."""
    model, rng = MODELS["tree"], np.random.default_rng(2)
    args = list(_state(model, rng)[:_nargs(name)])
    if off:
        args[0] = _off_manifold(model, args[0])
    xs = _t(*args, requires_grad=True)
    assert gradcheck(lambda *x: _call(name, model, x), xs, check_forward_ad=True,
                     check_batched_grad=True)


@pytest.mark.parametrize("name", ["aba", "crba"])
def test_backward_of_a_batch_with_two_leading_axes(name):
    """The NumPy backward (plain .backward()) and the graph-recording one (create_graph)
    on a (2, 3) batch, against per-state gradients."""
    model, rng = MODELS["tree"], np.random.default_rng(16)
    args = [x.reshape((2, 3) + x.shape[1:]) for x in _state(model, rng, 6)[:_nargs(name)]]
    w = rng.normal(size=_call(name, model, _t(*args)).shape)
    for create_graph in (False, True):
        xs = _t(*args, requires_grad=True)
        out = (_call(name, model, xs) * torch.tensor(w)).sum()
        grads = torch.autograd.grad(out, xs, create_graph=create_graph)
        for i in range(2):
            for j in range(3):
                xij = _t(*(x[i, j] for x in args), requires_grad=True)
                one = torch.autograd.grad((_call(name, model, xij) * torch.tensor(w[i, j])).sum(),
                                          xij)
                for g, g1 in zip(grads, one):
                    assert torch.allclose(g[i, j], g1, rtol=1e-13, atol=1e-12)


@pytest.mark.parametrize("key", list(MODELS))
def test_numpy_backward_fast_paths_equal_the_general_ones(monkeypatch, key):
    """The plain .backward() shortcuts (the forward's arrays reused, the tangent map's
    transpose in closed form, the identity for revolute-only models) against the general
    code they replace: the map evaluated at unit vectors, the arrays converted again, and
    the graph-recording backward in torch ops."""
    from rbdiff.torch import _function as F
    model, rng = MODELS[key], np.random.default_rng(17)
    for batch in (None, 3):
        q = _off_manifold(model, _state(model, rng, batch)[0])
        w = rng.normal(size=q.shape[:-1] + (model.nv,))
        assert np.allclose(F._tangent_vjp(model, q, w), F._tangent_vjp_general(model, q, w),
                           rtol=1e-14, atol=1e-14)
        args = list(_state(model, rng, batch))
        args[0] = q
        for name in ("aba", "rnea"):
            xs = _t(*args, requires_grad=True)
            (_call(name, model, xs) ** 2).sum().backward()
            fast = [x.grad for x in xs]
            xs = _t(*args, requires_grad=True)
            graph = torch.autograd.grad((_call(name, model, xs) ** 2).sum(), xs,
                                        create_graph=True)
            with monkeypatch.context() as mp:
                mp.setattr(F, "ONE", False)
                mp.setattr(F, "LEAN", False)
                mp.setattr(F, "_stashed", lambda xs: None)
                mp.setattr(F, "_tangent_vjp", F._tangent_vjp_general)
                xs = _t(*args, requires_grad=True)
                (_call(name, model, xs) ** 2).sum().backward()
                general = [x.grad for x in xs]
            for a, b, c in zip(fast, general, graph):
                assert torch.allclose(a, b, rtol=1e-13, atol=1e-12)
                assert torch.allclose(a, c.detach(), rtol=1e-13, atol=1e-12)


def test_lean_path_equals_the_generic_rule(monkeypatch):
    """call()'s Lean Function (outside torch.func and forward AD) and, for rnea and aba
    on one float64 state, call_one's One Function (compiled forward and backward,
    cpu/vjp.py) against the generic Rule they shortcut: the same gradients (one state, a
    batch, float32, some inputs not requiring grad), the same double backward, and an
    input modified in place between forward and backward refused as saved tensors
    are."""
    from rbdiff.torch import _function as F
    model, rng = MODELS["tree"], np.random.default_rng(21)

    def grads(name, args, dtype, needs, create_graph=False):
        xs = [torch.tensor(a, dtype=dtype, requires_grad=r) for a, r in zip(args, needs)]
        y = _call(name, model, xs)
        g = torch.autograd.grad((y ** 2).sum(), [x for x in xs if x.requires_grad],
                                create_graph=create_graph)
        if create_graph:        # a second derivative through the first
            g = torch.autograd.grad(sum((t ** 2).sum() for t in g),
                                    [x for x in xs if x.requires_grad])
        return g

    for batch in (None, 3):
        args = list(_state(model, rng, batch))
        args[0] = _off_manifold(model, args[0])
        for name, dtype, needs, cg in (("aba", T64, (True, True, True), False),
                                       ("rnea", T64, (True, False, True), False),
                                       ("aba", T64, (False, True, False), False),
                                       ("aba", torch.float32, (True, True, True), False),
                                       ("rnea", T64, (True, True, True), True)):
            fast = grads(name, args, dtype, needs, cg)
            with monkeypatch.context() as mp:
                mp.setattr(F, "ONE", False)
                lean = grads(name, args, dtype, needs, cg)
                mp.setattr(F, "LEAN", False)
                generic = grads(name, args, dtype, needs, cg)
            for a, b, c in zip(fast, lean, generic):
                tol = 1e-15 if dtype == T64 else 1e-6
                assert torch.allclose(a, c, rtol=tol, atol=tol * float(c.abs().max()))
                assert torch.allclose(b, c, rtol=tol, atol=tol * float(c.abs().max()))
    for one, kind in ((True, "one"), (False, "lean")):
        monkeypatch.setattr(F, "ONE", one)
        q, v, u = _t(*_state(model, rng), requires_grad=True)
        y = rt.aba(model, q, v, u)
        assert type(y.grad_fn)._forward_cls.__name__ == f"aba_{kind}_rule"
        with torch.no_grad():
            v.mul_(2.0)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.sum().backward()


@pytest.mark.parametrize("name", SECOND_ORDER)
def test_gradgradcheck(name):
    model, rng = MODELS["tree"], np.random.default_rng(3)
    args = list(_state(model, rng)[:_nargs(name)])
    args[0] = _off_manifold(model, args[0], 0.8)
    xs = _t(*args, requires_grad=True)
    assert gradgradcheck(lambda *x: _call(name, model, x), xs)


@pytest.mark.parametrize("name", ["crba", "minverse", "frame_placement"])
def test_second_derivative_without_kernel_raises(name):
    model, rng = MODELS["tree"], np.random.default_rng(4)
    (q,) = _t(_state(model, rng)[0], requires_grad=True)
    out = _call(name, model, [q])
    (g,) = torch.autograd.grad(out.sum(), q, create_graph=True)
    with pytest.raises(RuntimeError, match=f"{name}.*(no kernel|differentiable once)"):
        torch.autograd.grad(g.sum(), q)
    with pytest.raises(RuntimeError, match=name):
        hessian(lambda x: _call(name, model, [x]).sum())(q.detach())


def test_third_derivative_raises():
    model, rng = MODELS["tree"], np.random.default_rng(5)
    (q,) = _t(_state(model, rng)[0])
    assert hessian(lambda x: rt.gravity(model, x).sum())(q).shape == (model.nq, model.nq)
    with pytest.raises(RuntimeError, match="gravity: a third derivative"):
        jacfwd(hessian(lambda x: rt.gravity(model, x).sum()))(q)


@pytest.mark.parametrize("key", list(MODELS))
@pytest.mark.parametrize("jac", [jacfwd, jacrev], ids=["jacfwd", "jacrev"])
def test_jacobians_through_integrate_equal_tangent_derivatives(key, jac):
    model, rng = MODELS[key], np.random.default_rng(6)
    q, v, u = _state(model, rng)
    tq, tv, tu = _t(q, v, u)
    z = torch.zeros(model.nv, dtype=T64)
    for f, derivatives in ((rt.rnea, rbd.rnea_derivatives), (rt.aba, rbd.aba_derivatives)):
        ref = derivatives(model, q, v, u)
        J = jac(lambda dq, v_, u_: f(model, rt.integrate(model, tq, dq), v_, u_),
                argnums=(0, 1, 2))(z, tv, tu)
        for got, want in zip(J, ref):
            assert np.max(np.abs(got.numpy() - want)) < 1e-12 * max(1.0, np.max(np.abs(want)))


@pytest.mark.parametrize("key", list(MODELS))
def test_hessians_equal_second_order_tensors(key):
    """hessian of f(integrate(q, dq)) in dq is the symmetric part of d2f_dq2 (the
    derivative along q_k of df_dq[i, j]); the mixed and velocity blocks are the tensors."""
    model, rng = MODELS[key], np.random.default_rng(7)
    q, v, u = _state(model, rng)
    tq, tv, tu = _t(q, v, u)
    z = torch.zeros(model.nv, dtype=T64)
    sym = lambda t: 0.5 * (t + np.swapaxes(t, 1, 2))    # noqa: E731
    for f, so in ((rt.rnea, rbd.rnea_second_order_derivatives),
                  (rt.aba, rbd.aba_second_order_derivatives)):
        d2_dq2, d2_dv2, d2_dqdv, d2_dudq = so(model, q, v, u)
        H = hessian(lambda dq, v_, u_: f(model, rt.integrate(model, tq, dq), v_, u_),
                    argnums=(0, 1, 2))(z, tv, tu)
        scale = max(1.0, np.max(np.abs(d2_dq2)))
        close = lambda got, want: np.max(np.abs(got.numpy() - want)) < 1e-11 * scale  # noqa
        assert close(H[0][0], sym(d2_dq2))
        assert close(H[0][1], d2_dqdv)
        assert close(H[1][0], np.swapaxes(d2_dqdv, 1, 2))
        assert close(H[1][1], d2_dv2)
        assert close(H[0][2], np.swapaxes(d2_dudq, 1, 2))    # d2 f_i / dq_j du_k
        assert close(H[2][0], d2_dudq)
        assert close(H[2][2], np.zeros_like(d2_dv2))


def test_frame_placement_derivative_against_central_differences():
    model, rng = MODELS["tree"], np.random.default_rng(8)
    q = _state(model, rng)[0]
    z = torch.zeros(model.nv, dtype=T64)
    (tq,) = _t(q)
    J = jacfwd(lambda dq: rt.frame_placement(model, rt.integrate(model, tq, dq), "body6"))(z)
    h, fd = 1e-6, np.empty((4, 4, model.nv))
    for k in range(model.nv):
        e = np.zeros(model.nv)
        e[k] = h
        fd[..., k] = (rbd.frame_placement(model, rbd.integrate(model, q, e), "body6")
                      - rbd.frame_placement(model, rbd.integrate(model, q, -e), "body6")) / (2 * h)
    assert np.max(np.abs(J.numpy() - fd)) < 1e-8


class _Counter:
    """Counts the calls of the NumPy API functions that rbdiff.torch's rules make."""

    def __init__(self, monkeypatch, names):
        self.calls = {n: 0 for n in names}
        for n in names:
            monkeypatch.setattr(rbd, n, self._wrap(n, getattr(rbd, n)))

    def _wrap(self, name, fn):
        def counted(*args, **kwargs):
            self.calls[name] += 1
            return fn(*args, **kwargs)
        return counted


@pytest.mark.parametrize("name", ALL)
def test_vmap_is_one_batched_call(monkeypatch, name):
    model, rng = MODELS["tree"], np.random.default_rng(9)
    args = _state(model, rng, 6)[:_nargs(name)]
    ref = _numpy(name, model, args)
    numpy_name = name if name != "nonlinear_effects" else "nonlinear_effects"
    count = _Counter(monkeypatch, [numpy_name])
    out = vmap(lambda *x: _call(name, model, x))(*_t(*args))
    assert count.calls[numpy_name] == 1
    assert np.max(np.abs(out.numpy() - ref)) < 1e-13 * max(1.0, np.max(np.abs(ref)))
    nested = vmap(vmap(lambda *x: _call(name, model, x)))(
        *_t(*(x.reshape((2, 3) + x.shape[1:]) for x in args)))
    assert count.calls[numpy_name] == 2
    assert torch.equal(nested.reshape(out.shape), out)


def test_vmap_of_derivatives_is_one_batched_call(monkeypatch):
    model, rng = MODELS["tree"], np.random.default_rng(10)
    q, v, u = _state(model, rng, 5)
    tq, tv, tu = _t(q, v, u)
    count = _Counter(monkeypatch, ["aba", "aba_derivatives", "aba_second_order_derivatives"])
    g = vmap(grad(lambda q_, v_: rt.aba(model, q_, v_, tu[0]).sum(), argnums=(0, 1)))(tq, tv)
    assert count.calls["aba_derivatives"] == 1
    for b in range(5):
        d = rbd.aba_derivatives(model, q[b], v[b], u[0])
        assert np.allclose(g[1][b].numpy(), d.dqdd_dv.sum(0), rtol=1e-12, atol=1e-12)
    H = vmap(hessian(lambda v_: rt.aba(model, tq[0], v_, tu[0])))(tv)
    assert count.calls["aba_second_order_derivatives"] == 1
    # q[0] and u[0] repeated as C-contiguous copies: the specialisation `rbdiff compile`
    # caches (np.broadcast_to's read-only strided views compiled one of their own, ~5 s)
    ref = rbd.aba_second_order_derivatives(model, np.repeat(q[:1], len(q), 0), v,
                                           np.repeat(u[:1], len(u), 0)).d2qdd_dv2
    assert np.max(np.abs(H.numpy() - ref)) < 1e-11 * max(1.0, np.max(np.abs(ref)))


def test_integrate_and_difference_equal_numpy_api():
    model, rng = MODELS["tree"], np.random.default_rng(11)
    q0, v, _ = _state(model, rng, 5)
    q1 = rbd.random_configuration(model, rng, batch=5)
    v[0] *= 1e-6                                      # a small-angle row (series branch)
    out = rt.integrate(model, *_t(q0, v))
    assert np.max(np.abs(out.numpy() - rbd.integrate(model, q0, v))) < 1e-14 * 4
    d = rt.difference(model, *_t(q0, q1))
    assert np.max(np.abs(d.numpy() - rbd.difference(model, q0, q1))) < 1e-12
    single = rt.integrate(model, *_t(q0[0], v))          # broadcast leading shapes
    assert torch.allclose(single, rt.integrate(model, *_t(np.broadcast_to(q0[0], q0.shape), v)))
    # the array-generic source on NumPy against rbdiff's NumPy reference
    ref = reference.integrate(model, q0, v)
    assert np.max(np.abs(np.stack(lie.integrate(model, q0, v, lie.NUMPY), -1) - ref)) < 1e-14 * 4
    ref = reference.difference(model, q0, q1)
    assert np.max(np.abs(np.stack(lie.difference(model, q0, q1, lie.NUMPY), -1) - ref)) < 1e-12


def test_difference_of_integrate_has_identity_jacobian():
    model, rng = MODELS["tree"], np.random.default_rng(12)
    (tq,) = _t(_state(model, rng)[0])
    z = torch.zeros(model.nv, dtype=T64)
    eye = torch.eye(model.nv, dtype=T64)
    for jac in (jacfwd, jacrev):
        J = jac(lambda dq: rt.difference(model, tq, rt.integrate(model, tq, dq)))(z)
        assert torch.allclose(J, eye, rtol=0, atol=1e-14)


def test_integrate_difference_gradcheck():
    model, rng = MODELS["tree"], np.random.default_rng(13)
    q0, v, _ = _state(model, rng)
    q1 = rbd.integrate(model, q0, 0.3 * rng.normal(size=model.nv))
    assert gradcheck(lambda q, v_: rt.integrate(model, q, v_), _t(q0, v, requires_grad=True),
                     check_forward_ad=True)
    assert gradcheck(lambda a, b: rt.difference(model, a, b), _t(q0, q1, requires_grad=True),
                     check_forward_ad=True)
    assert gradgradcheck(lambda a, b: rt.difference(model, a, b), _t(q0, q1, requires_grad=True))


def test_jvp_vjp_and_partial_requires_grad():
    """torch.func.jvp / vjp against the kernels' derivatives; a gradient asked of tau
    alone (q, v constant) is M^-1 g."""
    model, rng = MODELS["tree"], np.random.default_rng(17)
    q, v, u = _state(model, rng)
    tq, tv, tu = _t(q, v, u)
    d = rbd.aba_derivatives(model, q, v, u)
    dv, du, g = rng.normal(size=(3, model.nv))
    _, tangent = torch.func.jvp(lambda v_, u_: rt.aba(model, tq, v_, u_), (tv, tu),
                                tuple(_t(dv, du)))
    assert np.allclose(tangent.numpy(), d.dqdd_dv @ dv + d.dqdd_dtau @ du, rtol=1e-12, atol=1e-12)
    _, pullback = torch.func.vjp(lambda u_: rt.aba(model, tq, tv, u_), tu)
    assert np.allclose(pullback(torch.tensor(g))[0].numpy(), g @ d.dqdd_dtau, rtol=1e-12,
                       atol=1e-12)
    (tu_g,) = _t(u, requires_grad=True)
    (rt.aba(model, tq, tv, tu_g) * torch.tensor(g)).sum().backward()
    assert tq.grad is None and tv.grad is None
    assert np.allclose(tu_g.grad.numpy(), rbd.minverse(model, q) @ g, rtol=1e-12, atol=1e-12)


def test_float32_gradients():
    model, rng = MODELS["iiwa14"], np.random.default_rng(14)
    q, v, u = _state(model, rng)
    x32 = _t(q, v, u, dtype=torch.float32, requires_grad=True)
    x64 = _t(q, v, u, requires_grad=True)
    rt.aba(model, *x32).sum().backward()
    rt.aba(model, *x64).sum().backward()
    for a, b in zip(x32, x64):
        assert a.grad.dtype == torch.float32
        assert np.allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-5, atol=1e-4)


def test_bad_input_errors():
    model, rng = MODELS["tree"], np.random.default_rng(15)
    q, v, u = _state(model, rng)
    tq, tv, tu = _t(q, v, u)
    with pytest.raises(TypeError, match="q: expected a torch.Tensor"):
        rt.rnea(model, q, tv, tu)
    with pytest.raises(TypeError, match="model: expected an rbdiff Model"):
        rt.rnea("iiwa14", tq, tv, tu)
    with pytest.raises(TypeError, match="v: expected dtype float32 or float64"):
        rt.rnea(model, tq, tv.to(torch.int64), tu)
    with pytest.raises(TypeError, match="a: dtype torch.float32 differs from q's"):
        rt.rnea(model, tq, tv, tu.float())
    with pytest.raises(ValueError, match=rf"q: expected shape \(\.\.\., {model.nq}\)"):
        rt.crba(model, tq[:-1])
    with pytest.raises(ValueError, match="v: leading .batch. shape"):
        rt.aba(model, tq, tv.expand(2, -1), tu)
    with pytest.raises(ValueError, match="device meta"):
        rt.gravity(model, tq.to("meta"))
    with pytest.raises(TypeError, match="frame: expected a frame name or index"):
        rt.frame_placement(model, tq, 2.0)
    bad = tv.clone()
    bad[1] = float("nan")
    with pytest.raises(ValueError, match="v contains NaN"):
        rt.rnea(model, tq, bad, tu)
    zero = tq.clone()
    zero[3:7] = 0                                     # the free flyer's quaternion
    with pytest.raises(ValueError, match="q: the rotation coordinates"):
        rt.aba(model, zero, tv, tu)
    with pytest.raises(ValueError, match="q1: expected shape"):
        rt.difference(model, tq, tv)


def test_bench_floor_rows():
    """rbdiff.bench.torch's floor rows on iiwa14: rbdiff's forward + backward, the
    trivial Function, the derivatives, the floor and the ratio, consistent."""
    from rbdiff.bench import torch as bt
    rows = bt.floors(quick=True, robots=("iiwa14",))
    assert [r["case"] for r in rows] == ["aba forward+backward", "rnea forward+backward"]
    for r in rows:
        assert min(r["rbdiff"], r["trivial"], r["derivatives"]) > 0
        assert r["floor"] == pytest.approx(r["trivial"] + 2 * r["derivatives"] + 20e-6)
        assert r["ratio"] == pytest.approx(r["rbdiff"] / r["floor"])
    assert "| iiwa14 | aba forward+backward |" in bt.floor_table(rows)
