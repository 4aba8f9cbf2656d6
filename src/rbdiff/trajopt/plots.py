"""A figure of a solved legged trajectory: centre of mass and feet, contact forces against
the friction cone, and a filmstrip of the robot's poses.

    from rbdiff.trajopt.plots import plot_gait
    res = to.solve(prob, method="fddp", xs=[prob.x0] * (prob.T + 1))
    fig = plot_gait(prob, res, ["FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT"], mu=0.7,
                    path="gait.png")

matplotlib is optional (``pip install 'rbdiff[plot]'``, also in the bench and test extras).
"""

from __future__ import annotations

import numpy as np

import rbdiff as _rbd

_COLOURS = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown")


def _pyplot():
    try:
        import matplotlib.pyplot as plt
    except ImportError as e:
        raise ImportError("rbdiff.trajopt.plots needs matplotlib: pip install "
                          "'rbdiff[plot]' (or the bench extra)") from e
    return plt


def _forces(prob, res, feet):
    """(T, nfeet, 3) each foot's contact force (impulse at impulse knots) as the solver
    returns it, NaN where the foot is not in contact, and (T, nfeet) bool contact flags."""
    T = prob.T
    f = np.full((T, len(feet), 3), np.nan)
    on = np.zeros((T, len(feet)), bool)
    if res.forces is None:
        return f, on
    for t in range(T):
        row = 0
        for c in prob.knot_contacts[t]:
            n = 3 if c.kind == "3d" else 6
            name = c.frame if isinstance(c.frame, str) else prob.model.frames[c.frame].name
            if name in feet:
                k = feet.index(name)
                f[t, k] = res.forces[t, row:row + 3]
                on[t, k] = True
            row += n
    return f, on


def _shade(ax, on, dt, colour):
    """Shade the time spans where ``on`` (T,) is True."""
    t = 0
    while t < len(on):
        if on[t]:
            s = t
            while t < len(on) and on[t]:
                t += 1
            ax.axvspan(s * dt, t * dt, color=colour, alpha=0.12, lw=0)
        t += 1


def _stick(ax, model, oMi, oMf, feet_ids, colour):
    """The robot as segments from each joint to its parent joint, and to the feet."""
    p = oMi[:, :3, 3]
    for i in range(2 if model.joint_types[1] == 4 else 1, model.njoints):
        j = int(model.parents[i])
        ax.plot([p[j, 0], p[i, 0]], [p[j, 2], p[i, 2]], "-", color=colour, lw=1.5)
    for k in feet_ids:
        j = model.frames[k].parent
        ax.plot([p[j, 0], oMf[k, 0, 3]], [p[j, 2], oMf[k, 2, 3]], "-", color=colour, lw=1.5)
        ax.plot(oMf[k, 0, 3], oMf[k, 2, 3], "o", color=colour, ms=3)
    ax.plot(p[1, 0], p[1, 2], "s", color="k", ms=4)


