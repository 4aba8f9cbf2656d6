"""cpu/outputs.py: a large batch's new outputs come from a kept block, handed out again
only once the caller holds no array of it; what the caller keeps is never overwritten."""

import numpy as np
import pytest

import rbdiff as rbd
from conftest import allocated_by, in_threads
from rbdiff.cpu import outputs
from rbdiff.results import (CenterOfMassVelocity, CentroidalMomentum, IntegrateJacobians,
                            Kinematics)


def _big(model):
    """A batch size whose crba output (B, nv, nv) is past outputs.MIN_BYTES."""
    return outputs.MIN_BYTES // (8 * model.nv * model.nv) + 1


@pytest.fixture(scope="module")
def model():
    return rbd.load_robot("iiwa14")


def test_reused_only_once_dropped(model):
    outputs.clear()
    shapes = [(300, 18, 18)] * 3
    a = outputs.empty(shapes)
    assert all(x.base is a[0].base for x in a) and all(x.flags.c_contiguous for x in a)
    assert all(x.ctypes.data % 64 == 0 for x in a)
    block = id(a[0].base)
    del a
    b = outputs.empty(shapes)
    assert id(b[0].base) == block                      # dropped: handed out again
    c = outputs.empty(shapes)
    assert c[0].base is not b[0].base                  # b still held: a new block
    kept = c[2]
    del c
    d = outputs.empty(shapes)
    assert d[0].base is not kept.base                  # one array held keeps its block
    small = outputs.empty([(4, 7)])
    assert small[0].base is None                       # under MIN_BYTES: np.empty's
    assert outputs.empty([(300, 18, 18)], np.float32)[0].dtype == np.float32


def test_kept_results_are_never_overwritten(model):
    rng = np.random.default_rng(0)
    B = _big(model)
    Q1, Q2 = (rbd.random_configuration(model, rng, batch=B) for _ in range(2))
    M1 = rbd.crba(model, Q1)
    want = M1.copy()
    for _ in range(3):
        M2 = rbd.crba(model, Q2)                       # M1 held: M2 must not reuse it
        assert M2.base is not M1.base
        del M2
    np.testing.assert_array_equal(M1, want)
    np.testing.assert_array_equal(M1, np.stack([rbd.crba(model, q) for q in Q1]))
    d = rbd.aba_derivatives(model, Q1, *(rng.normal(size=(B, 7)) for _ in range(2)))
    dq = d.dqdd_dq.copy()
    rbd.aba_derivatives(model, Q2, *(rng.normal(size=(B, 7)) for _ in range(2)))
    np.testing.assert_array_equal(d.dqdd_dq, dq)


def test_threads_keep_their_outputs(model):
    """Four threads, each keeping every other batch result: each equals the serial call."""
    rng = np.random.default_rng(1)
    B = _big(model)
    qs = [rbd.random_configuration(model, rng, batch=B) for _ in range(4)]
    want = [rbd.crba(model, q) for q in qs]
    bad = []

    def work(k):
        kept = []
        for i in range(60):
            M = rbd.crba(model, qs[k])
            if not np.array_equal(M, want[k]):
                bad.append(k)
            if i % 2:
                kept.append(M)
        if not all(np.array_equal(M, want[k]) for M in kept):
            bad.append(k)

    in_threads(work)
    assert not bad


