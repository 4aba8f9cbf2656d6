"""Issue 25's acceptance cases beyond test_contact_dynamics.py / test_impulse_dynamics.py:
anymal and hyq on their four point feet (values, all six derivative blocks and the
impulse pair against Pinocchio 4.1, both references, with and without Baumgarte gains),
damping > 0 against Pinocchio's constraintDynamics (ProximalSettings mu = damping, one
iteration: the regularised solution) and the older forwardDynamics(q, v, tau, J, gamma,
damping), contact_dynamics_derivatives with fext (Pinocchio has no fext there: its
derivatives at tau + J_ext^T fext chained with the RNEA derivatives of the external
torque, and the complex step), and the bad contact sets of the issue (two surface
contacts on one body, the same frame twice, four surface contacts on point feet)."""

import numpy as np
import pinocchio as pin
import pytest

import rbdiff as rbd
from conftest import robot_pair
from rbdiff.contacts import DependentContacts
from test_contact_dynamics import (SOLO_FEET, pair, pin_constraints, pin_solve, rel,
                                   stacked, state, tolerance)
from test_impulse_dynamics import pin_impulse

FEET = {"anymal": ("LF_FOOT", "RF_FOOT", "LH_FOOT", "RH_FOOT"),
        "hyq": ("lf_foot", "rf_foot", "lh_foot", "rh_foot")}
_ROBOTS = {}


def robot(name):
    if name not in _ROBOTS:
        _ROBOTS[name] = robot_pair(name, True)
    return _ROBOTS[name]


def feet(name, ref, gains=(0.0, 0.0)):
    return tuple(rbd.Contact(f, "3d", ref, gains=gains, placement=np.eye(4))
                 for f in FEET[name])


@pytest.mark.parametrize("name,ref,gains", [("anymal", "local", (0.0, 0.0)),
                                            ("anymal", "local_world_aligned", (2.0, 3.0)),
                                            ("hyq", "local", (1.5, 0.5)),
                                            ("hyq", "local_world_aligned", (0.0, 0.0))])
def test_quadrupeds_match_pinocchio(name, ref, gains):
    model, pm = robot(name)
    q, v, tau = state(pm, 31)
    cs = feet(name, ref, gains)
    tol = tolerance(model, q, cs)
    qdd, forces = rbd.contact_dynamics(model, q, v, tau, cs)
    a, lam = pin_solve(model, pm, q, v, tau, cs)
    assert rel(qdd, a) < tol and rel(forces, lam) < tol
    J, drift = stacked(model, q, v, cs)
    assert rel(J @ qdd + drift, 0 * drift) < tol          # J qdd + gamma = e
    d = rbd.contact_dynamics_derivatives(model, q, v, tau, cs)
    for ours, theirs in zip(d, pin_solve(model, pm, q, v, tau, cs, derivatives=True)):
        assert rel(ours, theirs) < tol
    # the impulse pair (restitution 0.3; gains play no part there)
    cs0 = feet(name, ref)
    vout, imp = rbd.impulse_dynamics(model, q, v, cs0, restitution=0.3)
    pv, pi, P = pin_impulse(model, pm, q, v, cs0, 0.3)
    assert rel(vout, pv) < tol and rel(imp, pi) < tol
    assert rel(J @ vout, -0.3 * (J @ v)) < tol           # J v+ = -r J v-
    for ours, theirs in zip(rbd.impulse_dynamics_derivatives(model, q, v, cs0, 0.3), P):
        assert rel(ours, theirs) < tol


def _pin_damped(model, pm, q, v, tau, contacts, damping):
    """Pinocchio's constraintDynamics with ProximalSettings(mu=damping, one iteration):
    the Cholesky of [M J^T; J -damping I], i.e. the regularised solution."""
    models, datas, data = pin_constraints(model, pm, contacts)
    a = pin.constraintDynamics(pm, data, q, v, tau, models, datas,
                               pin.ProximalSettings(1e-14, damping, 1))
    return np.array(a), np.array(data.lambda_c)


@pytest.mark.parametrize("name,kind,ref,gains", [
    ("hyq", "3d", "local_world_aligned", (2.0, 1.0)),
    ("talos_full_v2", "6d", "local", (1.0, 2.0)),
    ("solo12", "3d", "local", (0.0, 0.0))])
