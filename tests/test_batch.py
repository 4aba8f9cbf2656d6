"""Batches equal loops: every public function called once on a leading batch axis returns,
item by item, what a loop of single calls returns, down both batch paths (rbdiff.cpu:
``*_batch`` on the calling thread and ``*_parallel`` over chunks under ``prange``, forced
with cpu.policy.forced). Oracle: the single-call path, itself checked against
Pinocchio in test_dynamics.py / test_idsva.py. The GPU functions' batches (and their
``out=`` buffers) are checked the same way in the CUDA simulator, test_gpu_sim.py.

The public CPU functions have no ``out=`` argument (outputs are always new arrays);
``rbdiff.gpu`` has one.
"""

import numpy as np
import pytest

import rbdiff as rbd
from rbdiff.cpu import policy
from rbdiff.model.robots import example_robot_data_dir

B = 4


def _model(key):
    if key == "iiwa14":
        return rbd.load_robot("iiwa14")
    if key == "hyq+ff":
        if example_robot_data_dir() is None:
            pytest.skip("example-robot-data is not installed")
        return rbd.load_robot("hyq", floating_base=True)
    seed = int(key.split("-")[1])
    return rbd.models.random_tree(8, seed, floating_base=seed % 2 == 0)


MODELS = ["iiwa14", "hyq+ff", "tree-0", "tree-1"]
_CACHE = {}


@pytest.fixture(params=MODELS)
def model(request):
    if request.param not in _CACHE:
        _CACHE[request.param] = _model(request.param)
    return _CACHE[request.param]


def _states(model, seed=0, dtype=np.float64):
    rng = np.random.default_rng(seed)
    q = np.stack([rbd.random_configuration(model, rng) for _ in range(B)])
    v, u = rng.normal(size=(2, B, model.nv))
    f = rng.normal(size=(B, model.njoints, 6))
    return tuple(np.ascontiguousarray(x, dtype=dtype) for x in (q, v, u, f))


def _same(batched, looped):
    """Item b of the batched result equals the b-th single call's, bit for bit (the
    same compiled kernel on the same numbers); tuples field by field."""
    if hasattr(batched, "_fields"):     # the result records: namedtuples and
        assert type(batched) is type(looped[0])     # KinematicsDerivatives
        for k in range(len(batched)):
            _same(batched[k], [x[k] for x in looped])
        return
    if batched is None:       # a field left out (forward_kinematics without v or a)
        assert all(x is None for x in looped)
        return
    assert isinstance(batched, np.ndarray) and batched.shape == (B,) + looped[0].shape
    assert batched.dtype == looped[0].dtype
    np.testing.assert_array_equal(batched, np.stack(looped))


def _check(fn, *batch_args, **kw):
    model, rest = batch_args[0], batch_args[1:]
    looped = [fn(model, *(None if x is None else x[b] for x in rest), **kw) for b in range(B)]
    # the parallel entries chunk whatever the serial one computes: float64 tests them;
    # another dtype's would be a compile of its own (5-45 s) testing the same chunking
    rare = any(getattr(x, "dtype", np.float64) != np.float64 for x in rest)
    for mode in ("serial",) if rare else ("serial", "parallel"):
        with policy.forced(mode):
            batched = fn(*batch_args, **kw)
        _same(batched, looped)
    return batched


@pytest.mark.parametrize("with_fext", [False, True])
@pytest.mark.parametrize("name", ["rnea", "aba"])
def test_dynamics(model, name, with_fext):
    q, v, u, f = _states(model)
    _check(getattr(rbd, name), model, q, v, u, f if with_fext else None)


@pytest.mark.parametrize("name", ["crba", "minverse", "gravity"])
def test_functions_of_q(model, name):
    q, _, _, _ = _states(model)
    _check(getattr(rbd, name), model, q)


def test_nonlinear_effects(model):
    q, v, _, _ = _states(model)
    _check(rbd.nonlinear_effects, model, q, v)


