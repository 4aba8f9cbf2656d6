"""rbd.Contact, rbd.contact_dynamics and rbd.contact_dynamics_derivatives
(kernels/contact_dynamics.py) against Pinocchio 4.1's initConstraintDynamics +
constraintDynamics + computeConstraintDynamicsDerivatives (RigidConstraintModel, joint2
the universe), the older forwardDynamics(q, v, tau, J, gamma, damping), the complex step
through rbdiff's own complex128 contact_dynamics, and the identities J qdd + gamma = e
(the Baumgarte error) and "no contacts: aba".

Tolerance: 1e-10 relative, or cond(W) eps times a safety factor where W = J M^-1 J^T is
ill conditioned (every KKT solve loses cond(W) eps; :func:`tolerance`).

Where Pinocchio is not the derivative the tests say so: with a surface contact in
LOCAL_WORLD_ALIGNED and Kp > 0, Pinocchio's dqdd_dq and dlambda_dq apply the LOCAL
log6 Jacobian to LOCAL_WORLD_ALIGNED rows (not the derivative of its own constraintDynamics);
rbdiff's are checked against the complex step there."""

import numpy as np
import pinocchio as pin
import pytest

import rbdiff as rbd
from conftest import robot_pair
from rbdiff.contacts import DependentContacts
from rbdiff.results import ContactDynamicsDerivatives
from test_frame_motion import framed_tree

PIN_REF = {"local": pin.LOCAL, "local_world_aligned": pin.LOCAL_WORLD_ALIGNED}
PIN_KIND = {"3d": pin.ContactType.CONTACT_3D, "6d": pin.ContactType.CONTACT_6D}
SOLO_FEET = ("FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT")
TALOS_SOLES = ("left_sole_link", "right_sole_link")
EPS = np.finfo(float).eps
_PAIRS = {}


def pair(name):
    if name not in _PAIRS:
        if name == "tree":
            model, pm, frames = framed_tree(3, True, n=8)
            _PAIRS[name] = (model, pm, frames)
        else:
            model, pm = robot_pair(name, True)
            _PAIRS[name] = (model, pm, None)
    return _PAIRS[name]


def state(pm, seed):
    rng = np.random.default_rng(seed)
    q = pin.integrate(pm, pin.neutral(pm), rng.normal(size=pm.nv))
    return q, rng.normal(size=pm.nv), rng.normal(size=pm.nv)


def contact_set(name, kind, ref, gains=(0.0, 0.0)):
    model, pm, frames = pair(name)
    if name == "solo12":
        names = SOLO_FEET if kind == "3d" else SOLO_FEET[:2]
    elif name == "talos_full_v2":
        names = TALOS_SOLES
    else:       # the random tree: one contact on the deepest frame, one on a mid frame
        names = (frames[-1], frames[2]) if kind == "3d" else (frames[-1],)
    return tuple(rbd.Contact(f, kind, ref, gains=gains, placement=np.eye(4)) for f in names)


def pin_constraints(model, pm, contacts, gains=True):
    """Pinocchio's RigidConstraintModels of ``contacts`` (with their Baumgarte gains
    unless ``gains`` is False), their datas, and a Data initialised for them."""
    models = pin.StdVec_RigidConstraintModel()
    datas = pin.StdVec_RigidConstraintData()
    for c in contacts:
        fr = pm.frames[rbd.declare.frame_index(model, c.frame)]
        cm = pin.RigidConstraintModel(PIN_KIND[c.kind], pm, fr.parentJoint, fr.placement,
                                      PIN_REF[c.reference])
        if gains:
            cm.setBaumgarteCorrectorParameters(pin.BaumgarteCorrectorParameters(
                c.gains[0][0], c.gains[1][0]))
        models.append(cm)
        datas.append(cm.createData())
    data = pm.createData()
    pin.initConstraintDynamics(pm, data, models, datas)
    return models, datas, data


