"""rbd.impulse_dynamics and rbd.impulse_dynamics_derivatives
(kernels/impulse_dynamics.py) against Pinocchio 4.1's impulseDynamics (constraint models)
+ computeImpulseDynamicsDerivatives, the older impulseDynamics(q, v, J, r, damping), the
complex step through rbdiff's own complex128 impulse_dynamics, and the identity
J v_after = -r J v_before.

Pinocchio's data.ddq_dv is the derivative of the jump v_after - v_before (rbdiff's
dvafter_dv minus the identity): the tests compare it so."""

import numpy as np
import pinocchio as pin
import pytest

import rbdiff as rbd
from rbdiff.contacts import DependentContacts
from rbdiff.results import ImpulseDynamicsDerivatives
from test_contact_dynamics import (contact_set, pair, pin_constraints, rel, state,
                                   tolerance)


def pin_impulse(model, pm, q, v, contacts, r):
    models, datas, data = pin_constraints(model, pm, contacts, gains=False)
    prox = pin.ProximalSettings(1e-14, 1e-14, 0.0, 1)
    vout = np.array(pin.impulseDynamics(pm, data, q, v, models, datas, r, prox))
    imp = np.array(data.impulse_c)
    pin.computeImpulseDynamicsDerivatives(pm, data, models, datas, r, prox)
    return vout, imp, [np.array(data.ddq_dq), np.array(data.ddq_dv) + np.eye(pm.nv),
                       np.array(data.dlambda_dq), np.array(data.dlambda_dv)]


CASES = [("solo12", "3d", "local", 0.0), ("solo12", "3d", "local_world_aligned", 0.4),
         ("talos_full_v2", "6d", "local_world_aligned", 0.0),
         ("talos_full_v2", "6d", "local", 0.7), ("tree", "3d", "local", 0.2),
         ("tree", "6d", "local_world_aligned", 0.5)]


@pytest.mark.parametrize("name,kind,ref,r", CASES)
def test_matches_pinocchio(name, kind, ref, r):
    model, pm, _ = pair(name)
    q, v, _ = state(pm, 6)
    cs = contact_set(name, kind, ref)
    tol = tolerance(model, q, cs)
    vout, imp = rbd.impulse_dynamics(model, q, v, cs, restitution=r)
    pv, pi, P = pin_impulse(model, pm, q, v, cs, r)
    assert rel(vout, pv) < tol and rel(imp, pi) < tol
    J = np.vstack([rbd.frame_jacobian(model, q, c.frame, c.reference)[:c.dim] for c in cs])
    assert rel(J @ vout, -r * (J @ v)) < tol                # J v+ = -r J v-
    d = rbd.impulse_dynamics_derivatives(model, q, v, cs, restitution=r)
    assert isinstance(d, ImpulseDynamicsDerivatives)
    for ours, theirs in zip(d, P):
        assert rel(ours, theirs) < tol


def test_older_route_complex_step_batch_and_bad_input():
    model, pm, _ = pair("solo12")
    q, v, _ = state(pm, 7)
    cs = contact_set("solo12", "3d", "local_world_aligned")
    J = np.vstack([rbd.frame_jacobian(model, q, c.frame, c.reference)[:3] for c in cs])
    for damping in (0.0, 1e-4):
        data = pm.createData()
        pv = np.array(pin.impulseDynamics(pm, data, q, v, J, 0.5, damping))
        ours = rbd.impulse_dynamics(model, q, v, cs, restitution=0.5, damping=damping)
        assert rel(ours.v_after, pv) < 1e-10
    # complex step, every block
    r, h, nv = 0.3, 1e-30, model.nv
    d = rbd.impulse_dynamics_derivatives(model, q, v, cs, restitution=r)
    E = 1j * h * np.eye(nv)
    qc = np.array([rbd.integrate(model, q.astype(complex), E[k]) for k in range(nv)])
    rq = rbd.impulse_dynamics(model, qc, np.tile(v, (nv, 1)).astype(complex), cs,
                              restitution=r)
    rv = rbd.impulse_dynamics(model, np.tile(q, (nv, 1)).astype(complex), v + E, cs,
                              restitution=r)
    for ours, cs_ in zip(d, (rq.v_after, rv.v_after, rq.impulses, rv.impulses)):
        assert rel(ours, cs_.imag.T / h) < 1e-10
    # batch = loop, float32, no contacts
    Q = np.array([state(pm, 20 + b)[0] for b in range(3)])
    Vb = np.array([state(pm, 20 + b)[1] for b in range(3)])
    bv, bi = rbd.impulse_dynamics(model, Q, Vb, cs, restitution=r)
    bd = rbd.impulse_dynamics_derivatives(model, Q, Vb, cs, restitution=r)
    for b in range(3):
        one = rbd.impulse_dynamics(model, Q[b], Vb[b], cs, restitution=r)
        assert np.array_equal(bv[b], one.v_after) and np.array_equal(bi[b], one.impulses)
        for x, y in zip(bd, rbd.impulse_dynamics_derivatives(model, Q[b], Vb[b], cs,
                                                             restitution=r)):
            assert np.array_equal(x[b], y)
    f32 = rbd.impulse_dynamics(model, Q[0].astype(np.float32), Vb[0].astype(np.float32), cs,
                               restitution=r)
    assert f32.v_after.dtype == np.float32 and rel(f32.v_after, bv[0]) < 1e-3
    none = rbd.impulse_dynamics(model, q, v, [])
    assert np.array_equal(none.v_after, v) and none.impulses.shape == (0,)
    with pytest.raises(ValueError, match="restitution"):
        rbd.impulse_dynamics(model, q, v, cs, restitution=1.5)
    with pytest.raises(DependentContacts, match="damping"):
        rbd.impulse_dynamics(model, q, v, cs + cs[:1])
    bad = v.copy()
    bad[0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        rbd.impulse_dynamics(model, q, bad, cs)
