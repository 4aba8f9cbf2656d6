"""rbdiff.trajopt on floating bases: states on the manifold, floating-base actuation,
contact and impulse knots, FDDP (Crocoddyl's SolverFDDP).

A standing quadruped is a fixed point of the dynamics under its quasi-static controls,
its contact forces carrying its weight; the dynamics step's Jacobians (free, contact and
impulse knots, free flyers and spherical joints) against the complex step through
rbdiff's own complex128 functions on the manifold; the state cost's derivatives against
central differences; FDDP from an infeasible warm start reaches a stationary point of
the cost in the controls; bad input is refused when the problem is built; and Crocoddyl
computes the same cost and the same FDDP iterates where a compatible Crocoddyl is
installed."""

import re

import numpy as np
import pinocchio as pin
import pytest
from conftest import robot_pair, rollout_gradient

import rbdiff as rbd
import rbdiff.trajopt as to
from rbdiff.bench.trajopt import (FEET, crocoddyl_controls, crocoddyl_ok, crocoddyl_problem,
                                  feet_contacts, legged_problem, solo_standing)
from rbdiff.model.layout import FREE_FLYER, SPHERICAL
from rbdiff.trajopt.rollout import CONTACT, FREE, IMPULSE

def _solo():
    return solo_standing()


def _feet(frames=FEET):
    return feet_contacts(frames)


def _phases(m, x0, T=12):
    """Four feet, then three (FL lifted), a free knot, a touch-down (impulse) on four, and
    four feet again (knots 0-3, 4-6, 7, 8, 9-): bench/trajopt.legged_problem."""
    prob = legged_problem(T)
    assert prob.model.nv == m.nv and np.array_equal(prob.x0, x0)
    return prob


@pytest.fixture(scope="module")
def solo():
    return _solo()


def test_standing_quadruped_is_a_fixed_point(solo):
    m, x0 = solo
    T = 6
    prob = to.Problem(m, x0, T, 0.01, running=[to.ControlRegularization(1e-3)],
                      contacts=_feet())
    assert prob.actuation == "floating_base" and prob.nu == m.nv - 6 and not prob.simple
    assert (prob.kind == CONTACT).all() and prob.ncmax == 12
    u = prob.quasi_static_controls(np.broadcast_to(x0[:m.nq], (T + 1, m.nq)))
    q, v = prob.rollout(u)
    np.testing.assert_allclose(q, np.broadcast_to(x0[:m.nq], q.shape), atol=1e-12)
    np.testing.assert_allclose(v, 0.0, atol=1e-12)
    _, _, forces = prob.shoot(q, v, u)           # local_world_aligned: world axes
    weight = 9.81 * pin.computeTotalMass(robot_pair("solo12", True)[1])
    for f in forces:
        total = f.reshape(4, 3).sum(axis=0)
        np.testing.assert_allclose(total, [0.0, 0.0, weight], atol=1e-9 * weight)
    # gravity torques alone (no actuation of the base) would let it fall
    free = to.Problem(m, x0, T, 0.01, running=[to.ControlRegularization(1e-3)])
    g = rbd.gravity(m, np.broadcast_to(x0[:m.nq], (T, m.nq)).copy())
    qf, _ = free.rollout(g[:, 6:])
    assert qf[-1, 2] < x0[2] - 1e-3


def _step(prob, t, q, v, u):
    """f(x, u) at knot t through the public (complex-capable) functions."""
    m, dt = prob.model, prob.dt
    c = prob.knot_contacts[t]
    if prob.kind[t] == IMPULSE:
        return q, rbd.impulse_dynamics(m, q, v, c).v_after
    tau = np.zeros(m.nv, dtype=u.dtype)
    tau[m.nv - prob.nu:] = u
    a = rbd.contact_dynamics(m, q, v, tau, c).qdd if prob.kind[t] == CONTACT else \
        rbd.aba(m, q, v, tau)
    v2 = v + dt * a
    return rbd.integrate(m, q, dt * v2), v2


