"""rbdiff.jax's contact kinematics (frame_velocity, frame_acceleration, center_of_mass,
centroidal_momentum, potential_energy, kinetic_energy) against the NumPy API: values;
tangent Jacobians against the NumPy analytical derivatives (frame_*_derivatives with the
"local_world_aligned" origin term added here, com_jacobian, centroidal_dynamics_
derivatives, gravity, M v); ambient-q gradients against JAX's own numerical checker
(check_grads, forward and reverse); vmap as one kernel call; second derivatives refused.
Models: a random tree with a free flyer, a spherical, a continuous and a prismatic joint,
and solo12 + free flyer at a foot frame."""

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402
from jax.test_util import check_grads  # noqa: E402

import rbdiff as rbd  # noqa: E402
import rbdiff.jax as rj  # noqa: E402
from rbdiff.model import layout as L  # noqa: E402
from rbdiff.model.synthetic import random_tree  # noqa: E402
from rbdiff.model.tangent import normalised_blocks  # noqa: E402

REFS = ("local", "world", "local_world_aligned")
TOL = dict(rtol=1e-10, atol=1e-10)
_CACHE = {}


def _tree():
    m = random_tree(4, np.random.default_rng(14), floating_base=True)
    assert {L.FREE_FLYER, L.SPHERICAL} <= {int(t) for t in m.joint_types[1:]}
    return m, m.frames[-1].name


def _solo():
    return rbd.load_robot("solo12", floating_base=True), "FL_FOOT"


MODELS = {"tree": _tree, "solo12": _solo}


def _model(name):
    if name not in _CACHE:
        _CACHE[name] = MODELS[name]()
    return _CACHE[name]


def _state(m, seed=1, batch=None):
    rng = np.random.default_rng(seed)
    s = () if batch is None else (batch,)
    return (rbd.random_configuration(m, rng, batch=batch), rng.normal(size=s + (m.nv,)),
            rng.normal(size=s + (m.nv,)))


def _near(x, y, tol=TOL):
    np.testing.assert_allclose(np.asarray(x), np.asarray(y), **tol)


def _off_manifold(m, q):
    q = q.copy()
    for k, n in normalised_blocks(m):
        q[..., k:k + n] *= 1.3
    return q


def _w_cross(w, J):
    """[w x J[:3, k]; 0] for every column k (the origin term of "local_world_aligned")."""
    out = np.zeros((6, J.shape[1]))
    out[:3] = np.cross(w, J[:3].T).T
    return out


def _cases(m, frame):
    """(label, rbdiff.jax function of (q, v, a), NumPy function of (q, v, a), analytical
    tangent partials (d/dq, d/dv, d/da) of the NumPy value, None where independent)."""
    z = np.zeros(m.nv)
    out = []
    for ref in REFS:
        def vel_d(q, v, a, ref=ref):
            dq, dv = rbd.frame_velocity_derivatives(m, q, v, frame, ref)
            if ref == "local_world_aligned":
                dq = dq + _w_cross(rbd.frame_velocity(m, q, v, frame, ref)[3:], dv)
            return dq, dv, None
        out.append((f"frame_velocity[{ref}]",
                    lambda q, v, a, ref=ref: rj.frame_velocity(m, q, v, frame, ref),
                    lambda q, v, a, ref=ref: rbd.frame_velocity(m, q, v, frame, ref), vel_d))
        for c in (False, True):
            def acc_d(q, v, a, ref=ref, c=c):
                _, dq, dv, da = rbd.frame_acceleration_derivatives(m, q, v, a, frame, ref, c)
                if ref == "local_world_aligned" and not c:
                    acc = rbd.frame_acceleration(m, q, v, a, frame, ref)
                    dq = dq + _w_cross(acc[3:], da)
                return dq, dv, da
            out.append((f"frame_acceleration[{ref},{c}]",
                        lambda q, v, a, ref=ref, c=c: rj.frame_acceleration(m, q, v, a, frame,
                                                                             ref, c),
                        lambda q, v, a, ref=ref, c=c: rbd.frame_acceleration(m, q, v, a, frame,
                                                                              ref, c), acc_d))
    out += [
        ("center_of_mass", lambda q, v, a: rj.center_of_mass(m, q),
         lambda q, v, a: rbd.center_of_mass(m, q),
         lambda q, v, a: (rbd.com_jacobian(m, q), None, None)),
        ("centroidal_momentum", lambda q, v, a: rj.centroidal_momentum(m, q, v),
         lambda q, v, a: rbd.centroidal_momentum(m, q, v),
         lambda q, v, a: (rbd.centroidal_dynamics_derivatives(m, q, v, a).dh_dq,
                          rbd.centroidal_momentum_matrix(m, q), None)),
        ("potential_energy", lambda q, v, a: rj.potential_energy(m, q),
         lambda q, v, a: rbd.potential_energy(m, q),
         lambda q, v, a: (rbd.gravity(m, q), None, None)),
        # d/dq: 0.5 v^T dM/dq v, with dM/dq from rnea_second_order_derivatives (an
        # independent route from the rule's two rnea_derivatives calls)
        ("kinetic_energy", lambda q, v, a: rj.kinetic_energy(m, q, v),
         lambda q, v, a: rbd.kinetic_energy(m, q, v),
         lambda q, v, a: (0.5 * np.einsum("i,ijk,j->k", v,
                                          rbd.rnea_second_order_derivatives(m, q, z, z).dM_dq,
                                          v), rbd.crba(m, q) @ v, None)),
    ]
    return out


