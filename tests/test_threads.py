"""One model shared by threads: every public call from 4 threads at once (each thread its
own states) gives the numbers of a serial call, bit for bit; and the model holds no
per-call state (scratch, plans, memo tables stay off it: cpu/scratch.py, cpu/policy.py).

The threads meet at a barrier before each function, so every function runs on 4 threads
at once; the contact entries release the GIL, which is where a shared workspace gave
other threads' numbers (27 of 960 contact_dynamics_derivatives on solo12)."""

import copy
import pickle
import threading

import numpy as np
import pytest

import rbdiff as rbd

THREADS = 4
STATES = 100          # per thread: enough overlapping calls that a shared workspace shows
                      # (12 states missed it in every run; 100 caught it in every run)
FEET = ("FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT")


@pytest.fixture(scope="module")
def solo():
    pytest.importorskip("example_robot_data")
    return rbd.load_robot("solo12", floating_base=True)


def _states(model, seed, n=STATES):
    rng = np.random.default_rng(seed)
    q0 = model.reference_configurations.get("standing", rbd.neutral(model))
    out = []
    for _ in range(n):
        q = rbd.integrate(model, q0, 0.2 * rng.normal(size=model.nv))
        out.append(dict(q=q, q1=rbd.integrate(model, q, 0.3 * rng.normal(size=model.nv)),
                        v=rng.normal(size=model.nv), a=rng.normal(size=model.nv),
                        tau=rng.normal(size=model.nv), lam=rng.normal(size=model.nv),
                        lf=rng.normal(size=12), fext=rng.normal(size=(model.njoints, 6))))
    return out


