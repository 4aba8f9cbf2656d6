"""Helpers shared by the derivative sections of ``python -m rbdiff bench``
(``first_order``, ``second_order``, ``accuracy_n``, ``precision``): states, timing of
callables whose costs differ by orders of magnitude, slope fits, the DMM/AZA crossover
and error metrics that treat zeros-to-rounding as the paper treats structural zeros.

Each section module exposes ``total(cfg)`` (progress entries), ``run(cfg, bar, out)``
(the raw numbers, a JSON-able dict), ``figures(sec, outdir)`` ({name: PNG file}) and
``report(sec, files, cfg)`` (markdown lines); ``bench.suite`` wires them in.
"""

import time

import numpy as np

import rbdiff as rbd
from rbdiff import metrics
from rbdiff.bench import models as bm
from rbdiff.bench import report as rp
from rbdiff.bench.timing import _time, interleaved

FAMILY_LABEL = {"serial_chain": "serial chain", "binary_tree": "binary tree"}
# |ref_k| <= ZERO_TOL max|ref| (per tensor) counts as a zero of the reference: such an
# entry adds relative error 0 to RMSRE / MRE (its absolute error stays in MAE), as the
# structural zeros do in singh-2023 eq. 43 (see :func:`errors`)
ZERO_TOL = 1e-10
SLOW = 0.02          # seconds per call above which a callable is timed one call a round
SLOW_BUDGET = 1.5    # seconds of timed rounds aimed at per slow point (at least 3 rounds)


def state(model, rng):
    """A random (q, v, a) in float64: rbd.random_configuration and normal v, a."""
    q = np.ascontiguousarray(rbd.random_configuration(model, rng), dtype=float)
    return q, rng.normal(size=model.nv), rng.normal(size=model.nv)


def robot_pair_or_skip(robot, res, bar, what, steps=1):
    """``bm.robot_pair(robot)``, or None when it cannot be loaded (example-robot-data or
    a URDF missing, Pinocchio's model differs): then the reason goes to
    ``res["skipped"]`` and the progress bar moves ``steps`` entries."""
    try:
        return bm.robot_pair(robot)
    except (ImportError, OSError, KeyError, ValueError) as e:
        res["skipped"].append(dict(robot=robot, reason=f"{type(e).__name__}: {e}"))
        bar.step(f"{what} {robot}: skipped", steps)
        return None


def tail_lines(sec, files, key, alt, error):
    """The end of a per-robot section's report: the robots in ``sec["skipped"]``, a line
    ``error(e)`` per failure in ``sec["errors"]`` and the figure ``files[key]``."""
    lines = [line for s in sec["skipped"]
             for line in (f"> skipped {s['robot']}: {s['reason']}", "")]
    lines += [f"> {error(e)}" for e in sec["errors"]]
    if key in files:
        lines += ["", f"![{alt}]({files[key]})", ""]
    return lines + [""]


def family_label(family):
    return FAMILY_LABEL.get(family, family.replace("_", " "))


def _first_call(f):
    """Call f once (compiles on the first call), return (seconds of one warm call, or
    of the first call when it took over half a second)."""
    t0 = time.perf_counter()
    f()
    t = time.perf_counter() - t0
    if t < 0.5:
        t = _time(f, 1)
    return t


def timed(funcs, cfg, errors=None, tag=None):
    """Median seconds per call of each zero-argument callable in ``funcs`` ({name: f}).

    Each is called once first (compilation, warm-up; a callable that raises is left
    out, with its error appended to ``errors`` as dict(tag..., name, error)). Callables
    faster than SLOW are timed together by :func:`bench.timing.interleaved`
    (``cfg.repeats`` rounds of ``cfg.min_time`` seconds); slower ones one call per
    round, round-robin, over as many rounds as fit in SLOW_BUDGET (3 to cfg.repeats).
    Returns {name: {"median": s, "min": s, "rounds": r, "number": calls per round}}."""
    single = {}
    for name, f in funcs.items():
        try:
            single[name] = _first_call(f)
        except Exception as e:          # noqa: BLE001 (one broken method must not stop all)
            if errors is not None:
                errors.append(dict(**(tag or {}), name=name, error=f"{type(e).__name__}: {e}"))
    fast = {n: funcs[n] for n, t in single.items() if t < SLOW}
    slow = [n for n, t in single.items() if t >= SLOW]
    res = {}
    for n, r in interleaved(fast, repeats=cfg.repeats, min_time=cfg.min_time).items():
        res[n] = dict(median=r["median"], min=r["min"], rounds=r["repeats"],
                      number=r["number"])
    if slow:
        rounds = int(np.clip(SLOW_BUDGET / sum(single[n] for n in slow), 3,
                             max(3, cfg.repeats)))
        if cfg.mode == "tiny":
            rounds = 1
        per = {n: [] for n in slow}
        for r in range(rounds):
            k = r % len(slow)
            for n in slow[k:] + slow[:k]:
                per[n].append(_time(funcs[n], 1))
        for n, ts in per.items():
            res[n] = dict(median=float(np.median(ts)), min=min(ts), rounds=rounds, number=1)
    return res


