"""cpu/outputs.py: a large batch's new outputs come from a kept block, handed out again
only once the caller holds no array of it; what the caller keeps is never overwritten."""

import numpy as np
import pytest

import rbdiff as rbd
from conftest import in_threads
from rbdiff.cpu import outputs


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
