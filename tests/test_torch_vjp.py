"""rbdiff.torch's One Function (rnea and aba on one float64 state: forward and backward
one compiled call each, cpu/vjp.py) against independent oracles: values and gradients
against Pinocchio's rnea / aba and computeRNEADerivatives / computeABADerivatives
contracted with the cotangent and the NumPy ambient-to-tangent map
(rbdiff.model.tangent), on random trees (every joint type) and real robots, q off the
manifold; gradients against the complex step through rbdiff's complex128 value
functions of the retracted q; the AZA product (long chains); where it steps aside
(create_graph, float32, batches, torch.func) and that it refuses bad input with the
general path's errors; two threads on one model."""

import threading

import numpy as np
import pinocchio as pin
import pytest

torch = pytest.importorskip("torch")

import rbdiff as rbd  # noqa: E402
import rbdiff.torch as rt  # noqa: E402
from conftest import full, random_state, robot_pair, tree_pair  # noqa: E402
from rbdiff.model import layout as L  # noqa: E402
from rbdiff.model.tangent import normalised_blocks, tangent_of_ambient  # noqa: E402
from rbdiff.torch import _function as F  # noqa: E402

T64 = torch.float64
# (kind, name or seed, floating): a tree with every joint type, and real robots
PAIRS = [("tree", 19, True), ("tree", 2, False), ("robot", "iiwa14", False),
         ("robot", "panda", False), ("robot", "solo12", True),
         ("robot", "talos_full_v2", True)]


def _pair(kind, a, floating):
    if kind == "tree":
        model, pm = tree_pair(a, 6, floating)
        if floating:
            assert {L.FREE_FLYER, L.REVOLUTE, L.PRISMATIC, L.REVOLUTE_UNBOUNDED,
                    L.SPHERICAL} <= {int(t) for t in model.joint_types[1:]}
        return model, pm
    return robot_pair(a, floating)


def _off_manifold(model, q, scale=1.3):
    """q with every quaternion and (cos, sin) pair scaled (its retraction unchanged)."""
    q = q.copy()
    for k, n in normalised_blocks(model):
        q[..., k:k + n] *= scale
    return q


def _retract(model, q):
    """Every quaternion and (cos, sin) pair divided by its norm, analytic (no conjugate:
    a complex q carries the complex step through)."""
    q = q.copy()
    for k, n in normalised_blocks(model):
        x = q[..., k:k + n]
        q[..., k:k + n] = x / np.sqrt(np.sum(x * x, axis=-1, keepdims=True))
    return q


def _tangent_transpose(model, q):
    """T(q)^T (nq, nv) from rbdiff.model.tangent's map at the unit vectors."""
    return np.stack(tangent_of_ambient(model, q, np.eye(model.nq)), -1)


def _one(model, name, q, v, u, g):
    """(value, (grad_q, grad_v, grad_u)) of rt.<name> with the cotangent g, asserting
    that the One Function ran."""
    xs = [torch.tensor(x, requires_grad=True) for x in (q, v, u)]
    y = getattr(rt, name)(model, *xs)
    assert type(y.grad_fn)._forward_cls.__name__ == f"{name}_one_rule"
    y.backward(torch.tensor(g))
    return y.detach().numpy(), [x.grad.numpy() for x in xs]


def _rel(x, ref):
    return np.max(np.abs(x - ref)) / max(1.0, np.max(np.abs(ref)))


@pytest.mark.parametrize("key", PAIRS, ids=lambda k: f"{k[1]}{'+ff' if k[2] else ''}")
def test_against_pinocchio(key):
    model, pm = _pair(*key)
    rng = np.random.default_rng(7)
    q, v, u = random_state(pm, rng)
    g = rng.normal(size=model.nv)
    qa = _off_manifold(model, q)
    Tt = _tangent_transpose(model, qa)
    pd = pm.createData()
    for name in ("aba", "rnea"):
        if name == "aba":
            ref_y = np.array(pin.aba(pm, pd, q, v, u))
            Jq, Jv, Ju = (np.array(x) for x in pin.computeABADerivatives(pm, pd, q, v, u))
        else:
            ref_y = np.array(pin.rnea(pm, pd, q, v, u))
            Jq, Jv, Ju = (np.array(x) for x in pin.computeRNEADerivatives(pm, pd, q, v, u))
        y, (gq, gv, gu) = _one(model, name, qa, v, u, g)
        assert _rel(y, ref_y) < 1e-10
        assert _rel(gq, Tt @ (Jq.T @ g)) < 1e-10
        assert _rel(gv, Jv.T @ g) < 1e-10
        assert _rel(gu, full(Ju).T @ g) < 1e-10


