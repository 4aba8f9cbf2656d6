"""Compile policy, in one place.

``kernel``  marks algorithm math (a pass, a joint step): compiled by Numba for whatever
            target calls it, typed by its arguments, so one source serves float64,
            float32 and complex128 (complex step).
``helper``  marks the small fixed-size spatial-algebra functions. Compiled as ordinary
            out-of-line functions, which LLVM inlines into their callers when it links
            a caller's module (they are ``linkonce_odr`` there): no call remains in the
            hot loops. They used to be ``inline="always"``, inlined at Numba-IR level;
            that re-typed and re-lowered a helper's body at every call site, so a first
            call compiled for 6-56 s (aba_second_order_derivatives) instead of 1-5 s,
            for warm calls within noise (see README, "Compilation and the cache"). The
            GPU build still force-inlines them (gpu/compile.py asks :func:`is_helper`).
            Kernels and helpers have no Python (C API) or C-callable wrapper: compiled
            code calls them directly, and each wrapper cost ~10% of a cold start. Nor
            are they optimised at module level or turned into machine code on their own
            (link_only.py): the entry point that links them does that once for its whole
            call tree. A call from Python (tests, a few Python paths) goes to a twin
            compiled the ordinary way on first such call.
``entry``   compiles a CPU entry point: ``cache=True`` (compilation is the slow part of a
            cold start), ``error_model="numpy"`` (no ZeroDivisionError checks in hot loops:
            joint inertias are validated when the model is built), ``boundscheck=False``,
            ``nogil=True`` so Python threads can call in parallel.
``fast_entry`` an entry point compiled without Numba's runtime, for the single-call
            fast paths: its array arguments are then unboxed without a meminfo each
            (measured ~45 ns an array less), so it cannot allocate: the caller passes
            the scratch, which the model keeps. It holds the GIL (releasing and taking
            it back cost ~55 ns a call), so no two threads run on that scratch at once.
``held_entry`` a fast_entry that releases the GIL: for single calls whose scratch is the
            calling thread's own (the contacts' held scratch), so threads run in parallel.
``pentry``  ``entry`` with ``parallel=True`` for batch entry points (``prange``).
``native``  binds a compiled entry for a fast path, without Numba's type dispatch; its
            arguments typed ``fastargs.REF`` are checked in the entry, not in Python.
``native_ref`` the same for an entry that checks the user's arrays itself (fastargs'
            ``vector_arg``, ``state_args``): the fast path hands them over unchecked.

Entries are cached on disk (see README: where, and ``python -m rbdiff compile``); an edit
to any rbdiff source invalidates them, and writes are serialised across processes, so
parallel test workers and ``rbdiff compile`` can fill one cache (:func:`harden_cache`).
"""

import hashlib
import os
import re
import sys

import numba
import numpy as np
from numba.core import config, types
from numba.core.registry import CPUDispatcher

from . import compile_memo, fastcall
from ..model.warn import warn_user
from .link_only import LinkOnlyCompiler

try:
    import fcntl
except ImportError:          # Windows: no advisory locks
    fcntl = None

from .fastargs import AVAILABLE, REF, Shape

compile_memo.install()    # a third less compile time (compile_memo.py)
fastcall.install()        # entries callable without an argument tuple (fastcall.py)

_MATH = dict(error_model="numpy", boundscheck=False)
# kernels never allocate: views then cost no reference counting; no cfunc wrapper
# (C-callable, for first-class function values: unused here)
_NO_NRT = dict(_nrt=False, no_cfunc_wrapper=True)
_OPTS = dict(cache=True, nogil=True, no_cfunc_wrapper=True, **_MATH)


class InternalDispatcher(CPUDispatcher):
    """A Numba dispatcher compiled without wrappers, for calls from compiled code only.
    Calling it from Python runs a twin compiled with the Python wrapper (created on
    first use): the wrapperless entry point itself would crash the interpreter."""

    def get_call_template(self, args, kws):
        """Typed by the arguments' non-literal types: a constant argument (a dof count,
        a column index) compiles no specialisation of its own. Helpers are inlined by
        LLVM, which then folds the constant in as the literal type did."""
        return super().get_call_template(tuple(types.unliteral(a) for a in args),
                                         {k: types.unliteral(t) for k, t in kws.items()})

    def __call__(self, *args, **kwargs):
        twin = self.__dict__.get("_python_twin")
        if twin is None:
            twin = self._python_twin = numba.njit(**_MATH, **_NO_NRT)(self.py_func)
        return twin(*args, **kwargs)


