"""rbdiff.jax.contact_dynamics and impulse_dynamics (FFI handlers with the contact tables
as operands, under a custom_jvp: jax/contacts.py): values equal the NumPy API; jacfwd /
jacrev (q through rj.integrate) and jit(grad) / jit(vmap(vmap(grad))) of a loss equal
rbd.contact_dynamics_derivatives to 1e-10; check_grads in ambient coordinates; no host
callback in the jitted computation; Pinocchio's constraintDynamics and its derivatives
(jitted); two contact sets under one jitted function; float32 without x64; dependent
sets refused at trace time, NaN in gives NaN out. solo12 + free flyer on its four feet
(3D, LOCAL_WORLD_ALIGNED, Baumgarte gains) and talos on its two soles (6D, LOCAL)."""

import functools

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402
from jax.test_util import check_grads  # noqa: E402

import rbdiff as rbd  # noqa: E402
import rbdiff.jax as rj  # noqa: E402
from rbdiff.jax.configuration import retract as _retract  # noqa: E402

MODEL = rbd.load_robot("solo12", floating_base=True)
FEET = ("FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT")
CS = tuple(rbd.Contact(f, "3d", "local_world_aligned", gains=(2.0, 1.0),
                       placement=np.eye(4)) for f in FEET)


@functools.lru_cache(maxsize=None)
def _talos():
    m = rbd.load_robot("talos_full_v2", floating_base=True)
    return m, tuple(rbd.Contact(f, "6d", "local", gains=(1.0, 2.0), placement=np.eye(4))
                    for f in ("left_sole_link", "right_sole_link"))


def _state(seed=1, batch=None, model=MODEL):
    rng = np.random.default_rng(seed)
    s = () if batch is None else (batch,)
    return (rbd.random_configuration(model, rng, batch=batch),
            rng.normal(size=s + (model.nv,)), rng.normal(size=s + (model.nv,)))


def retract(model, q):
    """q as the kernels read it: the jitted retraction rbdiff.jax applies (rules.py); a
    writeable copy (a read-only JAX buffer would compile the NumPy batches again)."""
    return np.array(jax.jit(functools.partial(_retract, model))(jnp.asarray(q)))


def _near(x, y, tol=1e-10):
    x, y = np.asarray(x), np.asarray(y)
    assert x.shape == y.shape
    assert np.max(np.abs(x - y)) <= tol * max(1.0, np.max(np.abs(y)))


@pytest.mark.parametrize("robot", ["solo12", "talos"])
def test_values_and_jacobians_equal_numpy(robot):
    model, cs = (MODEL, CS) if robot == "solo12" else _talos()
    q, v, tau = _state(model=model)
    out = rj.contact_dynamics(model, q, v, tau, cs)
    assert isinstance(out, rbd.results.ContactDynamics)
    ref = rbd.contact_dynamics(model, retract(model, q), v, tau, cs)
    np.testing.assert_array_equal(out.qdd, ref.qdd)
    np.testing.assert_array_equal(out.forces, ref.forces)
    d = rbd.contact_dynamics_derivatives(model, q, v, tau, cs)

    def through(dq, v, tau):
        return tuple(rj.contact_dynamics(model, rj.integrate(model, q, dq), v, tau, cs))

    z = jnp.zeros(model.nv)
    # forward and reverse on solo12; reverse only on talos (nv = 50: a slower XLA compile)
    for jac in (jax.jacfwd, jax.jacrev) if model is MODEL else (jax.jacrev,):
        (qq, qv, qt), (fq, fv, ft) = jax.jit(jac(through, argnums=(0, 1, 2)))(z, v, tau)
        for ours, theirs in zip((qq, qv, qt, fq, fv, ft), d):
            _near(ours, theirs)


def test_jitted_value_and_jacobians_equal_pinocchio():
    """The independent oracle: Pinocchio 4.1's constraintDynamics and
    computeConstraintDynamicsDerivatives, set up as tests/test_contact_dynamics.py does
    (its tolerance: 1e-10, or cond(J M^-1 J^T) eps where that is larger)."""
    pytest.importorskip("pinocchio")
    from test_contact_dynamics import contact_set, pair, pin_solve, rel, state, tolerance
    model, pm, _ = pair("solo12")
    q, v, tau = state(pm, 3)
    cs = contact_set("solo12", "3d", "local_world_aligned", (2.0, 1.0))
    tol = tolerance(model, q, cs)
    out = jax.jit(rj.contact_dynamics, static_argnums=(0, 4))(model, q, v, tau, cs)
    a, lam = pin_solve(model, pm, q, v, tau, cs)
    assert rel(out.qdd, a) < tol and rel(out.forces, lam) < tol

    def through(dq, v, tau):
        return tuple(rj.contact_dynamics(model, rj.integrate(model, q, dq), v, tau, cs))

    ours = jax.jit(jax.jacrev(through, argnums=(0, 1, 2)))(np.zeros(model.nv), v, tau)
    for x, theirs in zip((*ours[0], *ours[1]), pin_solve(model, pm, q, v, tau, cs,
                                                         derivatives=True)):
        assert rel(x, theirs) < tol


