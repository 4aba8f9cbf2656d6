"""The physical limit: rnea, aba and aba_derivatives on panda against their flop counts.

For each algorithm:

- **flops**, counted exactly: the kernels' Python source (Numba's ``py_func``, every
  callee rebound to its own ``py_func``: :func:`pure`) runs once on object arrays of
  :class:`Counted` scalars, each of which tallies the arithmetic done on it. Every
  floating-point multiply, add / subtract, divide and square root that the compiled
  kernel performs on the state, the model's numbers or the workspace is counted; integer
  index arithmetic is not (it stays Python ints). Negations (a sign flip, no FP unit
  op) and comparisons are tallied apart.
- **the floors**: at one fused multiply-add per cycle a call needs at least
  ``max(mul, add) + div + sqrt`` cycles (each multiply paired with an add; the surplus
  of either, and each divide or root, one cycle), at the clock measured here
  (:func:`clock`: chains of dependent integer adds, one cycle each). For reference, the
  same flops at the scalar multiply-and-add rate this core sustains (measured: Numba
  emits no FMA, so each is its own instruction), and at the measured vector FMA rate
  on full vectors.
- **times**, interleaved in one process (bench.timing.interleaved; medians and minima
  over rounds): the kernel called N times inside one compiled loop (no Python between
  calls: the pure kernel), the compiled entry the public call ends in called from
  Python (its checks and Numba's argument unboxing included), the public call, and
  Pinocchio's Python call.

The Python boundary is the public call's time less the in-loop kernel's.

Run: ``python -m rbdiff.bench.limit [--quick] [--json PATH]`` (or
``python -m rbdiff bench-limit``).
"""

import argparse
import json
import math
import os
import platform
import sys
import time
import types
from functools import partial

import llvmlite.binding as ll
import numba
import numpy as np
from llvmlite import ir
from numba.core import types as nbtypes
from numba.core.dispatcher import Dispatcher
from numba.extending import intrinsic

from rbdiff.kernels.aba import aba
from rbdiff.kernels.aba_derivatives import aba_derivatives
from rbdiff.kernels.jit import fast_entry
from rbdiff.kernels.rnea import rnea

ROBOT = "panda"
ALGORITHMS = ("rnea", "aba", "aba_derivatives")
# kernel calls per compiled loop (~0.3 ms): the loop's one Python call (~1 us) is < 1% of it
LOOP = {"rnea": 500, "aba": 300, "aba_derivatives": 100}
# short rounds (~1 ms, inside a scheduler time slice): on a shared machine many rounds then
# run unpreempted, and the minimum finds them
SETTINGS = {False: dict(repeats=101, min_time=1e-3), True: dict(repeats=15, min_time=1e-3)}


# ---- counting the flops ---------------------------------------------------------------

_TALLY = {"mul": 0, "add": 0, "div": 0, "sqrt": 0, "neg": 0, "cmp": 0, "round": 0,
          "load": 0, "store": 0}


def _val(o):
    return o.x if isinstance(o, Counted) else o


class Counted:
    """A float64 that counts the arithmetic done on it into the module's tally: mul, add
    (subtractions too), div, sqrt, neg, cmp and round (math.floor). Any other operation
    raises (no silent miss); arithmetic on two plain Python numbers (constants) is not
    seen, as the compiler folds most of it."""

    __slots__ = ("x",)

    def __init__(self, x):
        self.x = float(x)

    def _op(kind, fn):        # noqa: N805 -- a method factory, run at class creation
        def op(self, other):
            _TALLY[kind] += 1
            return Counted(fn(self.x, _val(other)))
        return op

    __add__ = __radd__ = _op("add", lambda a, b: a + b)
    __sub__ = _op("add", lambda a, b: a - b)
    __rsub__ = _op("add", lambda a, b: b - a)
    __mul__ = __rmul__ = _op("mul", lambda a, b: a * b)
    __truediv__ = _op("div", lambda a, b: a / b)
    __rtruediv__ = _op("div", lambda a, b: b / a)

    def _cmp(fn):             # noqa: N805
        def op(self, other):
            _TALLY["cmp"] += 1
            return fn(self.x, _val(other))
        return op

    __lt__ = _cmp(lambda a, b: a < b)
    __le__ = _cmp(lambda a, b: a <= b)
    __gt__ = _cmp(lambda a, b: a > b)
    __ge__ = _cmp(lambda a, b: a >= b)
    __eq__ = _cmp(lambda a, b: a == b)
    __ne__ = _cmp(lambda a, b: a != b)
    __hash__ = None
    del _op, _cmp

    def __neg__(self):
        _TALLY["neg"] += 1
        return Counted(-self.x)

    def __abs__(self):         # a sign-bit mask, not an FP unit op
        return Counted(abs(self.x))

    def __floor__(self):       # math.floor: one rounding op; the int keeps counting
        _TALLY["round"] += 1
        return _CountedInt(math.floor(self.x))

    def sqrt(self):            # np.sqrt on an object array element
        _TALLY["sqrt"] += 1
        return Counted(math.sqrt(self.x))

    @property
    def real(self):
        return self

    def __float__(self):
        return self.x

    def __repr__(self):
        return f"Counted({self.x!r})"


