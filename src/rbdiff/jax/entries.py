"""rbdiff.cpu.batch's entries called by address from the FFI handlers (ffi.py).

A handler that called a batch entry directly would link it: Numba copies the entry's
whole call tree into the handler and compiles it again (6-15 s per handler, cold). Here
a handler calls through a table of function pointers instead, with Numba's own calling
convention, so it compiles in about a second and the entries stay those rbdiff compiles
and caches for every other caller.

- ``SLOTS``: the entries a handler may call, each with the one signature it is compiled
  for (C-contiguous arrays; the model's read-only).
- The table lives in a NumPy array whose address is registered with LLVM under a fixed
  symbol name (``TABLE_SYMBOL``): a handler's machine code, fresh or loaded from the
  cache, refers to it by that name, never by a process's addresses.
- ``link(names)`` compiles (or loads) the entries and writes their addresses; calls.py
  links a handler's serial entries before it registers the handler, and its parallel
  ones the first time it asks for a parallel run (a small batch never compiles one).
- Slot numbers are compiled into the handlers as constants: ffi.py's functions use the
  hardened cache (kernels/jit.cached_njit), so an edit to ``SLOTS`` recompiles them.
- ``run(slot, nch, args)`` (an intrinsic) picks the parallel or the serial entry of a
  pair, checks ``args`` against their signature at compile time and returns True when
  the entry ran without raising.
"""

import llvmlite.binding as ll
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils, errors
from numba.extending import intrinsic

from ..cpu import background
from ..cpu import batch as cb
from ..cpu import centroidal as cc
from ..cpu import contacts as ccon
from ..cpu import frame_motion as cfm

TABLE_SYMBOL = "rbdiff_jax_batch_entries"

# the model's arrays are read-only (R), as rbdiff's own batched calls pass them, so both
# callers share one compiled entry; a handler's writable views convert to them
_A1, _A2, _A3, _A4 = (types.Array(types.float64, d, "C") for d in (1, 2, 3, 4))
_N = types.none           # an optional input or output left out (cpu/centroidal.py)
_R1i, _R2i = (types.Array(types.int64, d, "C", readonly=True) for d in (1, 2))
_R2 = types.Array(types.float64, 2, "C", readonly=True)
_I, _B, _F = types.int64, types.boolean, types.float64
_DYN = (_R2i, _R2, _A2, _A2, _A2, _A3)       # mi, mf, q, v, u, fext
_FR = (_R2i, _R2, _R1i, _R2, _A2)            # mi, mf, frame_parents, frame_mf, q


OWNER = {}          # entry name -> the rbdiff.cpu module that defines it (else cpu.batch)


def _pair(name, *args, module=cb):
    """(name_batch, signature), (name_parallel, signature): the serial entry takes
    ``check``, the parallel one the number of chunks."""
    if module is not cb:
        OWNER[f"{name}_batch"] = OWNER[f"{name}_parallel"] = module
    return [(f"{name}_batch", args + (_B,)), (f"{name}_parallel", args + (_I,))]


def dispatcher(name):
    """The compiled entry ``name`` (a Numba dispatcher)."""
    return getattr(OWNER.get(name, cb), name)



