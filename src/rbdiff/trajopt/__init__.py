"""Trajectory optimisation with rbdiff's dynamics derivatives: iLQR (Gauss-Newton) and
DDP with the exact second-order dynamics terms, in Crocoddyl's conventions.

    import rbdiff.trajopt as to
    prob = to.Problem(model, x0, horizon=100, dt=0.01,
                      running=[to.FrameTranslation(frame, target, weight=1.0),
                               to.StateRegularization(x_ref, weight=1e-2),
                               to.ControlRegularization(weight=1e-4)],
                      terminal=[to.FrameTranslation(frame, target, weight=1e3),
                                to.StateRegularization(x_ref, weight=1e-2)])
    res = to.solve(prob, method="ddp")          # or "ilqr"
    res.xs, res.us, res.cost, res.iterations, res.converged, res.history, res.timings
"""

from .costs import ControlRegularization, FrameTranslation, StateRegularization
from .problem import Problem
from .solver import Result, rollout_cost, solve

__all__ = ["Problem", "FrameTranslation", "StateRegularization", "ControlRegularization",
           "solve", "rollout_cost", "Result"]
