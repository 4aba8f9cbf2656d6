"""rbdiff.trajopt: iLQR and DDP converge on a reach to the same stationary point (central
differences of rollout_cost in the controls vanish there); DDP's step is Newton's step,
on quadratic costs and on a reach (the frame translation's curvature, complex-stepped,
in its cost Hessian), and DDP needs fewer iterations than iLQR on the bench's reach; the
compiled backward pass against a plain NumPy one; bounds, warm starts, bad input; and
Crocoddyl's cost on the same problem where a compatible Crocoddyl is installed."""

import numpy as np
import pytest

import rbdiff as rbd
import rbdiff.trajopt as to
from rbdiff.bench.trajopt import crocoddyl_ok, crocoddyl_problem, reach_problem
from rbdiff.trajopt.riccati import backward_pass
from conftest import rollout_gradient


def _reach(T=20, dt=0.02, **kw):
    model = rbd.load_robot("iiwa14")
    q0 = np.array([0.1, 0.6, 0.0, -1.2, 0.0, 0.9, 0.0])
    x0 = np.concatenate([q0, np.zeros(model.nv)])
    frame = "iiwa_link_ee"
    target = rbd.frame_placement(model, q0, frame)[:3, 3] + [0.1, -0.1, 0.1]
    prob = to.Problem(model, x0, T, dt,
                      running=[to.FrameTranslation(frame, target, 1.0),
                               to.StateRegularization(x0, 1e-2),
                               to.ControlRegularization(1e-4)],
                      terminal=[to.FrameTranslation(frame, target, 1e3),
                                to.StateRegularization(x0, 1e-2)], **kw)
    return prob, frame, target


@pytest.fixture(scope="module")
def solved():
    prob, frame, target = _reach()
    return prob, frame, target, {m: to.solve(prob, method=m) for m in ("ilqr", "ddp")}


def test_both_methods_converge_to_the_same_stationary_point(solved):
    prob, frame, target, res = solved
    u0 = to.solve(prob, max_iter=0).us          # the quasi-static start
    g0 = np.linalg.norm(rollout_gradient(prob, u0))
    for method, r in res.items():
        assert r.converged and r.method == method
        assert r.xs.shape == (prob.T + 1, 14) and r.us.shape == (prob.T, 7)
        assert r.cost == pytest.approx(to.rollout_cost(prob, r.us), rel=1e-12)
        costs = [h["cost"] for h in r.history]
        assert all(b <= a for a, b in zip(costs, costs[1:]))          # monotone
        tip = rbd.frame_placement(prob.model, r.xs[-1, :7], frame)[:3, 3]
        assert np.linalg.norm(tip - target) < 5e-3
        assert np.linalg.norm(rollout_gradient(prob, r.us)) < 1e-4 * g0      # stationary
        assert set(r.timings) == {"derivatives", "backward", "line_search", "compile"}
        assert all(t >= 0 for t in r.timings.values())
    assert res["ddp"].cost == pytest.approx(res["ilqr"].cost, rel=1e-7)
    np.testing.assert_allclose(res["ddp"].us, res["ilqr"].us, atol=1e-3 * np.abs(
        res["ilqr"].us).max())


def _newton_problem(rng):
    """UR5 driven to a random state by quadratic costs only (exact cost Hessians), so the
    dynamics are the problem's only nonlinearity (dt 0.01: mild enough that the Hessian
    stays positive definite around the solution)."""
    model = rbd.load_robot("ur5")
    x0 = np.concatenate([rbd.random_configuration(model, rng), 0.3 * np.ones(model.nv)])
    x_goal = np.concatenate([rbd.random_configuration(model, rng), np.zeros(model.nv)])
    return to.Problem(model, x0, 3, 0.01,
                      running=[to.StateRegularization(x_goal, 1.0),
                               to.ControlRegularization(1e-2)],
                      terminal=[to.StateRegularization(x_goal, 10.0)])


