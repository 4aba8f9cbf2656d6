"""cpu.policy: when a batch runs serially or in parallel. Fakes stand in for the entry
points and a fake clock for perf_counter, so the decisions are checked without timing
real kernels or sleeping (a loaded CI machine made sleeps of milliseconds jitter): a fake
'parallel' that takes longer than the serial estimate is a run that lost (a descheduled
worker)."""

import time

import numba
import pytest

from rbdiff.cpu import policy

pytestmark = pytest.mark.auto_policy


class _Clock:
    """policy's perf_counter: time moves only when a fake entry point runs."""

    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


@pytest.fixture(autouse=True)
def clock(monkeypatch):
    c = _Clock()
    monkeypatch.setattr(policy, "perf_counter", c)
    return c


class _Model:
    def __init__(self):
        self._digest = object()     # a model of its own (policy keys plans by content)


def _fakes(clock, serial_s, parallel_s):
    """Entry points that take ``serial_s`` and ``parallel_s`` seconds of ``clock``."""
    calls = []

    def serial(*args):
        calls.append("serial")
        clock.now += serial_s

    def parallel(*args):
        assert args[-1] >= 1                   # nchunks
        calls.append("parallel")
        clock.now += parallel_s
    return serial, parallel, calls


def test_first_two_runs_serial_then_parallel_when_it_pays(monkeypatch, clock):
    monkeypatch.setattr(policy, "get_num_threads", lambda: 2)
    m = _Model()
    serial, parallel, calls = _fakes(clock, 2e-3, 0.2e-3)
    for _ in range(4):
        policy.run(m, serial, parallel, 64, ())
    assert calls == ["serial", "serial", "parallel", "parallel"]


def test_small_batches_stay_serial(monkeypatch, clock):
    monkeypatch.setattr(policy, "get_num_threads", lambda: 2)
    m = _Model()
    serial, parallel, calls = _fakes(clock, 0.1e-6, 0.0)
    for _ in range(5):
        policy.run(m, serial, parallel, 2, ())      # far under PARALLEL_MIN_S
    assert calls == ["serial"] * 5
    p = policy.plan_of(m, parallel)
    assert p.item_s * 2 < policy.PARALLEL_MIN_S
    # under UNTIMED_S the runs after the first two are not timed: the estimate stays
    assert p.serial_runs == 2
    est = p.item_s
    policy.run(m, serial, parallel, 2, ())
    assert (p.serial_runs, p.item_s) == (2, est)
    # a batch large enough to matter is timed again
    policy.run(m, serial, parallel, int(policy.UNTIMED_S / est) + 1, ())
    assert p.serial_runs == 3 and calls[-1] == "serial"


def test_a_losing_parallel_run_backs_off(monkeypatch, clock):
    monkeypatch.setattr(policy, "get_num_threads", lambda: 2)
    m = _Model()
    serial, parallel, calls = _fakes(clock, 1e-3, 1.2e-3)      # parallel slower: it lost
    for _ in range(3):
        policy.run(m, serial, parallel, 64, ())
    p = policy.plan_of(m, parallel)
    assert calls == ["serial", "serial", "parallel"]
    assert p.serial_until == 0.0                          # one loss: a cold wake-up?
    policy.run(m, serial, parallel, 64, ())
    assert calls[-1] == "parallel"                        # the second loss in a row
    assert p.serial_until > clock.now and p.backoff == 2 * policy.BACKOFF_MIN_S
    policy.run(m, serial, parallel, 64, ())
    assert calls[-1] == "serial"                          # within the backoff
    p.serial_until = 0.0                                  # the backoff has run out
    for _ in range(2):
        policy.run(m, serial, parallel, 64, ())
    assert calls[-2:] == ["parallel", "parallel"]         # probes again; loses twice
    assert p.backoff == 4 * policy.BACKOFF_MIN_S


