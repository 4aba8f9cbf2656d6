"""rbdiff.trajopt's cost terms (residuals.py, weighted regularisation in costs.py) and
Crocoddyl's gaits (gaits.py).

Every term's gradient against central differences on the manifold (rbd.integrate) on
solo12, its Gauss-Newton Hessian symmetric and positive semi-definite, the force terms'
through the contact dynamics of a contact knot; the friction and wrench cones' matrices
and Pinocchio's log6 / Jlog6 of the placement kernel; a short trotting problem solved by
FDDP to a stationary point (the gradient of the total cost in the controls, by central
differences, below 1e-4 of the initial one); bad input refused when the problem is
built; and, where Crocoddyl is installed, the same cost of the same controls as
Crocoddyl's own gait builders."""

import numpy as np
import pinocchio as pin
import pytest

import rbdiff as rbd
import rbdiff.trajopt as to
from rbdiff.bench.trajopt import FEET, feet_contacts, solo_standing
from rbdiff.cpu.trajopt_costs import euler_rows_batch, placement_log_batch
from rbdiff.trajopt.costs import add_gauss_newton, derivative_arrays
from rbdiff.trajopt.gaits import Biped, Quadruped
from rbdiff.trajopt.residuals import (CoMPosition, ContactForce, FramePlacement,
                                      FrameVelocity, FrictionCone, StateBounds, WrenchCone,
                                      friction_cone_matrix, wrench_cone_matrix)

H = 1e-6


@pytest.fixture(scope="module")
def solo():
    return solo_standing()


def _states(m, x0, K=2, seed=0):
    rng = np.random.default_rng(seed)
    q = np.stack([rbd.integrate(m, x0[:m.nq], 0.1 * rng.normal(size=m.nv))
                  for _ in range(K)])
    return q, 0.5 * rng.normal(size=(K, m.nv)), rng.normal(size=(K, m.nv - 6))


def _fd_gradient(m, term, q, v, u):
    """Central differences of term.value in the tangent x = (dq, dv) and in u."""
    K, nv = q.shape[0], m.nv
    gx = np.zeros((K, 2 * nv))
    gu = None if u is None else np.zeros(u.shape)
    for i in range(2 * nv):
        e = np.zeros(nv)
        e[i % nv] = H
        if i < nv:
            qp = np.stack([rbd.integrate(m, qk, e) for qk in q])
            qm = np.stack([rbd.integrate(m, qk, -e) for qk in q])
            gx[:, i] = (term.value(m, qp, v, u) - term.value(m, qm, v, u)) / (2 * H)
        else:
            gx[:, i] = (term.value(m, q, v + e, u) - term.value(m, q, v - e, u)) / (2 * H)
    if u is not None:
        for i in range(u.shape[1]):
            e = np.zeros(u.shape[1])
            e[i] = H
            gu[:, i] = (term.value(m, q, v, u + e) - term.value(m, q, v, u - e)) / (2 * H)
    return gx, gu


def _check_term(m, term, q, v, u, rtol=1e-6):
    term.check(m, m.nv - 6)
    c, lx, lu, lxx, luu = term.derivatives(m, q, v, u)
    np.testing.assert_allclose(c, term.value(m, q, v, u), rtol=1e-13)
    gx, gu = _fd_gradient(m, term, q, v, u)
    scale = max(np.abs(gx).max(), 1e-12)
    np.testing.assert_allclose(lx, gx, atol=rtol * scale)
    if lu is not None:
        np.testing.assert_allclose(lu, gu, atol=rtol * max(np.abs(gu).max(), 1e-12))
        assert np.allclose(luu, np.swapaxes(luu, 1, 2))
    np.testing.assert_allclose(lxx, np.swapaxes(lxx, 1, 2), atol=1e-12 * np.abs(lxx).max())
    assert np.linalg.eigvalsh(lxx).min() > -1e-9 * max(np.abs(lxx).max(), 1.0)
    return c


