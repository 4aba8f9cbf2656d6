"""rbdiff.bench.limit: the flop counter against counts made by hand, and the report's
fields (no timing asserts: the numbers depend on the machine and its load)."""

import math
from functools import partial

import numpy as np
import pytest

import rbdiff as rbd
from rbdiff.bench import limit
from rbdiff.kernels.rnea import rnea
from rbdiff.kernels.trig import sincos
from rbdiff.kernels.workspace import W_WIDTH, workspace_rows


@pytest.mark.parametrize("x", [0.3, 2.0, -1.0, 4.0])
def test_sincos_count_by_hand(x):
    # kernels/trig.py, read line by line:
    #   reduction: xr*INVPIO2 + 0.5, x - k*PIO2_1, k*PIO2_2, t - w, k*PIO2_2T - ((t - r)
    #     - w), r - w, (r - y0) - w: 4 mul, 9 add, 1 floor, 1 compare (|x| < HUGE)
    #   kernel_cos: z, w, 7 in r, hz, z*r, x*y: 12 mul; 5 in r, 1 - hz, 5 in the return: 11 add
    #   kernel_sin: z, w, 5 in r, v, 0.5*y, v*r, z*(..), v*S1: 12 mul; 4 in r, 4 in the
    #     return: 8 add
    # total 28 mul, 28 add, whatever the quadrant (which only flips signs)
    t = limit.count_flops(sincos, (x,))
    assert (t["mul"], t["add"], t["div"], t["sqrt"]) == (28, 28, 0, 0)
    assert (t["round"], t["cmp"]) == (1, 1)
    assert t["flops"] == 56 and t["fma_cycles"] == 28
    c, s = t["result"]
    assert float(c) == math.cos(x) and float(s) == math.sin(x)


def _rnea_count(n):
    m = rbd.models.serial_chain(n)
    q, v, a = np.linspace(0.3, 1.1, n), np.linspace(-0.5, 0.7, n), np.linspace(0.2, 0.9, n)
    # counting arrays given as such stay the caller's: tau can be read back
    ws = limit.counting(np.zeros((workspace_rows(m.mi), W_WIDTH)))
    tau = limit.counting(np.zeros(n))
    t = limit.count_flops(rnea, (m.mi, m.mf, q, v, a, None, ws, tau))
    # the counted run computes what the compiled one does
    np.testing.assert_allclose([float(x) for x in tau], rbd.rnea(m, q, v, a), rtol=1e-12)
    return t


def test_rnea_count_by_hand():
    # one z-revolute joint with a parent, from kernels/rnea.py and kernels/spatial.py:
    #   joint_placement: sincos 28 mul 28 add; mix_columns (z axis) 12 mul 6 add, s*z 1 mul
    #   two motion_act_inv: 2 x (24 mul, 18 add); S qd: axpy6 6 mul 6 add; add6 6 add
    #   S qdd: axpy6 6 mul 6 add
    #   body_force: motion_cross 18 mul 12 add; add6 6 add; two inertia_mul 2 x (24, 18);
    #     force_cross 18 mul 12 add; add6 6 add
    #   backward: dot6 6 mul 5 add; force_act 24 mul 18 add; add6 6 add
    #   armature_torque: 1 mul 1 add
    #   = 216 mul, 190 add; the root joint has no parent: no force_act, no add6
    #   (24 mul, 24 add less); the universe's row costs nothing
    one, two, three = (_rnea_count(n) for n in (1, 2, 3))
    assert (one["mul"], one["add"]) == (192, 166)
    assert (two["mul"], two["add"]) == (192 + 216, 166 + 190)
    assert (three["mul"], three["add"]) == (192 + 2 * 216, 166 + 2 * 190)
    assert one["div"] == one["sqrt"] == 0


def test_report_fields(monkeypatch):
    pytest.importorskip("pinocchio")
    monkeypatch.setitem(limit.SETTINGS, True, dict(repeats=1, number=1))
    monkeypatch.setattr(limit, "LOOP", dict.fromkeys(limit.ALGORITHMS, 2))
    monkeypatch.setattr(limit, "clock", partial(limit.clock, n=200, repeats=2))
    r = limit.run(quick=True)
    assert (r["robot"], r["nq"], r["nv"]) == ("panda", 9, 9)
    m = r["machine"]
    assert m["lanes"] in (4, 8) and m["cores"] >= 1
    if m["ghz"] is not None:
        assert m["ghz"] > 0 and set(m["per_cycle"]) == {"mul_add", "fma", "fma_vector"}
    assert [row["algorithm"] for row in r["rows"]] == list(limit.ALGORITHMS)
    for row in r["rows"]:
        for k in ("mul", "add", "div", "flops", "fma_cycles", "fma_bound_ns",
                  "scalar_peak_ns", "vector_peak_ns", "x_fma_bound", "boundary_ns",
                  "boundary_share", "boundary_min_ns", "boundary_min_share"):
            assert k in row, k
        for call in ("loop", "entry", "public", "pin"):
            assert row[f"{call}_ns"] > 0 and row[f"{call}_min_ns"] > 0
        assert row["flops"] == row["mul"] + row["add"] + row["div"] + row["sqrt"]
        assert row["fma_cycles"] >= row["flops"] / 2
    flops = [row["flops"] for row in r["rows"]]
    assert flops == sorted(flops)          # rnea < aba < aba_derivatives
    assert set(r["one_joint_rnea_ns"]) == {"rbdiff", "pin"}
    table = limit.format_table(r)
    assert table.count("\n| ") == 1 + len(limit.ALGORITHMS)


def test_loops_compute_the_public_results():
    s = limit.setup()
    model = s["model"]
    s["rnea"]["loop"]()
    tau = s["rnea"]["loop"].args[6]
    q, v, a = (s["rnea"]["loop"].args[k] for k in (2, 3, 4))
    np.testing.assert_allclose(tau, rbd.rnea(model, q, v, a), rtol=1e-12, atol=1e-12)
    s["aba_derivatives"]["loop"]()
    d = rbd.aba_derivatives(model, q, v, s["aba"]["loop"].args[4])
    got = s["aba_derivatives"]["loop"].args[9:12]
    for x, y in zip(got, d):
        np.testing.assert_allclose(x, y, rtol=1e-10, atol=1e-10)
