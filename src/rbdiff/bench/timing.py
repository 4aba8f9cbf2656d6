"""Interleaved micro-benchmark timer.

Timings on a shared machine drift (frequency scaling, neighbours): timing several
callables one after the other lets a drift masquerade as a speed difference. Here every
round times each callable once, round-robin, so a drift hits all of them alike, and the
median over rounds discards the rounds that a burst of noise spoiled.
"""

import gc
import itertools
import statistics
import time

_CLOCK = time.perf_counter


WARMUP = 3     # calls of each callable before timing: rbdiff's batch policy times its first
               # runs before it takes a tiny batch's entry (cpu.batch.aba_few)


def _time(func, number):
    """Seconds taken by ``number`` calls of ``func`` (the loop itself is near free:
    ``itertools.repeat`` avoids creating an int per iteration, as ``timeit`` does)."""
    it = itertools.repeat(None, number)
    t0 = _CLOCK()
    for _ in it:
        func()
    return _CLOCK() - t0


def calibrate(func, min_time=3e-3):
    """The number of calls of ``func`` that take at least ``min_time`` seconds (at least
    1), found by growing the count geometrically from one call."""
    number = 1
    while True:
        t = _time(func, number)
        if t >= min_time:
            return number
        # aim a little over min_time so the round lands in [min_time, ~2 min_time]
        grow = 10 if t <= 0 else min(10.0, 1.2 * min_time / t)
        number = max(number + 1, int(number * grow))


def interleaved(funcs, repeats=15, number=None, min_time=3e-3, times=False):
    """Time zero-argument callables interleaved, round-robin, in this process.

    ``funcs``: {name: callable}. Each of ``repeats`` rounds times every callable over
    ``number`` consecutive calls (per callable; by default calibrated so that one batch
    of calls takes ``min_time`` seconds, ~3-6 ms) in an order rotated every round, so no
    callable always runs right after the same neighbour. The garbage collector is off
    while timing, as in ``timeit``.

    Returns {name: {"median": s, "min": s, "max": s, "number": calls per round,
    "repeats": rounds}} where "median", "min" and "max" (the worst round) are seconds per
    call over the rounds; with ``times=True`` also "times": every round's seconds per
    call, in round order (round r of one callable ran next to round r of the others).
    """
    names = list(funcs)
    if not names:
        return {}
    for f in funcs.values():       # warm up: first calls may compile or fill caches
        for _ in range(WARMUP):
            f()
    counts = {n: (number or calibrate(funcs[n], min_time)) for n in names}
    per_call = {n: [] for n in names}
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        for r in range(repeats):
            k = r % len(names)
            for n in names[k:] + names[:k]:
                per_call[n].append(_time(funcs[n], counts[n]) / counts[n])
    finally:
        if gc_was_enabled:
            gc.enable()
    res = {n: {"median": statistics.median(ts), "min": min(ts), "max": max(ts),
               "number": counts[n], "repeats": repeats} for n, ts in per_call.items()}
    if times:
        for n, ts in per_call.items():
            res[n]["times"] = ts
    return res
