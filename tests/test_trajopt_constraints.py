"""rbdiff.trajopt's constraints (trajopt/constraints.py) and its augmented-Lagrangian FDDP
(trajopt/constrained.py): every constraint's Jacobian against central differences on the
manifold (q moved by rbd.integrate, the forces through the knot's contact dynamics), the
KKT conditions at a constrained solo12 trot's solution (stationarity of the Lagrangian
by the costates of the dense tangent Jacobians, the bound derived from the solver's own
stopping test; complementarity; feasibility checked on the forces and torques
themselves), the cone met where FDDP's soft-cone optimum breaks it, an infeasible
problem named, a warm start, bad input."""

import numpy as np
import pytest

import rbdiff as rbd
import rbdiff.trajopt as to
from rbdiff.bench.trajopt import FEET, feet_contacts, solo_standing
from rbdiff.trajopt import constraints as K
from rbdiff.trajopt.constrained import (FEAS_TOL, Infeasible, _Augmented,
                                        lagrangian_gradient)
from rbdiff.trajopt.gaits import Quadruped
from rbdiff.trajopt.rollout import IMPULSE

H = 1e-6
MU = 0.7
TROT = (0.15, 0.1, 1e-2, 4, 1)        # a short trot: 12 knots, two swing phases


@pytest.fixture(scope="module")
def solo():
    return solo_standing()


def _split(prob, xs):
    return (np.ascontiguousarray(xs[:, :prob.nq]), np.ascontiguousarray(xs[:, prob.nq:]))


def _force_derivatives(prob, q, v, us):
    """(vnext, forces, (df_dx, df_du)) at the knots (Problem._dynamics_parts fills them)."""
    _, vx, f = prob.shoot(q, v, us)
    nc, nx = max(prob.ncmax, 1), 2 * prob.nv
    df = (np.zeros((prob.T, nc, nx)), np.zeros((prob.T, nc, prob.nu)))
    prob._dynamics_parts(q, v, us, vx, df)
    return vx, f, df


def _rotation(w):
    """exp([w]x) (Rodrigues): a tilted ground."""
    w = np.asarray(w, dtype=float)
    a = np.linalg.norm(w)
    k = np.array([[0, -w[2], w[1]], [w[2], 0, -w[0]], [-w[1], w[0], 0]]) / a
    return np.eye(3) + np.sin(a) * k + (1 - np.cos(a)) * k @ k


