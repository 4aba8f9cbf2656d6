"""iLQR and DDP (Tassa, Mansard & Todorov 2014's regularisation and line search; DDP's
second-order dynamics terms from rbdiff's second-order kernels, Nganga & Wensing 2021).

One iteration: the derivatives of the whole horizon (one batched aba_derivatives call;
the cost terms batched), the compiled backward pass (riccati.py; for DDP it contracts
the dynamics' second derivatives with the costate at each knot, O(N d) a knot, without
forming the tensors: kernels/contraction.py), then a forward pass with backtracking
alpha = 1, 1/2, ..., 2^-10 accepted on Armijo's condition
J(alpha) - J <= 1e-4 (alpha d1 + alpha^2 d2) (the expected change). Regularisation of
Q_uu: x10 on a failed backward pass or line search, /10 on success, within [1e-9, 1e9].
DDP is safeguarded: where the second-order model is not convex (a Q_uu of the pass not
positive definite: far from a solution, with large costates) that iteration takes the
Gauss-Newton step instead of raising the regularisation, which would stall it
(``history[i]["second_order"]`` says which). Stops when the expected change of a full
step is below ``tol``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
from numba import typeof

from ..cpu import background
from ..kernels.compile_clock import seconds as compile_seconds
from .riccati import backward_pass

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

    def shift(self):
        """(xs, us) warm start for the next MPC step: drop the first knot, repeat the last
        control (and its state)."""
        return (np.concatenate([self.xs[1:], self.xs[-1:]]),
                np.concatenate([self.us[1:], self.us[-1:]]))


def rollout_cost(prob, us):
    """Total cost of controls us (T, nv) from prob.x0 (Crocoddyl's conventions)."""
    us = np.asarray(us, dtype=float)
    if us.shape != (prob.T, prob.nv):
        raise ValueError(f"us: expected ({prob.T}, {prob.nv}), got {us.shape}")
    q, v = prob.rollout(prob.clamp(us))
    return prob.cost(q, v, prob.clamp(us))


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
                                        z((1, nv)), True)
    return tuple(typeof(a) for a in args)


def _prefetch(prob, ddp):
    """On a cold cache, start compiling in a background child what this solve needs
    after its derivatives (the backward pass, DDP's contraction kernel included), so
    that a first solve compiles on two cores: {"backward": job} (with a wait()), empty
    when the pass is compiled or cached already."""
    sig = backward_pass_signature(prob)
    if backward_pass.overloads or background._cached(backward_pass, sig) is not False:
        return {}
    jobs = {"backward": background._spawn(backward_pass, sig)}
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


def solve(prob, method="ddp", xs=None, us=None, max_iter=200, tol=1e-9, reg=REG_MIN,
          curvature="value", callback=None):
    """Solve ``prob`` (a trajopt.Problem) by "ddp" or "ilqr" from controls ``us`` (T, nv),
    or quasi-static controls along states ``xs`` (T+1, nq+nv), or (neither) the gravity
    torques at x0. ``curvature`` (DDP): contract the dynamics' second derivatives with
    V_x' ("value", classical DDP) or with the open-loop costate ("costate": Pantoja's
    stagewise Newton, whose step is Newton's step on the controls; the two agree at a
    solution). Returns a Result; ``callback(iteration, result_so_far)`` is called after
    each iteration."""
    if method not in ("ddp", "ilqr"):
        raise ValueError(f"method: expected 'ddp' or 'ilqr', got {method!r}")
    if curvature not in ("value", "costate"):
        raise ValueError(f"curvature: expected 'value' or 'costate', got {curvature!r}")
    ddp = method == "ddp"
    reg = float(reg)                 # backward_pass's signature (backward_pass_signature)
    jobs = _prefetch(prob, ddp)      # before anything compiles: a cold first solve
    u = _initial_controls(prob, xs, us)
    try:
        q, v = prob.rollout(u)
    except ValueError as e:
        raise ValueError(f"the initial rollout diverges ({e}): give other initial "
                         "controls") from None
    J = prob.cost(q, v, u)
    if not np.isfinite(J):
        raise ValueError("the initial rollout diverges (non-finite cost): give other "
                         "initial controls")
    T, nv = prob.T, prob.nv
    k_ff, K_fb = np.zeros((T, nv)), np.zeros((T, nv, 2 * nv))
    empty = np.zeros((T, 0, 0, 0))
    timings = dict(derivatives=0.0, backward=0.0, line_search=0.0, compile=0.0)
    history, converged, it = [], False, 0
    for it in range(1, max_iter + 1):
        t0, c0 = time.perf_counter(), _compiling(jobs)
        Pq, Pv, Pu, _ = prob.dynamics_blocks(q, v, u)
        lx, lu, lxx, luu = prob.cost_derivatives(q, v, u)
        t1, c1 = time.perf_counter(), _compiling(jobs)
        second = ddp
        _wait(jobs, "backward")
        while True:
            knot, d1, d2 = backward_pass(Pq, Pv, Pu, lx, lu, lxx, luu, reg, prob.dt, second,
                                         curvature == "costate", empty, empty, empty,
                                         empty, u, prob._lo, prob._hi, k_ff, K_fb,
                                         prob.model.mi, prob.model.mf, q, v, True)
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
                qn, vn, un = prob.closed_loop(q, v, u, k_ff, K_fb, alpha)
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


def _result(prob, q, v, u, J, it, converged, method, history, timings):
    return Result(np.concatenate([q, v], axis=1), u.copy(), float(J), it, converged, method,
                  list(history), dict(timings))
