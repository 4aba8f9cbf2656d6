"""Configuration-space operations (rbdiff.configuration, rbdiff.kernels.configuration):
integrate, difference and neutral against Pinocchio on every robot and random tree of
conftest (every joint type), against the NumPy reference (rbdiff.model.configuration),
round trips, small and zero steps, batches bit-equal to loops, float32 and complex step,
and errors that name the argument and the joint."""

import numpy as np
import pinocchio as pin
import pytest

import rbdiff as rbd
from conftest import tree_pair
from rbdiff.cpu import batch, single
from rbdiff.model import configuration as ref
from rbdiff.model import layout as L

# Pinocchio's difference takes SO(2) angles by asin / acos (and log3 by its own series),
# a few ulps off near some angles: compare at 1e-12; integrate agrees to rounding.
INTEGRATE_TOL = 1e-14
DIFFERENCE_TOL = 1e-12


def _q(pm, rng, scale=1.0):
    return pin.integrate(pm, pin.neutral(pm), scale * rng.normal(size=pm.nv))


def _rel(x, y):
    return np.max(np.abs(x - y)) / max(1.0, np.max(np.abs(y)))


# ---- against Pinocchio -------------------------------------------------------------------

@pytest.mark.parametrize("seed", range(3))
def test_matches_pinocchio(pair, seed):
    model, pm = pair
    rng = np.random.default_rng(seed)
    for scale in (0.3, 1.0, 3.0):          # 3: rotations past pi (free-flyer sign flip)
        q = _q(pm, rng, 3.0)
        v = scale * rng.normal(size=model.nv)
        q1 = rbd.integrate(model, q, v)
        assert q1.shape == (model.nq,) and q1.dtype == np.float64
        assert _rel(q1, pin.integrate(pm, q, v)) < INTEGRATE_TOL
        assert _rel(rbd.difference(model, q, q1), pin.difference(pm, q, q1)) < DIFFERENCE_TOL
        q2 = _q(pm, rng, 3.0)               # two unrelated configurations
        assert _rel(rbd.difference(model, q, q2), pin.difference(pm, q, q2)) < DIFFERENCE_TOL
    assert np.array_equal(rbd.neutral(model), pin.neutral(pm))


def test_round_trip(pair):
    """difference(q, integrate(q, v)) = v while rotations stay below pi, and
    integrate(q0, difference(q0, q1)) = q1 (as rotations: quaternions up to sign)."""
    model, pm = pair
    rng = np.random.default_rng(7)
    q = _q(pm, rng, 3.0)
    v = 0.3 * rng.normal(size=model.nv)
    assert np.max(np.abs(rbd.difference(model, q, rbd.integrate(model, q, v)) - v)) < 1e-13
    q1 = _q(pm, rng, 3.0)
    back = rbd.integrate(model, q, rbd.difference(model, q, q1))
    assert np.max(np.abs(pin.difference(pm, q1, back))) < 1e-13


@pytest.mark.parametrize("step", [0.0, 1e-12, 1e-9, 1e-7])
def test_small_and_zero_steps(pair, step):
    """The Taylor branches: steps of 1e-12..1e-7 rad and exactly zero agree with
    Pinocchio to rounding, and round-trip to the step itself. (Pinocchio's SO(2)
    difference returns 0 for such steps when the renormalised pair's dot product rounds
    above 1: continuous joints are compared with the step only.)"""
    model, pm = pair
    rng = np.random.default_rng(3)
    q = _q(pm, rng)
    v = step * rng.choice([-1.0, 1.0], size=model.nv)
    q1 = rbd.integrate(model, q, v)
    assert _rel(q1, pin.integrate(pm, q, v)) < 1e-15
    d = rbd.difference(model, q, q1)
    assert np.max(np.abs(d - v)) < 1e-15 + 1e-9 * step
    so2 = model.joint_types[model.joint_of_dof] == L.REVOLUTE_UNBOUNDED
    assert np.max(np.abs(d - pin.difference(pm, q, q1))[~so2], initial=0.0) < 1e-15
    if step == 0.0:
        assert np.array_equal(rbd.difference(model, q, q), np.zeros(model.nv))


def test_neutral_is_a_new_writable_array(pair):
    model, pm = pair
    a = rbd.neutral(model)
    a[:] = 5.0
    b = rbd.neutral(model)
    assert np.array_equal(b, pin.neutral(pm)) and b.flags.writeable and b is not a
    out = np.empty(model.nq)
    single.neutral_one(model.mi, out)          # the compiled kernel gives the same
    assert np.array_equal(out, b)


