"""A parallel batch entry compiled in a child process while batches run serially.

The policy (policy.py) moves a batch to its ``*_parallel`` entry once the work pays.
Without ``python -m rbdiff compile`` that entry is not compiled yet, and the call that
first takes it used to stop and compile it: 8 s for aba_derivatives, 14 s for
aba_second_order_derivatives (iiwa14, 2 cores), in the middle of the user's loop (a
DDP's third iteration). Instead the first such call starts a child process that
compiles the entry into the shared on-disk cache (the same NUMBA_CACHE_DIR; saves are
locked, kernels/jit.py), at low priority, and batches run serially until it exits;
the next parallel run loads the entry from the cache. A thread would not do: Numba's
compiler holds the GIL, and each of the user's calls would wait for it.

Used only where it helps: when the entry is compiled or cached already it runs at once,
and where the cache is not writable (kernels.jit._UNCACHED) or the internals this reads
differ the call compiles in place, as before. A child still compiling when the user's
process ends is left to finish (it fills the cache for the next run). One child per
entry and signature in a process, whichever model asked. ``ENABLED = False`` compiles
in the call instead (the test suite does: its many short-lived batches of other dtypes
would start children whose work no later test uses).
"""

import importlib
import os
import pickle
import subprocess
import sys

from numba import typeof

ENABLED = True
_children = {}           # (module, name, signature) -> the child compiling it

# the child: compile dispatcher argv[2] of module argv[1] for the pickled signature on stdin
_CHILD = ("import importlib, os, pickle, sys\n"
          "hasattr(os, 'nice') and os.nice(10)\n"
          "d = getattr(importlib.import_module(sys.argv[1]), sys.argv[2])\n"
          "d.compile(pickle.loads(sys.stdin.buffer.read()))\n")


def child_environment(**extra):
    """os.environ plus ``extra``, with this rbdiff first on PYTHONPATH: a child Python
    imports the same rbdiff as its parent, installed or not."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return dict(os.environ, **extra, PYTHONPATH=os.pathsep.join(
        [root] + [p for p in [os.environ.get("PYTHONPATH")] if p]))


def _cached(dispatcher, sig):
    """True when Numba's on-disk cache holds ``dispatcher`` for ``sig`` on this machine
    (None where the cache internals differ)."""
    try:
        cache = dispatcher._cache
        key = cache._index_key(sig, dispatcher.targetctx.codegen())
        return key in cache._cache_file._load_index()
    except Exception:        # noqa: BLE001 (another Numba: compile in the call)
        return None


def _spawn(dispatcher, sig):
    """The child compiling ``dispatcher`` for ``sig`` (started by this call or an earlier
    one), or None where it cannot help."""
    from ..kernels.jit import _UNCACHED
    py = getattr(dispatcher, "py_func", None)
    if not ENABLED or _UNCACHED or py is None or getattr(
            importlib.import_module(py.__module__), py.__name__, None) is not dispatcher:
        return None
    key = (py.__module__, py.__name__, sig)
    child = _children.get(key)
    if child is not None:
        return child
    try:
        child = subprocess.Popen([sys.executable, "-c", _CHILD, py.__module__, py.__name__],
                                 stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL, env=child_environment())
        child.stdin.write(pickle.dumps(sig))
        child.stdin.close()
    except (OSError, pickle.PicklingError):
        return None
    _children[key] = child
    return child


def ready(plan, parallel, args):
    """True when ``parallel(*args)`` can run without compiling in this call: compiled,
    or in the on-disk cache, or its child has exited (the call then loads it; if the
    child failed, the call compiles, and reports what went wrong, as before). Otherwise
    starts the child (once per plan) and returns False: run serially meanwhile."""
    child = plan.child
    if child is not None:
        if child.poll() is None:
            return False
        plan.child, plan.ready = None, True
        return True
    overloads = getattr(parallel, "overloads", None)
    if overloads is None:                    # not a Numba dispatcher (tests' fakes)
        plan.ready = True
        return True
    sig = tuple(typeof(a) for a in args)
    if sig in overloads or _cached(parallel, sig) is not False:
        plan.ready = True
        return True
    plan.child = _spawn(parallel, sig)
    plan.ready = plan.child is None
    return plan.ready