def test_jacobians_against_finite_differences_on_the_manifold(solo):
    """Every constraint kind at random states, velocities and controls: R_x, R_u against
    central differences of the residual (the forces recomputed by the knot's contact
    dynamics: shoot), q moved along each tangent direction by rbd.integrate."""
    m, x0 = solo
    rng = np.random.default_rng(0)
    three = feet_contacts(FEET[1:])
    six = (rbd.Contact("FL_FOOT", "6d", "local_world_aligned", gains=(0.0, 50.0)),)
    lo, hi = np.full(2 * m.nv, -np.inf), np.full(2 * m.nv, np.inf)
    lo[[2, 9, m.nv + 10]], hi[[2, 9, m.nv + 10]] = -0.1, 0.2
    on_three = [K.FrictionCone("FR_FOOT", MU, inner_appr=True),
                K.FrictionCone("HR_FOOT", MU, rotation=_rotation([0.1, -0.2, 0.3]), nf=6),
                K.MinNormalForce("HL_FOOT", 1.0), K.ControlBox(), K.StateBox(),
                K.CircularCone("HL_FOOT", MU, _rotation([0.2, 0.1, -0.3])),
                K.StateBox(lo, hi, x0, name="some rows"),
                K.FrameTranslationBox("FL_FOOT", [None, -1.0, 0.01], [0.5, 1.0, np.inf])]
    on_six = [K.WrenchCone("FL_FOOT", MU), K.FrictionCone("FL_FOOT", MU),
              K.CircularCone("FL_FOOT", MU),
              K.ControlBox(-1.0, 2.0)]
    T = 3
    placement = np.eye(4)
    placement[:3, :3] = _rotation([0.3, -0.1, 0.2])
    placement[:3, 3] = [0.2, -0.1, 0.05]
    prob = to.Problem(m, x0, T, 0.01, running=[to.ControlRegularization(1e-3)],
                      contacts=[three, three, six],
                      constraints=[on_three, on_three, on_six],
                      terminal_constraints=[K.StateEquality(x0),
                                            K.FrameTranslationBox("HR_FOOT", upper=1.0),
                                            K.FramePlacementEquality("HR_FOOT", placement)])
    q = np.stack([rbd.integrate(m, x0[:m.nq], 0.1 * rng.normal(size=m.nv))
                  for _ in range(T + 1)])
    v = 0.5 * rng.normal(size=(T + 1, m.nv))
    u = rng.normal(size=(T, prob.nu))
    cs = prob.constraints
    _, f, df = _force_derivatives(prob, q, v, u)
    jac = cs.jacobians(q, v, u, f, df)

    def res(q, v, u):
        return cs.residuals(q, v, u, prob.shoot(q, v, u)[2])

    kinds = set()
    for g, ((_, knots, c, _), (r, Rx, Ru)) in enumerate(zip(cs.groups, jac)):
        kinds.add(type(c))
        np.testing.assert_array_equal(r, res(q, v, u)[g])
        for k, t in enumerate(knots):
            fx = np.empty((r.shape[1], 2 * m.nv))
            for i in range(2 * m.nv):
                e = np.zeros(m.nv)
                e[i % m.nv] = H
                qp, qm, vp, vm = q.copy(), q.copy(), v.copy(), v.copy()
                if i < m.nv:
                    qp[t], qm[t] = rbd.integrate(m, q[t], e), rbd.integrate(m, q[t], -e)
                else:
                    vp[t] += e
                    vm[t] -= e
                fx[:, i] = (res(qp, vp, u)[g][k] - res(qm, vm, u)[g][k]) / (2 * H)
            ours = Rx[k] if Rx.shape[2] else np.zeros_like(fx)
            np.testing.assert_allclose(ours, fx, rtol=1e-6,
                                       atol=1e-7 * max(np.abs(fx).max(), 1.0),
                                       err_msg=f"{c.name} R_x at knot {t}")
            if t == T:
                assert not Ru.shape[2]
                continue
            fu = np.empty((r.shape[1], prob.nu))
            for i in range(prob.nu):
                up, um = u.copy(), u.copy()
                up[t, i] += H
                um[t, i] -= H
                fu[:, i] = (res(q, v, up)[g][k] - res(q, v, um)[g][k]) / (2 * H)
            ours = Ru[k] if Ru.shape[2] else np.zeros_like(fu)
            np.testing.assert_allclose(ours, fu, rtol=1e-6,
                                       atol=1e-7 * max(np.abs(fu).max(), 1.0),
                                       err_msg=f"{c.name} R_u at knot {t}")
    assert kinds == {K.FrictionCone, K.MinNormalForce, K.ControlBox, K.StateBox,
                     K.StateEquality, K.FrameTranslationBox, K.WrenchCone, K.CircularCone,
                     K.FramePlacementEquality}


def test_circular_cone_projection():
    """proj_K onto {||t|| <= mu n}: in K, idempotent, s - proj(s) normal to K at proj(s)
    (orthogonal to it, in the polar cone), its Jacobian against central differences."""
    rng = np.random.default_rng(3)
    c = K.CircularCone("FL_FOOT", MU)
    s = rng.normal(size=(200, 3)) * [1.0, 1.0, 0.7]
    P, J = c.project(s)
    a = np.hypot(P[:, 0], P[:, 1])
    assert np.all(a <= MU * P[:, 2] + 1e-12)
    np.testing.assert_allclose(c.project(P)[0], P, atol=1e-12)
    d = s - P
    np.testing.assert_allclose(np.einsum("ki,ki->k", d, P), 0.0, atol=1e-12)
    assert np.all(np.hypot(d[:, 0], d[:, 1]) <= -d[:, 2] / MU + 1e-12)      # polar cone
    kinds = set()
    for k in range(len(s)):
        a0 = np.hypot(*s[k, :2])
        kinds.add((a0 <= MU * s[k, 2], MU * a0 <= -s[k, 2]))
        fd = np.empty((3, 3))
        for i in range(3):
            e = np.zeros(3)
            e[i] = H
            fd[:, i] = (c.project((s[k] + e)[None])[0][0]
                        - c.project((s[k] - e)[None])[0][0]) / (2 * H)
        np.testing.assert_allclose(J[k], fd, rtol=1e-6, atol=1e-8)
    assert len(kinds) == 3                   # inside, polar and boundary cases all met


