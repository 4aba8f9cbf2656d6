"""rbdiff.trajopt.plots draws a solved legged problem to a PNG (matplotlib's Agg)."""

import numpy as np
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")

import rbdiff.trajopt as to                                            # noqa: E402
from rbdiff.bench.trajopt import FEET, legged_problem                  # noqa: E402
from rbdiff.model.robots import example_robot_data_dir                 # noqa: E402
from rbdiff.trajopt.plots import plot_gait                             # noqa: E402

if example_robot_data_dir() is None:
    pytest.skip("example-robot-data is not installed", allow_module_level=True)


def test_plot_gait_writes_a_png(tmp_path):
    prob = legged_problem(T=12)
    res = to.solve(prob, method="fddp", xs=[prob.x0] * (prob.T + 1), max_iter=5)
    path = tmp_path / "gait.png"
    fig = plot_gait(prob, res, FEET, mu=0.7, snapshots=4, path=path)
    assert path.stat().st_size > 10_000
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # 3 trajectory panels, one per foot (and its force twin), 4 snapshots
    assert len([ax for ax in fig.axes if ax.get_visible()]) == 3 + 2 * len(FEET) + 4
    ratio = fig.axes[3].lines[0].get_ydata()          # FL's tangential / normal ratio
    assert np.isnan(ratio[5]) and np.isfinite(ratio[0])   # lifted at knot 5, on at 0
    with pytest.raises(KeyError, match="no frame named 'FL_TOE'"):
        plot_gait(prob, res, ["FL_TOE"])
    matplotlib.pyplot.close("all")
