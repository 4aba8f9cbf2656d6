"""``python -m rbdiff bench``: the report on a tiny configuration (iiwa14, N in [2, 4],
two rounds per measurement), run in-process into tmp_path; and the bench's own finite
differences, complex step and Pinocchio twins against Pinocchio."""

import json
import sys
import time
from dataclasses import replace

import numpy as np
import pytest

import rbdiff as rbd
from rbdiff import cli
from rbdiff.bench import models as bm
from rbdiff.bench import report as rp
from rbdiff.bench import accuracy_n as sec_ac  # noqa: F401  (imported: part of the suite)
from rbdiff.bench import common as cm
from rbdiff.bench import first_order as sec_fo
from rbdiff.bench import precision as sec_pr
from rbdiff.bench import second_order as sec_so
from rbdiff.bench import suite

pin = pytest.importorskip("pinocchio")

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench")
    assert cli.main(["bench", "--tiny", "--out", str(out), "--no-progress",
                     "--no-mujoco"]) == 0
    return out


def test_report_names_every_section_and_comparison(tiny):
    text = (tiny / "report.md").read_text()
    for heading in ("# rbdiff benchmark report",
                    "## 1. Per-robot timings (carpentier-mansard-2018 Table I)",
                    "### Summary: rbdiff / Pinocchio time ratio",
                    "### iiwa14 (nq = 7, nv = 7)",
                    "### The paper's Table I",
                    "## 2. Scaling with the number of bodies",
                    "### Fitted log-log slopes",
                    "### serial chain: time per call", "### binary tree: time per call",
                    "## 3. Accuracy: finite differences where the exact derivative is zero",
                    "### Error of central finite differences at a generic state"):
        assert heading in text, heading
    for _, label in suite.TABLE_ROWS:            # every Table I row, in each table
        assert text.count(f"| {label} |") >= 3, label
    for alg in suite.SCALING_ALGS:
        assert f"| {alg} |" in text, alg
    for word in ("rbdiff us", "Pinocchio us", "rbdiff/Pinocchio", "pin.rnea",
                 "pin.computeMinverse", "pin.cholesky", "forward differences",
                 "central differences", "complex step", "Pinocchio analytical", "paper"):
        assert word in text, word
    for name in ("table1_times.png", "scaling_serial_chain.png",
                 "scaling_binary_tree.png", "accuracy_fig3.png", "accuracy_error.png"):
        assert f"]({name})" in text, name        # embedded
        data = (tiny / name).read_bytes()
        assert data.startswith(PNG) and len(data) > 1000, name


def test_results_json_raw_numbers(tiny):
    data = json.loads((tiny / "results.json").read_text())
    assert data["config"]["mode"] == "tiny"
    rows = data["table"]["rows"]
    assert {r["row"] for r in rows} >= {k for k, _ in suite.TABLE_ROWS
                                        if "derivs" not in k}
    for r in rows:
        assert r["robot"] == "iiwa14" and r["nv"] == 7
        if r["rbdiff_s"] is not None:
            assert r["rbdiff_s"] > 0
        if r["pin_s"] is not None:
            assert r["pin_s"] > 0 and r["ratio_pin"] > 0
        if "max_abs_diff" in r:                  # exact quantities agree with Pinocchio
            assert r["agree"], r
    timed = [r for r in rows if r["rbdiff_s"]]
    assert len(timed) >= 8
    pts = data["scaling"]["points"]
    assert {(p["family"], p["n"]) for p in pts} == {(f, n) for f in bm.FAMILIES
                                                    for n in (2, 4)}
    for p in pts:
        if p["alg"] in ("rnea", "crba", "aba", "minverse"):
            assert p["rbdiff"] > 0 and p["Pinocchio"] > 0
    assert len(data["scaling"]["slopes"]) == 2 * len(suite.SCALING_ALGS)
    (case,) = data["accuracy"]["cases"]
    assert len(case["id_forward"]) == len(data["accuracy"]["steps"])
    assert case["id_complex_step"] == 0.0 and case["id_pinocchio"] < 1e-12
    assert max(case["id_forward"]) > 0          # forward differences are not zero
    assert min(case["generic_central_rel_err"]) < 1e-7


def test_only_and_robots_options(tmp_path):
    assert suite.main(["--tiny", "--only", "accuracy", "--out", str(tmp_path),
                       "--no-progress"]) == 0
    data = json.loads((tmp_path / "results.json").read_text())
    assert "accuracy" in data and "table" not in data and "scaling" not in data
    text = (tmp_path / "report.md").read_text()
    assert "## 3. Accuracy" in text and "## 1." not in text
    with pytest.raises(SystemExit):
        suite.main(["--only", "nonsense", "--out", str(tmp_path)])
    with pytest.raises(SystemExit):
        suite.main(["--robots", "no_such_robot", "--out", str(tmp_path)])


