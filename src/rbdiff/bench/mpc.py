"""``python -m rbdiff bench-mpc``: the MPC tick, measured.

1. A trot of ``--record`` seconds under the MPC in MuJoCo gives the ticks' measured
   states; they are replayed, tick by tick and interleaved, through:
   - rbdiff's tick with fddp and with ddp (``--iterations`` each): total, and its
     derivatives / backward pass / line search;
   - MuJoCo's finite differences of the same horizon (``mujoco.mjd_transitionFD`` at
     each knot's state and control, forward differences, eps 1e-6, the plant's model
     at the knot's timestep: Zhang et al. 2025's derivatives), against rbdiff's
     derivatives of the horizon (dynamics and costs);
   - Crocoddyl's FDDP on the same problem (each tick's Problem converted term for term,
     bench/trajopt.py's crocoddyl_problem; the same warm start and iterations; one
     thread), where a compatible Crocoddyl is installed (the trajopt-bench extra, its own
     environment: Crocoddyl 3.2 needs pin 4.0.x). The cost of the warm start in both
     is printed: the same problem gives the same number.
2. Closed loop: fddp, ddp and al (the cones and torque limits as constraints) at
   ``--iterations`` per tick, a trot with a lateral push: tracking (RMS of the
   forward-speed error after the start), drift, tilt, the largest |f_t| / f_n of
   MuJoCo's contact forces, tick times.

Timings are per tick (ms), medians and 99th percentiles over the replayed ticks; one
thread (NUMBA_NUM_THREADS is left to the caller; the MPC's batches are small enough to
run serially).
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np


def _pct(a, p):
    return float(np.percentile(np.asarray(a, dtype=float), p)) if len(a) else float("nan")


def record(model, feet, gait, seconds, rate, horizon, dt, speed):
    """The measured states (t, x) of each tick of a closed-loop run."""
    from ..mpc.controller import MPC
    from ..mpc.loop import run
    from ..sim import Plant
    plant = Plant(model, feet=feet)
    mpc = MPC(model, feet, gait, horizon=horizon, dt=dt,
              foot_radius=float(plant.foot_radius.min())).prepare(rate)
    ticks = []
    r = run(mpc, plant, seconds, speed=speed, rate=rate,
            on_tick=lambda tk: ticks.append((tk.t, tk.xs[0].copy())))
    if r.fell:
        raise RuntimeError(f"bench-mpc: the recording run fell ({r.reason})")
    return ticks, float(plant.foot_radius.min())


def mujoco_fd(model, feet, dt):
    """A function (xs, us) -> seconds of mjd_transitionFD over the horizon's knots."""
    import mujoco

    from ..sim import Plant
    plant = Plant(model, feet=feet, timestep=dt)
    m, d = plant.mj_model, plant.mj_data
    nx, nu = 2 * m.nv + (m.na if hasattr(m, "na") else 0), m.nu
    A, B = np.zeros((nx, nx)), np.zeros((nx, nu))

    def horizon(xs, us):
        t0 = time.perf_counter()
        for k in range(us.shape[0]):
            q, v = xs[k, :model.nq], xs[k, model.nq:]
            plant.set_state(q, v)
            d.ctrl[:] = np.clip(us[k][plant._ctrl_tau], plant._ctrl_lo, plant._ctrl_hi)
            mujoco.mjd_transitionFD(m, d, 1e-6, 0, A, B, None, None)
        return time.perf_counter() - t0

    return horizon


def dynamics_derivatives(prob, xs, us):
    """Seconds of the horizon's dynamics derivatives alone (what FDDP's backward pass
    takes: Problem._dynamics_parts, the contact forces' derivatives included), at the
    trajectory (xs, us): MuJoCo's finite differences compute this and no more."""
    nq, nv = prob.nq, prob.nv
    q, v = np.ascontiguousarray(xs[:, :nq]), np.ascontiguousarray(xs[:, nq:])
    vnext = np.ascontiguousarray(xs[1:, nq:])
    nc = max(prob.ncmax, 1)
    df = (np.zeros((prob.T, nc, 2 * nv)), np.zeros((prob.T, nc, prob.nu)))
    t0 = time.perf_counter()
    prob._dynamics_parts(q, v, us, vnext, df)
    return time.perf_counter() - t0