def plot_gait(prob, res, feet, mu=0.7, snapshots=6, path=None, title=None):
    """One figure of a solved legged trajectory; returns the matplotlib Figure (saved to
    ``path`` when given).

    prob: the :class:`Problem`; res: its :class:`Result` (xs (T+1, nq+nv), forces (T,
    ncmax) as the FDDP solver returns them, in the contacts' reference: world-aligned
    for "local_world_aligned" contacts); feet: the foot frame names; mu: the friction
    coefficient the ratios are drawn against; snapshots: poses in the filmstrip.

    Top row: the centre of mass and the feet seen from the side (x-z) and from above (x-y),
    and their heights over time. Middle row, per foot: the tangential / normal force
    ratio against mu (above the dashed line: outside the friction cone), dotted the
    4-facet pyramid's max(|f_x|, |f_y|) / f_n (Crocoddyl's cone's; not drawn where
    the normal force is below 1e-6 of the largest: a foot unloaded), the knots in
    contact shaded, the normal force on the right axis. Bottom row: the robot's poses (a
    stick figure of its joints and feet, side view) at evenly spaced knots.
    """
    plt = _pyplot()
    model, T, dt = prob.model, prob.T, prob.dt
    feet_ids = [model.get_frame_id(f) if isinstance(f, str) else int(f) for f in feet]
    feet = [model.frames[k].name for k in feet_ids]       # KeyError naming close matches
    xs = np.asarray(res.xs, dtype=float)
    q = np.ascontiguousarray(xs[:, :model.nq])
    oMf = _rbd.frame_placements(model, q)                  # (T+1, nframes, 4, 4)
    com = np.array([_rbd.center_of_mass(model, qt) for qt in q])
    pf = oMf[:, feet_ids][:, :, :3, 3]                     # (T+1, nfeet, 3)
    time = np.arange(T + 1) * dt
    f, on = _forces(prob, res, feet)

    ns = max(1, int(snapshots))
    fig = plt.figure(figsize=(3.2 * max(len(feet), ns, 3) * 0.75 + 2, 10),
                     layout="constrained")
    grid = fig.add_gridspec(3, 1, height_ratios=[1.1, 0.9, 1.0])
    top = grid[0].subgridspec(1, 3).subplots()
    mid = grid[1].subgridspec(1, len(feet)).subplots(squeeze=False)[0]
    bot = grid[2].subgridspec(1, ns).subplots(squeeze=False)[0]

    ax_xz, ax_xy, ax_z = top
    ax_xz.plot(com[:, 0], com[:, 2], "k-", lw=2, label="CoM")
    ax_xy.plot(com[:, 0], com[:, 1], "k-", lw=2, label="CoM")
    ax_z.plot(time, com[:, 2], "k-", lw=2, label="CoM")
    for k, name in enumerate(feet):
        c = _COLOURS[k % len(_COLOURS)]
        ax_xz.plot(pf[:, k, 0], pf[:, k, 2], "-", color=c, label=name)
        ax_xy.plot(pf[:, k, 0], pf[:, k, 1], "-", color=c, label=name)
        ax_z.plot(time, pf[:, k, 2], "-", color=c, label=name)
    ax_xz.set(xlabel="x [m]", ylabel="z [m]", title="side (x-z)")
    ax_xy.set(xlabel="x [m]", ylabel="y [m]", title="top (x-y)")
    ax_xy.set_aspect("equal", adjustable="datalim")
    ax_z.set(xlabel="t [s]", ylabel="z [m]", title="heights")
    ax_xy.legend(fontsize=7, loc="best")

    # a foot unloaded to rounding (1e-11 N at a lift-off) has no meaningful ratio
    loaded = 1e-6 * max(float(np.nanmax(np.abs(f[..., 2]), initial=0.0)), 1e-300)
    for k, (ax, name) in enumerate(zip(mid, feet)):
        c = _COLOURS[k % len(_COLOURS)]
        fn = f[:, k, 2]
        ratio = np.hypot(f[:, k, 0], f[:, k, 1]) / np.where(fn > loaded, fn, np.nan)
        # the 4-facet pyramid's own ratio (Crocoddyl's cone: |f_x|, |f_y| <= mu f_n):
        # what a constrained plan holds at mu, the circular ratio up to mu sqrt(2)
        facet = np.maximum(np.abs(f[:, k, 0]), np.abs(f[:, k, 1])) / np.where(
            fn > loaded, fn, np.nan)
        _shade(ax, on[:, k], dt, c)
        ax.step(time[:-1], ratio, where="post", color=c, lw=1.5)
        ax.step(time[:-1], facet, where="post", color=c, lw=0.8, ls=":")
        ax.axhline(mu, color="k", ls="--", lw=1)
        ax.set(xlabel="t [s]", title=name, xlim=(0, T * dt),
               ylim=(0, max(1.5 * mu, np.nanmax(ratio, initial=0) * 1.1)))
        if k == 0:
            ax.set_ylabel(f"|f_t| / f_n, dotted: pyramid's  (mu = {mu:g} dashed)")
        twin = ax.twinx()
        twin.step(time[:-1], fn, where="post", color="0.5", lw=0.8)
        if k == len(feet) - 1:
            twin.set_ylabel("f_n [N] (grey)")

    knots = np.unique(np.linspace(0, T, ns).round().astype(int))
    oMi = _rbd.forward_kinematics(model, q[knots])
    oMi = oMi[0] if isinstance(oMi, tuple) else oMi
    lo = np.nanmin(np.concatenate([oMi[:, :, :3, 3].reshape(-1, 3), pf.reshape(-1, 3)]), 0)
    hi = np.nanmax(np.concatenate([oMi[:, :, :3, 3].reshape(-1, 3), pf.reshape(-1, 3)]), 0)
    pad = 0.05 * max(hi[0] - lo[0], hi[2] - lo[2], 1e-3)
    for ax in bot[len(knots):]:
        ax.set_visible(False)
    for s, (ax, t) in enumerate(zip(bot, knots)):
        _stick(ax, model, oMi[s], oMf[t], feet_ids, "tab:blue")
        ax.axhline(0.0, color="0.6", lw=0.8)
        contact = [n for n, k in zip(feet, range(len(feet))) if t < T and on[t, k]]
        ax.set(xlim=(lo[0] - pad, hi[0] + pad), ylim=(min(lo[2], 0.0) - pad, hi[2] + pad),
               title=f"t = {t * dt:.2f} s" + ("" if t == T else f" ({len(contact)} feet)"))
        ax.set_aspect("equal")
        ax.tick_params(labelsize=7)
    fig.suptitle(title or f"{prob.T} knots, dt = {dt:g} s, cost {res.cost:.6g}, "
                 f"{res.iterations} iterations ({res.method})")
    if path is not None:
        fig.savefig(path, dpi=110)
    return fig


