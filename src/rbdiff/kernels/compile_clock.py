"""Seconds this process has spent compiling with Numba, so that timings of compute
(trajopt's res.timings, benchmarks) can leave compilation out.

Numba signals each compilation with a "numba:compile" event (not a cache load); a
compile of an entry nests the compiles of its callees, so only the outermost interval of
each thread counts.
"""

import threading
import time

from numba.core import event

_local = threading.local()
_lock = threading.Lock()
_total = 0.0


class _Clock(event.Listener):
    def on_start(self, ev):
        depth = getattr(_local, "depth", 0)
        if depth == 0:
            _local.t0 = time.perf_counter()
        _local.depth = depth + 1

    def on_end(self, ev):
        global _total
        _local.depth -= 1
        if _local.depth == 0:
            dt = time.perf_counter() - _local.t0
            with _lock:
                _total += dt


event.register("numba:compile", _Clock())


def seconds():
    """Total seconds spent in Numba compilation in this process so far (every thread)."""
    return _total
