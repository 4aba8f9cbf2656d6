"""Single calls with fext take the fast path (the entry checks fext: kernels.fastargs)
when fext is a float64 C-contiguous ndarray (njoints, 6): the same numbers as the general path (a list fext,
or a strided one, takes it), and the same errors (NaN from the entry's own check, a
wrong shape from the general path)."""

import numpy as np
import pytest

import rbdiff as rbd


@pytest.mark.parametrize("name", ["iiwa14", "solo12"])
def test_fast_fext_equals_the_general_path(name):
    m = rbd.load_robot(name)
    rng = np.random.default_rng(3)
    q = rbd.random_configuration(m, rng)
    v, a = rng.normal(size=(2, m.nv))
    f = rng.normal(size=(m.njoints, 6))
    tau = rbd.rnea(m, q, v, a, fext=f)
    for fn, x in ((rbd.rnea, a), (rbd.aba, tau), (rbd.rnea_derivatives, a),
                  (rbd.aba_derivatives, tau)):
        fast = fn(m, q, v, x, fext=f)
        general = fn(m, q, v, x, fext=f.tolist())          # a list: the general path
        strided = fn(m, q, v, x, fext=np.repeat(f, 2, axis=1)[:, ::2])
        for a_, b_, c_ in zip(np.atleast_2d(fast), np.atleast_2d(general),
                              np.atleast_2d(strided)):
            assert np.array_equal(a_, b_) and np.array_equal(a_, c_)
    # fext changes the result (the fast path did not drop it)
    assert not np.allclose(rbd.rnea(m, q, v, a), tau)


def test_fast_fext_errors():
    m = rbd.load_robot("iiwa14")
    q, z = rbd.neutral(m), np.zeros(m.nv)
    f = np.zeros((m.njoints, 6))
    f[3, 2] = np.nan
    for fn in (rbd.rnea, rbd.aba, rbd.rnea_derivatives, rbd.aba_derivatives):
        with pytest.raises(ValueError, match="fext"):
            fn(m, q, z, z, fext=f)
        with pytest.raises(ValueError, match="fext: expected shape"):
            fn(m, q, z, z, fext=np.zeros((m.njoints - 1, 6)))


def test_fext_after_calls_without_it():
    """The fast path's compiled functions are typed by their first call: a call with fext
    after calls without it must not reach the fext-less one (its fext would be ignored),
    in a fresh process where nothing else ran first."""
    import subprocess
    import sys
    code = """
import numpy as np, rbdiff as rbd
m = rbd.load_robot("solo12"); rng = np.random.default_rng(5)
q = rbd.random_configuration(m, rng); v, a = rng.normal(size=(2, m.nv))
f = rng.normal(size=(m.njoints, 6))
for fn in (rbd.rnea, rbd.aba, rbd.rnea_derivatives, rbd.aba_derivatives):
    free = np.array(fn(m, q, v, a))
    with_f = np.array(fn(m, q, v, a, fext=f))
    general = np.array(fn(m, q, v, a, fext=f.tolist()))
    assert np.array_equal(with_f, general), fn.__name__
    assert not np.allclose(with_f, free), fn.__name__
print("ok")
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stderr[-2000:]
