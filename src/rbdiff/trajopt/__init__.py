"""Trajectory optimisation with rbdiff's dynamics derivatives: iLQR (Gauss-Newton), DDP
with the exact second-order dynamics terms, and Crocoddyl's feasibility-driven DDP (FDDP)
for floating bases with contact phases, in Crocoddyl's conventions.

    import rbdiff.trajopt as to
    prob = to.Problem(model, x0, horizon=100, dt=0.01,
                      running=[to.FrameTranslation(frame, target, weight=1.0),
                               to.StateRegularization(x_ref, weight=1e-2),
                               to.ControlRegularization(weight=1e-4)],
                      terminal=[to.FrameTranslation(frame, target, weight=1e3),
                                to.StateRegularization(x_ref, weight=1e-2)])
    res = to.solve(prob, method="ddp")          # or "ilqr"
    res.xs, res.us, res.cost, res.iterations, res.converged, res.history, res.timings

    # a quadruped: u the 12 actuated torques (the free flyer is not actuated), each knot
    # with its contacts (None: a free knot), impulse knots at touch-downs
    feet = tuple(rbd.Contact(f, "3d", "local_world_aligned", gains=(0.0, 50.0))
                 for f in ("FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT"))
    prob = to.Problem(solo, x0, 12, 0.01, running=[...], terminal=[...],
                      contacts=[feet] * 4 + [feet[1:]] * 3 + [None] * 2 + [feet] * 3,
                      impulses={8: feet}, impulse_costs=[to.StateRegularization(x0, 10.0)])
    res = to.solve(prob, method="fddp", xs=[x0] * 13)       # infeasible warm start
    res = to.solve(prob, method="ddp", xs=[x0] * 13)        # the same, exact curvature
    res.forces                  # (T, 12): each knot's contact forces (impulses at knot 8)

    # Crocoddyl's gaits (gaits.py) with its cost terms (residuals.py): CoMPosition,
    # FramePlacement, FrameVelocity, ContactForce, FrictionCone, WrenchCone, StateBounds
    from rbdiff.trajopt.gaits import Quadruped, Biped
    gait = Quadruped(anymal, "LF_FOOT", "RF_FOOT", "LH_FOOT", "RH_FOOT")
    prob = gait.walking(x0, 0.25, 0.25, 1e-2, 25, 2)      # running: per-knot cost lists

    # constraints (constraints.py), per knot or at every knot, and the terminal knot's:
    # solve() takes the augmented-Lagrangian FDDP (constrained.py) on such a problem
    from rbdiff.trajopt import constraints as C
    prob = to.Problem(solo, x0, 12, 0.01, running=[...], contacts=feet,
                      constraints=[C.FrictionCone(f, mu=0.7) for f in feet_names]
                      + [C.ControlBox()],               # the model's effort limits
                      terminal_constraints=[C.StateEquality(x_goal)])
    res = to.solve(prob)        # a ConstrainedResult; raises to.Infeasible if it cannot
    res.max_violation, res.violations, res.multipliers
    prob = Quadruped(anymal, *feet, constrained=True).trotting(x0, 0.15, 0.1, 1e-2, 25, 2)
"""

from .constrained import ConstrainedResult, Infeasible
from .constraints import (CircularCone, ControlBox, FramePlacementEquality,
                          FrameTranslationBox, MinNormalForce, StateBox, StateEquality)
from .costs import ControlRegularization, FrameTranslation, StateRegularization
from .problem import Problem
from .residuals import (CoMPosition, ContactForce, FramePlacement, FrameVelocity,
                        FrictionCone, StateBounds, WrenchCone)
from .solver import Result, rollout_cost, solve

__all__ = ["Problem", "FrameTranslation", "StateRegularization", "ControlRegularization",
           "CoMPosition", "FramePlacement", "FrameVelocity", "ContactForce", "FrictionCone",
           "WrenchCone", "StateBounds", "solve", "rollout_cost", "Result", "ControlBox",
           "StateBox", "StateEquality", "FrameTranslationBox", "MinNormalForce",
           "CircularCone", "FramePlacementEquality", "ConstrainedResult", "Infeasible"]