def test_against_the_complex_step():
    """Each input coordinate stepped by i h (q in its ambient layout, off the manifold,
    through the analytic retraction): the imaginary part of g . f is h times that
    coordinate's gradient."""
    model, _ = _pair("tree", 19, True)
    rng = np.random.default_rng(8)
    q = _off_manifold(model, rbd.random_configuration(model, rng), 0.7)
    v, u, g = (rng.normal(size=model.nv) for _ in range(3))
    h, nq, nv = 1e-20, model.nq, model.nv
    n = nq + 2 * nv
    E = 1j * h * np.eye(n)
    Q = _retract(model, q + E[:, :nq])
    V, U = v + E[:, nq:nq + nv], u + E[:, nq + nv:]
    for name in ("aba", "rnea"):
        ref = (getattr(rbd, name)(model, Q, V, U) @ g).imag / h
        _, grads = _one(model, name, q, v, u, g)
        assert _rel(np.concatenate(grads), ref) < 1e-12


def test_aza_product_on_a_long_chain(monkeypatch):
    """aba on a chain long enough for product="auto" to pick AZA (kernels/aza.py): the
    One backward takes the same product; its gradients equal the Lean path's."""
    from rbdiff.derivatives import _product_code
    from rbdiff.kernels.aza import AZA, AZA_MIN_BRANCH
    model = rbd.models.serial_chain(AZA_MIN_BRANCH)
    assert _product_code(model, "auto") == AZA
    rng = np.random.default_rng(9)
    q, v, u, g = (rbd.random_configuration(model, rng), *rng.normal(size=(3, model.nv)))
    _, one = _one(model, "aba", q, v, u, g)
    monkeypatch.setattr(F, "ONE", False)
    xs = [torch.tensor(x, requires_grad=True) for x in (q, v, u)]
    rt.aba(model, *xs).backward(torch.tensor(g))
    for a, x in zip(one, xs):
        assert _rel(a, x.grad.numpy()) < 1e-13


def test_where_it_steps_aside():
    """Double backward, float32, batches, no input requiring grad and torch.func run the
    other Functions (and still agree with One's first derivatives)."""
    model, _ = _pair("tree", 19, True)
    rng = np.random.default_rng(10)
    q = _off_manifold(model, rbd.random_configuration(model, rng))
    v, u = rng.normal(size=(2, model.nv))
    xs = [torch.tensor(x, requires_grad=True) for x in (q, v, u)]
    y = rt.aba(model, *xs)
    assert type(y.grad_fn)._forward_cls.__name__ == "aba_one_rule"
    first = torch.autograd.grad(y.square().sum(), xs, create_graph=True)
    assert all(t.requires_grad for t in first)          # a graph: Rule's torch ops
    second = torch.autograd.grad(sum(t.sum() for t in first), xs)
    assert all(torch.isfinite(t).all() for t in second)
    _, one = _one(model, "aba", q, v, u, 2 * y.detach().numpy())
    for a, b in zip(one, first):
        assert _rel(a, b.detach().numpy()) < 1e-13
    # torch.func: the generic Rule
    vu = [x.detach() for x in xs[1:]]
    gq = torch.func.grad(lambda x: rt.aba(model, x, *vu).square().sum())(xs[0].detach())
    assert _rel(gq.numpy(), one[0]) < 1e-13
    # a batch and float32: the Lean Function
    xb = [torch.tensor(np.stack([x, x]), requires_grad=True) for x in (q, v, u)]
    yb = rt.aba(model, *xb)
    assert type(yb.grad_fn)._forward_cls.__name__ == "aba_lean_rule"
    yb.square().sum().backward()
    for a, x in zip(one, xb):
        assert _rel(x.grad[1].numpy(), a) < 1e-14
    x32 = [torch.tensor(x, dtype=torch.float32, requires_grad=True) for x in (q, v, u)]
    assert type(rt.aba(model, *x32).grad_fn)._forward_cls.__name__ == "aba_lean_rule"
    # nothing requires grad: the NumPy forward alone
    assert rt.rnea(model, *(x.detach() for x in xs)).grad_fn is None
    # strided inputs (a view of every other element, a stride-0 expansion): the entries
    # take any strides
    base = torch.tensor(np.repeat(q, 2), requires_grad=True)
    c = torch.tensor(0.5, dtype=T64, requires_grad=True)
    y = rt.aba(model, base[::2], c.expand(model.nv), xs[2])
    assert type(y.grad_fn)._forward_cls.__name__ == "aba_one_rule"
    y.square().sum().backward()
    _, ref = _one(model, "aba", q, np.full(model.nv, 0.5), u,
                  2 * rt.aba(model, *(torch.tensor(x) for x in (q, np.full(model.nv, 0.5),
                                                                 u))).numpy())
    assert _rel(base.grad[::2].numpy(), ref[0]) < 1e-14
    assert not base.grad[1::2].any()
    assert _rel(c.grad.numpy(), ref[1].sum()) < 1e-13
    # an expanded cotangent (stride 0: y.sum()'s) goes through the compiled backward
    for x in xs:
        x.grad = None
    rt.aba(model, *xs).sum().backward()
    _, ones = _one(model, "aba", q, v, u, np.ones(model.nv))
    for a, x in zip(ones, xs):
        assert np.array_equal(a, x.grad.numpy())