@pytest.mark.parametrize("name", list(MODELS))
def test_values_and_tangent_jacobians_equal_numpy_derivatives(name):
    """Values at q and off the manifold (read through the retraction); jacfwd / jacrev of
    f(integrate(q, e), v, a) at e = 0 and in v, a are the analytical partials."""
    m, frame = _model(name)
    q, v, a = _state(m)
    qo = _off_manifold(m, q)
    e0 = jnp.zeros(m.nv)
    for label, f, ref, partials in _cases(m, frame):
        want = np.asarray(ref(q, v, a))
        got = f(q, v, a)
        assert got.shape == want.shape and got.dtype == jnp.float64, label
        _near(got, want)
        _near(f(qo, v, a), want)
        g = lambda e, v_, a_, f=f: f(rj.integrate(m, q, e), v_, a_)
        for jac, tol in ((jax.jacfwd, TOL), (jax.jacrev, TOL)):
            J = jac(g, argnums=(0, 1, 2))(e0, v, a)
            for k, (Jk, Pk) in enumerate(zip(J, partials(q, v, a))):
                scale = max(1.0, float(np.max(np.abs(Jk))))
                if Pk is None:
                    assert np.max(np.abs(Jk)) == 0, (label, k)
                else:
                    _near(np.asarray(Jk) / scale, np.asarray(Pk) / scale, tol)


@pytest.mark.parametrize("name", list(MODELS))
def test_check_grads_in_ambient_coordinates(name):
    """JAX's numerical checker (central differences) on q in its ambient layout, off the
    manifold too, forward and reverse."""
    m, frame = _model(name)
    q, v, a = _state(m, seed=2)
    for label, f, _ref, _p in _cases(m, frame):
        check_grads(f, (_off_manifold(m, q), v, a), order=1, modes=("fwd", "rev"),
                    eps=1e-6)


def test_potential_energy_hessian():
    """Hessian of e -> V(q (+) e) at 0 (through gravity's rule: analytical): symmetric, equal
    to central second differences of the NumPy potential energy; its gravity Jacobian is
    rnea_derivatives' dtau_dq at v = a = 0."""
    m, _frame = _model("tree")
    q, _v, _a = _state(m, seed=3)
    z = np.zeros(m.nv)
    V = lambda e: rj.potential_energy(m, rj.integrate(m, q, e))
    H = np.asarray(jax.jacfwd(jax.grad(V))(jnp.zeros(m.nv)))
    _near(H, H.T)
    h, eye = 1e-4, np.eye(m.nv)
    Vn = lambda e: rbd.potential_energy(m, rbd.integrate(m, q, e))
    fd = np.array([[(Vn(h * (eye[i] + eye[j])) - Vn(h * (eye[i] - eye[j]))
                     - Vn(h * (eye[j] - eye[i])) + Vn(-h * (eye[i] + eye[j]))) / (4 * h * h)
                    for j in range(m.nv)] for i in range(m.nv)])
    _near(H, fd, dict(rtol=1e-5, atol=1e-5 * np.max(np.abs(H))))
    G = jax.jacfwd(lambda e: rj.gravity(m, rj.integrate(m, q, e)))(jnp.zeros(m.nv))
    _near(G, rbd.rnea_derivatives(m, q, z, z).dtau_dq)
    check_grads(lambda q_: rj.potential_energy(m, q_), (q,), order=2, modes=("fwd", "rev"))


def test_second_derivatives_raise():
    m, frame = _model("tree")
    q, v, a = _state(m)
    for fn, args in [(lambda q_, v_: rj.frame_velocity(m, q_, v_, frame, "world")[0],
                      (q, v)),
                     (lambda q_, v_: rj.frame_acceleration(m, q_, v_, a, frame)[0], (q, v)),
                     (lambda q_, v_: rj.center_of_mass(m, q_)[0], (q, v)),
                     (lambda q_, v_: rj.centroidal_momentum(m, q_, v_)[0], (q, v)),
                     (lambda q_, v_: rj.kinetic_energy(m, q_, v_), (q, v))]:
        with pytest.raises(NotImplementedError, match="second derivative of"):
            jax.hessian(fn, argnums=(0, 1))(*args)