SLOTS = (_pair("rnea", *_DYN, _A2) + _pair("aba", *_DYN, _A2)
         + _pair("crba", _R2i, _R2, _A2, _A3) + _pair("minverse", _R2i, _R2, _A2, _A3)
         + _pair("nonlinear_effects", _R2i, _R2, _A2, _A2, _A2)
         + _pair("gravity", _R2i, _R2, _A2, _A2)
         + _pair("rnea_derivatives", *_DYN, _A3, _A3, _A3)
         + _pair("aba_derivatives", *_DYN, _A3, _A3, _A3)
         + _pair("rnea_second_order", *_DYN, _A4, _A4, _A4, _A4)
         + _pair("aba_second_order", *_DYN, _A4, _A4, _A4, _A4, _I, _I)
         + _pair("frame_placement", *_FR, _A3, _I)
         + _pair("frame_jacobian", *_FR, _A3, _I, _I)
         # contact kinematics (issue 24): frame options (frame, reference[, classical])
         + _pair("frame_velocity", *_FR, _A2, _A2, _I, _I, module=cfm)
         + _pair("frame_acceleration", *_FR, _A2, _A2, _A2, _I, _I, _I, module=cfm)
         + _pair("frame_velocity_derivatives", *_FR, _A2, _A3, _A3, _I, _I, module=cfm)
         + _pair("frame_acceleration_derivatives", *_FR, _A2, _A2, _A3, _A3, _A3, _A3, _I, _I,
                 _I, module=cfm)
         + _pair("center_of_mass", _R2i, _R2, _A2, _N, _N, _A2, _N, _N, module=cc)
         + _pair("com_jacobian", _R2i, _R2, _A2, _A3, module=cc)
         + _pair("centroidal_momentum", _R2i, _R2, _A2, _A2, _N, _A2, _N, module=cc)
         + _pair("centroidal_derivatives", _R2i, _R2, _A2, _A2, _A2, _A3, _A3, _A3, _A3,
                 module=cc)
         + _pair("kinetic_energy", _R2i, _R2, _A2, _A2, _A1, module=cc)
         + _pair("potential_energy", _R2i, _R2, _A2, _A1, module=cc)
         # contact and impulse dynamics: the packed contact tables (read-only, as
         # contacts.pack makes them) and damping (impulses: restitution, damping)
         + _pair("contact_dynamics", *_FR, _A2, _A2, _A3, _A2, _A2, _R2i, _R2, _F,
                 module=ccon)
         + _pair("contact_dynamics_derivatives", *_FR, _A2, _A2, _A3, *(_A3,) * 6, _R2i,
                 _R2, _F, module=ccon)
         + _pair("impulse_dynamics", *_FR, _A2, _A2, _A2, _R2i, _R2, _F, _F, module=ccon)
         + _pair("impulse_dynamics_derivatives", *_FR, _A2, *(_A3,) * 4, _R2i, _R2, _F, _F,
                 module=ccon))
SLOT = {name: k for k, (name, _) in enumerate(SLOTS)}

_TABLE = np.zeros(len(SLOTS), np.int64)
ll.add_symbol(TABLE_SYMBOL, _TABLE.ctypes.data)


_PREFETCH = {}       # entry name -> its background compile (cpu.background), this process


def prefetch(names, urgent=False):
    """Start compiling the entries ``names`` in background children (cpu.background:
    one per entry and machine) where they are neither compiled nor cached, for a later
    link() to load instead of compiling them in the caller (``urgent``: soon, at normal
    priority)."""
    for name in names:
        k = SLOT[name]
        dispatcher_, sig = dispatcher(name), SLOTS[k][1]
        if _TABLE[k] or name in _PREFETCH or sig in dispatcher_.overloads \
                or background._cached(dispatcher_, sig) is not False:
            continue
        job = background._spawn(dispatcher_, sig, urgent)
        if job is not None:
            _PREFETCH[name] = job


def link_or_prefetch(names):
    """link() the entries ``names`` that are compiled, cached or done compiling in the
    background; start the others compiling in background children (a first large
    batch then runs serially instead of stopping for a parallel entry's compile, and a
    later trace or eager call links them). Where no child can start, link() them now."""
    now = []
    for name in names:
        k = SLOT[name]
        if _TABLE[k]:
            continue
        dispatcher_, sig = dispatcher(name), SLOTS[k][1]
        job = _PREFETCH.get(name)
        if job is not None:
            if job.poll() is not None:
                now.append(name)
            continue
        if sig in dispatcher_.overloads or background._cached(dispatcher_, sig) is not False:
            now.append(name)
            continue
        prefetch([name])
        if name not in _PREFETCH:        # background compiles off or impossible here
            now.append(name)
    link(now)


