"""rbdiff.jax against the NumPy API (values, partials, second-order tensors) and JAX's own
numerical checker (check_grads), on random trees with every joint type (free flyer,
spherical, continuous, prismatic, revolute) and iiwa14."""

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402
from jax.test_util import check_grads  # noqa: E402

import rbdiff as rbd  # noqa: E402
import rbdiff.jax as rj  # noqa: E402
from rbdiff.model.synthetic import random_tree  # noqa: E402
from rbdiff.model.tangent import normalised_blocks  # noqa: E402

# seed 14: prismatic, continuous, spherical; seed 0: revolute, continuous, spherical;
# both under a free flyer
MODELS = {"tree14": lambda: random_tree(4, np.random.default_rng(14), floating_base=True),
          "tree0": lambda: random_tree(4, np.random.default_rng(0), floating_base=True),
          "iiwa14": lambda: rbd.load_robot("iiwa14")}
_CACHE = {}
TOL = dict(rtol=1e-10, atol=1e-10)


def _model(name):
    if name not in _CACHE:
        _CACHE[name] = MODELS[name]()
    return _CACHE[name]


def _state(model, seed=1, batch=None):
    rng = np.random.default_rng(seed)
    s = () if batch is None else (batch,)
    q = rbd.random_configuration(model, rng, batch=batch)
    return q, rng.normal(size=s + (model.nv,)), rng.normal(size=s + (model.nv,))


def _off_manifold(model, q):
    """q with its quaternions and (cos, sin) pairs scaled off the unit sphere."""
    q = q.copy()
    for k, n in normalised_blocks(model):
        q[..., k:k + n] *= 1.3
    return q


def _kernel_calls(jaxpr):
    """Number of kernel calls (ffi_call) in a closed jaxpr, sub-jaxprs included."""
    n = 0
    for eq in jaxpr.eqns:
        # rbdiff's kernels (not the tangent map's helper call, tangent_map.py)
        if eq.primitive.name == "ffi_call" and \
                eq.params.get("target_name") != "rbdiff_tangent_matrix":
            n += 1
        for p in eq.params.values():
            for sub in (p if isinstance(p, (tuple, list)) else (p,)):
                inner = getattr(sub, "jaxpr", None)
                if inner is not None:
                    n += _kernel_calls(inner if hasattr(inner, "eqns") else inner.jaxpr)
                elif hasattr(sub, "eqns"):
                    n += _kernel_calls(sub)
    return n


def _calls(fn, *args):
    return _kernel_calls(jax.make_jaxpr(fn)(*args).jaxpr)


def _sym(T):
    return (T + np.swapaxes(T, -1, -2)) / 2


def _near(x, y, tol=TOL):
    np.testing.assert_allclose(np.asarray(x), np.asarray(y), **tol)


# ---- values ------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(MODELS))
def test_values_equal_numpy_api(name):
    m = _model(name)
    q, v, a = _state(m)
    for fn, args in [("rnea", (q, v, a)), ("aba", (q, v, a)), ("crba", (q,)),
                     ("minverse", (q,)), ("nonlinear_effects", (q, v)), ("gravity", (q,)),
                     ("integrate", (q, v)), ("rnea_derivatives", (q, v, a)),
                     ("aba_derivatives", (q, v, a)),
                     ("rnea_second_order_derivatives", (q, v, a)),
                     ("aba_second_order_derivatives", (q, v, a))]:
        got, want = getattr(rj, fn)(m, *args), getattr(rbd, fn)(m, *args)
        for g, w in zip(*((got, want) if isinstance(want, tuple) else ((got,), (want,)))):
            assert g.shape == w.shape and g.dtype == jnp.float64, fn
            _near(g, w)
    q1 = rbd.integrate(m, q, 0.3 * v)
    _near(rj.difference(m, q, q1), rbd.difference(m, q, q1))
    frame = m.frames[-1].name
    _near(rj.frame_placement(m, q, frame), rbd.frame_placement(m, q, frame))
    _near(rj.frame_placement(m, q, -1), rbd.frame_placement(m, q, -1))


def test_off_manifold_q_is_read_through_the_retraction():
    m = _model("tree14")
    q, v, a = _state(m)
    _near(rj.aba(m, _off_manifold(m, q), v, a), rbd.aba(m, q, v, a))
    _near(rj.integrate(m, _off_manifold(m, q), v), rbd.integrate(m, q, v))


