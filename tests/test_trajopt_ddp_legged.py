"""DDP on floating-base and legged problems (issue 27): the knot's curvature of
lambda'.f on the manifold (free flyers, spherical joints, underactuation, contact and
impulse knots) against the complex step through rbdiff's own complex128 functions, the
DDP step from a feasible trajectory against Newton's step on the total cost as a
function of the controls, and quadratic convergence near the optimum.

Contact and impulse knots: their contractions are rbdiff's contact_dynamics_contraction
and impulse_dynamics_contraction, called by address from the compiled pass; the pass
also takes others through trajopt.curvature.CONTRACTIONS (knot by knot in Python), which
a test fills with central differences of the contact and impulse dynamics' analytical
derivatives (a numerical oracle, here only) to check the compiled route against."""

import itertools

import numpy as np
import pytest
from conftest import tree_pair

import rbdiff as rbd
import rbdiff.trajopt as to
from rbdiff.bench.trajopt import legged_problem, solo_standing
from rbdiff.trajopt import curvature
from rbdiff.trajopt.riccati import backward_pass_fddp
from rbdiff.trajopt.rollout import CONTACT, FREE, IMPULSE
from rbdiff.trajopt.solver import REG_MIN


def _fd_hessian(grad, n, h=1e-6):
    """Central differences of an exact gradient, symmetrised (which also drops the Lie
    bracket that a derivative taken at q (+) e carries: module curvature's docstring)."""
    H = np.empty((n, n))
    for k in range(n):
        e = np.zeros(n)
        e[k] = h
        H[:, k] = (grad(e) - grad(-e)) / (2 * h)
    return 0.5 * (H + H.T)


def _num_contact(m, q, v, tau, contacts, lam_a, lam_f):
    """Hessian blocks of lam_a.qdd + lam_f.forces (contact_dynamics) in (q, v, tau)."""
    nv = m.nv

    def grad(z):
        d = rbd.contact_dynamics_derivatives(m, rbd.integrate(m, q, z[:nv]), v + z[nv:2 * nv],
                                             tau + z[2 * nv:], contacts)
        return np.concatenate([lam_a @ d.dqdd_dq + lam_f @ d.dforces_dq,
                               lam_a @ d.dqdd_dv + lam_f @ d.dforces_dv,
                               lam_a @ d.dqdd_dtau + lam_f @ d.dforces_dtau])
    H = _fd_hessian(grad, 3 * nv)
    return (H[:nv, :nv], H[nv:2 * nv, nv:2 * nv], H[:nv, nv:2 * nv], H[2 * nv:, :nv])


def _num_impulse(m, q, v, contacts, lam_v, lam_f):
    """Hessian blocks of lam_v.v_after + lam_f.impulses (impulse_dynamics) in (q, v)."""
    nv = m.nv

    def grad(z):
        d = rbd.impulse_dynamics_derivatives(m, rbd.integrate(m, q, z[:nv]), v + z[nv:],
                                             contacts)
        return np.concatenate([lam_v @ d.dvafter_dq + lam_f @ d.dimpulses_dq,
                               lam_v @ d.dvafter_dv + lam_f @ d.dimpulses_dv])
    H = _fd_hessian(grad, 2 * nv)
    return H[:nv, :nv], H[:nv, nv:]


def _step(prob, t, q, v, u):
    """(q', v', forces) of knot t through rbdiff's public (complex-capable) functions."""
    m, dt = prob.model, prob.dt
    c = prob.knot_contacts[t]
    if prob.kind[t] == IMPULSE:
        d = rbd.impulse_dynamics(m, q, v, c)
        return q, d.v_after, d.impulses
    tau = np.zeros(m.nv, dtype=u.dtype)
    tau[m.nv - prob.nu:] = u
    if prob.kind[t] == CONTACT:
        d = rbd.contact_dynamics(m, q, v, tau, c)
        a, f = d.qdd, d.forces
    else:
        a, f = rbd.aba(m, q, v, tau), np.zeros(0, dtype=q.dtype)
    v2 = v + dt * a
    return rbd.integrate(m, q, dt * v2), v2, f


def _knot_oracle(prob, t, q, v, u, lam, lf, h=1e-20):
    """The Hessian of lam.(f(x (+) dx, u + du) (-) f(x, u)) + lf.forces in z = (dx, du):
    its gradient by the complex step on the manifold, then central differences."""
    m, nv, nu = prob.model, prob.nv, prob.nu
    q1, _, _ = _step(prob, t, q, v, u)
    n = 2 * nv + nu

    def value(z):
        qo, vo, f = _step(prob, t, rbd.integrate(m, q.astype(z.dtype), z[:nv]),
                          v + z[nv:2 * nv], u + z[2 * nv:])
        d = np.concatenate([rbd.difference(m, q1.astype(z.dtype), qo), vo])
        return lam @ d + lf[:len(f)] @ f

    def grad(z0):
        g = np.empty(n)
        for k in range(n):
            z = z0.astype(complex)
            z[k] += 1j * h
            g[k] = value(z).imag / h
        return g
    return _fd_hessian(grad, n, 1e-5)


