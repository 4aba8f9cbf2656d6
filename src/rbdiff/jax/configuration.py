"""Configuration space in jax.numpy: the retraction of ambient q, integrate, difference.

These are differentiated by JAX itself (no kernel call): exactly, to every order, and
with the series branches at small angles that keep the derivatives finite at zero. The
math is rbdiff.model.lie's, written once over any array namespace (rbdiff.torch uses the
same source with torch's functions); here with jax.numpy's.
"""

from types import SimpleNamespace

import jax.numpy as jnp

from ..model import lie
from ..model.tangent import normalised_blocks

JAX = SimpleNamespace(sqrt=jnp.sqrt, sin=jnp.sin, cos=jnp.cos, atan2=jnp.arctan2,
                      where=jnp.where, stack=lambda xs: jnp.stack(xs, -1))


def _unit(x):
    return x / jnp.sqrt(jnp.sum(x * x, axis=-1, keepdims=True))


def retract(model, q):
    """q with every quaternion and (cos, sin) pair divided by its norm (..., nq): the map
    through which rbdiff.jax reads an ambient q."""
    pieces, at = [], 0
    for k, n in normalised_blocks(model):
        pieces += [q[..., at:k], _unit(q[..., k:k + n])]
        at = k + n
    if not pieces:
        return q
    return jnp.concatenate(pieces + [q[..., at:]], axis=-1)


def _common(a, b):
    lead = jnp.broadcast_shapes(a.shape[:-1], b.shape[:-1])
    return (jnp.broadcast_to(a, lead + a.shape[-1:]), jnp.broadcast_to(b, lead + b.shape[-1:]))


def integrate(model, q, v):
    """retract(q) (+) v (..., nq), as rbd.integrate (Pinocchio's integrate, including its
    first-order renormalisation of the result)."""
    q, v = _common(retract(model, q), v)
    return JAX.stack(lie.integrate(model, q, v, JAX))


def difference(model, q0, q1):
    """retract(q1) (-) retract(q0) (..., nv), as rbd.difference."""
    q0, q1 = _common(retract(model, q0), retract(model, q1))
    return JAX.stack(lie.difference(model, q0, q1, JAX))