# ---- first order ----------------------------------------------------------------------


@pytest.mark.parametrize("name", ["tree14", "tree0"])
def test_tangent_jacobians_equal_rbdiff_derivatives(name):
    """jacfwd / jacrev of f(integrate(q, dq)) at dq = 0 are rbdiff's tangent derivatives."""
    m = _model(name)
    q, v, a = _state(m)
    z = jnp.zeros(m.nv)
    for fn, d in [(rj.rnea, rbd.rnea_derivatives(m, q, v, a)),
                  (rj.aba, rbd.aba_derivatives(m, q, v, a))]:
        f = lambda e, v_, u_: fn(m, rj.integrate(m, q, e), v_, u_)
        for jac in (jax.jacfwd, jax.jacrev):
            got = jac(f, argnums=(0, 1, 2))(z, v, a)
            for g, w in zip(got, d):
                _near(g, w)
    M = rbd.crba(m, q)
    dM = rbd.rnea_second_order_derivatives(m, q, v, a).dM_dq
    got = jax.jacfwd(lambda e: rj.crba(m, rj.integrate(m, q, e)))(z)
    _near(got, dM)
    Minv = np.linalg.inv(M)
    got = jax.jacrev(lambda e: rj.minverse(m, rj.integrate(m, q, e)))(z)
    _near(got, -np.einsum("ij,jlk,lm->imk", Minv, dM, Minv))
    d0 = rbd.rnea_derivatives(m, q, v, 0 * a)
    got = jax.jacrev(lambda e, v_: rj.nonlinear_effects(m, rj.integrate(m, q, e), v_),
                     argnums=(0, 1))(z, v)
    _near(got[0], d0.dtau_dq)
    _near(got[1], d0.dtau_dv)
    g0 = rbd.rnea_derivatives(m, q, 0 * v, 0 * a)
    _near(jax.jacfwd(lambda e: rj.gravity(m, rj.integrate(m, q, e)))(z), g0.dtau_dq)


def test_frame_placement_derivative_is_the_local_jacobian():
    m = _model("tree14")
    q, _, _ = _state(m)
    frame = m.frames[-1].name
    T = rbd.frame_placement(m, q, frame)
    J = rbd.frame_jacobian(m, q, frame, reference="local")
    dT = jax.jacfwd(lambda e: rj.frame_placement(m, rj.integrate(m, q, e), frame))(
        jnp.zeros(m.nv))
    twist = np.einsum("ij,jlk->ilk", np.linalg.inv(T), dT)     # T^-1 dT/de_k = [J_k]^
    _near(twist[:3, 3], J[:3])
    _near(twist[2, 1], J[3])
    _near(twist[0, 2], J[4])
    _near(twist[1, 0], J[5])
    _near(twist[3], 0 * twist[3])


# ---- check_grads (numerical, JAX's checker) ----------------------------------------------

ORDER2 = {"rnea": 3, "aba": 3, "nonlinear_effects": 2, "gravity": 1}
ORDER1 = {"crba": 1, "minverse": 1}


@pytest.mark.parametrize("fn", list(ORDER2) + list(ORDER1))
def test_check_grads(fn):
    m = _model("tree14")
    q, v, a = _state(m, seed=2)
    args = (_off_manifold(m, q), v, a)[:{**ORDER2, **ORDER1}[fn]]
    order = 2 if fn in ORDER2 else 1
    check_grads(lambda *x: getattr(rj, fn)(m, *x), args, order=order, modes=("fwd", "rev"))


def test_check_grads_configuration_and_frames():
    m = _model("tree14")
    q, v, _ = _state(m, seed=3)
    q1 = rbd.integrate(m, q, 0.5 * v)
    # order 1: their second derivatives are checked at 0 by the Hessian test (eager
    # order-2 checks of the per-joint jax.numpy code cost tens of seconds)
    check_grads(lambda q_, v_: rj.integrate(m, q_, v_), (_off_manifold(m, q), v), order=1,
                modes=("fwd", "rev"))
    check_grads(lambda a_, b_: rj.difference(m, a_, b_), (q, _off_manifold(m, q1)), order=1,
                modes=("fwd", "rev"))
    check_grads(lambda q_: rj.frame_placement(m, q_, -1), (_off_manifold(m, q),), order=1,
                modes=("fwd", "rev"))
    check_grads(lambda q_, v_, a_: rj.rnea_derivatives(m, q_, v_, a_), (q, v, v), order=1,
                modes=("fwd", "rev"))
    check_grads(lambda q_, v_, t_: rj.aba_derivatives(m, q_, v_, t_), (q, v, v), order=1,
                modes=("fwd", "rev"))


