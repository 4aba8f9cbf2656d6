"""When a batch is worth a parallel region, decided per call.

A parallel region pays a wake-up and a join (a few us on idle cores), and when another
process keeps a core busy, the join can wait a whole scheduler time slice (~3-6 ms) for a
worker thread that was descheduled: a 64-item batch then ran 25x slower than a Python loop.
So every batch entry keeps a small plan (per model and entry point, in ``model._plans``):

- the serial cost of one item, measured on its serial runs (the first two runs of a
  batch entry are serial: the first one compiles; so is any batch whose estimated
  serial work is under ``PARALLEL_MIN_S``, too short to gain from threads);
- when a parallel run took longer than the serial estimate (a descheduled worker, or
  cores busy elsewhere), batches run serially for ``backoff`` seconds, then one parallel
  run probes again; the backoff doubles up to ``BACKOFF_MAX_S`` while probes keep losing
  and resets when one wins. A losing probe costs at most one time slice per backoff
  period, so a loaded machine pays well under 1 % for the probes.

Serial runs call ``*_batch`` on the calling thread: no other thread is woken, so nothing
waits on the scheduler. The number of threads is Numba's (``NUMBA_NUM_THREADS``,
``numba.set_num_threads``); rbdiff never changes it, nor the threading layer.
"""

from time import perf_counter

import numpy as np
from numba import get_num_threads

from .checks import batch_configurations_ok, batch_states_ok

PARALLEL_MIN_S = 40e-6    # serial work below which a parallel region cannot pay off
LOSS = 0.9                # a parallel run slower than LOSS x the serial estimate lost
BACKOFF_MIN_S = 0.05
BACKOFF_MAX_S = 2.0


class Plan:
    """Timing state of one batch entry point on one model."""
    __slots__ = ("item_s", "serial_runs", "serial_until", "backoff")

    def __init__(self):
        self.item_s = None          # serial seconds per item (None: not measured yet)
        self.serial_runs = 0
        self.serial_until = 0.0     # perf_counter() time before which batches run serially
        self.backoff = BACKOFF_MIN_S


_NO_FEXT = np.zeros((1, 0, 6))


def check(model, inputs, fext=None):
    """Refuse a bad batch before any item runs (ValueError with a checks.BAD_* code):
    inputs = (q,), (q, v) or (q, v, a/tau), each with a leading batch axis; fext
    (B, k, 6) or None."""
    if len(inputs) == 1:
        batch_configurations_ok(model.mi, inputs[0])
    else:
        q, v, u = inputs if len(inputs) == 3 else (inputs[0], inputs[1], inputs[1])
        batch_states_ok(model.mi, q, v, u, _NO_FEXT if fext is None else fext)


def plan_of(model, serial):
    """The plan of entry ``serial`` on ``model`` (made on first use)."""
    plans = model._plans
    p = plans.get(serial)
    if p is None:
        p = plans[serial] = Plan()
    return p


def run(model, serial, parallel, batch, args, options=()):
    """serial(*args, *options) or parallel(*args, *options, nchunks), as the plan
    decides; ``args`` are the entry's (mi, mf, inputs..., outputs...), every input and
    output with leading axis ``batch``."""
    p = plan_of(model, serial)
    t0 = perf_counter()
    est = None if p.serial_runs < 2 else p.item_s * batch
    if est is None or est < PARALLEL_MIN_S or t0 < p.serial_until:
        serial(*args, *options)
        _observe_serial(p, (perf_counter() - t0) / batch)
        return
    n = get_num_threads()
    if n < 2:
        serial(*args, *options)
        return
    parallel(*args, *options, min(n, batch))
    took = perf_counter() - t0
    if took > LOSS * est:
        p.serial_until = perf_counter() + p.backoff
        p.backoff = min(2 * p.backoff, BACKOFF_MAX_S)
    else:
        p.backoff = BACKOFF_MIN_S
        p.item_s = min(p.item_s, took * n / batch)   # n x parallel time bounds the serial


def _observe_serial(p, item):
    """Fold one serial run's seconds per item into the estimate: a faster run replaces it
    (the first run includes compilation; a preempted run is slow, never fast), a slower
    one moves it by an eighth."""
    p.serial_runs += 1
    if p.item_s is None or item < p.item_s:
        p.item_s = item
    else:
        p.item_s += 0.125 * (item - p.item_s)