def test_state_terms_gradients(solo):
    m, x0 = solo
    q, v, u = _states(m, x0)
    p = rbd.frame_placement(m, x0[:m.nq], "FL_FOOT")
    M = np.eye(4)
    M[:3, 3] = p[:3, 3] + [0.05, -0.02, 0.1]
    rng = np.random.default_rng(3)
    lo, hi = StateBounds.limits(m, np.full(m.nv - 6, 0.3))
    lo[6:m.nv] = x0[7:m.nq] + 0.02           # active on some joints of the random states
    hi[6:m.nv] = np.maximum(lo[6:m.nv], x0[7:m.nq] + 0.05)
    terms = [CoMPosition(rbd.center_of_mass(m, x0[:m.nq]) + 0.1, 3.0, [1.0, 2.0, 0.5]),
             FramePlacement("FL_FOOT", M, 2.0),
             FramePlacement("HR_FOOT", M, 1.0, np.arange(1.0, 7.0)),
             FrameVelocity("FR_FOOT", rng.normal(size=6), "local", 1.5),
             FrameVelocity("HL_FOOT", None, "local_world_aligned", 1.0, np.arange(6.0)),
             StateBounds(lo, hi, 1e2),
             to.StateRegularization(x0, 10.0, rng.uniform(0, 2, 2 * m.nv)),
             to.ControlRegularization(0.1, weights=rng.uniform(0, 2, m.nv - 6)),
             to.FrameTranslation("FL_FOOT", M[:3, 3], 4.0)]
    for term in terms:
        c = _check_term(m, term, q, v, u if getattr(term, "reads_control", False) else None)
        assert (c > 0).all(), type(term).__name__


def test_stacked_targets_match_single_terms(solo):
    m, x0 = solo
    q, v, _ = _states(m, x0, K=3)
    targets = [rbd.center_of_mass(m, x0[:m.nq]) + d for d in (0.0, 0.1, -0.2)]
    terms = [CoMPosition(t, 2.0) for t in targets]
    st = terms[0].stacked(terms)
    got = st.derivatives(m, q, v, None)
    for k, t in enumerate(terms):
        one = t.derivatives(m, q[k:k + 1], v[k:k + 1], None)
        for a, b in zip(got, one):
            if a is not None:
                np.testing.assert_allclose(a[k], b[0], rtol=1e-14, atol=1e-14)


def test_gauss_newton_kernel_against_numpy():
    """The compiled accumulation (each residual row's nonzero columns, rows with a'' = 0
    skipped) against the dense products w R^T a', w R^T diag(a'') R at scattered knots,
    x columns offset, control columns; and the Euler rows against their einsum."""
    rng = np.random.default_rng(7)
    K, nr, mx, cx, nu, T = 4, 5, 6, 3, 4, 7
    Ar, Arr = rng.normal(size=(K, nr)), rng.uniform(size=(K, nr))
    Arr[:, 1] = 0.0
    Rx, Ru = rng.normal(size=(K, nr, mx)), rng.normal(size=(K, nr, nu))
    Rx[:, :, 2] = 0.0
    Ru[:, 3, :] = 0.0
    knots = np.array([5, 0, 3, 6])
    out = derivative_arrays(T, 12, nu)
    add_gauss_newton(out, knots, 0.5, Ar, Arr, Rx, cx, Ru)
    lx, lu, lxx, luu, lxu = out
    R = np.zeros((K, nr, 12))
    R[:, :, cx:cx + mx] = Rx
    D = 0.5 * Arr[:, :, None]
    np.testing.assert_allclose(lx[knots], 0.5 * np.einsum("kri,kr->ki", R, Ar), atol=1e-14)
    np.testing.assert_allclose(lu[knots], 0.5 * np.einsum("kri,kr->ki", Ru, Ar), atol=1e-14)
    np.testing.assert_allclose(lxx[knots], np.einsum("kri,krj->kij", R * D, R), atol=1e-14)
    np.testing.assert_allclose(luu[knots], np.einsum("kri,krj->kij", Ru * D, Ru), atol=1e-14)
    np.testing.assert_allclose(lxu[knots], np.einsum("kri,krj->kij", R * D, Ru), atol=1e-14)
    rest = np.setdiff1d(np.arange(T), knots)
    assert not lxx[rest].any() and not lx[rest].any() and not luu[rest].any()
    nv, dt = 4, 0.1
    Jq, Jv = rng.normal(size=(2, K, nv, nv))
    Jv[:, 1, 2:] = 0.0
    Fx, Fu = rng.normal(size=(T, 2 * nv, 2 * nv)), rng.normal(size=(T, 2 * nv, nu))
    want_x = np.einsum("kij,kjl->kil", dt * Jv, Fx[knots, nv:])
    want_x[:, :, :nv] += Jq
    want_u = np.einsum("kij,kjl->kil", dt * Jv, Fu[knots, nv:])
    euler_rows_batch(knots, Jq, Jv, dt, Fx, Fu)
    np.testing.assert_allclose(Fx[knots, :nv], want_x, atol=1e-14)
    np.testing.assert_allclose(Fu[knots, :nv], want_u, atol=1e-14)


