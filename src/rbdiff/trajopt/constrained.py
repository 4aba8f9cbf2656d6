"""A constrained solver for Problems with constraints (trajopt/constraints.py): an
augmented-Lagrangian DDP on FDDP (solve(prob) on such a problem, or method="al").

Why this design, not a stagewise SQP (mim-solvers' CSQP): the augmented Lagrangian of
a box constraint lower <= r <= upper with multipliers mu and penalty rho,

    rho / 2 dist(r + mu / rho, [lower, upper])^2 - ||mu||^2 / (2 rho),

is Crocoddyl's quadratic barrier (residuals.barrier_activation) on the shifted residual
r + mu / rho, scaled by rho: its gradient R^T mu+ with mu+ = rho (s - proj(s)),
s = r + mu / rho, and its Gauss-Newton Hessian rho R^T diag(active) R are what the
cone cost terms already add (costs.add_gauss_newton). A second-order cone
(CircularCone) is the same with the projection onto the cone: rho/2 dist(s, K)^2, its
exact Hessian rho (I - d proj / ds) (K convex), a full (3, 3) block per knot. Folded
into the stage costs, each iteration stays one FDDP iteration (solver.solve_fddp: one
batched derivatives call, one Riccati pass riccati.backward_pass_fddp over the knots,
its line search, its gaps and infeasible warm start), no QP sub-solver (CSQP's ADMM
takes 25-1000 iterations a step and stalls on solo12 walking, issue 40), no new
compiled code. An outer loop (Aligator's ProxDDP, Conn-Gould-Toint's BCL) updates the
multipliers mu <- mu+ after each inner solve, solved only as finely as the violation
warrants (_inner_tol; each from FDDP's regularisation at least REG_OUTER), and raises
rho x3 (and the regularisation to REG_RAISE) when
the worst violation did not fall below DECREASE of the previous one. It warm-starts
from (xs, us, multipliers, rho) (ConstrainedResult.warm_start) and runs within max_iter
FDDP iterations in all (an MPC's fixed budget). Control bounds alone keep solve_fddp's
box-QP path (Problem's u_lower / u_upper); a ControlBox constraint is a penalty
term like the others (its multipliers reported, its violation <= feas_tol at
convergence, not 0).

Measured (one thread, from x0 at every knot and the quasi-static controls, inner tol
1e-9, violation <= 1e-6 at convergence; FDDP's soft-cone optimum's worst violation in
brackets): anymal walking 24 iterations (FDDP 14; 5.8 N m over the torque limit),
trotting 10 (8; 0.07 N), jumping 24 (17; 199 N m), talos_legs walking 37 (16; 9.5 N
on its wrench cone), solo12 trotting 27 (14; 1.2 N), solo12 walking 53 (25; 5.1 N),
where CSQP never stops.

Stopping test (convergence): the inner FDDP's own (|expected reduction of a full step|
< tol, from a feasible trajectory: 0.5 g' H^-1 g < tol for the augmented Lagrangian's
gradient g in the controls, which at mu+ is the Lagrangian's: KKT stationarity), the
worst constraint violation <= feas_tol (1e-6 by default: N, N m, rad, m/s as the
residual's unit) and complementarity min(|mu+_i|, |r_i - bound_i|) <= feas_tol.

Infeasible problems: when a run of stalls (outer steps cutting the violation by less
than 10 %, their inner solves converged to tol; each raises rho x10) raised rho by
RHO_SPAN (1e4) without halving the violation (a feasible problem's violation falls as
1/rho once the penalty dominates), or rho reaches RHO_MAX, solve raises Infeasible
naming the worst constraint, its knot and row (its ``result`` holds the least-violation
trajectory: not a plan).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from .costs import add_gauss_newton
from .solver import REG_MIN, Result, solve_fddp

# penalty: small at first (a stiff penalty makes FDDP's Gauss-Newton model poor far from
# the solution: solo12 trotting, the cone as a barrier of weight 1000, took FDDP 48
# iterations against 16 at weight 10), raised x3 while the violation does not fall.
# Iterations over the six constrained gaits (solo12 trotting, anymal walking / trotting
# / jumping, talos_legs walking, solo12 walking) from rho0 = 0.1, 0.3, 1, 3, 10: 215,
# 190, 179, 247, 354 (1: 32, 23, 10, 24, 37, 53; 0.1: 38, 21, 9, 30, 35, 82)
RHO0, RHO_MAX, RHO_STEP = 1.0, 1e10, 3.0
DECREASE = 0.25      # rho stays while each outer step cuts the violation at least this
STALL = 0.9          # an outer step that cuts the violation by less than 10 % stalls,
RHO_STALL = 10.0     # raises rho x10,
RHO_SPAN = 1e4       # and a run of them over this factor of rho without halving it:
                     # infeasible
FEAS_TOL = 1e-6
# after a raise of rho the next inner solve starts from at least this regularisation: from
# REG_MIN its first passes' steps failed (5-8 iterations of FDDP's x10 climbs a raise on
# solo12 walking: 108 iterations in all against 49)
REG_RAISE = 1e-2
# and after any multiplier update from at least this: the active set moves with the
# multipliers, and a nearly unregularised first step runs over rows the Gauss-Newton
# model holds inactive (solo12 trotting: seven failed iterations, reg climbing from 1e-8
# to 1e-1, 27 iterations against 32 and 132 ms against 194 with it)
REG_OUTER = 1e-4
OMEGA0 = 1e-1        # the first inner solve's tolerance (cost units; multipliers 0)
OMEGA = 1.0          # an inner solve's tolerance: this fraction of its expected change


class Infeasible(ValueError):
    """The constraints cannot be met: ``result`` the least-violation trajectory found
    (a ConstrainedResult, not a plan), ``worst`` (name, knot, row) of its worst
    violation."""

    def __init__(self, message, result):
        super().__init__(message)
        self.result = result
        self.worst = result.worst


@dataclass
class ConstrainedResult(Result):
    """A Result with the constraints' report: max_violation (the worst row's, in its
    residual's unit), violations {constraint name: its worst violation}, worst (name,
    knot, row) or None, multipliers (one (K, m) array per ConstraintSet group: mu > 0 on
    an upper bound, < 0 on a lower one), rho (the final penalty), outer (multiplier
    updates), complementarity, feasible (max_violation <= feas_tol); cost is the
    problem's (without the penalty terms); history's dicts carry "outer" and "rho"."""
    max_violation: float = 0.0
    violations: dict = field(default_factory=dict)
    worst: tuple = None
    multipliers: list = None
    rho: float = RHO0
    outer: int = 0
    complementarity: float = 0.0
    feasible: bool = True

    def warm_start(self):
        """solve's keywords to warm-start the same problem (or its with_x0: the same
        constraint groups) from this result: xs, us, multipliers, rho (MPC)."""
        return dict(xs=self.xs, us=self.us, multipliers=self.multipliers, rho=self.rho)


class _Augmented:
    """``prob`` seen by solve_fddp with the constraints' augmented-Lagrangian terms at
    multipliers ``mus`` and penalty ``rho`` added to its cost and derivatives; every
    other attribute is prob's."""

    def __init__(self, prob, mus, rho):
        self.prob, self.cset, self.mus, self.rho = prob, prob.constraints, mus, rho
        self.reads_forces = prob.reads_forces or self.cset.reads_forces

    def __getattr__(self, name):
        return getattr(self.prob, name)

    def penalty(self, rs):
        """The augmented Lagrangian's terms of residuals rs (ConstraintSet.residuals)."""
        p = 0.0
        for (_, _, c, _), r, mu in zip(self.cset.groups, rs, self.mus):
            Ar = c.activation(r + mu / self.rho)[0]
            p += 0.5 * self.rho * np.einsum("ki,ki->", Ar, Ar) - \
                np.einsum("ki,ki->", mu, mu) / (2.0 * self.rho)
        return p

    def force_costates(self, forces):
        """Problem.force_costates with the force constraints' penalty gradients added:
        mu+ A at their rows (their residuals r = A f are linear in f), what DDP contracts
        the forces' curvature with."""
        prob = self.prob
        lf = prob.force_costates(forces) if prob.reads_forces else \
            np.zeros((prob.T, max(prob.ncmax, 1)))
        for (_, knots, con, off), mu in zip(self.cset.groups, self.mus):
            if off is None:
                continue
            rows, d = knots[:, None], con.A.shape[1]
            r = forces[rows, off][:, :d] @ con.A.T
            lf[rows, off[:, :d]] += self.rho * con.activation(r + mu / self.rho)[0] @ con.A
        return lf

    def cost(self, q, v, us, forces=None):
        return self.prob.cost(q, v, us, forces) + \
            self.penalty(self.cset.residuals(q, v, us, forces))

    def derivative_parts(self, q, v, us, vnext, forces=None, first=None, curvature=None,
                         total=None, kept=None):
        """Problem.derivative_parts with the penalty terms' Gauss-Newton derivatives
        added (l_xu allocated where a constraint reads the forces); ``total``: as
        Problem.cost_derivatives', the penalty included (this object's ``cost``);
        ``kept``: Problem.derivative_parts'."""
        prob = self.prob
        T, nx, nu = prob.T, 2 * prob.nv, prob.nu
        df = None
        if self.reads_forces:
            nc = max(prob.ncmax, 1)
            df = (np.zeros((T, nc, nx)), np.zeros((T, nc, nu)))
        parts = prob._dynamics_parts(q, v, us, vnext, df, first, kept)
        c = prob.cost_derivatives(q, v, us, forces, df, curvature, total)
        lx, lu, lxx, luu = c[:4]
        lxu = c[4] if len(c) == 5 else (np.zeros((T, nx, nu)) if self.reads_forces
                                         else None)
        out = (lx, lu, lxx, luu, lxu)
        for (_, knots, con, _), (r, Rx, Ru), mu in zip(
                self.cset.groups, self.cset.jacobians(q, v, us, forces, df), self.mus):
            Ar, Arr = con.activation(r + mu / self.rho)
            if total is not None:       # the penalty's value, as penalty() has it
                total[-1] += 0.5 * self.rho * np.einsum("ki,ki->", Ar, Ar) - \
                    np.einsum("ki,ki->", mu, mu) / (2.0 * self.rho)
            if Arr.ndim == 2:           # a box: diagonal a'', the cost terms' kernel
                add_gauss_newton(out, knots, self.rho, Ar, Arr, Rx, 0, Ru)
                continue
            # a cone: a'' = I - d proj / ds, full (K, m, m); R_x, R_u both present
            W = self.rho * Arr
            lx[knots] += self.rho * np.einsum("kmi,km->ki", Rx, Ar)
            lu[knots] += self.rho * np.einsum("kmi,km->ki", Ru, Ar)
            WRx = W @ Rx
            lxx[knots] += Rx.transpose(0, 2, 1) @ WRx
            lxu[knots] += WRx.transpose(0, 2, 1) @ Ru
            luu[knots] += Ru.transpose(0, 2, 1) @ W @ Ru
        return parts, lx, lu, lxx, luu, lxu