def _adjoint_gradient(prob, us):
    """dJ/du (T * nv,) by the adjoint recursion on rbdiff's first-order derivatives:
    lambda_T = l_x(T), lambda_t = l_x(t) + F_x^T lambda_{t+1}, g_t = l_u + F_u^T lambda_{t+1}."""
    q, v = prob.rollout(us)
    Fx, Fu, _ = prob.dynamics_derivatives(q, v, us)
    lx, lu, _, _ = prob.cost_derivatives(q, v, us)
    lam, g = lx[-1], np.zeros_like(us)
    for t in range(prob.T - 1, -1, -1):
        g[t] = lu[t] + Fu[t].T @ lam
        lam = lx[t] + Fx[t].T @ lam
    return g.ravel()


def _policy(prob, us, method, costate=False, contract=True, reg=0.0):
    """(k, K) of one backward pass; DDP's curvature by the contraction at each knot
    (solve's route) or, without ``contract``, from the batched tensors, and its cost
    Hessian exact (the residuals' curvature added, as solve does)."""
    q, v = prob.rollout(us)
    tensors = method == "ddp" and not contract
    Pq, Pv, Pu, so = prob.dynamics_blocks(q, v, us, second_order=tensors)
    lx, lu, lxx, luu = prob.cost_derivatives(q, v, us)
    T, nv = us.shape
    H = prob.cost_curvature(q)
    if H is None:
        H = np.zeros((0, nv, nv))
    k, K = np.zeros((T, nv)), np.zeros((T, nv, 2 * nv))
    empty = np.zeros((T, 0, 0, 0))
    inf = np.full(nv, np.inf)
    knot, _, _ = backward_pass(Pq, Pv, Pu, lx, lu, lxx, luu, reg, prob.dt, method == "ddp",
                               costate, *(so if tensors else (empty,) * 4), us, -inf, inf,
                               k, K, prob.model.mi, prob.model.mf, q, v,
                               rbd.aba(prob.model, q[:-1], v[:-1], us), H, contract)
    assert knot == -1
    return k, K


def _step(prob, us, method, costate=False):
    """The control step of one backward pass (reg 0) through the linearised dynamics."""
    q, v = prob.rollout(us)
    Fx, Fu, _ = prob.dynamics_derivatives(q, v, us)
    k, K = _policy(prob, us, method, costate)
    T, nv = us.shape
    du, dx = np.zeros((T, nv)), np.zeros(2 * nv)
    for t in range(T):
        du[t] = k[t] + K[t] @ dx
        dx = Fx[t] @ dx + Fu[t] @ du[t]
    return du.ravel()


def _newton_reach(rng):
    """_newton_problem with a frame translation term: its residual is not linear, so
    only its curvature in the cost Hessian makes DDP's step Newton's."""
    prob = _newton_problem(rng)
    frame = prob.model.frames[-1].name
    target = rbd.frame_placement(prob.model, prob.x0[:prob.nq], frame)[:3, 3] + 0.3
    return to.Problem(prob.model, prob.x0, prob.T, prob.dt,
                      running=prob.running + [to.FrameTranslation(frame, target, 10.0)],
                      terminal=prob.terminal + [to.FrameTranslation(frame, target, 100.0)])


@pytest.mark.parametrize("make", [_newton_problem, _newton_reach])
def test_ddp_step_is_newtons_step(make):
    rng = np.random.default_rng(1)
    prob = make(rng)
    # near the solution (a minimum: the Hessian positive definite), not at it
    us = to.solve(prob, method="ddp").us + 0.3 * rng.normal(size=(3, prob.nv))
    n, h = us.size, 1e-6
    g = _adjoint_gradient(prob, us)
    np.testing.assert_allclose(g, rollout_gradient(prob, us), rtol=1e-6,
                               atol=1e-6 * np.abs(g).max())
    H = np.zeros((n, n))               # central differences of the exact gradient
    for i in range(n):
        e = np.zeros(n)
        e[i] = h
        H[:, i] = (_adjoint_gradient(prob, us + e.reshape(us.shape)) -
                   _adjoint_gradient(prob, us - e.reshape(us.shape))) / (2 * h)
    H = 0.5 * (H + H.T)
    assert np.linalg.eigvalsh(H).min() > 0          # Newton's step is a descent step here

    def residual(step):         # ||H s + g|| / ||g||: Newton's equation, backward error
        return np.linalg.norm(H @ step + g) / np.linalg.norm(g)
    stagewise = residual(_step(prob, us, "ddp", costate=True))
    assert stagewise < 1e-6                         # Newton's step
    assert residual(_step(prob, us, "ilqr")) > 1e3 * stagewise   # no curvature: not it
    # classical DDP (V_x' in place of the costate) differs away from a solution
    assert residual(_step(prob, us, "ddp")) > 100 * stagewise


