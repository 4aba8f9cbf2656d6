"""Bench section ``batch``: batched evaluations vs Python loops of single calls (issues
"Batched gradients on CPU cores and on the GPU" and "First result in seconds, and
batches that never lose to a loop").

Per robot (``cfg.batch_robots``; ``--robots`` sets them) and batch size B
(``cfg.batch_sizes``), for ``aba_derivatives`` (the headline), ``rnea_derivatives`` and
``aba``, B random states evaluated in the measured modes (``cfg.batch_modes``), each
timed interleaved in this process (``bench.timing.interleaved``, median over rounds):

- **idle** (all cores, nothing else started): the batch ``rbd.aba_derivatives(model, Q,
  V, T)`` on (B, nq) / (B, nv) arrays (rbdiff.cpu.policy picks serial or a prange over
  chunks per call; Numba's thread count is set to ``numba.config.NUMBA_NUM_THREADS``,
  the rest of the suite times one thread), the batch into ``out=`` buffers, the **rbdiff
  loop** ``[rbd.aba_derivatives(model, Q[b], V[b], T[b]) for b in range(B)]`` and the
  **Pinocchio loop** over ``pin.computeABADerivatives`` (resp.
  ``pin.computeRNEADerivatives``, ``pin.aba``), each output copied out of Pinocchio's
  Data with ``np.array`` inside the timed loop (Pinocchio returns views that the next
  call overwrites; the rbdiff calls return new arrays);
- **loaded**: the batch (new output arrays) and the rbdiff loop while ``cores - 1``
  CPU-bound child processes (:class:`Hogs`, on no particular core) keep the other cores
  busy; more and longer rounds (:data:`LOADED_ROUNDS`, :data:`LOADED_MIN_TIME`), the
  median and the worst (slowest) round reported;
- **one_thread**: ``numba.set_num_threads(1)``: the batch per item against the
  single-call kernel per call (the compiled single entry that the public function's fast
  path ends in, called directly on each state with its scratch and outputs: for aba
  ``cpu.single.aba_one(mi, mf, q, v, tau, None, ws, (nv,))`` bound as the api layer's
  entries are (kernels.jit.native_ref), which makes qdd, for the
  derivatives
  ``rbdiff.derivatives._rnea_d_one`` / ``_aba_d_one(mi, mf, q, v, u, None, d1, d2, d3)``)
  and the rbdiff loop.

Targets: :data:`TARGETS` (talos, B = 256, idle; batch into out=) and :data:`ISSUE` (iiwa14
and hyq + free-flyer, the three functions, new output arrays: **loaded** the batch never
slower than the rbdiff loop at any B; **idle** at least 1.5x faster from B = 64; **one
thread** a batch item at most 1.1x the single-call kernel), marked pass / fail per point,
with one verdict line per target. Once per robot and function, at the largest B: whether
the batch equals the loop bit for bit (``np.array_equal``) and its max abs difference to
Pinocchio.

Standalone: ``python -m rbdiff.bench.batch`` (the issue's robots, functions and sizes, all
three modes) or e.g. ``python -m rbdiff.bench.batch --robots talos_full_v2 --sizes 256
--modes idle``.
"""

import argparse
import os
import subprocess
import sys
import time
from dataclasses import replace
from functools import partial

import numpy as np

import rbdiff as rbd
from rbdiff.bench import common as cm
from rbdiff.bench import models as bm
from rbdiff.bench import report as rp
from rbdiff.bench.core import _full, random_state
from rbdiff.cpu.scratch import HELD
from rbdiff.bench.timing import _time, interleaved
from rbdiff.cpu import single as _single
from rbdiff.kernels.jit import native_ref

# aba's single entry, bound as the api layer binds its entries (the public aba reaches it
# through its compiled front, cpu/fronts.py)
_aba_one = native_ref(_single.aba_one, "_aba_one", globals(), (2, 3, 4), outputs=(7,))

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
# the measured modes, in the order they run for each robot
MODES = ("idle", "loaded", "one_thread")
MODE_LABEL = {"idle": "IDLE", "loaded": "LOADED", "one_thread": "ONE THREAD"}
# the acceptance criterion of "Batched gradients on CPU cores" (a 2-core machine):
# speed-up of the batch (into out= buffers) over each loop at one (robot, function, B)
TARGETS = dict(robot="talos_full_v2", func=HEADLINE, B=256, loop=1.6, pin=2.0)
# the targets of "First result in seconds, and batches that never lose to a loop", with
# new output arrays (as a user calls them): loaded, batch / loop speed-up >= 1 at every
# B; idle, >= 1.5 from B = idle_from; one thread, batch item / single-call kernel <= 1.1
ISSUE = dict(robots=("iiwa14", "hyq", "talos_full_v2"),
             funcs=("aba", "rnea_derivatives", "aba_derivatives"),
             sizes=(4, 16, 64, 256, 1024), loaded=1.0, idle=1.5, idle_from=64, one_thread=1.1)
