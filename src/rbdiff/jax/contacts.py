"""rbdiff.jax.contact_dynamics: the NumPy API's contact dynamics as a ``jax.pure_callback``
under a ``jax.custom_jvp`` whose rule is rbd.contact_dynamics_derivatives.

Not an FFI handler as the other kernels (ffi.py): the outputs' size (nc, the contact
rows) and the contact tables come with each call, so a host callback into the NumPy
function is the route; its cost over the NumPy call is JAX's callback dispatch (see
the report of issue 25). vmap of any depth is one batched NumPy call
(``vmap_method="broadcast_all"``, leading axes flattened), q is read through the
retraction as everywhere in rbdiff.jax (rules.py) and its tangent is mapped to the
ambient coordinates by the same tangent map."""

import jax
import numpy as np

import rbdiff as rbd

from ..results import ContactDynamics
from .configuration import retract
from .rules import _apply, _no_rule

_FUNCTIONS = {}     # (id(model), contacts) -> (model, differentiable function)


def _flat_call(fn, model, contacts, arrays, outs):
    """fn(model, *arrays, contacts) on float64 copies with every leading axis flattened
    into one batch; results reshaped back and cast to the arrays' dtype."""
    lead = arrays[0].shape[:-1]
    xs = [np.asarray(x, np.float64).reshape((-1,) + x.shape[-1:]) if lead else
          np.asarray(x, np.float64) for x in arrays]
    got = fn(model, *xs, contacts)
    dt = arrays[0].dtype
    return tuple(np.asarray(g).reshape(lead + o).astype(dt, copy=False)
                 for g, o in zip(got, outs))


def function(model, contacts, rules):
    """The differentiable (q, v, tau) -> (qdd, forces) of ``contacts`` (a tuple) on
    ``model``; rules: the model's Rules (its tangent map)."""
    key = (id(model), contacts)
    hit = _FUNCTIONS.get(key)
    if hit is not None and hit[0] is model:
        return hit[1]
    nv = model.nv
    nc = rbd.contacts.pack(model, contacts)[2]
    value_shapes = [(nv,), (nc,)]
    partial_shapes = [(nv,), (nc,)] + [(nv, nv)] * 3 + [(nc, nv)] * 3
    e = rules._e

    def _value(q, v, tau):
        return _flat_call(rbd.contact_dynamics, model, contacts, (q, v, tau), value_shapes)

    def _partials(q, v, tau):
        x = (q, v, tau)
        d = _flat_call(rbd.contact_dynamics_derivatives, model, contacts, x,
                       partial_shapes[2:])
        return _flat_call(rbd.contact_dynamics, model, contacts, x, value_shapes) + d

    def callback(host, shapes, q, v, tau):
        lead = q.shape[:-1]
        out = tuple(jax.ShapeDtypeStruct(lead + s, q.dtype) for s in shapes)
        return jax.pure_callback(host, out, retract(model, q), v, tau,
                                 vmap_method="broadcast_all")

    @jax.custom_jvp
    def partials(q, v, tau):
        """(qdd, forces, dqdd_dq, dqdd_dv, dqdd_dtau, df_dq, df_dv, df_dtau)."""
        return callback(_partials, partial_shapes, q, v, tau)
    partials.defjvp(_no_rule("a second derivative of contact_dynamics"))

    @jax.custom_jvp
    def f(q, v, tau):
        return callback(_value, value_shapes, q, v, tau)

    @f.defjvp
    def _(primals, tangents):
        (q, v, tau), (dq, dv, dtau) = primals, tangents
        qdd, forces, *D = partials(q, v, tau)
        eq = e(q, dq)
        return (qdd, forces), tuple(_apply(D[3 * o], eq) + _apply(D[3 * o + 1], dv)
                                    + _apply(D[3 * o + 2], dtau) for o in range(2))

    _FUNCTIONS[key] = (model, f)
    return f


def contact_dynamics(model, q, v, tau, contacts, *, inputs, rules):
    """See rbdiff.jax.contact_dynamics (inputs: its checker, rules: the model's)."""
    t = rbd.contacts._as_tuple(contacts)
    q, v, tau = inputs(model, ("q", q, model.nq), ("v", v, model.nv), ("tau", tau, model.nv))
    return ContactDynamics(*function(model, t, rules)(q, v, tau))
