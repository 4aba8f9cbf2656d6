"""Compiled code calls rbdiff's entries by address: ``twin(aba_batch, args)``.

Parallel batch entries call their serial twin this way, and trajopt's rollout the single
entries (``twin_later`` for those a problem may never reach: compiled on first use).
``ahead(fn, args)`` then ``twin_later(fn, args)`` cuts an entry's call tree in two: where
the caller compiles, ``ahead`` (placed first: Numba types a function's statements in
order) starts ``fn`` compiling in a background child (cpu/background.py), the caller
compiles the rest meanwhile, and the call's first run waits for the child and loads
``fn``: a cold first call compiles on two cores (aba_second_order_one: FDSVA-SO's terms
apart from its products).

A parallel entry that called ``aba_batch`` directly would link it: Numba types the
twin's whole call tree again (when the twin came from the cache) and LLVM optimises it
again inside the parallel entry's module, seconds to tens of seconds per entry for code
that is already compiled. Through ``twin`` the parallel entry compiles only its own
checks and ``prange`` loop, and calls the twin's machine code, compiled and cached once
for every caller (as rbdiff.jax's handlers do, jax/entries.py).

How: at typing, the twin is compiled (or loaded) for the call's argument types
(``twin_later``: at the call's first run, by the same callback). The
call site gets a cell (a global in the caller's module, zero when loaded) and the twin's
key (module, name and signature, pickled into a constant). The first call through a
cell asks :func:`_resolve` (a C callback registered under a fixed symbol, so cached
machine code finds it in any process) for the twin's address in this process; later
calls read the cell. A twin that cannot be found raises RuntimeError in the caller.
"""

import ctypes
import hashlib
import importlib
import pickle

import llvmlite.binding as ll
from llvmlite import ir
from numba import types
from numba.core import cgutils, config, errors
from numba.extending import intrinsic

from ..kernels.jit import variant

RESOLVE_SYMBOL = "rbdiff_cpu_twin_resolve"

_ADDRESS = {}        # pickled key -> the twin's native address in this process


def _address(dispatcher, sig):
    """The native address of ``dispatcher`` compiled (or loaded) for ``sig``; a compile
    of it under way in a background child (ahead) is waited for, then loaded."""
    if sig not in dispatcher.overloads:
        from . import background
        py = dispatcher.py_func
        job = background._pending.pop((py.__module__, py.__name__, sig), None)
        if job is not None:
            job.wait()
    dispatcher.compile(sig)
    cres = dispatcher.overloads[sig]
    return cres.library.get_pointer_to_function(cres.fndesc.llvm_func_name)


@ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64)
def _resolve(key, n):
    """The address of the twin whose pickled (module, name, signature) is the n bytes at
    ``key``; 0 when it cannot be had (the caller then raises). Runs with the GIL
    (ctypes takes it), once per call site and process."""
    data = ctypes.string_at(key, n)
    try:
        addr = _ADDRESS.get(data)
        if addr is None:
            module, name, sig, rtype = pickle.loads(data)
            dispatcher = getattr(importlib.import_module(module), name)
            addr = _address(dispatcher, sig)
            if rtype is not None and dispatcher.overloads[sig].signature.return_type != rtype:
                return 0             # twin_later's caller assumed another return type
            _ADDRESS[data] = addr
        return addr
    except Exception:        # noqa: BLE001 -- an exception cannot cross into compiled code
        return 0


ll.add_symbol(RESOLVE_SYMBOL, ctypes.cast(_resolve, ctypes.c_void_p).value)


