"""Issue 25, what test_contact_dynamics.py / test_impulse_dynamics.py /
test_contact_acceptance.py leave open: the derivatives of the regularised (damped)
solutions, ``out=`` on the four contact functions, and the parallel batch entries.

Damped derivatives (W = J M^-1 J^T + damping I, the KKT inverse with the -damping I
block) against the complex step through rbdiff's own complex128 contact_dynamics /
impulse_dynamics with the same damping, on the manifold, and against Pinocchio 4.1's
computeConstraintDynamicsDerivatives / computeImpulseDynamicsDerivatives after one
proximal iteration (ProximalSettings(mu=damping, max_iter=1): its derivative loop runs
``iter`` times on the damped operational-space inverse, so one iteration is the
derivative of the regularised solution; its impulseDynamics takes mu as a plain damping,
without a proximal loop).

For LOCAL_WORLD_ALIGNED contacts Pinocchio's damped q blocks are not the derivative of
its own damped solution: they miss the rotation of the damping term, damping w_m x
lambda (w_m the world angular column of dof m), i.e. they are rbdiff's plus X = (W +
damping I)^-1 [damping w_m x lambda]_m (forces) and Y X (accelerations, Y = M^-1 J^T)
for point contacts: the tests compare them so (:func:`lwa_term`). For surface contacts
in LOCAL_WORLD_ALIGNED the difference has more terms of the same order, O(damping)
(measured: 5e-4 relative at damping 1e-4 on talos' soles; none without damping), not
modelled here: only Pinocchio's v and tau blocks are compared there. The complex step
checks all of rbdiff's blocks directly.

Tolerance: 1e-9 relative, or 100 cond(W + damping I) eps where that is larger."""

import numpy as np
import pinocchio as pin
import pytest

import rbdiff as rbd
from rbdiff.cpu import policy
from test_contact_dynamics import (SOLO_FEET, TALOS_SOLES, pair, pin_constraints, rel,
                                   stacked, state)

EPS = np.finfo(float).eps
H = 1e-30


def contacts(name, kind, ref, gains=(0.0, 0.0), repeat=False):
    names = SOLO_FEET if name == "solo12" else TALOS_SOLES
    cs = tuple(rbd.Contact(f, kind, ref, gains=gains, placement=np.eye(4)) for f in names)
    return cs + cs[:1] if repeat else cs     # repeat: dependent rows, unique only damped


def tolerance(model, q, cs, damping):
    J, _ = stacked(model, q, np.zeros(model.nv), cs)
    W = J @ rbd.minverse(model, q) @ J.T + damping * np.eye(len(J))
    return max(1e-9, 100 * np.linalg.cond(W) * EPS)


def pin_damped(model, pm, q, v, tau, cs, damping):
    """Pinocchio's regularised solution and its six blocks (one proximal iteration)."""
    models, datas, data = pin_constraints(model, pm, cs)
    prox = pin.ProximalSettings(1e-14, damping, 1)
    a = np.array(pin.constraintDynamics(pm, data, q, v, tau, models, datas, prox))
    assert prox.iter == 1
    lam = np.array(data.lambda_c)
    P = [np.array(x) for x in pin.computeConstraintDynamicsDerivatives(pm, data, models,
                                                                        datas, prox)]
    return a, lam, P


def pin_impulse_damped(model, pm, q, v, cs, r, damping):
    models, datas, data = pin_constraints(model, pm, cs, gains=False)
    prox = pin.ProximalSettings(1e-14, damping, 1)
    # Pinocchio's impulseDynamics runs no proximal loop (prox.iter stays 0): mu is a plain
    # damping of the contact Cholesky, the regularised solution
    vout = np.array(pin.impulseDynamics(pm, data, q, v, models, datas, r, prox))
    imp = np.array(data.impulse_c)
    pin.computeImpulseDynamicsDerivatives(pm, data, models, datas, r, prox)
    return vout, imp, [np.array(data.ddq_dq), np.array(data.ddq_dv) + np.eye(pm.nv),
                       np.array(data.dlambda_dq), np.array(data.dlambda_dv)]


def lwa_term(model, q, cs, forces, damping):
    """(X, Y X): what Pinocchio's damped q blocks add to the derivative for
    LOCAL_WORLD_ALIGNED contacts (module docstring); zero rows for LOCAL contacts."""
    J, _ = stacked(model, q, np.zeros(model.nv), cs)
    Y = rbd.minverse(model, q) @ J.T
    C = np.zeros((len(J), model.nv))
    row = 0
    for c in cs:
        if c.reference == "local_world_aligned":
            w = rbd.frame_jacobian(model, q, c.frame, "local_world_aligned")[3:]
            for h in range(row, row + c.dim, 3):
                C[h:h + 3] = damping * np.cross(w.T, forces[h:h + 3]).T
        row += c.dim
    X = np.linalg.solve(J @ Y + damping * np.eye(len(J)), C)
    return X, Y @ X