def pin_solve(model, pm, q, v, tau, contacts, derivatives=False):
    """Pinocchio's constraintDynamics (and its derivatives) for ``contacts``."""
    models, datas, data = pin_constraints(model, pm, contacts)
    prox = pin.ProximalSettings(1e-14, 1e-14, 0.0, 1)
    a = np.array(pin.constraintDynamics(pm, data, q, v, tau, models, datas, prox))
    lam = np.array(data.lambda_c)
    if not derivatives:
        return a, lam
    return [np.array(x) for x in pin.computeConstraintDynamicsDerivatives(
        pm, data, models, datas, prox)]


def stacked(model, q, v, contacts):
    """J (nc, nv) and the drift gamma - e (nc,) in each contact's reference, from rbdiff's
    frame functions: J qdd + gamma - e = 0 holds after contact_dynamics."""
    rows, drift = [], []
    z = np.zeros(model.nv)
    for c in contacts:
        d = c.dim
        rows.append(rbd.frame_jacobian(model, q, c.frame, c.reference)[:d])
        a = rbd.frame_acceleration(model, q, v, z, c.frame, c.reference, classical=d == 3)
        T = rbd.frame_placement(model, q, c.frame)
        R, p = T[:3, :3], T[:3, 3]
        vel = rbd.frame_velocity(model, q, v, c.frame, "local")
        kp, kd = np.array(c.gains[0]), np.array(c.gains[1])
        if d == 3:
            e = -kp * (R.T @ p) - kd * vel[:3]
            e = R @ e if c.reference == "local_world_aligned" else e
        else:
            e = -kp * pin.log6(pin.SE3(R, p)).vector - kd * vel
            if c.reference == "local_world_aligned":
                e = np.concatenate([R @ e[:3], R @ e[3:]])
        drift.append(a[:d] - e)
    return np.vstack(rows), np.concatenate(drift)


def tolerance(model, q, contacts):
    """1e-10, or 100 cond(W) eps where W = J M^-1 J^T is worse conditioned."""
    J, _ = stacked(model, q, np.zeros(model.nv), contacts)
    W = J @ rbd.minverse(model, q) @ J.T
    return max(1e-10, 100 * np.linalg.cond(W) * EPS)


def rel(x, ref):
    return np.max(np.abs(np.asarray(x) - ref)) / max(1.0, np.max(np.abs(ref)))


CASES = [("solo12", "3d", "local", (0.0, 0.0)),
         ("solo12", "3d", "local_world_aligned", (2.0, 3.0)),
         ("solo12", "6d", "local", (2.0, 3.0)),
         ("talos_full_v2", "6d", "local", (0.0, 0.0)),
         ("talos_full_v2", "6d", "local_world_aligned", (0.0, 3.0)),
         ("tree", "3d", "local_world_aligned", (1.5, 0.5)),
         ("tree", "6d", "local", (1.5, 0.5))]


@pytest.mark.parametrize("name,kind,ref,gains", CASES)
def test_values_and_derivatives_match_pinocchio(name, kind, ref, gains):
    model, pm, _ = pair(name)
    q, v, tau = state(pm, 1)
    cs = contact_set(name, kind, ref, gains)
    tol = tolerance(model, q, cs)
    qdd, forces = rbd.contact_dynamics(model, q, v, tau, cs)
    a, lam = pin_solve(model, pm, q, v, tau, cs)
    assert rel(qdd, a) < tol and rel(forces, lam) < tol
    J, drift = stacked(model, q, v, cs)
    assert rel(J @ qdd + drift, 0 * drift) < tol          # J qdd + gamma = e
    d = rbd.contact_dynamics_derivatives(model, q, v, tau, cs)
    assert isinstance(d, ContactDynamicsDerivatives)
    P = pin_solve(model, pm, q, v, tau, cs, derivatives=True)
    for ours, theirs in zip(d, P):
        assert rel(ours, theirs) < tol