# ---- second order -----------------------------------------------------------------------


@pytest.mark.parametrize("name", ["tree14", "iiwa14"])
def test_hessians_equal_second_order_tensors(name):
    m = _model(name)
    q, v, a = _state(m, seed=4)
    z = jnp.zeros(m.nv)
    for fn, so in [(rj.rnea, rbd.rnea_second_order_derivatives(m, q, v, a)),
                   (rj.aba, rbd.aba_second_order_derivatives(m, q, v, a))]:
        H = jax.hessian(lambda e, v_: fn(m, rj.integrate(m, q, e), v_, a), argnums=(0, 1))(
            z, v)
        _near(H[0][0], _sym(so[0]))                   # symmetric part in q (tangent)
        _near(H[1][1], so[1])
        _near(H[0][1], so[2])
        _near(H[1][0], np.swapaxes(so[2], 1, 2))
    # d2 qdd / dtau dq and d2 tau / da dq: the dM^-1 / dM tensors
    so = rbd.aba_second_order_derivatives(m, q, v, a)
    H = jax.jacfwd(jax.jacrev(lambda e, t: rj.aba(m, rj.integrate(m, q, e), v, t),
                              argnums=1), argnums=0)(z, a)
    _near(H, so.d2qdd_dtaudq)


def test_missing_kernels_raise_instead_of_zeros():
    m = _model("tree14")
    q, v, a = _state(m)
    with pytest.raises(NotImplementedError, match="second derivative of crba"):
        jax.hessian(lambda q_: rj.crba(m, q_))(q)
    with pytest.raises(NotImplementedError, match="second derivative of crba"):
        jax.jacfwd(jax.jacrev(lambda q_: rj.minverse(m, q_)))(q)
    with pytest.raises(NotImplementedError, match="frame_placement"):
        jax.hessian(lambda q_: rj.frame_placement(m, q_, -1))(q)
    with pytest.raises(NotImplementedError, match="third derivative of rnea"):
        jax.jacfwd(jax.hessian(lambda q_: rj.rnea(m, q_, v, a)))(q)
    with pytest.raises(NotImplementedError, match="third derivative of aba"):
        jax.jacrev(jax.hessian(lambda v_: rj.aba(m, q, v_, a)))(v)


# ---- batches, vmap, jit -----------------------------------------------------------------


def test_vmap_is_one_batched_kernel_call():
    m = _model("tree14")
    q, v, a = _state(m, batch=6)
    f = jax.vmap(lambda q_, v_, a_: rj.aba(m, q_, v_, a_))
    _near(f(q, v, a), rbd.aba(m, q, v, a))
    assert _calls(f, q, v, a) == 1
    g = jax.vmap(jax.jacrev(lambda q_, v_, a_: rj.aba(m, q_, v_, a_), argnums=(1, 2)))
    dv, dtau = g(q, v, a)
    d = rbd.aba_derivatives(m, q, v, a)
    _near(dv, d.dqdd_dv)
    _near(dtau, d.dqdd_dtau)
    assert _calls(g, q, v, a) == 1
    # nested vmap (2 x 3), an unbatched argument, and leading axes given directly
    qq, vv = q.reshape(2, 3, m.nq), v.reshape(2, 3, m.nv)
    h = jax.vmap(jax.vmap(lambda q_, v_: rj.rnea(m, q_, v_, a[0])))
    # a[0] repeated as a C-contiguous copy (not np.broadcast_to's read-only strided view):
    # the NumPy references then run on the specialisations `rbdiff compile` caches
    a0 = np.repeat(a[:1], len(v), 0)
    want = rbd.rnea(m, q, v, a0).reshape(2, 3, m.nv)
    _near(h(qq, vv), want)
    assert _calls(h, qq, vv) == 1
    _near(rj.rnea(m, qq, vv, a[0]), want)
    H = jax.vmap(jax.hessian(lambda v_, q_: rj.rnea(m, q_, v_, a[0])[0]), (0, 0))(v, q)
    _near(H, rbd.rnea_second_order_derivatives(m, q, v, a0).d2tau_dv2[:, 0])