def test_a_single_loss_between_wins_never_backs_off(monkeypatch, clock):
    """The first parallel run after a serial spell may lose to waking the workers."""
    monkeypatch.setattr(policy, "get_num_threads", lambda: 2)
    m = _Model()
    serial, _, calls = _fakes(clock, 20e-3, 0.0)
    slow = [20.3e-3, 11e-3, 20.3e-3, 11e-3, 20.3e-3]     # lose, win, lose, win, lose
    assert 0.3e-3 < policy.DESCHEDULED_S                  # mild losses (a wake-up)

    def parallel(*args):
        calls.append("parallel")
        clock.now += slow.pop(0)
    for _ in range(7):
        policy.run(m, serial, parallel, 64, ())
    p = policy.plan_of(m, parallel)
    assert calls == ["serial"] * 2 + ["parallel"] * 5 and p.serial_until == 0.0


def test_one_costly_loss_backs_off_and_wins_reset_it_slowly(monkeypatch, clock):
    """A parallel run that waited a time slice for a descheduled worker backs off at
    once; the backoff resets only after WINS_TO_RESET wins in a row (under load most
    runs win, and resetting on each let the losses cost more than the wins gained)."""
    monkeypatch.setattr(policy, "get_num_threads", lambda: 2)
    m = _Model()
    serial, _, calls = _fakes(clock, 1e-3, 0.0)
    slow = [5e-3]                                         # 4 ms over the estimate

    def parallel(*args):
        calls.append("parallel")
        clock.now += slow.pop(0) if slow else 0.6e-3    # else wins
    for _ in range(3):
        policy.run(m, serial, parallel, 64, ())
    p = policy.plan_of(m, parallel)
    assert calls[-1] == "parallel" and p.serial_until > clock.now   # one loss: backed off
    assert p.backoff == 2 * policy.BACKOFF_MIN_S
    policy.run(m, serial, parallel, 64, ())
    assert calls[-1] == "serial"
    p.serial_until = 0.0
    for k in range(policy.WINS_TO_RESET):
        policy.run(m, serial, parallel, 64, ())
        assert calls[-1] == "parallel"
        assert p.backoff == (2 * policy.BACKOFF_MIN_S if k < policy.WINS_TO_RESET - 1
                             else policy.BACKOFF_MIN_S)


def test_one_thread_runs_serially(monkeypatch, clock):
    monkeypatch.setattr(policy, "get_num_threads", lambda: 1)
    m = _Model()
    serial, parallel, calls = _fakes(clock, 1e-3, 0.0)
    for _ in range(3):
        policy.run(m, serial, parallel, 64, ())
    assert calls == ["serial"] * 3


def test_one_thread_brings_a_high_estimate_down(monkeypatch, clock):
    """A slow second run (cold caches) must not leave the estimate high for good: with
    one thread, batches big enough to consider threads are still timed, and the first
    fast one replaces the estimate, so that small batches then run untimed."""
    monkeypatch.setattr(policy, "get_num_threads", lambda: 1)
    m = _Model()
    serial, parallel, calls = _fakes(clock, 0.0, 0.0)
    took = iter([1.0, 400e-6] + [16e-6] * 3)       # compile, a slow run, then 1 us/item

    def timed_serial(*args):
        calls.append("serial")
        clock.now += next(took)
    for _ in range(3):
        policy.run(m, timed_serial, parallel, 16, ())
    p = policy.plan_of(m, parallel)
    assert p.item_s == pytest.approx(1e-6) and p.untimed == pytest.approx(10)
    assert p.serial_runs == 3 and calls == ["serial"] * 3
    policy.run(m, timed_serial, parallel, 4, ())      # under UNTIMED_S: not timed
    assert p.serial_runs == 3


def test_get_num_threads_follows_numba():
    """policy's cheap getter answers what numba.get_num_threads() answers."""
    before = numba.get_num_threads()
    try:
        for n in (1, before):
            numba.set_num_threads(n)
            assert policy.get_num_threads() == numba.get_num_threads() == n
            assert policy.get_num_threads() == n      # the rebound getter too
    finally:
        numba.set_num_threads(before)