# ---- the compiled kernels against the NumPy reference ------------------------------------

@pytest.mark.parametrize("seed", range(4))
def test_matches_numpy_reference(seed):
    model = rbd.models.random_tree(12, seed, floating_base=seed % 2 == 0)
    rng = np.random.default_rng(seed)
    q0 = rbd.random_configuration(model, rng)
    q1 = rbd.random_configuration(model, rng)
    v = rng.normal(size=model.nv) * 2
    assert _rel(rbd.integrate(model, q0, v), ref.integrate(model, q0, v)) < INTEGRATE_TOL
    assert _rel(rbd.difference(model, q0, q1), ref.difference(model, q0, q1)) < 1e-13
    assert np.array_equal(rbd.neutral(model), ref.neutral(model))
    vc = v + 1e-3j * rng.normal(size=model.nv)        # complex, both sides
    assert _rel(rbd.integrate(model, q0, vc), ref.integrate(model, q0, vc)) < INTEGRATE_TOL


# ---- batches ---------------------------------------------------------------------------

B = 5


@pytest.fixture(scope="module")
def ff_tree():
    return rbd.models.random_tree(10, 2, floating_base=True)


def _batch_inputs(model, seed=0):
    rng = np.random.default_rng(seed)
    q = rbd.random_configuration(model, rng, batch=B)
    q1 = rbd.random_configuration(model, rng, batch=B)
    return q, q1, rng.normal(size=(B, model.nv))


def test_batches_equal_loops(ff_tree):
    """Every item bit-equal to the single call, a single argument broadcast along the
    other's batch axis."""
    m = ff_tree
    q, q1, v = _batch_inputs(m)
    cases = [(rbd.integrate, q, v), (rbd.integrate, q[0], v), (rbd.integrate, q, v[0]),
             (rbd.difference, q, q1), (rbd.difference, q[0], q1), (rbd.difference, q, q1[0])]
    for fn, x, y in cases:
        out = fn(m, x, y)
        assert out.shape == (B, m.nq if fn is rbd.integrate else m.nv)
        loop = np.stack([fn(m, x if x.ndim == 1 else x[b], y if y.ndim == 1 else y[b])
                         for b in range(B)])
        assert np.array_equal(out, loop)


def test_parallel_entries_equal_serial(ff_tree):
    m = ff_tree
    q, q1, v = _batch_inputs(m, 1)
    for serial, parallel, args, width in [
            (batch.integrate_batch, batch.integrate_parallel, (q, v), m.nq),
            (batch.difference_batch, batch.difference_parallel, (q, q1), m.nv)]:
        a, b = np.empty((B, width)), np.empty((B, width))
        serial(m.mi, *args, a, True)
        parallel(m.mi, *args, b, 2)
        assert np.array_equal(a, b)


def test_batch_sizes_must_agree(ff_tree):
    q, q1, v = _batch_inputs(ff_tree)
    with pytest.raises(ValueError, match="^v: batch size 4 differs from q's 5"):
        rbd.integrate(ff_tree, q, v[:4])
    with pytest.raises(ValueError, match="^q1: batch size 3 differs"):
        rbd.difference(ff_tree, q, q1[:3])


def test_empty_batch(ff_tree):
    q, _, v = _batch_inputs(ff_tree)
    assert rbd.integrate(ff_tree, q[:0], v[:0]).shape == (0, ff_tree.nq)


# ---- dtypes: float32, complex step -------------------------------------------------------

def test_float32_computes_in_float32(ff_tree):
    m = ff_tree
    q, q1, v = _batch_inputs(m, 2)
    r = rbd.integrate(m, q[0].astype(np.float32), v[0].astype(np.float32))
    assert r.dtype == np.float32
    assert np.max(np.abs(r - rbd.integrate(m, q[0], v[0]))) < 1e-5
    d = rbd.difference(m, q[0].astype(np.float32), q1[0].astype(np.float32))
    assert d.dtype == np.float32
    assert np.max(np.abs(d - rbd.difference(m, q[0], q1[0]))) < 1e-4
    rb = rbd.integrate(m, q.astype(np.float32), v.astype(np.float32))      # batch
    assert rb.dtype == np.float32 and np.array_equal(
        rb[1], rbd.integrate(m, q[1].astype(np.float32), v[1].astype(np.float32)))
    assert rbd.integrate(m, q[0].astype(np.float32), v[0]).dtype == np.float64   # promoted


