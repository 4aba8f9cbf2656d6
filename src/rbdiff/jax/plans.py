"""The serial / parallel decision of rbdiff.jax's handlers, made per call at run time
with rbdiff.cpu.policy's rule and constants.

A jitted computation is compiled once for its batch size, so the decision cannot be
made at trace time (a fixed item threshold ignores the model's cost and the machine's
load). Each (model, kernel) gets a row of ``PLANS`` (a slot, assigned at trace time by
calls.py and passed in the handler's options); the handler (ffi._serve) then does what
rbdiff.cpu.policy.run does for a NumPy batch:

- the first two runs, and any batch whose estimated serial work is under
  policy.PARALLEL_MIN_S, run serially on XLA's thread, timed: the serial seconds per
  item (a faster run replaces the estimate, a slower one moves it by an eighth); a batch
  under policy.UNTIMED_S of work runs untimed;
- a larger batch runs on the parallel entry (calls.py linked it at trace time); a
  parallel run slower than policy.LOSS x the serial estimate lost, two losses in a row
  send batches serial for a backoff that doubles from policy.BACKOFF_MIN_S up to
  policy.BACKOFF_MAX_S while probes keep losing, and resets when one wins;
- policy.forced("serial" | "parallel") at trace time pins the computation's choice.

The table and the monotonic clock (libc's clock_gettime) are reached through symbols
registered with LLVM (as entries.py's table), so handlers loaded from the on-disk cache
never hold a process's addresses. Rows are updated without a lock: XLA may run two
handlers at once, and a lost update only perturbs an estimate.
"""

import ctypes
import ctypes.util

import llvmlite.binding as ll
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from ..cpu import policy

PLANS_SYMBOL = "rbdiff_jax_plans"
CLOCK_SYMBOL = "rbdiff_jax_clock_gettime"
NPLANS = 4096
# row: item_s (0: not measured), serial_runs, untimed (items), serial_until (s),
# backoff (s), lost (0 / 1)
ITEM, RUNS, UNTIMED, UNTIL, BACKOFF, LOST = range(6)
WIDTH = 6
AUTO, SERIAL, PARALLEL = 0, 1, 2

PLANS = np.zeros((NPLANS, WIDTH), np.float64)
ll.add_symbol(PLANS_SYMBOL, PLANS.ctypes.data)
_libc = ctypes.CDLL(ctypes.util.find_library("c") or None)
ll.add_symbol(CLOCK_SYMBOL, ctypes.cast(_libc.clock_gettime, ctypes.c_void_p).value)

_SLOTS = {}       # (id(model), kernel name) -> (model, slot): the model kept, its id unique


def slot(model, name):
    """The plan row of kernel ``name`` on ``model`` (a fresh row on first use; -1 when the
    table is full: such calls run serially)."""
    hit = _SLOTS.get((id(model), name))
    if hit is None or hit[0] is not model:
        # from row 1: options [0, 0, 0, 0] are a splat constant, which XLA turns into a
        # broadcast run on every call (a thunk: a fraction of a us of a small call)
        k = len(_SLOTS) + 1
        if k >= NPLANS:
            return -1
        PLANS[k] = 0.0
        PLANS[k, BACKOFF] = policy.BACKOFF_MIN_S
        hit = _SLOTS[(id(model), name)] = (model, k)
    return hit[1]


def mode():
    """policy.forced's mode now, as the handler's option (AUTO, SERIAL, PARALLEL)."""
    return {"auto": AUTO, "serial": SERIAL, "parallel": PARALLEL}[policy._forced[0]]


@intrinsic
def now(typingctx):
    """Monotonic seconds (clock_gettime(CLOCK_MONOTONIC)) as a float64."""
    def codegen(context, builder, signature, args):
        i32, i64 = ir.IntType(32), ir.IntType(64)
        ts_ty = ir.ArrayType(i64, 2)
        mod = builder.module
        fn = mod.globals.get(CLOCK_SYMBOL)
        if fn is None:
            fn = ir.Function(mod, ir.FunctionType(i32, [i32, ts_ty.as_pointer()]),
                             CLOCK_SYMBOL)
        ts = builder.alloca(ts_ty)
        builder.call(fn, [ir.Constant(i32, 1), ts])          # CLOCK_MONOTONIC
        zero = ir.Constant(i32, 0)
        sec = builder.load(builder.gep(ts, [zero, zero]))
        nsec = builder.load(builder.gep(ts, [zero, ir.Constant(i32, 1)]))
        d = ir.DoubleType()
        return builder.fadd(builder.sitofp(sec, d),
                            builder.fmul(builder.sitofp(nsec, d), ir.Constant(d, 1e-9)))
    return types.float64(), codegen


@intrinsic
def table_address(typingctx):
    """The address of PLANS' data (through its symbol) as an int64."""
    def codegen(context, builder, signature, args):
        mod = builder.module
        g = mod.globals.get(PLANS_SYMBOL)
        if g is None:
            g = ir.GlobalVariable(mod, ir.ArrayType(ir.DoubleType(), NPLANS * WIDTH),
                                  PLANS_SYMBOL)
            g.linkage = "external"
        return builder.ptrtoint(g, ir.IntType(64))
    return types.int64(), codegen