def _trot(m, x0, constrained):
    gait = Quadruped(m, *FEET, reference=x0[:m.nq], constrained=constrained)
    prob = gait.trotting(x0, *TROT)
    us = prob.quasi_static_controls(np.tile(x0[:m.nq], (prob.T, 1)))
    return prob, np.tile(x0, (prob.T + 1, 1)), us


@pytest.fixture(scope="module")
def trot(solo):
    """(the constrained trot, its solution by solve(prob): the default method)."""
    m, x0 = solo
    prob, xs, us = _trot(m, x0, True)
    return prob, to.solve(prob, xs=xs, us=us)


def _pyramid_violation(prob, res):
    """The worst of f_n < 0, |f_x| > mu f_n, |f_y| > mu f_n (Crocoddyl's outer pyramid,
    world axes) over the stance knots and feet, and of |u| > the effort limits: from the
    forces and torques themselves, not the constraints' code."""
    worst = 0.0
    for t in range(prob.T):
        if prob.kind[t] == IMPULSE:
            continue
        for j, c in enumerate(prob.knot_contacts[t]):
            fx, fy, fz = res.forces[t, 3 * j:3 * j + 3]
            worst = max(worst, -fz, abs(fx) - MU * fz, abs(fy) - MU * fz)
    lim = prob.model.effort_limits[6:]
    return max(worst, float((np.abs(res.us[prob.kind != IMPULSE]) - lim).max()))


def test_constrained_trot_meets_the_cone_where_fddp_breaks_it(solo, trot):
    """solo12 trotting with the cone (mu 0.7), f_n >= 0 and the torque limits as
    constraints: converged (its own stopping test) with the worst violation <= 1e-6,
    where FDDP's optimum of the soft cone (Crocoddyl's barrier cost) breaks it by
    newtons; the constrained optimum costs more (the cost terms being the same but the
    cone's, which is zero inside the cone)."""
    m, x0 = solo
    prob, res = trot
    assert res.method == "al" and res.converged and res.feasible
    assert res.max_violation <= FEAS_TOL
    assert _pyramid_violation(prob, res) <= FEAS_TOL
    assert set(res.violations) == {f"FrictionCone({f})" for f in FEET} | {"ControlBox"}
    soft, xs, us = _trot(m, x0, False)
    ref = to.solve(soft, "fddp", xs=xs, us=us)
    assert ref.converged
    assert _pyramid_violation(soft, ref) > 1.0             # newtons
    q, v = _split(prob, ref.xs)
    assert prob.constraints.report(prob.constraints.residuals(q, v, ref.us,
                                                              ref.forces))[0] > 1.0
    # the same cost terms but the soft cone's, which is 0 on a plan inside the cone
    q, v = _split(prob, res.xs)
    assert soft.cost(q, v, res.us, res.forces) == pytest.approx(res.cost, rel=1e-12)
    assert res.cost > ref.cost


def test_constrained_gait_puts_the_cones_in_the_constraints(trot):
    """Quadruped(constrained=True): no cone cost term; at each knot that is not an impulse
    knot, the cone of each support foot (Crocoddyl's 4-facet outer pyramid with f_n >= 0)
    and the torque limits (the model's effort limits) as constraints."""
    prob, _ = trot
    m = prob.model
    assert not any(isinstance(t, to.FrictionCone) for ts in prob.knot_costs for t in ts)
    cone = Quadruped(m, *FEET)._cone("FL_FOOT")        # the cost term's matrix and bounds
    for t, cs in enumerate(prob.constraints.knot_constraints):
        if prob.kind[t] == IMPULSE:
            assert cs == []
            continue
        feet = sorted(c.frame for c in prob.knot_contacts[t])
        assert sorted(c.frame for c in cs if isinstance(c, K.FrictionCone)) == feet
        boxes = [c for c in cs if isinstance(c, K.ControlBox)]
        assert len(boxes) == 1 and len(cs) == len(feet) + 1
        np.testing.assert_array_equal(boxes[0].upper, m.effort_limits[6:])
        np.testing.assert_array_equal(boxes[0].lower, -m.effort_limits[6:])
        for c in cs[:-1]:
            np.testing.assert_array_equal(c.A, cone.A)
            np.testing.assert_array_equal(c.lower, cone.lower)
            np.testing.assert_array_equal(c.upper, cone.upper)


