"""CUDA device functions built from the CPU kernels' own Python source.

The algorithm math lives once, in ``rbdiff/kernels/*.py``, as Numba ``njit`` dispatchers
(``kernels/jit.py``: ``helper`` and ``kernel``). :func:`device` turns one of them into a
CUDA device function without copying it: it takes the dispatcher's ``py_func``, rebuilds
the function object from the same code object with new globals in which every referenced
rbdiff kernel or helper is replaced by *its* device counterpart (recursively, memoized),
and hands the result to ``numba.cuda.jit(device=True)``. Everything else the source
refers to (layout constants ``MI_*``/``MF_*``, workspace offsets ``W_*``/``D_*``,
``numpy``) passes through unchanged.

So the CPU and the GPU run the same statements: a kernel edited in ``rbdiff/kernels`` is
edited for both. Helpers (``kernels.jit.helper``; LLVM inlines them on the CPU) are inlined
on the GPU too (numba-cuda: ``forceinline``, i.e. NVVM ``alwaysinline``; the deprecated built-in
``numba.cuda`` has no such option and leaves inlining to NVVM's optimizer).

Under the CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``) the rebuilt Python functions run
as Python: every call goes through the rebuilt globals, never through a CPU dispatcher
(:func:`device_graph` lists what was built, and ``tests/test_gpu_sim.py`` checks it).
"""

import inspect
import types

from numba import cuda
from numba.core.dispatcher import Dispatcher

from ..kernels.jit import is_helper

KERNEL_PACKAGE = "rbdiff.kernels"

_BUILT = {}      # id(CPU dispatcher) -> (CPU dispatcher, device function)


def _jit_options(inline):
    """cuda.jit keywords for a device function: forceinline for helpers where the CUDA
    target has it (numba-cuda), nothing else (the built-in target lacks it)."""
    opts = {"device": True}
    if inline and "forceinline" in inspect.signature(cuda.jit).parameters:
        opts["forceinline"] = True
    return opts


def is_kernel(obj):
    """True for an rbdiff kernel or helper: a Numba dispatcher defined in rbdiff.kernels."""
    return isinstance(obj, Dispatcher) and getattr(obj.py_func, "__module__", "").startswith(
        KERNEL_PACKAGE)


def device(dispatcher):
    """The CUDA device function compiled from ``dispatcher.py_func``'s code (memoized).

    Every global name the code reads that is bound to an rbdiff kernel or helper is bound,
    in the new function's globals, to that kernel's device function; a Numba dispatcher
    from anywhere else is refused (it would run CPU code, which a device cannot call)."""
    key = id(dispatcher)
    if key in _BUILT:
        return _BUILT[key][1]
    if not is_kernel(dispatcher):
        raise TypeError(f"{dispatcher!r} is not an rbdiff kernel or helper "
                        f"(a Numba dispatcher defined in {KERNEL_PACKAGE})")
    py = dispatcher.py_func
    code = py.__code__
    if py.__closure__ or any(isinstance(c, types.CodeType) for c in code.co_consts):
        raise TypeError(f"{py.__qualname__}: kernels with closures or nested functions "
                        "cannot be rebuilt for the device")
    glb = {"__builtins__": py.__globals__.get("__builtins__", __builtins__),
           "__name__": py.__globals__.get("__name__")}
    for name in code.co_names:
        if name not in py.__globals__:
            continue                      # an attribute name (x.shape) or a builtin
        obj = py.__globals__[name]
        if isinstance(obj, Dispatcher):
            obj = device(obj)             # raises for a non-rbdiff dispatcher
        glb[name] = obj
    fn = types.FunctionType(code, glb, py.__name__, py.__defaults__, None)
    fn.__qualname__ = py.__qualname__
    fn.__doc__ = py.__doc__
    fn.__module__ = py.__module__
    dev = cuda.jit(**_jit_options(is_helper(dispatcher)))(fn)
    _BUILT[key] = (dispatcher, dev)
    return dev


def device_graph():
    """{qualified kernel name: (CPU dispatcher, device function)} of everything built."""
    return {f"{d.py_func.__module__}.{d.py_func.__qualname__}": (d, dev)
            for d, dev in _BUILT.values()}


def python_function(dev):
    """The rebuilt Python function behind a device function (CUDA dispatcher or simulator
    FakeCUDAKernel)."""
    return getattr(dev, "py_func", None) or getattr(dev, "fn")