@pytest.mark.parametrize("family", bm.FAMILIES)
def test_pin_twin_of_synthetic_models(family):
    model, pm = bm.synthetic_pair(family, 7)
    q, v, a = suite.random_state(model, pm, np.random.default_rng(1))
    np.testing.assert_allclose(rbd.rnea(model, q, v, a), pin.rnea(pm, pm.createData(),
                                                                 q, v, a), atol=1e-10)


def test_pin_twin_of_random_tree():
    model = rbd.models.random_tree(8, 3, floating_base=True)
    pm = bm.pin_twin(model)
    q, v, a = suite.random_state(model, pm, np.random.default_rng(2))
    np.testing.assert_allclose(rbd.rnea(model, q, v, a), pin.rnea(pm, pm.createData(),
                                                                 q, v, a), atol=1e-9)


def test_finite_differences_and_complex_step_match_pinocchio():
    model, pm = bm.robot_pair("iiwa14")
    q, v, a = suite.random_state(model, pm, np.random.default_rng(3))
    pd = pm.createData()      # kept alive: Pinocchio returns views into its Data
    ref = [np.array(x) for x in pin.computeRNEADerivatives(pm, pd, q, v, a)]
    for got, tol in ((suite.fd_batched(model, rbd.rnea, q, v, a), 1e-6),
                     (suite.fd_loop(model, rbd.rnea, q, v, a), 1e-6),
                     (suite.fd_pin(pm, pm.createData(), pin.rnea, q, v, a), 1e-6),
                     (suite.cs_batched(model, rbd.rnea, q, v, a), 1e-11)):
        for g, r in zip(got, ref):
            assert np.max(np.abs(g - r)) <= tol * max(1.0, np.max(np.abs(r)))
    np.testing.assert_allclose(suite.minv_cholesky(model, q), rbd.minverse(model, q),
                               atol=1e-9)


def test_with_gravity_and_zero_derivative_setup():
    model, pm = bm.robot_pair("iiwa14", gravity=(0.0, 0.0, 0.0))
    assert np.all(model.gravity == 0)
    q, _, _ = suite.random_state(model, pm, np.random.default_rng(4))
    z = np.zeros(model.nv)
    assert np.all(rbd.rnea(model, q, z, z) == 0)
    assert np.max(np.abs(suite._dv_forward(model, rbd.rnea, q, 1e-6))) > 0
    assert np.all(suite._dv_central(model, rbd.rnea, q, 1e-6) == 0)


def test_report_helpers():
    assert rp.loglog_slope([2, 4, 8, 16], [1.0, 4.0, 16.0, 64.0])[0] == pytest.approx(2)
    assert rp.loglog_slope([2], [1.0]) == (None, None)
    assert rp.loglog_slope([2, 4, 8], [1.0, 2.0, 4.0], n_min=4)[0] == pytest.approx(1)
    assert rp.md_table(["a", "b"], [["x|y", "1"]]).splitlines() == [
        "| a | b |", "| --- | --: |", "| x\\|y | 1 |"]
    assert rp.fmt_time(None) == "-" and rp.fmt_time(2.5e-6) == "2.50"
    assert rp.ratio(1.0, None) is None and rp.ratio(1.0, 2.0) == 0.5


def test_mjcf_twin_is_well_formed():
    import xml.etree.ElementTree as ET
    model = rbd.load_robot("iiwa14")
    root = ET.fromstring(bm.mjcf(model))
    assert len(root.findall(".//body")) == model.njoints - 1     # the universe is no body
    assert len(root.findall(".//joint")) == model.njoints - 1
    assert bm.mujoco_comparable(model)
    q = rbd.random_configuration(model, np.random.default_rng(5))
    np.testing.assert_array_equal(bm.mujoco_q(model, q), q)


# ------------------------------------------------------------------ derivative sections

NEW_SECTIONS = ("first_order", "second_order", "accuracy_n", "precision")