def _internal(fn, **opts):
    if config.DISABLE_JIT:
        return fn
    pipeline = {} if LinkOnlyCompiler is None else dict(pipeline_class=LinkOnlyCompiler)
    return InternalDispatcher(py_func=fn, locals={}, targetoptions=dict(
        no_cpython_wrapper=True, **_MATH, **_NO_NRT, **opts), **pipeline)


def kernel(fn):
    # forceinline=False, said explicitly: Numba's callees inherit an unset forceinline
    # from the caller that compiles them first, so a kernel first reached through a
    # helper became alwaysinline, and LLVM copied it into every call site (cold
    # aba_second_order_derivatives: 42k instructions to optimise instead of 30k)
    return _internal(fn, forceinline=False)


def helper(fn):
    d = _internal(fn, forceinline=True)
    d._rbdiff_helper = True      # the GPU build force-inlines these (gpu/compile.py)
    return d


def is_helper(dispatcher):
    """True for a function made by :func:`helper`."""
    return getattr(dispatcher, "_rbdiff_helper", False)


def entry(fn):
    return _cached(fn, **_OPTS)


def fast_entry(fn):
    return _cached(fn, cache=True, nogil=False, **_MATH, **_NO_NRT)


def held_entry(fn):
    return _cached(fn, cache=True, nogil=True, **_MATH, **_NO_NRT)


def pentry(fn):
    return _cached(fn, parallel=True, **_OPTS)


class CompileNotice(UserWarning):
    """Said once per process, the first time an rbdiff entry point compiles instead of
    loading from Numba's on-disk cache (a first compile takes seconds to a minute);
    never when everything is cached, in ``python -m rbdiff compile``, or in the
    background compiles (cpu/background.py). Silence it with
    ``warnings.filterwarnings("ignore", category=rbdiff.kernels.jit.CompileNotice)``
    or ``rbdiff.kernels.jit.COMPILE_NOTICE = False``."""


COMPILE_NOTICE = True    # False: never say CompileNotice
_NOTICED = []            # set once this process has said it (or had nothing to say)
_NUMBA = os.path.dirname(os.path.abspath(numba.__file__)) + os.sep


def _notice(dispatcher):
    """Warn (CompileNotice) that ``dispatcher`` compiles, pointing at ``rbdiff compile``;
    only the first time in this process."""
    _NOTICED.append(dispatcher)
    # a process that imported the ahead-of-time compiler is compiling on purpose
    if not COMPILE_NOTICE or "rbdiff.precompile" in sys.modules:
        return
    # a CFunc (rbdiff.jax's FFI handlers) keeps its Python function as _pyfunc
    py = getattr(dispatcher, "py_func", None) or dispatcher._pyfunc
    try:
        warn_user(
            f"rbdiff: compiling {py.__module__}.{py.__qualname__} (not in Numba's cache "
            "yet; compiles take seconds each, once per machine); `python -m rbdiff "
            "compile` compiles every entry point ahead of time. Silence: warnings."
            "filterwarnings('ignore', category=rbdiff.kernels.jit.CompileNotice)",
            CompileNotice, skip=(_NUMBA,))
    except CompileNotice:    # -W error: a notice must not fail the compile
        pass


_UNCACHED = []     # set once no cache folder is writable: compile in memory from then on


def cached_njit(fn):
    """numba.njit(cache=True)(fn) with the entries' hardened cache (harden_cache): for
    compiled helpers outside the kernels, such as rbdiff.jax's handler code, whose
    cached machine code must not outlive an edit to another rbdiff file."""
    return _cached(fn, cache=True)


def _cached(fn, **opts):
    """numba.njit(**opts)(fn) with a hardened on-disk cache; where no cache folder is
    writable (a read-only install, no writable home, no NUMBA_CACHE_DIR) Numba refuses
    ``cache=True`` at import: compile in memory instead, and say so once."""
    if not _UNCACHED:
        try:
            return harden_cache(numba.njit(**opts)(fn))
        except RuntimeError as e:
            if "no locator available" not in str(e):
                raise
            _UNCACHED.append(e)
            import warnings
            warnings.warn("rbdiff: no writable folder for Numba's compile cache (rbdiff's "
                          "install folder, the user cache folder); every process compiles "
                          "again. Set NUMBA_CACHE_DIR to a writable folder to keep the "
                          "compiled code (README, 'Compilation and the cache').",
                          RuntimeWarning, stacklevel=3)
    return numba.njit(**dict(opts, cache=False))(fn)