def test_exact_cone_on_a_trot(solo, trot):
    """The circular cone ||f_t|| <= mu f_n in place of the pyramid: converged with
    ||f_t|| - mu f_n <= 1e-6 at every stance knot and foot (from the forces), where the
    pyramid's optimum breaks it (its corners reach sqrt(2) mu); it costs more."""
    m, x0 = solo
    prob, res = trot
    cons = [[K.CircularCone(c.frame, MU) if isinstance(c, K.FrictionCone) else c
             for c in cs] for cs in prob.constraints.knot_constraints]
    exact = to.Problem(m, x0, prob.T, prob.dt, prob._running_arg, prob.terminal,
                       actuation="floating_base", contacts=prob._args[0],
                       impulses=prob._args[1], constraints=cons)
    _, xs, us = _trot(m, x0, True)
    r = to.solve(exact, xs=xs, us=us)
    assert r.converged and r.max_violation <= FEAS_TOL

    def worst(p, res):
        return max(np.hypot(*res.forces[t, 3 * j:3 * j + 2]) - MU * res.forces[t, 3 * j + 2]
                   for t in range(p.T) if p.kind[t] != IMPULSE
                   for j in range(len(p.knot_contacts[t])))
    assert worst(exact, r) <= FEAS_TOL
    assert worst(prob, res) > 1.0
    assert r.cost > res.cost


def _reduced_hessian(prob, res):
    """The Gauss-Newton Hessian in the controls of the dynamic knots of the augmented
    Lagrangian the last inner solve minimised (its multipliers and penalty), through the
    dense tangent Jacobians: S_{t+1} = F_x S_t + F_u E_t, H = sum_t [S_t; E_t]' L_t
    [S_t; E_t] + S_T' l_xx(T) S_T."""
    q, v = _split(prob, res.xs)
    aug = _Augmented(prob, res.multipliers, res.rho)
    vx, f, _ = _force_derivatives(prob, q, v, res.us)
    parts, lx, lu, lxx, luu, lxu = aug.derivative_parts(q, v, res.us, vx, f)
    Fx, Fu = prob._assemble(*parts)
    T, nx, nu = prob.T, 2 * prob.nv, prob.nu
    N = T * nu
    S = np.zeros((nx, N))
    Hs = np.zeros((N, N))
    for t in range(T):
        E = np.zeros((nu, N))
        E[:, t * nu:(t + 1) * nu] = np.eye(nu)
        Hs += S.T @ lxx[t] @ S + E.T @ luu[t] @ E
        if lxu is not None:
            Hs += S.T @ lxu[t] @ E + E.T @ lxu[t].T @ S
        S = Fx[t] @ S + Fu[t] @ E
    Hs += S.T @ lxx[T] @ S
    keep = np.concatenate([np.arange(t * nu, (t + 1) * nu) for t in range(T)
                           if prob.kind[t] != IMPULSE])
    return Hs[np.ix_(keep, keep)], keep


