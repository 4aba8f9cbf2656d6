"""Bad input gets a clear error naming the argument; dtypes and batches dispatch right."""

import numpy as np
import pytest

import rbdiff as rbd
from conftest import in_threads
from rbdiff.cpu import policy


@pytest.fixture(scope="module")
def ff_model():
    return rbd.models.random_tree(6, 3, floating_base=True,
                                  joint_types=("revolute", "continuous", "spherical"))


def _state(model, seed=0):
    rng = np.random.default_rng(seed)
    return (rbd.random_configuration(model, rng), rng.normal(size=model.nv),
            rng.normal(size=model.nv))


def test_wrong_shapes_name_the_argument(ff_model):
    q, v, a = _state(ff_model)
    with pytest.raises(ValueError, match=r"^q: expected shape"):
        rbd.rnea(ff_model, q[:-1], v, a)
    with pytest.raises(ValueError, match=r"^a: expected shape"):
        rbd.rnea(ff_model, q, v, np.zeros(ff_model.nv + 1))
    with pytest.raises(ValueError, match=r"^tau: expected shape"):
        rbd.aba(ff_model, q, v, np.zeros((2, 2, ff_model.nv)))
    with pytest.raises(ValueError, match=r"^fext: expected shape"):
        rbd.rnea(ff_model, q, v, a, np.zeros((ff_model.njoints, 3)))
    with pytest.raises(ValueError, match="mixes single and batched"):
        rbd.rnea(ff_model, q[None], v, a)
    with pytest.raises(ValueError, match="batch size"):
        rbd.aba(ff_model, np.stack([q, q]), np.stack([v] * 3), np.stack([a] * 2))
    with pytest.raises(TypeError, match="^q: expected an array"):
        rbd.crba(ff_model, None)
    with pytest.raises(TypeError, match="^v: expected a real or complex"):
        rbd.rnea(ff_model, q, np.array(["x"] * ff_model.nv), a)


@pytest.mark.parametrize("fn", ["rnea", "aba"])
@pytest.mark.parametrize("arg", [1, 2])
def test_nan_and_inf_are_refused(ff_model, fn, arg):
    state = list(_state(ff_model))
    state[arg] = state[arg].copy()
    state[arg][1] = np.nan if arg == 1 else np.inf
    name = ["q", "v", "a" if fn == "rnea" else "tau"][arg]
    with pytest.raises(ValueError, match=rf"^{name} contains NaN or Inf at index \(1,\)"):
        getattr(rbd, fn)(ff_model, *state)


def test_nan_in_q_and_fext(ff_model):
    q, v, a = _state(ff_model)
    bad = q.copy()
    bad[0] = np.nan
    for fn in (lambda x: rbd.crba(ff_model, x), lambda x: rbd.minverse(ff_model, x),
               lambda x: rbd.rnea(ff_model, x, v, a)):
        with pytest.raises(ValueError, match=r"^q contains NaN"):
            fn(bad)
    fext = np.zeros((ff_model.njoints, 6))
    fext[2, 4] = np.inf
    with pytest.raises(ValueError, match=r"^fext contains NaN or Inf at index \(2, 4\)"):
        rbd.rnea(ff_model, q, v, a, fext)