def _state(prob, rng, scale=0.1):
    m, T = prob.model, prob.T
    q = rbd.integrate(m, np.broadcast_to(prob.x0[:m.nq], (T + 1, m.nq)).copy(),
                      scale * rng.normal(size=(T + 1, m.nv)))
    v = 3 * scale * rng.normal(size=(T + 1, m.nv))
    u = prob.quasi_static_controls(q) + rng.normal(size=(T, prob.nu))
    return q, v, u


def _check_knots(prob, knots, seed):
    rng = np.random.default_rng(seed)
    q, v, u = _state(prob, rng)
    _, vx, forces = prob.shoot(q, v, u)
    parts = prob.derivative_parts(q, v, u, vx, forces)[0]
    for t in knots:
        lam = rng.normal(size=2 * prob.nv)
        lf = rng.normal(size=max(prob.ncmax, 1))
        kp = tuple(p[t] for p in parts)
        H = curvature.knot_hessian(prob, t, q[t], v[t], u[t], vx[t], kp, lam, lf)
        ref = _knot_oracle(prob, t, q[t], v[t], u[t], lam, lf)
        np.testing.assert_allclose(H, ref, atol=1e-6 * np.abs(ref).max())
        np.testing.assert_allclose(H, H.T, atol=1e-12 * np.abs(H).max())


def test_free_knot_curvature_on_spherical_and_free_flyer_trees():
    """Free knots of a random tree (a free flyer root, spherical joints, every joint
    type): the integrate term and the symmetrised q-q block make the exact Hessian."""
    m = tree_pair(3, 6, True)[0]
    x0 = np.concatenate([rbd.random_configuration(m, np.random.default_rng(0)),
                         np.zeros(m.nv)])
    prob = to.Problem(m, x0, 3, 0.05, running=[to.ControlRegularization(1e-2)])
    assert prob.actuation == "floating_base" and prob._lie_blocks.shape[0] >= 1
    _check_knots(prob, (0, 2), 5)


def test_contact_and_impulse_knot_curvature():
    """solo12's phases: four feet, three, a free knot, a touch-down impulse."""
    prob = legged_problem(12)
    assert list(prob.kind[[0, 5, 7, 8]]) == [CONTACT, CONTACT, FREE, IMPULSE]
    _check_knots(prob, (0, 5, 7, 8), 6)


# ---- the step is Newton's ------------------------------------------------------------------

def _newton_problem(contacts):
    """solo12, a few knots; costs whose Gauss-Newton Hessian is exact in the tangent
    coordinates (controls, velocities, the legs' joints, a contact force): so the
    only curvature missing from FDDP's model is the dynamics' (and the forces');
    ``contacts`` "translation": no contacts, a foot's FrameTranslation added (its
    residual curvature through the free flyer: Problem.cost_derivatives')."""
    m, x0 = solo_standing()
    nv = m.nv
    # small velocity weights: solo's light legs make d v / d u large and the Hessian in
    # the controls ill-conditioned (positive definite only very near the optimum)
    w = np.concatenate([np.zeros(6), np.ones(nv - 6), 1e-3 * np.ones(nv)])
    xref = x0.copy()
    xref[7:m.nq] += 0.3
    running = [to.ControlRegularization(1.0), to.StateRegularization(xref, 1.0, w)]
    terminal = [to.StateRegularization(xref, 10.0, w)]
    if contacts == "translation":
        foot = rbd.frame_placement(m, x0[:m.nq], "FL_FOOT")[:3, 3]
        running.append(to.FrameTranslation("FL_FOOT", foot + [0.05, 0.02, 0.08], 30.0))
        terminal.append(to.FrameTranslation("FL_FOOT", foot + [0.05, 0.02, 0.08], 300.0))
        return to.Problem(m, x0, 4, 0.01, running=running, terminal=terminal)
    if not contacts:
        return to.Problem(m, x0, 4, 0.01, running=running, terminal=terminal)
    feet = legged_problem(12).knot_contacts[0]
    force = to.ContactForce(feet[1].frame, np.array([0.0, 0.0, 5.0]), 1e-2)
    per = [feet, feet[1:], None, feet, feet]
    run = [running + [force], running, running, [to.StateRegularization(xref, 1.0, w)],
           running]
    return to.Problem(m, x0, 5, 0.01, running=run, terminal=terminal, contacts=per,
                      impulses={3: feet})