def test_frame_translation_curvature_is_the_exact_hessian():
    """FrameTranslation: w J^T J + curvature = the complex step (on the manifold, rbdiff's
    complex128 kinematics) of its exact gradient w Jp^T r, on one-dof joints of every
    kind (revolute, prismatic, continuous) in a tree and on panda (prismatic fingers off
    the frame's support)."""
    rng = np.random.default_rng(4)
    tree = rbd.models.random_tree(8, 3, joint_types=("revolute", "prismatic", "continuous"))
    for model, frame in ((tree, tree.frames[-1].name),
                         (rbd.load_robot("panda"), "panda_hand_tcp")):
        q = rbd.random_configuration(model, rng)
        term = to.FrameTranslation(frame, rng.normal(size=3), 2.0)

        def grad(x):
            J = rbd.frame_jacobian(model, x, frame, "local_world_aligned")[:3]
            return term.weight * J.T @ (rbd.frame_placement(model, x, frame)[:3, 3]
                                        - term.target)
        H = np.zeros((model.nv, model.nv))
        for k in range(model.nv):
            e = np.zeros(model.nv)
            e[k] = 1e-30
            H[:, k] = grad(rbd.integrate(model, q.astype(complex), 1j * e)).imag / 1e-30
        _, _, _, lxx, _ = term.derivatives(model, q[None], np.zeros((1, model.nv)), None)
        got = lxx[0, :model.nv, :model.nv] + term.curvature(model, q[None])[0]
        assert np.abs(got - H).max() < 1e-10 * np.abs(H).max()
        assert np.abs(term.curvature(model, q[None])[0]).max() > 1e-3 * np.abs(H).max()


def test_what_ddp_takes_from_the_rollout_and_the_cost_derivatives():
    """solve's DDP reads the knots' accelerations from its rollouts (the contraction's
    qdd: ABA's, bit for bit) and the residuals' curvature from cost_derivatives (the
    values cost_curvature gives, l_xx untouched)."""
    prob, _, _ = _reach(T=5)
    us = to.solve(prob, max_iter=0).us
    acc = np.full((prob.T, prob.nv), np.nan)
    q, v = prob.rollout(us, acc)
    np.testing.assert_array_equal(acc, rbd.aba(prob.model, q[:-1], v[:-1], us))
    H = np.zeros((prob.T + 1, prob.nv, prob.nv))
    got = prob.cost_derivatives(q, v, us, curvature=H)
    for a, b in zip(got, prob.cost_derivatives(q, v, us)):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(H, prob.cost_curvature(q), rtol=1e-13, atol=1e-13)
    assert np.abs(H).max() > 0


def _reference_policy(prob, us, method, reg):
    """(k, K) by the textbook recursion in NumPy on the dense Jacobians (no bounds):
    Q_** from F_x, F_u, DDP's curvature from the tensors contracted with V_x', reg on
    V_xx' (Q_uu + reg F_u^T F_u, Q_ux + reg F_u^T F_x), the value by eq. 11 of Tassa et
    al. 2012."""
    q, v = prob.rollout(us)
    ddp = method == "ddp"
    Fx, Fu, so = prob.dynamics_derivatives(q, v, us, second_order=ddp)
    lx, lu, lxx, luu = prob.cost_derivatives(q, v, us)
    T, nv, dt = prob.T, prob.nv, prob.dt
    if ddp:
        lxx[:, :nv, :nv] += prob.cost_curvature(q)
    k, K = np.zeros((T, nv)), np.zeros((T, nv, 2 * nv))
    Vx, Vxx = lx[T], lxx[T]
    for t in range(T - 1, -1, -1):
        A, B = Fx[t], Fu[t]
        Qx, Qu = lx[t] + A.T @ Vx, lu[t] + B.T @ Vx
        Qxx, Qux, Quu = lxx[t] + A.T @ Vxx @ A, B.T @ Vxx @ A, luu[t] + B.T @ Vxx @ B
        if ddp:
            mu = dt * Vx[nv:] + dt * dt * Vx[:nv]
            Hqq, Hvv, Hqv, Huq = (np.einsum("i,ijk->jk", mu, X[t]) for X in so)
            Qxx += np.block([[Hqq, Hqv], [Hqv.T, Hvv]])
            Qux[:, :nv] += Huq
        r = reg if reg > 1e-9 else 0.0
        G = -np.linalg.solve(Quu + r * B.T @ B, np.column_stack([Qux + r * B.T @ A, Qu]))
        K[t], k[t] = G[:, :-1], G[:, -1]
        Vx = Qx + K[t].T @ Quu @ k[t] + K[t].T @ Qu + Qux.T @ k[t]
        Vxx = Qxx + K[t].T @ Quu @ K[t] + K[t].T @ Qux + Qux.T @ K[t]
    return k, K