class _CountedInt(int):
    """math.floor of a Counted (trig.sincos's quadrant k): int * float is a float
    multiply in the compiled code (k * PIO2_1), so it is counted."""

    def __mul__(self, other):
        if isinstance(other, (float, Counted)):
            _TALLY["mul"] += 1
            return Counted(int(self) * _val(other))
        return int.__mul__(self, other)

    __rmul__ = __mul__


def _int(x=0, *args):
    """``int`` inside the counted kernels: the int of a _CountedInt stays one."""
    r = int(x, *args)
    return _CountedInt(r) if isinstance(x, _CountedInt) else r


class CountingArray(np.ndarray):
    """An object ndarray whose stores keep every float a :class:`Counted` (a constant
    written into the workspace, such as ``set6(x, 0.0)``, then counts when used), and
    which tallies element reads ("load") and writes ("store") as the source spells them
    (the compiled code keeps some in registers: an upper bound on its memory ops)."""

    def __getitem__(self, key):
        out = super().__getitem__(key)
        if isinstance(out, Counted):       # an element, not a view
            _TALLY["load"] += 1
        return out

    def __setitem__(self, key, value):
        if isinstance(value, (float, int, np.floating, np.integer)) and \
                not isinstance(value, (bool, np.bool_)):
            value = Counted(value)
        if isinstance(value, Counted):      # one element, or a block filled with it
            target = super().__getitem__(key)
            _TALLY["store"] += target.size if isinstance(target, np.ndarray) else 1
        super().__setitem__(key, value)


def counting(a):
    """A :class:`CountingArray` of ``a``'s shape holding ``a``'s values as Counted."""
    a = np.asarray(a, dtype=float)
    out = np.empty(a.shape, dtype=object)
    for idx in np.ndindex(a.shape):
        out[idx] = Counted(a[idx])
    return out.view(CountingArray)


def pure(fn, _memo=None):
    """``fn`` (a Numba dispatcher or a Python function) as plain Python: its ``py_func``
    with a copy of its module's globals in which every dispatcher is itself made pure,
    and ``int`` is :func:`_int`. The modules themselves are left as they were."""
    memo = {} if _memo is None else _memo
    py = fn.py_func if isinstance(fn, Dispatcher) else fn
    if py in memo:
        return memo[py]
    key = id(py.__globals__)
    g = memo.get(key)
    fresh = g is None
    if fresh:
        g = memo[key] = dict(py.__globals__)
        g["int"] = _int
    out = memo[py] = types.FunctionType(py.__code__, g, py.__name__, py.__defaults__,
                                        py.__closure__)
    if fresh:
        for name, val in list(g.items()):
            if isinstance(val, Dispatcher):
                g[name] = pure(val, memo)
    return out


def count_flops(kernel, args):
    """Run the dispatcher ``kernel`` once as plain Python on ``args`` (float arrays are
    made :class:`CountingArray`, floats :class:`Counted`; int arrays, ints and None pass
    as they are; a CountingArray given stays the caller's, to read back) and return its
    tally: {"mul", "add", "div", "sqrt", "neg", "cmp", "round", "load", "store"} (counts
    per call; load and store: array elements as the source reads and writes them),
    "flops" = mul + add + div + sqrt, "fma_cycles" = max(mul, add) + div + sqrt, and
    "result" (what the kernel returned)."""
    conv = [counting(a) if isinstance(a, np.ndarray) and a.dtype.kind == "f" else
            Counted(a) if isinstance(a, float) else a for a in args]
    fn = pure(kernel)
    for k in _TALLY:
        _TALLY[k] = 0
    result = fn(*conv)
    t = dict(_TALLY)
    t["result"] = result
    t["flops"] = t["mul"] + t["add"] + t["div"] + t["sqrt"]
    t["fma_cycles"] = max(t["mul"], t["add"]) + t["div"] + t["sqrt"]
    return t


