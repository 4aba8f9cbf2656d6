"""Bench section ``batch``: batched gradients on all CPU cores (issue "Batched gradients
on CPU cores and on the GPU").

Per robot (``cfg.batch_robots``; ``--robots`` sets them) and batch size B
(``cfg.batch_sizes``), for ``aba_derivatives`` (the headline), ``rnea_derivatives`` and
``aba``, three ways to evaluate B random states, timed interleaved in this process
(``bench.timing.interleaved``, median over rounds):

- **rbdiff batch**: one call ``rbd.aba_derivatives(model, Q, V, T)`` on (B, nq) / (B, nv)
  arrays, spread over all cores by Numba's ``prange`` (this section sets Numba's thread
  count to ``numba.config.NUMBA_NUM_THREADS``; the rest of the suite times one thread);
- **rbdiff loop**: ``[rbd.aba_derivatives(model, Q[b], V[b], T[b]) for b in range(B)]``;
- **Pinocchio loop**: the same Python loop over ``pin.computeABADerivatives`` (resp.
  ``pin.computeRNEADerivatives``, ``pin.aba``), each output copied out of Pinocchio's
  Data with ``np.array`` inside the timed loop (Pinocchio returns views that the next
  call overwrites; the rbdiff calls return new arrays).

Reported per B: time per evaluation, throughput, the speed-ups batch vs rbdiff loop and
batch vs Pinocchio loop, with the issue's targets (:data:`TARGETS`) marked pass / fail;
once per robot and function, at the largest B: whether the batch equals the loop bit
for bit (``np.array_equal``) and its max abs difference to Pinocchio.

Standalone: ``python -m rbdiff.bench.batch --robots talos_full_v2 --sizes 256``.
"""

import argparse
import os
import sys
import time
from dataclasses import replace

import numpy as np

import rbdiff as rbd
from rbdiff.bench import common as cm
from rbdiff.bench import models as bm
from rbdiff.bench import report as rp
from rbdiff.bench.core import _full, random_state
from rbdiff.bench.timing import _time, interleaved

try:
    import pinocchio as pin
except ImportError:
    pin = None

# (key, rbdiff function, last argument "a" or "tau", Pinocchio function name, number of
# outputs)
FUNCS = (
    ("aba_derivatives", rbd.aba_derivatives, "tau", "computeABADerivatives", 3),
    ("rnea_derivatives", rbd.rnea_derivatives, "a", "computeRNEADerivatives", 3),
    ("aba", rbd.aba, "tau", "aba", 1),
)
HEADLINE = "aba_derivatives"
# (key, label, line style of the figure); the marker tells the function
WAYS = (("batch", "rbdiff batch", "-"), ("batch_out", "rbdiff batch, out=", "-."),
        ("loop", "rbdiff loop", "--"), ("pin", "Pinocchio loop", ":"))
MARKERS = {"aba_derivatives": "o", "rnea_derivatives": "x", "aba": "+"}
# the acceptance criterion (a 2-core machine): speed-up of the batch over each
# loop at one (robot, function, B)
TARGETS = dict(robot="talos_full_v2", func=HEADLINE, B=256, loop=1.6, pin=2.0)
# environment variables that change how the batch's parallel calls behave (reported)
ENV = ("NUMBA_NUM_THREADS", "NUMBA_THREADING_LAYER", "OMP_WAIT_POLICY", "GOMP_SPINCOUNT",
       "OMP_NUM_THREADS")
AGREE = 1e-6          # max|batch - Pinocchio| / max(1, max|Pinocchio|) flagged above this
ROUND_BUDGET = 3.0    # seconds of timed rounds aimed at per point (at least 3 rounds)


def total(cfg):
    return len(dict.fromkeys(cfg.batch_robots)) * len(FUNCS) * len(cfg.batch_sizes)


def _states(model, pm, n, rng):
    """n random states stacked: Q (n, nq), V (n, nv), A (n, nv), as the suite draws
    them (Pinocchio-integrated q when Pinocchio is there)."""
    Q, V, A = zip(*(random_state(model, pm, rng) for _ in range(n)))
    return np.array(Q), np.array(V), np.array(A)


def _stacked(outs):
    """[per-state result] -> tuple of (B, ...) arrays (one per output)."""
    outs = [o if isinstance(o, tuple) else (o,) for o in outs]
    return tuple(np.stack(k) for k in zip(*outs))


