"""Control bounds alone: rbdiff's FDDP with a box on the controls (solve_fddp with the
Problem's u_lower / u_upper: the clamped set in the backward pass, clamping in the
rollout) against Crocoddyl's SolverBoxFDDP (a box QP in its backward pass) on the same
torque-limited problems (issue 40):

- (A)'s panda reach (bench/trajopt.py's reach_problem: T = 100, dt = 0.01), its torques
  limited to 0.8 of the unbounded optimum's largest per joint (the bounds bind);
- Crocoddyl's anymal trot (its own builder against rbdiff.trajopt.gaits, bench/trajopt.py's
  gait_pair), its torques limited to 0.8 of the unbounded optimum's largest per joint.

    python -m rbdiff.bench.trajopt_box [--repeats N]

Needs Crocoddyl 3.2 with pin 4.0.x (the trajopt-bench extra, its own environment). Both
solvers from the same controls (the problem's quasi-static ones, clamped), one thread,
to their own stopping test (1e-9), the median of ``repeats`` interleaved solves.

Measured (2026-11-29, idle 2-core machine, Crocoddyl 3.2.1 / pin 4.0.0; rbdiff's box QP
in the backward pass): panda reach the same optimum (0.1351759802 against 0.1351759799,
220 controls at a bound in both) in 72 iterations against 167, 114 against 395 ms
(0.29x); anymal trot the same optimum (233.0271373, 3.9e-15 apart, 47 at a bound) in 9
iterations against 34, 31 against 162 ms (0.19x). At other limits the two may stop
at different KKT points of the nonconvex reach: at 0.9 of the free torques 0.1047786
against 0.1047803, at 0.95 0.0818 against 0.1485.
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def _bounded(prob, lo, hi):
    """prob with the control box [lo, hi] (a Problem's u_lower / u_upper, set after the
    gait builders made it)."""
    prob.u_lower, prob.u_upper = np.asarray(lo, float), np.asarray(hi, float)
    prob._lo, prob._hi = prob.u_lower, prob.u_upper
    return prob


def _croc_bounded(cp, lo, hi):
    for m in cp.runningModels:
        if m.nu == len(lo):             # impulse models have no control
            m.u_lb, m.u_ub = np.asarray(lo, float), np.asarray(hi, float)
    return cp


def _solve_pair(prob, cp, us0, repeats):
    import crocoddyl

    import rbdiff.trajopt as to
    from .trajopt import crocoddyl_controls
    out = {"rbdiff": [], "crocoddyl": []}
    res = solver = None
    for _ in range(repeats + 1):            # the first: warm-up (compile, caches)
        t0 = time.perf_counter()
        res = to.solve(prob, method="fddp", us=us0, tol=1e-9, max_iter=500)
        t1 = time.perf_counter()
        solver = crocoddyl.SolverBoxFDDP(cp)
        solver.th_stop = 1e-9
        xs0 = [prob.x0] * (prob.T + 1)
        ok = solver.solve(xs0, crocoddyl_controls(prob, prob.clamp(us0)), 500, False)
        t2 = time.perf_counter()
        out["rbdiff"].append(t1 - t0)
        out["crocoddyl"].append(t2 - t1)
    rows = dict(rbdiff=dict(iterations=res.iterations, converged=bool(res.converged),
                            cost=float(res.cost),
                            ms=1e3 * float(np.median(out["rbdiff"][1:]))),
                crocoddyl=dict(iterations=int(solver.iter) + 1, converged=bool(ok),
                               cost=float(solver.cost),
                               ms=1e3 * float(np.median(out["crocoddyl"][1:]))))
    us_c = np.array([u for u in solver.us if len(u)])
    lo, hi = prob._lo, prob._hi
    rows["bound_rows"] = int(np.sum(np.isclose(res.us, lo) | np.isclose(res.us, hi)))
    rows["crocoddyl_bound_rows"] = int(np.sum(np.isclose(us_c, lo) | np.isclose(us_c, hi)))
    rows["cost_gap"] = abs(rows["rbdiff"]["cost"] - rows["crocoddyl"]["cost"]) / abs(
        rows["crocoddyl"]["cost"])
    return rows


def panda_reach(repeats, share=0.8):
    import rbdiff.trajopt as to
    from .anchor import pin_model
    from .trajopt import crocoddyl_problem, reach_problem
    prob = reach_problem()
    free = to.solve(prob, method="fddp", tol=1e-9)
    limit = share * np.abs(free.us).max(axis=0)
    prob = reach_problem()
    _bounded(prob, -limit, limit)
    cp = _croc_bounded(crocoddyl_problem(prob, pin_model("panda", False)), -limit, limit)
    us0 = prob.quasi_static(np.tile(prob.x0[:prob.nq], (prob.T, 1)))
    return dict(limit=limit.tolist(), **_solve_pair(prob, cp, us0, repeats))


def anymal_trot(repeats):
    import rbdiff.trajopt as to
    from .trajopt import gait_pair
    prob, cp, us0 = gait_pair("anymal trotting")
    free = to.solve(prob, method="fddp", us=us0, tol=1e-9)
    limit = 0.8 * np.abs(free.us).max(axis=0)
    _bounded(prob, -limit, limit)
    _croc_bounded(cp, -limit, limit)
    return dict(limit=limit.tolist(), **_solve_pair(prob, cp, us0, repeats))


PROBLEMS = (("panda reach", panda_reach), ("anymal trot", anymal_trot))


def run(repeats=3):
    """Both problems' rows (_solve_pair's, with the problem's name and torque limits)."""
    return [dict(problem=name, **fn(repeats)) for name, fn in PROBLEMS]


def report(rows):
    """The markdown table of run's rows: each solver's iterations, cost and time, then
    the cost gap and rbdiff / BoxFDDP time."""
    from . import report as rp
    body = []
    for r in rows:
        for who, key, b in (("rbdiff FDDP + box QP", "rbdiff", "bound_rows"),
                            ("Crocoddyl BoxFDDP", "crocoddyl", "crocoddyl_bound_rows")):
            x = r[key]
            body.append([r["problem"], who, str(x["iterations"]),
                         "yes" if x["converged"] else "no", f"{x['cost']:.10g}",
                         f"{x['ms']:.1f}", str(r[b])])
        body.append([r["problem"], "rbdiff / BoxFDDP", "", "",
                     f"cost rel. diff {r['cost_gap']:.1e}",
                     f"{r['rbdiff']['ms'] / r['crocoddyl']['ms']:.2f}x", ""])
    return rp.md_table(["problem", "solver", "iterations", "converged", "cost",
                        "ms to convergence", "controls at a bound"], body)


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m rbdiff.bench.trajopt_box",
                                description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args(argv)
    from .trajopt import crocoddyl_ok
    if not crocoddyl_ok():
        print("needs Crocoddyl 3.2 with pin 4.0.x (pip install 'rbdiff[trajopt-bench]' in "
              "an environment of its own)")
        return 1
    print(report(run(args.repeats)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