def test_placement_log_against_pinocchio():
    rng = np.random.default_rng(1)
    pin.seed(1)
    Ms = [pin.SE3.Random() for _ in range(4)] + [pin.SE3.Identity()]
    Rs = [pin.SE3.Random() for _ in range(4)] + [pin.SE3.Identity()]
    K = len(Ms)
    r, J = np.empty((K, 6)), np.empty((K, 6, 6))
    placement_log_batch(np.array([M.homogeneous for M in Ms]),
                        np.array([M.homogeneous for M in Rs]), r, J)
    for k in range(K):
        rel = Rs[k].inverse() * Ms[k]
        np.testing.assert_allclose(r[k], pin.log6(rel).vector, atol=1e-12)
        np.testing.assert_allclose(J[k], pin.Jlog6(rel), atol=1e-12)
    # one reference (1, 4, 4) for every placement
    placement_log_batch(np.array([M.homogeneous for M in Ms]), Rs[0].homogeneous[None],
                        r, J)
    for k in range(K):
        rel = Rs[0].inverse() * Ms[k]
        np.testing.assert_allclose(r[k], pin.log6(rel).vector, atol=1e-12)
        np.testing.assert_allclose(J[k], pin.Jlog6(rel), atol=1e-12)
    assert rng is not None


def test_cone_matrices():
    A, lb, ub = friction_cone_matrix(0.7)
    s = np.cos(np.pi / 2)            # Crocoddyl's second facet pair at theta = pi / 2
    np.testing.assert_array_equal(A, [[1, 0, -0.7], [-1, 0, -0.7], [s, 1, -0.7],
                                      [-s, -1, -0.7], [0, 0, 1]])
    assert (lb[:4] == -np.inf).all() and (ub[:4] == 0).all() and lb[4] == 0
    A6, lb6, ub6 = wrench_cone_matrix(0.7, (0.1, 0.05))
    assert A6.shape == (17, 6)
    mi = 0.7 * np.cos(np.pi / 4)     # the inner approximation
    np.testing.assert_allclose(A6[0], [1, 0, -mi, 0, 0, 0])
    np.testing.assert_allclose(A6[5], [0, 0, -0.025, 1, 0, 0])
    np.testing.assert_allclose(A6[9], [0.025, 0.05, -mi * 0.075, -mi, -mi, -1])
    np.testing.assert_allclose(A6[13], [0.025, 0.05, -mi * 0.075, mi, mi, 1])
    # a standing wrench (vertical force, centred) is inside: every facet below its bound
    f = np.array([0.0, 0.0, 100.0, 0.0, 0.0, 0.0])
    assert ((A6 @ f >= lb6) & (A6 @ f <= ub6)).all()