@pytest.mark.parametrize("with_fext", [False, True])
@pytest.mark.parametrize("method", ["idsva", "chain_rule"])
def test_rnea_derivatives(model, method, with_fext):
    q, v, a, f = _states(model, 1)
    _check(rbd.rnea_derivatives, model, q, v, a, f if with_fext else None, method=method)


@pytest.mark.parametrize("with_fext", [False, True])
@pytest.mark.parametrize("method,product", [("idsva", "dmm"), ("idsva", "aza"),
                                            ("idsva", "auto"), ("chain_rule", "auto")])
def test_aba_derivatives(model, method, product, with_fext):
    q, v, tau, f = _states(model, 2)
    _check(rbd.aba_derivatives, model, q, v, tau, f if with_fext else None, method=method,
           product=product)


@pytest.mark.parametrize("method", ["complex_step", "finite_difference"])
def test_numerical_derivatives(method):
    model = _model("tree-1")
    q, v, u, _ = _states(model, 3)
    _check(rbd.rnea_derivatives, model, q, v, u, None, method=method)
    _check(rbd.aba_derivatives, model, q, v, u, None, method=method)


@pytest.mark.parametrize("reference", ["world", "local", "local_world_aligned"])
def test_kinematics_derivatives(model, reference):
    q, v, a, _ = _states(model, 4)
    _check(rbd.kinematics_derivatives, model, q, v, a, reference=reference)


@pytest.mark.parametrize("dtype", [np.float32, np.complex128])
def test_other_dtypes(model, dtype):
    """float32 and complex128 batches take the same entry points as float64."""
    q, v, u, f = _states(model, 5)
    q, v, u, f = (x.astype(dtype) for x in (q, v, u, f))
    out = _check(rbd.aba, model, q, v, u, f)
    assert out.dtype == dtype
    if dtype == np.float32:
        _check(rbd.aba_derivatives, model, q, v, u, f)


def test_configuration_ops(model):
    q, v, _, _ = _states(model, 6)
    q2 = _check(rbd.integrate, model, q, v)
    _check(rbd.difference, model, q, q2)


def test_forward_kinematics(model):
    """Placements, velocities and accelerations of a batch; v and a optional."""
    q, v, a, _ = _states(model, 7)
    out = _check(rbd.forward_kinematics, model, q, v, a)
    assert out.placements.shape == (B, model.njoints, 4, 4)
    assert out.velocities.shape == out.accelerations.shape == (B, model.njoints, 6)
    batched = rbd.forward_kinematics(model, q)
    assert batched.velocities is None and batched.accelerations is None
    np.testing.assert_array_equal(
        batched.placements, np.stack([rbd.forward_kinematics(model, x).placements for x in q]))
    np.testing.assert_array_equal(batched.placements, out.placements)
    with_v = _check(rbd.forward_kinematics, model, q, v)
    assert with_v.accelerations is None
    np.testing.assert_array_equal(with_v.velocities, out.velocities)
    only_a = _check(lambda m, x, y: rbd.forward_kinematics(m, x, a=y), model, q, a)
    assert only_a.velocities is None


def test_frames(model):
    """frame_placements, frame_placement and frame_jacobian in every reference frame."""
    q, _, _, _ = _states(model, 8)
    T = _check(rbd.frame_placements, model, q)
    assert T.shape == (B, len(model.frames), 4, 4)
    last = len(model.frames) - 1
    for frame in (model.frames[last].name, 0):
        _check(lambda m, x: rbd.frame_placement(m, x, frame), model, q)
        for ref in ("world", "local", "local_world_aligned"):
            J = _check(lambda m, x: rbd.frame_jacobian(m, x, frame, ref), model, q)
            assert J.shape == (B, 6, model.nv)
    np.testing.assert_array_equal(rbd.frame_placement(model, q, last), T[:, last])