def _ways(fn, pfn, nout, model, pm, pd, Q, V, U):
    """{way: zero-argument callable} over the B states (Q, V, U). Pinocchio's outputs
    (views into its Data, overwritten by the next call) are copied with np.array."""
    rows = list(zip(Q, V, U))
    ways = {"batch": lambda: fn(model, Q, V, U),
            "loop": lambda: [fn(model, q, v, u) for q, v, u in rows]}
    if nout == 3:       # the derivatives take out=: the batch without its fresh outputs
        out = tuple(np.empty((len(Q), model.nv, model.nv)) for _ in range(3))
        ways["batch_out"] = lambda: fn(model, Q, V, U, out=out)
    if pfn is not None and nout == 1:
        ways["pin"] = lambda: [np.array(pfn(pm, pd, q, v, u)) for q, v, u in rows]
    elif pfn is not None:
        ways["pin"] = lambda: [tuple(map(np.array, pfn(pm, pd, q, v, u)))
                               for q, v, u in rows]
    return ways


def _check(robot, key, ways, B):
    """Batch vs loop bit for bit, batch vs Pinocchio (max abs diff), over B states;
    also the first (compiling) calls."""
    batch = ways["batch"]()
    batch = tuple(batch) if isinstance(batch, tuple) else (batch,)
    loop = _stacked(ways["loop"]())
    c = dict(robot=robot, func=key, B=B,
             bit_equal=all(np.array_equal(x, y) for x, y in zip(batch, loop)))
    if "pin" in ways:
        ref = list(_stacked(ways["pin"]()))
        if len(ref) == 3:          # M or M^-1: Pinocchio may fill only the upper triangle
            ref[2] = np.array([_full(m) for m in ref[2]])
        diff = max(float(np.max(np.abs(x - r))) for x, r in zip(batch, ref))
        scale = max(float(np.max(np.abs(r))) for r in ref)
        c.update(max_abs_diff=diff, rel_diff=diff / max(1.0, scale),
                 agree=bool(diff <= AGREE * max(1.0, scale)))
    return c


def _rounds(ways, cfg):
    """Rounds for one point: cfg.repeats, fewer when a round is long (ROUND_BUDGET)."""
    est = sum(_time(f, 1) for f in ways.values())
    return max(1, min(cfg.repeats, max(3, int(ROUND_BUDGET / max(est, 1e-9)))))


def _target(robot, key, B, s_loop, s_pin):
    """{"loop": pass?, "pin": pass?} where the issue sets a target, else None."""
    if (robot, key, B) != (TARGETS["robot"], TARGETS["func"], TARGETS["B"]):
        return None
    return {w: (None if s is None else bool(s >= TARGETS[w]))
            for w, s in (("loop", s_loop), ("pin", s_pin))}


def _point(robot, label, key, B, ways, cfg):
    t = interleaved(ways, repeats=_rounds(ways, cfg), min_time=cfg.min_time)
    p = dict(robot=robot, label=label, func=key, B=B)
    for w, _, _ in WAYS:
        r = t.get(w)
        p[f"{w}_s"] = r["median"] if r else None               # one call, all B states
        p[f"{w}_eval_s"] = r["median"] / B if r else None       # per evaluation
        p[f"{w}_per_s"] = B / r["median"] if r else None        # evaluations / s
        p[f"{w}_rounds"] = r["repeats"] if r else None
    p["speedup_loop"] = rp.ratio(p["loop_s"], p["batch_s"])
    p["speedup_pin"] = rp.ratio(p["pin_s"], p["batch_s"])
    p["speedup_loop_out"] = rp.ratio(p["loop_s"], p["batch_out_s"])
    p["speedup_pin_out"] = rp.ratio(p["pin_s"], p["batch_out_s"])
    # judged on the batch into out= buffers where the function takes them (what a loop
    # over large batches should do: fresh multi-megabyte outputs fault in new pages)
    out = p["batch_out_s"] is not None
    p["target"] = _target(robot, key, B, p["speedup_loop_out" if out else "speedup_loop"],
                          p["speedup_pin_out" if out else "speedup_pin"])
    return p


def run(cfg, bar, out):
    import numba
    rng = np.random.default_rng(cfg.seed + 15)
    sizes = sorted(cfg.batch_sizes)
    res = dict(sizes=sizes, targets=TARGETS, cpu_count=os.cpu_count(),
               numba_num_threads=numba.config.NUMBA_NUM_THREADS, pin_copy_timed=True,
               robots=[], points=[], checks=[], skipped=[], errors=[],
               loadavg=list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
               env={k: os.environ[k] for k in ENV if k in os.environ})
    before = numba.get_num_threads()
    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    res["threads"] = numba.get_num_threads()
    try:
        for robot in dict.fromkeys(cfg.batch_robots):
            _run_robot(robot, sizes, cfg, rng, bar, res)
        try:
            res["threading_layer"] = numba.threading_layer()
        except ValueError:           # no parallel kernel ran
            res["threading_layer"] = None
    finally:
        numba.set_num_threads(before)
    return res