def _complex_step_jacobians(prob, t, q, v, u, h=1e-20):
    """(F_x, F_u) at knot t by the complex step on the manifold: x (+) i h e through
    integrate, the output's tangent by difference from the real successor."""
    m, nv, nu = prob.model, prob.nv, prob.nu
    q1, v1 = _step(prob, t, q, v, u)
    Fx, Fu = np.empty((2 * nv, 2 * nv)), np.empty((2 * nv, nu))
    qc, vc, uc = q.astype(complex), v.astype(complex), u.astype(complex)

    def tangent(out):
        qo, vo = out
        return np.concatenate([rbd.difference(m, q1.astype(complex), qo).imag,
                               (vo - v1).imag]) / h
    for k in range(nv):
        e = np.zeros(nv)
        e[k] = h
        Fx[:, k] = tangent(_step(prob, t, rbd.integrate(m, qc, 1j * e), vc, uc))
        Fx[:, nv + k] = tangent(_step(prob, t, qc, vc + 1j * e, uc))
    for k in range(nu):
        e = np.zeros(nu)
        e[k] = h
        Fu[:, k] = tangent(_step(prob, t, qc, vc, uc + 1j * e))
    return Fx, Fu


def test_dynamics_jacobians_against_the_complex_step(solo):
    m, x0 = solo
    prob = _phases(m, x0)
    rng = np.random.default_rng(4)
    T = prob.T
    q = rbd.integrate(m, np.broadcast_to(x0[:m.nq], (T + 1, m.nq)).copy(),
                      0.1 * rng.normal(size=(T + 1, m.nv)))
    v = 0.3 * rng.normal(size=(T + 1, m.nv))
    u = prob.quasi_static_controls(q) + rng.normal(size=(T, prob.nu))
    qx, vx, _ = prob.shoot(q, v, u)
    Fx, Fu = prob.dynamics_jacobians(q, v, u, vx)
    assert list(prob.kind) == [CONTACT] * 7 + [FREE, IMPULSE] + [CONTACT] * 3
    for t in (0, 5, 7, 8):          # four feet, three feet, the free knot, the impulse
        q1, v1 = _step(prob, t, q[t], v[t], u[t])
        np.testing.assert_allclose(qx[t], q1, atol=1e-12)
        np.testing.assert_allclose(vx[t], v1, atol=1e-10)
        cx, cu = _complex_step_jacobians(prob, t, q[t], v[t], u[t])
        scale = max(np.abs(cx).max(), 1.0)
        np.testing.assert_allclose(Fx[t], cx, atol=1e-10 * scale)
        np.testing.assert_allclose(Fu[t], cu, atol=1e-10 * max(np.abs(cu).max(), 1.0))


def test_spherical_and_free_flyer_trees():
    """Free knots of random trees with every joint type (a free flyer root, spherical
    joints): the Jacobians against the complex step, FDDP to a stationary point."""
    m = rbd.models.random_tree(6, 2, floating_base=True)
    assert {FREE_FLYER, SPHERICAL} <= {int(t) for t in m.joint_types}
    rng = np.random.default_rng(2)
    x0 = np.concatenate([rbd.integrate(m, rbd.neutral(m), 0.3 * rng.normal(size=m.nv)),
                         0.1 * rng.normal(size=m.nv)])
    goal = np.concatenate([rbd.neutral(m), np.zeros(m.nv)])
    prob = to.Problem(m, x0, 4, 0.02, running=[to.StateRegularization(goal, 1.0),
                                               to.ControlRegularization(1e-2)],
                      terminal=[to.StateRegularization(goal, 10.0)], actuation="full")
    assert prob.nu == m.nv and not prob.simple
    u = rng.normal(size=(prob.T, prob.nu))
    q, v = prob.rollout(u)
    _, vx, _ = prob.shoot(q, v, u)
    Fx, Fu = prob.dynamics_jacobians(q, v, u, vx)
    for t in range(prob.T):
        cx, cu = _complex_step_jacobians(prob, t, q[t], v[t], u[t])
        np.testing.assert_allclose(Fx[t], cx, atol=1e-10 * max(np.abs(cx).max(), 1.0))
        np.testing.assert_allclose(Fu[t], cu, atol=1e-10 * max(np.abs(cu).max(), 1.0))
    r = to.solve(prob, method="fddp", max_iter=100)
    assert r.converged
    u0 = to.solve(prob, method="fddp", max_iter=0).us
    g0 = np.linalg.norm(rollout_gradient(prob, u0))
    assert np.linalg.norm(rollout_gradient(prob, r.us)) < 1e-4 * g0