def test_forward_dynamics_route_and_damping():
    """pin.forwardDynamics(q, v, tau, J, gamma, damping), J and gamma in the contacts'
    references: the undamped and the regularised solution."""
    model, pm, _ = pair("solo12")
    q, v, tau = state(pm, 2)
    cs = contact_set("solo12", "3d", "local_world_aligned", (2.0, 1.0))
    J, drift = stacked(model, q, v, cs)
    for damping in (0.0, 1e-3):
        data = pm.createData()
        a = np.array(pin.forwardDynamics(pm, data, q, v, tau, J, drift, damping))
        qdd, forces = rbd.contact_dynamics(model, q, v, tau, cs, damping=damping)
        assert rel(qdd, a) < 1e-10
        assert rel(forces, -np.array(data.lambda_c)) < 1e-10 or \
            rel(forces, np.array(data.lambda_c)) < 1e-10


def test_complex_step():
    """All six blocks against the complex step through rbdiff's complex128
    contact_dynamics, on the case where Pinocchio's getter is not the derivative (6D,
    LOCAL_WORLD_ALIGNED, Kp > 0) and a random tree with every joint type."""
    h = 1e-30
    for name, kind, ref, gains in (("solo12", "6d", "local_world_aligned", (2.0, 3.0)),
                                   ("tree", "3d", "local", (1.0, 2.0))):
        model, pm, _ = pair(name)
        q, v, tau = state(pm, 3)
        cs = contact_set(name, kind, ref, gains)
        d = rbd.contact_dynamics_derivatives(model, q, v, tau, cs)
        nv = model.nv
        E = 1j * h * np.eye(nv)
        qc = np.array([rbd.integrate(model, q.astype(complex), E[k]) for k in range(nv)])
        vc, tc = v + E, tau + E
        r = [rbd.contact_dynamics(model, qc, np.tile(v, (nv, 1)).astype(complex),
                                  np.tile(tau, (nv, 1)).astype(complex), cs),
             rbd.contact_dynamics(model, np.tile(q, (nv, 1)).astype(complex), vc,
                                  np.tile(tau, (nv, 1)).astype(complex), cs),
             rbd.contact_dynamics(model, np.tile(q, (nv, 1)).astype(complex),
                                  np.tile(v, (nv, 1)).astype(complex), tc, cs)]
        for k in range(3):
            assert rel(d[k], r[k].qdd.imag.T / h) < 1e-10
            assert rel(d[3 + k], r[k].forces.imag.T / h) < 1e-10


def test_no_contacts_is_aba():
    model, pm, _ = pair("solo12")
    q, v, tau = state(pm, 4)
    qdd, forces = rbd.contact_dynamics(model, q, v, tau, ())
    assert np.array_equal(qdd, rbd.aba(model, q, v, tau)) and forces.shape == (0,)
    d = rbd.contact_dynamics_derivatives(model, q, v, tau, [])
    ref = rbd.aba_derivatives(model, q, v, tau)
    assert all(np.array_equal(x, y) for x, y in zip(d[:3], ref))
    assert d.dforces_dq.shape == (0, model.nv)


def test_batch_equals_loop_and_dtypes():
    model, pm, _ = pair("solo12")
    cs = contact_set("solo12", "3d", "local_world_aligned", (2.0, 3.0))
    states = [state(pm, 10 + b) for b in range(3)]
    Q, V, T = (np.array(x) for x in zip(*states))
    qdd, forces = rbd.contact_dynamics(model, Q, V, T, cs)
    d = rbd.contact_dynamics_derivatives(model, Q, V, T, cs)
    for b in range(3):
        one = rbd.contact_dynamics(model, Q[b], V[b], T[b], cs)
        assert np.array_equal(qdd[b], one.qdd) and np.array_equal(forces[b], one.forces)
        for x, y in zip(d, rbd.contact_dynamics_derivatives(model, Q[b], V[b], T[b], cs)):
            assert np.array_equal(x[b], y)
    q32 = rbd.contact_dynamics(model, Q[0].astype(np.float32), V[0].astype(np.float32),
                               T[0].astype(np.float32), cs)
    assert q32.qdd.dtype == np.float32
    assert rel(q32.qdd, qdd[0]) < 1e-3 and rel(q32.forces, forces[0]) < 1e-3
    fext = np.zeros((model.njoints, 6))
    fext[3] = [1.0, -2.0, 0.5, 0.1, 0.0, -0.3]
    with_f = rbd.contact_dynamics(model, Q[0], V[0], T[0], cs, fext=fext)
    tau_f = T[0] + rbd.rnea(model, Q[0], np.zeros(model.nv), np.zeros(model.nv)) \
        - rbd.rnea(model, Q[0], np.zeros(model.nv), np.zeros(model.nv), fext)
    assert rel(with_f.qdd, rbd.contact_dynamics(model, Q[0], V[0], tau_f, cs).qdd) < 1e-10