def test_kkt_conditions_at_the_solution(trot):
    """At the constrained trot's solution: stationarity of the Lagrangian
    J + sum mu.r in the controls (costates of the dense Jacobians, no Riccati pass, no
    penalty) within the solver's stopping test, 0.5 g' H^-1 g <= tol (H the reduced
    Gauss-Newton Hessian of the augmented Lagrangian), where the multipliers' terms
    matter (without them g is orders larger); dual feasibility (mu >= 0 on an upper
    bound, <= 0 on a lower one, 0 inside); complementarity; feasibility."""
    prob, res = trot
    g, _ = lagrangian_gradient(prob, res)
    Hs, keep = _reduced_hessian(prob, res)
    gk = g.reshape(-1)[keep]
    assert np.all(np.linalg.eigvalsh(Hs) > 0)
    assert 0.5 * gk @ np.linalg.solve(Hs, gk) <= 1e-9        # solve()'s tol
    g0, _ = lagrangian_gradient(prob, res, [np.zeros_like(m) for m in res.multipliers])
    assert np.abs(g0).max() > 1e3 * np.abs(g).max()
    cs = prob.constraints
    q, v = _split(prob, res.xs)
    active = 0
    for (_, _, c, _), r, mu in zip(cs.groups, cs.residuals(q, v, res.us, res.forces),
                                   res.multipliers):
        assert np.all(mu[:, np.isinf(c.upper)] <= 0)
        assert np.all(mu[:, np.isinf(c.lower)] >= 0)
        up = np.where(mu > 0, c.upper - r, 0.0)          # mu > 0: r at its upper bound
        down = np.where(mu < 0, r - c.lower, 0.0)
        assert np.abs(np.minimum(np.abs(mu), np.abs(up + down))).max() <= FEAS_TOL
        assert np.all(c.violation(r) <= FEAS_TOL)
        active += int((np.abs(mu) > 1e-3).sum())
    assert active > 0                                     # the cone binds somewhere
    assert res.complementarity <= FEAS_TOL


def test_second_order_inner_solves_reach_the_same_optimum(solo, trot):
    """second_order=True (the inner solves FDDP's with the dynamics' exact curvature,
    contracted with the costates and the force constraints' multipliers: solve's "ddp"
    on these problems) reaches the same constrained optimum."""
    m, x0 = solo
    prob, res = trot
    _, xs, us = _trot(m, x0, True)
    r = to.solve(prob, xs=xs, us=us, second_order=True)
    assert r.converged and r.max_violation <= FEAS_TOL
    assert any(h["second_order"] for h in r.history)
    assert r.cost == pytest.approx(res.cost, rel=1e-8)


def test_warm_start_with_the_multipliers(trot):
    """Warm-started from its own solution, multipliers and penalty, the solver stops at
    once; from another initial state (Problem.with_x0 keeps the constraints: MPC's next
    step) the multipliers save iterations against the same xs, us without them."""
    prob, res = trot
    again = to.solve(prob, xs=res.xs, us=res.us, multipliers=res.multipliers,
                     rho=res.rho)
    assert again.converged and again.iterations <= 3
    # both points meet the constraints to FEAS_TOL at the same multipliers, so their
    # costs may differ by mu . dr (|dr| <= 2 FEAS_TOL a row) and no more
    slack = 2 * FEAS_TOL * sum(float(np.abs(m).sum()) for m in res.multipliers)
    assert abs(again.cost - res.cost) <= slack
    assert slack < 1e-6 * abs(res.cost)         # (a bound that still means something)
    x1 = prob.x0.copy()
    x1[prob.nq:prob.nq + 3] = [0.05, -0.02, 0.0]        # the base pushed (MPC's next state)
    moved = prob.with_x0(x1)
    assert len(moved.constraints) == len(prob.constraints)
    cold = to.solve(moved, xs=res.xs, us=res.us)
    warm = to.solve(moved, **res.warm_start())
    assert cold.converged and warm.converged and warm.max_violation <= FEAS_TOL
    assert warm.cost == pytest.approx(cold.cost, rel=1e-6)
    assert warm.iterations < cold.iterations


def test_infeasible_is_reported_naming_the_worst_constraint(solo):
    """Torques of at most 0.3 N m (the control bounds' box QP; holding solo12 takes
    0.66) cannot raise its base 3 cm: solve raises Infeasible naming the worst
    constraint, its knot and row, instead of returning a plan; its result the
    least-violation trajectory (the base sags: violated by more than the 3 cm)."""
    m, x0 = solo
    T = 20
    lo, hi = np.full(2 * m.nv, -np.inf), np.full(2 * m.nv, np.inf)
    lo[2] = 0.03
    prob = to.Problem(m, x0, T, 0.01, running=[to.StateRegularization(x0, 1e-1),
                                                to.ControlRegularization(1e-3)],
                      terminal=[to.StateRegularization(x0, 1e2)], contacts=feet_contacts(),
                      u_lower=np.full(12, -0.3), u_upper=np.full(12, 0.3),
                      constraints=[K.FrictionCone(f, MU) for f in FEET],
                      terminal_constraints=[K.StateBox(lo, hi, x0, name="base height")])
    assert np.abs(prob.quasi_static_controls(np.tile(x0[:m.nq], (T, 1)))).max() > 0.6
    with pytest.raises(Infeasible, match=r"infeasible.*the worst is base height at knot "
                                         r"20 \(row 0\), violated by") as e:
        to.solve(prob)
    assert e.value.worst == ("base height", T, 0)
    r = e.value.result
    assert r.max_violation > 0.03 and not r.converged and not r.feasible
    assert r.violations["base height"] == r.max_violation