def stepped(model, q, nv):
    """q stepped on the manifold by i h e_k, one row per tangent direction k."""
    E = 1j * H * np.eye(nv)
    return np.array([rbd.integrate(model, q.astype(complex), E[k]) for k in range(nv)]), E


def tiled(x, nv):
    return np.tile(x, (nv, 1)).astype(complex)


CASES = [("solo12", "3d", "local", (2.0, 3.0), False, 1e-3),
         ("solo12", "3d", "local_world_aligned", (0.0, 2.0), False, 1e-2),
         ("solo12", "3d", "local", (0.0, 0.0), True, 1e-4),
         ("talos_full_v2", "6d", "local", (1.0, 2.0), False, 1e-3),
         ("talos_full_v2", "6d", "local_world_aligned", (0.0, 0.0), False, 1e-4)]


@pytest.mark.parametrize("name,kind,ref,gains,repeat,damping", CASES)
def test_damped_contact_derivatives(name, kind, ref, gains, repeat, damping):
    model, pm, _ = pair(name)
    q, v, tau = state(pm, 41)
    cs = contacts(name, kind, ref, gains, repeat)
    nv = model.nv
    tol = tolerance(model, q, cs, damping)
    qdd, forces = rbd.contact_dynamics(model, q, v, tau, cs, damping=damping)
    d = rbd.contact_dynamics_derivatives(model, q, v, tau, cs, damping=damping)
    # the complex step, every block
    qc, E = stepped(model, q, nv)
    r = [rbd.contact_dynamics(model, qc, tiled(v, nv), tiled(tau, nv), cs, damping=damping),
         rbd.contact_dynamics(model, tiled(q, nv), v + E, tiled(tau, nv), cs,
                              damping=damping),
         rbd.contact_dynamics(model, tiled(q, nv), tiled(v, nv), tau + E, cs,
                              damping=damping)]
    for k in range(3):
        assert rel(d[k], r[k].qdd.imag.T / H) < tol
        assert rel(d[3 + k], r[k].forces.imag.T / H) < tol
    # Pinocchio's regularised values and blocks (its q blocks less lwa_term: docstring)
    a, lam, P = pin_damped(model, pm, q, v, tau, cs, damping)
    assert rel(qdd, a) < tol and rel(forces, lam) < tol
    X, YX = lwa_term(model, q, cs, forces, damping)
    P[0], P[3] = P[0] - YX, P[3] - X
    for k, (ours, theirs) in enumerate(zip(d, P)):
        if not (kind == "6d" and ref == "local_world_aligned" and k % 3 == 0):
            assert rel(ours, theirs) < tol
    with pytest.raises(ValueError, match="damping"):
        rbd.contact_dynamics_derivatives(model, q, v, tau, cs, damping=-damping)
    # without damping the same call is the undamped derivative
    if not repeat:
        d0 = rbd.contact_dynamics_derivatives(model, q, v, tau, cs)
        assert all(np.array_equal(x, y) for x, y in
                   zip(d0, rbd.contact_dynamics_derivatives(model, q, v, tau, cs,
                                                            damping=0.0)))


@pytest.mark.parametrize("name,kind,ref,repeat,r,damping", [
    ("solo12", "3d", "local", True, 0.3, 1e-4),
    ("solo12", "3d", "local_world_aligned", False, 0.0, 1e-2),
    ("talos_full_v2", "6d", "local", False, 0.5, 1e-3)])
def test_damped_impulse_derivatives(name, kind, ref, repeat, r, damping):
    model, pm, _ = pair(name)
    q, v, _ = state(pm, 42)
    cs = contacts(name, kind, ref, repeat=repeat)
    nv = model.nv
    tol = tolerance(model, q, cs, damping)
    vout, imp = rbd.impulse_dynamics(model, q, v, cs, restitution=r, damping=damping)
    d = rbd.impulse_dynamics_derivatives(model, q, v, cs, restitution=r, damping=damping)
    qc, E = stepped(model, q, nv)
    rq = rbd.impulse_dynamics(model, qc, tiled(v, nv), cs, restitution=r, damping=damping)
    rv = rbd.impulse_dynamics(model, tiled(q, nv), v + E, cs, restitution=r,
                              damping=damping)
    for ours, cstep in zip(d, (rq.v_after, rv.v_after, rq.impulses, rv.impulses)):
        assert rel(ours, cstep.imag.T / H) < tol
    # J v+ + r J v- = -damping impulses (the regularised row, in the contacts' reference)
    J, _ = stacked(model, q, v, cs)
    assert rel(J @ vout + r * (J @ v), -damping * imp) < tol
    with pytest.raises(ValueError, match="damping"):
        rbd.impulse_dynamics_derivatives(model, q, v, cs, restitution=r, damping=np.nan)
    pv, pi, P = pin_impulse_damped(model, pm, q, v, cs, r, damping)
    assert rel(vout, pv) < tol and rel(imp, pi) < tol
    X, YX = lwa_term(model, q, cs, imp, damping)
    P[0], P[2] = P[0] - YX, P[2] - X
    for ours, theirs in zip(d, P):
        assert rel(ours, theirs) < tol