def _fddp_reference(prob, q, v, u, vx, forces, fs, reg, feasible):
    """(k, K, sum Q_u.k, sum k.Q_uu.k): Crocoddyl's FDDP backward pass in NumPy on the
    dense Jacobians (dynamics_jacobians), no bounds."""
    Fx, Fu = prob.dynamics_jacobians(q, v, u, vx)
    _, _, lx, lu, lxx, luu, lxu = prob.derivatives(q, v, u, vx, forces)
    T, nx, nu = prob.T, 2 * prob.nv, prob.nu
    k, K = np.zeros((T, nu)), np.zeros((T, nu, nx))
    Vxx = lxx[T] + reg * np.eye(nx)
    Vx = lx[T] + (0.0 if feasible else Vxx @ fs[T])
    dg = dq = 0.0
    for t in range(T - 1, -1, -1):
        A, B = Fx[t], Fu[t]
        Qx, Qu = lx[t] + A.T @ Vx, lu[t] + B.T @ Vx
        Qxx, Qux = lxx[t] + A.T @ Vxx @ A, B.T @ Vxx @ A
        Quu = luu[t] + B.T @ Vxx @ B + reg * np.eye(nu)
        if lxu is not None:
            Qux = Qux + lxu[t].T
        G = -np.linalg.solve(Quu, np.column_stack([Qux, Qu]))
        K[t], k[t] = G[:, :-1], G[:, -1]
        dg += Qu @ k[t]
        dq += k[t] @ Quu @ k[t]
        Vx = Qx + K[t].T @ Qu
        Vxx = Qxx + Qux.T @ K[t]
        Vxx = 0.5 * (Vxx + Vxx.T) + reg * np.eye(nx)
        if not feasible:
            Vx = Vx + Vxx @ fs[t]
    return k, K, dg, dq


def _fddp_pass(prob, q, v, u, vx, forces, fs, reg, feasible):
    from rbdiff.trajopt.riccati import backward_pass_fddp
    T, nx, nu = prob.T, 2 * prob.nv, prob.nu
    parts, lx, lu, lxx, luu, lxu = prob.derivative_parts(q, v, u, vx, forces)
    k, K = np.zeros((T, nu)), np.zeros((T, nu, nx))
    Vx, Vxx = np.zeros((T + 1, nx)), np.zeros((T + 1, nx, nx))
    knot, dg, dq = backward_pass_fddp(*parts, prob._lie_blocks, lx, lu, lxx, luu,
                                      np.zeros((T, 0, 0)) if lxu is None else lxu, fs, reg,
                                      feasible, u, prob._lo, prob._hi, k, K, Vx, Vxx)
    assert knot == -1
    return k, K, dg, dq


