"""When a batch is worth a parallel region, decided per call.

A parallel region pays a wake-up and a join (a few us on idle cores), and when another
process keeps a core busy, the join can wait a whole scheduler time slice (~3-6 ms) for a
worker thread that was descheduled: a 64-item batch then ran 25x slower than a Python loop.
So every batch entry keeps a small plan (per model content and entry point, in this
module's ``_PLANS``, not on the Model: a plan is this process's timing state):

- the serial cost of one item, measured on its serial runs (the first two runs of a
  batch entry are serial: the first one compiles; so is any batch whose estimated
  serial work is under ``PARALLEL_MIN_S``, too short to gain from threads; one under
  ``UNTIMED_S`` runs without the clock reads and leaves the estimate to larger ones);
- when two parallel runs in a row took longer than the serial estimate, or one took
  ``DESCHEDULED_S`` longer (a worker that waited for a core busy elsewhere: a time
  slice of milliseconds), batches run serially for ``backoff`` seconds, then parallel
  runs probe again; the backoff doubles up to ``BACKOFF_MAX_S`` with each such loss and
  resets after ``WINS_TO_RESET`` wins in a row. Two mild losses, because the first
  parallel run after a serial spell also wakes Numba's sleeping worker threads (tens of
  us on idle cores): judged alone, it lost often enough to keep idle batches serial.
  One costly loss, because with another process on the cores most parallel runs still
  win (the woken worker preempts it) while some wait a whole time slice: milliseconds
  against tens of us gained on a 4-item talos aba_derivatives batch, which stayed 0.78x
  a loop while every win reset the backoff. A losing probe costs at most a time slice
  per backoff period, so a loaded machine pays about 1 % for the probes.

``policy.forced("serial" | "parallel")`` overrides the choice in a ``with`` block (tests
run both paths; a user may pin one).

The first time a batch would go parallel, its ``*_parallel`` entry may not be compiled
yet (no ``rbdiff compile``): background.py compiles it in a child process (one on the
machine: processes needing the same entry share it), and batches run serially until it
is ready, instead of stopping the user's loop for seconds.

Serial runs call ``*_batch`` on the calling thread: no other thread is woken, so nothing
waits on the scheduler. The public functions' float64 fast paths pass :func:`fast_pair`:
its serial entry is the compiled function itself, without Numba's type dispatch (~0.4 us
of a 4-item batch of 1.4 us kernels). Plans are keyed by the parallel entry, which both
pairs share. The number of threads is Numba's (``NUMBA_NUM_THREADS``,
``numba.set_num_threads``); rbdiff never changes it, nor the threading layer.
"""

from contextlib import contextmanager
from time import perf_counter

import numba.np.ufunc.parallel
import numpy as np

from ..kernels.jit import native
from . import background
from .scratch import HELD, model_table

PARALLEL_MIN_S = 40e-6    # serial work below which a parallel region cannot pay off
UNTIMED_S = 10e-6         # serial work below which a run leaves the estimate alone (the
                          # two clock reads would cost a tenth of it)
LOSS = 0.9                # a parallel run slower than LOSS x the serial estimate lost
BACKOFF_MIN_S = 0.05
BACKOFF_MAX_S = 2.0
DESCHEDULED_S = 0.5e-3    # a parallel run this much over the serial estimate waited for a
                          # descheduled worker (a worker's wake-up costs tens of us)
WINS_TO_RESET = 8         # parallel wins in a row that reset the backoff


class Plan:
    """Timing state of one batch entry point on one model."""
    __slots__ = ("item_s", "untimed", "serial_runs", "serial_until", "backoff", "lost",
                 "wins", "ready", "child")

    def __init__(self):
        self.item_s = None          # serial seconds per item (None: not measured yet)
        self.untimed = 0.0          # batches smaller than this run serially, untimed
        self.serial_runs = 0
        self.serial_until = 0.0     # perf_counter() time before which batches run serially
        self.backoff = BACKOFF_MIN_S
        self.lost = False           # the last parallel run lost
        self.wins = 0               # parallel runs won in a row
        self.ready = False          # the parallel entry is compiled (background.py)
        self.child = None           # its background compile (poll()), while it runs

    def __reduce__(self):
        """A pickled or copied plan starts fresh: timings are this process's (and a
        compiling child process cannot be pickled)."""
        return Plan, ()


def get_num_threads():
    """numba.get_num_threads(). The public function takes a lock on every call (~0.65
    us, half the overhead of a 4-item batch); once the threads are launched, this
    rebinds itself to the threading layer's own getter (~0.09 us), where Numba has it."""
    n = numba.get_num_threads()
    fast = getattr(numba.np.ufunc.parallel, "_get_num_threads", None)
    if callable(fast) and fast() == n:
        globals()["get_num_threads"] = fast
    return n


_MODES = ("auto", "serial", "parallel")
_forced = ["auto"]
# model digest -> {parallel entry -> Plan}: equal models (two loads of one file) share
# plans; updated without a lock (dict operations are atomic under the GIL, and a lost
# update only perturbs an estimate)
_PLANS = {}
_PLANS_MAX = 4096       # models remembered (then forgotten all at once: timings only)


