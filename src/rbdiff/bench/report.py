"""Report helpers for ``python -m rbdiff bench``: number formatting, markdown tables,
log-log slope fits and the PNG figures (matplotlib, Agg backend: no display needed)."""

import numpy as np

_PLT = None


def plt():
    """matplotlib.pyplot on the Agg backend (imported on first use)."""
    global _PLT
    if _PLT is None:
        import matplotlib
        matplotlib.use("Agg", force=True)
        import matplotlib.pyplot as pyplot
        _PLT = pyplot
    return _PLT


# ------------------------------------------------------------------ formatting

def fmt_time(s):
    """Seconds as microseconds with 3 significant digits ("-" for None)."""
    if s is None or not np.isfinite(s):
        return "-"
    us = s * 1e6
    if us >= 1000:
        return f"{us:,.0f}"
    if us >= 100:
        return f"{us:.0f}"
    if us >= 10:
        return f"{us:.1f}"
    return f"{us:.2f}"


def fmt_ratio(r):
    return "-" if r is None or not np.isfinite(r) else f"{r:.2f}"


def fmt_sci(x):
    return "-" if x is None else ("0" if x == 0 else f"{x:.1e}")


def fmt_slope(x):
    return "-" if x is None or not np.isfinite(x) else f"{x:.2f}"