def _contact_fd(prob, q, v, u, term, H=1e-6):
    """dt * term at knot 0 of a one-knot contact problem as a function of (q, v, u), its
    central differences (a short step and moderate forces: the barrier's curvature jumps where a facet's
    bound is crossed, which a central difference sees as an O(H) error)."""
    m, c = prob.model, prob.knot_contacts[0]

    def value(qk, vk, uk):
        f = rbd.contact_dynamics(m, qk, vk, prob.tau(uk), c).forces
        row, dim = prob._force_slot(0, term)
        return prob.dt * term.value(m, qk[None], vk[None], uk[None],
                                    f[None, row:row + dim])[0]
    nv = m.nv
    gx = np.zeros(2 * nv)
    for i in range(nv):
        e = np.zeros(nv)
        e[i] = H
        gx[i] = (value(rbd.integrate(m, q, e), v, u) - value(rbd.integrate(m, q, -e), v, u))
        gx[nv + i] = value(q, v + e, u) - value(q, v - e, u)
    gu = np.zeros(u.size)
    for i in range(u.size):
        e = np.zeros(u.size)
        e[i] = H
        gu[i] = value(q, v, u + e) - value(q, v, u - e)
    return gx / (2 * H), gu / (2 * H), value(q, v, u)


def test_force_terms_gradients(solo):
    m, x0 = solo
    q, v, _ = _states(m, x0, K=1, seed=5)
    q, v = q[0], 0.2 * v[0]
    four = feet_contacts()
    six = tuple(rbd.Contact(f, "6d", "local_world_aligned", gains=(0.0, 30.0))
                for f in FEET[:2])
    us0 = to.Problem(m, x0, 1, 0.01, contacts=four).quasi_static_controls(q[None])
    rng = np.random.default_rng(2)
    u = us0[0] + 0.5 * rng.normal(size=m.nv - 6)
    for contacts, term in ((four, FrictionCone("FL_FOOT", 0.02, weight=10.0)),
                           (four, ContactForce("HR_FOOT", [1.0, -2.0, 20.0], 1e-2,
                                               [1.0, 2.0, 3.0])),
                           (six, WrenchCone("FR_FOOT", 0.05, (0.02, 0.01), weight=10.0)),
                           (six, FrictionCone("FL_FOOT", 0.02, weight=10.0))):
        prob = to.Problem(m, np.concatenate([q, v]), 1, 0.01, running=[[term]],
                          contacts=[contacts])
        qx, vx, f = prob.shoot(np.stack([q, q]), np.stack([v, v]), u[None])
        Fx, Fu, lx, lu, lxx, luu, lxu = prob.derivatives(np.stack([q, q]),
                                                         np.stack([v, v]), u[None], vx, f)
        gx, gu, c = _contact_fd(prob, q, v, u, term)
        assert c > 0, type(term).__name__             # the barrier is active somewhere
        np.testing.assert_allclose(prob.cost(np.stack([q, q]), np.stack([v, v]), u[None],
                                             f), c, rtol=1e-12)
        # central differences of the contact forces carry ~1e-6 relative noise (the
        # KKT solve's roundoff over the step); the base translation's columns are exact
        # zeros (the forces in world axes do not depend on where the robot stands)
        scale = max(np.abs(gx).max(), np.abs(gu).max())
        np.testing.assert_allclose(lx[0], gx, atol=1e-5 * scale)
        np.testing.assert_allclose(lu[0], gu, atol=1e-5 * scale)
        assert (lx[0, :3] == 0).all()
        assert lxu is not None and np.abs(lxu[0]).max() > 0
        H_ = np.block([[lxx[0], lxu[0]], [lxu[0].T, luu[0]]])
        assert np.linalg.eigvalsh(H_).min() > -1e-9 * np.abs(H_).max()


