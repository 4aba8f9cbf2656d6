"""cpu.background across processes: one background compile per entry and signature on
a machine, a dead holder's lock, the child's exit after the save, and jit's
CompileNotice. Each test runs fresh Python processes on an empty NUMBA_CACHE_DIR, with
a tiny parallel entry of its own (``bgmod.work``, made by kernels.jit.pentry like
rbdiff's batch entries) that compiles in about a second, so that the code paths are
the real ones (policy.Plan, background.ready, the child, the locked cache)."""

import os
import signal
import subprocess
import sys
import time

import pytest

ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")
pytestmark = [pytest.mark.skipif(sys.platform == "win32", reason="no flock on Windows"),
              pytest.mark.auto_policy]

BGMOD = '''
import os, sys, time
from numba import prange
from rbdiff.kernels.jit import pentry

# a background child (python -c) waits here for the test's go-ahead, so that the test
# knows the compile is still running while it starts other processes
gate = os.environ.get("BGMOD_GATE")
if gate and sys.argv[:1] == ["-c"]:
    deadline = time.time() + 60
    while not os.path.exists(gate) and time.time() < deadline:
        time.sleep(0.02)


@pentry
def work(x, out, nchunks):
    for i in prange(x.shape[0]):
        out[i] = x[i] * 2.0


@pentry
def work2(x, out, nchunks):
    for i in prange(x.shape[0]):
        out[i] = x[i] + 1.0
'''

# drive.py path: print the lock file of work's background compile
# drive.py wait: as policy.run does, until work can run in parallel: ask
#   background.ready (prints whether this process started the child or waits on
#   another's), then call it until ready; prints the seconds from the save (the cache
#   index's mtime) to ready, and the cache hits of the call that followed
# drive.py again: start a child for work (cached already) the way background does;
#   prints its exit status, its lifetime, and whether the cache index was rewritten
DRIVE = '''
import os, sys, time
import numpy as np
import bgmod
from rbdiff.cpu import background, policy
from numba import typeof

args = (np.ones(8), np.empty(8), 2)
sig = tuple(typeof(a) for a in args)
index = bgmod.work._cache._cache_file._index_path
mode = sys.argv[1]
if mode == "path":
    print(background.lock_path(bgmod.work, sig))
elif mode == "wait":
    plan = policy.Plan()
    r = background.ready(plan, bgmod.work, args)
    own = getattr(plan.child, "child", None) is not None
    print("asked", r, "own" if own else "waiting", flush=True)
    while not background.ready(plan, bgmod.work, args):
        time.sleep(0.02)
    late = time.time() - os.path.getmtime(index)
    bgmod.work(*args)
    print("ready", round(late, 3), sum(bgmod.work._cache_hits.values()), flush=True)
elif mode == "again":
    before = os.stat(index).st_mtime_ns
    t = time.monotonic()
    child = background._start(bgmod.work, sig, background.lock_path(bgmod.work, sig))
    rc = child.wait(timeout=60)
    print(rc, round(time.monotonic() - t, 3), os.stat(index).st_mtime_ns != before)
'''

NOTICE = '''
import sys
import numpy as np
if sys.argv[1:] == ["precompile"]:
    import rbdiff.precompile
import bgmod
x, o = np.ones(8), np.empty(8)
bgmod.work(x, o, 2)
bgmod.work2(x, o, 2)
bgmod.work(x.astype(np.float32), o, 2)
print("done")
'''


@pytest.fixture
def env(tmp_path):
    for name, text in (("bgmod.py", BGMOD), ("drive.py", DRIVE), ("notice.py", NOTICE)):
        (tmp_path / name).write_text(text)
    e = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"),
             PYTHONPATH=os.pathsep.join([ROOT, str(tmp_path)]))
    for k in ("BGMOD_GATE", "NUMBA_DISABLE_JIT", "PYTHONWARNINGS"):
        e.pop(k, None)
    return e