def test_contact_description_and_bad_input():
    model, pm, _ = pair("solo12")
    q, v, tau = state(pm, 5)
    eye = np.eye(4)
    c = rbd.Contact("FL_FOOT", "3D", "LOCAL", gains=(1, 2), placement=eye)
    assert c == rbd.Contact("FL_FOOT", "3d", pin.LOCAL, gains=(1.0, [2.0] * 3), placement=eye)
    assert hash(c) == hash(rbd.Contact("FL_FOOT", "3d", gains=(1, 2), placement=eye))
    with pytest.raises(AttributeError):
        c.kind = "6d"
    with pytest.raises(ValueError, match="world"):
        rbd.Contact("FL_FOOT", "3d", "world")
    with pytest.raises(ValueError, match="kind"):
        rbd.Contact("FL_FOOT", "2d")
    with pytest.raises(ValueError, match="gains"):
        rbd.Contact("FL_FOOT", "3d", gains=(-1.0, 0.0))
    with pytest.raises(ValueError, match="gains"):
        rbd.Contact("FL_FOOT", "6d", gains=([1.0] * 3, 0.0))
    # kp > 0 pulls the frame to its placement: none given is refused, not the origin
    with pytest.raises(ValueError, match=r"kp > 0 needs a placement.*frame_placement"):
        rbd.Contact("FL_FOOT", "3d", gains=(10.0, 2.0))
    with pytest.raises(ValueError, match="needs a placement"):
        rbd.Contact("FL_FOOT", "6d", gains=([0.0] * 5 + [1.0], 0.0))
    rbd.Contact("FL_FOOT", "3d", gains=(0.0, 2.0))          # kd alone needs none
    with pytest.raises(KeyError):
        rbd.contact_dynamics(model, q, v, tau, [rbd.Contact("NO_SUCH_FOOT")])
    with pytest.raises(ValueError, match="universe"):
        rbd.contact_dynamics(model, q, v, tau, [rbd.Contact(0)])
    with pytest.raises(TypeError, match="Contact"):
        rbd.contact_dynamics(model, q, v, tau, ["FL_FOOT"])
    same = [rbd.Contact("FL_FOOT"), rbd.Contact("FR_FOOT"), rbd.Contact("FL_FOOT")]
    for fn in (rbd.contact_dynamics, rbd.contact_dynamics_derivatives):
        with pytest.raises(DependentContacts, match=r"contact 2 .*damping"):
            fn(model, q, v, tau, same)
    qdd, forces = rbd.contact_dynamics(model, q, v, tau, same, damping=1e-6)
    assert np.all(np.isfinite(forces))
    with pytest.raises(ValueError, match="damping"):
        rbd.contact_dynamics(model, q, v, tau, same, damping=-1.0)
    bad = q.copy()
    bad[2] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        rbd.contact_dynamics(model, bad, v, tau, same[:2])
    with pytest.raises(ValueError, match="tau"):
        rbd.contact_dynamics(model, q, v, tau[:-1], same[:2])