def _updated(cset, rs, mus, rho):
    """mu+ = rho (s - proj(s)), s = r + mu / rho, per group (the first-order update)."""
    return [rho * g[2].activation(r + mu / rho)[0]
            for g, r, mu in zip(cset.groups, rs, mus)]


def complementarity(cset, rs, mus):
    """The worst of the constraints' complementarity (Constraint.complementarity: a box
    row's min(|mu_i|, |r_i - b_i|)); 0 with no inequality."""
    return max([float(g[2].complementarity(r, mu).max(initial=0.0))
                for g, r, mu in zip(cset.groups, rs, mus)], default=0.0)


def _multipliers(cset, multipliers):
    if multipliers is None:
        return [np.zeros((len(knots), c.size)) for _, knots, c, _ in cset.groups]
    mus = [np.array(m, dtype=float) for m in multipliers]
    shapes = [(len(knots), c.size) for _, knots, c, _ in cset.groups]
    if [m.shape for m in mus] != shapes or not all(np.isfinite(m).all() for m in mus):
        raise ValueError(f"multipliers: expected finite arrays of shapes {shapes} (a "
                         f"ConstrainedResult's of this problem), got "
                         f"{[m.shape for m in mus]}")
    return mus


def _inner_tol(tol, rho, viol):
    """The next inner solve's tolerance (BCL's inexact inner solves): a multiplier step
    of size rho viol moves the augmented Lagrangian's minimum by about 0.5 rho viol^2
    (its Hessian rho R'R on the active rows), so solving it finer than OMEGA of that is
    wasted until the violation falls; tol once it is within feasibility."""
    return max(tol, OMEGA * 0.5 * rho * viol * viol)