def test_fddp_backward_pass_equals_numpy_reference(solo):
    """The compiled FDDP pass (on the nv x nv blocks, integrate's Jacobians by their
    diagonal blocks) gives Crocoddyl's recursion on the dense Jacobians to 1e-10: contact,
    free and impulse knots with a force term's l_xu (solo12), spherical joints inside a
    random tree, gaps (infeasible) and regularisation."""
    from rbdiff.trajopt.solver import _gaps
    m, x0 = solo
    base = _phases(m, x0)
    cone = to.FrictionCone("HR_FOOT", weight=10.0)
    running = [[to.StateRegularization(x0, 1e-1), to.ControlRegularization(1e-3)]
               + ([cone] if kind == CONTACT else []) for kind in base.kind]
    running[8] = [to.StateRegularization(x0, 1e1)]
    legged = to.Problem(m, x0, base.T, base.dt, running=running, terminal=base.terminal,
                        contacts=base.knot_contacts[:8] + [None] + base.knot_contacts[9:],
                        impulses={8: base.knot_contacts[8]})
    tree = rbd.models.random_tree(6, 2, floating_base=True)
    goal = np.concatenate([rbd.neutral(tree), np.zeros(tree.nv)])
    spherical = to.Problem(tree, goal, 4, 0.02,
                           running=[to.StateRegularization(goal, 1.0),
                                    to.ControlRegularization(1e-2)],
                           terminal=[to.StateRegularization(goal, 10.0)], actuation="full")
    assert (spherical._lie_blocks[1:, 1] == 3).any()        # a block inside the tangent
    rng = np.random.default_rng(8)
    for prob in (legged, spherical):
        T, mm = prob.T, prob.model
        q = rbd.integrate(mm, np.broadcast_to(prob.x0[:mm.nq], (T + 1, mm.nq)).copy(),
                          0.1 * rng.normal(size=(T + 1, mm.nv)))
        v = 0.3 * rng.normal(size=(T + 1, mm.nv))
        u = prob.quasi_static_controls(q) + rng.normal(size=(T, prob.nu))
        qx, vx, forces = prob.shoot(q, v, u)
        fs = _gaps(prob, q, v, qx, vx)
        # reg > 0: the impulse knot's Q_uu is reg I; below 1e-3 the last knots' Q_uu
        # (cond 3e8 at 1e-6) leaves NumPy's solve itself 2e-10 off (the dense pass too)
        for reg, feasible in ((1e-3, False), (1e-2, True)):
            got = _fddp_pass(prob, q, v, u, vx, forces, fs, reg, feasible)
            want = _fddp_reference(prob, q, v, u, vx, forces, fs, reg, feasible)
            for a, b in zip(got, want):
                np.testing.assert_allclose(a, b, rtol=1e-10,
                                           atol=1e-10 * max(np.abs(b).max(), 1e-300))


def _arrays(x):
    """The arrays of derivative_parts' nested result, in order."""
    out = []
    for y in x:
        if isinstance(y, tuple):
            out += _arrays(y)
        elif y is not None:
            out.append(np.asarray(y))
    return out


def test_derivatives_read_the_kept_rollout_only_at_its_trajectory(solo):
    """derivative_parts with a Kept takes the contact knots' solves the rollout kept
    (not solved again), bit-equal to solving them again (a force term's blocks too);
    a Kept whose last run was another trajectory is not read."""
    m, x0 = solo
    base = _phases(m, x0)
    cone = to.FrictionCone("HR_FOOT", weight=10.0)
    running = [[to.StateRegularization(x0, 1e-1), to.ControlRegularization(1e-3)]
               + ([cone] if kind == CONTACT else []) for kind in base.kind]
    prob = to.Problem(m, x0, base.T, base.dt, running=running, terminal=base.terminal,
                      contacts=base.knot_contacts)
    T = prob.T
    us = prob.quasi_static_controls(np.broadcast_to(x0[:m.nq], (T + 1, m.nq)))
    us = us + 0.1 * np.random.default_rng(3).normal(size=us.shape)
    kept, zeros = prob.kept(), np.zeros((T, prob.nu))
    q, v, u, _, vx, f = prob._run(None, None, us, zeros, None, 0.0, keep=kept)
    want = _arrays(prob.derivative_parts(q, v, u, vx, f))
    got = _arrays(prob.derivative_parts(q, v, u, vx, f, kept=kept))
    assert all(np.array_equal(a, b) for a, b in zip(got, want))
    kept.buf *= 1.5                 # read: the derivatives move with the kept solves
    moved = _arrays(prob.derivative_parts(q, v, u, vx, f, kept=kept))
    assert not all(np.array_equal(a, b) for a, b in zip(moved, want))
    prob._run(None, None, us + 1e-3, zeros, None, 0.0, keep=kept)
    kept.buf *= 1.5                 # another trajectory's: not read
    again = _arrays(prob.derivative_parts(q, v, u, vx, f, kept=kept))
    assert all(np.array_equal(a, b) for a, b in zip(again, want))