def test_derivative_sections_in_report(tiny):
    text = (tiny / "report.md").read_text()
    for heading in ("## 4. First-order methods: IDSVA vs chain rule, DMM vs AZA",
                    "### Measured DMM/AZA crossover",
                    "## 5. Second-order derivatives (singh-2023 Fig. 7, Table III)",
                    "next to singh-2023 Table III",
                    "FDSVA-SO inner term, DTM vs IDFOZA (singh-2023 Fig. 14)",
                    "### Robots: rbdiff vs Pinocchio's C++",
                    "## 6. Accuracy vs N: every method against the complex step",
                    "### rnea_second_order_derivatives (second order ID): RMSRE / MAE",
                    "### aba_second_order_derivatives (second order FD): RMSRE / MAE",
                    "## 7. Numeric types: float32 against float64"):
        assert heading in text, heading
    for word in ("IDSVA-SO", "Finite-Diff-1", "Finite-Diff-2", "complex step", "FDSVA-SO",
                 "AZA / DMM", "chain rule / IDSVA", "3.08 (IDSVA-SO)", "1.45 (IDSVA-SO)",
                 "gcc-9.0 50 (AVX off) / 450 (AVX on)", "RMSRE f32 vs f64", "| iiwa14 |"):
        assert word in text, word
    for name in ("first_order_methods.png", "second_order_scaling.png", "accuracy_vs_n.png",
                 "precision_float32.png"):
        assert f"]({name})" in text, name
        data = (tiny / name).read_bytes()
        assert data.startswith(PNG) and len(data) > 1000, name


def test_derivative_sections_json(tiny):
    data = json.loads((tiny / "results.json").read_text())
    assert set(NEW_SECTIONS) <= set(data["config"]["sections"])
    fo = data["first_order"]
    assert {(p["family"], p["n"]) for p in fo["points"]} == {(f, n) for f in bm.FAMILIES
                                                             for n in (2, 4)}
    for p in fo["points"]:
        for k, *_ in sec_fo.METHODS:
            assert p[k] > 0, (p, k)
        assert p["aza_over_dmm"] == pytest.approx(p["aba_aza"] / p["aba_dmm"])
        assert p["auto"] == "dmm"                # L = N <= 4 < AZA_MIN_BRANCH
        assert p["mean_branch"] == (p["n"] if p["family"] == "serial_chain"
                                    else {2: 2.0, 4: 3.0}[p["n"]])
    assert set(fo["crossover"]) == set(bm.FAMILIES)
    assert len(fo["slopes"]) == 2 * len(sec_fo.METHODS)

    so = data["second_order"]
    assert {(p["family"], p["n"]) for p in so["points"]} == {(f, n) for f in bm.FAMILIES
                                                             for n in (2, 4)}
    for p in so["points"]:
        for k, *_ in sec_so.METHODS:             # tiny caps the baselines at N = 4
            assert p[k] > 0, (p, k)
        assert p["fd1"] > p["idsva_so"]          # second differences: 16 nv^2 RNEA calls
        assert p["inner_auto"] == "dtm"          # IDFOZA pays on long chains only
    assert set(so["inner_crossover"]) == set(bm.FAMILIES)
    (robot,) = so["robots"]
    assert robot["robot"] == "iiwa14" and robot["idsva_so"] > 0 and robot["fdsva_so"] > 0
    if so["anchor"]["used"]:                     # only when already built: never compiled
        assert robot["cpp_so"] > 0 and robot["so_ratio"] > 0
    else:
        assert so["anchor"]["reason"]
        assert "cpp_so" not in robot

    ac = data["accuracy_n"]
    assert {(p["family"], p["n"]) for p in ac["points"]} == {(f, n) for f in bm.FAMILIES
                                                             for n in (2, 4)}
    for p in ac["points"]:
        # analytical methods agree with the complex step to rounding; finite differences
        # are many orders of magnitude worse (against the same reference)
        for group in ("rnea_fo", "aba_fo"):
            for m in ("idsva", "chain_rule"):
                assert p[group][m]["rmsre"] < 1e-12 and p[group][m]["mae"] < 1e-12
            assert 1e-13 < p[group]["fd"]["mae"] < 1e-5
        for group in ("rnea_so", "aba_so"):
            assert p[group]["idsva"]["rmsre"] < 1e-12 and p[group]["idsva"]["mae"] < 1e-12
            assert p[group]["fd2"]["mae"] > 100 * p[group]["idsva"]["mae"]
        assert p["rnea_so"]["fd1"]["mae"] > p["rnea_so"]["fd2"]["mae"]   # FD-1 worst

    pr = data["precision"]
    rows = pr["rows"]
    assert {r["func"] for r in rows} == {k for k, *_ in sec_pr.FUNCS}
    for r in rows:
        assert r["dtype_ok"] and r["dtype32"] == ["float32"]
        assert 1e-9 < r["mae32_rel"] < 1e-3      # float32 rounding, not float64's
        assert r["rmsre64_cs"] < 1e-8
        assert r["t32"] > 0 and r["t64"] > 0 and r["ratio"] == pytest.approx(
            r["t32"] / r["t64"])


