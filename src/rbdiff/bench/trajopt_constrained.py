"""rbdiff's constrained solver (trajopt/constrained.py: augmented-Lagrangian FDDP)
against mim-solvers' CSQP on the same gait problems (issue 40): Crocoddyl's gaits with
the friction cone (mu 0.7, Crocoddyl's 4-facet outer pyramid, f_n >= 0) or the biped's
wrench cone, and the torque limits (the URDF's effort limits), as constraints instead
of the cone cost; every other cost term Crocoddyl's.

    python -m rbdiff.bench.trajopt_constrained [gait ...]     (e.g. anymal_walking)

Needs Crocoddyl 3.2 with pin 4.0.x and mim-solvers 0.3, in an environment of their own
(pip install 'rbdiff[constrained-bench]'). Both from x0 at
every knot and Crocoddyl's quasi-static controls along x0, one thread, CSQP with
termination_tolerance 1e-3 (its default stalls, issue 40), rbdiff with its defaults
(inner tol 1e-9, violation and complementarity <= 1e-6); the median of ``repeats``
interleaved solves after a warm-up. The violation of either solution is rbdiff's
ConstraintSet's on its states and controls (the forces recomputed by the knots' contact
dynamics), in newtons or newton metres.

Measured (2026-11-29, idle 2-core machine, the two solvers interleaved; rbdiff / CSQP
iterations, time to convergence, CSQP's at termination_tolerance 1e-3): the same optimum
(cost within 1.6e-7 relative, rbdiff's the lower where CSQP does not stop); anymal
walking 24 / 7 (171 / 325 ms, 0.53x), anymal trotting 10 / 5 (35 / 75 ms, 0.46x), solo12
trotting 27 / 7 (103 / 186 ms, 0.56x); CSQP does not stop within 200 iterations on
anymal jumping, talos_legs walking and solo12 walking, where rbdiff converges in 24, 37
and 53 (0.03x, 0.07x, 0.01x its time); worst violation rbdiff <= 1e-6, CSQP up to
2.9e-6 at its tolerance.
"""

from __future__ import annotations

import time

import numpy as np

import rbdiff.trajopt as to
from rbdiff.bench import report as rp
from rbdiff.bench.trajopt import (GAITS, crocoddyl_controls_list, gait_pair,
                                  interleaved_solves)

CONSTRAINED_GAITS = dict(GAITS)
CONSTRAINED_GAITS.pop("hyq walking")
CONSTRAINED_GAITS["solo12 trotting"] = ("solo12", "trotting", (0.15, 0.1, 1e-2, 25, 2))
CONSTRAINED_GAITS["solo12 walking"] = ("solo12", "walking", (0.25, 0.25, 1e-2, 25, 2))
TERMINATION_TOLERANCE = 1e-3


def constrained_pair(name):
    """(rbdiff Problem with constraints, Crocoddyl ShootingProblem with the same
    constraints, warm-start controls (T, nu)) of gait ``name`` (CONSTRAINED_GAITS)."""
    prob, cp, us = gait_pair(name, CONSTRAINED_GAITS, constrained=True)
    model, robot = prob.model, CONSTRAINED_GAITS[name][0]
    import example_robot_data as erd
    pm = erd.load(robot).model
    effort = np.asarray(model.effort_limits[6:])
    if not np.allclose(effort, pm.effortLimit[6:]):
        raise AssertionError(f"{robot}: rbdiff's effort limits differ from Pinocchio's")
    return prob, _with_constraints(cp, 0.7, effort), us


def _with_constraints(cp, mu, effort):
    """cp's knots with their cone cost terms replaced by constraints on the same cones
    (ResidualModelContactFrictionCone / WrenchCone as ConstraintModelResidual within the
    cone's lb, ub) and the controls within +-effort; the impulse and terminal knots as
    they are."""
    import crocoddyl
    running = []
    for m in cp.runningModels:
        if not isinstance(m, crocoddyl.IntegratedActionModelEuler):
            running.append(m)
            continue
        d = m.differential
        state, nu = d.state, d.nu
        costs = d.costs
        for key in list(costs.costs.todict()):
            if key.endswith("_frictionCone") or key.endswith("_wrenchCone"):
                costs.removeCost(key)
        cons = crocoddyl.ConstraintModelManager(state, nu)
        for key, item in d.contacts.contacts.todict().items():
            c = item.contact
            if isinstance(c, crocoddyl.ContactModel6D):
                cone = crocoddyl.WrenchCone(np.eye(3), mu, np.array([0.1, 0.05]))
                r = crocoddyl.ResidualModelContactWrenchCone(state, c.id, cone, nu)
            else:
                cone = crocoddyl.FrictionCone(np.eye(3), mu, 4, False)
                r = crocoddyl.ResidualModelContactFrictionCone(state, c.id, cone, nu)
            cons.addConstraint(key + "_cone", crocoddyl.ConstraintModelResidual(
                state, r, cone.lb, cone.ub))
        cons.addConstraint("torques", crocoddyl.ConstraintModelResidual(
            state, crocoddyl.ResidualModelControl(state, nu), -effort, effort))
        dam = crocoddyl.DifferentialActionModelContactFwdDynamics(
            state, d.actuation, d.contacts, costs, cons, 0.0, True)
        running.append(crocoddyl.IntegratedActionModelEuler(dam, m.dt))
    return crocoddyl.ShootingProblem(cp.x0, running, cp.terminalModel)