# ---- the machine -----------------------------------------------------------------------

_CHAIN = 128      # dependent adds per asm block
_REPS = 16        # copies of the 12 independent FP ops per asm block
ll.initialize_native_asmparser()    # Numba does not: without it inline asm aborts LLVM


def _asm_block(body):
    """An intrinsic f(x: int64) -> int64 running the x86 asm ``body`` ($0 is x, in a
    general register; xmm/ymm/zmm 0-15 are free to use)."""
    clobbers = ",".join(f"~{{{r}{k}}}" for r in ("xmm", "ymm", "zmm") for k in range(16))

    @intrinsic
    def block(typingctx, x):
        def codegen(context, builder, signature, args):
            fnty = ir.FunctionType(ir.IntType(64), [ir.IntType(64)])
            asm = ir.InlineAsm(fnty, body, "=r,0," + clobbers, side_effect=True)
            return builder.call(asm, [args[0]])
        return nbtypes.int64(nbtypes.int64), codegen
    return block


def _zero(regs):
    return [f"vxorpd %xmm{k}, %xmm{k}, %xmm{k}" for k in regs]


# dependent integer adds: one cycle each on any x86 core, so they time the clock
_ADD_CHAIN = _asm_block("\n".join(["addq $$1, $0"] * _CHAIN))
# 12 independent scalar chains on zeros (no denormals), 6 multiplies and 6 adds: enough
# chains to hide a 3-4 cycle latency on 2 pipes each, so they time the throughput
_MUL_ADD = _asm_block("\n".join(_zero(range(12)) + _zero([15]) + [
    f"vmulsd %xmm15, %xmm{k}, %xmm{k}" if k < 6 else f"vaddsd %xmm15, %xmm{k}, %xmm{k}"
    for _ in range(_REPS) for k in range(12)]))
_FMA = _asm_block("\n".join(_zero(range(12)) + _zero([15]) + [
    f"vfmadd231sd %xmm15, %xmm15, %xmm{k}" for _ in range(_REPS) for k in range(12)]))
# the same on full vectors (vxorpd of an xmm zeroes the whole register)
_FMA_VEC = {r: _asm_block("\n".join(_zero(range(12)) + _zero([15]) + [
    f"vfmadd231pd %{r}15, %{r}15, %{r}{k}" for _ in range(_REPS) for k in range(12)]))
    for r in ("ymm", "zmm")}


def _block_loop(block):
    @numba.njit
    def loop(n):
        x = 0
        for _ in range(n):
            x = block(x)
        return x
    return loop


def _seconds(loop, n):
    t0 = time.perf_counter()
    loop(n)
    return time.perf_counter() - t0


def clock(n=20_000, repeats=31, vector=None):
    """The core's clock and scalar float64 throughput, measured: each of ``repeats``
    rounds runs n blocks of _CHAIN dependent integer adds (one cycle each on any x86
    core: the clock), then of 12 * _REPS independent multiplies and adds (half each),
    then of as many FMAs, and (``vector`` "ymm" or "zmm") of as many vector FMAs; each
    run ~0.5 ms, inside a scheduler time slice. Returns {"ghz", "mul_add", "fma" and
    "fma_vector": instructions per cycle}, each from its fastest run (a preempted run
    is only slower); None off x86-64."""
    if platform.machine() not in ("x86_64", "AMD64"):
        return None
    blocks = (_ADD_CHAIN, _MUL_ADD, _FMA) + ((_FMA_VEC[vector],) if vector else ())
    loops = [_block_loop(b) for b in blocks]
    for f in loops:
        f(10)        # compiles
    best = [math.inf] * len(loops)
    for _ in range(repeats):
        best = [min(b, _seconds(f, n)) for b, f in zip(best, loops)]
    cycles = n * _CHAIN / best[0]          # per second
    ops = n * 12 * _REPS
    return {"ghz": cycles / 1e9, "mul_add": ops / best[1] / cycles,
            "fma": ops / best[2] / cycles,
            "fma_vector": ops / best[3] / cycles if vector else None}