def test_state_cost_derivatives_on_the_manifold(solo):
    m, x0 = solo
    rng = np.random.default_rng(5)
    xref = np.concatenate([rbd.integrate(m, x0[:m.nq], rng.normal(size=m.nv)),
                           rng.normal(size=m.nv)])
    term = to.StateRegularization(xref, 2.0)
    term.check(m)
    q = rbd.integrate(m, np.broadcast_to(x0[:m.nq], (3, m.nq)).copy(),
                      rng.normal(size=(3, m.nv)))
    v = rng.normal(size=(3, m.nv))
    _, lx, _, lxx, _ = term.derivatives(m, q, v, None)
    h = 1e-6
    for k in range(3):
        g = np.empty(2 * m.nv)
        for i in range(m.nv):
            e = np.zeros(m.nv)
            e[i] = h
            up = term.value(m, rbd.integrate(m, q[k], e)[None], v[k][None], None)[0]
            dn = term.value(m, rbd.integrate(m, q[k], -e)[None], v[k][None], None)[0]
            g[i] = (up - dn) / (2 * h)
            up = term.value(m, q[k][None], (v[k] + e)[None], None)[0]
            dn = term.value(m, q[k][None], (v[k] - e)[None], None)[0]
            g[m.nv + i] = (up - dn) / (2 * h)
        np.testing.assert_allclose(lx[k], g, rtol=1e-6, atol=1e-7 * np.abs(g).max())
        R = rbd.difference_jacobians(m, xref[:m.nq], q[k]).dq1
        np.testing.assert_allclose(lxx[k, :m.nv, :m.nv], 2.0 * R.T @ R, rtol=1e-12)


def test_fddp_from_an_infeasible_warm_start_reaches_a_stationary_point(solo):
    m, x0 = solo
    prob = _phases(m, x0)
    T = prob.T
    rng = np.random.default_rng(6)
    xs = np.broadcast_to(x0, (T + 1, x0.size)).copy()
    us = prob.quasi_static_controls(xs[:, :m.nq]) + 2.0 * rng.normal(size=(T, prob.nu))
    r = to.solve(prob, method="fddp", xs=xs, us=us, max_iter=100)
    assert r.converged and r.method == "fddp"
    # reg 0: the impulse knot's Q_uu (no control cost, no control) is 0 at first
    r0 = to.solve(prob, method="fddp", xs=xs, us=us, max_iter=100, reg=0.0)
    assert r0.converged and r0.cost == pytest.approx(r.cost, rel=1e-9)
    assert r.history[0]["gap"] > 1e-3 and r.history[-1]["feasible"]     # gaps closed
    assert r.cost == pytest.approx(to.rollout_cost(prob, r.us), rel=1e-12)
    q, v = prob.rollout(r.us)
    np.testing.assert_allclose(r.xs, np.concatenate([q, v], axis=1), atol=1e-12)
    g0 = np.linalg.norm(rollout_gradient(prob, us))
    g = rollout_gradient(prob, r.us)
    assert np.linalg.norm(g) < 1e-4 * g0
    assert r.forces.shape == (T, 12)
    # the knot data keep each contact knot's forces: the four feet's carry the weight
    np.testing.assert_allclose(r.forces[0].reshape(4, 3).sum(0)[2],
                               rbd.gravity(m, r.xs[0, :m.nq])[2], rtol=0.2)
    # fixed-base problems: fddp reaches ilqr's optimum
    iiwa = rbd.load_robot("iiwa14")
    qa = np.array([0.1, 0.6, 0.0, -1.2, 0.0, 0.9, 0.0])
    xa = np.concatenate([qa, np.zeros(7)])
    target = rbd.frame_placement(iiwa, qa, "iiwa_link_ee")[:3, 3] + [0.1, -0.1, 0.1]
    reach = to.Problem(iiwa, xa, 10, 0.02,
                       running=[to.FrameTranslation("iiwa_link_ee", target, 1.0),
                                to.StateRegularization(xa, 1e-2),
                                to.ControlRegularization(1e-4)],
                       terminal=[to.FrameTranslation("iiwa_link_ee", target, 1e3),
                                 to.StateRegularization(xa, 1e-2)])
    a, b = to.solve(reach, method="ilqr"), to.solve(reach, method="fddp")
    assert a.converged and b.converged
    assert b.cost == pytest.approx(a.cost, rel=1e-8)