@pytest.mark.parametrize("method", ["ilqr", "ddp"])
def test_backward_pass_equals_numpy_reference(method):
    """The compiled pass (blocks, contraction per knot, the unregularised value shortcut
    at reg 0, the general update above the floor) gives the textbook recursion's policy
    to 1e-10."""
    rng = np.random.default_rng(7)
    prob = _newton_reach(rng)
    us = to.solve(prob, method="ddp").us + 0.3 * rng.normal(size=(prob.T, prob.nv))
    for reg in (0.0, 1e-3):
        (k, K), (kr, Kr) = _policy(prob, us, method, reg=reg), \
            _reference_policy(prob, us, method, reg)
        np.testing.assert_allclose(K, Kr, rtol=1e-10, atol=1e-10 * np.abs(Kr).max())
        np.testing.assert_allclose(k, kr, rtol=1e-10, atol=1e-10 * np.abs(kr).max())


def test_ddp_needs_fewer_iterations_than_ilqr_on_the_reach():
    """bench (A)'s panda reach: with exact Hessians (dynamics and cost) DDP converges
    quadratically near the solution, in fewer iterations than Gauss-Newton iLQR, to a
    cost no higher."""
    prob = reach_problem()
    us0 = to.solve(prob, max_iter=0).us
    il, dd = (to.solve(prob, method=m, us=us0) for m in ("ilqr", "ddp"))
    assert il.converged and dd.converged
    assert dd.iterations <= 0.75 * il.iterations
    assert dd.cost <= il.cost + 1e-9
    tail = [-h["expected"] for h in dd.history[-3:]]
    assert all(h["second_order"] for h in dd.history[-3:])
    assert tail[2] < 1e-2 * tail[1] and tail[1] < 1e-2 * tail[0]     # quadratic


@pytest.mark.parametrize("costate", [False, True])
def test_ddp_contraction_equals_tensor_route(costate):
    """The backward pass's per-knot contraction gives the policy the batched tensors
    contracted with the same costate give (the tensor route, kept as the oracle)."""
    rng = np.random.default_rng(2)
    prob = _newton_problem(rng)
    us = prob.quasi_static(np.broadcast_to(prob.x0[:prob.nq], (prob.T, prob.nq)).copy()) \
        + rng.normal(size=(prob.T, prob.nv))
    (k, K), (kt, Kt) = (_policy(prob, us, "ddp", costate, contract)
                        for contract in (True, False))
    np.testing.assert_allclose(k, kt, rtol=1e-10, atol=1e-10 * np.abs(kt).max())
    np.testing.assert_allclose(K, Kt, rtol=1e-10, atol=1e-10 * np.abs(Kt).max())
    k0, _ = _policy(prob, us, "ilqr")
    assert np.abs(k - k0).max() > 1e-6 * np.abs(k0).max()     # the curvature counts