def test_jit_and_vmap_of_every_function():
    m = _model("tree0")
    q, v, a = _state(m, batch=3)
    frame = m.frames[-1].name
    fns = {"rnea": (q, v, a), "aba": (q, v, a), "crba": (q,), "minverse": (q,),
           "nonlinear_effects": (q, v), "gravity": (q,), "integrate": (q, v)}
    for fn, args in fns.items():
        f = jax.jit(jax.vmap(lambda *x, fn=fn: getattr(rj, fn)(m, *x)))
        _near(f(*args), getattr(rbd, fn)(m, *args))
    _near(jax.jit(jax.vmap(lambda x: rj.frame_placement(m, x, frame)))(q),
          rbd.frame_placement(m, q, frame))
    q1 = rbd.integrate(m, q, 0.2 * v)
    _near(jax.jit(lambda x, y: rj.difference(m, x, y))(q, q1), rbd.difference(m, q, q1))


def test_scan_and_grad_under_jit():
    """A rollout inside lax.scan, differentiated: the kernels inside XLA's loop."""
    m = _model("iiwa14")
    q0, v0, tau = _state(m, seed=5)

    def rollout(tau_):
        def step(c, _):
            q, v = c
            v = v + 0.01 * rj.aba(m, q, v, tau_)
            return (rj.integrate(m, q, 0.01 * v), v), None
        (q, v), _ = jax.lax.scan(step, (q0, v0), None, length=5)
        return jnp.sum(q ** 2) + jnp.sum(v ** 2)

    check_grads(jax.jit(rollout), (tau,), order=1, modes=("rev",))


# ---- bad input --------------------------------------------------------------------------


def test_bad_input_is_refused_at_trace_time():
    m = _model("tree14")
    q, v, a = _state(m)

    def traced(f, *args):
        return jax.eval_shape(f, *args)          # trace only: no kernel runs

    with pytest.raises(ValueError, match=r"q: expected shape \(%d,\)" % m.nq):
        traced(lambda q_: rj.rnea(m, q_, v, a), q[:-1])
    with pytest.raises(ValueError, match="tau: expected shape"):
        traced(lambda t: rj.aba(m, q, v, t), np.zeros((2, m.nv + 1)))
    with pytest.raises(TypeError, match="q: expected a real floating array"):
        traced(lambda q_: rj.crba(m, q_), q.astype(complex))
    with pytest.raises(ValueError, match="do not broadcast"):
        traced(lambda v_: rj.rnea(m, np.stack([q] * 3), v_, a), np.zeros((2, m.nv)))
    with pytest.raises(KeyError):
        rj.frame_placement(m, q, "no such frame")
    with pytest.raises(IndexError, match="out of range"):
        rj.frame_placement(m, q, len(m.frames))
    with pytest.raises(TypeError, match="rbdiff Model"):
        rj.gravity(object(), q)


def test_large_vmap_runs_the_parallel_entries_in_one_call():
    from rbdiff.jax import calls as ffi
    m = _model("tree0")
    q, v, a = _state(m, batch=131)
    f = jax.jit(jax.vmap(jax.jacrev(lambda q_, v_, a_: rj.rnea(m, q_, v_, a_), argnums=2)))
    _near(f(q, v, a), rbd.crba(m, q))
    assert _calls(f, q, v, a) == 1
    if ffi._chunks(len(q)):       # omp / tbb: the call linked a parallel entry (else serial)
        from rbdiff.jax import entries
        assert any(entries._TABLE[k] for k, (n, _) in enumerate(entries.SLOTS)
                   if n.endswith("_parallel"))


