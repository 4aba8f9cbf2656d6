"""Entry points called without an argument tuple (CPython's METH_FASTCALL).

Numba's Python wrapper of a compiled function is a METH_VARARGS builtin: each call packs
its arguments into a tuple and unpacks them with ``PyArg_UnpackTuple``. A call with nine
arguments then costs ~48 ns before any unboxing, against ~11 ns for a METH_FASTCALL
builtin such as ``len``; on a frame Jacobian (a ~150 ns kernel) that is a tenth of the
call. So the module of each entry a fast path binds directly (kernels.jit.native, which
names it here: :func:`want`) also gets a second wrapper, Numba's own code with only the
argument unpacking changed: it reads the arguments from the caller's array (``PyObject
*const *args, Py_ssize_t nargs``). It is compiled with the entry and cached with it;
:func:`function` makes the builtin that calls it. (Giving every entry one cost ~8 % more
compile work, for wrappers nothing calls.)

``AVAILABLE`` is False, and nothing is patched, where Numba's internals differ; the
fast paths then call Numba's own wrapper, as before.
"""

import ctypes

from llvmlite import ir

try:
    from numba.core import callwrapper, cpu, types
    AVAILABLE = (callable(getattr(cpu.CPUContext, "create_cpython_wrapper", None))
                 and callable(getattr(callwrapper.PyCallWrapper, "build_wrapper", None)))
except ImportError:          # pragma: no cover (another Numba)
    AVAILABLE = False

SUFFIX = "_rbdiff_fastcall"
_METH_FASTCALL = 0x0080      # CPython's methodobject.h
DOC = "rbdiff entry (METH_FASTCALL)"     # the builtins' docstring: how tests know them


class _FastCallWrapper(callwrapper.PyCallWrapper if AVAILABLE else object):
    """Numba's PyCallWrapper built as ``PyObject *f(PyObject *self, PyObject *const
    *args, Py_ssize_t nargs)``: the same unboxing, call, boxing and error handling."""

    def build(self):
        pyobj = self.context.get_argument_type(types.pyobject)
        ssize = ir.IntType(64)
        fnty = ir.FunctionType(pyobj, [pyobj, pyobj.as_pointer(), ssize])
        wrapper = ir.Function(self.module, fnty,
                              name=self.fndesc.llvm_cpython_wrapper_name + SUFFIX)
        builder = ir.IRBuilder(wrapper.append_basic_block("entry"))
        closure, argv, nargs = wrapper.args
        api = self.context.get_python_api(builder)
        api.unpack_tuple = _unpack_array(api, builder, argv, nargs)
        self.build_wrapper(api, builder, closure, None, None)
        return wrapper, api


def _unpack_array(api, builder, argv, nargs):
    """A stand-in for ``api.unpack_tuple`` (what build_wrapper calls) that stores
    ``argv[k]`` into each slot; a call with another count raises TypeError, as
    PyArg_UnpackTuple does."""
    def unpack(args, name, n_min, n_max, *objs):
        i32 = ir.IntType(32)
        ok = builder.icmp_signed("==", nargs, ir.Constant(nargs.type, len(objs)))
        with builder.if_else(ok, likely=True) as (then, otherwise):
            with then:
                for k, slot in enumerate(objs):
                    builder.store(builder.load(builder.gep(argv, [ir.Constant(nargs.type, k)])),
                                  slot)
            with otherwise:
                api.err_set_string("PyExc_TypeError",
                                   f"{name}() takes exactly {len(objs)} arguments")
        return builder.zext(ok, i32)
    return unpack


_WANTED = set()     # (module, qualname) of the entries bound by kernels.jit.native


def want(dispatcher):
    """Give ``dispatcher``'s compiled entries the fastcall wrapper (from their next
    compile: the cache digest covers rbdiff's sources, so every entry compiles again
    after an edit anyway)."""
    py = getattr(dispatcher, "py_func", None)
    if py is not None:
        _WANTED.add((py.__module__, py.__qualname__))


def _with_fastcall(original):
    def create_cpython_wrapper(self, library, fndesc, env, call_helper, release_gil=False):
        original(self, library, fndesc, env, call_helper, release_gil=release_gil)
        if (fndesc.modname, fndesc.qualname) not in _WANTED:
            return                      # an entry no fast path binds: Numba's alone
        module = self.create_module("wrapper_fastcall")
        fnty = self.call_conv.get_function_type(fndesc.restype, fndesc.argtypes)
        callee = ir.Function(module, fnty, fndesc.llvm_func_name)
        _FastCallWrapper(self, module, callee, fndesc, env, call_helper=call_helper,
                         release_gil=release_gil).build()
        library.add_ir_module(module)
    create_cpython_wrapper._rbdiff_fastcall = True
    return create_cpython_wrapper


def install():
    """Build the fastcall wrapper beside Numba's for the entries :func:`want` names,
    compiled from now on (idempotent)."""
    ctx = cpu.CPUContext if AVAILABLE else None
    if ctx is not None and not getattr(ctx.create_cpython_wrapper, "_rbdiff_fastcall", False):
        ctx.create_cpython_wrapper = _with_fastcall(ctx.create_cpython_wrapper)


class _MethodDef(ctypes.Structure):
    _fields_ = [("ml_name", ctypes.c_char_p), ("ml_meth", ctypes.c_void_p),
                ("ml_flags", ctypes.c_int), ("ml_doc", ctypes.c_char_p)]


_new = ctypes.pythonapi.PyCFunction_NewEx
_new.restype = ctypes.py_object
_new.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
_KEEP = []      # the method definitions and compiled libraries the builtins point into


def function(cres):
    """A METH_FASTCALL builtin calling compiled result ``cres``'s fastcall wrapper, or
    ``cres.entry_point`` (Numba's) where the library has none (fastcall not AVAILABLE,
    an entry :func:`want` did not name)."""
    if not AVAILABLE:
        return cres.entry_point
    try:
        address = cres.library.get_pointer_to_function(
            cres.fndesc.llvm_cpython_wrapper_name + SUFFIX)
    except Exception:       # noqa: BLE001 -- no such symbol (KeyError, or None below)
        address = None
    if not address:
        return cres.entry_point
    name = cres.fndesc.qualname.split(".")[-1].encode()
    md = _MethodDef(name, address, _METH_FASTCALL, DOC.encode())
    fn = _new(ctypes.addressof(md), None, None)     # no self, no module
    _KEEP.append((md, cres))    # the wrapper reads the entry's environment (cres)
    return fn