def slope_pair(ns, ts, n_min):
    """(slope over N >= n_min, slope over every N) of a log-log least-squares fit."""
    return rp.loglog_slope(ns, ts, n_min)[0], rp.loglog_slope(ns, ts, 1)[0]


def crossover(ns, t_a, t_b):
    """Where method b becomes faster than method a for good: the smallest N from which
    t_b < t_a at every larger measured N, interpolated in log-log between the last N
    where b was slower and the first where it is faster. Returns dict(n, lo, hi, kind):
    kind "between" (n interpolated in (lo, hi)), "never" (b slower at the largest N),
    "always" (b faster at every N) or "none" (no points)."""
    pts = [(n, a, b) for n, a, b in zip(ns, t_a, t_b) if a and b]
    if not pts:
        return dict(kind="none", n=None, lo=None, hi=None)
    if pts[-1][2] >= pts[-1][1]:
        return dict(kind="never", n=None, lo=pts[-1][0], hi=None)
    k = len(pts) - 1
    while k > 0 and pts[k - 1][2] < pts[k - 1][1]:
        k -= 1
    if k == 0:
        return dict(kind="always", n=None, lo=None, hi=pts[0][0])
    (n0, a0, b0), (n1, a1, b1) = pts[k - 1], pts[k]
    r0, r1 = np.log(b0 / a0), np.log(b1 / a1)       # r0 >= 0 > r1
    x = np.log(n0) + (np.log(n1) - np.log(n0)) * r0 / (r0 - r1)
    return dict(kind="between", n=float(np.exp(x)), lo=n0, hi=n1)


def crossover_text(c, what="AZA"):
    if c["kind"] == "between":
        return f"N ~ {c['n']:.0f} (between N = {c['lo']} and {c['hi']})"
    if c["kind"] == "never":
        return f"none up to N = {c['lo']} ({what} slower at the largest N)"
    if c["kind"] == "always":
        return f"{what} faster at every N from {c['hi']}"
    return "-"


def errors(xs, refs, zero_tol=ZERO_TOL):
    """singh-2023 eqs. 40-43 of the tensors ``xs`` against ``refs`` (sequences of equal
    shapes, e.g. the four (nv, nv, nv) tensors of one call), pooled over all entries.

    Per reference tensor, entries with |ref_k| <= zero_tol max|ref| are zeros to
    rounding (the complex step and the analytical kernels leave different rounding
    residue, 1e-17 or an exact 0, where the value is zero): there x_k is replaced by
    ref_k before rbdiff.metrics.mre / rmsre, so they count with relative error 0 and
    stay in n, as the paper's structural zeros do; their absolute error still counts
    in MAE and RMSAE, and is returned as ``mae_zeros``. Returns dict(mae, rmsae, mre,
    rmsre, mae_zeros, zeros = fraction of entries treated as zeros, scale = max|ref|)."""
    X, R, XZ, Z = [], [], [], []
    scale = 0.0
    for x, r in zip(xs, refs):
        x = np.asarray(x, dtype=np.float64).ravel()
        r = np.asarray(r, dtype=np.float64).ravel()
        s = float(np.max(np.abs(r))) if r.size else 0.0
        scale = max(scale, s)
        zero = np.abs(r) <= zero_tol * s
        X.append(x)
        R.append(r)
        XZ.append(np.where(zero, r, x))
        Z.append(zero)
    x, r, xz, z = (np.concatenate(a) for a in (X, R, XZ, Z))
    with np.errstate(over="ignore"):
        out = dict(mae=metrics.mae(x, r), rmsae=metrics.rmsae(x, r), mre=metrics.mre(xz, r),
                   rmsre=metrics.rmsre(xz, r))
    out["mae_zeros"] = float(np.max(np.abs(x - r)[z])) if z.any() else 0.0
    out["zeros"] = float(np.mean(z))
    out["scale"] = scale
    return out


def finite(x):
    """x as a float for JSON, None for inf / nan / None."""
    if x is None:
        return None
    x = float(x)
    return x if np.isfinite(x) else None