def _solo_gait():
    m, x0 = solo_standing()
    return m, x0, Quadruped(m, "FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT",
                            reference=x0[:m.nq], velocity_limits=np.full(m.nv - 6, 20.0))


def _control_gradient(prob, us, h=1e-6):
    g = np.zeros_like(us)
    for t in range(prob.T):
        for i in range(prob.nu):
            e = np.zeros_like(us)
            e[t, i] = h
            g[t, i] = (to.rollout_cost(prob, us + e) - to.rollout_cost(prob, us - e)) / (2 * h)
    return g


def test_trotting_converges_to_a_stationary_point():
    m, x0, gait = _solo_gait()
    prob = gait.trotting(x0, 0.06, 0.03, 1e-2, 4, 2)
    assert prob.T == 14 and len(prob.impulse_knots) == 2
    us0 = prob.quasi_static_controls(np.tile(x0[:m.nq], (prob.T + 1, 1)))
    xs0 = np.tile(x0, (prob.T + 1, 1))
    res = to.solve(prob, method="fddp", xs=xs0, us=us0, max_iter=200)
    assert res.converged, res.history[-1]
    g0 = _control_gradient(prob, us0)
    g = _control_gradient(prob, res.us)
    assert np.abs(g).max() < 1e-4 * np.abs(g0).max()
    assert res.cost < to.rollout_cost(prob, us0)


def test_gaits_shapes(solo):
    m, x0, gait = _solo_gait()
    w = gait.walking(x0, 0.06, 0.03, 1e-2, 4, 2)
    # double support, two steps of 4 knots + a touch-down each, double support, two more
    assert w.T == 2 + 2 * 5 + 2 + 2 * 5 and list(w.impulse_knots) == [6, 11, 18, 23]
    assert [len(c) for c in w.knot_contacts[2:6]] == [3] * 4
    j = gait.jumping(x0, 0.05, np.array([0.05, 0.0, 0.0]), 1e-2, 3, 2)
    assert j.T == 3 + 2 + 2 + 1 + 3 - 1 and list(j.impulse_knots) == [7]
    assert [len(c) for c in j.knot_contacts[3:7]] == [0] * 4
    b = gait.bounding(x0, 0.06, 0.03, 1e-2, 4, 2)
    p = gait.pacing(x0, 0.06, 0.03, 1e-2, 4, 2)
    assert b.T == p.T == 2 + 5 + 2 + 5
    # the first problem of a gait object takes half steps first, as Crocoddyl's
    assert not gait.first_step


def test_bad_input(solo):
    m, x0 = solo
    with pytest.raises(KeyError):
        Quadruped(m, "FL_FOOT", "FR_FOOT", "NO_SUCH_FOOT", "HR_FOOT", reference=x0[:m.nq])
    with pytest.raises(ValueError, match="reference configuration"):
        Biped(m, "FL_FOOT", "FR_FOOT")          # solo12 has no "half_sitting"
    lo, hi = StateBounds.limits(m)
    lo[7] = 1.0
    hi[7] = 0.5
    with pytest.raises(ValueError, match="infeasible bounds"):
        StateBounds(lo, hi)
    with pytest.raises(ValueError, match="normal-force"):
        FrictionCone("FL_FOOT", 0.7, min_nforce=10.0, max_nforce=1.0)
    with pytest.raises(ValueError, match="has no contact"):
        to.Problem(m, x0, 2, 0.01, running=[[FrictionCone("FL_FOOT")]] * 2,
                   contacts=[feet_contacts(FEET[1:])] * 2)
    with pytest.raises(ValueError, match="needs a 6D contact"):
        to.Problem(m, x0, 1, 0.01, running=[[WrenchCone("FL_FOOT")]],
                   contacts=[feet_contacts()])
    with pytest.raises(KeyError):
        to.Problem(m, x0, 1, 0.01, running=[CoMPosition([0, 0, 0]),
                                            FramePlacement("NOPE", np.eye(4))])
    with pytest.raises(ValueError, match="not a rotation"):
        FramePlacement("FL_FOOT", 2 * np.eye(4))
    with pytest.raises(ValueError, match="reads the control"):
        to.Problem(m, x0, 2, 0.01, running=[[to.ControlRegularization()],
                                            [to.ControlRegularization()]],
                   contacts=[feet_contacts()] * 2, impulses={1: feet_contacts()})
    with pytest.raises(ValueError, match="free-flyer"):
        Biped(rbd.load_robot("panda"), "panda_hand", "panda_hand", reference=np.zeros(9))