def md_table(head, rows, align=None):
    """A markdown table; ``align``: one of "l"/"r" per column (default: first column
    left, the rest right)."""
    align = align or ("l" + "r" * (len(head) - 1))
    sep = ["---" if a == "l" else "--:" for a in align]
    esc = (lambda c: str(c).replace("|", "\\|"))
    lines = ["| " + " | ".join(esc(h) for h in head) + " |", "| " + " | ".join(sep) + " |"]
    lines += ["| " + " | ".join(esc(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def ratio(a, b):
    """a / b, or None when either is missing."""
    if a is None or b is None or not b > 0:
        return None
    return a / b


def geomean(xs):
    xs = [x for x in xs if x is not None and x > 0 and np.isfinite(x)]
    return float(np.exp(np.mean(np.log(xs)))) if xs else None


# ------------------------------------------------------------------ fits

def loglog_slope(ns, ts, n_min=1):
    """Least-squares fit log t = slope log N + c over the points with N >= n_min
    (at least two points needed): (slope, c), or (None, None)."""
    pts = [(n, t) for n, t in zip(ns, ts)
           if t is not None and t > 0 and n >= n_min and np.isfinite(t)]
    if len(pts) < 2 or len({n for n, _ in pts}) < 2:
        return None, None
    x = np.log([p[0] for p in pts])
    y = np.log([p[1] for p in pts])
    slope, c = np.polyfit(x, y, 1)
    return float(slope), float(c)


# ------------------------------------------------------------------ figures

_COLORS = ["tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown",
           "tab:pink", "tab:gray", "tab:olive", "tab:cyan"]


def plot_table(path, robots, quantities, times, title):
    """carpentier-mansard-2018 Fig. 2 analogue: per robot, horizontal log-scale bars of
    each quantity's time for each library. ``times[robot][quantity][lib]`` in seconds
    (None = not measured); ``quantities``: [(key, label)]."""
    p = plt()
    libs = [lib for lib in ("rbdiff", "Pinocchio", "MuJoCo")
            if any(times[r][k].get(lib) for r in robots for k, _ in quantities)]
    n = max(1, len(robots))
    fig, axes = p.subplots(1, n, figsize=(3.6 * n + 2.5, 0.42 * len(quantities) + 1.8),
                           sharey=True, squeeze=False)
    y = np.arange(len(quantities))
    h = 0.8 / max(1, len(libs))
    for ax, robot in zip(axes[0], robots):
        for j, lib in enumerate(libs):
            vals = [times[robot][k].get(lib) for k, _ in quantities]
            w = [v * 1e6 if v else 0.0 for v in vals]
            ax.barh(y + (j - (len(libs) - 1) / 2) * h, w, height=h, label=lib,
                    color=_COLORS[j])
        ax.set_xscale("log")
        ax.set_title(robot, fontsize=9)
        ax.set_xlabel("time per call [us]")
        ax.grid(True, axis="x", which="both", alpha=0.3)
    axes[0][0].set_yticks(y)
    axes[0][0].set_yticklabels([lab for _, lab in quantities], fontsize=8)
    axes[0][0].invert_yaxis()
    axes[0][-1].legend(fontsize=8, loc="lower right")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    p.close(fig)


def plot_scaling(path, family, ns, curves, fits, title):
    """Time vs number of bodies, log-log. ``curves``: {(alg, lib): [seconds or None per
    N]}; rbdiff solid, Pinocchio dashed, one colour per algorithm; ``fits``: {(alg,
    lib): slope} appended to the legend labels."""
    p = plt()
    fig, ax = p.subplots(figsize=(7.5, 5.2))
    algs = list(dict.fromkeys(alg for alg, _ in curves))
    for k, alg in enumerate(algs):
        color = _COLORS[k % len(_COLORS)]
        for lib, style, marker in (("rbdiff", "-", "o"), ("Pinocchio", "--", "s")):
            ts = curves.get((alg, lib))
            if not ts or not any(ts):
                continue
            pts = [(n, t * 1e6) for n, t in zip(ns, ts) if t]
            ax.plot([a for a, _ in pts], [b for _, b in pts], style, marker=marker,
                    ms=3.5, color=color, label=f"{alg} ({lib})" + (
                        f", slope {fits[(alg, lib)]:.2f}" if fits.get((alg, lib))
                        is not None else ""))
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(f"number of bodies N ({family.replace('_', ' ')})")
    ax.set_ylabel("time per call [us]")
    ax.grid(True, which="both", alpha=0.3)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=7, ncol=2, loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    p.close(fig)


def plot_accuracy(path, heat, heat_title, curves, floor, title,
                  ylabel="max |d/dv| (exact value: 0)", hlines=()):
    """carpentier-mansard-2018 Fig. 3 analogue. Left: |entries| of a finite-difference
    dtau/dv whose exact value is zero (log10 colour scale). Right: max |entry| vs step
    size for each case and method; exact zeros are drawn at ``floor``.
    ``curves``: [(label, steps, values, style)]; ``heat``: (nv, nv) array or None;
    ``hlines``: [(label, value)] drawn as horizontal dashed lines (e.g. the error of an
    analytical derivative, which has no step)."""
    p = plt()
    ncols = 2 if heat is not None else 1
    fig, axes = p.subplots(1, ncols, figsize=(6.2 * ncols, 4.8), squeeze=False)
    k = 0
    if heat is not None:
        ax = axes[0][0]
        with np.errstate(divide="ignore"):
            lg = np.log10(np.abs(heat))
        lg[~np.isfinite(lg)] = np.log10(floor)
        lg = np.maximum(lg, np.log10(floor))
        im = ax.imshow(lg, cmap="viridis", interpolation="nearest")
        fig.colorbar(im, ax=ax, label="log10 |entry|")
        ax.set_title(heat_title, fontsize=9)
        ax.set_xlabel("column (dv_j)")
        ax.set_ylabel("row (tau_i)")
        k = 1
    ax = axes[0][k]
    for j, (label, steps, vals, style) in enumerate(curves):
        v = np.maximum(np.asarray(vals, float), floor)
        ax.plot(steps, v, style, color=_COLORS[j % len(_COLORS)], ms=3.5, label=label)
    for j, (label, value) in enumerate(hlines):
        ax.axhline(max(value, floor), color=_COLORS[(len(curves) + j) % len(_COLORS)],
                   lw=1.2, ls="--", label=label)
    ax.axhline(floor, color="k", lw=0.6, ls=":")
    ax.text(0.02, 0.02, f"exact zero drawn at {floor:.0e}", transform=ax.transAxes,
            fontsize=7)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("finite-difference step h")
    ax.set_ylabel(ylabel)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=6.5, loc="best")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    p.close(fig)


def plot_panels(path, panels, ncols=2, title=""):
    """A grid of line plots (log-log unless a panel says otherwise). ``panels``: dicts
    with title, xlabel, ylabel, curves [(label, xs, ys, style[, colour index])] (None or
    non-positive y values are skipped), optional vlines / hlines [(label, value)], logx,
    logy."""
    p = plt()
    n = max(1, len(panels))
    ncols = max(1, min(ncols, n))
    nrows = -(-n // ncols)
    fig, axes = p.subplots(nrows, ncols, figsize=(6.2 * ncols, 4.4 * nrows), squeeze=False)
    for ax, pan in zip(axes.ravel(), panels):
        for j, (label, xs, ys, style, *color) in enumerate(pan["curves"]):
            pts = [(x, y) for x, y in zip(xs, ys)
                   if y is not None and np.isfinite(y) and y > 0]
            if not pts:
                continue
            k = color[0] if color else j
            ax.plot([a for a, _ in pts], [b for _, b in pts], style, ms=3.5,
                    color=_COLORS[k % len(_COLORS)], label=label)
        for label, x in pan.get("vlines", ()):
            ax.axvline(x, color="k", lw=1.0, ls="--", label=label)
        for label, y in pan.get("hlines", ()):
            ax.axhline(y, color="gray", lw=0.8, ls=":")
        if pan.get("logx", True):
            ax.set_xscale("log")
            xs = sorted({x for _, xv, yv, *_ in pan["curves"] for x, y in zip(xv, yv)
                         if y is not None and x > 0})
            if 0 < len(xs) <= 16:          # label the measured N, not 2x10^0, 3x10^0, ...
                from matplotlib.ticker import NullFormatter
                ax.set_xticks(xs)
                ax.set_xticklabels([f"{x:g}" for x in xs], fontsize=7)
                ax.xaxis.set_minor_formatter(NullFormatter())
        if pan.get("logy", True):
            ax.set_yscale("log")
        ax.set_xlabel(pan.get("xlabel", ""))
        ax.set_ylabel(pan.get("ylabel", ""))
        ax.set_title(pan.get("title", ""), fontsize=9)
        ax.grid(True, which="both", alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=6.5, loc="best")
    for ax in axes.ravel()[len(panels):]:
        ax.set_visible(False)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.97) if title else None)
    fig.savefig(path, dpi=110)
    p.close(fig)


def plot_bars(path, groups, series, values, panels, title=""):
    """Grouped log-scale bars, one panel per entry of ``panels`` [(key, ylabel)]:
    ``values[key][series][group]`` (None: no bar) for each group on the x axis."""
    p = plt()
    fig, axes = p.subplots(1, len(panels), figsize=(max(5.5, 1.1 * len(groups) + 3)
                                                    * len(panels), 4.6), squeeze=False)
    x = np.arange(len(groups))
    w = 0.8 / max(1, len(series))
    for ax, (key, ylabel) in zip(axes[0], panels):
        for j, s in enumerate(series):
            vals = [values[key].get(s, {}).get(g) for g in groups]
            ax.bar(x + (j - (len(series) - 1) / 2) * w,
                   [v if v is not None and v > 0 else 0.0 for v in vals], width=w, label=s,
                   color=_COLORS[j % len(_COLORS)])
        ax.set_yscale("log")
        ax.set_xticks(x)
        ax.set_xticklabels(groups, fontsize=7, rotation=20)
        ax.set_ylabel(ylabel)
        ax.grid(True, axis="y", which="both", alpha=0.3)
        ax.legend(fontsize=7)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.97) if title else None)
    fig.savefig(path, dpi=110)
    p.close(fig)