def _run_robot(robot, sizes, cfg, rng, bar, res):
    pair = cm.robot_pair_or_skip(robot, res, bar, "batch", len(FUNCS) * len(sizes))
    if pair is None:
        return
    model, pm = pair
    label = bm.robot_label(robot)
    res["robots"].append(dict(robot=robot, label=label, nq=model.nq, nv=model.nv))
    pd = None if pm is None else pm.createData()
    Q, V, A = _states(model, pm, sizes[-1], rng)
    args = {"a": A, "tau": rbd.rnea(model, Q, V, A)}
    for key, fn, last, pname, nout in FUNCS:
        pfn = None if pm is None else getattr(pin, pname)
        U = args[last]
        ways = _ways(fn, pfn, nout, model, pm, pd, Q, V, U)
        try:             # the check runs every way once at the largest B (compiles too)
            res["checks"].append(_check(robot, key, ways, sizes[-1]))
        except Exception as e:         # noqa: BLE001 (one broken function must not stop all)
            res["errors"].append(dict(robot=robot, func=key, error=f"{type(e).__name__}: {e}"))
            bar.step(f"batch {robot} {key}: failed", len(sizes))
            continue
        for B in sizes:
            ways = _ways(fn, pfn, nout, model, pm, pd, Q[:B], V[:B], U[:B])
            res["points"].append(_point(robot, label, key, B, ways, cfg))
            bar.step(f"batch {robot} {key} B={B}")


# ------------------------------------------------------------------ report

def figures(sec, outdir):
    if not sec["points"]:
        return {}
    panels = []
    for r in sec["robots"]:
        curves = []
        for key, *_ in FUNCS:
            pts = sorted((p for p in sec["points"] if p["robot"] == r["robot"]
                          and p["func"] == key), key=lambda p: p["B"])
            for k, (w, lab, line) in enumerate(WAYS):
                curves.append((f"{key}: {lab}", [p["B"] for p in pts],
                               [p[f"{w}_per_s"] for p in pts], MARKERS[key] + line, k))
        panels.append(dict(title=f"{r['label']} (nv = {r['nv']})", xlabel="batch size B",
                           ylabel="evaluations / s", curves=curves))
    name = "batch_throughput.png"
    rp.plot_panels(outdir / name, panels, ncols=min(3, len(panels)),
                   title=f"Throughput vs batch size: rbdiff batch ({sec['threads']} threads)"
                   " vs Python loops of single calls (log-log)")
    return {"batch": name}


def _verdict(ok):
    return "-" if ok is None else ("pass" if ok else "FAIL")


def _target_lines(sec):
    T = TARGETS
    p = next((p for p in sec["points"] if p["target"] is not None), None)
    head = (f"**Target** (issue acceptance criterion, a 2-core machine): {T['func']} on "
            f"{bm.robot_label(T['robot'])}, B = {T['B']}: the batch at least "
            f"{T['loop']}x faster than the rbdiff loop and at least {T['pin']}x faster than "
            "the Pinocchio loop.")
    if p is None:
        return [head + " Not measured in this run (needs that robot and B).", ""]
    o = "_out" if p.get("batch_out_s") is not None else ""
    return [head + f" Measured (batch into out= buffers{'' if o else ': not available'}): "
            f"{rp.fmt_ratio(p['speedup_loop' + o])}x vs the rbdiff loop "
            f"({_verdict(p['target']['loop'])}), {rp.fmt_ratio(p['speedup_pin' + o])}x vs the "
            f"Pinocchio loop ({_verdict(p['target']['pin'])}); with new output arrays "
            f"every call: {rp.fmt_ratio(p['speedup_loop'])}x and "
            f"{rp.fmt_ratio(p['speedup_pin'])}x.", ""]


