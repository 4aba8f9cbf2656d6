"""``python -m rbdiff mpc``: a robot under MPC in MuJoCo, from the command line.

    python -m rbdiff mpc --robot solo12 --gait trot --speed 0.3 --seconds 10 \\
        --push 4:0,0.5,0 --gif trot.gif --json run.json --plot trot.png

prints a one-screen summary; ``--json`` writes it as one object (loop.Run.summary);
``--speed``, ``--lateral`` and ``--turn`` take a number or a schedule "t:value,...".
Exit status 0 when the robot did not fall, 1 when it did, 2 on bad arguments.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np


def build_parser():
    p = argparse.ArgumentParser(prog="python -m rbdiff mpc",
                                description="Model-predictive control of a legged robot "
                                            "simulated in MuJoCo (rbdiff.mpc).")
    p.add_argument("--robot", default="solo12",
                   help="any name rbd.load_robot knows (default solo12)")
    p.add_argument("--feet", default=None,
                   help="comma-separated foot frames (default: found by name)")
    p.add_argument("--gait", default="trot",
                   help="stand, walk, trot, pace or bound (default trot)")
    p.add_argument("--speed", default=None,
                   help="forward speed m/s, or a schedule 't:v,...' (default 0.3; 0 for "
                        "stand)")
    p.add_argument("--lateral", default="0", help="lateral speed m/s or a schedule")
    p.add_argument("--turn", default="0", help="yaw rate rad/s or a schedule")
    p.add_argument("--seconds", type=float, default=10.0, help="simulated seconds")
    p.add_argument("--push", action="append", default=[],
                   help="t:dvx,dvy,dvz: a base velocity change (m/s, world) at time t; "
                        "repeatable")
    p.add_argument("--rate", type=float, default=100.0, help="controller Hz (default 100)")
    p.add_argument("--horizon", type=int, default=50, help="knots (default 50)")
    p.add_argument("--dt", type=float, default=0.01, help="knot seconds (default 0.01)")
    p.add_argument("--method", default="fddp", help="fddp or ddp")
    p.add_argument("--iterations", type=int, default=1, help="solver iterations a tick")
    p.add_argument("--period", type=float, default=None, help="gait period (s)")
    p.add_argument("--duty", type=float, default=None, help="gait duty factor")
    p.add_argument("--mu", type=float, default=0.7,
                   help="the floor's friction coefficient, the plant's and the "
                        "controller's cones (default 0.7)")
    p.add_argument("--sole", default=None,
                   help="a biped's sole box 'length,width' (m; default: the robot's "
                        "from example-robot-data where known, else 0.2,0.1)")
    p.add_argument("--gif", default=None, help="write the run as an animated GIF")
    p.add_argument("--gif-width", type=int, default=400, help="GIF width in pixels "
                   "(4:3; default 400)")
    p.add_argument("--html", default=None, help="write the run as a self-contained HTML")
    p.add_argument("--json", default=None, help="write the summary as JSON")
    p.add_argument("--plot", default=None,
                   help="write a figure: velocity vs command, foot heights, forces")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    return p


def _summary_lines(robot, args, s, pushes=()):
    ok = "no fall" if not s["fell"] else f"FELL ({s['reason']})"
    return [
        f"{robot} {args.gait} for {s['seconds']:.2f} s of {args.seconds:g}: {ok}",
        f"  distance {s['distance']:.3f} m, mean speed {s['mean_speed']:.3f} m/s, "
        f"lateral drift {s['lateral_drift']:.3f} m",
        f"  max |roll| {s['max_abs_roll']:.3f} rad, max |pitch| {s['max_abs_pitch']:.3f} "
        f"rad, min base height {s['min_base_height']:.3f} m (nominal "
        f"{s['nominal_height']:.3f})",
        f"  {s['ticks']} ticks at {args.rate:g} Hz: p50 {s['tick_ms_p50']:.2f} ms, p99 "
        f"{s['tick_ms_p99']:.2f} ms; real-time factor {s['realtime_factor']:.2f}",
    ] + [f"  push at {t:g} s: speed back within 20 % of the command "
         + (f"{r:.2f} s later" if r is not None else "not before the end")
         for (t, _), r in zip(pushes, s["recovery_s"])]


def main(argv=None):
    args = build_parser().parse_args(argv)
    import rbdiff as rbd
    from .controller import MPC
    from .loop import parse_pushes, piecewise, run
    from .robots import default_feet, default_sole
    if args.speed is None:
        args.speed = "0" if args.gait == "stand" else "0.3"
    try:
        for name in ("speed", "lateral", "turn"):
            piecewise(getattr(args, name), name)
        pushes = parse_pushes(args.push)
        model = rbd.load_robot(args.robot)
        feet = tuple(args.feet.split(",")) if args.feet else default_feet(model)
        from ..sim import Plant
        if len(feet) == 2:          # a biped stands on box soles (6D contacts)
            sole = tuple(float(a) for a in args.sole.split(",")) if args.sole else \
                default_sole(args.robot)
            plant = Plant(model, feet=feet, sole=sole, foot_radius=0.01, mu=args.mu)
            extra = dict(sole=sole)
        else:
            plant = Plant(model, feet=feet, mu=args.mu)
            extra = {}
        mpc = MPC(model, feet, args.gait, horizon=args.horizon, dt=args.dt,
                  method=args.method, iterations=args.iterations, period=args.period,
                  duty=args.duty, foot_radius=float(plant.foot_radius.min()), mu=args.mu,
                  **extra)
    except (ValueError, KeyError, ImportError) as e:
        print(f"python -m rbdiff mpc: {e}", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    try:
        mpc.prepare(args.rate, progress=not args.no_progress)
    except ValueError as e:     # a problem the robot's contacts cannot pose (dependent)
        print(f"python -m rbdiff mpc: {args.robot}'s {args.gait} problems: {e}",
              file=sys.stderr)
        return 2
    built = time.perf_counter() - t0
    r = run(mpc, plant, args.seconds, speed=args.speed, lateral=args.lateral,
            turn=args.turn, pushes=pushes, rate=args.rate,
            progress=not args.no_progress)
    s = r.summary()
    s.update(robot=args.robot, gait=args.gait, rate_hz=args.rate, method=args.method,
             iterations=args.iterations, horizon=args.horizon, dt=args.dt,
             problems_built_s=built)
    for line in _summary_lines(args.robot, args, s, pushes):
        print(line)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(s, f, indent=1)
        print(f"  summary: {args.json}")
    if args.plot:
        from .plots import plot_run
        plot_run(r, args.plot, feet=list(feet))
        print(f"  figure: {args.plot}")
    if args.gif or args.html:
        _render(model, r, args)
    return 1 if s["fell"] else 0


def side_camera(q, height):
    """A camera beside the base's path (q (N, nq)), slightly above, seeing all of it and
    the robot (``height``: its base height) at the path's ends."""
    import math

    from ..viewer.geometry import Camera
    p = q[:, :3]
    lo, hi = p.min(axis=0), p.max(axis=0)
    c = 0.5 * (lo + hi)
    c[2] = 0.5 * height
    span = max(float(np.linalg.norm(hi[:2] - lo[:2])) + 4 * height, 6 * height)
    d = np.array([0.25, -1.0, 0.3])
    d /= np.linalg.norm(d)
    fov = math.radians(40.0)
    # the path spans the image's width (4:3): half of it within half the horizontal fov
    dist = 0.5 * span / math.tan(0.5 * fov * 4 / 3)
    return Camera(tuple(map(float, c + d * dist)), tuple(map(float, c)), (0.0, 0.0, 1.0),
                  fov)


def _render(model, r, args):
    from ..viewer import Viewer
    stride = max(int(round(0.04 / (r.t[1] - r.t[0]))), 1) if len(r.t) > 1 else 1
    qs = r.q[::stride]
    dt = stride * (r.t[1] - r.t[0]) if len(r.t) > 1 else 0.04
    with Viewer(model) as viz:
        if args.html:
            viz.export_html(args.html, qs, dt)
            print(f"  html: {args.html}")
        if args.gif:
            viz.render_gif(args.gif, qs, dt, fps=25, width=args.gif_width,
                           height=int(round(0.75 * args.gif_width)),
                           camera=side_camera(r.q, r.nominal_height))
            print(f"  gif: {args.gif}")