@pytest.mark.parametrize("seed", range(2))
def test_complex_step_through_integrate(seed):
    """integrate(q, v + i h e_k).imag / h is the derivative along e_k: central
    differences agree, at v = 0 and away from it, and through the Taylor branches."""
    model = rbd.models.random_tree(8, seed, floating_base=True)
    rng = np.random.default_rng(seed)
    q = rbd.random_configuration(model, rng)
    E = np.eye(model.nv)
    h, hf = 1e-20, 1e-6
    for v in (np.zeros(model.nv), rng.normal(size=model.nv)):
        cs = rbd.integrate(model, q, v + 1j * h * E).imag / h                    # (nv, nq)
        fd = (rbd.integrate(model, q, v + hf * E) - rbd.integrate(model, q, v - hf * E)) / (2 * hf)
        assert np.max(np.abs(cs - fd)) < 1e-8
        # difference(q, integrate(q, v)) = v, so its Jacobian along v is the identity
        # (complex step through both kernels, the difference's atan2 included)
        vs = 0.3 * v
        jac = rbd.difference(model, q.astype(complex),
                             rbd.integrate(model, q, vs + 1j * h * E)).imag / h
        assert np.max(np.abs(jac - E)) < 1e-12


def test_complex_q_and_v():
    """Complex configurations (a complex step already inside q) integrate as their real
    parts do, and batches of them equal loops."""
    model = rbd.models.random_tree(8, 5, floating_base=True)
    rng = np.random.default_rng(5)
    q = rbd.random_configuration(model, rng, batch=3).astype(complex)
    v = rng.normal(size=(3, model.nv)) + 1e-20j * rng.normal(size=(3, model.nv))
    out = rbd.integrate(model, q, v)
    assert out.dtype == np.complex128
    assert np.max(np.abs(out.real - rbd.integrate(model, q.real, v.real))) < 1e-15
    assert np.array_equal(out, np.stack([rbd.integrate(model, q[b], v[b]) for b in range(3)]))


# ---- errors ----------------------------------------------------------------------------

def test_errors_name_the_argument_and_joint():
    model = rbd.models.random_tree(5, 1, floating_base=True,
                                   joint_types=("revolute", "continuous", "spherical"))
    rng = np.random.default_rng(0)
    q, v = rbd.random_configuration(model, rng), rng.normal(size=model.nv)
    with pytest.raises(ValueError, match=r"^v: expected shape"):
        rbd.integrate(model, q, v[:-1])
    with pytest.raises(ValueError, match=r"^q1: expected shape"):
        rbd.difference(model, q, q[None, None])
    with pytest.raises(TypeError, match=r"^q: expected an array"):
        rbd.integrate(model, None, v)
    bad = v.copy()
    bad[2] = np.nan
    with pytest.raises(ValueError, match=r"^v contains NaN or Inf at index \(2,\)"):
        rbd.integrate(model, q, bad)
    bad = q.copy()
    bad[1] = np.inf
    with pytest.raises(ValueError, match=r"^q1 contains NaN or Inf at index \(1,\)"):
        rbd.difference(model, q, bad)
    root = model.names[1]
    for name in ("q", "q0", "q1"):
        bad = q.copy()
        bad[3:7] *= 1.01                     # the free flyer's quaternion
        args = {"q": (bad, v), "q0": (bad, q), "q1": (q, bad)}[name]
        fn = rbd.integrate if name == "q" else rbd.difference
        with pytest.raises(ValueError, match=rf"^{name}: the quaternion of joint "
                                             rf"'{root}' \({name}\[3:7\]\) has norm 1.01"):
            fn(model, *args)
    qs = np.stack([q, q])
    qs[1, 3:7] *= 0.9
    with pytest.raises(ValueError, match=r"of batch item 1\) has norm 0.9"):
        rbd.integrate(model, qs, v)


def test_error_names_robot_root_joint():
    model = rbd.load_robot("iiwa14", floating_base=True)
    q = rbd.neutral(model)
    q[6] = 2.0
    with pytest.raises(ValueError, match=r"^q: the quaternion of joint 'root_joint'"):
        rbd.integrate(model, q, np.zeros(model.nv))