# "Safe to share, hard to misuse": fresh processes measuring the same points agree: the
# loop / batch ratio within AGREE_PROCESSES (max / min - 1) at every point
AGREE_PROCESSES = 0.20
# environment variables that change how the batch's parallel calls behave (reported)
ENV = ("NUMBA_NUM_THREADS", "NUMBA_THREADING_LAYER", "OMP_WAIT_POLICY", "GOMP_SPINCOUNT",
       "OMP_NUM_THREADS")
AGREE = 1e-6          # max|batch - Pinocchio| / max(1, max|Pinocchio|) flagged above this
ROUND_BUDGET = 3.0    # seconds of timed rounds aimed at per point (at least 3 rounds)
# loaded: a round spans several scheduler time slices (~3-6 ms), the rounds are many
# (medians of noisy rounds); fewer (not under LOADED_MIN_ROUNDS) where a round is long
LOADED_ROUNDS = 31
LOADED_MIN_ROUNDS = 11
LOADED_MIN_TIME = 20e-3
LOADED_BUDGET = 4.0   # seconds of timed rounds aimed at per loaded point
HOG_START_S = 0.3     # the hogs start spinning before the first loaded timing
HOG_LIMIT_S = 3600.0  # a hog stops by itself after this long (or when orphaned)


def total(cfg):
    return (len(dict.fromkeys(cfg.batch_robots)) * len(FUNCS) * len(cfg.batch_sizes)
            * len(_modes(cfg)))


def _modes(cfg):
    modes = getattr(cfg, "batch_modes", ("idle",))
    bad = [m for m in modes if m not in MODES]
    if bad:
        raise ValueError(f"unknown batch mode(s) {', '.join(bad)}; known: {', '.join(MODES)}")
    return tuple(m for m in MODES if m in modes)


def cores():
    """The cores this process may run on (its affinity where the OS tells it)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


# ------------------------------------------------------------------ load

_HOG = ("import os, sys, time\n"
        "p, end = os.getppid(), time.monotonic() + float(sys.argv[1])\n"
        "while os.getppid() == p and time.monotonic() < end:\n"
        "    for _ in range(100000):\n"
        "        pass\n")


def _cpu_s(pid):
    """CPU seconds (user + system) process ``pid`` has used (Linux /proc), or None."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, AttributeError):
        return None