def test_damping_matches_both_pinocchio_routes(name, kind, ref, gains):
    if name in FEET:
        model, pm = robot(name)
        cs = feet(name, ref, gains)
    else:
        model, pm, _ = pair(name)
        names = SOLO_FEET if name == "solo12" else ("left_sole_link", "right_sole_link")
        cs = tuple(rbd.Contact(f, kind, ref, gains=gains, placement=np.eye(4)) for f in names)
    if name == "solo12":        # dependent rows: damping is what makes the forces unique
        cs = cs + cs[:1]
    q, v, tau = state(pm, 32)
    J, drift = stacked(model, q, v, cs)
    for damping in (1e-4, 1e-2):
        qdd, forces = rbd.contact_dynamics(model, q, v, tau, cs, damping=damping)
        a, lam = _pin_damped(model, pm, q, v, tau, cs, damping)
        assert rel(qdd, a) < 1e-10 and rel(forces, lam) < 1e-10
        data = pm.createData()
        a2 = np.array(pin.forwardDynamics(pm, data, q, v, tau, J, drift, damping))
        assert rel(qdd, a2) < 1e-10
        # the regularised KKT rows: M qdd - J^T f = tau - b, J qdd + gamma - e = -damping f
        M, b = rbd.crba(model, q), rbd.nonlinear_effects(model, q, v)
        assert rel(M @ qdd - J.T @ forces, tau - b) < 1e-10
        assert rel(J @ qdd + drift, -damping * forces) < 1e-10
    with pytest.raises(ValueError, match="damping"):
        rbd.contact_dynamics(model, q, v, tau, cs, damping=np.nan)


def _pin_fext(pm, fext):
    return pin.StdVec_Force([pin.Force(np.asarray(f)) for f in fext])


def test_derivatives_with_fext():
    """fext enters as tau + J_ext(q)^T fext: Pinocchio's derivatives at that torque plus
    dqdd_dtau (resp. dlambda_dtau) times the external torque's q derivative (RNEA
    derivatives at v = a = 0 with and without fext); and the complex step."""
    name = "anymal"
    model, pm = robot(name)
    q, v, tau = state(pm, 33)
    rng = np.random.default_rng(33)
    fext = np.zeros((model.njoints, 6))
    fext[1:] = rng.normal(size=(model.njoints - 1, 6))
    cs = feet(name, "local_world_aligned", (2.0, 1.0))
    tol = tolerance(model, q, cs)
    z = np.zeros(model.nv)
    data = pm.createData()
    tau_ext = pin.rnea(pm, data, q, z, z) - pin.rnea(pm, data, q, z, z, _pin_fext(pm, fext))
    dg = np.array(pin.computeRNEADerivatives(pm, data, q, z, z)[0])
    dgf = np.array(pin.computeRNEADerivatives(pm, data, q, z, z, _pin_fext(pm, fext))[0])
    dext = dg - dgf                                      # d tau_ext / dq
    qdd, forces = rbd.contact_dynamics(model, q, v, tau, cs, fext=fext)
    a, lam = pin_solve(model, pm, q, v, tau + tau_ext, cs)
    assert rel(qdd, a) < tol and rel(forces, lam) < tol
    d = rbd.contact_dynamics_derivatives(model, q, v, tau, cs, fext=fext)
    P = pin_solve(model, pm, q, v, tau + tau_ext, cs, derivatives=True)
    P[0] = P[0] + P[2] @ dext
    P[3] = P[3] + P[5] @ dext
    for ours, theirs in zip(d, P):
        assert rel(ours, theirs) < tol
    # the complex step in q (fext held), through rbdiff's complex128 contact_dynamics
    h, nv = 1e-30, model.nv
    E = 1j * h * np.eye(nv)
    qc = np.array([rbd.integrate(model, q.astype(complex), E[k]) for k in range(nv)])
    r = rbd.contact_dynamics(model, qc, np.tile(v, (nv, 1)).astype(complex),
                             np.tile(tau, (nv, 1)).astype(complex), cs,
                             fext=np.broadcast_to(fext, (nv,) + fext.shape).astype(complex))
    assert rel(d.dqdd_dq, r.qdd.imag.T / h) < 1e-10
    assert rel(d.dforces_dq, r.forces.imag.T / h) < 1e-10
    # fext in a batch: bit-equal to a loop
    Q, V, T = np.stack([q, q]), np.stack([v, -v]), np.stack([tau, tau])
    F = np.stack([fext, 2 * fext])
    db = rbd.contact_dynamics_derivatives(model, Q, V, T, cs, fext=F)
    for b in range(2):
        one = rbd.contact_dynamics_derivatives(model, Q[b], V[b], T[b], cs, fext=F[b])
        assert all(np.array_equal(x[b], y) for x, y in zip(db, one))