def _violation(prob, xs, us):
    """rbdiff's worst constraint violation and cost of a trajectory (xs (T+1, nx), us
    (T, nu)): the forces by its knots' contact dynamics."""
    xs, us = np.asarray(xs, dtype=float), np.asarray(us, dtype=float)
    q = np.ascontiguousarray(xs[:, :prob.nq])
    v = np.ascontiguousarray(xs[:, prob.nq:])
    _, _, f = prob.shoot(q, v, us)
    cs = prob.constraints
    worst, _, where = cs.report(cs.residuals(q, v, us, f))
    return worst, where, float(prob.cost(q, v, us, f))


def _rbdiff(prob, us, max_iter=200):
    t0 = time.perf_counter()
    r = to.solve(prob, xs=np.tile(prob.x0, (prob.T + 1, 1)), us=us, max_iter=max_iter)
    wall = time.perf_counter() - t0
    viol, where, cost = _violation(prob, r.xs, r.us)
    return dict(iterations=r.iterations, converged=r.converged, cost=cost,
                per_iter_s=wall / max(r.iterations, 1), total_s=wall, violation=viol,
                where=where, outer=r.outer)


def _csqp(prob, cp, us, max_iter=200):
    import mim_solvers
    cp.nthreads = 1
    s = mim_solvers.SolverCSQP(cp)
    s.termination_tolerance = TERMINATION_TOLERANCE
    s.with_callbacks = False
    cu = crocoddyl_controls_list(cp, us)
    t0 = time.perf_counter()
    ok = s.solve([prob.x0] * (cp.T + 1), cu, max_iter, False)
    wall = time.perf_counter() - t0
    uo = np.array([np.asarray(u) if len(u) else np.zeros(prob.nu) for u in s.us])
    viol, where, cost = _violation(prob, np.array(s.xs), uo)
    return dict(iterations=s.iter, converged=bool(ok), cost=cost, cost_croc=float(s.cost),
                per_iter_s=wall / max(s.iter, 1), total_s=wall, violation=viol,
                where=where)


def run(names=tuple(CONSTRAINED_GAITS), repeats=3):
    rows = []
    for name in names:
        prob, cp, us = constrained_pair(name)
        solvers = {"rbdiff": lambda: _rbdiff(prob, us), "CSQP": lambda: _csqp(prob, cp, us)}
        row = dict(gait=name, T=prob.T, **interleaved_solves(solvers, repeats))
        row["cost_rel"] = (row["rbdiff"]["cost"] - row["CSQP"]["cost"]) / \
            abs(row["CSQP"]["cost"])
        rows.append(row)
    return rows


def report(rows):
    head = ["gait", "T", "solver", "iterations (converged)", "ms / it", "total ms", "cost",
            "worst violation", "rbdiff / CSQP time"]
    body = []
    for r in rows:
        a, c = r["rbdiff"], r["CSQP"]
        for k, x in (("rbdiff AL-FDDP", a), ("CSQP (tol 1e-3)", c)):
            body.append([r["gait"], str(r["T"]), k,
                         f"{x['iterations']} ({'yes' if x['converged'] else 'no'})",
                         f"{x['per_iter_s'] * 1e3:.2f}", f"{x['total_s'] * 1e3:.0f}",
                         f"{x['cost']:.6g}", f"{x['violation']:.1e}",
                         f"{a['total_s'] / c['total_s']:.2f}" if x is a else
                         f"cost rel. diff {r['cost_rel']:+.1e}"])
    return rp.md_table(head, body)


if __name__ == "__main__":
    import sys
    import warnings
    warnings.filterwarnings("ignore")
    names = [" ".join(a.rsplit("_", 1)) for a in sys.argv[1:]] or list(CONSTRAINED_GAITS)
    rows = run(names)
    print(report(rows))
    for r in rows:
        print(r["gait"], {k: v for k, v in r.items() if isinstance(v, dict)})
