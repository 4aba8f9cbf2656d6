"""Shared fixtures: the robots every differential test runs on, as (rbdiff, Pinocchio)
pairs, and seeded random trees with every joint type."""

import numpy as np
import pytest

import rbdiff as rbd
from rbdiff.cpu import background, policy
from rbdiff.kernels import jit
from rbdiff.model import robots
from rbdiff.model.robots import example_robot_data_dir, robot_path

# parallel batch entries compile in the call, as before cpu/background.py: the suite's
# short-lived batches of other dtypes would start children whose work no later test
# uses (tests/test_policy.py turns it back on where it tests it)
background.ENABLED = False
jit.COMPILE_NOTICE = False     # the suite compiles on purpose; tests/test_background.py checks it


@pytest.fixture(autouse=True)
def _serial_unless_pinned(request):
    """Batches run serially unless a test pins a mode (policy.forced) or is marked
    ``auto_policy``: each parallel entry is a compile of its own per dtype (10-45 s
    cold), which the auto policy would start in whichever test first times a batch
    as worth threads; the parallel entries are tested where tests force them."""
    if request.node.get_closest_marker("auto_policy"):
        yield
        return
    with policy.forced("serial"):
        yield

pin = pytest.importorskip("pinocchio")

# (name, floating base) as the core issue lists them
ROBOTS = [("iiwa14", False), ("panda", False), ("ur5", False), ("kinova", False),
          ("pr2", False), ("solo12", True), ("hyq", True), ("talos_full_v2", True),
          ("g1", True)]
_BUNDLED = {"iiwa14"}


def robot_pair(name, floating):
    if name not in _BUNDLED and example_robot_data_dir() is None:
        pytest.skip("example-robot-data is not installed")
    if name not in _BUNDLED and robots._loaders() is None:   # rbd.load_robot's table
        pytest.skip("example-robot-data-loaders is not installed")
    model = rbd.load_robot(name, floating_base=floating)
    path = str(robot_path(name))
    pm = (pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer()) if floating
          else pin.buildModelFromUrdf(path))
    return model, pm


_TREES = set()   # ids of models whose Pinocchio twin came from pin_bridge


def tree_pair(seed, n=12, floating=False):
    from pin_bridge import to_pinocchio
    model = rbd.models.random_tree(n, seed, floating_base=floating)
    _TREES.add(id(model))
    return model, to_pinocchio(model)


_CACHE = {}


def _pair(key):
    if key not in _CACHE:
        kind, a, b = key
        _CACHE[key] = robot_pair(a, b) if kind == "robot" else tree_pair(a, floating=b)
    return _CACHE[key]


PAIRS = ([("robot", n, f) for n, f in ROBOTS]
         + [("tree", s, s % 2 == 0) for s in range(4)])


@pytest.fixture(params=PAIRS, ids=lambda k: f"{k[1]}{'+ff' if k[2] else ''}")
def pair(request):
    """(rbdiff model, Pinocchio model) for every robot and random tree."""
    return _pair(request.param)


def random_state(pm, rng):
    q = pin.integrate(pm, pin.neutral(pm), rng.normal(size=pm.nv))
    return q, rng.normal(size=pm.nv), rng.normal(size=pm.nv)


def rel_err(x, ref):
    return np.max(np.abs(np.asarray(x) - ref)) / max(1.0, np.max(np.abs(ref)))


def full(M):
    """Pinocchio fills only the upper triangle of M and M^-1."""
    M = np.array(M)
    return np.triu(M) + np.triu(M, 1).T


def pin_fext(model, fext):
    """External forces for the Pinocchio twin (bridge twins rotate continuous joints)."""
    if id(model) in _TREES:
        from pin_bridge import fext_to_pinocchio
        return fext_to_pinocchio(model, fext)
    return [pin.Force(np.asarray(f)) for f in fext]     # row for row: joint ids agree


def kinematics_workspace(model, q, v=None, a=None):
    """The workspace (njoints+nv, W_WIDTH) that kernels/fk.py's kinematics_pass fills
    for one state: world placements (W_R, W_P), world motion subspace columns (dof rows,
    D_S), velocities (W_V) and accelerations with -gravity (W_A), all in the world
    frame; v, a None: zero. The NumPy reference listings read it."""
    from rbdiff.kernels.fk import kinematics_pass
    from rbdiff.kernels.workspace import W_WIDTH
    q = np.asarray(q)
    dt = np.result_type(q, *(x for x in (v, a) if x is not None), np.float64)
    z = np.zeros(model.nv, dt)
    v = z if v is None else np.asarray(v, dt)
    a = z if a is None else np.asarray(a, dt)
    ws = np.empty((model.njoints + model.nv, W_WIDTH), dt)
    kinematics_pass(model.mi, model.mf, q.astype(dt), v, a, ws)
    return ws


def rollout_gradient(prob, us, h=1e-6):
    """Central differences of rbdiff.trajopt.rollout_cost in every control (flat)."""
    import rbdiff.trajopt as to
    g = np.zeros(us.size)
    for i in range(us.size):
        e = np.zeros(us.size)
        e[i] = h
        g[i] = (to.rollout_cost(prob, us + e.reshape(us.shape))
                - to.rollout_cost(prob, us - e.reshape(us.shape))) / (2 * h)
    return g


def allocated_by(work, rounds=50):
    """Bytes still allocated (tracemalloc) after ``rounds`` calls of work() and a
    collection, the first call (warm-up) not counted."""
    import gc
    import tracemalloc
    work()
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(rounds):
            work()
        gc.collect()
        return tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()


def in_threads(work, n=4):
    """work(k) for k = 0..n-1, each on a thread of its own, all started, then joined."""
    import threading
    threads = [threading.Thread(target=work, args=(k,)) for k in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def full_inertia(m, d):
    """MuJoCo's dense mass matrix (nv, nv) of (m, d) after mj_forward, on MuJoCo 3 and 4."""
    import mujoco
    M = np.zeros((m.nv, m.nv))
    try:
        mujoco.mj_fullM(m, d, M)             # MuJoCo 4
    except TypeError:
        mujoco.mj_fullM(m, M, d.qM)          # MuJoCo 3
    return M


def hide_module(monkeypatch, module):
    """Make ``import module`` raise ImportError for the rest of the test (an optional
    dependency not installed)."""
    import builtins
    real_import = builtins.__import__

    def hidden(name, *args, **kwargs):
        if name == module:
            raise ImportError(f"No module named {module!r}")
        return real_import(name, *args, **kwargs)
    monkeypatch.setattr(builtins, "__import__", hidden)
