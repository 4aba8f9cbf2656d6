"""``python -m rbdiff bench``: the report on a tiny configuration (iiwa14, N in [2, 4],
two rounds per measurement), run in-process into tmp_path; and the bench's own finite
differences, complex step and Pinocchio twins against Pinocchio."""

import json

import numpy as np
import pytest

import rbdiff as rbd
from rbdiff import cli
from rbdiff.bench import models as bm
from rbdiff.bench import report as rp
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
    assert len(root.findall(".//body")) == model.njoints
    assert len(root.findall(".//joint")) == model.njoints
    assert bm.mujoco_comparable(model)
    q = rbd.random_configuration(model, np.random.default_rng(5))
    np.testing.assert_array_equal(bm.mujoco_q(model, q), q)