def test_fext_rows_are_joint_ids_as_in_pinocchio(ff_model):
    """Row j of fext acts on joint j (0 the universe, ignored), so Pinocchio's list of
    njoints forces maps row for row; the pre-0.2 shape (no universe row) is refused by
    name instead of shifting every force by one body."""
    q, v, a = _state(ff_model)
    n = ff_model.njoints
    assert n == len(ff_model.names) == ff_model.parents.shape[0]
    rng = np.random.default_rng(3)
    fext = rng.normal(size=(n, 6))
    tau = rbd.rnea(ff_model, q, v, a, fext)
    moved = fext.copy()
    moved[0] = 1e3                                    # the universe's row: ignored
    np.testing.assert_array_equal(rbd.rnea(ff_model, q, v, a, moved), tau)
    np.testing.assert_array_equal(rbd.aba(ff_model, q, v, tau, moved),
                                  rbd.aba(ff_model, q, v, tau, fext))
    # a force on the last joint's body alone moves only the dofs of it and its ancestors
    last = np.zeros((n, 6))
    last[n - 1] = [0, 0, 5.0, 0, 0, 0]
    dtau = rbd.rnea(ff_model, q, v, a, last) - rbd.rnea(ff_model, q, v, a)
    support = set()
    j = n - 1
    while j > 0:
        support.update(range(ff_model.idx_v[j], ff_model.idx_v[j] + ff_model.nvs[j]))
        j = int(ff_model.parents[j])
    off = [k for k in range(ff_model.nv) if k not in support]
    assert np.all(dtau[off] == 0.0) and np.any(dtau[sorted(support)] != 0.0)
    old = fext[1:]
    for call in (lambda f: rbd.rnea(ff_model, q, v, a, f),
                 lambda f: rbd.aba(ff_model, q, v, a, f),
                 lambda f: rbd.rnea_derivatives(ff_model, q, v, a, f),
                 lambda f: rbd.rnea(ff_model, np.stack([q] * 2), np.stack([v] * 2),
                                    np.stack([a] * 2), np.stack([f] * 2))):
        with pytest.raises(ValueError, match=r"fext: expected shape .*row 0 is the universe"
                                             r".*rbdiff < 0.2.*prepend a zero row"):
            call(old)


def test_unnormalised_quaternion_names_the_joint(ff_model):
    q, v, a = _state(ff_model)
    q = q.copy()
    q[3:7] *= 1.01                      # the free-flyer's quaternion
    with pytest.raises(ValueError, match=r"quaternion of joint 'j1_free_flyer'.*norm 1\.01"):
        rbd.rnea(ff_model, q, v, a)
    with pytest.raises(ValueError, match="quaternion of joint 'j1_free_flyer'"):
        rbd.minverse(ff_model, np.stack([rbd.neutral(ff_model), q]))
    q2 = q.copy()
    q2[3:7] /= 1.01
    q2[3:7] *= 1 + 1e-9                  # within tolerance: accepted
    rbd.rnea(ff_model, q2, v, a)


def test_unnormalised_continuous_pair():
    model = rbd.models.random_tree(3, 0, joint_types=("continuous",))
    q = rbd.neutral(model)
    q[0] = 2.0
    with pytest.raises(ValueError, match=r"\(cos, sin\) pair of joint"):
        rbd.crba(model, q)


def test_lists_and_ints_are_accepted():
    model = rbd.load_robot("iiwa14")
    q = [0, 1, 0, 1, 0, 1, 0]
    tau = rbd.rnea(model, q, [0] * 7, [0] * 7)
    assert tau.dtype == np.float64
    assert np.allclose(tau, rbd.gravity(model, np.array(q, float)))


def test_float32_and_complex_compute_in_their_type():
    model = rbd.load_robot("iiwa14")
    rng = np.random.default_rng(0)
    q, v, a = rbd.random_configuration(model, rng), rng.normal(size=7), rng.normal(size=7)
    ref = rbd.rnea(model, q, v, a)
    t32 = rbd.rnea(model, q.astype(np.float32), v.astype(np.float32), a.astype(np.float32))
    assert t32.dtype == np.float32
    assert np.max(np.abs(t32 - ref)) / np.max(np.abs(ref)) < 1e-4
    tc = rbd.rnea(model, q.astype(complex), v, a)
    assert tc.dtype == np.complex128 and np.allclose(tc.real, ref, rtol=0, atol=1e-12)
    for fn in (rbd.crba, rbd.minverse):
        assert fn(model, q.astype(np.float32)).dtype == np.float32
        assert np.allclose(fn(model, q.astype(complex)).real, fn(model, q), atol=1e-12)
    assert rbd.aba(model, q, v, a.astype(np.float32)).dtype == np.float64


def test_complex_step_through_rnea_gives_the_mass_matrix():
    """d tau / d a = M, by complex step through the same compiled kernel."""
    model = rbd.load_robot("iiwa14")
    rng = np.random.default_rng(1)
    q, v = rbd.random_configuration(model, rng), rng.normal(size=7)
    h = 1e-20
    cols = [rbd.rnea(model, q, v, 1j * h * e).imag / h for e in np.eye(7)]
    assert np.max(np.abs(np.array(cols).T - rbd.crba(model, q))) < 1e-12


def test_model_is_immutable():
    model = rbd.load_robot("iiwa14")
    with pytest.raises(AttributeError):
        model.nv = 3
    with pytest.raises(ValueError):
        model.mf[1, 0] = 2.0