# rooms that hold no compiled code and that no compiled code imports (the layers above
# the kernels): an edit there must not recompile every entry (tests/test_cache_digest.py)
UNCOMPILED_ROOMS = ("bench", "mpc", "viewer", "__pycache__", "sim.py", "cli.py",
                    "__main__.py", "mujoco.py", "dask.py", "metrics.py")
# the package whose compiled modules sit beside pure-Python ones (the problem, the
# solver's loop, the costs' glue): only the compiled ones and what they import count
MIXED_ROOMS = ("trajopt",)
_COMPILES = re.compile(r"^from \S*(kernels\.|\.)jit import|numba\.(njit|cfunc|jit)\b|"
                       r"^from numba import .*\b(njit|cfunc|jit|prange)\b|cached_njit\(",
                       re.MULTILINE)


def compiles(text):
    """Whether a module's source ``text`` defines compiled code (imports kernels.jit's
    decorators or Numba's)."""
    return _COMPILES.search(text) is not None


def _relative_imports(text):
    """The sibling modules ``text`` imports as ``from .name import``."""
    return {line.split()[1][1:] for line in text.splitlines()
            if line.startswith("from .") and not line.startswith("from ..")}


def _read(path):
    with open(path) as f:       # closed at once (a bare open().read() warns under -W error)
        return f.read()


def compiled_sources(root=None):
    """The rbdiff source files an entry point can compile (relative paths, sorted): all
    but the UNCOMPILED_ROOMS, and in a MIXED_ROOM only the modules that compile (they
    import kernels.jit, or name njit or cfunc) and the siblings they import."""
    root = root or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = []
    for folder, dirs, files in os.walk(root):
        rel = os.path.relpath(folder, root)
        dirs[:] = sorted(d for d in dirs if rel != "." or d not in UNCOMPILED_ROOMS)
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        names = sorted(f for f in files if f.endswith(".py")
                       and (rel != "." or f not in UNCOMPILED_ROOMS))
        if rel in MIXED_ROOMS:
            texts = {f[:-3]: _read(os.path.join(folder, f)) for f in names}
            keep = {m for m, t in texts.items() if compiles(t)}
            todo = list(keep)
            while todo:
                for m in _relative_imports(texts[todo.pop()]) & set(texts) - keep:
                    keep.add(m)
                    todo.append(m)
            names = [f for f in names if f[:-3] in keep]
        out += [os.path.normpath(os.path.join(rel, f)) for f in names]
    return sorted(out)


def _sources_digest(root=None):
    """SHA-256 of every rbdiff source file an entry point can compile
    (:func:`compiled_sources`), in path order."""
    root = root or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    h = hashlib.sha256()
    for rel in compiled_sources(root):
        h.update(rel.encode())
        with open(os.path.join(root, rel), "rb") as f:
            h.update(f.read())
    return h.hexdigest()


_SOURCES = _sources_digest()