def _numpy_calls(model):
    """name -> f(state) for every public function of the NumPy API (single and batch)."""
    feet = tuple(rbd.Contact(f, "3d", "local_world_aligned") for f in FEET)
    feet6 = (rbd.Contact("FL_FOOT", "6d", "local"),)
    foot = "FL_FOOT"
    m = model
    calls = {
        "rnea": lambda s: rbd.rnea(m, s["q"], s["v"], s["a"]),
        "rnea_fext": lambda s: rbd.rnea(m, s["q"], s["v"], s["a"], s["fext"]),
        "aba": lambda s: rbd.aba(m, s["q"], s["v"], s["tau"]),
        "aba_fext": lambda s: rbd.aba(m, s["q"], s["v"], s["tau"], s["fext"]),
        "crba": lambda s: rbd.crba(m, s["q"]),
        "minverse": lambda s: rbd.minverse(m, s["q"]),
        "nonlinear_effects": lambda s: rbd.nonlinear_effects(m, s["q"], s["v"]),
        "gravity": lambda s: rbd.gravity(m, s["q"]),
        "rnea_derivatives": lambda s: rbd.rnea_derivatives(m, s["q"], s["v"], s["a"]),
        "aba_derivatives": lambda s: rbd.aba_derivatives(m, s["q"], s["v"], s["tau"]),
        "aba_derivatives_chain": lambda s: rbd.aba_derivatives(
            m, s["q"], s["v"], s["tau"], method="chain_rule"),
        "rnea_second_order": lambda s: rbd.rnea_second_order_derivatives(
            m, s["q"], s["v"], s["a"]),
        "aba_second_order": lambda s: rbd.aba_second_order_derivatives(
            m, s["q"], s["v"], s["tau"]),
        "rnea_contraction": lambda s: rbd.rnea_second_order_contraction(
            m, s["q"], s["v"], s["a"], s["lam"]),
        "aba_contraction": lambda s: rbd.aba_second_order_contraction(
            m, s["q"], s["v"], s["tau"], s["lam"]),
        "contact_dynamics": lambda s: rbd.contact_dynamics(m, s["q"], s["v"], s["tau"], feet),
        "contact_dynamics_6d": lambda s: rbd.contact_dynamics(m, s["q"], s["v"], s["tau"],
                                                              feet6),
        "contact_dynamics_derivatives": lambda s: rbd.contact_dynamics_derivatives(
            m, s["q"], s["v"], s["tau"], feet),
        "contact_dynamics_contraction": lambda s: rbd.contact_dynamics_contraction(
            m, s["q"], s["v"], s["tau"], feet, s["lam"], s["lf"]),
        "impulse_dynamics": lambda s: rbd.impulse_dynamics(m, s["q"], s["v"], feet, 0.2),
        "impulse_dynamics_derivatives": lambda s: rbd.impulse_dynamics_derivatives(
            m, s["q"], s["v"], feet),
        "impulse_dynamics_contraction": lambda s: rbd.impulse_dynamics_contraction(
            m, s["q"], s["v"], feet, s["lam"], s["lf"]),
        "forward_kinematics": lambda s: rbd.forward_kinematics(m, s["q"], s["v"], s["a"]),
        "frame_placement": lambda s: rbd.frame_placement(m, s["q"], foot),
        "frame_placements": lambda s: rbd.frame_placements(m, s["q"]),
        "frame_jacobian": lambda s: rbd.frame_jacobian(m, s["q"], foot),
        "frame_velocity": lambda s: rbd.frame_velocity(m, s["q"], s["v"], foot),
        "frame_acceleration": lambda s: rbd.frame_acceleration(m, s["q"], s["v"], s["a"],
                                                               foot),
        "frame_jacobian_time_variation": lambda s: rbd.frame_jacobian_time_variation(
            m, s["q"], s["v"], foot),
        "frame_velocity_derivatives": lambda s: rbd.frame_velocity_derivatives(
            m, s["q"], s["v"], foot),
        "frame_acceleration_derivatives": lambda s: rbd.frame_acceleration_derivatives(
            m, s["q"], s["v"], s["a"], foot, "local_world_aligned"),
        "kinematics_derivatives": lambda s: rbd.kinematics_derivatives(
            m, s["q"], s["v"], s["a"]),
        "center_of_mass": lambda s: rbd.center_of_mass(m, s["q"], s["v"], s["a"]),
        "com_jacobian": lambda s: rbd.com_jacobian(m, s["q"]),
        "centroidal_momentum": lambda s: rbd.centroidal_momentum(m, s["q"], s["v"], s["a"]),
        "centroidal_momentum_matrix": lambda s: rbd.centroidal_momentum_matrix(m, s["q"]),
        "centroidal_dynamics_derivatives": lambda s: rbd.centroidal_dynamics_derivatives(
            m, s["q"], s["v"], s["a"]),
        "kinetic_energy": lambda s: rbd.kinetic_energy(m, s["q"], s["v"]),
        "potential_energy": lambda s: rbd.potential_energy(m, s["q"]),
        "integrate": lambda s: rbd.integrate(m, s["q"], s["v"]),
        "difference": lambda s: rbd.difference(m, s["q"], s["q1"]),
        "integrate_jacobians": lambda s: rbd.integrate_jacobians(m, s["q"], s["v"]),
        "difference_jacobians": lambda s: rbd.difference_jacobians(m, s["q"], s["q1"]),
        "integrate_transport": lambda s: rbd.integrate_transport(
            m, s["q"], s["v"], np.eye(m.nv)),
        "total_mass": lambda s: rbd.total_mass(m),
    }
    # batches: 3 states in one call (policy pinned serial by conftest; the few-item
    # entries run on the process's GIL-held workspace)
    stack = lambda s, k: np.stack([s[k], s[k], s[k]])   # noqa: E731
    calls.update({
        "rnea_batch": lambda s: rbd.rnea(m, stack(s, "q"), stack(s, "v"), stack(s, "a")),
        "aba_batch": lambda s: rbd.aba(m, stack(s, "q"), stack(s, "v"), stack(s, "tau")),
        "crba_batch": lambda s: rbd.crba(m, stack(s, "q")),
        "aba_derivatives_batch": lambda s: rbd.aba_derivatives(
            m, stack(s, "q"), stack(s, "v"), stack(s, "tau")),
        "contact_dynamics_derivatives_batch": lambda s: rbd.contact_dynamics_derivatives(
            m, stack(s, "q"), stack(s, "v"), stack(s, "tau"), feet),
    })
    return calls