def test_only_derivative_section_and_cpp_flags(tmp_path):
    assert suite.main(["--tiny", "--only", "first_order", "--out", str(tmp_path),
                       "--no-progress", "--no-cpp"]) == 0
    data = json.loads((tmp_path / "results.json").read_text())
    assert "first_order" in data and "second_order" not in data and "table" not in data
    text = (tmp_path / "report.md").read_text()
    assert "## 4. First-order methods" in text and "## 5." not in text
    p = argparse_ns(cpp=True)
    assert suite.config_from_args(p).cpp is True
    assert suite.config_from_args(argparse_ns(no_cpp=True)).cpp is False
    assert suite.config_from_args(argparse_ns()).cpp is None
    with pytest.raises(SystemExit):
        suite.main(["--cpp", "--no-cpp", "--out", str(tmp_path)])


def argparse_ns(**kw):
    import argparse
    d = dict(tiny=True, quick=False, no_progress=True, no_mujoco=True, robots=None,
             only=None, sizes=None, repeats=None, cpp=False, no_cpp=False)
    d.update(kw)
    return argparse.Namespace(**d)


def test_anchor_is_not_compiled_by_quick_or_tiny(tmp_path, monkeypatch):
    import subprocess

    from rbdiff.bench import anchor
    ran = []
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))      # an empty cache
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: ran.append(a))
    assert sec_so.anchor_cached() is False
    assert anchor.subprocess is subprocess                    # restored afterwards
    for mode in ("tiny", "quick"):
        use, why = sec_so.anchor_status(replace(suite.PRESETS[mode], cpp=None))
        assert use is False and why
    assert sec_so.anchor_status(replace(suite.PRESETS["tiny"], cpp=False))[0] is False
    assert not ran                                # nothing was compiled or run
    if anchor.available() is None:
        assert "--cpp" in why
        assert sec_so.anchor_status(replace(suite.PRESETS["tiny"], cpp=True)) == (True, None)
        assert sec_so.anchor_status(replace(suite.PRESETS["full"], cpp=None)) == (True, None)


def test_timed_slow_and_failing_callables():
    import time as _time
    cfg = replace(suite.PRESETS["quick"], repeats=5, min_time=1e-4)
    errors = []

    def bad():
        raise ValueError("boom")

    t = cm.timed({"fast": lambda: None, "slow": lambda: _time.sleep(cm.SLOW * 1.2),
                  "bad": bad}, cfg, errors, dict(n=1))
    assert set(t) == {"fast", "slow"}
    assert t["fast"]["number"] > 1 and t["fast"]["rounds"] == 5
    assert t["slow"]["number"] == 1 and t["slow"]["rounds"] == 5   # budget caps at repeats
    assert t["slow"]["median"] >= cm.SLOW * 1.2
    assert errors == [dict(n=1, name="bad", error="ValueError: boom")]


def test_crossover():
    ns = [2, 4, 8, 16]
    c = cm.crossover(ns, [1.0] * 4, [2.0, 0.5, 1.5, 0.5])     # faster for good from 16
    r0, r1 = np.log(1.5), np.log(0.5)
    assert c["kind"] == "between" and (c["lo"], c["hi"]) == (8, 16)
    assert c["n"] == pytest.approx(np.exp(np.log(8) + np.log(2) * r0 / (r0 - r1)))
    assert 8 < c["n"] < 16
    assert cm.crossover(ns, [1.0] * 4, [0.5, 0.5, 0.5, 2.0])["kind"] == "never"
    assert cm.crossover(ns, [1.0] * 4, [0.5] * 4)["kind"] == "always"
    assert cm.crossover(ns, [None] * 4, [0.5] * 4)["kind"] == "none"
    assert "between N = 8 and 16" in cm.crossover_text(c)


def test_errors_treat_zeros_to_rounding_as_structural_zeros():
    ref = np.array([1.0, 2.0, 0.0, 1e-20])
    x = np.array([1.0 + 1e-6, 2.0, 1e-18, 0.0])
    e = cm.errors([x], [ref])
    assert e["mae"] == pytest.approx(1e-6)
    assert e["rmsre"] == pytest.approx(np.sqrt(1e-12 / 4))     # zeros count 0, stay in n
    assert e["mre"] == pytest.approx(1e-6)
    assert e["mae_zeros"] == pytest.approx(1e-18) and e["zeros"] == 0.5
    # per tensor: the scale of a large tensor does not make a small one's entries zeros
    e2 = cm.errors([x, 1e6 * ref], [ref, 1e6 * ref])
    assert e2["rmsre"] == pytest.approx(np.sqrt(1e-12 / 8)) and e2["zeros"] == 0.5
    with pytest.raises(ValueError):
        cm.errors([x], [ref[:3]])