def test_baumgarte_at_the_current_placement_keeps_a_standing_robot_still():
    """kp > 0 with the feet's current placements as references: no position error, so the
    same accelerations as kp = 0 (an identity reference pulled a standing go2 at |qdd| 60)."""
    model = rbd.load_robot("solo12")
    q = np.array(model.reference_configurations["standing"])
    v = np.zeros(model.nv)
    feet = ("FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT")
    J = np.vstack([rbd.frame_jacobian(model, q, f, "local_world_aligned")[:3] for f in feet])
    S = np.eye(model.nv)[6:]
    x = np.linalg.lstsq(np.hstack([S.T, J.T]), rbd.gravity(model, q), rcond=None)[0]
    tau = S.T @ x[:12]                 # holds it still (docs/tutorials/contacts.md's standing example)
    for ref in ("local", "local_world_aligned"):
        free = tuple(rbd.Contact(f, "3d", ref, gains=(0.0, 2.0)) for f in feet)
        held = tuple(rbd.Contact(f, "3d", ref, gains=(100.0, 2.0),
                                 placement=rbd.frame_placement(model, q, f)) for f in feet)
        want = rbd.contact_dynamics(model, q, v, tau, free).qdd
        got = rbd.contact_dynamics(model, q, v, tau, held).qdd
        assert np.abs(want).max() < 1e-9
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-9)
        # the identity, the old default, pulls the feet toward the world origin
        origin = tuple(rbd.Contact(f, "3d", ref, gains=(100.0, 2.0), placement=np.eye(4))
                       for f in feet)
        assert np.abs(rbd.contact_dynamics(model, q, v, tau, origin).qdd).max() > 1.0


@pytest.mark.parametrize("name,kind,ref,gains", [
    ("solo12", "3d", "local_world_aligned", (2.0, 3.0)),
    ("talos_full_v2", "6d", "local", (2.0, 3.0))])
def test_derivatives_at_a_kept_solve_are_the_solved_ones(name, kind, ref, gains):
    """contact_dynamics_kept (trajopt's rollout) keeps its solve; the derivatives taken
    from it (placing the bodies again, not solving again) are the ones that solve, bit
    for bit, and so are its qdd and forces."""
    from rbdiff.contacts import pack
    from rbdiff.cpu.contacts import (contact_dynamics_derivatives_kept_batch,
                                     contact_dynamics_kept)
    from rbdiff.cpu.scratch import single_call_scratch
    from rbdiff.kernels.contact_dynamics import kept_size
    model, pm, _ = pair(name)
    cs = contact_set(name, kind, ref, gains)
    packed = pack(model, cs)
    Q, V, T = (np.array(x) for x in zip(*[state(pm, 40 + b) for b in range(3)]))
    kept = np.full((3, kept_size(model.nv, packed[2]) + 1), np.nan)
    ws = single_call_scratch(model.njoints, model.nv)[0]
    qdd, forces = np.empty(model.nv), np.empty(packed[2])
    F = np.empty((model.njoints, model.nv, 6))
    solved = rbd.contact_dynamics(model, Q, V, T, cs)
    for b in range(3):
        contact_dynamics_kept(model.mi, model.mf, model.frame_parents, model.frame_mf, Q[b],
                              V[b], T[b], packed[0], packed[1], ws, F, kept[b], qdd, forces)
        assert np.array_equal(qdd, solved.qdd[b]) and np.array_equal(forces, solved.forces[b])
    assert np.isnan(kept[:, -1]).all()            # nothing written past its record
    out = [np.empty((3, model.nv, model.nv)) for _ in range(3)] + \
        [np.empty((3, packed[2], model.nv)) for _ in range(3)]
    contact_dynamics_derivatives_kept_batch(model.mi, model.mf, model.frame_parents,
                                            model.frame_mf, Q, V, T, kept, *out, packed[0],
                                            packed[1])
    ref = rbd.contact_dynamics_derivatives(model, Q, V, T, cs)
    assert all(np.array_equal(x, y) for x, y in zip(out, ref))