def _arrays(result):
    """The arrays of a result (an array, a number, or a tuple / NamedTuple of them)."""
    if isinstance(result, (tuple, list)):
        return [a for r in result for a in _arrays(r)]
    return [np.asarray(result)]


def _same(a, b):
    a, b = _arrays(a), _arrays(b)
    return len(a) == len(b) and all(x.shape == y.shape and x.dtype == y.dtype
                                    and np.array_equal(x, y, equal_nan=x.dtype.kind in "fc")
                                    for x, y in zip(a, b))


def _threaded(calls, per_thread_states):
    """{name: [[result per state] per thread]}, each function run by all threads at once
    (a barrier before each); a thread's exception is re-raised here."""
    names = list(calls)
    barrier = threading.Barrier(len(per_thread_states))
    results = [dict() for _ in per_thread_states]
    errors = []

    def work(k):
        try:
            for name in names:
                barrier.wait()
                f = calls[name]
                results[k][name] = [f(s) for s in per_thread_states[k]]
        except BaseException as e:        # noqa: BLE001 (re-raised in the main thread)
            errors.append(e)
            barrier.abort()

    threads = [threading.Thread(target=work, args=(k,)) for k in range(len(per_thread_states))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return {name: [r[name] for r in results] for name in names}


def _check(calls, states):
    serial = {name: [[f(s) for s in st] for st in states] for name, f in calls.items()}
    got = _threaded(calls, states)
    wrong = {name: sum(not _same(g, w) for gt, wt in zip(got[name], serial[name])
                       for g, w in zip(gt, wt))
             for name in calls}
    wrong = {k: n for k, n in wrong.items() if n}
    assert not wrong, f"results that differ from the serial call's, per function: {wrong}"


def test_numpy_api_from_threads(solo):
    states = [_states(solo, seed) for seed in range(THREADS)]
    _check(_numpy_calls(solo), states)


def test_jax_and_torch_from_threads(solo):
    jax = pytest.importorskip("jax")
    torch = pytest.importorskip("torch")
    import rbdiff.jax as rj
    import rbdiff.torch as rt
    jax.config.update("jax_enable_x64", True)
    m = solo
    feet = tuple(rbd.Contact(f, "3d", "local_world_aligned") for f in FEET)
    aba_j = jax.jit(lambda q, v, t: rj.aba(m, q, v, t))
    grad_j = jax.jit(jax.grad(lambda q, v, t: rj.rnea(m, q, v, t) @ v, argnums=(1, 2)))
    contact_j = jax.jit(lambda q, v, t: rj.contact_dynamics(m, q, v, t, feet))
    T = torch.from_numpy

    def torch_grad(s):
        q, v, t = (T(s[k].copy()).requires_grad_() for k in ("q", "v", "tau"))
        rt.aba(m, q, v, t).pow(2).sum().backward()
        return q.grad.numpy(), v.grad.numpy(), t.grad.numpy()

    calls = {
        "jax.aba": lambda s: np.asarray(aba_j(s["q"], s["v"], s["tau"])),
        "jax.grad(rnea)": lambda s: [np.asarray(g) for g in grad_j(s["q"], s["v"], s["a"])],
        "jax.contact_dynamics": lambda s: [np.asarray(x) for x in
                                           contact_j(s["q"], s["v"], s["tau"])],
        "torch.rnea": lambda s: rt.rnea(m, T(s["q"]), T(s["v"]), T(s["a"])).numpy(),
        "torch.aba backward": torch_grad,
        "torch.contact_dynamics": lambda s: [x.detach().numpy() for x in rt.contact_dynamics(
            m, T(s["q"]), T(s["v"]), T(s["tau"]), feet)],
    }
    states = [_states(solo, 10 + seed, n=4) for seed in range(THREADS)]
    _check(calls, states)


def test_trajopt_solve_from_threads(solo):
    import rbdiff.trajopt as to
    m = solo
    feet = tuple(rbd.Contact(f, "3d", "local_world_aligned", gains=(0.0, 50.0))
                 for f in FEET)
    q0 = m.reference_configurations["standing"]

    def solve(s):
        x0 = np.concatenate([q0, 0.1 * s["v"]])
        x_ref = np.concatenate([q0, np.zeros(m.nv)])
        x_ref[0] += 0.03
        prob = to.Problem(m, x0, 8, 0.01, running=[to.StateRegularization(x_ref, 1e-1),
                                                   to.ControlRegularization(1e-3)],
                          terminal=[to.StateRegularization(x_ref, 1e2)],
                          contacts=[feet] * 8)
        res = to.solve(prob, method="fddp", xs=[x0] * 9, max_iter=4)
        return res.xs, res.us, res.cost

    states = [_states(solo, 20 + seed, n=2) for seed in range(THREADS)]
    _check({"trajopt.solve": solve}, states)


# ---- the Model: equal by content, no per-call state -------------------------------------

def test_two_loads_are_equal_and_hash_alike(solo):
    again = rbd.load_robot("solo12", floating_base=True)
    assert again is not solo and again == solo and hash(again) == hash(solo)
    assert again.fingerprint == solo.fingerprint
    copy_ = pickle.loads(pickle.dumps(solo))
    assert copy_ == solo and _writable_arrays(copy_) == []     # read-only after a pickle
    assert len({solo, again}) == 1
    fixed = rbd.load_robot("solo12", floating_base=False)
    assert fixed != solo and hash(fixed) != hash(solo)
    heavier = solo.with_armature(0.01)
    assert heavier != solo and solo.with_armature(0.0) == solo
    assert solo != "solo12"


def test_hash_is_stable_across_processes(solo):
    import subprocess
    import sys
    code = ("import rbdiff as rbd; m = rbd.load_robot('solo12', floating_base=True); "
            "print(hash(m), m.fingerprint)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**__import__("os").environ, "PYTHONHASHSEED": "123"},
                         check=True).stdout.split()
    assert out == [str(hash(solo)), solo.fingerprint]


def _snapshot(model):
    """A deep copy of every attribute of the model (slots included), for comparison."""
    return copy.deepcopy(model._attributes())


def _writable_arrays(obj, path="model", seen=None):
    """Paths of the writable arrays and mutable containers reachable from obj."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return []
    seen.add(id(obj))
    if isinstance(obj, np.ndarray):
        return [path] if obj.flags.writeable else []
    found = []
    if isinstance(obj, (list, set)):
        found.append(path)
    items = (obj.items() if isinstance(obj, dict) else enumerate(obj)
             if isinstance(obj, (tuple, list)) else
             obj._attributes().items() if isinstance(obj, rbd.Model) else
             vars(obj).items() if hasattr(obj, "__dict__") and not isinstance(obj, type)
             else ())
    for k, v in items:
        found += _writable_arrays(v, f"{path}.{k}", seen)
    return found


def test_no_per_call_state_on_the_model(solo):
    """Every array the model holds is read-only, and calling every public function (single
    calls, batches, contacts) leaves the model's attributes as they were."""
    m = rbd.load_robot("solo12", floating_base=True)
    before = _snapshot(m)
    assert _writable_arrays(m) == []
    for f in _numpy_calls(m).values():
        f(_states(m, 3, n=1)[0])
    after = _snapshot(m)
    assert set(after) == set(before), set(after) ^ set(before)
    for k in before:
        assert _same(_flatten(before[k]), _flatten(after[k])), k
    assert _writable_arrays(m) == []


def _flatten(x):
    """Arrays and plain values of a nested structure, in order (for _same)."""
    if isinstance(x, np.ndarray):
        return [x]
    if isinstance(x, dict):
        return [np.asarray(repr(sorted(x, key=repr)))] + [a for k in sorted(x, key=repr)
                                                         for a in _flatten(x[k])]
    if isinstance(x, (tuple, list)):
        return [np.asarray(len(x))] + [a for y in x for a in _flatten(y)]
    if hasattr(x, "__dict__"):
        return _flatten(vars(x))
    return [np.asarray(repr(x))]