def test_same_cost_as_crocoddyl():
    crocoddyl = pytest.importorskip("crocoddyl")
    from crocoddyl.utils.quadruped import SimpleQuadrupedalGaitProblem

    from rbdiff.bench.anchor import pin_model
    from rbdiff.bench.trajopt import crocoddyl_controls
    m, x0 = solo_standing()
    pm = pin_model("solo12", True)
    pm.referenceConfigurations["standing"] = x0[:m.nq].copy()
    feet = ("FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT")
    rng = np.random.default_rng(4)
    for name, args in (("trotting", (0.06, 0.03, 1e-2, 4, 2)),
                       ("walking", (0.06, 0.03, 1e-2, 4, 2)),
                       ("jumping", (0.05, np.array([0.05, 0.0, 0.0]), 1e-2, 3, 2))):
        croc = SimpleQuadrupedalGaitProblem(pm, *feet)
        ours = Quadruped(m, *feet, velocity_limits=pm.velocityLimit[6:],
                         reference=x0[:m.nq])
        cp = getattr(croc, f"create{name.capitalize()}Problem")(
            x0, *[a.copy() if isinstance(a, np.ndarray) else a for a in args])
        prob = getattr(ours, name)(x0, *args)
        assert prob.T == cp.T
        us = prob.quasi_static_controls(np.tile(x0[:m.nq], (prob.T + 1, 1))) \
            + 0.3 * rng.normal(size=(prob.T, prob.nu))
        cu = crocoddyl_controls(prob, us)
        c = cp.calc(cp.rollout(cu), cu)
        assert abs(to.rollout_cost(prob, us) - c) <= 1e-9 * abs(c), name
        assert crocoddyl is not None


def test_same_cost_as_crocoddyl_biped():
    """talos_legs walking (6D soles, wrench cones, placement tracking, impulses): the
    same cost of the same controls as Crocoddyl's SimpleBipedGaitProblem, both from the
    model's half_sitting reference (Biped's default)."""
    crocoddyl = pytest.importorskip("crocoddyl")
    erd = pytest.importorskip("example_robot_data")
    from crocoddyl.utils.biped import SimpleBipedGaitProblem

    from rbdiff.bench.trajopt import crocoddyl_controls
    pm = erd.load("talos_legs").model
    m = rbd.load_robot("talos_legs")
    x0 = np.concatenate([m.reference_configurations["half_sitting"], np.zeros(m.nv)])
    feet = ("right_sole_link", "left_sole_link")
    cp = SimpleBipedGaitProblem(pm, *feet).createWalkingProblem(x0, 0.3, 0.05, 0.03, 4, 2)
    prob = Biped(m, *feet).walking(x0, 0.3, 0.05, 0.03, 4, 2)
    assert prob.T == cp.T
    rng = np.random.default_rng(5)
    us = prob.quasi_static_controls(np.tile(x0[:m.nq], (prob.T + 1, 1))) \
        + 0.3 * rng.normal(size=(prob.T, prob.nu))
    cu = crocoddyl_controls(prob, us)
    c = cp.calc(cp.rollout(cu), cu)
    assert abs(to.rollout_cost(prob, us) - c) <= 1e-9 * abs(c)
    assert crocoddyl is not None