def _costate_step(prob, u, second=True, cost_curvature=True):
    """DDP's control step (stagewise Newton: the open-loop costate, reg at its floor:
    an impulse knot's Q_uu is zero) from the
    rollout of u, through the linearised dynamics, the residuals' curvature added to
    l_xx (as solve does; not without ``cost_curvature``); without ``second`` FDDP's
    (Gauss-Newton)."""
    T, nv, nu = prob.T, prob.nv, prob.nu
    q, v, _, _, vx, forces = prob._run(None, None, u, np.zeros((T, nu)), None, 0.0)
    H = np.zeros((T + 1, nv, nv))
    parts, lx, lu, lxx, luu, lxu = prob.derivative_parts(q, v, u, vx, forces, None, H)
    if second and cost_curvature:
        lxx = lxx.copy()
        lxx[:, :nv, :nv] += H
    Fx, Fu = prob._assemble(*parts)
    k, K = np.zeros((T, nu)), np.zeros((T, nu, 2 * nv))
    Vx, Vxx = np.zeros((T + 1, 2 * nv)), np.zeros((T + 1, 2 * nv, 2 * nv))
    fs = np.zeros((T + 1, 2 * nv))
    if second:
        knot, _, _ = curvature.backward_pass_ddp(prob, q, v, u, vx, forces, parts, lx, lu,
                                                 lxx, luu, lxu, fs, REG_MIN, True, k, K, Vx,
                                                 Vxx, costate=True)
    else:
        knot, _, _ = backward_pass_fddp(*parts, prob._lie_blocks, lx, lu, lxx, luu,
                                        np.zeros((T, 0, 0)) if lxu is None else lxu, fs,
                                        REG_MIN, True, u, prob._lo, prob._hi, k, K, Vx, Vxx)
    assert knot == -1
    du, dx = np.zeros((T, nu)), np.zeros(2 * nv)
    for t in range(T):
        du[t] = k[t] + K[t] @ dx
        dx = Fx[t] @ dx + Fu[t] @ du[t]
    return du.ravel()


def _controls_gradient(prob, u, h=1e-20):
    """d J / d u by the complex step of the total cost through rbdiff's own complex128
    dynamics (the rollout of _step)."""
    T, nu = prob.T, prob.nu
    m = prob.model

    def cost(us):
        q = prob.x0[:m.nq].astype(us.dtype)
        v = prob.x0[m.nq:].astype(us.dtype)
        qs, vs, fs_ = [q], [v], []
        for t in range(T):
            q, v, f = _step(prob, t, q, v, us[t])
            qs.append(q)
            vs.append(v)
            fs_.append(f)
        return _cost(prob, np.array(qs), np.array(vs), us, fs_)
    g = np.empty(T * nu)
    for i in range(T * nu):
        e = np.zeros(T * nu, complex)
        e[i] = 1j * h
        g[i] = cost(u.astype(complex) + e.reshape(T, nu)).imag / h
    return g


def _cost(prob, q, v, us, forces):
    """The total cost, written out for complex arguments (the terms of _newton_problem)."""
    total = 0.0
    for t, terms in enumerate(prob.knot_costs):
        scale = 1.0 if prob.kind[t] == IMPULSE else prob.dt
        for term in terms:
            total = total + scale * _term(prob, term, q[t], v[t], us[t], forces[t], t)
    for term in prob.terminal:
        total = total + _term(prob, term, q[-1], v[-1], None, None, prob.T)
    return total


def _term(prob, term, q, v, u, f, t):
    m = prob.model
    if isinstance(term, to.ControlRegularization):
        return 0.5 * term.weight * (u @ u)
    if isinstance(term, to.FrameTranslation):
        r = rbd.frame_placement(m, q, term.frame)[:3, 3] - term.target
        return 0.5 * term.weight * (r @ r)
    if isinstance(term, to.StateRegularization):
        r = np.concatenate([rbd.difference(m, term.x_ref[:m.nq].astype(q.dtype), q),
                            v - term.x_ref[m.nq:]])
        return 0.5 * term.weight * (term.weights * r) @ r
    row = 0
    for c in prob.knot_contacts[t]:
        if c.frame == term.frame:
            r = f[row:row + c.dim] - term.force
            return 0.5 * term.weight * (r @ r)
        row += c.dim
    raise AssertionError(term)