@contextmanager
def forced(mode):
    """Run every batch in the block serially ("serial"), on all Numba threads
    ("parallel") or as the plans decide ("auto")."""
    if mode not in _MODES:
        raise ValueError(f"mode: expected one of {_MODES}, got {mode!r}")
    before = _forced[0]
    _forced[0] = mode
    try:
        yield
    finally:
        _forced[0] = before


def plan_of(model, parallel):
    """The plan of the batch pair with parallel entry ``parallel`` on ``model`` (made on
    first use)."""
    plans = model_table(_PLANS, model, _PLANS_MAX)
    p = plans.get(parallel)
    if p is None:
        p = plans.setdefault(parallel, Plan())
    return p


def fast_pair(serial, parallel, inputs=(2, 3, 4)):
    """[serial, parallel] for a fast path that has checked that its arguments are float64
    ndarrays of the entry's ndim: ``serial`` is rebound on its first call to the entry
    compiled for that call's types (kernels.jit.native; the user's arrays at positions
    ``inputs`` for any strides). Slow paths pass the dispatchers: any dtype."""
    pair = [None, parallel]
    pair[0] = native(serial, 0, pair, inputs)
    _FAST[serial, parallel] = pair
    return pair


_FAST = {}      # (serial, parallel) -> its fast_pair
_F64 = np.dtype(np.float64)


def fast_or(batched, dtype):
    """The fast pair of ``batched`` = (serial, parallel) where one was made and ``dtype``
    is float64, else ``batched``: for a general path that has made its arguments ndarrays
    of ``dtype`` (fext C-contiguous (B, k, 6)), so that float64 runs the machine code the
    fast path compiled (not a second specialisation of C-contiguous inputs). Compared
    with ==: an unpickled dtype is a copy, not np.float64's own."""
    return _FAST.get(tuple(batched), batched) if dtype == _F64 else batched


def _estimate(p, item):
    """Fold a serial run's seconds per item into the plan's estimate."""
    p.serial_runs += 1
    # a faster run replaces the estimate (the first run compiles; a preempted run is
    # slow, never fast), a slower one moves it by an eighth
    if p.item_s is None or item < p.item_s:
        p.item_s = item
    else:
        p.item_s += 0.125 * (item - p.item_s)
    if p.serial_runs >= 2:
        p.untimed = UNTIMED_S / max(p.item_s, 1e-12)


def run(model, serial, parallel, batch, args, options=(), few=None):
    """serial(*args, *options, True), parallel(*args, *options, nchunks) or, for a batch
    too small to time, few(*args, *options, ws) where a fast path passes ``few`` (an
    entry holding the GIL on scratch.HELD's single-call workspace, batch.aba_few), as
    the plan decides (both check every item before computing any: a bad batch raises ValueError
    with a cpu.checks code and writes nothing); ``args`` are the entry's (mi, mf,
    inputs..., outputs...), every input and output with leading axis ``batch``. Written
    flat: it is on every batch call's path."""
    if _forced[0] != "auto" or batch == 0:
        if _forced[0] == "parallel":
            parallel(*args, *options, min(get_num_threads(), max(batch, 1)))
        else:
            serial(*args, *options, True)
        return
    plans = _PLANS.get(model._digest)     # plan_of, inlined: on every batch call's path
    p = None if plans is None else plans.get(parallel)
    if p is None:
        p = plan_of(model, parallel)
    if batch < p.untimed:                   # far too small for threads: not even timed
        if few is None:
            serial(*args, *options, True)
        else:
            few(*args, *options, HELD[model._scratch_key])
        return
    t0 = perf_counter()
    n = 0
    # one item has nothing to share among threads, however long it takes
    if (p.serial_runs >= 2 and batch >= 2 and p.item_s * batch >= PARALLEL_MIN_S
            and t0 >= p.serial_until):
        n = get_num_threads()
    if n < 2:       # timed: an estimate too high (a slow second run) must come down
        serial(*args, *options, True)
        _estimate(p, (perf_counter() - t0) / batch)
        return
    nch = min(n, batch)
    if not p.ready and not background.ready(p, parallel, (*args, *options, nch)):
        serial(*args, *options, True)       # its parallel entry compiles in a child
        return
    parallel(*args, *options, nch)
    took = perf_counter() - t0
    est = p.item_s * batch
    if took > LOSS * est:
        p.wins = 0
        if p.lost or took - est > DESCHEDULED_S:    # back off (the module docstring)
            p.serial_until = perf_counter() + p.backoff
            p.backoff = min(2 * p.backoff, BACKOFF_MAX_S)
            p.lost = False
        else:
            p.lost = True
    else:
        p.lost = False
        p.wins += 1
        if p.wins >= WINS_TO_RESET:
            p.backoff = BACKOFF_MIN_S
        if took * n < est:                        # n x parallel time bounds the serial
            p.item_s = took * n / batch
            p.untimed = UNTIMED_S / max(p.item_s, 1e-12)