def machine():
    """{"model", "cpuinfo_mhz" (as /proc/cpuinfo says: a VM's nominal clock), "ghz"
    (measured, :func:`clock`; None off x86-64 or without FMA), "per_cycle"
    ({"mul_add", "fma", "fma_vector"} instructions per cycle, :func:`clock`), "vector"
    ("avx512" or "avx2"),
    "lanes" (float64 per vector), "fma", "load" (1-min load average), "cores"}."""
    info = {"model": platform.processor() or platform.machine(), "cpuinfo_mhz": None}
    flags = set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                k, _, v = line.partition(":")
                k, v = k.strip(), v.strip()
                if k == "model name":
                    info["model"] = v
                elif k == "cpu MHz" and info["cpuinfo_mhz"] is None:
                    info["cpuinfo_mhz"] = float(v)
                elif k == "flags" and not flags:
                    flags = set(v.split())
    except OSError:
        pass
    vec = "avx512" if "avx512f" in flags else "avx2"
    c = clock(vector={"avx512": "zmm", "avx2": "ymm"}[vec]) if "fma" in flags else None
    info.update(vector=vec, lanes={"avx512": 8, "avx2": 4, "sse2": 2}[vec],
                fma="fma" in flags, ghz=c and c.pop("ghz"), per_cycle=c,
                cores=os.cpu_count())
    try:
        info["load"] = os.getloadavg()[0]
    except OSError:
        info["load"] = None
    return info


# ---- the calls -------------------------------------------------------------------------

@fast_entry
def _rnea_loop(mi, mf, q, v, a, ws, tau, n):
    for _ in range(n):
        rnea(mi, mf, q, v, a, None, ws, tau)


@fast_entry
def _aba_loop(mi, mf, q, v, tau, ws, qdd, n):
    for _ in range(n):
        aba(mi, mf, q, v, tau, None, ws, qdd)


@fast_entry
def _aba_derivatives_loop(mi, mf, q, v, tau, ws, qdd, S3, F, dq, dv, dtau, n):
    for _ in range(n):
        aba_derivatives(mi, mf, q, v, tau, None, ws, qdd, S3, F, dq, dv, dtau)


def setup(robot=ROBOT, seed=0):
    """Everything timed and counted, for ``robot`` at a seeded random state: a dict of
    algorithm -> {"kernel": dispatcher, "kernel_args": tuple, "loop": callable (LOOP[alg]
    kernel calls), "entry": callable, "public": callable, "pin": callable or None}, plus
    "model"."""
    import rbdiff as rbd
    from rbdiff import api, derivatives
    from rbdiff.bench.core import load, random_state
    from rbdiff.cpu.scratch import HELD
    from rbdiff.kernels.aza import use_aza
    from rbdiff.kernels.workspace import W_WIDTH, workspace_rows

    try:
        import pinocchio as pin
    except ImportError:
        pin = None
    model, pm = load(robot)
    if pin is None:
        pm = None
    q, v, a = random_state(model, pm, np.random.default_rng(seed))
    tau = rbd.rnea(model, q, v, a)
    rbd.aba(model, q, v, tau)
    rbd.aba_derivatives(model, q, v, tau)      # binds the native entries (kernels.jit.native)
    mi, mf, nv = model.mi, model.mf, model.nv
    if use_aza(mi, derivatives._product_code(model, "auto")):
        raise NotImplementedError(f"{robot}: aba_derivatives takes the AZA product here; "
                                  "only the DMM kernel is timed")
    ws = HELD[model._scratch_key]
    out = np.empty(nv)
    wsd = np.empty((workspace_rows(mi), W_WIDTH))
    qdd, S3 = np.empty(nv), np.empty((3, nv, nv))
    F = np.empty((model.njoints, nv, 6))
    d3 = tuple(np.empty((nv, nv)) for _ in range(3))
    pd = pm.createData() if pm is not None else None
    r = {"model": model}
    r["rnea"] = dict(
        kernel=rnea, kernel_args=(mi, mf, q, v, a, None, ws.copy(), out.copy()),
        loop=partial(_rnea_loop, mi, mf, q, v, a, ws, out, LOOP["rnea"]),
        entry=partial(api._rnea_front, model, q, v, a),  # as rbd.rnea calls it
        public=partial(rbd.rnea, model, q, v, a),
        pin=partial(pin.rnea, pm, pd, q, v, a) if pm is not None else None)
    r["aba"] = dict(
        kernel=aba, kernel_args=(mi, mf, q, v, tau, None, ws.copy(), out.copy()),
        loop=partial(_aba_loop, mi, mf, q, v, tau, ws, out, LOOP["aba"]),
        entry=partial(api._aba_front, model, q, v, tau),
        public=partial(rbd.aba, model, q, v, tau),
        pin=partial(pin.aba, pm, pd, q, v, tau) if pm is not None else None)
    r["aba_derivatives"] = dict(
        kernel=aba_derivatives,
        kernel_args=(mi, mf, q, v, tau, None, wsd.copy(), qdd.copy(), S3.copy(), F.copy(),
                     *(x.copy() for x in d3)),
        loop=partial(_aba_derivatives_loop, mi, mf, q, v, tau, wsd, qdd, S3, F, *d3,
                     LOOP["aba_derivatives"]),
        entry=partial(derivatives._aba_d_one, mi, mf, q, v, tau, None, *d3),
        public=partial(rbd.aba_derivatives, model, q, v, tau),
        pin=partial(pin.computeABADerivatives, pm, pd, q, v, tau) if pm is not None
        else None)
    return r