@pytest.mark.parametrize("contacts", [False, True, "translation"])
def test_ddp_step_is_newtons_step(contacts):
    """From a feasible trajectory (the rollout of controls near the solution) (reg at its floor):
    the DDP step with the open-loop costate solves Newton's equation H s = -g of the
    total cost in the controls (H by central differences of the complex-step gradient),
    FDDP's (Gauss-Newton) does not."""
    prob = _newton_problem(contacts)
    rng = np.random.default_rng(2)
    r = to.solve(prob, "fddp", max_iter=100)
    u = r.us + 0.01 * rng.normal(size=r.us.shape)
    g = _controls_gradient(prob, u)
    n = g.size
    H = np.empty((n, n))
    for i in range(n):
        e = np.zeros(n)
        e[i] = 1e-5
        H[:, i] = (_controls_gradient(prob, u + e.reshape(u.shape)) -
                   _controls_gradient(prob, u - e.reshape(u.shape))) / 2e-5
    # an impulse knot's control row is carried but unused: the rest
    act = np.repeat(prob.kind != IMPULSE, prob.nu)
    H = 0.5 * (H + H.T)[np.ix_(act, act)]
    g = g[act]
    assert np.linalg.eigvalsh(H).min() > 0

    def residual(step):
        return np.linalg.norm(H @ step[act] + g) / np.linalg.norm(g)
    newton = residual(_costate_step(prob, u))
    assert newton < 1e-6
    assert residual(_costate_step(prob, u, second=False)) > 1e3 * newton
    if contacts == "translation":       # the foot's residual curvature counts
        assert residual(_costate_step(prob, u, cost_curvature=False)) > 1e3 * newton


def _iterates(prob, method):
    us = []
    r = to.solve(prob, method, max_iter=50, tol=1e-14,
                 callback=lambda i, res: us.append(res.us))
    return r, [np.abs(u - r.us).max() for u in us]


@pytest.mark.parametrize("contacts", [False, True])
def test_ddp_converges_quadratically(contacts):
    """solve(prob, "ddp") from FDDP's infeasible warm start: the controls' error to the
    optimum squares from one iteration to the next once it is small (FDDP's shrinks by a
    constant factor), to FDDP's optimum, in fewer iterations."""
    prob = _newton_problem(contacts)
    r, e = _iterates(prob, "ddp")
    rf, ef = _iterates(prob, "fddp")
    assert r.converged and r.method == "ddp" and rf.converged
    assert abs(r.cost - rf.cost) < 1e-10 * abs(rf.cost)
    assert r.history[-1]["second_order"]
    fast = [(a, b) for a, b in itertools.pairwise(e) if 1e-8 < a < 1e-2]
    assert fast and all(b < 10 * a * a for a, b in fast)
    slow = [(a, b) for a, b in itertools.pairwise(ef[:-1]) if 1e-8 < a < 1e-2]  # [-1]: 0
    assert slow and all(b > 1e-2 * a for a, b in slow)
    assert len(e) < len(ef)


def test_ddp_on_contact_knots_without_a_contraction_refuses(monkeypatch):
    """Where this build has no contact contraction, ddp at a contact knot says so."""
    monkeypatch.setitem(curvature.CONTRACTIONS, "contact", None)
    with pytest.raises(NotImplementedError, match="contact_dynamics_contraction"):
        to.solve(_newton_problem(True), "ddp", max_iter=2)


def test_compiled_pass_equals_the_pass_with_numerical_contractions(monkeypatch):
    """The compiled pass (rbdiff's contractions by address) against the same pass with
    the contact and impulse knots' contractions by central differences, taken knot by
    knot in Python (the CONTRACTIONS seam), on the infeasible warm start."""
    prob = _newton_problem(True)
    T, nv, nu = prob.T, prob.nv, prob.nu
    xs = np.tile(prob.x0, (T + 1, 1))
    q, v = np.ascontiguousarray(xs[:, :prob.nq]), np.ascontiguousarray(xs[:, prob.nq:])
    u = prob.quasi_static_controls(q) + 0.1
    qx, vx, forces = prob.shoot(q, v, u)
    fs = to.solver._gaps(prob, q, v, qx, vx)
    parts, lx, lu, lxx, luu, lxu = prob.derivative_parts(q, v, u, vx, forces)

    def policy():
        k, K = np.zeros((T, nu)), np.zeros((T, nu, 2 * nv))
        Vx, Vxx = np.zeros((T + 1, 2 * nv)), np.zeros((T + 1, 2 * nv, 2 * nv))
        knot, d1, d2 = curvature.backward_pass_ddp(prob, q, v, u, vx, forces, parts, lx, lu,
                                                   lxx, luu, lxu, fs, 1e-3, False, k, K,
                                                   Vx, Vxx)
        assert knot == -1
        return k, K, Vx, d1, d2
    ref = policy()
    monkeypatch.setitem(curvature.CONTRACTIONS, "contact", _num_contact)
    monkeypatch.setitem(curvature.CONTRACTIONS, "impulse", _num_impulse)
    got = policy()
    for a, b in zip(got, ref):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6 * np.abs(b).max())
