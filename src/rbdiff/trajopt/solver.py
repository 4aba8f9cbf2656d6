"""iLQR and DDP (Tassa, Mansard & Todorov 2014's regularisation and line search; DDP's
second-order dynamics terms from rbdiff's second-order kernels, Nganga & Wensing 2021).

One iteration: the derivatives of the whole horizon (one batched aba_derivatives call;
the cost terms batched), the compiled backward pass (riccati.py; for DDP it contracts
the dynamics' second derivatives with the costate at each knot, O(N d) a knot, without
forming the tensors: kernels/contraction.py), then a forward pass with backtracking
alpha = 1, 1/2, ..., 2^-10 accepted on Armijo's condition
J(alpha) - J <= 1e-4 (alpha d1 + alpha^2 d2) (the expected change). Regularisation of
Q_uu: x10 on a failed backward pass or line search, /10 on success, within [1e-9, 1e9].
DDP is Newton's method: its Hessian has the dynamics' curvature and the cost residuals'
(Problem.cost_curvature: without the latter, the frame translation's, DDP converged
linearly and more slowly than iLQR, 18 iterations against 15 on bench (A)'s reach; with
both, quadratically, in 10). It is safeguarded: where the second-order model is not
convex (a Q_uu of the pass not positive definite: far from a solution, with large
costates) that iteration takes iLQR's Gauss-Newton step (Gauss-Newton Hessians of the
dynamics and the costs) instead of raising the regularisation until Q_uu is (10 to 16
iterations on the reach against 10, by how far reg may rise; Crocoddyl's SolverDDP
raises it, but its "DDP" has no dynamics curvature: its Q_uu is Gauss-Newton's, positive
definite by construction); ``history[i]["second_order"]`` says which. Stops when the expected change of a full step is below ``tol``.

DDP on the other problems (floating bases, spherical joints, underactuation, contact and
impulse knots) is FDDP's solver (solve_fddp: gaps, infeasible warm start, its line
search and regularisation) with the exact curvature of lambda'.f added to Q_xx, Q_ux,
Q_uu at every knot (curvature.py: the ABA, contact or impulse contraction with the next
knot's costate and the force terms' gradient, integrate's second-order terms on the
free flyers and spherical joints), the same safeguard (a pass whose Q_uu is not
positive definite: that iteration takes FDDP's Gauss-Newton pass); the cost's curvature
there is Gauss-Newton's plus the residual curvature of the terms that have one
(Problem.cost_derivatives(curvature=H): FrameTranslation on any tree), added to a copy
of l_xx for the second-order pass only (FDDP's stays Gauss-Newton's).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
from numba import typeof

import rbdiff as _rbd

from ..cpu import background
from ..kernels.compile_clock import seconds as compile_seconds
from . import curvature
from .riccati import backward_pass, backward_pass_fddp
from .rollout import CONTACT, IMPULSE

REG_MIN, REG_MAX = 1e-9, 1e9
ALPHAS = 0.5 ** np.arange(11)
ARMIJO = 1e-4


@dataclass
class Result:
    """xs (T+1, nq+nv), us (T, nv), cost, iterations, converged, history (one dict per
    iteration: cost, alpha, reg, expected change, second_order: whether the step used
    the dynamics' curvature), timings (seconds in derivatives, backward pass and line
    search, summed over iterations, Numba compilation left out; "compile": the seconds a
    first solve spent compiling within them), method."""
    xs: np.ndarray
    us: np.ndarray
    cost: float
    iterations: int
    converged: bool
    method: str
    history: list = field(default_factory=list)
    timings: dict = field(default_factory=dict)
    forces: np.ndarray = None       # FDDP: each knot's contact forces / impulses (T, ncmax)
    # FDDP: the last backward pass's feedback gains (T, nu, 2 nv), at the iterate it was
    # taken at (before that iteration's step, as Crocoddyl's solver.K): the policy
    # u = us[t] + gains[t] (x (-) xs[t]) of an MPC's inner loop
    gains: np.ndarray = None

    def shift(self):
        """(xs, us) warm start for the next MPC step: drop the first knot, repeat the last
        control (and its state)."""
        return (np.concatenate([self.xs[1:], self.xs[-1:]]),
                np.concatenate([self.us[1:], self.us[-1:]]))


def rollout_cost(prob, us):
    """Total cost of controls us (T, nu) from prob.x0 (Crocoddyl's conventions: the
    ShootingProblem's calc on its rollout)."""
    us = np.asarray(us, dtype=float)
    if us.shape != (prob.T, prob.nu) or not np.isfinite(us).all():
        raise ValueError(f"us: expected ({prob.T}, {prob.nu}) finite, got {us.shape}")
    return prob.rollout_cost(us)


def _initial_controls(prob, xs, us):
    if us is not None:
        us = np.array(us, dtype=float)
        if us.shape != (prob.T, prob.nv) or not np.isfinite(us).all():
            raise ValueError(f"us: expected ({prob.T}, {prob.nv}) finite, got {us.shape}")
        return prob.clamp(us)
    if xs is not None:          # quasi-static controls along the given states
        xs = np.asarray(xs, dtype=float)
        if xs.shape != (prob.T + 1, prob.nq + prob.nv):
            raise ValueError(f"xs: expected ({prob.T + 1}, {prob.nq + prob.nv}), got "
                             f"{xs.shape}")
        return prob.clamp(prob.quasi_static(xs[:-1, :prob.nq]))
    q0 = np.broadcast_to(prob.x0[:prob.nq], (prob.T, prob.nq))
    return prob.clamp(prob.quasi_static(np.ascontiguousarray(q0)))


def backward_pass_signature(prob):
    """The argument types solve() calls backward_pass with (the same for ilqr and ddp:
    both pass empty (T, 0, 0, 0) tensors and contract=True); tiny arrays, as types
    ignore shapes."""
    z = np.zeros
    nv, m = prob.nv, prob.model
    args = (z((1, nv, nv)),) * 3 + (z((1, 2 * nv)), z((1, nv)), z((1, 2 * nv, 2 * nv)),
                                    z((1, nv, nv)), REG_MIN, prob.dt, True, False) \
        + (z((1, nv, nv, nv)),) * 4 + (z((1, nv)), prob._lo, prob._hi, z((1, nv)),
                                        z((1, nv, 2 * nv)), m.mi, m.mf, z((1, prob.nq)),
                                        z((1, nv)), z((1, nv)), z((1, nv, nv)), True)
    return tuple(typeof(a) for a in args)


def _prefetch(prob, ddp):
    """On a cold cache, start compiling in a background child what this solve needs
    after its derivatives (the backward pass, DDP's contraction kernel included), so
    that a first solve compiles on two cores: {"backward": job} (with a wait()), empty
    when the pass is compiled or cached already."""
    sig = backward_pass_signature(prob)
    if backward_pass.overloads or background._cached(backward_pass, sig) is not False:
        return {}
    # urgent: the solve waits for it (at nice 10 a busy machine starves the child)
    jobs = {"backward": background._spawn(backward_pass, sig, urgent=True)}
    return {k: j for k, j in jobs.items() if j is not None}


def _wait(jobs, name):
    """Wait for the background job ``name`` (if any) before the call that needs it: its
    compile is under way, so waiting costs less than compiling it again here. The wait
    is compilation: it counts on jobs["waited"] (seconds), which _compiling reads."""
    job = jobs.pop(name, None)
    if job is None:
        return
    t = time.perf_counter()
    job.wait()
    jobs["waited"] = jobs.get("waited", 0.0) + time.perf_counter() - t


def _compiling(jobs):
    """Seconds of compilation so far: this process's Numba compiles and its waits for the
    background children's."""
    return compile_seconds() + jobs.get("waited", 0.0)


def solve(prob, method=None, xs=None, us=None, max_iter=200, tol=1e-9, reg=REG_MIN,
          curvature="value", callback=None, **options):
    """Solve ``prob`` (a trajopt.Problem) by "ddp", "ilqr", "fddp" or "al"; None: "al"
    on a problem with constraints, "ddp" otherwise.

    al (a problem with constraints, Problem(..., constraints=...)): the
    augmented-Lagrangian FDDP of constrained.py (its ``options``: feas_tol, rho,
    multipliers, second_order), from the warm start as fddp's; a ConstrainedResult; raises
    constrained.Infeasible when the constraints cannot be met. The other methods refuse
    a problem with constraints.

    ddp / ilqr (simple problems: vector-space joints, free knots, u = tau): from
    controls ``us`` (T, nv), or quasi-static controls along states ``xs`` (T+1, nq+nv),
    or (neither) the gravity torques at x0. ``curvature`` (DDP): contract the dynamics'
    second derivatives with V_x' ("value", classical DDP) or with the open-loop costate
    ("costate": Pantoja's stagewise Newton, whose step is Newton's step on the controls;
    the two agree at a solution).

    fddp (every problem: floating bases, contact and impulse knots): Crocoddyl's
    SolverFDDP (solve_fddp) from the states ``xs`` (T+1, nq+nv; default x0 at every
    knot: an infeasible warm start is fine) and controls ``us`` (T, nu; default the
    quasi-static ones along xs). ddp on such a problem: the same solver, its backward
    pass with the exact curvature of lambda'.f added at every knot (trajopt/curvature.py;
    the cost's Gauss-Newton Hessian plus the residual curvature of the terms that have
    one), its warm start and result as fddp's.

    Returns a Result; ``callback(iteration, result_so_far)`` is called after each
    iteration."""
    constrained = getattr(prob, "constraints", None) is not None
    if method == "al" or (method is None and constrained):
        from .constrained import solve_al       # (it imports this module)
        return solve_al(prob, xs, us, max_iter, tol, reg, callback, **options)
    if options:
        raise TypeError(f"solve: unexpected options {sorted(options)} (method 'al''s)")
    if constrained:
        raise ValueError(f"method {method!r} ignores the problem's constraints: use "
                         "method='al' (the default on a problem with constraints; "
                         "second_order=True for DDP's curvature)")
    method = "ddp" if method is None else method
    if method == "fddp":
        return solve_fddp(prob, xs, us, max_iter, tol, reg, callback)
    if method not in ("ddp", "ilqr"):
        raise ValueError(f"method: expected 'ddp', 'ilqr', 'fddp' or 'al', got "
                         f"{method!r}")
    if curvature not in ("value", "costate"):
        raise ValueError(f"curvature: expected 'value' or 'costate', got {curvature!r}")
    if not prob.simple:
        if method == "ddp":         # FDDP's pass and line search, the exact curvature added
            return solve_fddp(prob, xs, us, max_iter, tol, reg, callback,
                              second_order=True, costate=curvature == "costate")
        raise ValueError(f"method {method!r} handles fixed-base problems with "
                         "vector-space joints, free knots and u = tau; this problem has a "
                         "floating base, spherical joints, contacts or underactuation: use "
                         "method='fddp' or 'ddp'")
    ddp = method == "ddp"
    reg = float(reg)                 # backward_pass's signature (backward_pass_signature)
    jobs = _prefetch(prob, ddp)      # before anything compiles: a cold first solve
    u = _initial_controls(prob, xs, us)
    # DDP: the rollouts keep each knot's acceleration, where the contraction is taken
    acc = np.empty((prob.T, prob.nv)) if ddp else np.empty((0, prob.nv))
    acc_trial = np.empty_like(acc)
    try:
        q, v = prob.rollout(u, acc if ddp else None)
    except ValueError as e:
        raise ValueError(f"the initial rollout fails ({e}): give other initial "
                         "controls") from None
    J = prob.cost(q, v, u)
    if not np.isfinite(J):
        raise ValueError("the initial rollout diverges (non-finite cost): give other "
                         "initial controls")
    T, nv = prob.T, prob.nv
    k_ff, K_fb = np.zeros((T, nv)), np.zeros((T, nv, 2 * nv))
    empty = np.zeros((T, 0, 0, 0))
    curved = ddp and prob.curved
    H = np.zeros((T + 1, nv, nv) if curved else (0, nv, nv))
    timings = dict(derivatives=0.0, backward=0.0, line_search=0.0, compile=0.0)
    history, converged, it = [], False, 0
    for it in range(1, max_iter + 1):
        t0, c0 = time.perf_counter(), _compiling(jobs)
        Pq, Pv, Pu, _ = prob.dynamics_blocks(q, v, u)
        # DDP: the residuals' curvature comes with the derivatives (one frame pass); the
        # pass adds it to l_xx when it takes the second-order step
        if curved:
            H[:] = 0.0
        lx, lu, lxx, luu = prob.cost_derivatives(q, v, u, curvature=H if curved else None)
        t1, c1 = time.perf_counter(), _compiling(jobs)
        second = ddp
        _wait(jobs, "backward")
        while True:
            knot, d1, d2 = backward_pass(Pq, Pv, Pu, lx, lu, lxx, luu, reg, prob.dt, second,
                                         curvature == "costate", empty, empty, empty,
                                         empty, u, prob._lo, prob._hi, k_ff, K_fb,
                                         prob.model.mi, prob.model.mf, q, v, acc, H, True)
            if knot < 0:
                break
            if second:      # the second-order model is not convex here: this iteration
                second = False      # takes the Gauss-Newton step (safeguarded Newton)
                continue
            if reg >= REG_MAX:
                raise RuntimeError(f"{method}: Q_uu not positive definite at knot {knot} "
                                   f"even with regularisation {REG_MAX:g}")
            reg = min(reg * 10, REG_MAX)
        t2, c2 = time.perf_counter(), _compiling(jobs)
        if -(d1 + d2) < tol:            # a full step would change the cost by < tol
            converged = True
            _add(timings, (t0, t1, t2), (c0, c1, c2))
            history.append(dict(cost=J, alpha=0.0, reg=reg, expected=d1 + d2,
                                second_order=second))
            break
        accepted = None
        for alpha in ALPHAS:
            try:
                qn, vn, un = prob.closed_loop(q, v, u, k_ff, K_fb, alpha,
                                              acc_trial if ddp else None)
            except ValueError:          # the trial's dynamics blew up: a shorter step
                continue
            Jn = prob.cost(qn, vn, un)
            if np.isfinite(Jn) and Jn - J <= ARMIJO * (alpha * d1 + alpha * alpha * d2):
                accepted = alpha
                break
        _add(timings, (t0, t1, t2, time.perf_counter()), (c0, c1, c2, _compiling(jobs)))
        if accepted is None:
            history.append(dict(cost=J, alpha=0.0, reg=reg, expected=d1 + d2,
                                second_order=second))
            if reg >= REG_MAX:
                break
            reg = min(reg * 10, REG_MAX)
        else:
            q, v, u, J = qn, vn, un, Jn
            acc, acc_trial = acc_trial, acc
            history.append(dict(cost=J, alpha=accepted, reg=reg, expected=d1 + d2,
                                second_order=second))
            reg = max(reg / 10, REG_MIN)
        if callback is not None:
            callback(it, _result(prob, q, v, u, J, it, False, method, history, timings))
    return _result(prob, q, v, u, J, it, converged, method, history, timings)


def _add(timings, t, c):
    """Add the phases' seconds (clock readings t, compile-clock readings c at their
    bounds) to timings, compilation apart: a first solve's compile is not compute."""
    for k, name in enumerate(("derivatives", "backward", "line_search")[:len(t) - 1]):
        compiling = c[k + 1] - c[k]
        timings[name] += t[k + 1] - t[k] - compiling
        timings["compile"] += compiling


def _result(prob, q, v, u, J, it, converged, method, history, timings, forces=None,
            gains=None):
    return Result(np.concatenate([q, v], axis=1), u.copy(), float(J), it, converged, method,
                  list(history), dict(timings),
                  None if forces is None else forces.copy(),
                  None if gains is None else gains.copy())


# ---- FDDP ------------------------------------------------------------------------------

TH_ACCEPTSTEP, TH_ACCEPTNEGSTEP, TH_GRAD = 0.1, 2.0, 1e-12
TH_STEPDEC, TH_STEPINC = 0.5, 0.01
FDDP_ALPHAS = 0.5 ** np.arange(10)
# ddp on FDDP's problems: after a second-order pass found its model not convex, the
# next 1, 2, 4, 4, ... iterations (consecutive failures) take FDDP's pass without trying
# (far from a solution the model stays indefinite: each try's contractions are wasted)
BACKOFF_MAX = 4
SWITCH = 1e-3


def _tangent(prob, qa, va, qb, vb):
    """(qb, vb) (-) (qa, va) per knot: (K, 2nv)."""
    d = np.empty((qa.shape[0], 2 * prob.nv))
    d[:, :prob.nv] = _rbd.difference(prob.model, np.ascontiguousarray(qa),
                                     np.ascontiguousarray(qb))
    d[:, prob.nv:] = vb - va
    return d


def _gaps(prob, q, v, qx, vx):
    """fs (T+1, 2nv): fs_0 = x0 (-) x_0, fs_{t+1} = f(x_t, u_t) (-) x_{t+1}."""
    nq = prob.nq
    fs = np.empty((prob.T + 1, 2 * prob.nv))
    fs[:1] = _tangent(prob, q[:1], v[:1], prob.x0[None, :nq], prob.x0[None, nq:])
    fs[1:] = _tangent(prob, q[1:], v[1:], qx, vx)
    return fs


def _warm_start(prob, xs, us):
    T, nq, nv, nu = prob.T, prob.nq, prob.nv, prob.nu
    if xs is None:
        xs = np.broadcast_to(prob.x0, (T + 1, nq + nv))
    xs = np.array(xs, dtype=float)
    if xs.shape != (T + 1, nq + nv) or not np.isfinite(xs).all():
        raise ValueError(f"xs: expected ({T + 1}, {nq + nv}) finite, got {xs.shape}")
    q, v = np.ascontiguousarray(xs[:, :nq]), np.ascontiguousarray(xs[:, nq:])
    if us is None:
        us = prob.quasi_static_controls(q)
    us = np.array(us, dtype=float)
    if us.shape != (T, nu) or not np.isfinite(us).all():
        raise ValueError(f"us: expected ({T}, {nu}) finite, got {us.shape}")
    return q, v, prob.clamp(us)


def _quadratic(a, M, b):
    """sum_t a_t . M_t b_t (matmul: a three-operand einsum loops without BLAS, ~10x
    slower)."""
    return float(np.einsum("ti,ti->", a, (M @ b[:, :, None])[:, :, 0]))


def solve_fddp(prob, xs=None, us=None, max_iter=200, tol=1e-9, reg=REG_MIN, callback=None,
               second_order=False, costate=False, local=False, shot=None,
               feasible=False):
    """Crocoddyl's feasibility-driven DDP (SolverFDDP::solve, Mastalli et al. 2020), step
    for step: the knots of the warm start (xs, us) are shot one by one (multiple
    shooting), their gaps fs closed by the forward pass (x_t = x_next (+) (alpha - 1) fs_t
    while infeasible, a rollout once a full step was taken); the backward pass
    (riccati.backward_pass_fddp) with reg on Q_uu and V_xx; the expected improvement with
    the gaps' terms (d1 = dg + dv, d2 = dq - 2 dv); a trial alpha = 1, 1/2, ..., 2^-9 is
    accepted when its cost reduction exceeds 0.1 of the expected one, or (while
    infeasible, the expected one negative) exceeds 2 times it; reg /10 after a step above
    1/2, x10 after one at or below 0.01; stops when a step was taken from a feasible
    trajectory (Crocoddyl's was_feasible) and |d1 + d2 / 2| < tol. ``history[i]``: cost,
    alpha (0: no step accepted), reg, expected (d1 + d2 / 2: the expected reduction of a
    full step, Crocoddyl's sign, the opposite of ilqr's expected change), gap (the
    largest gap entry before the step), feasible; "stop" where it gave up (regularisation
    at its bound). Result.iterations counts the iterations run (Crocoddyl's ``iter`` + 1
    when it converges). Control bounds (Problem's u_lower / u_upper; none in
    Crocoddyl's FDDP) as Crocoddyl's SolverBoxFDDP: from a feasible trajectory a box QP
    per knot in the backward pass (riccati._gains, boxqp.py), the plain gains while gaps
    remain, clamping in the rollout; a warm start without gaps counts as feasible from
    the first iteration.

    ``second_order`` (solve's "ddp" on these problems): the backward pass adds the
    dynamics' exact curvature contracted with the next knot's costate (V_x' + V_xx' gap,
    or with ``costate`` the open-loop costate) and the forces' contracted with the force
    terms' gradient (curvature.backward_pass_ddp), from the first iteration whose
    predecessor expected a reduction of at most SWITCH x |cost| (the local phase, where
    Newton's step pays: anymal walking 12 iterations against FDDP's 14, 2 of them
    second-order); where that model's Q_uu is not
    positive definite the iteration takes FDDP's Gauss-Newton pass instead (as ddp on
    simple problems does), whose own failure raises reg, and the next 1, 2, 4, 4, ...
    iterations (BACKOFF_MAX; by consecutive failures, reset by a success) take it without
    trying; ``history[i]["second_order"]`` says which. ``local``: the warm start is
    already in the local phase (an MPC tick from the previous tick's solution): the
    exact curvature from the first iteration. ``shot``: (q' (T, nq), v' (T, nv), forces
    (T, ncmax)) of the warm start's knots (Problem.shoot's), when the caller has them
    from the rollout that made xs (an MPC's warm start): not computed again.
    ``feasible``: the warm start is a rollout (no gaps; Crocoddyl's solve(...,
    is_feasible)): it may stop at once."""
    T, nv, nu = prob.T, prob.nv, prob.nu
    nx = 2 * nv
    reg = float(reg)
    name = "ddp" if second_order else "fddp"
    if second_order:        # refused at once, not at the first second-order try
        for kind, label in ((CONTACT, "contact"), (IMPULSE, "impulse")):
            if np.any(prob.kind == kind):
                curvature._needed(label)
    q, v, u = _warm_start(prob, xs, us)
    # the rollouts' contact solves, which the derivatives at an accepted trial reuse
    solves = prob.kept()
    try:
        qx, vx, forces = prob.shoot(q, v, u, solves) if shot is None else shot
    except ValueError as e:
        raise ValueError(f"fddp: the warm start's dynamics fail ({e}): give other xs / "
                         "us") from None
    # with a caller's shot (an MPC tick) the warm start's cost comes with the first
    # iteration's derivatives (their terms compute it on the way): one pass fewer
    J = prob.cost(q, v, u, forces) if shot is None else None
    if J is not None and not np.isfinite(J):
        raise ValueError("fddp: the warm start's cost is not finite")
    k_ff, K_fb = np.zeros((T, nu)), np.zeros((T, nu, nx))
    _no_lxu = np.zeros((T, 0, 0))       # no cross term: the pass skips it (one signature)
    Vx, Vxx = np.zeros((T + 1, nx)), np.zeros((T + 1, nx, nx))
    no_gaps = np.zeros((T + 1, nx))
    timings = dict(derivatives=0.0, backward=0.0, line_search=0.0, compile=0.0)
    history, converged, it = [], False, 0
    feasible = was_feasible = bool(feasible)
    recalc = True
    # ddp: the contact knots' first-order dynamics derivatives, kept for the contractions
    first = np.zeros((T, 3, nv + max(prob.ncmax, 1), nv)) if second_order else None
    # ddp: the residuals' curvature (FDDP's l_xx stays Gauss-Newton's: it is added to a
    # copy only for the second-order pass)
    curved = second_order and prob.curved
    H = np.zeros((T + 1, nv, nv)) if curved else None
    backoff = wait = 0
    stop = 0.0 if local else np.inf
    for it in range(1, max_iter + 1):
        t0, c0 = time.perf_counter(), compile_seconds()
        # the exact model only in the local phase: far from the optimum it is mostly
        # indefinite, and a failed try costs a pass of contractions for nothing
        second = second_order and wait == 0 and stop <= SWITCH * max(abs(J or 0.0), 1.0)
        wait = max(wait - 1, 0)
        if recalc:
            # the gaps are read only while infeasible (a feasible iterate is a rollout)
            fs = _gaps(prob, q, v, qx, vx) if not feasible else no_gaps
            if it == 1 and not fs.any():
                # a warm start without gaps (a rollout: a previous solution) is feasible
                # from the start: the box QP holds the bounds at once, and it may stop
                feasible = was_feasible = True
            # the contact knots' first-order blocks and the residuals' curvature only
            # for a second-order try
            if curved and second:
                H[:] = 0.0
            total = [] if J is None else None
            # let go of the last iterate's first: cpu/outputs.py then hands its blocks
            # out again (held, integrate's Jacobians took a fresh block every iteration)
            parts = lx = lu = lxx = luu = lxu = None
            parts, lx, lu, lxx, luu, lxu = prob.derivative_parts(q, v, u, vx, forces,
                                                                 first if second else None,
                                                                 H if second else None,
                                                                 total, solves)
            if J is None:
                J = total[0]
                if not np.isfinite(J):
                    raise ValueError("fddp: the warm start's cost is not finite")
            kept = second
            lxx_newton = None
        # no new step (recalc False): a try needs the residual curvature of this iterate,
        # computed only where the derivatives were taken for a try
        second = second and (kept or not curved)
        t1, c1 = time.perf_counter(), compile_seconds()
        while True:
            if second:
                if curved and lxx_newton is None:
                    lxx_newton = lxx.copy()
                    lxx_newton[:, :nv, :nv] += H
                knot, dg_k, dq_k = curvature.backward_pass_ddp(
                    prob, q, v, u, vx, forces, parts, lx, lu,
                    lxx if lxx_newton is None else lxx_newton, luu, lxu, fs, reg,
                    feasible, k_ff, K_fb, Vx, Vxx, costate, first if kept else None)
                if knot < 0:
                    backoff = 0
                    break
                second = False      # not convex here: this iteration's step is FDDP's
                backoff = min(2 * backoff, BACKOFF_MAX) if backoff else min(1, BACKOFF_MAX)
                wait = backoff
                continue
            knot, dg_k, dq_k = backward_pass_fddp(*parts, prob._lie_blocks, lx, lu, lxx,
                                                  luu, _no_lxu if lxu is None else lxu, fs,
                                                  reg, feasible, u, prob._lo, prob._hi,
                                                  k_ff, K_fb, Vx, Vxx)
            if knot < 0:
                break
            reg = min(max(reg * 10, REG_MIN), REG_MAX)     # (from reg = 0 too)
            if reg >= REG_MAX:
                _add(timings, (t0, t1, time.perf_counter()), (c0, c1, compile_seconds()))
                history.append(dict(cost=J, alpha=0.0, reg=reg, expected=np.nan,
                                    gap=float(np.abs(fs).max()), feasible=feasible,
                                    second_order=False,
                                    stop="regularisation at its bound"))
                return _result(prob, q, v, u, J, it, False, name, history, timings,
                               forces, None if it == 1 else K_fb)
        t2, c2 = time.perf_counter(), compile_seconds()
        # Crocoddyl's updateExpectedImprovement (its k is -ours: dg = -sum Q_u.k)
        dg, dq = -dg_k, -dq_k
        if not feasible:
            dg -= np.einsum("ti,ti->", Vx, fs)
            dq += _quadratic(fs, Vxx, fs)
        accepted, alpha = None, 0.0
        d1 = d2 = 0.0
        for alpha in FDDP_ALPHAS:
            gap = 0.0 if (feasible or alpha == 1.0) else alpha - 1.0
            try:
                qn, vn, un, qxn, vxn, fn = prob._run(q, v, u, k_ff, K_fb, alpha, fs, gap,
                                                     keep=solves)
            except ValueError:          # the trial's dynamics failed: a shorter step
                continue
            Jn = prob.cost(qn, vn, un, fn)
            if not np.isfinite(Jn):
                continue
            dv = 0.0
            if not feasible:            # Crocoddyl's expectedImprovement
                dx = _tangent(prob, qn, vn, q, v)          # x_t (-) x_try_t
                dv = -_quadratic(fs, Vxx, dx)
            d1, d2 = dg + dv, dq - 2 * dv
            dV, dVexp = J - Jn, alpha * (d1 + 0.5 * alpha * d2)
            if (dVexp >= 0 and (abs(d1) < TH_GRAD or dV > TH_ACCEPTSTEP * dVexp)) or \
                    (dVexp < 0 and not feasible and dV > TH_ACCEPTNEGSTEP * dVexp):
                accepted = alpha
                break
        t3, c3 = time.perf_counter(), compile_seconds()
        _add(timings, (t0, t1, t2, t3), (c0, c1, c2, c3))
        gap_before = float(np.abs(fs).max()) if not feasible else 0.0
        recalc = accepted is not None
        if recalc:
            was_feasible = feasible
            feasible = was_feasible or alpha == 1.0
            q, v, u, J, qx, vx, forces = qn, vn, un, Jn, qxn, vxn, fn
        if alpha > TH_STEPDEC:
            reg = max(reg / 10, REG_MIN)
        if alpha <= TH_STEPINC:
            reg = min(max(reg * 10, REG_MIN), REG_MAX)
        stop = abs(d1 + 0.5 * d2)
        history.append(dict(cost=J, alpha=accepted or 0.0, reg=reg, expected=d1 + 0.5 * d2,
                            gap=gap_before, feasible=feasible, second_order=second))
        if alpha <= TH_STEPINC and reg >= REG_MAX:
            history[-1]["stop"] = "line search failed with regularisation at its bound"
            break
        if callback is not None:
            callback(it, _result(prob, q, v, u, J, it, False, name, history, timings,
                                 forces))
        if was_feasible and stop < tol:
            converged = True
            break
    return _result(prob, q, v, u, J, it, converged, name, history, timings, forces, K_fb)
