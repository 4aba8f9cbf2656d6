"""Configuration space in jax.numpy: the retraction of ambient q, integrate, difference.

These are differentiated by JAX itself (no kernel call): exactly, to every order, and
with the series branches at small angles that keep the derivatives finite at zero.
The Lie-group helpers (quaternion exp, product, rotation, SE(3)'s V and V^-1) are
rbdiff.model.configuration's NumPy reference functions, rebound to jax.numpy rather than
copied: the same source serves both. Only the per-joint assembly is written here
(the reference writes into arrays in place, which jax.numpy cannot), and the quaternion
log, whose reference takes sqrt(|v|^2) unguarded (an infinite derivative at 0).
"""

import types

import jax.numpy as jnp

from ..model import configuration as _ref
from ..model import layout as L


def _rebind(module, xp):
    """The module's functions with ``np`` meaning ``xp`` (calls between them rebound too)."""
    g = dict(vars(module), np=xp)
    for k, f in vars(module).items():
        if isinstance(f, types.FunctionType) and f.__module__ == module.__name__:
            g[k] = types.FunctionType(f.__code__, g, f.__name__, f.__defaults__, f.__closure__)
    return types.SimpleNamespace(**g)


_G = _rebind(_ref, jnp)


def _unit(x):
    return x / jnp.sqrt(jnp.sum(x * x, axis=-1, keepdims=True))


def _normalised_blocks(model):
    """(start, length) of every quaternion and (cos, sin) pair in q."""
    out = []
    for i in range(1, model.njoints + 1):
        t, k = int(model.joint_types[i]), int(model.idx_q[i])
        n = {L.REVOLUTE_UNBOUNDED: (k, 2), L.SPHERICAL: (k, 4), L.FREE_FLYER: (k + 3, 4)}.get(t)
        if n:
            out.append(n)
    return out


def retract(model, q):
    """q with every quaternion and (cos, sin) pair divided by its norm (..., nq): the map
    through which rbdiff.jax reads an ambient q."""
    pieces, at = [], 0
    for k, n in _normalised_blocks(model):
        pieces += [q[..., at:k], _unit(q[..., k:k + n])]
        at = k + n
    if not pieces:
        return q
    return jnp.concatenate(pieces + [q[..., at:]], axis=-1)


def _quat_log(qt):
    """Rotation vector of a unit quaternion, shortest arc; finite derivatives at 0."""
    qt = jnp.where(qt[..., 3:] < 0, -qt, qt)
    u, w = qt[..., :3], qt[..., 3]
    s2 = jnp.sum(u * u, axis=-1)
    small = s2 < 1e-16
    s = jnp.sqrt(jnp.where(small, 1.0, s2))
    k = jnp.where(small, 2 / w * (1 - s2 / (3 * w * w)), 2 * jnp.arctan2(s, w) / s)
    return u * k[..., None]


def _mv(A, x):
    return jnp.einsum("...ij,...j->...i", A, x)


def integrate(model, q, v):
    """retract(q) (+) v (..., nq), as rbd.integrate (Pinocchio's integrate, including its
    first-order renormalisation of the result)."""
    q = retract(model, q)
    out = []
    for i in range(1, model.njoints + 1):
        t, iq, iv = int(model.joint_types[i]), int(model.idx_q[i]), int(model.idx_v[i])
        if t in (L.REVOLUTE, L.PRISMATIC):
            out.append(q[..., iq:iq + 1] + v[..., iv:iv + 1])
        elif t == L.REVOLUTE_UNBOUNDED:
            c, s = q[..., iq], q[..., iq + 1]
            cv, sv = jnp.cos(v[..., iv]), jnp.sin(v[..., iv])
            out.append(_G._normalise(jnp.stack([c * cv - s * sv, s * cv + c * sv], -1)))
        elif t == L.SPHERICAL:
            out.append(_G._normalise(_G.quat_mul(q[..., iq:iq + 4],
                                                 _G.quat_exp(v[..., iv:iv + 3]))))
        else:
            qt = q[..., iq + 3:iq + 7]
            w, lin = v[..., iv + 3:iv + 6], v[..., iv:iv + 3]
            out.append(q[..., iq:iq + 3] + _mv(_G.quat_to_rot(qt), _mv(_G._V(w), lin)))
            q1 = _G.quat_mul(qt, _G.quat_exp(w))
            flip = jnp.sum(q1 * qt, axis=-1, keepdims=True) < 0   # stay on qt's side
            out.append(_G._normalise(jnp.where(flip, -q1, q1)))
    return jnp.concatenate(out, axis=-1)


def difference(model, q0, q1):
    """retract(q1) (-) retract(q0) (..., nv), as rbd.difference."""
    q0, q1 = retract(model, q0), retract(model, q1)
    out = []
    for i in range(1, model.njoints + 1):
        t, iq = int(model.joint_types[i]), int(model.idx_q[i])
        if t in (L.REVOLUTE, L.PRISMATIC):
            out.append(q1[..., iq:iq + 1] - q0[..., iq:iq + 1])
        elif t == L.REVOLUTE_UNBOUNDED:
            c0, s0, c1, s1 = q0[..., iq], q0[..., iq + 1], q1[..., iq], q1[..., iq + 1]
            out.append(jnp.arctan2(c0 * s1 - s0 * c1, c0 * c1 + s0 * s1)[..., None])
        elif t == L.SPHERICAL:
            out.append(_quat_log(_G.quat_mul(_G.quat_conj(q0[..., iq:iq + 4]),
                                             q1[..., iq:iq + 4])))
        else:
            qa, qb = q0[..., iq + 3:iq + 7], q1[..., iq + 3:iq + 7]
            w = _quat_log(_G.quat_mul(_G.quat_conj(qa), qb))
            dp = jnp.einsum("...ji,...j->...i", _G.quat_to_rot(qa),
                            q1[..., iq:iq + 3] - q0[..., iq:iq + 3])
            out += [_mv(_G._Vinv(w), dp), w]
    return jnp.concatenate(out, axis=-1)