def solve_al(prob, xs=None, us=None, max_iter=200, tol=1e-9, reg=REG_MIN, callback=None,
             feas_tol=FEAS_TOL, rho=None, multipliers=None, second_order=False):
    """Augmented-Lagrangian FDDP on ``prob`` (a Problem with constraints): (xs, us) the
    warm start as solve_fddp's, ``multipliers`` and ``rho`` a previous
    ConstrainedResult's (MPC) or None and RHO0; max_iter the FDDP iterations in all;
    tol the inner FDDP's tolerance, feas_tol the violation's and complementarity's;
    ``second_order``: the inner solves take the dynamics' exact curvature (solve's "ddp"
    on these problems; the force constraints' multipliers contracted with the forces'
    curvature: force_costates) - measured no faster (solo12 walking 93 iterations
    against 49: the multipliers' outer loop, not the inner steps, sets the count).
    Returns a ConstrainedResult (converged: the stopping test of the module docstring
    met); raises Infeasible (a ValueError) when the constraints cannot be met."""
    cset = prob.constraints
    if cset is None:
        raise ValueError("solve_al: the problem has no constraints (Problem(..., "
                         "constraints=...)); use method='fddp'")
    rho, feas_tol = float(RHO0 if rho is None else rho), float(feas_tol)
    if not (np.isfinite(rho) and rho > 0):
        raise ValueError(f"rho: expected a finite number > 0, got {rho}")
    if not feas_tol > 0:
        raise ValueError(f"feas_tol: expected > 0, got {feas_tol}")
    mus = _multipliers(cset, multipliers)
    nq = prob.nq
    history, timings = [], dict(derivatives=0.0, backward=0.0, line_search=0.0,
                                compile=0.0, constraints=0.0)
    its, outer = 0, 0
    stall_from = (rho, np.inf)
    viol_prev = np.inf
    res = None
    feasible = False
    omega = max(float(tol), OMEGA0)
    while its < max_iter:
        inner = solve_fddp(_Augmented(prob, mus, rho), xs, us, max_iter - its, omega, reg,
                           second_order=second_order, feasible=feasible)
        t0 = time.perf_counter()
        outer += 1
        its += inner.iterations
        for k, v in inner.timings.items():
            timings[k] += v
        for h in inner.history:
            history.append(dict(h, outer=outer, rho=rho, omega=omega))
        xs, us, forces = inner.xs, inner.us, inner.forces
        reg = max(inner.history[-1]["reg"], REG_MIN) if inner.history else reg
        q, v = np.ascontiguousarray(xs[:, :nq]), np.ascontiguousarray(xs[:, nq:])
        rs = cset.residuals(q, v, us, forces)
        mus = _updated(cset, rs, mus, rho)
        viol, per, worst = cset.report(rs)
        comp = complementarity(cset, rs, mus)
        history[-1].update(violation=viol, complementarity=comp)
        done = inner.converged and omega == tol and viol <= feas_tol and comp <= feas_tol
        feasible = bool(inner.history and inner.history[-1]["feasible"])
        res = ConstrainedResult(
            xs=xs, us=us, cost=float(prob.cost(q, v, us, forces)), iterations=its,
            converged=done, method="al", history=list(history), timings=dict(timings),
            forces=forces, gains=inner.gains, max_violation=viol, violations=per,
            worst=worst,
            multipliers=[m.copy() for m in mus], rho=rho, outer=outer,
            complementarity=comp, feasible=viol <= feas_tol)
        if done:
            break
        stalled = viol > feas_tol and viol > STALL * viol_prev
        # a stall counts where the inner solve was converged to tol (a loose one may not
        # have moved: then the next is solved to tol); a run of them that raised rho by
        # RHO_SPAN without halving the violation is infeasibility (a feasible problem's
        # violation falls as 1/rho once the penalty dominates; a badly scaled one's may
        # stall at first: a terminal placement in metres, its cost 0.05, from rho 0.1
        # to 24)
        if not (stalled and inner.converged and omega == tol):
            stall_from = (rho, viol)
        elif rho >= RHO_SPAN * stall_from[0] and viol > 0.5 * stall_from[1] \
                or rho >= RHO_MAX:
            name, knot, row = worst
            raise Infeasible(
                f"infeasible: the constraints cannot be met; the worst is {name} at knot "
                f"{knot} (row {row}), violated by {viol:.3g} with the penalty raised "
                f"{rho / stall_from[0]:.3g}x to {rho:.3g} without halving it", res)
        if viol > feas_tol and viol > DECREASE * viol_prev:
            # a stall raises rho faster: the penalty has yet to dominate
            rho = min(rho * (RHO_STALL if stalled else RHO_STEP), RHO_MAX)
            reg = max(reg, REG_RAISE)
        viol_prev = viol
        reg = max(reg, REG_OUTER)
        # within feasibility: the last solves to tol (stationarity), else BCL's
        omega = tol if (viol <= feas_tol or stalled) else _inner_tol(tol, rho, viol)
        timings["constraints"] += time.perf_counter() - t0
        if callback is not None:
            callback(its, res)
    return res