def example_step(T=50, dt=0.01):
    """(problem, result): solo12 stepping its front-left foot 8 cm forward (four feet at
    knots 0-9, three at 10-29, touch-down impulse at 30, four after) while its base moves
    4 cm forward, solved by FDDP from x0 at every knot: the figure in docs/."""
    from rbdiff.bench.trajopt import FEET, feet_contacts, solo_standing

    from . import ControlRegularization, FrameTranslation, Problem, StateRegularization, solve
    model, x0 = solo_standing()
    four, three = feet_contacts(), feet_contacts(FEET[1:])
    target = _rbd.frame_placement(model, x0[:model.nq], "FL_FOOT")[:3, 3] + [0.08, 0.0, 0.0]
    xref = x0.copy()
    xref[0] += 0.04
    prob = Problem(model, x0, T, dt,
                   running=[StateRegularization(xref, 1e-1), ControlRegularization(1e-3)],
                   terminal=[StateRegularization(xref, 1e2)],
                   contacts=[four] * 10 + [three] * 20 + [four] * (T - 30),
                   impulses={30: four},
                   impulse_costs=[StateRegularization(xref, 1e1),
                                  FrameTranslation("FL_FOOT", target, 1e5)])
    return prob, solve(prob, method="fddp", xs=[x0] * (T + 1), max_iter=100)


GAIT_FIGURES = ("anymal walking", "anymal trotting", "anymal jumping", "talos_legs walking")


def solve_gait(name, constrained=False):
    """(problem, result, feet) of the gait ``name`` of bench.trajopt.GAITS (Crocoddyl's
    example arguments) built by rbdiff.trajopt.gaits on rbd.load_robot's model from its
    reference posture at rest, solved by FDDP from x0 at every knot and the quasi-static
    controls along it (Crocoddyl's examples' warm start); ``constrained``: the builder's
    constrained=True (the cones and torque limits as constraints), solved by the
    augmented-Lagrangian FDDP."""
    from rbdiff.bench.trajopt import BIPED_FEET, GAITS, QUADRUPED_FEET, _args

    from . import solve
    from .gaits import Biped, Quadruped
    robot, gait, args = GAITS[name]
    model = _rbd.load_robot(robot)
    if robot in BIPED_FEET:
        feet, builder, posture = BIPED_FEET[robot], Biped, "half_sitting"
    else:
        feet, builder, posture = QUADRUPED_FEET[robot], Quadruped, "standing"
    x0 = np.concatenate([model.reference_configurations[posture], np.zeros(model.nv)])
    prob = getattr(builder(model, *feet, constrained=constrained), gait)(x0, *_args(args))
    xs = np.tile(x0, (prob.T + 1, 1))
    us = prob.quasi_static_controls(xs[:, :model.nq])
    return prob, solve(prob, method="al" if constrained else "fddp", xs=xs, us=us), \
        list(feet)


def gait_figures(outdir="docs", names=GAIT_FIGURES, constrained=False):
    """Solve each gait (solve_gait) and save its plot_gait figure to
    outdir/gait_<robot>_<gait>.png (``constrained``: ..._constrained.png, the cones and
    torque limits as constraints); returns the paths."""
    import os
    plt = _pyplot()
    paths = []
    for name in names:
        prob, res, feet = solve_gait(name, constrained)
        path = os.path.join(outdir, "gait_" + name.replace(" ", "_")
                            + ("_constrained" if constrained else "") + ".png")
        how = (f"augmented-Lagrangian FDDP {res.iterations} iterations, cones and torque "
               f"limits as constraints (worst violation {res.max_violation:.1e})"
               if constrained else f"FDDP {res.iterations} iterations")
        fig = plot_gait(prob, res, feet, mu=0.7, path=path,
                        title=f"{name} (Crocoddyl's example): {prob.T} knots, {how}, "
                              f"cost {res.cost:.6g}")
        plt.close(fig)
        paths.append(path)
    return paths


if __name__ == "__main__":
    # python -m rbdiff.trajopt.plots [docs/gait_solo12_step.png]: the solo12 step;
    # python -m rbdiff.trajopt.plots --gaits [docs]: the figures of Crocoddyl's gaits
    import sys

    from rbdiff.bench.trajopt import FEET
    if sys.argv[1:2] in (["--gaits"], ["--constrained-gaits"]):
        print("\n".join(gait_figures(*sys.argv[2:3],
                                     constrained=sys.argv[1] == "--constrained-gaits")))
        sys.exit()
    prob, res = example_step()
    plot_gait(prob, res, FEET, mu=0.7,
              path=sys.argv[1] if len(sys.argv) > 1 else "gait_solo12_step.png",
              title=f"solo12 stepping its front-left foot forward: {prob.T} knots, FDDP "
                    f"{res.iterations} iterations, cost {res.cost:.6g}")