def test_float32_without_x64():
    m = _model("tree14")
    q, v, a = _state(m)
    with jax.enable_x64(False):
        q32, v32, a32 = (np.float32(x) for x in (q, v, a))
        tau = jax.jit(lambda *x: rj.rnea(m, *x))(q32, v32, a32)
        assert tau.dtype == jnp.float32
        _near(tau, rbd.rnea(m, q, v, a), dict(rtol=1e-4, atol=1e-3))
        M = jax.jacrev(lambda a_: rj.rnea(m, q32, v32, a_))(a32)
        assert M.dtype == jnp.float32
        _near(M, rbd.crba(m, q), dict(rtol=1e-4, atol=1e-4))


def test_gpu_backend_and_nan_input_are_not_silent(monkeypatch):
    m = _model("iiwa14")
    q, v, a = _state(m)
    bad = q.copy()
    bad[0] = np.nan                     # refused by the kernel at run time: NaN out
    assert np.all(np.isnan(np.asarray(rj.aba(m, bad, v, a))))
    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
    with pytest.raises(NotImplementedError, match="CPU only"):
        jax.eval_shape(lambda q_: rj.rnea(m, q_, v, a), q)


def test_entries_table_refuses_a_wrong_signature():
    """rbdiff.jax.entries.run checks its arguments against the slot's signature when the
    caller compiles (a mismatch would call the entry with the wrong memory layout)."""
    from numba import errors, njit
    from rbdiff.jax import entries
    k = entries.SLOT["gravity_batch"]

    @njit
    def wrong(q):
        return entries.run(k, 0, (q, q))

    with pytest.raises(errors.TypingError, match=r"run\(gravity_batch\)"):
        wrong(np.zeros((2, 3)))


def test_batches_take_the_cpu_policy_decision_at_run_time():
    """No fixed item threshold: each call's serial / parallel choice is rbdiff.cpu.policy's
    rule on a plan row that the handler times (plans.py); policy.forced at trace time pins
    it. Every mode gives the NumPy API's values."""
    from rbdiff.cpu import policy
    from rbdiff.jax import plans
    m = _model("tree0")
    q, v, tau = _state(m, batch=16)
    ref = rbd.aba(m, q, v, tau)
    for mode in ("serial", "parallel", "auto"):
        with policy.forced(mode):
            f = jax.jit(jax.vmap(lambda q_, v_, t_: rj.aba(m, q_, v_, t_)))
            f(q, v, tau)                  # traced here: the mode is this computation's
        for _ in range(3):
            _near(f(q, v, tau), ref)
    row = plans.PLANS[plans.slot(m, "aba")]
    assert row[plans.RUNS] >= 2 and row[plans.ITEM] > 0      # the auto runs were timed


def test_bench_floor_rows():
    """rbdiff.bench.jax's floor rows on one small case: rbdiff's time, the floor
    (1.5 x NumPy + 20 us) and their ratio, all positive and consistent."""
    from rbdiff.bench import jax as bj
    rows = bj.floors(quick=True, robots=("iiwa14",), batches=(4,))
    assert [(r["robot"], r["B"]) for r in rows] == [("iiwa14", 4)]
    r = rows[0]
    assert r["rbdiff"] > 0 and r["numpy"] > 0
    assert r["floor"] == pytest.approx(1.5 * r["numpy"] + 20e-6)
    assert r["ratio"] == pytest.approx(r["rbdiff"] / r["floor"])
    assert "| iiwa14 | 4 |" in bj.floor_table(rows)