def test_terminal_placement_badly_scaled_yet_feasible(solo):
    """A terminal equality in metres on a problem whose cost is 0.05 (the base 2 cm
    forward and down, 1 cm aside, in 0.2 s on four feet): its violation stalls while the
    penalty is too weak to matter, which is not infeasibility; reached within 1e-6 (the
    frame's placement computed by rbd.frame_placement)."""
    m, x0 = solo
    goal = rbd.frame_placement(m, x0[:m.nq], "base_link").copy()
    goal[:3, 3] += [0.02, 0.01, -0.02]
    prob = to.Problem(m, x0, 10, 0.02, running=[to.StateRegularization(x0, 1e-1),
                                                 to.ControlRegularization(1e-3)],
                      terminal=[to.StateRegularization(x0, 1e-1)], contacts=feet_contacts(),
                      constraints=[K.FrictionCone(f, MU) for f in FEET],
                      terminal_constraints=[K.FramePlacementEquality("base_link", goal)])
    r = to.solve(prob)
    assert r.converged and r.max_violation <= FEAS_TOL
    assert r.cost < 0.1
    reached = rbd.frame_placement(m, r.xs[-1, :m.nq], "base_link")
    # the placement moves by about the log6 residual: its bound, twice for the lever arm
    np.testing.assert_allclose(reached, goal, atol=2 * FEAS_TOL)


def test_bad_input(solo):
    m, x0 = solo
    four, three = feet_contacts(), feet_contacts(FEET[1:])
    mk = dict(running=[to.ControlRegularization(1e-3)], contacts=three)
    with pytest.raises(ValueError, match="FL_FOOT.*no contact"):
        to.Problem(m, x0, 2, 0.01, constraints=[K.FrictionCone("FL_FOOT")], **mk)
    with pytest.raises(KeyError):
        to.Problem(m, x0, 2, 0.01, constraints=[K.FrameTranslationBox("nope", upper=1.0)],
                   **mk)
    with pytest.raises(ValueError, match="6D contact"):
        to.Problem(m, x0, 2, 0.01, constraints=[K.WrenchCone("FR_FOOT")], **mk)
    with pytest.raises(ValueError, match="lower 2.0 above upper 1.0"):
        to.Problem(m, x0, 2, 0.01, constraints=[K.ControlBox(2.0, 1.0)], **mk)
    with pytest.raises(ValueError, match="infeasible normal-force bounds"):
        K.FrictionCone("FR_FOOT", min_nforce=2.0, max_nforce=1.0)
    with pytest.raises(ValueError, match="every bound is infinite"):
        K.FrameTranslationBox("FR_FOOT")
    with pytest.raises(TypeError, match="expected rbdiff.trajopt.constraints constraints "
                                        r"\(or a list of 2 per-knot lists of them\), got "
                                        "ControlRegularization"):
        to.Problem(m, x0, 2, 0.01, constraints=[to.ControlRegularization()], **mk)
    with pytest.raises(TypeError, match="2 per-knot lists of them.*got list"):
        to.Problem(m, x0, 2, 0.01, constraints=[[K.ControlBox()]] * 3, **mk)
    with pytest.raises(ValueError, match="terminal constraints: ControlBox reads"):
        to.Problem(m, x0, 2, 0.01, terminal_constraints=[K.ControlBox()], **mk)
    with pytest.raises(ValueError, match="knot 1: ControlBox reads the control"):
        to.Problem(m, x0, 2, 0.01, running=[[], []], contacts=[four, None],
                   impulses={1: four}, constraints=[[], [K.ControlBox()]])
    with pytest.raises(ValueError, match="x_ref: expected finite values of shape"):
        to.Problem(m, x0, 2, 0.01, terminal_constraints=[K.StateEquality(x0[:5])], **mk)
    free = m._copy(effort_limits=np.full(m.nv, np.inf))       # a model without limits
    with pytest.raises(ValueError, match="states no effort limits"):
        to.Problem(free, x0, 2, 0.01, constraints=[K.ControlBox()], **mk)
    prob = to.Problem(m, x0, 2, 0.01, constraints=[K.ControlBox()], **mk)
    with pytest.raises(ValueError, match="ignores the problem's constraints"):
        to.solve(prob, "fddp")
    with pytest.raises(ValueError, match="multipliers: expected finite arrays"):
        to.solve(prob, multipliers=[np.zeros(3)])
    with pytest.raises(ValueError, match="rho: expected a finite number > 0"):
        to.solve(prob, rho=0.0)
    with pytest.raises(TypeError, match="unexpected options"):
        to.solve(to.Problem(m, x0, 2, 0.01, **mk), "fddp", rho=1.0)
    with pytest.raises(ValueError, match="no constraints"):
        to.solve(to.Problem(m, x0, 2, 0.01, **mk), "al")