def one_joint_calls():
    """{"rbdiff": rbd.rnea, "pin": pin.rnea (or absent)} on one z-revolute joint
    (bench.core's empty-call model), where the kernels cost ~30 ns: what is left is each
    library's boundary (argument conversion, checks, output, dispatch)."""
    import rbdiff as rbd
    from rbdiff.bench import core

    m = core._one_joint_model()
    q, v, a = np.array([0.3]), np.array([0.2]), np.array([0.1])
    calls = {"rbdiff": partial(rbd.rnea, m, q, v, a)}
    if core.pin is not None:
        pm = core._pin_one_joint(m)
        calls["pin"] = partial(core.pin.rnea, pm, pm.createData(), q, v, a)
    return calls


def run(robot=ROBOT, quick=False, algorithms=ALGORITHMS):
    """The report: {"robot", "nq", "nv", "machine" (:func:`machine`), "date" (UTC),
    "rows": [one dict per algorithm]}. A row: "algorithm", the tally of
    :func:`count_flops`, "fma_bound_ns" (fma_cycles at the measured clock),
    "scalar_peak_ns" (flops at the measured scalar multiply-and-add rate: the compiled
    kernels have no FMA), "vector_peak_ns" (fma_cycles / lanes at the measured vector
    FMA rate), and per timed call (keys
    "loop" = kernel in a compiled loop, "entry" = compiled entry from Python, "public",
    "pin") "<call>_ns" (median) and "<call>_min_ns"; then "x_fma_bound" (loop / floor,
    medians) and "x_fma_bound_min" (minima), "boundary_ns" (public - loop, medians) and "boundary_share" (of the public
    call), and "boundary_min_ns", "boundary_min_share" the same from the minima.
    "one_joint_rnea_ns": {"rbdiff", "pin"} -> (median, min) ns of rnea on one joint
    (:func:`one_joint_calls`): each library's boundary with next to no kernel."""
    from rbdiff.bench.timing import interleaved
    mach = machine()
    s = setup(robot)
    model = s["model"]
    rows = []
    for alg in algorithms:
        c = s[alg]
        row = {"algorithm": alg, **count_flops(c["kernel"], c["kernel_args"])}
        del row["result"]
        ghz = mach["ghz"] or (mach["cpuinfo_mhz"] or math.nan) / 1e3
        rate = mach["per_cycle"] or {"mul_add": math.nan, "fma_vector": math.nan}
        row["fma_bound_ns"] = row["fma_cycles"] / ghz
        row["scalar_peak_ns"] = row["flops"] / rate["mul_add"] / ghz
        row["vector_peak_ns"] = row["fma_cycles"] / (mach["lanes"] * rate["fma_vector"]) / ghz
        n = LOOP[alg]
        funcs = {"loop": c["loop"], "entry": c["entry"], "public": c["public"]}
        if c["pin"] is not None:
            funcs["pin"] = c["pin"]
        t = interleaved(funcs, **SETTINGS[quick])
        for k, res in t.items():
            per = n if k == "loop" else 1
            row[f"{k}_ns"] = res["median"] / per * 1e9
            row[f"{k}_min_ns"] = res["min"] / per * 1e9
        row["x_fma_bound"] = row["loop_ns"] / row["fma_bound_ns"]
        row["x_fma_bound_min"] = row["loop_min_ns"] / row["fma_bound_ns"]
        for k in ("", "_min"):        # from the medians, and from the minima
            row[f"boundary{k}_ns"] = row[f"public{k}_ns"] - row[f"loop{k}_ns"]
            row[f"boundary{k}_share"] = row[f"boundary{k}_ns"] / row[f"public{k}_ns"]
        rows.append(row)
    one = {k: (res["median"] * 1e9, res["min"] * 1e9)
           for k, res in interleaved(one_joint_calls(), **SETTINGS[quick]).items()}
    return {"robot": robot, "nq": model.nq, "nv": model.nv, "machine": mach,
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "rows": rows,
            "one_joint_rnea_ns": one}