def test_single_calls_made_in_compiled_code(model):
    """A single call's outputs made by its entry through NumPy's C API
    (kernels.fastargs.output_arg): exact float64 ndarrays owning C-contiguous data, held
    by the caller alone, equal to the declared path's; a refused input (the general path
    then names it) leaves nothing behind."""
    import sys
    rng = np.random.default_rng(5)
    q = rbd.random_configuration(model, rng)
    v, a = rng.normal(size=(2, model.nv))
    frame = model.frames[-1].name
    made = {"rnea": (rbd.rnea(model, q, v, a), rbd.rnea(model, q[None], v[None], a[None])[0]),
            "crba": (rbd.crba(model, q), rbd.crba(model, q[None])[0]),
            "frame_jacobian": (rbd.frame_jacobian(model, q, frame),
                               rbd.frame_jacobian(model, q[None], frame)[0]),
            "integrate": (rbd.integrate(model, q, v), rbd.integrate(model, q[None], v)[0])}
    for name, (x, want) in made.items():
        assert type(x) is np.ndarray and x.dtype == np.float64, name
        assert x.flags.c_contiguous and x.flags.owndata and x.flags.writeable, name
        assert sys.getrefcount(x) == 3, name     # made, the tuple, getrefcount's argument
        np.testing.assert_array_equal(x, want, err_msg=name)    # batches: the same kernels
    # named tuples made by the entry (fastargs.tuple_ref of the result class): the class's
    # own instances, holding their arrays once, the class's references given back
    held = sys.getrefcount(Kinematics)
    for _ in range(200):
        k = rbd.forward_kinematics(model, q, v, a)
    assert sys.getrefcount(Kinematics) == held + 1       # k's
    assert type(k) is Kinematics and sys.getrefcount(k) == 2
    assert [sys.getrefcount(x) for x in k] == [3, 3, 3]       # k, the loop's x, the argument
    for got, want in zip(k, rbd.forward_kinematics(model, q[None], v[None], a[None])):
        np.testing.assert_array_equal(got, want[0])
    k = rbd.forward_kinematics(model, q)
    assert type(k) is Kinematics and k.velocities is None and k.accelerations is None
    for got, kind in ((rbd.center_of_mass(model, q, v), CenterOfMassVelocity),
                      (rbd.centroidal_momentum(model, q, v, a), CentroidalMomentum),
                      (rbd.integrate_jacobians(model, q, v), IntegrateJacobians)):
        assert type(got) is kind
    bad = q.copy()
    bad[0] = np.nan

    def refused():
        for call in (lambda: rbd.rnea(model, bad, v, a), lambda: rbd.crba(model, bad),
                     lambda: rbd.integrate(model, bad, v), lambda: rbd.aba(model, q, v, a * np.nan),
                     lambda: rbd.frame_jacobian(model, bad, frame)):
            with pytest.raises(ValueError):
                call()
    grown = allocated_by(refused, 50)
    assert grown < 50 * 8 * model.nv, grown      # less than one leaked output a call


def test_outputs_made_by_the_python_stand_in(model):
    """Where fastargs is not AVAILABLE (jit.native_ref(available=False)), the stand-in
    makes the outputs whose shapes the fast path passes, with np.empty: the same arrays
    (one, or the tuple of several) as the compiled route, None for a refused input."""
    from rbdiff.cpu import single as cs
    from rbdiff.cpu.scratch import HELD
    from rbdiff.kernels import fastargs
    from rbdiff.kernels.jit import native_ref
    rng = np.random.default_rng(7)
    q = rbd.random_configuration(model, rng)
    v, a = rng.normal(size=(2, model.nv))
    ws = HELD[model._scratch_key]
    for available in [False] + ([True] if fastargs.AVAILABLE else []):
        box = [None, None]
        crba = native_ref(cs.crba_one, 0, box, (2,), outputs=(4,), available=available)
        fk = native_ref(cs.forward_kinematics_one, 1, box, (2, 3, 4), outputs=(6, 7, 8),
                        available=available, result=9)
        M = crba(model.mi, model.mf, q, ws, model._svv)
        np.testing.assert_array_equal(M, rbd.crba(model, q[None])[0])
        k = fk(model.mi, model.mf, q, v, a, ws, model._sT, model._sm, model._sm,
               Kinematics)
        assert type(k) is Kinematics
        want = rbd.forward_kinematics(model, q[None], v[None], a[None])
        for got, w in zip(k, want):
            np.testing.assert_array_equal(got, w[0])
        assert crba(model.mi, model.mf, q.astype(np.float32), ws, model._svv) is None
        assert fk(model.mi, model.mf, q, [0.0] * model.nv, a, ws, model._sT, model._sm,
                  model._sm, Kinematics) is None


