"""New output arrays for large batches, without a page fault per page on every call.

A batch's outputs are fresh arrays the caller owns. Past glibc's mmap threshold
(128 KiB, raised by each free up to the freed size; the heap is trimmed past twice that)
a fresh multi-megabyte array is new memory: every 4 KiB page faults and is zeroed by the
kernel on first write. Measured on hyq, rnea_derivatives, B = 256 (3 x 0.66 MB): 8.6 us
an item with new arrays against 4.3 with ``out=``, run serially, so the batch lost to a
loop of single calls (whose small arrays malloc recycles).

So the outputs of a large batch are views of one block that this module keeps (per thread,
a few blocks) and hands out again once the caller has let go of every view of it: the
block's reference count says so (the views hold it as their ``base``). A caller who
keeps the arrays gets a new block next time; nothing the caller holds is ever reused.
The arrays are C-contiguous, aligned to 64 bytes, ``base`` is the block (``owndata``
False), and their contents are undefined until the entry writes them (as np.empty's).
"""

import sys
import threading
from math import prod

import numpy as np

MIN_BYTES = 1 << 17      # smaller outputs come from malloc's free lists already
MAX_BYTES = 1 << 26      # larger blocks are not kept (64 MiB: what a thread may hold idle)
KEEP = 3                 # blocks kept per thread (the most recent)
_ALIGN = 64              # bytes: each array starts on a cache line

_local = threading.local()
_getrefcount = sys.getrefcount


def _scan(pool, n, dtype):
    """The index of an entry (block, start, size) of ``pool`` whose block no array holds
    any more, of ``n`` items of ``dtype``, or -1. (The reference count read here is _FREE
    for a free block.)"""
    for k, (b, start, size) in enumerate(pool):
        if size == n and b.dtype == dtype and _getrefcount(b) <= _FREE:
            return k
    return -1


def _calibrate():
    """The reference count that _scan reads for a block only the pool holds (the
    interpreter's own references differ between Python versions): the least _FREE at
    which _scan finds a block nothing else holds."""
    global _FREE
    for _FREE in range(1, 16):
        if _scan([(np.empty(1), 0, 1)], 1, np.dtype(np.float64)) == 0:
            return
    raise RuntimeError("rbdiff.cpu.outputs: no reference count marks a free block")


_calibrate()


def _padded(n, itemsize):
    return -(-n * itemsize // _ALIGN) * _ALIGN // itemsize


def pooled(shapes, dtype=np.float64):
    """Whether ``empty`` hands out arrays of ``shapes`` from a kept block (else each is
    np.empty's: what a caller that knows its shapes in advance may call itself)."""
    dtype = np.dtype(dtype)
    n = sum(_padded(prod(s), dtype.itemsize) for s in shapes)
    return MIN_BYTES <= n * dtype.itemsize <= MAX_BYTES


def empty(shapes, dtype=np.float64):
    """New arrays of ``shapes`` (a sequence of tuples) and ``dtype``, each as np.empty's;
    those of a large batch share a kept block (see the module docstring)."""
    dtype = np.dtype(dtype)
    sizes = [_padded(prod(s), dtype.itemsize) for s in shapes]
    n = sum(sizes)
    if not MIN_BYTES <= n * dtype.itemsize <= MAX_BYTES:
        return tuple(np.empty(s, dtype) for s in shapes)
    pool = getattr(_local, "pool", None)
    if pool is None:
        pool = _local.pool = []
    k = _scan(pool, n, dtype)
    if k < 0:
        pad = _ALIGN // dtype.itemsize
        block = np.empty(n + pad, dtype)
        start = (-block.ctypes.data % _ALIGN) // dtype.itemsize
        block = block[start:start + n]       # a view: its base is the block counted
        entry = (block.base, start, n)
        if len(pool) >= KEEP:
            del pool[0]
    else:
        entry = pool.pop(k)
        block = entry[0][entry[1]:entry[1] + n]
    pool.append(entry)                       # most recent last
    del entry
    out, at = [], 0
    for s, n in zip(shapes, sizes):
        out.append(block[at:at + prod(s)].reshape(s))
        at += n
    return tuple(out)


def clear():
    """Let go of this thread's kept blocks (the memory returns to malloc)."""
    _local.pool = []