def test_mean_branch_matches_the_auto_product():
    from rbdiff import derivatives
    from rbdiff.kernels.aza import AZA, AZA_MIN_BRANCH
    for family, n in (("serial_chain", AZA_MIN_BRANCH - 1), ("serial_chain", AZA_MIN_BRANCH),
                      ("binary_tree", 31)):
        model = bm.synthetic(family, n)
        L = sec_fo.mean_branch(model)
        assert (L >= AZA_MIN_BRANCH) == (derivatives._product_code(model, "auto") == AZA)
    assert sec_fo.mean_branch(bm.synthetic("serial_chain", 10)) == 10
    # binary tree of 3: branches of dofs 1, 2, 3 hold 3, 2, 2 dofs
    assert sec_fo.mean_branch(bm.synthetic("binary_tree", 3)) == pytest.approx(7 / 3)


def test_batch_section_tiny(tmp_path):
    import numba

    from rbdiff.bench import batch as sec_ba
    before = numba.get_num_threads()
    assert suite.main(["--tiny", "--only", "batch", "--out", str(tmp_path), "--no-progress",
                       "--no-mujoco"]) == 0
    text = (tmp_path / "report.md").read_text()
    for word in ("## 8. Batched gradients", "Numba threads", "rbdiff batch", "rbdiff loop",
                 "Pinocchio loop", "batch vs rbdiff loop", "batch vs Pinocchio loop",
                 "copy is included", "np.array_equal", "max abs diff vs Pinocchio",
                 "**Target**", "Environment:", "| iiwa14 | aba_derivatives | 4 | yes |",
                 "threading layer", "### Targets", "- **IDLE**", "- **LOADED**",
                 "- **ONE THREAD**", "### Idle:", "### Loaded:", "### One thread:",
                 "CPU-bound child process", "batch (worst round)", "worst-round speed-up",
                 "single-call kernel", "batch / kernel", "| aba | 4 |"):
        assert word in text, word
    # B = 4 is below the idle target's B = 64: that verdict says what was not measured
    assert ("not measured in this run (needs robot iiwa14 or hyq or talos_full_v2 and "
            "B >= 64)") in text
    assert "## 1." not in text and "## 7." not in text
    assert "](batch_throughput.png)" in text
    data = (tmp_path / "batch_throughput.png").read_bytes()
    assert data.startswith(PNG) and len(data) > 1000
    sec = json.loads((tmp_path / "results.json").read_text())["batch"]
    assert sec["threads"] >= 1 and sec["sizes"] == [4] and sec["pin_copy_timed"]
    assert sec["modes"] == list(sec_ba.MODES)
    expected = {("iiwa14", k, 4) for k, *_ in sec_ba.FUNCS}
    assert {(p["robot"], p["func"], p["B"]) for p in sec["points"]} == expected
    for p in sec["points"]:
        # the batch into out= buffers exists for the functions that take out=
        assert (p["batch_out_s"] is None) == (p["func"] == "aba")
        for w, *_ in sec_ba.WAYS:
            if p[f"{w}_s"] is None:
                continue
            assert p[f"{w}_s"] > 0 and p[f"{w}_eval_s"] == pytest.approx(p[f"{w}_s"] / 4)
            assert p[f"{w}_max_eval_s"] >= p[f"{w}_eval_s"]
        assert p["speedup_loop"] == pytest.approx(p["loop_s"] / p["batch_s"])
        assert p["speedup_pin"] == pytest.approx(p["pin_s"] / p["batch_s"])
        assert p["target"] is None                 # the target is talos at B = 256
        assert p["issue"] is None                  # the idle target starts at B = 64
    ld = sec["loaded"]
    assert {(p["robot"], p["func"], p["B"]) for p in ld["points"]} == expected
    (hogs,) = ld["hogs"]
    assert hogs["robot"] == "iiwa14" and hogs["alive"]
    assert hogs["n"] == max(1, sec_ba.cores() - 1) and len(hogs["busy"]) == hogs["n"]
    for p in ld["points"]:
        assert p["batch_max_eval_s"] >= p["batch_eval_s"] > 0
        assert p["loop_max_eval_s"] >= p["loop_eval_s"] > 0
        assert p["speedup_loop"] == pytest.approx(p["loop_s"] / p["batch_s"])
        assert 0 < p["speedup_worst_round"] and 0 <= p["rounds_batch_slower"] <= p["rounds"]
        assert p["issue"] == (p["speedup_loop"] >= sec_ba.ISSUE["loaded"])
    ot = sec["one_thread"]
    assert {(p["robot"], p["func"], p["B"]) for p in ot["points"]} == expected
    for p in ot["points"]:
        assert p["batch_eval_s"] > 0 and p["kernel_eval_s"] > 0 and p["loop_eval_s"] > 0
        assert p["batch_over_kernel"] == pytest.approx(p["batch_s"] / p["kernel_s"])
        assert p["issue"] == (p["batch_over_kernel"] <= sec_ba.ISSUE["one_thread"])
    assert len(sec["checks"]) == len(sec_ba.FUNCS)
    for c in sec["checks"]:
        assert c["bit_equal"] and c["agree"] and c["max_abs_diff"] < 1e-8, c
    assert sec["threads"] == numba.config.NUMBA_NUM_THREADS    # all cores for the batch
    assert numba.get_num_threads() == before                   # restored afterwards