@pytest.mark.parametrize("dtype", [np.float32, np.complex128])
def test_kinematics_other_dtypes(dtype):
    model = _model("tree-0")
    q, v, a, _ = (x.astype(dtype) for x in _states(model, 9))
    out = _check(rbd.forward_kinematics, model, q, v, a)
    assert out.placements.dtype == dtype
    _check(lambda m, x: rbd.frame_jacobian(m, x, model.frames[-1].name, "local"), model, q)
    _check(lambda m, x: rbd.frame_placement(m, x, model.frames[-1].name), model, q)
    assert _check(rbd.frame_placements, model, q).dtype == dtype
    assert _check(rbd.gravity, model, q).dtype == dtype
    assert _check(rbd.nonlinear_effects, model, q, v).dtype == dtype


def test_kinematics_bad_batches(model):
    """Mismatched batch sizes, single and batched inputs mixed, and a bad item are refused
    with the argument named."""
    q, v, a, _ = _states(model, 10)
    with pytest.raises(ValueError, match="v: batch size 2 differs from q's 4"):
        rbd.forward_kinematics(model, q, v[:2], a)
    with pytest.raises(ValueError, match="a: shape .* mixes single and batched"):
        rbd.forward_kinematics(model, q, v, a[0])
    with pytest.raises(ValueError, match="a: batch size 3 differs"):
        rbd.kinematics_derivatives(model, q, v, a[:3])
    with pytest.raises(ValueError, match=r"q: expected shape"):
        rbd.frame_jacobian(model, q[None], 0)
    bad = v.copy()
    bad[2, 0] = np.nan
    with pytest.raises(ValueError, match=r"v contains NaN or Inf at index \(2, 0\)"):
        rbd.forward_kinematics(model, q, bad)


def test_batch_of_one_and_mismatch(model):
    """A batch of one is a batch (leading axis kept); mismatched batch sizes are refused."""
    q, v, u, _ = _states(model, 8)
    one = rbd.aba_derivatives(model, q[:1], v[:1], u[:1])
    assert one.dqdd_dq.shape == (1, model.nv, model.nv)
    np.testing.assert_array_equal(one.dqdd_dq[0],
                                  rbd.aba_derivatives(model, q[0], v[0], u[0]).dqdd_dq)
    with pytest.raises(ValueError, match="batch size"):
        rbd.rnea(model, q, v[:2], u)


@pytest.mark.parametrize("fn", [rbd.rnea_derivatives, rbd.aba_derivatives])
def test_out_buffers(fn):
    """out= fills the caller's arrays (batch and single, with fext) with exactly what a
    call without out= returns, and returns them; bad buffers are refused by name."""
    model = _model("hyq+ff")
    q, v, u, f = _states(model, 11)
    want = fn(model, q, v, u, f)
    out = tuple(np.full((B, model.nv, model.nv), np.nan) for _ in range(3))
    got = fn(model, q, v, u, f, out=out)
    assert type(got) is type(want) and all(g is o for g, o in zip(got, out))
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    one = tuple(np.empty((model.nv, model.nv)) for _ in range(3))
    for g, w in zip(fn(model, q[1], v[1], u[1], out=one), fn(model, q[1], v[1], u[1])):
        np.testing.assert_array_equal(g, w)
    names = type(want)._fields
    with pytest.raises(ValueError, match=f"out: {names[1]} must have shape"):
        fn(model, q, v, u, out=(out[0], one[1], out[2]))
    with pytest.raises(ValueError, match=f"out: {names[2]} must have shape .* dtype"):
        fn(model, q, v, u, out=out[:2] + (out[2].astype(np.float32),))
    with pytest.raises(ValueError, match="C-contiguous"):
        fn(model, q[1], v[1], u[1], out=(one[0].T, one[1], one[2]))
    with pytest.raises(ValueError, match=f"{names[1]} overlaps {names[0]}"):
        fn(model, q, v, u, out=(out[0], out[0], out[2]))
    with pytest.raises(TypeError, match="tuple of three"):
        fn(model, q, v, u, out=out[0])
    with pytest.raises(ValueError, match="analytical methods"):
        fn(model, q, v, u, method="finite_difference", out=out)