def test_bad_input(solo):
    m, x0 = solo
    feet = _feet()
    with pytest.raises(KeyError, match="NOPE"):
        to.Problem(m, x0, 3, 0.01, contacts=(rbd.Contact("NOPE_FOOT"),))
    with pytest.raises(rbd.DependentContacts, match="contact 1"):
        to.Problem(m, x0, 3, 0.01, contacts=(feet[0], feet[0]))
    with pytest.raises(rbd.DependentContacts):
        to.Problem(m, x0, 3, 0.01, impulses={1: (rbd.Contact("FL_FOOT", "6d"),
                                                 rbd.Contact("FL_FOOT", "3d"))})
    with pytest.raises(ValueError, match="horizon"):
        to.Problem(m, x0, 0, 0.01, contacts=feet)
    with pytest.raises(ValueError, match="3 per-knot entries, got 2"):
        to.Problem(m, x0, 3, 0.01, contacts=[feet, feet])
    with pytest.raises(ValueError, match="impulses: knot 3"):
        to.Problem(m, x0, 3, 0.01, impulses={3: feet})
    with pytest.raises(ValueError, match="u_ref"):
        to.Problem(m, x0, 3, 0.01, running=[to.ControlRegularization(1.0, np.zeros(18))])
    with pytest.raises(ValueError, match="reads the control"):
        to.Problem(m, x0, 3, 0.01, impulses={1: feet},
                   impulse_costs=[to.ControlRegularization(1.0)])
    with pytest.raises(ValueError, match="actuation"):
        to.Problem(rbd.load_robot("iiwa14"), np.zeros(14), 3, 0.01,
                   actuation="floating_base")
    prob = to.Problem(m, x0, 3, 0.01, contacts=feet)
    with pytest.raises(ValueError, match=r"use method='fddp'"):
        to.solve(prob, method="ilqr")
    with pytest.raises(ValueError, match=r"xs: expected \(4, 37\)"):
        to.solve(prob, method="fddp", xs=np.zeros((3, 37)))
    with pytest.raises(ValueError, match=r"us: expected \(3, 12\)"):
        to.solve(prob, method="fddp", us=np.zeros((3, 18)))
    with pytest.raises(ValueError, match=r"us: expected \(3, 12\)"):
        to.rollout_cost(prob, np.zeros((3, 18)))


@pytest.mark.skipif(not crocoddyl_ok(), reason="needs crocoddyl 3.2 with pin 4.0.x "
                    "(pip install 'rbdiff[trajopt-bench]')")
def test_same_cost_and_fddp_iterates_as_crocoddyl(solo):
    import crocoddyl

    from rbdiff.bench.anchor import pin_model
    m, x0 = solo
    prob = _phases(m, x0)
    cp = crocoddyl_problem(prob, pin_model("solo12", True))
    T = prob.T
    rng = np.random.default_rng(3)
    qs = np.broadcast_to(x0[:m.nq], (T + 1, m.nq)).copy()
    us = prob.quasi_static_controls(qs) + 0.3 * rng.normal(size=(T, prob.nu))
    cu = crocoddyl_controls(prob, us)
    assert cp.calc(cp.rollout(cu), cu) == pytest.approx(to.rollout_cost(prob, us), rel=1e-9)
    xs = [x0] * (T + 1)            # infeasible: the controls do not hold x0
    s = crocoddyl.SolverFDDP(cp)
    s.th_stop = 1e-9
    costs = []

    class Log(crocoddyl.CallbackAbstract):
        def __call__(self, solver):
            costs.append((solver.cost, solver.stepLength))

    s.setCallbacks([Log()])
    assert s.solve(xs, cu, 100, False)
    r = to.solve(prob, method="fddp", xs=np.array(xs), us=us, max_iter=100)
    assert r.converged and r.iterations == len(costs)
    for (c, a), h in zip(costs, r.history):
        assert h["cost"] == pytest.approx(c, rel=1e-6) and h["alpha"] == a
    assert r.cost == pytest.approx(s.cost, rel=1e-9)
    for a, b in zip(s.us, crocoddyl_controls(prob, r.us)):
        np.testing.assert_allclose(a, b, atol=1e-6)


