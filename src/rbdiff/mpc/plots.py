"""A closed-loop run in one figure: base velocity against the command, the feet's
heights and their contact forces over time."""

from __future__ import annotations

import numpy as np

from ..model.configuration import quat_to_rot


def plot_run(run, path=None, feet=None):
    """Three stacked panels of ``run`` (an rbdiff.mpc.loop.Run): the base's forward and
    lateral velocity in the heading frame with the command, each foot's height, each
    foot's normal force; pushes marked. Saves to ``path`` when given (PNG, PDF, ...).
    Returns the matplotlib Figure. Needs matplotlib (pip install 'rbdiff[test]' or
    matplotlib)."""
    try:
        import matplotlib
        matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt
    except ImportError:
        raise ImportError("plot_run needs matplotlib: pip install matplotlib") from None
    t = run.t
    fwd, lat = run.heading_velocity()
    fig, ax = plt.subplots(3, 1, figsize=(9, 7.5), sharex=True)
    ax[0].plot(t, fwd, label="forward velocity", color="C0")
    ax[0].plot(t, run.command[:, 0], "--", label="command", color="C0", alpha=0.7)
    ax[0].plot(t, lat, label="lateral velocity", color="C1")
    ax[0].plot(t, run.command[:, 1], "--", color="C1", alpha=0.7)
    if np.any(run.command[:, 2]):
        R = quat_to_rot(run.q[:, 3:7])
        yaw = np.unwrap(np.arctan2(R[:, 1, 0], R[:, 0, 0]))
        wz = np.gradient(yaw, t) if len(t) > 1 else np.zeros_like(t)
        ax[0].plot(t, wz, label="yaw rate (rad/s)", color="C2", lw=0.8)
        ax[0].plot(t, run.command[:, 2], "--", color="C2", alpha=0.7)
    ax[0].set_ylabel("m/s")
    ax[0].legend(loc="upper right", fontsize=8, ncol=2)
    names = feet or [f"foot {i}" for i in range(run.feet.shape[1])]
    for i, name in enumerate(names):
        ax[1].plot(t, run.feet[:, i, 2], label=name, lw=0.9)
        ax[2].plot(t, run.forces[:, i, 2], label=name, lw=0.9)
    ax[1].set_ylabel("foot height (m)")
    ax[1].legend(loc="upper right", fontsize=8, ncol=len(names))
    ax[2].set_ylabel("normal force (N)")
    ax[2].set_xlabel("time (s)")
    for tp, dv in run.pushes:
        for a in ax:
            a.axvline(tp, color="k", lw=0.8, ls=":")
        ax[0].annotate(f"push {np.round(dv, 2).tolist()} m/s", (tp, ax[0].get_ylim()[1]),
                       fontsize=7, va="top")
    s = run.summary()
    fig.suptitle(f"{'fell: ' + run.reason if run.fell else 'no fall'}; mean speed "
                 f"{s['mean_speed']:.3f} m/s, lateral drift {s['lateral_drift']:.3f} m, "
                 f"tick p50 {s['tick_ms_p50']:.1f} ms", fontsize=10)
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=110)
    return fig