def _typing(fn, args, eager, later=types.none):
    """(return type, codegen) of a call of entry ``fn`` on ``args`` by address: compiled
    now (``eager``: its return type read off the compiled entry) or on the first call
    (then it must return ``later``)."""
    if not isinstance(fn, types.Dispatcher) or not isinstance(args, types.BaseTuple):
        raise errors.TypingError("twin(fn, args): fn a compiled entry, args a tuple")
    dispatcher = fn.dispatcher
    sig = variant(dispatcher, tuple(types.unliteral(t) for t in args.types))
    if eager:
        dispatcher.compile(sig)
        rtype = dispatcher.overloads[sig].signature.return_type
    else:
        rtype = later
    py = dispatcher.py_func
    key = pickle.dumps((py.__module__, py.__qualname__, sig, None if eager else rtype))

    def codegen(context, builder, signature, cargs):
        mod = builder.module
        i64 = ir.IntType(64)
        tag = hashlib.sha1(key).hexdigest()[:16]
        cell = mod.globals.get(f"rbdiff_twin_cell.{tag}")
        if cell is None:
            cell = cgutils.add_global_variable(mod, i64, f"rbdiff_twin_cell.{tag}")
            cell.linkage = "internal"
            cell.initializer = i64(0)
            const = cgutils.global_constant(mod, f"rbdiff_twin_key.{tag}",
                                            cgutils.make_bytearray(key))
        else:
            const = mod.globals[f"rbdiff_twin_key.{tag}"]
        resolve = cgutils.get_or_insert_function(
            mod, ir.FunctionType(i64, [cgutils.voidptr_t, i64]), RESOLVE_SYMBOL)
        with builder.if_then(cgutils.is_null(builder, builder.load(cell)), likely=False):
            addr = builder.call(resolve, [builder.bitcast(const, cgutils.voidptr_t),
                                          i64(len(key))])
            with builder.if_then(cgutils.is_null(builder, addr), likely=False):
                context.call_conv.return_user_exc(
                    builder, RuntimeError, (f"rbdiff: {py.__qualname__} could not be "
                                            "compiled or loaded for a call by address",))
            builder.store(addr, cell)
        fnty = context.call_conv.get_function_type(rtype, sig)
        fptr = builder.inttoptr(builder.load(cell), fnty.as_pointer())
        vals = [context.cast(builder, builder.extract_value(cargs[1], i), t, s)
                for i, (t, s) in enumerate(zip(args.types, sig))]
        status, res = context.call_conv.call_function(builder, fptr, rtype, sig, vals)
        with cgutils.if_unlikely(builder, status.is_error):
            context.call_conv.return_status_propagate(builder, status)
        return res
    return rtype(fn, args), codegen


@intrinsic
def twin(typingctx, fn, args):
    """``fn(*args)`` for a compiled entry ``fn`` (a global dispatcher), called by
    address instead of linked; returns what ``fn`` returns, raises what it raises."""
    return _typing(fn, args, True)


@intrinsic
def twin_later(typingctx, fn, args):
    """:func:`twin` for an entry that returns nothing and that a caller may never reach
    (trajopt's rollout on a problem without contacts): it compiles (or loads) on the
    call's first run, not when the caller compiles."""
    return _typing(fn, args, False)


@intrinsic
def twin_later_ok(typingctx, fn, args):
    """:func:`twin_later` for an entry that returns a bool (the fast paths' entries of
    cpu/single.py: whether they took their arguments, kernels.fastargs)."""
    return _typing(fn, args, False, types.boolean)


@intrinsic
def ahead(typingctx, fn, args):
    """No code: when the caller compiles, start compiling entry ``fn`` for ``args``'
    types in a background child, unless it is compiled or cached (cpu/background.py:
    one compile per machine) or no core is spare (background.spare_core); a later
    ``twin_later(fn, args)`` waits for the child on its first run and loads ``fn``.
    Where no child started, that run compiles it."""
    if not isinstance(fn, types.Dispatcher) or not isinstance(args, types.BaseTuple):
        raise errors.TypingError("ahead(fn, args): fn a compiled entry, args a tuple")
    dispatcher = fn.dispatcher
    sig = variant(dispatcher, tuple(types.unliteral(t) for t in args.types))
    if sig not in dispatcher.overloads:
        from . import background
        if (background.ENABLED and background._cached(dispatcher, sig) is False
                and background.spare_core()):
            background._spawn(dispatcher, sig, urgent=True)    # _address waits for it

    def codegen(context, builder, signature, cargs):
        return context.get_dummy_value()
    return types.none(fn, args), codegen


if config.DISABLE_JIT:       # plain Python (bench/fixed_point.py): an ordinary call
    def twin(fn, args):      # noqa: F811
        return fn(*args)

    twin_later = twin_later_ok = twin

    def ahead(fn, args):     # noqa: F811
        pass
