"""rbdiff.jax.contact_dynamics and impulse_dynamics: XLA FFI handlers as the other kernels
(ffi.py), under a ``jax.custom_jvp`` whose rule is the derivatives handler (the NumPy
API's contact_dynamics_derivatives / impulse_dynamics_derivatives entries).

A contact set is packed once per (model, set) (rbd.contacts.pack) and its tables become
operands of the call, as the model's packed arrays are (calls.contact_operands): a jitted
call runs no host callback, one handler serves every set, and a trace of one set never
serves another (the tables are that trace's constants). The outputs' size nc (the
constraint rows) is known at trace time from the set. vmap of any depth is one batched
handler call (calls.py); q is read through the retraction as everywhere in rbdiff.jax
(rules.py) and its tangent is mapped to the ambient coordinates by the same tangent map.

Errors: a set whose rows are dependent at a generic configuration (the same frame twice,
two surface contacts on one body) is refused at trace time with rbd.DependentContacts,
as the NumPy API words it; an input the entries refuse at run time (NaN, a
configuration where the rows happen to be dependent) gives NaN outputs, as every
rbdiff.jax function (a C handler cannot raise)."""

import jax
import jax.numpy as jnp
import numpy as np

import rbdiff as rbd

from ..results import ContactDynamics, ImpulseDynamics
from . import calls
from .rules import _apply, _no_rule

_FUNCTIONS = {}     # (id(model), kind, contacts, floats) -> (model, differentiable function)
_GENERIC_SEED = 20251129    # the configuration the rank of a set is checked at


def _check_independent(model, contacts, damping):
    """Raise rbd.DependentContacts where the set's rows are dependent at a random
    (generic) configuration without damping: a property of the model and the set, so
    refused at trace time instead of as NaN at run time."""
    if damping > 0:
        return
    q = rbd.random_configuration(model, np.random.default_rng(_GENERIC_SEED))
    e = rbd.contacts._dependent(model, q, contacts)
    if isinstance(e, rbd.DependentContacts):
        raise e


def _packed(model, contacts, damping=0.0, restitution=0.0):
    """(tables, nc) of ``contacts`` (a tuple), checked; NumPy tables (a JAX array made
    under one trace would leak into the next)."""
    cint, cflt, nc = rbd.contacts.pack(model, contacts)
    if nc:
        _check_independent(model, contacts, damping)
    return calls.contact_operands(cint, cflt, damping, restitution), nc


def _cached(model, key, make):
    hit = _FUNCTIONS.get((id(model),) + key)
    if hit is not None and hit[0] is model:
        return hit[1]
    f = make()
    _FUNCTIONS[(id(model),) + key] = (model, f)
    return f


def contact_function(model, contacts, rules):
    """The differentiable (q, v, tau) -> (qdd, forces) of ``contacts`` (a tuple) on
    ``model``; rules: the model's Rules (its kernels and tangent map)."""
    return _cached(model, ("contact", contacts), lambda: _contact(model, contacts, rules))


def _contact(model, contacts, rules):
    tables, nc = _packed(model, contacts)
    kernel, e = rules._kernel, rules._e
    if nc == 0:      # no contacts: aba and no forces (aba's own rules)
        return lambda q, v, tau: (rules.aba(q, v, tau), jnp.zeros(q.shape[:-1] + (0,),
                                                                   q.dtype))

    @jax.custom_jvp
    def partials(q, v, tau):
        """(qdd, forces, dqdd_dq, dqdd_dv, dqdd_dtau, df_dq, df_dv, df_dtau)."""
        return kernel("contact_dynamics_derivatives", q, v, tau, tables=tables, nc=nc)
    partials.defjvp(_no_rule("a second derivative of contact_dynamics"))

    @jax.custom_jvp
    def f(q, v, tau):
        return tuple(kernel("contact_dynamics", q, v, tau, tables=tables, nc=nc))

    @f.defjvp
    def _(primals, tangents):
        (q, v, tau), (dq, dv, dtau) = primals, tangents
        qdd, forces, *D = partials(q, v, tau)
        eq = e(q, dq)
        return (qdd, forces), tuple(_apply(D[3 * o], eq) + _apply(D[3 * o + 1], dv)
                                    + _apply(D[3 * o + 2], dtau) for o in range(2))
    return f


def impulse_function(model, contacts, restitution, rules):
    """The differentiable (q, v_before) -> (v_after, impulses) of ``contacts`` (a tuple)
    on ``model`` with ``restitution`` (a float in [0, 1])."""
    return _cached(model, ("impulse", contacts, restitution),
                   lambda: _impulse(model, contacts, restitution, rules))


def _impulse(model, contacts, restitution, rules):
    tables, nc = _packed(model, contacts, restitution=restitution)
    kernel, e = rules._kernel, rules._e
    if nc == 0:      # no contacts: no jump
        return lambda q, v: (v, jnp.zeros(q.shape[:-1] + (0,), q.dtype))

    @jax.custom_jvp
    def partials(q, v):
        """(v_after, impulses, dvafter_dq, dvafter_dv, dimpulses_dq, dimpulses_dv)."""
        return kernel("impulse_dynamics_derivatives", q, v, tables=tables, nc=nc)
    partials.defjvp(_no_rule("a second derivative of impulse_dynamics"))

    @jax.custom_jvp
    def f(q, v):
        return tuple(kernel("impulse_dynamics", q, v, tables=tables, nc=nc))

    @f.defjvp
    def _(primals, tangents):
        (q, v), (dq, dv) = primals, tangents
        va, imp, *D = partials(q, v)
        eq = e(q, dq)
        return (va, imp), tuple(_apply(D[2 * o], eq) + _apply(D[2 * o + 1], dv)
                                for o in range(2))
    return f


def contact_dynamics(model, q, v, tau, contacts, *, inputs, rules):
    """See rbdiff.jax.contact_dynamics (inputs: its checker, rules: the model's)."""
    t = rbd.contacts._as_tuple(contacts)
    q, v, tau = inputs(model, ("q", q, model.nq), ("v", v, model.nv), ("tau", tau, model.nv))
    return ContactDynamics(*contact_function(model, t, rules)(q, v, tau))


def impulse_dynamics(model, q, v_before, contacts, restitution, *, inputs, rules):
    """See rbdiff.jax.impulse_dynamics."""
    t = rbd.contacts._as_tuple(contacts)
    r = rbd.contacts._restitution(restitution)
    q, v = inputs(model, ("q", q, model.nq), ("v_before", v_before, model.nv))
    return ImpulseDynamics(*impulse_function(model, t, r, rules)(q, v))