def replay(model, feet, gait, ticks, horizon, dt, iterations, radius, speed, croc=None):
    """Each recorded tick through rbdiff fddp, rbdiff ddp, MuJoCo FD and (when given)
    Crocoddyl, interleaved; per-tick rows of ms."""
    from ..mpc.controller import MPC
    mpcs = {m: MPC(model, feet, gait, horizon=horizon, dt=dt, method=m,
                   iterations=iterations, foot_radius=radius) for m in ("fddp", "ddp")}
    for m in mpcs.values():
        m.prepare()
    fd = mujoco_fd(model, feet, dt)
    rows = []
    for t, x in ticks:
        row = {}
        for name, mpc in mpcs.items():
            tk = mpc.step(t, x, (speed, 0.0, 0.0))
            row[name] = tk.timings
            if name == "fddp":
                row["fddp_cost"] = tk.cost
                prob, xs0, us0 = mpc.last
                row["mujoco_fd"] = 1e3 * fd(tk.xs, tk.us)
                row["dynamics"] = 1e3 * dynamics_derivatives(prob, tk.xs, tk.us)
                if croc is not None:
                    row["crocoddyl"] = croc(prob, xs0, us0, iterations)
                    row["u0_gap"] = float(np.abs(row["crocoddyl"]["u0"] - tk.u).max()
                                          / max(np.abs(tk.u).max(), 1e-12))
        rows.append(row)
    return rows


def crocoddyl_solver(model_name, reg):
    """A function (prob, xs, us, iterations) -> {"solve": ms, "tick": ms, "cost0": the
    warm start's cost in Crocoddyl, "cost0_rbdiff": in rbdiff}: Crocoddyl FDDP, one
    thread, on the converted problem. As an MPC on Crocoddyl keeps a problem per gait
    phase and moves its references each tick, the conversion is made once per rbdiff
    problem (not timed) and "tick" adds what a tick does besides the solve: the knots'
    references (ResidualModelState / FrameTranslation .reference) and x0 written in
    place, the warm start handed over as lists. ``reg``: the starting regularisation
    (the MPC's). "u0": Crocoddyl's first control after the solve, to compare with
    rbdiff's. None where Crocoddyl is missing."""
    from .trajopt import crocoddyl_ok, crocoddyl_problem
    if not crocoddyl_ok():
        return None
    import crocoddyl

    import rbdiff.trajopt as to

    from .anchor import pin_model
    pm = pin_model(model_name, True)
    kept = {}

    def references(prob, cp):
        """(residual, term, attribute) of every cost whose reference a tick moves."""
        out = []
        models = list(cp.runningModels) + [cp.terminalModel]
        terms = list(prob.knot_costs) + [prob.terminal]
        for m, ts in zip(models, terms):
            costs = m.differential.costs.costs
            for k, t in enumerate(ts):
                if isinstance(t, to.FrameTranslation):
                    out.append((costs[f"c{k}"].cost.residual, t, "target"))
                elif isinstance(t, to.StateRegularization):
                    out.append((costs[f"c{k}"].cost.residual, t, "x_ref"))
        return out

    def solve(prob, xs, us, iterations):
        if id(prob) not in kept:
            cp = crocoddyl_problem(prob, pm)
            kept[id(prob)] = (prob, cp, crocoddyl.SolverFDDP(cp), references(prob, cp))
        _, cp, solver, refs = kept[id(prob)]
        t0 = time.perf_counter()
        for residual, term, name in refs:
            residual.reference = getattr(term, name)
        cp.x0 = prob.x0
        xs_l, us_l = list(xs), list(us)
        t1 = time.perf_counter()
        solver.solve(xs_l, us_l, iterations, False, reg)
        t2 = time.perf_counter()
        cost0 = cp.calc(xs_l, us_l)         # after the timing: the same warm start's cost
        # rbdiff's cost of the same (infeasible: gaps allowed) warm start
        q, v = np.ascontiguousarray(xs[:, :prob.nq]), np.ascontiguousarray(xs[:, prob.nq:])
        _, _, forces = prob.shoot(q, v, us)
        return dict(solve=1e3 * (t2 - t1), tick=1e3 * (t2 - t0), cost0=float(cost0),
                    cost0_rbdiff=float(prob.cost(q, v, us, forces)),
                    u0=np.array(solver.us[0]))

    return solve


