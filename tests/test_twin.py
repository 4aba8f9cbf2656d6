"""Parallel batch entries call their serial twin by address (rbdiff/cpu/twin.py)."""

import json
import os
import subprocess
import sys
import textwrap

# the names of the functions a script's process compiles, in order
_LOG = """
    from numba.core import event
    compiled = []
    class Log(event.Listener):
        def on_start(self, e):
            compiled.append(e.data["dispatcher"].py_func.__name__)
        def on_end(self, e):
            pass
    event.register("numba:compile", Log())
"""

_SCRIPT = textwrap.dedent("""
    import json, re, sys
    import numpy as np
""" + _LOG + """    import rbdiff as rbd
    from rbdiff.cpu import batch, policy
    m = rbd.models.random_tree(6, 4, floating_base=True)
    rng = np.random.default_rng(0)
    q = rbd.random_configuration(m, rng, batch=5)
    v = rng.normal(size=(5, m.nv))
    if sys.argv[1] == "serial first":
        with policy.forced("serial"):
            rbd.integrate(m, q, v)
    with policy.forced("parallel"):
        out = rbd.integrate(m, q, v)
    (sig, cres), = batch.integrate_parallel.overloads.items()
    ir = cres.library.get_llvm_str() if "integrate_parallel" in compiled else None
    ref = np.array([rbd.integrate(m, q[b], v[b]) for b in range(5)])
    print(json.dumps({
        "equal": bool(np.array_equal(out, ref)),
        "compiled": ir is not None,
        "cell": ir is not None and "rbdiff_twin_cell" in ir,
        "defines_twin": ir is not None and bool(re.search(r"define[^\\n]*integrate_batch", ir)),
        "serial_variants": len(batch.integrate_batch.overloads)}))
""")