def test_batch_modes_option(tmp_path, monkeypatch):
    from rbdiff.bench import batch as sec_ba
    seen = {}

    def fake_run(cfg, outdir):
        seen["cfg"] = cfg
        return dict(files={}, meta=dict(wall_s=0.0), batch={})
    monkeypatch.setattr(suite, "run", fake_run)
    assert suite.main(["--tiny", "--only", "batch", "--batch-modes", "one_thread", "idle",
                       "--out", str(tmp_path), "--no-progress"]) == 0
    assert seen["cfg"].batch_modes == ("idle", "one_thread")          # in MODES order
    assert sec_ba.total(seen["cfg"]) == 2 * len(sec_ba.FUNCS)
    with pytest.raises(SystemExit):
        suite.main(["--batch-modes", "busy", "--out", str(tmp_path)])
    # standalone: the issue's robots, sizes and all three modes by default
    monkeypatch.setattr(sec_ba, "report", lambda *a: [])
    assert sec_ba.main(["--out", str(tmp_path), "--no-progress"]) == 0
    cfg = seen["cfg"]
    assert cfg.sections == ("batch",) and cfg.batch_modes == sec_ba.MODES
    assert cfg.batch_robots == sec_ba.ISSUE["robots"]
    assert cfg.batch_sizes == sec_ba.ISSUE["sizes"]
    assert sec_ba.main(["--robots", "talos_full_v2", "--sizes", "256", "--modes", "idle",
                        "--out", str(tmp_path), "--no-progress"]) == 0
    cfg = seen["cfg"]
    assert (cfg.batch_robots, cfg.batch_sizes, cfg.batch_modes) == (
        ("talos_full_v2",), (256,), ("idle",))
    with pytest.raises(SystemExit):
        sec_ba.main(["--robots", "hyq+ff", "--out", str(tmp_path)])


def test_batch_issue_targets_and_verdicts():
    from rbdiff.bench import batch as sec_ba
    I = sec_ba.ISSUE
    assert sec_ba.issue_target("idle", "iiwa14", "aba", 16, 9.0) is None        # B < 64
    assert sec_ba.issue_target("idle", "hyq", "aba", 64, I["idle"]) is True
    assert sec_ba.issue_target("idle", "hyq", "aba", 256, I["idle"] - 0.01) is False
    assert sec_ba.issue_target("loaded", "iiwa14", "aba", 4, 0.99) is False
    assert sec_ba.issue_target("loaded", "iiwa14", "aba_derivatives", 4, 1.0) is True
    assert sec_ba.issue_target("one_thread", "hyq", "rnea_derivatives", 4, 1.1) is True
    assert sec_ba.issue_target("one_thread", "hyq", "rnea_derivatives", 4, 1.11) is False
    assert sec_ba.issue_target("loaded", "panda", "aba", 4, 0.5) is None
    assert sec_ba.issue_target("loaded", "iiwa14", "crba", 4, 0.5) is None
    assert sec_ba.issue_target("loaded", "iiwa14", "aba", 4, None) is None

    def pt(robot, func, B, mode, value, **kw):
        key = "batch_over_kernel" if mode == "one_thread" else "speedup_loop"
        return dict(robot=robot, label=bm.robot_label(robot), func=func, B=B, **{key: value},
                    issue=sec_ba.issue_target(mode, robot, func, B, value), **kw)
    sec = dict(modes=["idle", "loaded"], cpu_count=2, cores=2,
               points=[pt("iiwa14", "aba", B, "idle", s) for B, s in ((16, 0.5), (64, 1.6),
                                                                      (256, 1.4))],
               loaded=dict(hogs=[dict(n=1)], points=[
                   pt("hyq", "aba", 4, "loaded", 1.2, speedup_worst_round=0.7),
                   pt("hyq", "aba", 16, "loaded", 1.1, speedup_worst_round=0.9)]))
    idle = sec_ba.issue_verdict(sec, "idle")
    assert idle.startswith("- **IDLE**") and "**FAIL**: 1 of 2 points pass" in idle
    assert "lowest 1.40x (iiwa14, aba, B = 256)" in idle
    assert "not measured: B = 1024, hyq, talos_full_v2" in idle
    loaded = sec_ba.issue_verdict(sec, "loaded")
    assert "**pass**: 2 of 2 points pass" in loaded and "1 CPU-bound process" in loaded
    assert "worst single round 0.70x (hyq + free-flyer, aba, B = 4)" in loaded
    assert "not measured: B = 64, B = 256, B = 1024, iiwa14, talos_full_v2" in loaded
    assert "not measured (mode not run" in sec_ba.issue_verdict(sec, "one_thread")