def harden_cache(dispatcher):
    """Make ``dispatcher``'s on-disk cache safe to share and never stale.

    Stale: Numba invalidates a cached entry when the entry's own source file changes,
    not when a kernel it calls (in another file) does; so the index's stamp here also
    carries a digest of the rbdiff sources an entry can reach (:func:`_sources_digest`),
    and any edit there or upgrade recompiles.

    Shared: Numba saves a new specialisation by reading the function's index file,
    picking the first unused data file name, and writing both back. Two processes
    saving different specialisations of one function at once can both pick the same
    name, leaving an index entry that points at the other's machine code (a crash on
    the next load). The save therefore runs under a lock file beside the index; loads
    need none (Numba replaces files atomically).

    The first entry in a process that misses the cache says so (:class:`CompileNotice`).

    Fewer specialisations: a Python call whose argument types are new runs on a compiled
    or cached specialisation they pass to unchanged (:func:`variant`: a C-contiguous
    array to an any-layout one, a writeable one to a read-only one), where one exists,
    instead of compiling the same code again (seconds): a JAX buffer (read-only) or a
    batch slice then loads what ``rbdiff compile`` or another caller compiled."""
    cache_file = getattr(getattr(dispatcher, "_cache", None), "_cache_file", None)
    if cache_file is None or not hasattr(cache_file, "_source_stamp"):
        return dispatcher        # caching off (NUMBA_DISABLE_JIT) or Numba changed
    cache_file._source_stamp = (cache_file._source_stamp, _SOURCES)
    cache = dispatcher._cache
    load = cache.load_overload

    def load_or_notice(sig, target_context):
        cres = load(sig, target_context)
        if cres is None and not _NOTICED:     # Numba compiles next
            _notice(dispatcher)
        return cres

    cache.load_overload = load_or_notice
    compile_for_args = getattr(dispatcher, "_compile_for_args", None)   # a CFunc has none

    def compile_or_reuse(*args, **kws):
        """Numba's miss path (a call whose types have no specialisation here): run a
        compiled or cached one they pass to (:func:`variant`) instead of compiling."""
        if not kws:
            try:
                given = tuple(dispatcher.typeof_pyval(a) for a in args)
            except Exception:    # noqa: BLE001 -- Numba explains it in its own path
                given = None
            if given is not None and given not in dispatcher.overloads:
                sig = variant(dispatcher, given)
                if sig != given:
                    dispatcher.compile(sig)
                    cres = dispatcher.overloads[sig]
                    # later calls typed ``given`` dispatch to it in C, without this path
                    dispatcher._insert([t._code for t in given], cres.entry_point,
                                       cres.objectmode)
                    return cres.entry_point
        return compile_for_args(*args, **kws)

    if compile_for_args is not None:
        dispatcher._compile_for_args = compile_or_reuse
    if fcntl is None:
        return dispatcher
    save = cache_file.save

    def locked_save(key, data):
        try:
            f = open(cache_file._index_path + ".lock", "a")
        except OSError:          # a read-only cache folder: Numba's own save fails alike
            return save(key, data)
        with f:                  # closing the file releases the lock
            fcntl.flock(f, fcntl.LOCK_EX)
            return save(key, data)

    cache_file.save = locked_save
    return dispatcher


def _passes(g, s):
    """An argument typed ``g`` passes unchanged to a parameter typed ``s``: the same type,
    or the same array but for an any-layout 'A' parameter or a read-only one (a read-only
    parameter is one the callee never writes: a writeable array passes)."""
    if g == s:
        return True
    if not (isinstance(g, types.Array) and isinstance(s, types.Array)):
        return False
    return (g.dtype == s.dtype and g.ndim == s.ndim and g.aligned == s.aligned
            and s.layout in (g.layout, "A") and (g.mutable or not s.mutable))


def variant(dispatcher, given):
    """The signature of ``dispatcher`` to call with arguments typed ``given``: ``given``
    itself if compiled or cached, else a compiled or cached one they pass to unchanged
    (a C-contiguous array as an any-layout 'A' one: the fast paths compile the entries
    for the user's strides, kernels.jit.native; a writeable array as a read-only one: the
    declared functions' tables are read-only, a rollout's slices are not), else ``given``
    (compiled then). A second specialisation costs as much as the first (seconds), for
    the same code. Used by every entry's first call with new types (harden_cache), by
    cpu/twin.py and by the declared functions' float64 single calls."""
    known = list(dispatcher.overloads)
    try:         # Numba's cache index: keys (signature, machine, bytecode digests)
        cache = dispatcher._cache
        here = cache._index_key(given, dispatcher.targetctx.codegen())[1:]
        known += [k[0] for k in cache._cache_file._load_index() if k[1:] == here]
    except Exception:        # noqa: BLE001 -- another Numba, or no cache: compile
        pass
    if given in known:
        return given
    for sig in sorted(known, key=str):
        if len(sig) == len(given) and all(_passes(g, s) for g, s in zip(given, sig)):
            return sig
    return given