def test_fast_path_takes_views_and_read_only_arrays():
    """The fast path calls the compiled function without Numba's type dispatch: strided
    views, reversed and read-only arrays must still give the contiguous result."""
    model = rbd.load_robot("iiwa14")
    rng = np.random.default_rng(3)
    q = rbd.random_configuration(model, rng)
    v, a = rng.normal(size=model.nv), rng.normal(size=model.nv)
    ref = rbd.rnea(model, q, v, a)
    dref = rbd.rnea_derivatives(model, q, v, a)
    Q = np.zeros((model.nq, 3))
    Q[:, 1] = q
    rev = v[::-1].copy()[::-1]
    frozen = a.copy()
    frozen.setflags(write=False)
    np.testing.assert_array_equal(rbd.rnea(model, Q[:, 1], rev, frozen), ref)
    np.testing.assert_array_equal(rbd.crba(model, Q[:, 1]), rbd.crba(model, q))
    for x, y in zip(rbd.rnea_derivatives(model, Q[:, 1], rev, frozen), dref):
        np.testing.assert_array_equal(x, y)
    qdd = rbd.aba(model, Q[:, 1], rev, ref)
    np.testing.assert_allclose(qdd, a, atol=1e-10)


def test_batch_fast_path_takes_views_and_read_only_arrays():
    """The batch fast paths call their serial entry without type dispatch too (compiled
    for any strides): strided, Fortran-ordered and read-only batches must give the
    contiguous batch's result, bit for bit."""
    model = rbd.load_robot("iiwa14")
    rng = np.random.default_rng(5)
    Bn = 5
    q = rbd.random_configuration(model, rng, batch=Bn)
    v, a = rng.normal(size=(2, Bn, model.nv))
    with policy.forced("serial"):
        ref = [rbd.rnea(model, q, v, a), rbd.aba(model, q, v, a), rbd.crba(model, q),
               rbd.minverse(model, q), *rbd.rnea_derivatives(model, q, v, a),
               *rbd.aba_derivatives(model, q, v, a)]
        wide = np.zeros((2 * Bn, model.nq))
        wide[::2] = q                                   # every other row: strided
        fort = np.asfortranarray(v)
        frozen = a.copy()
        frozen.setflags(write=False)
        w = wide[::2]
        got = [rbd.rnea(model, w, fort, frozen), rbd.aba(model, w, fort, frozen),
               rbd.crba(model, w), rbd.minverse(model, w),
               *rbd.rnea_derivatives(model, w, fort, frozen),
               *rbd.aba_derivatives(model, w, fort, frozen)]
    for x, y in zip(got, ref):
        np.testing.assert_array_equal(x, y)


@pytest.mark.auto_policy        # the few-item route is the auto policy's choice
def test_tiny_batches_run_on_the_model_workspace():
    """Once its plan has timed it, a batch too small to time runs cpu.batch.aba_few /
    rnea_few on the model's single-call workspace: the same results as the single calls,
    bit for bit, and bad input refused as by any batch (the general path names it)."""
    from rbdiff import api
    model = rbd.models.random_tree(7, 3, floating_base=True)
    rng = np.random.default_rng(7)
    q = rbd.random_configuration(model, rng, batch=2)
    v, a = rng.normal(size=(2, 2, model.nv))
    tau = rbd.rnea(model, q, v, a)
    for _ in range(50):     # the policy times the first calls (the first ones run cold)
        got_tau, got_qdd = rbd.rnea(model, q, v, a), rbd.aba(model, q, v, tau)
        if api._aba_few.__name__ == "aba_few" and api._rnea_few.__name__ == "rnea_few":
            break
    assert api._aba_few.__name__ == "aba_few" and api._rnea_few.__name__ == "rnea_few"
    got_tau, got_qdd = rbd.rnea(model, q, v, a), rbd.aba(model, q, v, tau)
    for b in range(2):
        np.testing.assert_array_equal(got_tau[b], rbd.rnea(model, q[b], v[b], a[b]))
        np.testing.assert_array_equal(got_qdd[b], rbd.aba(model, q[b], v[b], tau[b]))
    bad = v.copy()
    bad[1, 2] = np.nan
    with pytest.raises(ValueError, match="v"):
        rbd.aba(model, q, bad, tau)
    with pytest.raises(ValueError, match="v"):
        rbd.rnea(model, q, bad, a)