def test_control_bounds_warm_start_and_shift(solved):
    prob, _, _ = _reach(u_lower=-np.full(7, 15.0), u_upper=np.full(7, 15.0))
    free = solved[3]["ilqr"]
    assert np.abs(free.us).max() > 15.0                  # the bounds bind
    g0 = np.abs(rollout_gradient(prob, to.solve(prob, max_iter=0).us)).max()
    r = to.solve(prob, method="ilqr", max_iter=100)
    assert r.converged and (np.abs(r.us) <= 15.0).all()
    assert np.isclose(np.abs(r.us), 15.0).any() and r.cost > free.cost
    # a KKT point of the box: no descent along the feasible directions
    g = rollout_gradient(prob, r.us).reshape(r.us.shape)
    at_lo, at_hi = r.us <= -15.0 + 1e-9, r.us >= 15.0 - 1e-9
    assert (g[at_lo] >= -1e-6).all() and (g[at_hi] <= 1e-6).all()
    assert np.abs(g[~(at_lo | at_hi)]).max() < 1e-4 * g0
    d = to.solve(prob, method="ddp", max_iter=30)        # DDP: within bounds, descending
    assert (np.abs(d.us) <= 15.0).all() and d.cost < d.history[0]["cost"]
    r = solved[3]["ilqr"]
    warm = to.solve(solved[0], method="ilqr", us=r.us, max_iter=50)
    assert warm.converged and warm.iterations <= 2 and warm.cost <= r.cost + 1e-12
    xs, us = r.shift()
    assert xs.shape == r.xs.shape and us.shape == r.us.shape
    np.testing.assert_array_equal(us[:-1], r.us[1:])
    np.testing.assert_array_equal(us[-1], r.us[-1])
    mpc = prob.with_x0(r.xs[1])
    assert to.solve(mpc, method="ilqr", us=us, max_iter=50).converged


def test_box_qp_meets_its_kkt_conditions():
    """boxqp.box_qp on random definite QPs (some rows unbounded, one fixed, warm starts
    inside and outside the box): x in the box, the gradient zero on the free rows and
    pointing out of the box on the clamped ones (KKT), the free set and H_ff's factor as
    reported."""
    from rbdiff.trajopt.boxqp import box_qp
    rng = np.random.default_rng(7)
    for trial in range(40):
        n = int(rng.integers(1, 13))
        A = rng.normal(size=(n, n))
        H = A @ A.T + 10.0 ** rng.uniform(-3, 1) * np.eye(n)
        q = rng.normal(size=n) * 10.0 ** rng.uniform(-1, 2)
        lb, ub = -rng.uniform(0.0, 2.0, n), rng.uniform(0.0, 2.0, n)
        lb[rng.random(n) < 0.2], ub[rng.random(n) < 0.2] = -np.inf, np.inf
        if n > 2:
            lb[0] = ub[0] = 0.0                 # a fixed control (at both bounds)
        x = rng.normal(size=n) * 3.0
        free, W = np.zeros(n, np.int64), np.zeros((n, n))
        nf = box_qp(H, q, lb, ub, x, free, W, *np.empty((3, n)))
        assert 0 <= nf <= n
        g = q + H @ x
        tol = 1e-8 * (1.0 + np.abs(q).max() + np.abs(H).max() * np.abs(x).max())
        assert (x >= lb).all() and (x <= ub).all()
        at_lo, at_hi = x <= lb, x >= ub
        inner = ~(at_lo | at_hi)
        assert np.abs(g[inner]).max(initial=0.0) < tol
        assert (g[at_lo & ~at_hi] > -tol).all() and (g[at_hi & ~at_lo] < tol).all()
        f = free[:nf]
        assert set(np.flatnonzero(inner)) <= set(f)     # the free rows include the inner
        L = np.tril(W[:nf, :nf])
        np.testing.assert_allclose(L @ L.T, H[np.ix_(f, f)], rtol=1e-12,
                                   atol=1e-12 * np.abs(H).max())
    # near an optimum the gradient is tiny and the warm start (the previous step) close:
    # the solution to rounding, relative to the gradient's own scale, not the warm start
    A = rng.normal(size=(6, 6))
    H = A @ A.T + np.eye(6)
    q = 1e-9 * rng.normal(size=6)
    exact = -np.linalg.solve(H, q)
    x = 0.99 * exact
    box_qp(H, q, np.full(6, -1.0), np.full(6, 1.0), x, np.zeros(6, np.int64),
           np.zeros((6, 6)), *np.empty((3, 6)))
    np.testing.assert_allclose(x, exact, rtol=1e-9, atol=0)
    # not definite: reported, not solved
    assert box_qp(-np.eye(2), np.ones(2), -np.ones(2), np.ones(2), np.zeros(2),
                  np.zeros(2, np.int64), np.zeros((2, 2)), *np.empty((3, 2))) == -1