def native(dispatcher, name, namespace, inputs=(2, 3, 4), refs=(), shapes=()):
    """A stand-in for ``namespace[name]`` (a module's globals, or a list and an index)
    that, on its first call, compiles ``dispatcher`` for that call's argument types and
    rebinds ``namespace[name]`` to the compiled function itself: later calls skip
    Numba's per-call type dispatch (~0.4 us).

    The compiled function trusts its caller: it does not check dtypes, ndim or layout,
    so only fast paths that have checked dtype and ndim may call it. The user's arrays
    (positions ``inputs``) are compiled for any strides (layout 'A'), so views stay
    correct; the model's arrays and the outputs the fast path allocates stay C-contiguous
    (strided 2-D outputs would slow the inner loops). Positions ``refs`` are compiled as
    ``fastargs.REF`` (any object): the entry checks those itself (fastargs.float64_vector),
    so the fast path need not. Positions ``shapes`` where the fast path passes an output's
    shape (a tuple the api layer keeps) are compiled as ``fastargs.Shape`` (read in the
    entry: ~15 ns a call less than unboxing the tuple)."""
    fastcall.want(dispatcher)       # its compiled entries get the fastcall wrapper

    def first_call(*args):
        # a compiled entry point takes every parameter (no defaults): a short call would
        # fail to compile on every call, which a fast path would take for a miss
        if len(args) != dispatcher.py_func.__code__.co_argcount:
            raise RuntimeError(f"rbdiff: {dispatcher.py_func.__name__} takes "
                               f"{dispatcher.py_func.__code__.co_argcount} arguments "
                               f"when bound by kernels.jit.native, got {len(args)}")
        sig = []
        for k, x in enumerate(args):
            if k in refs:
                sig.append(REF)
                continue
            if k in shapes and type(x) is tuple:
                sig.append(Shape(len(x)))
                continue
            t = numba.typeof(x)
            if k in inputs and isinstance(t, numba.types.Array):
                t = t.copy(layout="A", readonly=False)
            sig.append(t)
        sig = tuple(sig)
        dispatcher.compile(sig)
        fn = fastcall.function(dispatcher.overloads[sig])
        namespace[name] = fn
        return fn(*args)
    return first_call


def native_ref(dispatcher, name, namespace, vectors, arrays=None, inputs=(), available=None,
               outputs=(), result=None):
    """:func:`native` for an entry that checks its own arguments (kernels.fastargs'
    ``vector_arg`` / ``contiguous_arg``, returning False when it takes them not): the
    positions ``vectors`` (float64 1-D) and ``arrays`` ({position: ndim}, float64
    C-contiguous) are typed REF, so the fast path asks nothing in Python (~0.15 us a call
    on rnea); other user arrays the fast path checked itself, at positions ``inputs``, are
    compiled for any strides as :func:`native`'s. ``outputs``: the positions where the
    fast path passes shapes and the entry makes the arrays (fastargs.output_arg; it then
    returns the array, the tuple of them for two or three, or None instead of False).
    ``result``: the position where the fast path passes the named tuple class (a REF)
    that the entry makes that tuple of. Where REF is not ``AVAILABLE`` (another CPython
    or NumPy layout; or ``available=False``), a Python stand-in asks the same questions
    first, makes those outputs with np.empty, calls the entry compiled for arrays, and
    makes the named tuple."""
    arrays = dict(arrays or {})
    objects = () if result is None else (result,)
    if AVAILABLE if available is None else available:
        return native(dispatcher, name, namespace, inputs=tuple(inputs),
                      refs=tuple(vectors) + tuple(arrays) + objects, shapes=tuple(outputs))
    bound = [None]
    bound[0] = native(dispatcher, 0, bound, inputs=tuple(vectors) + tuple(inputs),
                      refs=objects)      # rebinds
    missed = None if outputs else False

    def checked(*args):
        for k in vectors:
            x = args[k]
            if not (type(x) is _ND and x.dtype is _F64 and x.ndim == 1):
                return missed
        for k, nd in arrays.items():
            x = args[k]
            if x is not None and not (type(x) is _ND and x.dtype is _F64 and x.ndim == nd
                                      and x.flags.c_contiguous):
                return missed
        if not outputs:
            return bound[0](*args)
        args = list(args)
        made = [None if args[k] is None else np.empty(args[k]) for k in outputs]
        for k, x in zip(outputs, made):
            args[k] = x
        if not bound[0](*args):
            return None
        if len(made) == 1:
            return made[0]
        if result is None or args[result] is None:
            return tuple(made)
        return tuple.__new__(args[result], made)
    namespace[name] = checked
    return checked


_ND = np.ndarray
_F64 = np.dtype(np.float64)
