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

One compile per entry and signature per machine (per cache folder): the child holds an
exclusive ``flock`` on a lock file beside the entry's cache index
(``<index>.<key digest>.bglock``, :func:`lock_path`) for as long as it lives; the parent
takes the lock before starting the child and hands it over (an inherited descriptor), so
two processes can never both start one. A process that finds the lock held (another
process's child is compiling) starts nothing: it runs its batches serially and looks at
the cache at most every ``POLL_S`` seconds, and the first parallel run after the entry
appears loads it. The kernel drops the lock when its holder exits, however it exits, so
a crashed or killed child leaves no stale lock; a waiter that then finds the lock free
and the entry still missing starts a child of its own. Each child started appends a line
"child-pid parent-pid unix-time" to the lock file (what started which compile, and how
many; the file stays, a few bytes, as the cache's own files do).

The child compiles that one entry and signature and nothing else, and exits at once
(``os._exit``, no interpreter teardown) when it is saved, or without compiling when the
cache already holds it (another process finished first). A child still compiling when
the user's process ends finishes that one compile and exits: its work is the cache the
next run loads, and no other process repeats it meanwhile; killing it would throw the
work away and the next run would start over. A signal to the user's process group
(Ctrl-C in a terminal) ends the child too; ``CHILD_MAX_S`` bounds its life anyway.

Used only where it helps: when the entry is compiled or cached already it runs at once,
and where the cache is not writable (kernels.jit._UNCACHED) or the internals this reads
differ the call compiles in place, as before. ``ENABLED = False`` compiles in the call
instead (the test suite does: its many short-lived batches of other dtypes would start
children whose work no later test uses).
"""

import hashlib
import importlib
import os
import pickle
import signal
import subprocess
import sys
import time

from numba import typeof

from ..kernels.jit import variant

try:
    import fcntl
except ImportError:          # Windows: no flock; a child per process, as before
    fcntl = None

ENABLED = True
POLL_S = 0.5             # how often a process waiting on another's child looks at the cache
CHILD_MAX_S = 600        # a child alive this long is killed (a compile takes 1-60 s)
_pending = {}            # (module, name, signature) -> its Compile, in this process
_BUSY = object()         # _start: another live process holds the lock
_SPARE = []              # spare_core's last (time, answer)

# the child: rbdiff.cpu.background._child_main, on the pickled job on stdin (_URGENT:
# at normal priority, for a compile its parent is about to wait for)
_CHILD = "from rbdiff.cpu.background import _child_main; _child_main()\n"
_URGENT = "from rbdiff.cpu.background import _child_main; _child_main(0)\n"


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


def lock_path(dispatcher, sig):
    """The lock file of ``dispatcher``'s background compile for ``sig``: beside its
    cache index, named by a digest of the index key (signature, CPU, bytecode)."""
    cache = dispatcher._cache
    key = cache._index_key(sig, dispatcher.targetctx.codegen())
    digest = hashlib.sha256(repr(key).encode()).hexdigest()[:16]
    return f"{cache._cache_file._index_path}.{digest}.bglock"


def _start(dispatcher, sig, path, urgent=False):
    """A child compiling ``dispatcher`` for ``sig`` and holding the lock ``path`` (at
    normal priority when ``urgent``); _BUSY when another live process holds it; None
    where no child can be started."""
    py = dispatcher.py_func
    try:
        job = pickle.dumps((py.__module__, py.__name__, sig))
    except pickle.PicklingError:
        return None
    return _locked_child(path, _URGENT if urgent else _CHILD, job)


def _locked_child(path, program, job):
    """A child Python running ``program`` on the pickled ``job`` (stdin) and holding the
    exclusive flock on ``path``; _BUSY when another live process holds it; None where no
    child can be started."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o666)
    except OSError:
        return None
    try:
        if fcntl is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return _BUSY
        child = subprocess.Popen([sys.executable, "-c", program], stdin=subprocess.PIPE,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                 env=child_environment(), pass_fds=(fd,))
        os.write(fd, f"{child.pid} {os.getpid()} {time.time():.3f}\n".encode())
        child.stdin.write(job)
        child.stdin.close()
        return child
    except OSError:
        return None
    finally:
        # the child's inherited copy keeps the lock (flock belongs to the open file, and
        # is dropped when its last descriptor closes: when the child exits)
        os.close(fd)


class Compile:
    """A background compile of one entry and signature as this process sees it: by a
    child of its own, or by another process's child (the lock is held elsewhere).
    ``poll()`` is None while it runs, else an exit status: 0 when the entry can be
    loaded, non-zero when the child failed (the call then compiles in place and reports
    what went wrong). ``urgent``: its child runs at normal priority."""

    def __init__(self, dispatcher, sig, path, urgent=False):
        self.dispatcher, self.sig, self.path, self.urgent = dispatcher, sig, path, urgent
        self.child = None        # our child, once started
        self.next = None         # monotonic time of the next look (None: never looked)

    def poll(self):
        if self.child is not None:
            return self.child.poll()
        now = time.monotonic()
        if self.next is not None:
            if now < self.next:
                return None
            # the first look skips this: ready() has just looked
            if _cached(self.dispatcher, self.sig) is not False:
                return 0
        self.next = now + POLL_S
        child = _start(self.dispatcher, self.sig, self.path, self.urgent)
        if child is _BUSY:
            return None
        if child is None:
            return 1
        self.child = child
        return None

    def wait(self, timeout=CHILD_MAX_S):
        """Block until poll() says the compile has ended (or ``timeout`` seconds)."""
        end = time.monotonic() + timeout
        while self.poll() is None and time.monotonic() < end:
            time.sleep(0.02)


def _cpu_times():
    """(free, total) jiffies of all cores (free: idle, I/O wait and niced work, which
    yields to a child at normal priority) and the number of cores, from /proc/stat."""
    with open("/proc/stat") as f:
        lines = f.read().splitlines()
    t = [int(x) for x in lines[0].split()[1:]]
    cores = sum(1 for line in lines if line.startswith("cpu") and line[3:4].isdigit())
    return t[1] + t[3] + t[4], sum(t[:8]), cores


def spare_core(window=0.1):
    """True when a core beside this process's own stood mostly free over the next
    ``window`` seconds (/proc/stat; this process sleeps meanwhile, so its own core
    counts too; True where unknown): a compile split between this process and a child
    (cpu/twin.ahead) only pays then; on busy cores the two share one core's time, and
    the child's start-up (about 1.5 s of CPU) and the helpers both compile are lost."""
    now = time.monotonic()
    if _SPARE and now - _SPARE[0] < 1.0:     # Numba may type a call site more than once
        return _SPARE[1]
    try:
        free0, total0, cores = _cpu_times()
        time.sleep(window)
        free1, total1, _ = _cpu_times()
    except (OSError, ValueError, IndexError):
        return True
    _SPARE[:] = [now, total1 > total0 and (free1 - free0) / (total1 - total0) * cores >= 1.5]
    return _SPARE[1]


def _spawn(dispatcher, sig, urgent=False):
    """The background compile of ``dispatcher`` for ``sig`` (a :class:`Compile`, started
    by this call or an earlier one, here or in another process), or None where it
    cannot help. ``urgent``: this process will soon wait for it (cpu/twin.ahead,
    rbdiff.jax's handlers), so its child runs at normal priority: at low priority a
    busy machine starves it, and this process with it."""
    from ..kernels.jit import _UNCACHED
    py = getattr(dispatcher, "py_func", None)
    if not ENABLED or _UNCACHED or py is None or getattr(
            importlib.import_module(py.__module__), py.__name__, None) is not dispatcher:
        return None
    key = (py.__module__, py.__name__, sig)
    job = _pending.get(key)
    if job is None:
        try:
            job = Compile(dispatcher, sig, lock_path(dispatcher, sig), urgent)
        except Exception:    # noqa: BLE001 (another Numba: compile in the call)
            return None
        if job.poll() is not None:
            return None
        _pending[key] = job
    return job


def ready(plan, parallel, args):
    """True when ``parallel(*args)`` can run without compiling in this call: compiled,
    or in the on-disk cache, or its background compile has ended (the call then loads
    it; if the child failed, the call compiles, and reports what went wrong, as before).
    Otherwise starts the background compile (once per plan; it may be another process's
    already) and returns False: run serially meanwhile."""
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
    # a compiled or cached specialisation these types pass to counts (kernels.jit.variant)
    sig = variant(parallel, tuple(typeof(a) for a in args))
    if sig in overloads or _cached(parallel, sig) is not False:
        plan.ready = True
        return True
    plan.child = _spawn(parallel, sig)
    plan.ready = plan.child is None
    return plan.ready


def _child_main(nice=10):
    """The child's program: compile the entry named by the pickled (module, name,
    signature) unless the cache holds it already. It holds the lock through a descriptor
    inherited from its parent."""
    def run(module, name, sig):
        dispatcher = getattr(importlib.import_module(module), name)
        if _cached(dispatcher, sig) is not True:     # another process may have finished
            dispatcher.compile(sig)                  # saves to the cache before returning
    _child_program(run, nice)


def _child_program(run, nice=10):
    """A child's life: low priority (``nice``), a time limit, run(*the pickled job on
    stdin), exit at once (os._exit: no interpreter teardown, the work is saved) with 0,
    or 1 where it failed (its parent then compiles in place and reports what went
    wrong)."""
    if nice and hasattr(os, "nice"):
        os.nice(nice)
    if hasattr(signal, "alarm"):     # SIGALRM's default action ends the process
        signal.alarm(CHILD_MAX_S)
    try:
        job = pickle.loads(sys.stdin.buffer.read())
        from ..kernels import jit
        jit.COMPILE_NOTICE = False
        run(*job)
        status = 0
    except BaseException:    # noqa: BLE001
        status = 1
    os._exit(status)