def format_table(report):
    """The report as a Markdown table (times in ns: median, min in parentheses; the
    boundary from the medians, from the minima in parentheses)."""
    m = report["machine"]
    ghz = f"{m['ghz']:.2f} GHz measured" if m["ghz"] else "clock not measured"
    pc = m["per_cycle"] or {}
    rates = (f"; per cycle: {pc['fma']:.2f} scalar FMA, {pc['mul_add']:.2f} scalar mul or "
             f"add, {pc['fma_vector']:.2f} {m['vector']} FMA" if pc else "")
    lines = [f"{report['robot']} (nq {report['nq']}, nv {report['nv']}), {report['date']}; "
             f"{m['model']}, {ghz} (/proc/cpuinfo: {m['cpuinfo_mhz']} MHz), {m['vector']}, "
             f"load {m['load']:.2f} on {m['cores']} cores{rates}", "",
             "| algorithm | mul | add | flops | 1 FMA/cycle floor ns | scalar peak ns "
             "| vector peak ns | kernel in loop ns | x floor | entry from Python ns "
             "| public call ns | Pinocchio ns | boundary ns | boundary share |",
             "|---|" + "---:|" * 13]

    def t(r, k):
        if f"{k}_ns" not in r:
            return "-"
        return f"{r[f'{k}_ns']:.0f} ({r[f'{k}_min_ns']:.0f})"
    for r in report["rows"]:
        lines.append(
            f"| {r['algorithm']} | {r['mul']} | {r['add']} | {r['flops']} "
            f"| {r['fma_bound_ns']:.0f} | {r['scalar_peak_ns']:.0f} "
            f"| {r['vector_peak_ns']:.0f} | {t(r, 'loop')} "
            f"| {r['x_fma_bound']:.2f} ({r['x_fma_bound_min']:.2f}) "
            f"| {t(r, 'entry')} | {t(r, 'public')} | {t(r, 'pin')} "
            f"| {r['boundary_ns']:.0f} ({r['boundary_min_ns']:.0f}) "
            f"| {100 * r['boundary_share']:.0f}% ({100 * r['boundary_min_share']:.0f}%) |")
    one = report.get("one_joint_rnea_ns", {})
    if one:
        lines += ["", "rnea on one revolute joint (the boundary alone), ns: " + ", ".join(
            f"{k} {med:.0f} ({mn:.0f})" for k, (med, mn) in one.items())]
    return "\n".join(lines)


def main(argv=None):
    """Command line entry point; prints the table and returns 0."""
    p = argparse.ArgumentParser(prog="python -m rbdiff bench-limit", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--robot", default=ROBOT, help=f"robot (default {ROBOT})")
    p.add_argument("--quick", action="store_true", help="fewer rounds (noisier)")
    p.add_argument("--json", metavar="PATH", help="also write the raw numbers as JSON")
    args = p.parse_args(argv)
    out = run(args.robot, quick=args.quick)
    print(format_table(out))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