class Hogs:
    """``n`` CPU-bound child processes (a busy Python loop, on no particular core) for
    the duration of a ``with`` block; killed on exit (and each stops by itself when this
    process dies or after HOG_LIMIT_S). ``stats`` after exit: dict(n, wall_s, busy = each
    hog's CPU seconds / wall seconds (None without /proc), alive = all were still
    running at the end)."""

    def __init__(self, n):
        self.n, self.procs, self.stats = n, [], None

    def __enter__(self):
        try:
            for _ in range(self.n):
                self.procs.append(subprocess.Popen(
                    [sys.executable, "-c", _HOG, str(HOG_LIMIT_S)], stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            time.sleep(HOG_START_S)
        except BaseException:
            self._stop()
            raise
        self._t0 = time.perf_counter()
        self._cpu0 = [_cpu_s(p.pid) for p in self.procs]
        return self

    def __exit__(self, *exc):
        wall = time.perf_counter() - self._t0
        cpu1 = [_cpu_s(p.pid) for p in self.procs]
        alive = all(p.poll() is None for p in self.procs)
        self._stop()
        busy = [None if a is None or b is None else (b - a) / max(wall, 1e-9)
                for a, b in zip(self._cpu0, cpu1)]
        self.stats = dict(n=self.n, wall_s=wall, busy=busy, alive=alive)
        return False

    def _stop(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
        for p in self.procs:
            p.wait()


# ------------------------------------------------------------------ ways

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


def single_kernel(key, model, q, v, u):
    """(compiled single entry, arguments after (mi, mf, q, v, u, None)) that the public
    function ``key``'s fast path calls on one float64 state, bound by one public call:
    ``cpu.single.aba_one`` bound natively (:data:`_aba_one`) with
    (scratch.HELD[model._scratch_key], qdd's shape),
    ``derivatives._rnea_d_one`` /
    ``_aba_d_one`` (``_aba_p_one`` with the product code where product="auto" picks
    AZA) with three (nv, nv) outputs."""
    from rbdiff import derivatives as dv
    from rbdiff.kernels.aza import DMM
    if key == "aba":
        _aba_one(model.mi, model.mf, q, v, u, None, HELD[model._scratch_key], model._sv)
        return _aba_one, (HELD[model._scratch_key], model._sv)   # qdd made there
    outs = tuple(np.empty(model._svv) for _ in range(3))
    if key == "rnea_derivatives":
        rbd.rnea_derivatives(model, q, v, u)
        k = dv._rnea_d_one
    elif key == "aba_derivatives":
        rbd.aba_derivatives(model, q, v, u)
        code = dv._product_code(model, "auto")
        k, outs = (dv._aba_d_one, outs) if code == DMM else (dv._aba_p_one, outs + (code,))
    else:
        raise KeyError(key)
    if getattr(k, "__name__", "") == "first_call":     # the stand-in of kernels.jit.native
        raise RuntimeError(f"{key}: the public call did not bind its compiled single entry")
    return k, outs


def _kernel_loop(key, model, Q, V, U):
    """A zero-argument Python loop over the B states calling the single-call kernel."""
    k, tail = single_kernel(key, model, Q[0], V[0], U[0])
    mi, mf = model.mi, model.mf
    rows = list(zip(Q, V, U))

    def loop():
        for q, v, u in rows:
            k(mi, mf, q, v, u, None, *tail)
    return loop


def _ways_upto(fn, pfn, nout, model, pm, pd, Q, V, U, B):
    return _ways(fn, pfn, nout, model, pm, pd, Q[:B], V[:B], U[:B])


def _kernel_upto(key, model, Q, V, U, B):
    return _kernel_loop(key, model, Q[:B], V[:B], U[:B])


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


# ------------------------------------------------------------------ targets

def _target(robot, key, B, s_loop, s_pin):
    """{"loop": pass?, "pin": pass?} where TARGETS sets a target, else None."""
    if (robot, key, B) != (TARGETS["robot"], TARGETS["func"], TARGETS["B"]):
        return None
    return {w: (None if s is None else bool(s >= TARGETS[w]))
            for w, s in (("loop", s_loop), ("pin", s_pin))}


def issue_target(mode, robot, key, B, value):
    """Pass / fail of ISSUE's target of ``mode`` at one point (``value``: the batch's
    speed-up over the rbdiff loop, or for one_thread the batch item / single-call kernel
    time ratio), or None where the issue sets none (or nothing was measured)."""
    if robot not in ISSUE["robots"] or key not in ISSUE["funcs"] or value is None:
        return None
    if mode == "idle":
        return None if B < ISSUE["idle_from"] else bool(value >= ISSUE["idle"])
    if mode == "loaded":
        return bool(value >= ISSUE["loaded"])
    if mode == "one_thread":
        return bool(value <= ISSUE["one_thread"])
    raise KeyError(mode)


# ------------------------------------------------------------------ measurements

def _rounds(ways, cfg):
    """Rounds for one idle point: cfg.repeats, fewer when a round is long (ROUND_BUDGET)."""
    est = sum(_time(f, 1) for f in ways.values())
    return max(1, min(cfg.repeats, max(3, int(ROUND_BUDGET / max(est, 1e-9)))))


def _loaded_timing(cfg):
    """(rounds cap, seconds per round and way) under load; tiny keeps cfg's."""
    if cfg.mode == "tiny":
        return cfg.repeats, cfg.min_time
    return max(cfg.repeats, LOADED_ROUNDS), max(cfg.min_time, LOADED_MIN_TIME)


def _point(robot, label, key, B, ways, cfg):
    t = interleaved(ways, repeats=_rounds(ways, cfg), min_time=cfg.min_time)
    p = dict(robot=robot, label=label, func=key, B=B)
    for w, _, _ in WAYS:
        r = t.get(w)
        p[f"{w}_s"] = r["median"] if r else None               # one call, all B states
        p[f"{w}_eval_s"] = r["median"] / B if r else None       # per evaluation
        p[f"{w}_max_eval_s"] = r["max"] / B if r else None      # worst round
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
    p["issue"] = issue_target("idle", robot, key, B, p["speedup_loop"])
    return p


def _loaded_point(robot, label, key, B, ways, cfg):
    """Batch (new outputs) vs rbdiff loop under load: medians and the worst round."""
    ways = {w: ways[w] for w in ("batch", "loop")}
    cap, min_time = _loaded_timing(cfg)
    est = sum(max(min_time, _time(f, 1)) for f in ways.values())
    rounds = min(cap, max(min(cap, LOADED_MIN_ROUNDS), int(LOADED_BUDGET / est)))
    t = interleaved(ways, repeats=rounds, min_time=min_time, times=True)
    b, lo = t["batch"], t["loop"]
    p = dict(robot=robot, label=label, func=key, B=B, rounds=rounds,
             batch_number=b["number"], loop_number=lo["number"])
    for w, r in (("batch", b), ("loop", lo)):
        p[f"{w}_s"] = r["median"]
        p[f"{w}_eval_s"] = r["median"] / B
        p[f"{w}_max_eval_s"] = r["max"] / B
        p[f"{w}_min_eval_s"] = r["min"] / B
    p["speedup_loop"] = rp.ratio(lo["median"], b["median"])
    # round r of the batch ran next to round r of the loop: the lowest paired ratio
    p["speedup_worst_round"] = min(x / y for x, y in zip(lo["times"], b["times"]))
    p["rounds_batch_slower"] = sum(x < y for x, y in zip(lo["times"], b["times"]))
    p["issue"] = issue_target("loaded", robot, key, B, p["speedup_loop"])
    return p


def _one_thread_point(robot, label, key, B, ways, kernel, cfg):
    """With one Numba thread: batch per item vs single-call kernel per call (and the
    rbdiff loop per evaluation)."""
    funcs = {"batch": ways["batch"], "kernel": kernel, "loop": ways["loop"]}
    t = interleaved(funcs, repeats=_rounds(funcs, cfg), min_time=cfg.min_time)
    p = dict(robot=robot, label=label, func=key, B=B, rounds=t["batch"]["repeats"])
    for w in funcs:
        p[f"{w}_s"] = t[w]["median"]
        p[f"{w}_eval_s"] = t[w]["median"] / B
        p[f"{w}_max_eval_s"] = t[w]["max"] / B
    p["batch_over_kernel"] = rp.ratio(p["batch_s"], p["kernel_s"])
    p["speedup_loop"] = rp.ratio(p["loop_s"], p["batch_s"])
    p["issue"] = issue_target("one_thread", robot, key, B, p["batch_over_kernel"])
    return p


def run(cfg, bar, out):
    import numba
    rng = np.random.default_rng(cfg.seed + 15)
    sizes = sorted(cfg.batch_sizes)
    modes = _modes(cfg)
    res = dict(sizes=sizes, targets=TARGETS, issue=ISSUE, modes=list(modes),
               cpu_count=os.cpu_count(), cores=cores(),
               numba_num_threads=numba.config.NUMBA_NUM_THREADS, pin_copy_timed=True,
               robots=[], points=[], checks=[], skipped=[], errors=[],
               loaded=dict(points=[], hogs=[], rounds=_loaded_timing(cfg)[0],
                           min_time=_loaded_timing(cfg)[1]),
               one_thread=dict(points=[]),
               loadavg=list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
               env={k: os.environ[k] for k in ENV if k in os.environ})
    before = numba.get_num_threads()
    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    res["threads"] = numba.get_num_threads()
    try:
        for robot in dict.fromkeys(cfg.batch_robots):
            _run_robot(robot, sizes, modes, cfg, rng, bar, res)
        try:
            res["threading_layer"] = numba.threading_layer()
        except ValueError:           # no parallel kernel ran
            res["threading_layer"] = None
    finally:
        numba.set_num_threads(before)
    return res


def _run_robot(robot, sizes, modes, cfg, rng, bar, res):
    import numba
    steps = len(FUNCS) * len(sizes)
    pair = cm.robot_pair_or_skip(robot, res, bar, "batch", steps * len(modes))
    if pair is None:
        return
    model, pm = pair
    label = bm.robot_label(robot)
    res["robots"].append(dict(robot=robot, label=label, nq=model.nq, nv=model.nv))
    pd = None if pm is None else pm.createData()
    Q, V, A = _states(model, pm, sizes[-1], rng)
    args = {"a": A, "tau": rbd.rnea(model, Q, V, A)}
    funcs = []                   # (key, B -> ways, B -> single-call kernel loop)
    for key, fn, last, pname, nout in FUNCS:
        pfn = None if pm is None else getattr(pin, pname)
        U = args[last]
        ways = _ways(fn, pfn, nout, model, pm, pd, Q, V, U)
        try:             # the check runs every way once at the largest B (compiles too)
            res["checks"].append(_check(robot, key, ways, sizes[-1]))
            if "one_thread" in modes:          # binds the single entry, or says why not
                single_kernel(key, model, Q[0], V[0], U[0])
        except Exception as e:         # noqa: BLE001 (one broken function must not stop all)
            res["errors"].append(dict(robot=robot, func=key, error=f"{type(e).__name__}: {e}"))
            bar.step(f"batch {robot} {key}: failed", len(sizes) * len(modes))
            continue
        # built per point (the out= buffers of every B at once would hold ~100s of MB)
        funcs.append((key, partial(_ways_upto, fn, pfn, nout, model, pm, pd, Q, V, U),
                      partial(_kernel_upto, key, model, Q, V, U)))
    if "idle" in modes:
        for key, ways, _ in funcs:
            for B in sizes:
                res["points"].append(_point(robot, label, key, B, ways(B), cfg))
                bar.step(f"batch idle {robot} {key} B={B}")
    if "loaded" in modes:
        hogs = Hogs(max(1, cores() - 1))
        with hogs:
            for key, ways, _ in funcs:
                for B in sizes:
                    res["loaded"]["points"].append(_loaded_point(robot, label, key, B,
                                                                 ways(B), cfg))
                    bar.step(f"batch loaded {robot} {key} B={B}")
        res["loaded"]["hogs"].append(dict(robot=robot, **hogs.stats))
    if "one_thread" in modes:
        before = numba.get_num_threads()
        numba.set_num_threads(1)
        try:
            for key, ways, kernels in funcs:
                for B in sizes:
                    res["one_thread"]["points"].append(
                        _one_thread_point(robot, label, key, B, ways(B), kernels(B), cfg))
                    bar.step(f"batch 1 thread {robot} {key} B={B}")
        finally:
            numba.set_num_threads(before)


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
    head = (f"**Target** (issue \"Batched gradients on CPU cores\", a 2-core machine, idle): "
            f"{T['func']} on {bm.robot_label(T['robot'])}, B = {T['B']}: the batch at least "
            f"{T['loop']}x faster than the rbdiff loop and at least {T['pin']}x faster than "
            "the Pinocchio loop.")
    if p is None:
        return [head + " Not measured in this run (needs that robot and B, mode idle).", ""]
    o = "_out" if p.get("batch_out_s") is not None else ""
    return [head + f" Measured (batch into out= buffers{'' if o else ': not available'}): "
            f"{rp.fmt_ratio(p['speedup_loop' + o])}x vs the rbdiff loop "
            f"({_verdict(p['target']['loop'])}), {rp.fmt_ratio(p['speedup_pin' + o])}x vs the "
            f"Pinocchio loop ({_verdict(p['target']['pin'])}); with new output arrays "
            f"every call: {rp.fmt_ratio(p['speedup_loop'])}x and "
            f"{rp.fmt_ratio(p['speedup_pin'])}x.", ""]


def _issue_text(mode, sec):
    I = ISSUE
    if mode == "idle":
        return (f"the batch at least {I['idle']}x faster than the rbdiff loop from "
                f"B = {I['idle_from']} (all cores, nothing else started)")
    if mode == "loaded":
        runs = (sec.get("loaded") or {}).get("hogs") or []
        n = runs[0]["n"] if runs else max(1, sec.get("cores", sec["cpu_count"]) - 1)
        return (f"the batch never slower than the rbdiff loop, at any B, while {n} "
                f"CPU-bound process{'es' if n > 1 else ''} keep{'' if n > 1 else 's'} the "
                "other core(s) busy (speed-up of the medians >= "
                f"{I['loaded']:g}x)")
    return (f"a batch item with one Numba thread costs at most {I['one_thread']}x the "
            "single-call kernel (the compiled single entry called directly)")


def _mode_points(sec, mode):
    if mode == "idle":
        return sec["points"]
    return (sec.get(mode) or {}).get("points", [])


def _where(p):
    return f"{p['label']}, {p['func']}, B = {p['B']}"


def issue_verdict(sec, mode):
    """One line: the verdict of ISSUE's target of ``mode`` over the measured points."""
    I = ISSUE
    scope = (f"{', '.join(bm.robot_label(r) for r in I['robots'])}; "
             f"{', '.join(I['funcs'])}; new output arrays")
    head = f"- **{MODE_LABEL[mode]}** ({scope}): {_issue_text(mode, sec)}: "
    if mode not in sec.get("modes", ["idle"]):
        return head + "not measured (mode not run; --modes)."
    pts = [p for p in _mode_points(sec, mode) if p.get("issue") is not None]
    if not pts:
        return head + ("not measured in this run (needs robot "
                       f"{' or '.join(I['robots'])}"
                       + (f" and B >= {I['idle_from']}" if mode == "idle" else "") + ").")
    key = "batch_over_kernel" if mode == "one_thread" else "speedup_loop"
    worst = (max if mode == "one_thread" else min)(pts, key=lambda p: p[key])
    ok = sum(p["issue"] for p in pts)
    sizes = sorted({p["B"] for p in pts})
    want = [B for B in I["sizes"] if mode != "idle" or B >= I["idle_from"]]
    robots = sorted({p["robot"] for p in pts})
    missing = [f"B = {B}" for B in want if B not in sizes] + \
        [r for r in I["robots"] if r not in robots]
    line = (head + f"**{'pass' if ok == len(pts) else 'FAIL'}**: {ok} of {len(pts)} points "
            f"pass; {'highest' if mode == 'one_thread' else 'lowest'} "
            f"{rp.fmt_ratio(worst[key])}x ({_where(worst)})")
    if mode == "loaded":
        w = min(pts, key=lambda p: p["speedup_worst_round"])
        line += (f"; worst single round {rp.fmt_ratio(w['speedup_worst_round'])}x "
                 f"({_where(w)})")
    if missing:
        line += f"; not measured: {', '.join(missing)}"
    return line + "."


def _mark(ok, text):
    return "" if ok is None else f"{text}: {_verdict(ok)}"


def _idle_lines(sec):
    lines = [f"### Idle: the batch on {sec['threads']} Numba threads, us per evaluation", ""]
    for r in sec["robots"]:
        lines += [f"#### {r['label']} (nq = {r['nq']}, nv = {r['nv']})", ""]
        rows = []
        for p in (p for p in sec["points"] if p["robot"] == r["robot"]):
            t = p["target"]
            marks = [_mark(p.get("issue"), f">= {ISSUE['idle']}x vs loop")]
            if t is not None:
                marks += [f"out= >= {TARGETS['loop']}x vs loop: {_verdict(t['loop'])}",
                          f"out= >= {TARGETS['pin']}x vs Pinocchio: {_verdict(t['pin'])}"]
            rows.append([p["func"], p["B"], rp.fmt_time(p["batch_eval_s"]),
                         rp.fmt_time(p.get("batch_out_eval_s")),
                         rp.fmt_time(p["loop_eval_s"]), rp.fmt_time(p["pin_eval_s"]),
                         rp.fmt_ratio(p["speedup_loop"]), rp.fmt_ratio(p["speedup_pin"]),
                         rp.fmt_ratio(p.get("speedup_loop_out")),
                         rp.fmt_ratio(p.get("speedup_pin_out")),
                         "; ".join(m for m in marks if m)])
        lines += [rp.md_table(["function", "B", "rbdiff batch", "rbdiff batch, out=",
                               "rbdiff loop", "Pinocchio loop", "batch vs rbdiff loop",
                               "batch vs Pinocchio loop", "batch out= vs rbdiff loop",
                               "batch out= vs Pinocchio loop", "target"], rows,
                              "l" + "r" * 9 + "l"),
                  ""]
    return lines


def _hog_text(sec):
    runs = sec["loaded"].get("hogs") or []
    if not runs:
        return ""
    busy = [b for h in runs for b in h["busy"] if b is not None]
    n = runs[0]["n"]
    txt = (f"{n} CPU-bound child process{'es' if n > 1 else ''} (a busy Python loop, on no "
           f"particular core) ran on this machine's {sec.get('cores', sec['cpu_count'])} "
           "cores throughout")
    if busy:
        lo, hi = f"{100 * min(busy):.0f}", f"{100 * max(busy):.0f}"
        txt += (f"; each used {lo if lo == hi else lo + '-' + hi} % of a core (CPU time / "
                "wall time, from /proc: less than 100 % where the machine had other work)")
    if not all(h["alive"] for h in runs):
        txt += "; **a load process stopped early**: these timings are not loaded throughout"
    return txt + ". "


def _loaded_lines(sec):
    ld = sec["loaded"]
    lines = ["### Loaded: batch vs rbdiff loop with the other cores busy, us per evaluation",
             "", _hog_text(sec) + f"The batch on {sec['threads']} Numba threads (new output "
             f"arrays) and the rbdiff loop, interleaved: up to {ld['rounds']} rounds of at "
             f"least {1e3 * ld['min_time']:.0f} ms per way; median over rounds and the worst "
             "(slowest) round; the worst-round speed-up is the lowest loop / batch ratio of "
             "two rounds timed next to each other; 'rounds lost' counts the rounds where the "
             "batch was slower. The target is judged on the medians.", ""]
    for r in sec["robots"]:
        pts = [p for p in ld["points"] if p["robot"] == r["robot"]]
        if not pts:
            continue
        lines += [f"#### {r['label']} (nq = {r['nq']}, nv = {r['nv']}), loaded", ""]
        rows = [[p["func"], p["B"], rp.fmt_time(p["batch_eval_s"]),
                 rp.fmt_time(p["loop_eval_s"]), rp.fmt_ratio(p["speedup_loop"]),
                 rp.fmt_time(p["batch_max_eval_s"]), rp.fmt_time(p["loop_max_eval_s"]),
                 rp.fmt_ratio(p["speedup_worst_round"]),
                 f"{p['rounds_batch_slower']} / {p['rounds']}",
                 _mark(p.get("issue"), f">= {ISSUE['loaded']:g}x")] for p in pts]
        lines += [rp.md_table(["function", "B", "batch (median)", "loop (median)",
                               "speed-up", "batch (worst round)", "loop (worst round)",
                               "worst-round speed-up", "rounds lost", "target"], rows,
                              "l" + "r" * 8 + "l"), ""]
    return lines


def _one_thread_lines(sec):
    lines = ["### One thread: batch item vs single-call kernel, us per evaluation", "",
             "numba.set_num_threads(1): the batch (new output arrays; one item = its time "
             "/ B), the single-call kernel (the compiled single entry the public function's "
             "fast path calls, called directly from a Python loop over the B states with "
             "its scratch and preallocated outputs: its time includes that loop's Python "
             "call overhead) and the rbdiff loop (public calls), interleaved, median per "
             "round.", ""]
    for r in sec["robots"]:
        pts = [p for p in sec["one_thread"]["points"] if p["robot"] == r["robot"]]
        if not pts:
            continue
        lines += [f"#### {r['label']} (nq = {r['nq']}, nv = {r['nv']}), one thread", ""]
        rows = [[p["func"], p["B"], rp.fmt_time(p["batch_eval_s"]),
                 rp.fmt_time(p["kernel_eval_s"]), rp.fmt_time(p["loop_eval_s"]),
                 rp.fmt_ratio(p["batch_over_kernel"]), rp.fmt_ratio(p["speedup_loop"]),
                 _mark(p.get("issue"), f"<= {ISSUE['one_thread']}x")] for p in pts]
        lines += [rp.md_table(["function", "B", "batch item", "single-call kernel",
                               "rbdiff loop", "batch / kernel", "batch vs rbdiff loop",
                               "target"], rows, "l" + "r" * 6 + "l"), ""]
    return lines


def report(sec, files, cfg):
    layer = sec.get("threading_layer")
    modes = sec.get("modes", ["idle"])
    lines = ["## 8. Batched gradients and dynamics: batches vs loops of single calls", "",
             f"Modes measured: {', '.join(modes)}. One call on a batch of B states "
             f"(rbdiff.cpu.policy runs it serially or over **{sec['threads']} Numba "
             f"threads**: numba.config.NUMBA_NUM_THREADS = {sec['numba_num_threads']}, "
             f"{sec['cpu_count']} CPUs ({sec.get('cores', sec['cpu_count'])} usable), "
             f"threading layer {layer or '- (no parallel region ran)'}), against a Python "
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
                  "core the other one needs); the mode 'loaded' measures that on purpose.",
                  ""]
    env = sec.get("env") or {}
    lines += ["Environment: " + (", ".join(f"{k}={v}" for k, v in env.items())
                                 or f"none of {', '.join(ENV)} set") + ".", ""]
    lines += ["### Targets", "",
              "Issue \"First result in seconds, and batches that never lose to a loop\" "
              f"(B in {', '.join(map(str, ISSUE['sizes']))}):", ""]
    lines += [issue_verdict(sec, m) for m in MODES] + [""]
    lines += _target_lines(sec)
    if "idle" in modes:
        lines += _idle_lines(sec)
    if "loaded" in modes and "loaded" in sec:
        lines += _loaded_lines(sec)
    if "one_thread" in modes and "one_thread" in sec:
        lines += _one_thread_lines(sec)
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
    """``python -m rbdiff.bench.batch [--robots ...] [--sizes B ...] [--modes ...]
    [--quick]``: this section alone (report.md, results.json and the figure in --out)."""
    from rbdiff.bench import suite
    p = argparse.ArgumentParser(prog="python -m rbdiff.bench.batch",
                                description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--robots", nargs="+", metavar="NAME",
                   help=f"robots (default: {' '.join(ISSUE['robots'])})")
    p.add_argument("--sizes", nargs="+", type=int, metavar="B",
                   help=f"batch sizes (default: {' '.join(map(str, ISSUE['sizes']))})")
    p.add_argument("--modes", nargs="+", choices=MODES, metavar="MODE",
                   help=f"measured modes: {', '.join(MODES)} (default: all)")
    p.add_argument("--quick", action="store_true", help="fewer rounds")
    p.add_argument("--repeats", type=int, metavar="R", help="interleaved rounds")
    p.add_argument("--out", default="bench_batch_out", metavar="DIR")
    p.add_argument("--no-figures", action="store_true", help="no PNG (no matplotlib needed)")
    p.add_argument("--no-progress", action="store_true")
    p.add_argument("--processes", type=int, default=1, metavar="N",
                   help="run the measurement in N fresh processes, one after the other, "
                   "and report how far their loop / batch ratios spread (each "
                   "process's report in --out/processK)")
    args = p.parse_args(argv)
    if args.processes > 1:
        return _in_processes(list(argv if argv is not None else sys.argv[1:]), args)
    from rbdiff.model.robots import robot_names
    unknown = [r for r in (args.robots or []) if r not in robot_names()]
    if unknown:
        p.error(f"unknown robot(s) {', '.join(unknown)}; known: {', '.join(robot_names())}")
    cfg = replace(suite.PRESETS["quick" if args.quick else "full"], sections=("batch",),
                  progress=not args.no_progress, mujoco=False,
                  figures=not args.no_figures,
                  batch_robots=tuple(args.robots or ISSUE["robots"]),
                  batch_sizes=tuple(args.sizes or ISSUE["sizes"]),
                  batch_modes=tuple(args.modes or MODES))
    if args.repeats:
        cfg = replace(cfg, repeats=args.repeats)
    missing = suite.missing_dependencies(cfg)
    if missing:
        p.error(suite.missing_message(missing))
    t0 = time.perf_counter()
    out = suite.run(cfg, args.out)
    print("\n".join(report(out["batch"], {}, None)))
    print(f"wrote {args.out}/report.md, results.json and {len(out['files'])} figure(s) in "
          f"{time.perf_counter() - t0:.0f} s")
    return 0


def _in_processes(argv, args):
    """The same measurement in ``args.processes`` fresh processes (one after the other:
    each has the machine to itself), then the spread of their loop / batch ratios."""
    import json
    rest, skip = [], False
    for a in argv:                       # this run's own options stay here
        if skip:
            skip = False
        elif a in ("--processes", "--out"):
            skip = True
        elif not a.startswith(("--processes=", "--out=")):
            rest.append(a)
    runs = []
    for k in range(1, args.processes + 1):
        out = os.path.join(args.out, f"process{k}")
        print(f"process {k} of {args.processes} -> {out}", flush=True)
        subprocess.run([sys.executable, "-m", "rbdiff.bench.batch", *rest, "--out", out],
                       check=True)
        with open(os.path.join(out, "results.json")) as f:
            runs.append(json.load(f)["batch"])
    lines = agreement(runs)
    print("\n".join(lines))
    with open(os.path.join(args.out, "agreement.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    return 0


def agreement(runs):
    """Markdown: per (mode, robot, function, B), each process's loop / batch ratio and
    their spread (max / min - 1) against AGREE_PROCESSES."""
    rows, spreads = {}, []
    for k, sec in enumerate(runs):
        for mode in ("idle", "loaded"):
            for p in _mode_points(sec, mode):
                key = (mode, p["robot"], p["func"], p["B"])
                rows.setdefault(key, [None] * len(runs))[k] = p
    table = []
    for (mode, robot, func, B), pts in rows.items():
        if any(p is None for p in pts):
            continue
        r = [p["speedup_loop"] for p in pts]     # a ratio: the machine's drift cancels
        spread = max(r) / min(r) - 1.0
        spreads.append(spread)
        table.append([mode, robot, func, str(B)]
                     + [rp.fmt_ratio(p["speedup_loop"]) for p in pts]
                     + [f"{100 * spread:.0f} %", _verdict(spread <= AGREE_PROCESSES)])
    head = (["mode", "robot", "function", "B"]
            + [f"loop / batch, process {k + 1}" for k in range(len(runs))]
            + ["spread", f"<= {100 * AGREE_PROCESSES:.0f} %"])
    bad = sum(s > AGREE_PROCESSES for s in spreads)
    verdict = (f"**{'pass' if not bad else 'FAIL'}**: {len(spreads) - bad} of {len(spreads)} "
               f"points within {100 * AGREE_PROCESSES:.0f} %"
               + (f"; largest spread {100 * max(spreads):.0f} %" if spreads else ""))
    return ([f"## {len(runs)} fresh processes: loop / batch, spread",
             "", verdict, "", rp.md_table(head, table)])


if __name__ == "__main__":
    sys.exit(main())