def test_forced_modes(clock):
    m = _Model()
    serial, parallel, calls = _fakes(clock, 0.0, 0.0)
    with policy.forced("parallel"):
        policy.run(m, serial, parallel, 1, ())
    with policy.forced("serial"):
        policy.run(m, serial, parallel, 10 ** 6, ())
    assert calls == ["parallel", "serial"]
    with pytest.raises(ValueError, match="mode"):
        with policy.forced("fast"):
            pass


class _Child:
    """A stand-in for the compiling child process: running for ``polls`` polls."""

    def __init__(self, polls):
        self.polls = polls

    def poll(self):
        self.polls -= 1
        return None if self.polls >= 0 else 0


def test_parallel_entry_compiles_in_a_child_while_batches_run_serially(monkeypatch, clock):
    """The first time a batch would go parallel and its entry is neither compiled nor
    cached, a child compiles it and the batches run serially until the child exits."""
    from rbdiff.cpu import background
    monkeypatch.setattr(policy, "get_num_threads", lambda: 2)
    monkeypatch.setattr(background, "_cached", lambda d, sig: False)
    spawned = []
    monkeypatch.setattr(background, "_spawn",
                        lambda d, sig: spawned.append(sig) or _Child(polls=2))
    m = _Model()
    serial, parallel, calls = _fakes(clock, 2e-3, 0.2e-3)
    parallel.overloads = {}                  # looks like a dispatcher with nothing compiled
    for _ in range(7):
        policy.run(m, serial, parallel, 64, ())
    # 2 timing runs, the spawning run, 2 polls while it compiles, then parallel
    assert calls == ["serial"] * 5 + ["parallel"] * 2
    assert len(spawned) == 1 and spawned[0][-1] == numba.typeof(2)   # nchunks typed too
    assert policy.plan_of(m, parallel).ready


def test_compiled_or_cached_parallel_entry_runs_at_once(monkeypatch, clock):
    from rbdiff.cpu import background
    monkeypatch.setattr(policy, "get_num_threads", lambda: 2)
    monkeypatch.setattr(background, "_cached", lambda d, sig: True)
    monkeypatch.setattr(background, "_spawn", lambda d, sig: pytest.fail("spawned"))
    m = _Model()
    serial, parallel, calls = _fakes(clock, 2e-3, 0.2e-3)
    parallel.overloads = {}
    for _ in range(3):
        policy.run(m, serial, parallel, 64, ())
    assert calls == ["serial", "serial", "parallel"]


def test_child_compiles_a_parallel_entry_into_the_cache(monkeypatch):
    """The real child: compiles integrate_parallel for a signature of its own (float32
    inputs) into this process's on-disk cache and exits cleanly (at once where the cache
    has it already); asked again for the same entry and signature, the same background
    compile answers."""
    import numpy as np

    import rbdiff as rbd
    from rbdiff.cpu import background, batch
    from rbdiff.kernels.jit import _UNCACHED
    if _UNCACHED:
        pytest.skip("no writable Numba cache")
    monkeypatch.setattr(background, "ENABLED", True)
    m = rbd.load_robot("iiwa14")
    q = rbd.random_configuration(m, np.random.default_rng(0), batch=4).astype(np.float32)
    v = np.zeros((4, m.nv), np.float32)
    args = (m.mi, q, v, np.empty((4, m.nq), np.float32), 2)
    sig = tuple(numba.typeof(a) for a in args)
    job = background._spawn(batch.integrate_parallel, sig)
    assert job is not None
    assert background._spawn(batch.integrate_parallel, sig) is job
    deadline = time.monotonic() + 240
    while job.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert job.poll() == 0
    assert background._cached(batch.integrate_parallel, sig) is True


def test_a_pickled_plan_starts_fresh():
    """Plans travel with a pickled model (dask); timings and a compiling child stay
    behind."""
    import pickle
    p = policy.Plan()
    p.item_s, p.serial_runs, p.child = 1e-6, 5, _Child(polls=3)
    q = pickle.loads(pickle.dumps(p))
    assert (q.item_s, q.serial_runs, q.child, q.ready) == (None, 0, None, False)