def test_general_batch_path_runs_the_fast_paths_machine_code():
    """A float64 batch the fast path does not take (unpickled arrays, whose dtype is a
    copy, as dask workers receive them; external forces) runs the entry the fast path
    compiled: no second specialisation of the batch entry."""
    import pickle

    from rbdiff.cpu import batch
    model = rbd.load_robot("iiwa14")
    rng = np.random.default_rng(6)
    q = rbd.random_configuration(model, rng, batch=3)
    v, a = rng.normal(size=(2, 3, model.nv))
    with policy.forced("serial"):
        ref = rbd.aba(model, q, v, a)
        n = len(batch.aba_batch.overloads)
        qp, vp, ap = pickle.loads(pickle.dumps((q, v, a)))
        assert qp.dtype == np.float64 and qp.dtype is not np.dtype(np.float64)
        np.testing.assert_array_equal(rbd.aba(model, qp, vp, ap), ref)
        f = rng.normal(size=(3, model.njoints, 6))      # external forces: general path too
        np.testing.assert_array_equal(
            rbd.aba(model, q, v, a, fext=f),
            np.stack([rbd.aba(model, q[b], v[b], a[b], fext=f[b]) for b in range(3)]))
    assert len(batch.aba_batch.overloads) == n


class _LooksLikeAnArray:
    """float64 .dtype and .ndim 1, but not a NumPy array: only np.asarray reads it."""
    def __init__(self, x):
        self._x = np.asarray(x, np.float64)
        self.dtype, self.ndim = self._x.dtype, self._x.ndim

    def __array__(self, dtype=None, copy=None):
        return self._x


def test_fast_path_leaves_what_is_not_a_numpy_array():
    """The fast paths ask only dtype and ndim; anything else must reach the general path
    (and an ndarray subclass is computed as its data)."""
    model = rbd.load_robot("iiwa14")
    rng = np.random.default_rng(4)
    q = rbd.random_configuration(model, rng)
    v, a = rng.normal(size=model.nv), rng.normal(size=model.nv)
    fake = [_LooksLikeAnArray(x) for x in (q, v, a)]
    np.testing.assert_array_equal(rbd.rnea(model, *fake), rbd.rnea(model, q, v, a))
    np.testing.assert_array_equal(rbd.aba(model, *fake), rbd.aba(model, q, v, a))
    np.testing.assert_array_equal(rbd.crba(model, fake[0]), rbd.crba(model, q))
    np.testing.assert_array_equal(rbd.minverse(model, fake[0]), rbd.minverse(model, q))
    sub = q.view(type("Sub", (np.ndarray,), {}))
    np.testing.assert_array_equal(rbd.crba(model, sub), rbd.crba(model, q))
    with pytest.raises(ValueError, match="q: expected shape"):
        rbd.rnea(model, _LooksLikeAnArray(q[:3]), v, a)


def test_threads_calling_one_model_keep_their_scratch(ff_model):
    """Single calls reuse a workspace per model size (cpu/scratch.py): threads calling one
    model at once must still get their own results."""
    states = [_state(ff_model, seed) for seed in range(4)]
    want = [(rbd.rnea(ff_model, *s), rbd.crba(ff_model, s[0]), rbd.minverse(ff_model, s[0]),
             rbd.aba(ff_model, *s)) for s in states]
    bad = []

    def work(k):
        q, v, a = states[k]
        for _ in range(300):
            got = (rbd.rnea(ff_model, q, v, a), rbd.crba(ff_model, q),
                   rbd.minverse(ff_model, q), rbd.aba(ff_model, q, v, a))
            if not all(np.array_equal(g, w) for g, w in zip(got, want[k])):
                bad.append(k)
                return

    in_threads(work)
    assert not bad


def test_model_pickles(ff_model):
    import pickle
    m = pickle.loads(pickle.dumps(ff_model))
    q, v, a = _state(ff_model, 5)
    np.testing.assert_array_equal(rbd.minverse(m, q), rbd.minverse(ff_model, q))
    np.testing.assert_array_equal(rbd.rnea(m, q, v, a), rbd.rnea(ff_model, q, v, a))
    assert m == ff_model and hash(m) == hash(ff_model) and m is not ff_model