def lagrangian_gradient(prob, res, multipliers=None):
    """(g_u (T, nu), lambda (T+1, 2nv)): the gradient in the controls of the Lagrangian
    J + sum_t mu_t . r_t along the (gap-free) trajectory of ``res`` (its multipliers by
    default), the dynamics eliminated by the costates

        lambda_T = l_x(T) + R_x(T)' mu_T,
        lambda_t = l_x(t) + R_x(t)' mu_t + F_x(t)' lambda_{t+1},
        g_u(t)   = l_u(t) + R_u(t)' mu_t + F_u(t)' lambda_{t+1}

    with the dense tangent Jacobians F (Problem.dynamics_jacobians' assembly): KKT
    stationarity is g_u = 0, checked without the solver's Riccati pass or penalty."""
    cset = prob.constraints
    mus = res.multipliers if multipliers is None else multipliers
    nq, T, nx, nu = prob.nq, prob.T, 2 * prob.nv, prob.nu
    q, v, us = (np.ascontiguousarray(res.xs[:, :nq]), np.ascontiguousarray(res.xs[:, nq:]),
                np.ascontiguousarray(res.us))
    _, vx, forces = prob.shoot(q, v, us)
    nc = max(prob.ncmax, 1)
    df = (np.zeros((T, nc, nx)), np.zeros((T, nc, nu)))
    Fx, Fu = prob._assemble(*prob._dynamics_parts(q, v, us, vx, df))
    lx, lu = prob.cost_derivatives(q, v, us, forces, df)[:2]
    if cset is not None:
        for (_, knots, _, _), (_, Rx, Ru), mu in zip(
                cset.groups, cset.jacobians(q, v, us, forces, df), mus):
            if Rx.shape[2]:
                np.add.at(lx, knots, np.einsum("kmi,km->ki", Rx, mu))
            if Ru.shape[2]:
                np.add.at(lu, knots, np.einsum("kmi,km->ki", Ru, mu))
    lam = np.empty((T + 1, nx))
    gu = np.empty((T, nu))
    lam[T] = lx[T]
    for t in range(T - 1, -1, -1):
        gu[t] = lu[t] + Fu[t].T @ lam[t + 1]
        lam[t] = lx[t] + Fx[t].T @ lam[t + 1]
    return gu, lam