def test_check_grads_ambient():
    q, v, tau = _state(2)

    def f(q, v, tau):
        qdd, forces = rj.contact_dynamics(MODEL, q, v, tau, CS)
        return jnp.concatenate([qdd, forces])

    check_grads(f, (q, v, tau), order=1, modes=("fwd", "rev"), eps=1e-6, atol=1e-4,
                rtol=1e-5)


def _ffi_targets(jaxpr):
    """The contact kernels' ffi_call targets in a jaxpr, sub-jaxprs included."""
    out = []
    for eq in jaxpr.eqns:
        if eq.primitive.name == "ffi_call" and "dynamics" in eq.params["target_name"]:
            out.append(eq.params["target_name"])
        for p in eq.params.values():
            for sub in (p if isinstance(p, (tuple, list)) else (p,)):
                inner = getattr(sub, "jaxpr", sub)
                if hasattr(inner, "eqns"):
                    out += _ffi_targets(inner)
    return out


def _loss(q, dq, v, tau, cs=CS):
    """A rollout-style loss of one state: q moved by dq (its tangent gradient at 0)."""
    qdd, forces = rj.contact_dynamics(MODEL, rj.integrate(MODEL, q, dq), v, tau, cs)
    return jnp.sum(qdd ** 2) + 0.5 * jnp.sum(forces ** 2)


def _loss_grad_numpy(q, v, tau, cs=CS):
    """The gradient of _loss in (dq, v, tau) from the NumPy API's partials."""
    qdd, f = rbd.contact_dynamics(MODEL, q, v, tau, cs)
    d = rbd.contact_dynamics_derivatives(MODEL, q, v, tau, cs)
    return tuple(2 * np.einsum("...i,...ij->...j", qdd, d[k])
                 + np.einsum("...i,...ij->...j", f, d[3 + k]) for k in range(3))


def test_jit_grad_and_vmap_over_two_axes_equal_numpy():
    q, v, tau = _state(3, batch=6)
    grad = jax.jit(jax.grad(_loss, argnums=(1, 2, 3)))
    z = jnp.zeros(MODEL.nv)
    for ours, theirs in zip(grad(q[0], z, v[0], tau[0]),
                            _loss_grad_numpy(q[0], v[0], tau[0])):
        _near(ours, theirs)
    vg = jax.jit(jax.vmap(jax.vmap(jax.grad(_loss, argnums=(1, 2, 3)))))
    args = [x.reshape((2, 3, -1)) for x in (q, np.zeros((6, MODEL.nv)), v, tau)]
    # one batched handler call for the six states: the derivatives kernel's
    assert _ffi_targets(jax.make_jaxpr(vg)(*args).jaxpr) == [
        "rbdiff_contact_dynamics_derivatives"]
    got = vg(*args)
    for ours, theirs in zip(got, _loss_grad_numpy(q, v, tau)):
        assert ours.shape == (2, 3, MODEL.nv)
        _near(ours.reshape(6, -1), theirs)
    # one batched handler call: the vmapped values equal the batch under jit
    f = jax.jit(lambda a, b, c: rj.contact_dynamics(MODEL, a, b, c, CS).forces)
    two = [x.reshape((2, 3, -1)) for x in (q, v, tau)]
    vm = jax.jit(jax.vmap(jax.vmap(f)))(*two)
    np.testing.assert_array_equal(vm.reshape(6, -1), f(q, v, tau))
    np.testing.assert_array_equal(f(*two), vm)       # two leading axes without vmap


def test_jitted_call_runs_no_host_callback():
    q, v, tau = _state(4)
    for fn in (lambda q, v, t: rj.contact_dynamics(MODEL, q, v, t, CS),
               jax.grad(lambda q, v, t: _loss(q, jnp.zeros(MODEL.nv), v, t),
                        argnums=(0, 1, 2)),
               lambda q, v, t: rj.impulse_dynamics(MODEL, q, v, CS)):
        text = jax.jit(fn).lower(q, v, tau).as_text()
        assert "rbdiff_contact_dynamics" in text or "rbdiff_impulse_dynamics" in text
        assert "callback" not in text