# Crocoddyl's example gaits with the cones (mu 0.7, f_n >= 0) and the URDF's torque
# limits as constraints: each converges (its own stopping test) with every constraint
# met to FEAS_TOL, checked on the forces and torques themselves
_GAITS = {"anymal walking": ("anymal", "walking", (0.25, 0.25, 1e-2, 25, 2)),
          "anymal trotting": ("anymal", "trotting", (0.15, 0.1, 1e-2, 25, 2)),
          "anymal jumping": ("anymal", "jumping", (0.15, (0.0, 0.3, 0.0), 1e-2, 10, 20)),
          "solo12 trotting": ("solo12", "trotting", (0.15, 0.1, 1e-2, 25, 2)),
          "talos_legs walking": ("talos_legs", "walking", (0.6, 0.1, 0.03, 15, 4))}
_FEET = {"anymal": ("LF_FOOT", "RF_FOOT", "LH_FOOT", "RH_FOOT"),
         "solo12": ("FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT"),
         "talos_legs": ("right_sole_link", "left_sole_link")}


@pytest.mark.parametrize("name", sorted(_GAITS))
def test_gaits_meet_their_constraints(name):
    from rbdiff.trajopt.gaits import Biped
    robot, gait, args = _GAITS[name]
    model = rbd.load_robot(robot)
    biped = robot == "talos_legs"
    builder = (Biped if biped else Quadruped)(model, *_FEET[robot], constrained=True)
    posture = "half_sitting" if biped else "standing"
    x0 = np.concatenate([model.reference_configurations[posture], np.zeros(model.nv)])
    args = [np.array(a, dtype=float) if isinstance(a, tuple) else a for a in args]
    prob = getattr(builder, gait)(x0, *args)
    xs = np.tile(x0, (prob.T + 1, 1))
    res = to.solve(prob, xs=xs, us=prob.quasi_static_controls(xs[:, :model.nq]))
    assert res.converged and res.max_violation <= FEAS_TOL, (res.iterations,
                                                             res.violations)
    limit = np.asarray(model.effort_limits)[6:]
    knots = [t for t in range(prob.T) if prob.kind[t] != IMPULSE]
    assert (np.abs(res.us[knots]) <= limit + FEAS_TOL).all()
    mu = builder.mu
    for t in knots:
        row = 0
        for c in prob.knot_contacts[t]:
            f = res.forces[t, row:row + c.dim]
            row += c.dim
            # the pyramid's facets, |f_x|, |f_y| <= mu f_n (Crocoddyl's outer cone), and
            # f_n >= 0 (a 6D sole: its linear part; the wrench cone bounds the rest)
            assert f[2] >= -FEAS_TOL
            assert max(abs(f[0]), abs(f[1])) <= mu * f[2] + 2 * FEAS_TOL, (t, c.frame, f)