# ---- batches, vmap, jit -------------------------------------------------------------------


def _kernel_calls(jaxpr):
    n = 0
    for eq in jaxpr.eqns:
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


def test_vmap_and_jit_are_one_batched_kernel_call():
    m, frame = _model("solo12")
    q, v, a = _state(m, seed=4, batch=6)
    for label, f, ref, _p in _cases(m, frame):
        g = jax.jit(jax.vmap(f))
        want = np.stack([np.asarray(ref(q[b], v[b], a[b])) for b in range(6)])
        _near(g(q, v, a), want)
        assert _kernel_calls(jax.make_jaxpr(jax.vmap(f))(q, v, a).jaxpr) == 1, label
    # nested vmap of a reverse gradient: one partials call, equal to the NumPy batch
    f = lambda q_, v_, a_: rj.frame_acceleration(m, q_, v_, a_, frame, "world", True)
    J = jax.jit(jax.vmap(jax.vmap(jax.jacrev(f, argnums=2))))(
        q.reshape(2, 3, -1), v.reshape(2, 3, -1), a.reshape(2, 3, -1))
    want = rbd.frame_acceleration_derivatives(m, q, v, a, frame, "world", True).da_da
    _near(J.reshape(want.shape), want)
    # leading axes given directly broadcast against each other
    # (v[0] repeated as a C-contiguous copy: the specialisation `rbdiff compile` caches)
    _near(rj.kinetic_energy(m, q, v[0]), rbd.kinetic_energy(m, q, np.repeat(v[:1], len(v), 0)))


def test_parallel_entries_equal_serial_bit_for_bit():
    """policy.forced("parallel") at trace time: the handlers' parallel entries (where the
    threading layer allows them; center_of_mass's slot has None-typed arguments) give the
    serial results bit for bit."""
    from rbdiff.cpu import policy
    m, frame = _model("solo12")
    q, v, a = _state(m, seed=8, batch=16)
    rbd.rnea(m, q, v, a)            # starts Numba's threading layer (jax calls._chunks)
    fns = [lambda q_, v_, a_: rj.center_of_mass(m, q_),
           lambda q_, v_, a_: rj.frame_acceleration(m, q_, v_, a_, frame,
                                                    "local_world_aligned"),
           lambda q_, v_, a_: rj.kinetic_energy(m, q_, v_)]
    out = {}
    for mode in ("serial", "parallel"):
        with policy.forced(mode):
            gs = [jax.jit(jax.vmap(jax.jacrev(g, argnums=(0, 1, 2)))) for g in fns]
            for g in gs:
                g(q, v, a)          # traced under the mode
        out[mode] = [[np.asarray(x) for x in g(q, v, a)] for g in gs]
    for s, p in zip(out["serial"], out["parallel"]):
        for x, y in zip(s, p):
            assert np.array_equal(x, y)


def test_float32_without_x64():
    m, frame = _model("tree")
    q, v, _a = _state(m)
    with jax.enable_x64(False):
        q32, v32 = np.float32(q), np.float32(v)
        out = jax.jit(lambda *x: rj.frame_velocity(m, *x, frame, "world"))(q32, v32)
        assert out.dtype == jnp.float32
        _near(out, rbd.frame_velocity(m, q, v, frame, "world"), dict(rtol=1e-4, atol=1e-4))
        g = jax.grad(lambda v_: rj.kinetic_energy(m, q32, v_))(v32)
        assert g.dtype == jnp.float32
        _near(g, rbd.crba(m, q) @ v, dict(rtol=1e-4, atol=1e-4))


def test_bad_input():
    m, frame = _model("tree")
    q, v, a = _state(m)
    with pytest.raises(ValueError, match=rf"v: expected shape \({m.nv},\)"):
        jax.eval_shape(lambda v_: rj.frame_velocity(m, q, v_, frame), v[:-1])
    with pytest.raises(ValueError, match="q: expected shape"):
        rj.center_of_mass(m, q[:-1])
    with pytest.raises(KeyError):
        rj.frame_velocity(m, q, v, "no such frame")
    with pytest.raises(IndexError, match="out of range"):
        rj.frame_acceleration(m, q, v, a, len(m.frames))
    with pytest.raises(ValueError, match="reference"):
        rj.frame_velocity(m, q, v, frame, "nowhere")
    with pytest.raises(TypeError, match="classical"):
        rj.frame_acceleration(m, q, v, a, frame, classical="yes")
    bad = q.copy()
    bad[0] = np.nan                 # refused by the kernel at run time: NaN out (as rnea)
    assert np.all(np.isnan(np.asarray(rj.frame_velocity(m, bad, v, frame))))
    assert np.isnan(float(rj.potential_energy(m, bad)))