def _error(fn):
    try:
        fn()
    except Exception as e:      # noqa: BLE001 - the error itself is compared
        return type(e), str(e)
    return None


def test_refusals_are_the_general_paths(monkeypatch):
    """Wrong lengths, NaN, a zero quaternion and a non-tensor raise what the Lean path
    raises (One declines them before any graph is made)."""
    model, _ = _pair("tree", 19, True)
    rng = np.random.default_rng(11)
    q = rbd.random_configuration(model, rng)
    v, u = rng.normal(size=(2, model.nv))
    k, n = normalised_blocks(model)[0]
    cases = {"short q": (q[:-1], v, u), "NaN v": (q, np.where(np.arange(model.nv) == 2,
                                                              np.nan, v), u),
             "zero quaternion": (np.where((np.arange(model.nq) >= k)
                                          & (np.arange(model.nq) < k + n), 0.0, q), v, u),
             "NaN q": (np.where(np.arange(model.nq) == 0, np.nan, q), v, u)}
    for name in ("aba", "rnea"):
        f = getattr(rt, name)
        for case, args in cases.items():
            def run(args=args, f=f):
                f(model, *(torch.tensor(x, requires_grad=True) for x in args))
            with monkeypatch.context() as mp:
                mp.setattr(F, "ONE", False)
                ref = _error(run)
            assert ref is not None and ref[0] is ValueError, (name, case)
            assert _error(run) == ref, (name, case)
        xs = [torch.tensor(x, requires_grad=True) for x in (q, v, u)]
        with pytest.raises(TypeError, match="tau|a: expected a torch.Tensor"):
            f(model, xs[0], xs[1], u)


def test_two_threads_one_model():
    """The per-model scratch is used only inside GIL-holding entries: two threads
    running forward + backward on one model get the single-thread gradients."""
    model, _ = _pair("tree", 19, True)
    rng = np.random.default_rng(12)
    states = [(rbd.random_configuration(model, rng), *rng.normal(size=(2, model.nv)))
              for _ in range(4)]
    ref = [_one(model, "aba", *s, np.ones(model.nv))[1] for s in states]
    bad = []

    def work(k):
        for _ in range(30):
            for s, r in zip(states[k::2], ref[k::2]):
                got = _one(model, "aba", *s, np.ones(model.nv))[1]
                bad.extend(1 for a, b in zip(got, r) if not np.array_equal(a, b))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not bad


def test_plans_do_not_keep_models_alive():
    """The per-model plans (scratch, codes) hold no reference to their model: a model
    dropped by its user is collected once another is in use."""
    import gc
    import weakref
    rng = np.random.default_rng(13)
    refs = []
    for seed in (3, 4):
        model = rbd.models.random_tree(4, seed, floating_base=True)
        q, v, u = (rbd.random_configuration(model, rng), *rng.normal(size=(2, model.nv)))
        _one(model, "aba", q, v, u, np.ones(model.nv))
        refs.append(weakref.ref(model))
        del model
    gc.collect()
    assert refs[0]() is None