def link(names):
    """Compile (or load from the cache) the entries ``names`` for their slots'
    signatures and write their native addresses into the table; an entry compiling in
    a background child (prefetch) is waited for, then loaded."""
    for name in names:
        k = SLOT[name]
        if _TABLE[k]:
            continue
        dispatcher_ = dispatcher(name)
        sig = SLOTS[k][1]
        job = _PREFETCH.pop(name, None)
        if job is not None:          # its compile is under way: less to wait than to do
            job.wait()
        dispatcher_.compile(sig)
        cres = dispatcher_.overloads[sig]
        addr = cres.library.get_pointer_to_function(cres.fndesc.llvm_func_name)
        if not addr:
            raise RuntimeError(f"rbdiff.jax: no native address for {name}")
        _TABLE[k] = addr


@intrinsic
def run(typingctx, slot, nch, args):
    """The pair in table slots ``slot`` (a constant: a ``name_batch`` slot) and
    ``slot + 1`` (its ``name_parallel`` twin) on the tuple ``args`` (the arguments both
    share): the parallel entry on ``nch`` chunks when ``nch`` > 0 and it is linked, else
    the serial one with its input check on. True when the entry returned normally, False
    when it raised (a refused input) or is not linked."""
    if not isinstance(slot, types.IntegerLiteral) or not isinstance(args, types.BaseTuple):
        raise errors.TypingError("run(slot, nch, args): slot a constant, args a tuple")
    k = slot.literal_value
    name, sig = SLOTS[k]
    given = tuple(types.unliteral(t) for t in args.types)
    ok = name.endswith("_batch") and len(given) == len(sig) - 1 and all(
        (g == s or g.copy(readonly=True) == s) if isinstance(s, types.Array)
        else g == s if s == _N
        else isinstance(g, (types.Integer, types.Float)) if s == _F
        else isinstance(g, (types.Integer, types.Boolean)) for g, s in zip(given, sig))
    if not ok:
        raise errors.TypingError(f"run({name}): arguments {given}, expected {sig[:-1]}")

    def codegen(context, builder, signature, cargs):
        vals = [builder.extract_value(cargs[2], i) for i in range(len(given))]
        chunks = context.cast(builder, cargs[1], nch, types.int64)
        parallel = _table_entry(builder, k + 1)
        ran = cgutils.alloca_once_value(builder, cgutils.false_bit)
        use = builder.and_(builder.icmp_signed(">", chunks, chunks.type(0)),
                           builder.icmp_unsigned("!=", parallel, parallel.type(0)))
        with builder.if_else(use) as (on_chunks, serially):
            with on_chunks:
                builder.store(_invoke(context, builder, parallel, SLOTS[k + 1][1],
                                      args.types, vals, chunks, types.int64), ran)
            with serially:
                serial = _table_entry(builder, k)
                with builder.if_then(builder.icmp_unsigned("!=", serial, serial.type(0))):
                    builder.store(_invoke(context, builder, serial, sig, args.types, vals,
                                          cgutils.true_bit, types.boolean), ran)
        return builder.load(ran)
    return types.boolean(slot, nch, args), codegen


def _invoke(context, builder, addr, sig, argtys, vals, last, lastty):
    """Call the entry at ``addr`` (signature ``sig``) on vals (typed argtys) + (last,)
    with Numba's calling convention; True when it did not raise."""
    vals = [context.cast(builder, v, t, s) for v, t, s in zip(vals, argtys, sig)] + [last]
    fnty = context.call_conv.get_function_type(types.none, sig)
    fn = builder.inttoptr(addr, fnty.as_pointer())
    status, _ = context.call_conv.call_function(builder, fn, types.none, sig, vals)
    return builder.not_(status.is_error)


def _table_entry(builder, k):
    """The address in table slot k (the table declared in this module if need be)."""
    mod = builder.module
    table = mod.globals.get(TABLE_SYMBOL)
    if table is None:
        table = ir.GlobalVariable(mod, ir.ArrayType(ir.IntType(64), len(SLOTS)),
                                  TABLE_SYMBOL)
        table.linkage = "external"
    return builder.load(builder.gep(table, [ir.Constant(ir.IntType(32), 0),
                                            ir.Constant(ir.IntType(32), k)]))