def test_batch_single_kernel_is_the_fast_path_entry():
    """The one-thread mode's single-call kernel: the compiled entry the public function
    calls for one float64 state, returning the same numbers."""
    from rbdiff.bench import batch as sec_ba
    model = rbd.load_robot("hyq")
    q, v, a = cm.state(model, np.random.default_rng(6))
    tau = rbd.rnea(model, q, v, a)
    for key, fn, u in (("aba", rbd.aba, tau), ("rnea_derivatives", rbd.rnea_derivatives, a),
                       ("aba_derivatives", rbd.aba_derivatives, tau)):
        k, tail = sec_ba.single_kernel(key, model, q, v, u)
        assert getattr(k, "__name__", "") != "first_call"
        r = k(model.mi, model.mf, q, v, u, None, *tail)
        want = fn(model, q, v, u)
        got = (r,) if key == "aba" else tail[:3]     # aba's entry makes qdd (its shape given)
        for g, w in zip(got, want if isinstance(want, tuple) else (want,)):
            np.testing.assert_array_equal(g, w)


def test_interleaved_worst_round_and_round_times():
    from rbdiff.bench.timing import interleaved
    t = interleaved({"a": lambda: None, "b": lambda: sum(range(50))}, repeats=5,
                    min_time=1e-4, times=True)
    for r in t.values():
        assert len(r["times"]) == r["repeats"] == 5
        assert r["min"] == min(r["times"]) <= r["median"] <= r["max"] == max(r["times"])
    assert "times" not in interleaved({"a": lambda: None}, repeats=3, min_time=1e-4)["a"]


def test_batch_hogs_load_a_core_and_are_killed():
    from rbdiff.bench import batch as sec_ba
    with sec_ba.Hogs(1) as h:
        (p,) = h.procs
        assert p.poll() is None
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < 0.2:
            pass
    assert p.returncode is not None                  # killed and reaped
    assert h.stats["n"] == 1 and h.stats["alive"] and h.stats["wall_s"] >= 0.2
    if h.stats["busy"][0] is not None:               # /proc: the hog did run
        assert h.stats["busy"][0] > 0
    with pytest.raises(RuntimeError):                # killed when the block raises
        with sec_ba.Hogs(1) as h:
            (p,) = h.procs
            raise RuntimeError("boom")
    assert p.returncode is not None


def test_batch_target_marks():
    from rbdiff.bench import batch as sec_ba
    T = sec_ba.TARGETS
    assert sec_ba._target("iiwa14", T["func"], T["B"], 9.0, 9.0) is None
    assert sec_ba._target(T["robot"], T["func"], T["B"], T["loop"], T["pin"] - 0.1) == \
        dict(loop=True, pin=False)
    assert sec_ba._target(T["robot"], T["func"], T["B"], 1.0, None) == dict(loop=False,
                                                                           pin=None)


# ------------------------------------------------------------------ suite robustness

def test_missing_dependency_fails_before_any_section(tmp_path, monkeypatch, capsys):
    ran = []
    monkeypatch.setattr(suite, "run", lambda cfg, outdir: ran.append(cfg) or
                        dict(files={}, meta=dict(wall_s=0.0)))
    assert suite.missing_dependencies(suite.PRESETS["tiny"]) == []
    monkeypatch.setitem(sys.modules, "matplotlib", None)     # import matplotlib fails
    with pytest.raises(SystemExit) as e:
        suite.main(["--tiny", "--only", "accuracy", "--out", str(tmp_path / "a")])
    assert e.value.code == 2 and not ran and not (tmp_path / "a" / "results.json").exists()
    err = capsys.readouterr().err
    assert "matplotlib" in err and "--no-figures" in err
    assert "pip install 'rbdiff[bench]'" in err
    # without figures matplotlib is not needed
    assert suite.main(["--tiny", "--only", "accuracy", "--out", str(tmp_path), "--no-figures",
                       "--no-progress"]) == 0
    assert len(ran) == 1 and ran[0].figures is False
    monkeypatch.setitem(sys.modules, "tqdm", None)
    monkeypatch.setitem(sys.modules, "pinocchio", None)
    with pytest.raises(SystemExit):
        suite.main(["--tiny", "--only", "accuracy", "--out", str(tmp_path), "--no-figures"])
    err = capsys.readouterr().err
    assert "tqdm" in err and "--no-progress" in err and "pinocchio" in err
    assert "matplotlib" not in err and "rbdiff[bench]" in err
    assert len(ran) == 1