def test_a_set_dependent_mid_solve_names_its_frames(solo):
    """trajopt's fast batched calls explain a dependent contact set as the public
    functions do (its rows and frames), not with the entry's bare refusal."""
    from rbdiff.contacts import pack
    from rbdiff.trajopt import calls
    m, x0 = solo
    c = (rbd.Contact("FL_FOOT"), rbd.Contact("FL_FOOT"))
    q = np.tile(x0[:m.nq], (2, 1))
    z = np.zeros((2, m.nv))
    with pytest.raises(rbd.DependentContacts, match=r"item 0: .*contact 1 .*'FL_FOOT'"):
        calls.contact_dynamics_derivatives(m, q, z, z, pack(m, c), c)
    with pytest.raises(rbd.DependentContacts, match=r"item 0: .*contact 1 .*'FL_FOOT'"):
        calls.impulse_dynamics_derivatives(m, q, z, pack(m, c), c)


def _falling_pacing(m, x0):
    """solo12 pacing (long, high steps) under Crocoddyl's quasi-static controls at x0:
    the robot falls and the rollout diverges (|v| ~ 1e15 by knot 46)."""
    from rbdiff.trajopt.gaits import Quadruped
    gait = Quadruped(m, *FEET, reference=x0[:m.nq])
    prob = gait.pacing(x0, 0.25, 0.15, 1e-2, 16, 16)
    return prob, prob.quasi_static_controls(np.tile(x0[:m.nq], (prob.T + 1, 1)))


def test_a_diverging_rollout_says_so_at_its_knot(solo):
    m, x0 = solo
    prob, us = _falling_pacing(m, x0)
    for run in (lambda: prob.rollout(us), lambda: to.rollout_cost(prob, us)):
        with pytest.raises(ValueError, match=r"the rollout diverged at knot \d+ of 66") as e:
            run()
        assert not isinstance(e.value, rbd.DependentContacts)
        knot, v = re.search(r"knot (\d+) .*max \|v\| = (\S+) ", str(e.value)).groups()
        assert 0 < int(knot) < prob.T and float(v) > 1e5
    # the first diverged knot: a horizon ending there says so, one knot shorter rolls out
    k = int(knot)
    for T in (k, k - 1):
        short = to.Problem(m, x0, T, prob.dt, contacts=prob.knot_contacts[:T],
                           impulses={t: prob.knot_contacts[t] for t in prob.impulse_knots
                                     if t < T})
        if T == k:
            with pytest.raises(ValueError, match=f"diverged at knot {k} of {k}"):
                short.rollout(us[:T])
        else:
            q, v = short.rollout(us[:T])
            assert np.isfinite(q).all() and np.abs(v).max() <= 1e5


def test_dependent_rows_claimed_only_when_dependent(solo):
    m, x0 = solo
    q0, z = x0[:m.nq], np.zeros(m.nv)
    with pytest.raises(rbd.DependentContacts, match=r"contact 1 .*'FL_FOOT'"):
        rbd.contact_dynamics(m, q0, z, z, (rbd.Contact("FL_FOOT"), rbd.Contact("FL_FOOT")))
    far = q0.copy()
    far[:3] = [-1.3e9, 1.2e9, 2.7e8]        # the falling robot's base, 1e9 m away
    # computed with the world origin at the base: the numbers it has anywhere, no refusal
    want = rbd.contact_dynamics(m, q0, z, z, _feet())
    got = rbd.contact_dynamics(m, far, z, z, _feet())
    np.testing.assert_array_equal(got.qdd, want.qdd)
    np.testing.assert_array_equal(got.forces, want.forces)


def test_fddp_from_diverging_controls_rejects_the_diverged_trials(solo):
    m, x0 = solo
    prob, us = _falling_pacing(m, x0)
    r = to.solve(prob, method="fddp", us=us, max_iter=2)       # warm start: x0 throughout
    assert r.iterations == 2 and np.isfinite(r.cost)
    assert r.history[0]["alpha"] < 1.0          # the full step diverged: rejected
    assert r.history[-1]["cost"] < r.history[0]["cost"]
