"""Solve a trajectory and render it to a GIF (or an HTML file) in a headless browser:

    python -m rbdiff.viewer.demo docs/trot.gif                # solo12 trotting (FDDP)
    python -m rbdiff.viewer.demo docs/reach.gif --problem reach  # panda reach (DDP)
    python -m rbdiff.viewer.demo trot.html                    # self-contained HTML

The README's GIF is made by the first command. The trot is Crocoddyl's
SimpleQuadrupedalGaitProblem (rbdiff.trajopt.gaits) on solo12: two steps of 15 cm, feet
lifted 10 cm, contact forces drawn as arrows; the reach is
``rbdiff.bench.trajopt.reach_problem()``. Needs the viewer extra, example-robot-data and a
Chromium (for a GIF).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import rbdiff as rbd
import rbdiff.trajopt as to


def trot():
    """(model, Problem, Result): solo12 trotting, solved by FDDP."""
    from rbdiff.trajopt.gaits import Quadruped

    model = rbd.load_robot("solo12")
    gait = Quadruped(model, "FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT")
    x0 = np.concatenate([gait.q_ref, np.zeros(model.nv)])
    prob = gait.trotting(x0, 0.15, 0.1, 1e-2, 20, 2)
    res = to.solve(prob, method="fddp", xs=[x0] * (prob.T + 1), max_iter=100,
                   us=prob.quasi_static_controls(np.tile(x0[:model.nq], (prob.T, 1))))
    return model, prob, res


def reach():
    """(model, Problem, Result): panda's hand to a point 25 cm away, solved by DDP."""
    from rbdiff.bench.trajopt import reach_problem

    prob = reach_problem()
    return prob.model, prob, to.solve(prob, method="ddp")


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m rbdiff.viewer.demo",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("path", help="output: .gif (headless Chromium) or .html")
    ap.add_argument("--problem", choices=("trot", "reach"), default="trot")
    ap.add_argument("--width", type=int, default=480)
    ap.add_argument("--height", type=int, default=320)
    ap.add_argument("--fps", type=float, default=20)
    ap.add_argument("--speed", type=float, default=0.5, help="times real time")
    args = ap.parse_args(argv)
    from . import Viewer

    t0 = time.perf_counter()
    model, prob, res = (trot if args.problem == "trot" else reach)()
    print(f"{args.problem}: {prob.T} knots, cost {res.cost:.4g}, {res.iterations} "
          f"iterations, converged {res.converged} ({time.perf_counter() - t0:.1f} s)")
    with Viewer(model) as viz:
        if args.path.endswith(".html"):
            out = viz.export_html(args.path, res, problem=prob)
        else:
            out = viz.render_gif(args.path, res, problem=prob, width=args.width,
                                 height=args.height, fps=args.fps, speed=args.speed)
    print(f"wrote {out} ({out.stat().st_size / 1e6:.2f} MB, "
          f"{time.perf_counter() - t0:.1f} s)")


if __name__ == "__main__":
    main()