def test_results_json_after_each_section_when_a_later_one_fails(tmp_path, monkeypatch):
    import types
    seen = {}

    def ok_run(cfg, bar, out):
        bar.step("ok")
        return dict(value=1.5)

    def bad_run(cfg, bar, out):     # results.json already holds the finished section
        seen["json"] = json.loads((tmp_path / "results.json").read_text())
        raise RuntimeError("boom")

    def module(run):
        return types.SimpleNamespace(total=lambda cfg: 1, run=run,
                                     figures=lambda sec, outdir: {},
                                     report=lambda sec, files, cfg: ["## fake section", ""])
    monkeypatch.setattr(suite, "SECTION_MODULES", {"first_order": module(ok_run),
                                                   "precision": module(bad_run)})
    cfg = replace(suite.PRESETS["tiny"], sections=("first_order", "precision"),
                  progress=False)
    with pytest.raises(RuntimeError, match="boom"):
        suite.run(cfg, tmp_path)
    assert seen["json"]["first_order"] == dict(value=1.5)
    assert seen["json"]["meta"]["sections_done"] == ["first_order"]
    assert not seen["json"]["meta"]["complete"]
    data = json.loads((tmp_path / "results.json").read_text())
    assert data["first_order"] == dict(value=1.5) and "precision" not in data
    assert data["meta"]["failed"] == dict(section="precision", error="RuntimeError: boom")
    text = (tmp_path / "report.md").read_text()
    assert "## fake section" in text and "incomplete run" in text and "boom" in text
    assert not (tmp_path / "results.json.tmp").exists()


def test_anchor_usage_names_are_accepted():
    import argparse
    import re

    from rbdiff.bench import anchor
    usage = re.search(r"python -m rbdiff\.bench\.anchor (.*)", anchor.__doc__).group(1)
    names = usage.split()
    assert names and any(n.endswith("+ff") for n in names)
    for n in names:
        name, floating = anchor.robot_arg(n)
        assert name == n.removesuffix("+ff")
    assert anchor.robot_arg("hyq") == ("hyq", True)            # its usual base
    assert anchor.robot_arg("hyq+ff") == ("hyq", True)
    assert anchor.robot_arg("panda") == ("panda", False)
    assert anchor.robot_arg("panda+ff") == ("panda", True)
    for bad in ("hyq+fixed", "no_such_robot", "no_such_robot+ff"):
        with pytest.raises(argparse.ArgumentTypeError):
            anchor.robot_arg(bad)
    with pytest.raises(SystemExit):        # refused by the parser, before any compiling
        anchor.main(["no_such_robot"])
    pm = anchor.pin_model("iiwa14", True)
    assert (pm.nq, pm.nv) == (14, 13)


def test_trajopt_section(tiny):
    """bench's trajopt section (tiny: T = 20, two arm runs): report, figure, raw numbers;
    both methods reach the same reach cost and solve every run."""
    text = (tiny / "report.md").read_text()
    assert "## Trajectory optimisation: iLQR and DDP against Crocoddyl" in text
    assert "(B) iiwa14 swing-up" in text and "(C) double-pendulum swing-up" in text
    assert "](trajopt.png)" in text and (tiny / "trajopt.png").read_bytes().startswith(PNG)
    sec = json.loads((tiny / "results.json").read_text())["trajopt"]
    rows = {r["solver"]: r for r in sec["reach"]["rows"]}
    assert rows["rbdiff ilqr"]["converged"] and rows["rbdiff ddp"]["converged"]
    assert rows["rbdiff ddp"]["cost"] == pytest.approx(rows["rbdiff ilqr"]["cost"], rel=1e-6)
    assert all(r[m]["converged"] for r in sec["arm"]["runs"] for m in ("ilqr", "ddp"))
    assert set(rows["rbdiff ilqr"]["split_s"]) == {"derivatives", "backward", "line_search"}
