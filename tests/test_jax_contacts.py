"""rbdiff.jax.contact_dynamics (a jax.pure_callback under a custom_jvp, jax/contacts.py):
values equal the NumPy API; jacfwd / jacrev (q through rj.integrate) equal
rbd.contact_dynamics_derivatives; check_grads (forward and reverse) in ambient
coordinates; jit, vmap (nested) and batches; float32 without x64; a second derivative
and bad input refused. solo12 + free flyer on its four feet (3D, LOCAL_WORLD_ALIGNED,
Baumgarte gains)."""

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


def _state(seed=1, batch=None):
    rng = np.random.default_rng(seed)
    s = () if batch is None else (batch,)
    return (rbd.random_configuration(MODEL, rng, batch=batch),
            rng.normal(size=s + (MODEL.nv,)), rng.normal(size=s + (MODEL.nv,)))


def retract(model, q):
    """q as the callback reads it (jax.numpy's retraction: an ulp off q)."""
    return np.asarray(_retract(model, jnp.asarray(q)))


def _near(x, y, tol=1e-10):
    x, y = np.asarray(x), np.asarray(y)
    assert np.max(np.abs(x - y)) <= tol * max(1.0, np.max(np.abs(y)))


def test_values_and_jacobians_equal_numpy():
    q, v, tau = _state()
    out = rj.contact_dynamics(MODEL, q, v, tau, CS)
    assert isinstance(out, rbd.results.ContactDynamics)
    ref = rbd.contact_dynamics(MODEL, retract(MODEL, q), v, tau, CS)
    np.testing.assert_array_equal(out.qdd, ref.qdd)
    np.testing.assert_array_equal(out.forces, ref.forces)
    d = rbd.contact_dynamics_derivatives(MODEL, q, v, tau, CS)

    def through(dq, v, tau):
        return tuple(rj.contact_dynamics(MODEL, rj.integrate(MODEL, q, dq), v, tau, CS))

    z = jnp.zeros(MODEL.nv)
    for jac in (jax.jacfwd, jax.jacrev):
        (qq, qv, qt), (fq, fv, ft) = jax.jit(jac(through, argnums=(0, 1, 2)))(z, v, tau)
        for ours, theirs in zip((qq, qv, qt, fq, fv, ft), d):
            _near(ours, theirs)


def test_check_grads_ambient():
    q, v, tau = _state(2)

    def f(q, v, tau):
        qdd, forces = rj.contact_dynamics(MODEL, q, v, tau, CS)
        return jnp.concatenate([qdd, forces])

    check_grads(f, (q, v, tau), order=1, modes=("fwd", "rev"), eps=1e-6, atol=1e-4,
                rtol=1e-5)


def test_batches_vmap_float32_and_refusals():
    q, v, tau = _state(4, batch=4)
    ref = rbd.contact_dynamics(MODEL, retract(MODEL, q), v, tau, CS)
    out = rj.contact_dynamics(MODEL, q, v, tau, CS)
    assert out.forces.shape == (4, 12)
    np.testing.assert_array_equal(out.forces, ref.forces)
    f = lambda a, b, c: rj.contact_dynamics(MODEL, a, b, c, CS).forces  # noqa: E731
    vm = jax.jit(jax.vmap(jax.vmap(f)))(*(x.reshape((2, 2, -1)) for x in (q, v, tau)))
    # against the batch under jit too (XLA's fused retraction may differ from the
    # eager one by an ulp of q)
    np.testing.assert_array_equal(vm.reshape(4, -1), jax.jit(f)(q, v, tau))
    jb = jax.vmap(jax.jacrev(f, argnums=2))(q, v, tau)
    _near(jb, rbd.contact_dynamics_derivatives(MODEL, q, v, tau, CS).dforces_dtau)
    with jax.enable_x64(False):
        o32 = rj.contact_dynamics(MODEL, *(x.astype(np.float32) for x in (q, v, tau)), CS)
        assert o32.qdd.dtype == jnp.float32
        _near(o32.forces, ref.forces, 1e-4)
    with pytest.raises(NotImplementedError, match="second derivative of contact_dynamics"):
        jax.hessian(lambda t: rj.contact_dynamics(MODEL, q[0], v[0], t, CS).qdd[0])(tau[0])
    with pytest.raises(KeyError):
        rj.contact_dynamics(MODEL, q[0], v[0], tau[0], (rbd.Contact("NO_FOOT"),))
    with pytest.raises(ValueError, match="tau"):
        rj.contact_dynamics(MODEL, q[0], v[0], tau[0, :-1], CS)
    with pytest.raises(Exception, match="damping"):        # raised by the callback
        rj.contact_dynamics(MODEL, q[0], v[0], tau[0], CS + CS[:1]).qdd.block_until_ready()