# ---- out= ---------------------------------------------------------------------------------


def _check_out(fn, args, kwargs, shapes):
    """fn(*args, out=arrays) writes into the arrays, returns them (as its record type) and
    equals the call without out; a wrong shape or dtype is refused, naming the output."""
    ref = fn(*args, **kwargs)
    out = tuple(np.full(s, np.nan) for s in shapes)
    got = fn(*args, **kwargs, out=out)
    assert type(got) is type(ref) and all(g is o for g, o in zip(got, out))
    assert all(np.array_equal(g, r) for g, r in zip(got, ref))
    bad = list(out)
    bad[-1] = np.empty(shapes[-1][:-1] + (shapes[-1][-1] + 1,))
    with pytest.raises(ValueError, match=f"out: {ref._fields[-1]} must have shape"):
        fn(*args, **kwargs, out=tuple(bad))
    with pytest.raises(ValueError, match="dtype"):
        fn(*args, **kwargs, out=tuple(o.astype(np.float32) for o in out))
    with pytest.raises(TypeError, match="out"):
        fn(*args, **kwargs, out=out[:-1])


def test_out():
    model, pm, _ = pair("solo12")
    cs = contacts("solo12", "3d", "local_world_aligned", (1.0, 2.0))
    nv, nc = model.nv, 12
    states = [state(pm, 50 + b) for b in range(2)]
    Q, V, T = (np.array(x) for x in zip(*states))
    for lead, (q, v, tau) in (((), states[0]), ((2,), (Q, V, T))):
        _check_out(rbd.contact_dynamics, (model, q, v, tau, cs), {"damping": 1e-3},
                   [lead + (nv,), lead + (nc,)])
        _check_out(rbd.contact_dynamics_derivatives, (model, q, v, tau, cs), {},
                   [lead + (nv, nv)] * 3 + [lead + (nc, nv)] * 3)
        _check_out(rbd.impulse_dynamics, (model, q, v, cs), {"restitution": 0.5},
                   [lead + (nv,), lead + (nc,)])
        _check_out(rbd.impulse_dynamics_derivatives, (model, q, v, cs),
                   {"restitution": 0.5, "damping": 1e-3},
                   [lead + (nv, nv)] * 2 + [lead + (nc, nv)] * 2)
    # no contacts: aba's results, written into out as well
    q, v, tau = states[0]
    _check_out(rbd.contact_dynamics, (model, q, v, tau, ()), {}, [(nv,), (0,)])
    _check_out(rbd.impulse_dynamics_derivatives, (model, q, v, ()), {},
               [(nv, nv)] * 2 + [(0, nv)] * 2)


# ---- the parallel batch entries -----------------------------------------------------------


def test_parallel_entries_equal_a_loop():
    """cpu/contacts.py's parallel entries (make test's compile step skips them), on the
    cheapest to compile (each is the same prange over chunks of its serial twin): forced
    on, bit-equal to a loop of single calls, and a dependent item found and named."""
    model, pm, frames = pair("tree")
    cs = (rbd.Contact(frames[-1], "3d", "local_world_aligned", gains=(1.0, 2.0),
                      placement=np.eye(4)),
          rbd.Contact(frames[2], "3d"))
    states = [state(pm, 60 + b) for b in range(5)]
    Q, V, _ = (np.array(x) for x in zip(*states))
    with policy.forced("parallel"):
        d = rbd.impulse_dynamics(model, Q, V, cs, restitution=0.3, damping=1e-6)
    for b in range(5):
        one = rbd.impulse_dynamics(model, Q[b], V[b], cs, restitution=0.3, damping=1e-6)
        assert all(np.array_equal(x[b], y) for x, y in zip(d, one))
    with policy.forced("parallel"), pytest.raises(rbd.DependentContacts, match="item 0"):
        rbd.impulse_dynamics(model, Q, V, cs + cs[1:])