def test_two_contact_sets_under_one_jitted_function():
    """The same jitted function on two sets of the same size (rows reordered, another
    reference): each trace keeps its own tables."""
    q, v, tau = _state(5)
    other = tuple(rbd.Contact(f, "3d", "local") for f in reversed(FEET))
    f = jax.jit(rj.contact_dynamics, static_argnums=(0, 4))
    for cs in (CS, other, CS):
        out, ref = f(MODEL, q, v, tau, cs), rbd.contact_dynamics(MODEL, retract(MODEL, q),
                                                                v, tau, cs)
        _near(out.forces, ref.forces, 1e-12)
        _near(out.qdd, ref.qdd, 1e-12)
    assert np.max(np.abs(f(MODEL, q, v, tau, CS).forces
                         - f(MODEL, q, v, tau, other).forces)) > 1e-3


def test_float32():
    q, v, tau = _state(6, batch=3)
    ref = rbd.contact_dynamics(MODEL, q, v, tau, CS)
    d = rbd.contact_dynamics_derivatives(MODEL, q, v, tau, CS)
    with jax.enable_x64(False):
        x32 = [x.astype(np.float32) for x in (q, v, tau)]
        o32 = jax.jit(lambda a, b, c: rj.contact_dynamics(MODEL, a, b, c, CS))(*x32)
        assert o32.qdd.dtype == o32.forces.dtype == jnp.float32
        jt = jax.jit(jax.vmap(jax.jacrev(
            lambda a, b, c: rj.contact_dynamics(MODEL, a, b, c, CS).forces, argnums=2)))(*x32)
        assert jt.dtype == jnp.float32
    # the kernels ran in float64 on float32 inputs: float32 rounding of inputs and outputs
    _near(o32.forces, ref.forces, 1e-4)
    _near(o32.qdd, ref.qdd, 1e-4)
    _near(jt, d.dforces_dtau, 1e-4)


def test_refusals_and_nan():
    q, v, tau = _state(7)
    f = jax.jit(rj.contact_dynamics, static_argnums=(0, 4))
    # dependent rows are a property of the set: refused when traced, named as NumPy does
    with pytest.raises(rbd.DependentContacts, match="row 0 of contact 4"):
        f(MODEL, q, v, tau, CS + CS[:1])
    with pytest.raises(rbd.DependentContacts):
        rj.impulse_dynamics(MODEL, q, v, (rbd.Contact("FL_FOOT", "6d"),
                                          rbd.Contact("FL_FOOT", "3d")))
    # a value the entries refuse: NaN out (a C handler cannot raise), the rest finite
    tau_nan = tau.copy()
    tau_nan[0] = np.nan
    bad = f(MODEL, q, v, tau_nan, CS)
    assert np.all(np.isnan(bad.qdd)) and np.all(np.isnan(bad.forces))
    assert np.all(np.isfinite(f(MODEL, q, v, tau, CS).forces))
    with pytest.raises(NotImplementedError, match="second derivative of contact_dynamics"):
        jax.hessian(lambda t: rj.contact_dynamics(MODEL, q, v, t, CS).qdd[0])(tau)
    with pytest.raises(KeyError):
        rj.contact_dynamics(MODEL, q, v, tau, (rbd.Contact("NO_FOOT"),))
    with pytest.raises(ValueError, match="tau"):
        rj.contact_dynamics(MODEL, q, v, tau[:-1], CS)
    with pytest.raises(ValueError, match="restitution"):
        rj.impulse_dynamics(MODEL, q, v, CS, restitution=1.5)
    # no contacts: aba and no forces (NumPy's convention), differentiable through aba
    out = rj.contact_dynamics(MODEL, q, v, tau, ())
    assert out.forces.shape == (0,)
    _near(out.qdd, rbd.aba(MODEL, q, v, tau), 1e-12)


def test_impulse_dynamics_equals_numpy():
    q, v, _ = _state(8, batch=4)
    r = 0.3
    out = jax.jit(jax.vmap(lambda a, b: rj.impulse_dynamics(MODEL, a, b, CS, r)))(q, v)
    assert isinstance(out, rbd.results.ImpulseDynamics)
    ref = rbd.impulse_dynamics(MODEL, retract(MODEL, q), v, CS, r)
    np.testing.assert_array_equal(out.v_after, ref.v_after)
    np.testing.assert_array_equal(out.impulses, ref.impulses)
    d = rbd.impulse_dynamics_derivatives(MODEL, q, v, CS, r)

    def through(q, dq, v):
        return tuple(rj.impulse_dynamics(MODEL, rj.integrate(MODEL, q, dq), v, CS, r))

    z = np.zeros_like(v)
    (vq, vv), (iq, iv) = jax.jit(jax.vmap(jax.jacrev(through, argnums=(1, 2))))(q, z, v)
    for ours, theirs in zip((vq, vv, iq, iv), d):
        _near(ours, theirs)