def test_lists_and_read_only_views_are_accepted():
    model, pm = tree_pair(0, n=6, floating=True)
    q = rbd.neutral(model)
    v = np.linspace(-1, 1, model.nv)
    ro = q.copy()
    ro.setflags(write=False)
    ref_ = pin.integrate(pm, q, v)
    assert _rel(rbd.integrate(model, list(q), list(v)), ref_) < INTEGRATE_TOL
    assert _rel(rbd.integrate(model, ro, v), ref_) < INTEGRATE_TOL
    strided = np.repeat(v, 2)[::2]                   # a non-contiguous view
    assert _rel(rbd.integrate(model, q, strided), ref_) < INTEGRATE_TOL


def test_random_configuration_is_valid_and_batched():
    model = rbd.models.random_tree(10, 4, floating_base=True)
    qs = rbd.random_configuration(model, 0, batch=6)
    assert qs.shape == (6, model.nq)
    for q in qs:
        rbd.rnea(model, q, np.zeros(model.nv), np.zeros(model.nv))   # passes validation
    iiwa = rbd.load_robot("iiwa14")
    qi = rbd.random_configuration(iiwa, 1, batch=200)
    assert np.all(qi >= iiwa.lower_limits) and np.all(qi <= iiwa.upper_limits)
    assert np.array_equal(rbd.random_configuration(model, 3), rbd.random_configuration(model, 3))


def test_model_marks_runs_of_one_dof_joints():
    """layout.MI_RUN: the kernels add runs of revolute / prismatic coordinates as one
    vector and skip them whole in the quaternion checks."""
    model = rbd.models.random_tree(30, 6, floating_base=True)
    t = model.joint_types
    for i in range(1, model.njoints):
        run = 0
        while i + run < model.njoints and t[i + run] in (L.REVOLUTE, L.PRISMATIC):
            run += 1
        assert model.mi[i, L.MI_RUN] == run
        if run:
            assert model.idx_q[i + run - 1] - model.idx_q[i] == run - 1
            assert model.idx_v[i + run - 1] - model.idx_v[i] == run - 1


def test_fast_path_refuses_what_it_cannot_read():
    """The fast entries take q and v as any objects (kernels.fastargs) and accept only
    float64 1-D ndarrays: int64 data (8 bytes too), other byte orders, 2-D arrays and
    ndarray subclasses go to the general path and give the float64 answer."""
    from rbdiff import configuration as C
    from rbdiff.cpu import single
    from rbdiff.kernels import fastargs
    from rbdiff.kernels.jit import native_ref
    model, pm = tree_pair(1, n=6, floating=True)
    rng = np.random.default_rng(1)
    q = _q(pm, rng)
    v = np.round(3 * rng.normal(size=model.nv))
    want = pin.integrate(pm, q, v)
    assert _rel(rbd.integrate(model, q, v.astype(np.int64)), want) < INTEGRATE_TOL
    assert _rel(rbd.integrate(model, q.astype(">f8"), v), want) < INTEGRATE_TOL
    assert _rel(rbd.integrate(model, q[None], v)[0], want) < INTEGRATE_TOL
    assert _rel(rbd.integrate(model, np.asmatrix(q), v)[0], want) < INTEGRATE_TOL
    if fastargs.AVAILABLE:
        rbd.integrate(model, q, v)           # binds C._integrate_fast to the compiled entry
        for bad in (q.astype(np.int64), q[None], q.astype(np.float32), list(q), np.asmatrix(q),
                    q.astype(">f8"), None, 3.0):
            assert C._integrate_fast(model.mi, bad, v, model._sq) is None
            assert C._integrate_fast(model.mi, q, bad, model._sq) is None
        out = C._integrate_fast(model.mi, q, v, model._sq)     # made by the entry
        assert type(out) is np.ndarray and out.shape == (model.nq,) and out.flags.c_contiguous
        assert _rel(out, want) < INTEGRATE_TOL
    # the Python-checked stand-ins where fastargs is not AVAILABLE (jit.native_ref)
    box = [None, None]
    integrate_checked = native_ref(single.integrate_one, 0, box, (1, 2), available=False)
    difference_checked = native_ref(single.difference_one, 1, box, (1, 2), available=False)
    for bad in (q.astype(np.int64), q[None], list(q), np.asmatrix(q), None):
        assert integrate_checked(model.mi, bad, v, out) is False
    assert integrate_checked(model.mi, q, v, out) is True
    assert _rel(out, want) < INTEGRATE_TOL
    d = np.empty(model.nv)
    assert difference_checked(model.mi, q, out, d) is True
    assert np.max(np.abs(d - v)) < 1e-12 or _rel(d, pin.difference(pm, q, out)) < 1e-12