def test_gains_with_bounds():
    """riccati._gains with bounds: where the plain step stays in the box, the plain gains
    themselves (bit-equal); where a bound binds, the box QP's step (KKT, as box_qp) and
    feedback -Qr_ff^-1 Q_ux,f on the free rows, none on the clamped ones."""
    from rbdiff.trajopt.riccati import _gains
    rng = np.random.default_rng(3)
    nu, nx = 7, 14
    A = rng.normal(size=(nu, nu))
    Qr = A @ A.T + np.eye(nu)
    Qux, Qu = rng.normal(size=(nu, nx)), rng.normal(size=nu)
    us = rng.normal(size=(1, nu))

    def gains(lo, hi, box):
        G = np.concatenate([Qux, Qu[:, None]], axis=1)
        K, k = np.zeros((1, nu, nx)), np.zeros((1, nu))
        assert _gains(0, us, lo, hi, box, Qu.copy(), Qr.copy(), G, np.zeros((nu, nu)), K,
                      k, np.empty((6, nu)), np.empty(nu, np.int64))
        return K[0], k[0]

    K0, k0 = gains(np.full(nu, -np.inf), np.full(nu, np.inf), False)
    K1, k1 = gains(us[0] - 1e3, us[0] + 1e3, True)
    assert np.array_equal(K0, K1) and np.array_equal(k0, k1)
    lo, hi = us[0] - 0.3 * np.abs(k0), us[0] + 0.3 * np.abs(k0)     # every row binds
    lo[0], hi[0] = -np.inf, np.inf                                   # but the first
    K, k = gains(lo, hi, True)
    u = us[0] + k
    assert (u >= lo - 1e-12).all() and (u <= hi + 1e-12).all()
    g = Qu + Qr @ k
    free = ~(np.isclose(u, lo, rtol=0, atol=1e-12) | np.isclose(u, hi, rtol=0, atol=1e-12))
    assert free[0] and np.abs(g[free]).max() < 1e-9 * np.abs(Qu).max()
    np.testing.assert_allclose(K[free], -np.linalg.solve(Qr[np.ix_(free, free)],
                                                         Qux[free]), rtol=1e-10, atol=1e-12)
    assert not K[~free].any()


def test_fddp_box_reaches_a_kkt_point():
    """FDDP with control bounds (the box QP in its backward pass, Crocoddyl's BoxFDDP)
    on the reach with 15 N m limits: converged, within the bounds, a KKT point of the
    box (no descent along the feasible directions), the policy's clamped rows without
    feedback."""
    prob, _, _ = _reach(u_lower=-np.full(7, 15.0), u_upper=np.full(7, 15.0))
    g0 = np.abs(rollout_gradient(prob, to.solve(prob, max_iter=0).us)).max()
    r = to.solve(prob, method="fddp", max_iter=200)
    assert r.converged and (np.abs(r.us) <= 15.0).all()
    at_lo, at_hi = r.us <= -15.0 + 1e-9, r.us >= 15.0 - 1e-9
    assert (at_lo | at_hi).any()
    g = rollout_gradient(prob, r.us).reshape(r.us.shape)
    assert (g[at_lo] >= -1e-6).all() and (g[at_hi] <= 1e-6).all()
    assert np.abs(g[~(at_lo | at_hi)]).max() < 1e-4 * g0
    # iLQR's pass (the same box QP) stops at another KKT point from its rollout start;
    # FDDP from there stays put: both passes agree on which points are stationary
    i = to.solve(prob, method="ilqr", max_iter=100)
    w = to.solve(prob, method="fddp", xs=i.xs, us=i.us, max_iter=200)
    assert w.converged and w.iterations <= 2
    assert w.cost == pytest.approx(i.cost, rel=1e-9)
    clamped = (at_lo | at_hi)[0]
    assert np.abs(r.gains[0][clamped]).max(initial=0.0) == 0.0