def test_fast_paths_bind_their_compiled_entries(model):
    """After one call, each single-call fast path calls its compiled entry itself: the
    stand-in kernels.jit.native put in its place compiled and rebound it (a call that
    gave the entry the wrong number of arguments would instead compile on every call and
    fall back to the general path, 1000x slower: jit.native now refuses it loudly)."""
    from rbdiff import api, centroidal, configuration, kinematics
    from rbdiff.kernels import fastargs
    if not fastargs.AVAILABLE:
        pytest.skip("the Python stand-ins stay in front where fastargs is not available")
    rng = np.random.default_rng(11)
    q = rbd.random_configuration(model, rng)
    v, a = rng.normal(size=(2, model.nv))
    f = np.zeros((model.njoints, 6))
    frame = model.frames[-1].name
    for call in (lambda: rbd.rnea(model, q, v, a), lambda: rbd.rnea(model, q, v, a, fext=f),
                 lambda: rbd.aba(model, q, v, a), lambda: rbd.aba(model, q, v, a, fext=f),
                 lambda: rbd.crba(model, q), lambda: rbd.minverse(model, q),
                 lambda: rbd.gravity(model, q), lambda: rbd.nonlinear_effects(model, q, v),
                 lambda: rbd.forward_kinematics(model, q),
                 lambda: rbd.forward_kinematics(model, q, v),
                 lambda: rbd.forward_kinematics(model, q, v, a),
                 lambda: rbd.frame_placements(model, q),
                 lambda: rbd.frame_placement(model, q, frame),
                 lambda: rbd.frame_jacobian(model, q, frame),
                 lambda: rbd.center_of_mass(model, q), lambda: rbd.center_of_mass(model, q, v),
                 lambda: rbd.center_of_mass(model, q, v, a),
                 lambda: rbd.com_jacobian(model, q),
                 lambda: rbd.centroidal_momentum_matrix(model, q),
                 lambda: rbd.centroidal_momentum(model, q, v),
                 lambda: rbd.centroidal_momentum(model, q, v, a),
                 lambda: rbd.integrate(model, q, v), lambda: rbd.difference(model, q, q),
                 lambda: rbd.integrate_jacobians(model, q, v),
                 lambda: rbd.difference_jacobians(model, q, q)):
        call()
    bound = {api: ("_rnea_front", "_rnea_fext_front", "_aba_front", "_aba_fext_front",
                   "_crba_front", "_minverse_front",
                   "_gravity_front", "_nonlinear_effects_front"),
             kinematics: ("_fk_q", "_fk_qv", "_fk_qva", "_frame_placements_front", "_frame_placement_front",
                          "_frame_jacobian_front"),
             centroidal: ("_com_q", "_com_qv", "_com_qva", "_com_jacobian_front",
                          "_centroidal_map_front", "_momentum_qv", "_momentum_qva"),
             configuration: ("_integrate_fast", "_difference_fast",
                             "_integrate_jacobians_fast", "_difference_jacobians_fast")}
    from rbdiff.kernels import fastcall
    for module, names in bound.items():
        for name in names:
            fn = getattr(module, name)
            assert fn.__name__ != "first_call", name
            # and without Numba's argument tuple (kernels/fastcall.py)
            assert not fastcall.AVAILABLE or fn.__doc__ == fastcall.DOC, name


def test_fastcall_entry_is_numbas_wrapper_without_the_tuple():
    """An entry bound as a METH_FASTCALL builtin (kernels/fastcall.py) gives Numba's
    wrapper's result, refuses another argument count with TypeError, refuses keywords,
    and raises what the compiled code raises (ValueError: a NaN configuration)."""
    from rbdiff import api
    from rbdiff.cpu import single
    from rbdiff.cpu.scratch import HELD
    from rbdiff.kernels import fastcall
    if not fastcall.AVAILABLE:
        pytest.skip("Numba's internals differ: entries keep Numba's wrapper")
    m = rbd.models.serial_chain(4)
    rng = np.random.default_rng(3)
    q, v, a = rng.normal(size=(3, m.nv))
    rbd.rnea(m, q, v, a)          # binds api._rnea_front
    fast = api._rnea_front
    assert fast.__doc__ == fastcall.DOC
    args = (m, q, v, a)
    tau = fast(*args)
    out = np.empty(m.nv)
    assert single.rnea_one(m.mi, m.mf, q, v, a, None, HELD[m._scratch_key], out) is True
    np.testing.assert_array_equal(tau, out)
    with pytest.raises(TypeError, match="takes exactly 4 arguments"):
        fast(*args[:-1])
    with pytest.raises(TypeError):
        fast(*args[:-1], a=a)
    bad = q.copy()
    bad[0] = np.nan
    with pytest.raises(ValueError):
        fast(m, bad, v, a)