def test_contract_equals_einsum_under_every_transform(monkeypatch):
    """The rules' products as one custom call (contract.py) against the einsum they
    replace: values, grad, hessian, jacfwd in J, vmap, float32; and the gradient of aba
    through the rules with either, equal."""
    from rbdiff.jax import rules
    from rbdiff.jax.contract import contract
    rng = np.random.default_rng(5)
    J, x = rng.normal(size=(3, 5, 4)), rng.normal(size=(3, 4))
    y = rng.normal(size=(3, 5))
    ein = lambda J_, x_: jnp.einsum("...ij,...j->...i", J_, x_)        # noqa: E731
    _near(contract(J, x), ein(J, x))
    _near(contract(J, y, transpose=True), jnp.einsum("...ij,...i->...j", J, y))
    f = lambda J_, x_: jnp.sum(jnp.sin(contract(J_, x_)))             # noqa: E731
    g = lambda J_, x_: jnp.sum(jnp.sin(ein(J_, x_)))                   # noqa: E731
    for a, b in zip(jax.grad(f, (0, 1))(J, x), jax.grad(g, (0, 1))(J, x)):
        _near(a, b)
    _near(jax.hessian(f, 1)(J, x), jax.hessian(g, 1)(J, x))
    _near(jax.jacfwd(f, 0)(J, x), jax.jacfwd(g, 0)(J, x))
    _near(jax.vmap(contract, (None, 0))(J[0], x), ein(J[0], x))
    with jax.enable_x64(False):
        out = jax.jit(contract)(J.astype(np.float32), x.astype(np.float32))
        assert out.dtype == jnp.float32
        np.testing.assert_allclose(np.asarray(out), ein(J, x), rtol=1e-5, atol=1e-5)
    m = _model("tree0")
    q, v, tau = _state(m, batch=3)
    loss = lambda q_, v_, t_: jnp.sum(rj.aba(m, q_, v_, t_) ** 2)      # noqa: E731
    fast = jax.jit(jax.vmap(jax.grad(loss, argnums=(0, 1, 2))))
    assert "rbdiff_contract" in fast.lower(q, v, tau).as_text()
    fast = fast(q, v, tau)
    import rbdiff.jax as rjax
    monkeypatch.setattr(rules, "_mv", ein)
    monkeypatch.setattr(rjax, "_RULES", {})          # rules rebuilt with the einsum
    general = jax.jit(jax.vmap(jax.grad(loss, argnums=(0, 1, 2))))(q, v, tau)
    for a, b in zip(fast, general):
        _near(a, b)


@pytest.mark.parametrize("name", ["tree0", "tree14", "every joint type"])
def test_tangent_matrix_custom_call_equals_the_jax_numpy_map(name):
    """T(q) from the handler (tangent_map.py) against tangent_of_ambient in jax.numpy,
    off the manifold, batched and under vmap, and its derivative (the general map's)."""
    m = _model(name) if name in MODELS else rbd.models.random_tree(6, 19, floating_base=True)
    T = rj._rules(m).tangent_matrix
    if m.nq == m.nv:
        pytest.skip("no quaternion or (cos, sin) pair: the map is the identity")
    q = _off_manifold(m, _state(m, batch=3)[0])
    _near(T(q), T.general(q))
    _near(jax.jit(jax.vmap(T))(q), T.general(q))
    _near(jax.jacfwd(T)(q[0]), jax.jacfwd(T.general)(q[0]))


def test_parallel_entries_link_when_ready_else_compile_in_the_background(monkeypatch):
    """A trace that may run in parallel links the parallel entries only when they are
    compiled, cached or done compiling in a background child; otherwise it starts that
    child and the batch runs serially (no first call stops for a parallel compile);
    where no child can start, it links (compiles) them in place."""
    from rbdiff.cpu import background
    from rbdiff.jax import entries

    name = "aba_derivatives_parallel"
    k = entries.SLOT[name]
    linked, spawned = [], []

    class Job:
        done = None

        def poll(self):
            return self.done

    job = Job()
    monkeypatch.setattr(entries, "link", lambda names: linked.extend(names))
    monkeypatch.setattr(entries, "_TABLE", np.zeros_like(entries._TABLE))
    monkeypatch.setattr(entries, "_PREFETCH", {})
    monkeypatch.setattr(background, "_cached", lambda d, s: False)
    dispatcher = getattr(entries.cb, name)
    monkeypatch.setattr(dispatcher, "overloads", {}, raising=False)
    monkeypatch.setattr(background, "_spawn",
                        lambda d, s, urgent=False: spawned.append(d) or job)
    entries.link_or_prefetch([name])
    assert spawned == [dispatcher] and linked == []          # compiling elsewhere
    entries.link_or_prefetch([name])
    assert len(spawned) == 1 and linked == []                # still running: no second
    job.done = 0
    entries.link_or_prefetch([name])
    assert linked == [name]                                  # done: loaded and linked
    monkeypatch.setattr(entries, "_PREFETCH", {})
    monkeypatch.setattr(background, "_spawn", lambda d, s, urgent=False: None)
    linked.clear()
    entries.link_or_prefetch([name])
    assert linked == [name] and entries._TABLE[k] == 0       # no child: in place