def test_bad_input():
    prob, frame, target = _reach(T=5)
    with pytest.raises(ValueError, match="method"):
        to.solve(prob, method="newton")
    with pytest.raises(ValueError, match=r"us: expected \(5, 7\)"):
        to.solve(prob, us=np.zeros((4, 7)))
    with pytest.raises(ValueError, match=r"us: expected \(5, 7\)"):
        to.rollout_cost(prob, np.zeros(7))
    with pytest.raises(ValueError, match="x0"):
        to.Problem(prob.model, np.zeros(13), 5, 0.01)
    with pytest.raises(ValueError, match="dt"):
        to.Problem(prob.model, prob.x0, 5, 0.0)
    with pytest.raises(KeyError):
        to.Problem(prob.model, prob.x0, 5, 0.01, running=[to.FrameTranslation("nope", target)])
    with pytest.raises(ValueError, match="x_ref"):
        to.Problem(prob.model, prob.x0, 5, 0.01, running=[to.StateRegularization(np.zeros(3))])
    with pytest.raises(ValueError, match="target"):
        to.FrameTranslation(frame, [0.0, np.nan, 1.0])
    with pytest.raises(ValueError, match="weight"):
        to.ControlRegularization(weight=-1.0)
    with pytest.raises(ValueError, match="u_ref"):
        to.Problem(prob.model, prob.x0, 5, 0.01,
                   running=[to.ControlRegularization(1.0, u_ref=np.zeros(3))])
    hyq = rbd.load_robot("hyq", floating_base=True)
    x = np.concatenate([rbd.neutral(hyq), np.zeros(hyq.nv)])
    with pytest.raises(ValueError, match="floating base.*use method='fddp'"):
        to.solve(to.Problem(hyq, x, 5, 0.01), method="ilqr")


@pytest.mark.skipif(not crocoddyl_ok(), reason="needs crocoddyl 3.2 with pin 4.0.x "
                    "(pip install 'rbdiff[trajopt-bench]')")
def test_costs_equal_crocoddyls():
    from rbdiff.bench.anchor import pin_model
    prob, _, _ = _reach(T=10)
    problem = crocoddyl_problem(prob, pin_model("iiwa14", False))
    rng = np.random.default_rng(3)
    us = prob.quasi_static(np.broadcast_to(prob.x0[:7], (10, 7)).copy()) + \
        rng.normal(size=(10, 7))
    xs = problem.rollout(list(us))
    assert problem.calc(xs, list(us)) == pytest.approx(to.rollout_cost(prob, us), rel=1e-12)


def test_timings_leave_compilation_out():
    """The compile clock counts a Numba compile (outermost only) and the solver's phases
    subtract what was compiled within them into timings["compile"]."""
    import time
    import numba
    from rbdiff.kernels.compile_clock import seconds
    from rbdiff.trajopt import solver

    @numba.njit
    def inner(x):
        return x + 1

    @numba.njit
    def outer(x):
        return inner(x) * 2

    c0, t0 = seconds(), time.perf_counter()
    assert outer(1) == 4
    t1, c1 = time.perf_counter(), seconds()
    assert 0 < c1 - c0 <= t1 - t0           # nested compiles not counted twice
    outer(2)
    assert seconds() == c1                   # a compiled call compiles nothing
    timings = dict(derivatives=0.0, backward=0.0, line_search=0.0, compile=0.0)
    solver._add(timings, (0.0, 2.0, 3.0, 3.5), (0.0, 0.5, 0.5, 0.75))
    assert timings == dict(derivatives=1.5, backward=1.0, line_search=0.25, compile=0.75)


def test_prefetched_backward_pass_signature_is_the_one_solve_compiles():
    """solve() warms backward_pass in a background child on a cold cache: the signature
    it asks for must be the one the solve then calls (else the child's work is wasted),
    for ilqr and ddp alike, and no other is compiled."""
    from rbdiff.trajopt.riccati import backward_pass
    from rbdiff.trajopt.solver import backward_pass_signature
    model = rbd.load_robot("iiwa14")
    x0 = np.concatenate([np.full(model.nq, 0.2), np.zeros(model.nv)])
    prob = to.Problem(model, x0, 4, 0.01, running=[to.StateRegularization(x0 * 0, 1.0),
                                                   to.ControlRegularization(1e-3)],
                      terminal=[to.StateRegularization(x0 * 0, 10.0)],
                      u_upper=50 * np.ones(model.nv))
    for method in ("ilqr", "ddp"):
        to.solve(prob, method=method, max_iter=2, reg=0)      # an int reg, too
    assert list(backward_pass.signatures) == [backward_pass_signature(prob)]