def _start(tmp_path, env, *argv):
    return subprocess.Popen([sys.executable, str(tmp_path / argv[0]), *argv[1:]],
                            env=env, cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _run(tmp_path, env, *argv):
    r = subprocess.run([sys.executable, str(tmp_path / argv[0]), *argv[1:]], env=env,
                       cwd=tmp_path, capture_output=True, text=True, timeout=120,
                       check=False)
    assert r.returncode == 0, r.stderr[-3000:]
    return r


def _finish(p):
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0, err[-3000:]
    return out.split("\n")[-2].split()


def _records(path):
    """The lock file's "child parent time" lines: one per child started."""
    return open(path).read().splitlines() if os.path.exists(path) else []


def test_two_processes_share_one_background_compile(tmp_path, env):
    """Two processes needing the same parallel entry: the first starts the child, the
    second, started while it compiles, starts none and picks the entry up from the
    cache within POLL_S of the save; the child is gone once the entry is cached."""
    env["BGMOD_GATE"] = str(tmp_path / "go")
    a = _start(tmp_path, env, "drive.py", "wait")
    assert a.stdout.readline().split() == ["asked", "False", "own"]
    b = _start(tmp_path, env, "drive.py", "wait")
    assert b.stdout.readline().split() == ["asked", "False", "waiting"]
    (tmp_path / "go").touch()          # the child may compile now
    ready_a, ready_b = _finish(a), _finish(b)
    lock = _run(tmp_path, env, "drive.py", "path").stdout.strip()
    records = _records(lock)
    assert len(records) == 1, records
    assert records[0].split()[1] == str(a.pid)
    # both loaded the child's machine code; a saw its child exit, b saw the cache
    assert ready_a[2] == ready_b[2] == "1"
    assert float(ready_a[1]) < 2.0 and float(ready_b[1]) < 2.0, (ready_a, ready_b)
    child = int(records[0].split()[0])
    with pytest.raises(ProcessLookupError):          # reaped by a, which has exited
        os.kill(child, 0)


def test_a_lock_whose_owner_died_does_not_block(tmp_path, env):
    """A live holder of the lock keeps a process from starting a child (it waits); once
    the holder is killed (SIGKILL: no cleanup), the waiter starts its own and finishes."""
    lock = _run(tmp_path, env, "drive.py", "path").stdout.strip()
    os.makedirs(os.path.dirname(lock), exist_ok=True)
    holder = subprocess.Popen(
        [sys.executable, "-c", ("import fcntl, os, sys, time\n"
                                "fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT)\n"
                                "fcntl.flock(fd, fcntl.LOCK_EX)\n"
                                "print('held', flush=True)\ntime.sleep(120)\n"),
         lock], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        w = _start(tmp_path, env, "drive.py", "wait")
        assert w.stdout.readline().split() == ["asked", "False", "waiting"]
        time.sleep(1.2)                # two or three looks at the lock: still held
        assert _records(lock) == [] and w.poll() is None
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    ready = _finish(w)
    assert ready[0] == "ready" and ready[2] == "1"
    records = _records(lock)
    assert len(records) == 1 and records[0].split()[1] == str(w.pid), records


def test_a_child_exits_without_compiling_when_the_entry_is_cached(tmp_path, env):
    """A child whose entry another process has saved meanwhile compiles nothing (the
    cache index is not rewritten) and exits at once, its lock with it."""
    assert _finish(_start(tmp_path, env, "drive.py", "wait"))[0] == "ready"
    rc, took, rewritten = _run(tmp_path, env, "drive.py", "again").stdout.split()
    assert rc == "0" and rewritten == "False"
    assert float(took) < 10            # an import of rbdiff, no compile
    lock = _run(tmp_path, env, "drive.py", "path").stdout.strip()
    assert len(_records(lock)) == 2    # both children ran; the lock was free again


def _notices(r):
    return [line for line in r.stderr.splitlines() if "CompileNotice" in line]


def test_compile_notice_once_on_a_cold_cache_only(tmp_path, env):
    """The first process on an empty cache compiles three specialisations of two
    entries and says so once, naming the first and `python -m rbdiff compile`; the next
    process loads them and says nothing; nor does a process that imported
    rbdiff.precompile (rbdiff compile), cold as it is."""
    cold = _notices(_run(tmp_path, env, "notice.py"))
    assert len(cold) == 1, cold
    assert "bgmod.work " in cold[0] and "python -m rbdiff compile" in cold[0]
    assert _notices(_run(tmp_path, env, "notice.py")) == []
    env["NUMBA_CACHE_DIR"] = str(tmp_path / "cache2")
    assert _notices(_run(tmp_path, env, "notice.py", "precompile")) == []