def closed_loop(model, feet, gait, seconds, rate, horizon, dt, iterations, speed, push):
    """fddp against ddp in closed loop: a summary per method, plus the RMS of the
    forward-speed error after the gait's start."""
    from ..mpc.controller import MPC
    from ..mpc.loop import run
    from ..sim import Plant
    out = {}
    for method in ("fddp", "ddp", "al"):
        plant = Plant(model, feet=feet)
        mpc = MPC(model, feet, gait, horizon=horizon, dt=dt, method=method,
                  iterations=iterations, foot_radius=float(plant.foot_radius.min()))
        mpc.prepare(rate)
        r = run(mpc, plant, seconds, speed=speed, rate=rate, pushes=[push])
        s = r.summary()
        fwd, _ = r.heading_velocity()
        late = r.t > mpc.gait.start + 0.5
        s["speed_rms_error"] = float(np.sqrt(np.mean((fwd[late] - speed) ** 2))) \
            if late.any() else float("nan")
        out[method] = s
    return out


def report(res):
    lines = [f"# bench-mpc: {res['robot']} {res['gait']}, horizon {res['horizon']} x "
             f"{res['dt'] * 1e3:g} ms, {res['iterations']} iteration(s) a tick, "
             f"{res['ticks']} replayed ticks ({res['date']})", "",
             "| per tick (ms) | p50 | p99 |", "|---|---|---|"]
    for key, label in (("fddp", "rbdiff fddp tick"), ("ddp", "rbdiff ddp tick")):
        lines.append(f"| {label} | {res[key]['p50']:.2f} | {res[key]['p99']:.2f} |")
        for part in ("references", "warm_start", "solve", "derivatives", "backward",
                     "line_search"):
            lines.append(f"| &nbsp; {part} | {res[key][part]:.2f} | |")
    lines.append(f"| &nbsp; ticks whose exact-curvature pass was taken | "
                 f"{res['ddp']['second_order_ticks']} of {res['ticks']} | |")
    lines.append(f"| rbdiff dynamics derivatives of the horizon | "
                 f"{res['dynamics']['p50']:.2f} | {res['dynamics']['p99']:.2f} |")
    lines.append(f"| MuJoCo FD of the horizon (mjd_transitionFD) | "
                 f"{res['mujoco_fd']['p50']:.2f} | {res['mujoco_fd']['p99']:.2f} |")
    if "crocoddyl" in res:
        c = res["crocoddyl"]
        lines.append(f"| Crocoddyl FDDP tick (references in place, same warm start) | "
                     f"{c['tick_p50']:.2f} | {c['tick_p99']:.2f} |")
        lines.append(f"| &nbsp; solve | {c['p50']:.2f} | {c['p99']:.2f} |")
    lines += ["", f"rbdiff's dynamics derivatives of the horizon: {res['fd_ratio']:.1f}x "
              "faster than MuJoCo's finite differences of the same horizon (medians per "
              f"tick; with the costs' derivatives too, {res['fd_ratio_all']:.1f}x)."]
    if "crocoddyl" in res:
        lines.append(f"rbdiff's fddp tick / Crocoddyl's: {res['croc_tick_ratio']:.2f}x; its "
                     f"solve / Crocoddyl's: {res['croc_ratio']:.2f}x; its whole tick / "
                     f"Crocoddyl's solve alone: {res['croc_tick_solve_ratio']:.2f}x "
                     f"(medians per tick; the warm start's cost agrees to "
                     f"{res['cost_agreement']:.1e} relative: the same problem; the tick's "
                     f"first control agrees with Crocoddyl's to {res['u0_agreement_p50']:.1e}"
                     f" relative (median; worst {res['u0_agreement']:.1e}): the same "
                     "iteration)")
    cl = res.get("closed_loop")
    if cl:
        lines += ["", f"closed loop, {cl['seconds']} s at {res['speed']} m/s with a push "
                  f"{cl['push']}:", "", "| method | fell | speed RMS error (m/s) | "
                  "mean speed | lateral drift (m) | max roll | max pitch | max "
                  "\\|f_t\\| / f_n, share at mu (MuJoCo) | tick p50 | tick p99 |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        for m in ("fddp", "ddp", "al"):
            s = cl[m]
            lines.append(f"| {m} | {s['fell']} | {s['speed_rms_error']:.3f} | "
                         f"{s['mean_speed']:.3f} | {s['lateral_drift']:.3f} | "
                         f"{s['max_abs_roll']:.3f} | {s['max_abs_pitch']:.3f} | "
                         f"{s['max_friction_ratio']:.3f}, "
                         f"{100 * s['friction_saturated']:.2f} % | "
                         f"{s['tick_ms_p50']:.2f} | {s['tick_ms_p99']:.2f} |")
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m rbdiff bench-mpc", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--robot", default="solo12")
    p.add_argument("--gait", default="trot")
    p.add_argument("--speed", type=float, default=0.3)
    p.add_argument("--record", type=float, default=1.5, help="seconds of ticks to replay")
    p.add_argument("--rate", type=float, default=100.0)
    p.add_argument("--horizon", type=int, default=50)
    p.add_argument("--dt", type=float, default=0.01)
    p.add_argument("--iterations", type=int, default=1)
    p.add_argument("--closed-loop", type=float, default=5.0,
                   help="seconds of the fddp / ddp closed loop (0: skip)")
    p.add_argument("--push", default="2.5:0,0.5,0")
    p.add_argument("--out", default="bench-mpc", help="folder for report.md, results.json")
    args = p.parse_args(argv)
    import rbdiff as rbd

    from ..mpc.loop import parse_pushes
    from ..mpc.robots import default_feet
    model = rbd.load_robot(args.robot)
    feet = default_feet(model)
    ticks, radius = record(model, feet, args.gait, args.record, args.rate, args.horizon,
                           args.dt, args.speed)
    import inspect

    from ..mpc.controller import MPC
    # the MPC's starting regularisation, which Crocoddyl's solve gets too (init_reg)
    croc = crocoddyl_solver(args.robot, inspect.signature(MPC).parameters["reg"].default)
    if croc is None:
        print("Crocoddyl: not installed with pin 4.0.x here (pip install "
              "'rbdiff[trajopt-bench]' in an environment of its own); its row is left out")
    rows = replay(model, feet, args.gait, ticks, args.horizon, args.dt, args.iterations,
                  radius, args.speed, croc)
    res = dict(robot=args.robot, gait=args.gait, horizon=args.horizon, dt=args.dt,
               iterations=args.iterations, ticks=len(rows), speed=args.speed,
               date=time.strftime("%Y-%m-%d"))
    for m in ("fddp", "ddp"):
        tot = [r[m]["total"] for r in rows]
        res[m] = dict(p50=_pct(tot, 50), p99=_pct(tot, 99),
                      **{k: _pct([r[m][k] for r in rows], 50)
                         for k in ("derivatives", "backward", "line_search", "references",
                                   "warm_start", "solve")})
    res["ddp"]["second_order_ticks"] = int(sum(bool(r["ddp"].get("second_order"))
                                               for r in rows))
    fd = [r["mujoco_fd"] for r in rows]
    res["mujoco_fd"] = dict(p50=_pct(fd, 50), p99=_pct(fd, 99))
    dyn = [r["dynamics"] for r in rows]
    res["dynamics"] = dict(p50=_pct(dyn, 50), p99=_pct(dyn, 99))
    res["fd_ratio"] = res["mujoco_fd"]["p50"] / res["dynamics"]["p50"]
    res["fd_ratio_all"] = res["mujoco_fd"]["p50"] / res["fddp"]["derivatives"]
    if croc is not None:
        cs = [r["crocoddyl"]["solve"] for r in rows]
        ct = [r["crocoddyl"]["tick"] for r in rows]
        res["crocoddyl"] = dict(p50=_pct(cs, 50), p99=_pct(cs, 99), tick_p50=_pct(ct, 50),
                                tick_p99=_pct(ct, 99))
        res["croc_ratio"] = res["fddp"]["solve"] / res["crocoddyl"]["p50"]
        res["croc_tick_ratio"] = res["fddp"]["p50"] / res["crocoddyl"]["tick_p50"]
        res["croc_tick_solve_ratio"] = res["fddp"]["p50"] / res["crocoddyl"]["p50"]
        res["u0_agreement"] = max(r["u0_gap"] for r in rows)
        res["u0_agreement_p50"] = _pct([r["u0_gap"] for r in rows], 50)
        res["cost_agreement"] = max(
            abs(r["crocoddyl"]["cost0"] - r["crocoddyl"]["cost0_rbdiff"])
            / abs(r["crocoddyl"]["cost0"]) for r in rows)
    if args.closed_loop > 0:
        push = parse_pushes([args.push])[0]
        cl = closed_loop(model, feet, args.gait, args.closed_loop, args.rate, args.horizon,
                         args.dt, args.iterations, args.speed, push)
        cl.update(seconds=args.closed_loop, push=args.push)
        res["closed_loop"] = cl
    text = report(res)
    print(text)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "report.md"), "w") as f:
        f.write(text + "\n")
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump(res, f, indent=1, default=float)
    return 0
