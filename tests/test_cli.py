"""The command line: ``demo`` output and identities, ``bench-core`` JSON, subcommands."""

import json

import numpy as np
import pytest

from rbdiff import cli


def test_demo_prints_sections_and_small_identity_errors(capsys):
    assert cli.main(["demo"]) == 0
    out = capsys.readouterr().out
    assert out.index(cli.COMPILING) < out.index("tau = rnea")
    for section in ("tau = rnea(q, v, a)", "M = crba(q)", "qdd = aba(q, v, tau)",
                    "Minv = minverse(q)", "nonlinear_effects", "gravity(q)",
                    "frame placement of 'iiwa_link_ee'", "frame Jacobian",
                    "||M Minv - I||", "per-call time"):
        assert section in out, section
    # the printed checks, parsed back: "  ||...|| = 1.234e-15"
    checks = [float(line.rsplit("=", 1)[1]) for line in out.splitlines()
              if line.startswith("  ||")]
    assert len(checks) == 3 and max(checks) < 1e-9


def test_demo_results_identities():
    r = cli.demo_results(seed=3, timing=False)
    assert r["err_minv"] < 1e-9
    assert r["err_aba"] < 1e-9
    assert r["err_qdd"] < 1e-9
    nv = r["model"].nv
    assert r["M"].shape == r["Minv"].shape == (nv, nv)
    np.testing.assert_allclose(r["M"], r["M"].T, atol=1e-12)
    np.testing.assert_allclose(r["nle"] + r["M"] @ r["a"], r["tau"], atol=1e-9)
    assert r["jacobian"].shape == (6, nv) and r["placement"].shape == (4, 4)
    assert r["times"] == {}


def test_bench_core_quick_json(tmp_path, capsys):
    path = tmp_path / "core.json"
    assert cli.main(["bench-core", "--quick", "--robots", "iiwa14", "--no-progress",
                     "--json", str(path)]) == 0
    out = capsys.readouterr().out
    assert "max|diff|" in out and "Empty-call overhead" in out
    data = json.loads(path.read_text())
    for key in ("results", "overhead", "skipped", "target_ratio", "repeats"):
        assert key in data, key
    names = [r["algorithm"] for r in data["results"]]
    assert names[:4] == ["rnea", "crba", "aba", "minverse"]
    for public in ("integrate", "difference", "neutral", "forward_kinematics",
                   "rnea_derivatives", "aba_derivatives", "rnea_second_order",
                   "aba_second_order",
                   "frame_placement", "frame_placements", "gravity", "nonlinear_effects",
                   "kinematics_derivatives", "kinematics_derivatives(joint)"):  # every public function has a row
        assert public in names, public
    assert {"frame_jacobian_local", "frame_jacobian_world", "frame_jacobian_lwa"} <= set(names)
    for r in data["results"]:
        assert r["robot"] == "iiwa14" and r["nq"] == r["nv"] == 7
        assert r["rbdiff_s"] > 0 and r["rbdiff_min_s"] > 0
        if data["pinocchio"] is not None and "second_order" not in r["algorithm"]:
            assert r["pin_s"] > 0 and r["ratio"] > 0
            assert r["max_abs_diff"] < 1e-8 and r["agree"]
    assert len(data["overhead"]) >= 3
    assert all(t["median"] > 0 for t in data["overhead"].values())


def test_help_lists_subcommands(capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert "demo" in out and "bench-core" in out


def test_unknown_arguments_are_refused():
    with pytest.raises(SystemExit) as e:
        cli.main(["demo", "--bogus"])
    assert e.value.code == 2


def test_compile_jobs_cover_the_public_api():
    """Every public function that takes a model and states is compiled by some job of
    ``python -m rbdiff compile``, single and batched."""
    import inspect

    import rbdiff as rbd
    from rbdiff import precompile

    not_compiled = {"load_urdf", "load_mjcf", "from_mujoco", "load_robot", "robot_names",
                    "robot_path",
                    "neutral", "random_configuration"}    # NumPy or I/O
    public = {n for n, f in vars(rbd).items() if inspect.isfunction(f)
              and not n.startswith("_")} - not_compiled
    for batch in (False, True):
        jobs = [j for j in precompile.JOBS if j.endswith("[batch]") == batch]
        covered = {f for j in jobs for f in precompile.job_functions(j)}
        assert public <= covered, sorted(public - covered)


def test_compile_command_runs_a_subset_in_process(capsys):
    assert cli.main(["compile", "--only", "gravity", "--jobs", "1", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("compiled 3 jobs (float64)") and "cache:" in out
    assert cli.main(["compile", "--list", "--only", "crba"]) == 0
    assert capsys.readouterr().out.splitlines() == ["crba: crba", "crba[batch]: crba",
                                                    "crba[parallel]: crba"]


def test_bench_dask_small_json(tmp_path, capsys):
    """bench-dask on a small batch: a real two-process LocalCluster, the sweep's rows and
    the local-batch reference in the JSON (the command asserts bit equality itself)."""
    pytest.importorskip("distributed")
    path = tmp_path / "dask.json"
    assert cli.main(["bench-dask", "--robot", "iiwa14", "--batch", "256", "--chunks", "64",
                     "256", "--workers", "2", "--repeats", "1", "--no-progress",
                     "--json", str(path)]) == 0
    assert "| chunk | tasks |" in capsys.readouterr().out
    r = json.loads(path.read_text())
    assert [s["chunk"] for s in r["sweep"]] == [64, 256]
    assert [s["tasks"] for s in r["sweep"]] == [4, 1]
    assert r["local_s"] > 0 and r["first_call_s"] > 0 and r["gathered_s"] > 0


def test_python_m_rbdiff_from_the_folder_above_a_clone(tmp_path):
    """A folder named rbdiff in the working directory (a clone, seen from its parent) is
    not imported as a namespace package: the src layout keeps the package out of the
    clone's top folder, so `python -m rbdiff` runs the installed rbdiff."""
    import subprocess
    import sys
    (tmp_path / "rbdiff" / "tests").mkdir(parents=True)
    (tmp_path / "rbdiff" / "README.md").write_text("a clone\n")
    r = subprocess.run([sys.executable, "-m", "rbdiff", "--help"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "demo" in r.stdout and "bench-core" in r.stdout