def _check_dependent(model, q, v, tau, contacts, pattern):
    """Every function refuses the set with DependentContacts matching ``pattern`` (the
    dependent contact named, damping suggested); with damping, finite results."""
    for call in (lambda: rbd.contact_dynamics(model, q, v, tau, contacts),
                 lambda: rbd.contact_dynamics_derivatives(model, q, v, tau, contacts),
                 lambda: rbd.impulse_dynamics(model, q, v, contacts),
                 lambda: rbd.impulse_dynamics_derivatives(model, q, v, contacts)):
        with pytest.raises(DependentContacts, match=pattern) as info:
            call()
        assert "damping > 0" in str(info.value) and "fewer constraints" in str(info.value)
    # a damping below the rounding level of W: the message gives the damping needed
    with pytest.raises(DependentContacts, match=r"Pass damping >= ([0-9.e+-]+) .*given, "
                       r"1e-14, is below the rounding level") as info:
        rbd.contact_dynamics(model, q, v, tau, contacts, damping=1e-14)
    need = float(str(info.value).split("Pass damping >= ")[1].split(" ")[0])
    qdd, forces = rbd.contact_dynamics(model, q, v, tau, contacts, damping=need)
    assert np.all(np.isfinite(qdd)) and np.all(np.isfinite(forces))
    vout, imp = rbd.impulse_dynamics(model, q, v, contacts, damping=need)
    assert np.all(np.isfinite(vout)) and np.all(np.isfinite(imp))


def test_dependent_contact_sets_are_refused_clearly():
    # two surface contacts on one body: the sole and the link it is fixed to
    model, pm, _ = pair("talos_full_v2")
    q, v, tau = state(pm, 34)
    two = (rbd.Contact("left_sole_link", "6d"), rbd.Contact("leg_left_6_link", "6d"))
    _check_dependent(model, q, v, tau, two,
                     r"contact 1 \(Contact\('leg_left_6_link'.*contacts before it "
                     r"\(0 \('left_sole_link'\)\)")
    # the same frame twice (surface contacts, LOCAL_WORLD_ALIGNED)
    same = (rbd.Contact("right_sole_link", "6d", "local_world_aligned"),
            rbd.Contact("left_sole_link", "6d"),
            rbd.Contact("right_sole_link", "6d", "local_world_aligned"))
    _check_dependent(model, q, v, tau, same, r"contact 2 \(Contact\('right_sole_link'")
    # four surface contacts on a quadruped's point feet: 24 rows on 18 dof
    model, pm, _ = pair("solo12")
    q, v, tau = state(pm, 35)
    six = tuple(rbd.Contact(f, "6d") for f in SOLO_FEET)
    _check_dependent(model, q, v, tau, six, r"of contact [1-3] \(Contact\('H?[LR]_FOOT'|"
                     r"of contact [1-3] \(Contact\('[FH][LR]_FOOT'")


def test_other_bad_input_is_named():
    model, pm = robot("hyq")
    q, v, tau = state(pm, 36)
    cs = feet("hyq", "local")
    with pytest.raises(KeyError, match="lf_fot|no frame|frame"):
        rbd.contact_dynamics(model, q, v, tau, (rbd.Contact("lf_fot"),))
    with pytest.raises(ValueError, match="universe"):
        rbd.contact_dynamics_derivatives(model, q, v, tau, (rbd.Contact("universe"),))
    for bad, arg in ((np.nan, "v"), (np.inf, "tau")):
        x = {"v": v.copy(), "tau": tau.copy()}
        x[arg][3] = bad
        with pytest.raises(ValueError, match=arg):
            rbd.contact_dynamics(model, q, x["v"], x["tau"], cs)
        with pytest.raises(ValueError, match=arg):
            rbd.contact_dynamics_derivatives(model, q, x["v"], x["tau"], cs)
    with pytest.raises(ValueError, match="q"):
        rbd.contact_dynamics(model, q[:-1], v, tau, cs)
    with pytest.raises(ValueError, match="v_before"):
        rbd.impulse_dynamics_derivatives(model, q, v[:-1], cs)
    with pytest.raises(ValueError, match="fext"):
        rbd.contact_dynamics(model, q, v, tau, cs, fext=np.zeros((model.njoints, 3)))
    with pytest.raises(TypeError, match="Contact"):
        rbd.impulse_dynamics(model, q, v, 3)