def report(sec, files, cfg):
    layer = sec.get("threading_layer")
    lines = ["## 8. Batched gradients: all CPU cores vs loops of single calls", "",
             f"One call on a batch of B states, computed on **{sec['threads']} Numba "
             f"threads** (numba.config.NUMBA_NUM_THREADS = {sec['numba_num_threads']}, "
             f"{sec['cpu_count']} CPUs, threading layer {layer or '-'}), against a Python "
             "loop of B single rbdiff calls (one thread: the single-state kernels) and a "
             "Python loop of B Pinocchio calls (pin.computeABADerivatives, "
             "pin.computeRNEADerivatives, pin.aba). The Pinocchio loop copies each output "
             "out of Pinocchio's Data with np.array inside the timed loop (the copy is "
             "included); the rbdiff calls return new arrays, except the batch with out= "
             "(rnea_derivatives, aba_derivatives), which writes into the same three "
             "preallocated (B, nv, nv) arrays every call: fresh multi-megabyte outputs "
             "fault in new pages on every call, which costs more than the arithmetic at "
             "large B. Same random states for all "
             "ways (Pinocchio-integrated q), all timed interleaved, median per "
             "round; times are per evaluation (one state), speed-ups above 1 mean the "
             "batch is faster.", ""]
    if sec.get("loadavg"):
        lines += ["Load average (1, 5, 15 min) when the section started: "
                  + ", ".join(f"{x:.1f}" for x in sec["loadavg"]) + f" on {sec['cpu_count']}"
                  " CPUs. The batch needs idle cores: on a loaded machine a parallel call "
                  "waits for its descheduled threads, which hurts small B most (with "
                  "OpenMP's default active wait policy, a spinning thread can hold the "
                  "core the other one needs).", ""]
    env = sec.get("env") or {}
    lines += ["Environment: " + (", ".join(f"{k}={v}" for k, v in env.items())
                                 or f"none of {', '.join(ENV)} set") + ".", ""]
    lines += _target_lines(sec)
    for r in sec["robots"]:
        lines += [f"### {r['label']} (nq = {r['nq']}, nv = {r['nv']}): us per evaluation",
                  ""]
        rows = []
        for p in (p for p in sec["points"] if p["robot"] == r["robot"]):
            t = p["target"]
            rows.append([p["func"], p["B"], rp.fmt_time(p["batch_eval_s"]),
                         rp.fmt_time(p.get("batch_out_eval_s")),
                         rp.fmt_time(p["loop_eval_s"]), rp.fmt_time(p["pin_eval_s"]),
                         rp.fmt_ratio(p["speedup_loop"]), rp.fmt_ratio(p["speedup_pin"]),
                         rp.fmt_ratio(p.get("speedup_loop_out")),
                         rp.fmt_ratio(p.get("speedup_pin_out")),
                         "" if t is None else f">= {TARGETS['loop']}x: {_verdict(t['loop'])}"
                         f"; >= {TARGETS['pin']}x: {_verdict(t['pin'])}"])
        lines += [rp.md_table(["function", "B", "rbdiff batch", "rbdiff batch, out=",
                               "rbdiff loop", "Pinocchio loop", "batch vs rbdiff loop",
                               "batch vs Pinocchio loop", "batch out= vs rbdiff loop",
                               "batch out= vs Pinocchio loop", "target"], rows,
                              "l" + "r" * 9 + "l"),
                  ""]
    lines += ["### Checks: batch vs loop (bit for bit) and vs Pinocchio", ""]
    rows = [[c["robot"], c["func"], c["B"], "yes" if c["bit_equal"] else "NO",
             rp.fmt_sci(c.get("max_abs_diff")), rp.fmt_sci(c.get("rel_diff")),
             {True: "yes", False: "NO"}.get(c.get("agree"), "-")] for c in sec["checks"]]
    lines += [rp.md_table(["robot", "function", "B", "batch == loop (np.array_equal)",
                           "max abs diff vs Pinocchio", "/ max(1, max|Pinocchio|)",
                           f"agrees (<= {AGREE:.0e})"], rows, "llrlrrl"), ""]
    return lines + cm.tail_lines(sec, files, "batch", "batch throughput",
                                 lambda e: f"{e['func']} failed on {e['robot']}: {e['error']}")


# ------------------------------------------------------------------ standalone

def main(argv=None):
    """``python -m rbdiff.bench.batch [--robots ...] [--sizes B ...] [--quick]``: this
    section alone (report.md, results.json and the figure in --out)."""
    from rbdiff.bench import suite
    p = argparse.ArgumentParser(prog="python -m rbdiff.bench.batch",
                                description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--robots", nargs="+", metavar="NAME")
    p.add_argument("--sizes", nargs="+", type=int, metavar="B", help="batch sizes")
    p.add_argument("--quick", action="store_true", help="B in 16, 256, fewer rounds")
    p.add_argument("--repeats", type=int, metavar="R", help="interleaved rounds")
    p.add_argument("--out", default="bench_batch_out", metavar="DIR")
    p.add_argument("--no-progress", action="store_true")
    args = p.parse_args(argv)
    cfg = replace(suite.PRESETS["quick" if args.quick else "full"], sections=("batch",),
                  progress=not args.no_progress, mujoco=False)
    if args.robots:
        cfg = replace(cfg, batch_robots=tuple(args.robots))
    if args.sizes:
        cfg = replace(cfg, batch_sizes=tuple(args.sizes))
    if args.repeats:
        cfg = replace(cfg, repeats=args.repeats)
    t0 = time.perf_counter()
    out = suite.run(cfg, args.out)
    print("\n".join(report(out["batch"], {}, None)))
    print(f"wrote {args.out}/report.md, results.json and {len(out['files'])} figure(s) in "
          f"{time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