def _run(tmp_path, mode):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"))
    out = subprocess.run([sys.executable, "-W", "ignore", "-c", _SCRIPT, mode], env=env,
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_parallel_entries_call_the_cached_serial_twin_by_address(tmp_path):
    # fresh cache: the parallel entry is compiled with a call through a cell, not a copy
    # of integrate_batch's code, and reuses the serial entry's specialisation
    first = _run(tmp_path, "serial first")
    assert first == {"equal": True, "compiled": True, "cell": True, "defines_twin": False,
                     "serial_variants": 1}
    # a new process loads the parallel entry from the cache and finds its twin's
    # address there (cpu.twin._resolve): same results
    second = _run(tmp_path, "parallel only")
    assert second["equal"] and not second["compiled"]


def test_a_twins_exception_reaches_its_caller():
    # an entry's refusal (a ValueError with a cpu.checks code) raised inside a call by
    # address propagates out of the caller, as from a linked call (trajopt's rollout
    # relies on it); twin_later compiles on the first run and behaves the same
    import numba
    import numpy as np
    import pytest
    import rbdiff as rbd
    from rbdiff.cpu.scratch import single_call_scratch
    from rbdiff.cpu.single import aba_one
    from rbdiff.cpu.twin import twin, twin_later_ok

    @numba.njit
    def now(mi, mf, q, v, tau, ws, qdd):
        twin(aba_one, (mi, mf, q, v, tau, None, ws, qdd))

    @numba.njit
    def later(mi, mf, q, v, tau, ws, qdd):
        twin_later_ok(aba_one, (mi, mf, q, v, tau, None, ws, qdd))

    m = rbd.models.random_tree(5, 2, floating_base=True)
    rng = np.random.default_rng(1)
    q = rbd.random_configuration(m, rng)
    v, tau = rng.normal(size=m.nv), rng.normal(size=m.nv)
    ws = single_call_scratch(m.njoints, m.nv, np.float64, False)[0]
    for fn in (now, later):
        qdd = np.empty(m.nv)
        fn(m.mi, m.mf, q, v, tau, ws, qdd)
        np.testing.assert_array_equal(qdd, rbd.aba(m, q, v, tau))
        bad = q.copy()
        bad[0] = np.nan
        with pytest.raises(ValueError) as caught:
            fn(m.mi, m.mf, bad, v, tau, ws, qdd)
        with pytest.raises(ValueError) as direct:
            aba_one(m.mi, m.mf, bad, v, tau, None, ws, qdd)
        assert str(caught.value) == str(direct.value)


def test_what_passes_to_a_compiled_specialisation():
    # jit.variant reuses a specialisation only where the argument's bytes mean the same
    # there: C into 'A', writeable into read-only; never the reverse, another dtype or ndim
    from numba import types
    from rbdiff.kernels.jit import _passes
    c = types.Array(types.float64, 1, "C")
    assert _passes(c, c)
    assert _passes(c, c.copy(layout="A"))
    assert _passes(c, c.copy(readonly=True))
    assert _passes(c, c.copy(layout="A", readonly=True))
    assert not _passes(c.copy(readonly=True), c)             # the callee may write it
    assert not _passes(c.copy(layout="A"), c)                # strides the callee ignores
    assert not _passes(c, types.Array(types.float32, 1, "C"))
    assert not _passes(c, types.Array(types.float64, 2, "C"))
    assert not _passes(c, types.none) and _passes(types.int64, types.int64)


def _double(x, y):
    for i in range(x.shape[0]):
        y[i] = 2.0 * x[i]


def test_a_python_call_with_new_types_runs_a_specialisation_they_pass_to():
    # an entry's miss path (kernels/jit.harden_cache): no second compile of the same code
    import numpy as np
    from rbdiff.kernels.jit import entry
    f = entry(_double)
    x, y = np.arange(6.0), np.zeros(3)
    f(x[::2], y)                                   # strided: the any-layout 'A' one
    assert [s[0].layout for s in f.overloads] == ["A"]
    f(np.arange(3.0), y)                           # C-contiguous runs it
    assert len(f.overloads) == 1 and list(y) == [0.0, 2.0, 4.0]
    f(np.arange(3.0) + 1, y)                       # now dispatched in C, same code
    assert len(f.overloads) == 1 and list(y) == [2.0, 4.0, 6.0]
    ro = np.arange(3.0)
    ro.flags.writeable = False
    f(ro, y)                     # read-only into a writeable parameter: its own compile
    assert len(f.overloads) == 2 and list(y) == [0.0, 2.0, 4.0]
    assert any(not s[0].mutable for s in f.overloads)


_AHEAD = textwrap.dedent("""
    import json
    import numba
    import numpy as np
""" + _LOG + """    import rbdiff as rbd
    from rbdiff.cpu import background
    from rbdiff.cpu.single import integrate_one
    from rbdiff.cpu.twin import ahead, twin_later_ok
    background.spare_core = lambda: True     # whatever else the machine runs

    @numba.njit
    def step(mi, q, v, qout):
        ahead(integrate_one, (mi, q, v, qout))
        twin_later_ok(integrate_one, (mi, q, v, qout))

    m = rbd.models.random_tree(5, 2, floating_base=True)
    rng = np.random.default_rng(2)
    q = rbd.random_configuration(m, rng)
    v = rng.normal(size=m.nv)
    out = np.empty(m.nq)
    step(m.mi, q, v, out)
    here = "integrate_one" in compiled
    print(json.dumps({"equal": bool(np.array_equal(out, rbd.integrate(m, q, v))),
                      "compiled_here": here, "step_compiled": "step" in compiled}))
""")


def test_ahead_compiles_the_callee_in_a_background_child(tmp_path):
    # ahead() at the caller's compile starts the callee compiling in a child; the first
    # run of twin_later waits for it and loads it: this process never compiles it
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"))
    out = subprocess.run([sys.executable, "-W", "ignore", "-c", _AHEAD], env=env,
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    assert json.loads(out.stdout.strip().splitlines()[-1]) == {
        "equal": True, "compiled_here": False, "step_compiled": True}
