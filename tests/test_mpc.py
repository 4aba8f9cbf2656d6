"""rbdiff.mpc: the controller's tick (warm start, feedback law), the closed loop against
MuJoCo (solo12 trotting), the command line and its errors."""

import json

import numpy as np
import pytest

import rbdiff as rbd
from rbdiff.mpc.controller import MPC
from rbdiff.mpc.loop import piecewise, run

mujoco = pytest.importorskip("mujoco", reason="the MuJoCo plant needs the sim extra")
from rbdiff.sim import Plant  # noqa: E402

FEET = ("FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT")


@pytest.fixture(scope="module")
def solo():
    return rbd.load_robot("solo12")


def _standing(mpc):
    return np.concatenate([mpc.q_ref, np.zeros(mpc.nv)])


def test_closed_loop_trot_in_mujoco(solo):
    """2 simulated seconds of a 0.3 m/s trot: no fall, forward progress at about the
    command, little drift, and a lateral push of 0.5 m/s at 1.2 s absorbed."""
    plant = Plant(solo, feet=FEET)
    mpc = MPC(solo, FEET, "trot", foot_radius=float(plant.foot_radius.min())).prepare(100)
    r = run(mpc, plant, 2.0, speed=0.3, rate=100, pushes=["1.2:0,0.5,0"])
    s = r.summary()
    assert not s["fell"], s["reason"]
    assert s["seconds"] == pytest.approx(2.0)
    # the first 0.2 s stand still (the gait's start), then 0.3 m/s: ~0.54 m
    assert 0.4 < s["distance"] < 0.7
    assert s["lateral_drift"] < 0.1
    assert s["max_abs_roll"] < 0.3 and s["max_abs_pitch"] < 0.3
    assert s["min_base_height"] > 0.7 * mpc.z0
    # the push shows in the log: the base's lateral velocity jumps by ~0.5 m/s
    vw = r.base_velocity_world()
    k = int(np.searchsorted(r.t, 1.2))
    assert vw[k, 1] - vw[k - 1, 1] > 0.4
    # the speed is back within 20 % of the command before the run ends (0.8 s later)
    assert s["recovery_s"][0] is not None and s["recovery_s"][0] < 0.8
    # the feet leave the floor in turn (a trot, not a shuffle)
    lifted = (r.feet[:, :, 2] > mpc._ground + 0.5 * mpc.step_height).any(axis=0)
    assert lifted.all()


def test_warm_start_is_the_previous_solution_moved_on(solo):
    mpc = MPC(solo, FEET, "trot", horizon=30, iterations=1)
    x = _standing(mpc)
    first = mpc.step(0.25, x, (0.3, 0.0, 0.0))
    assert first.iterations == 1
    m = 2                                   # two knots later, at the predicted state
    prob = mpc._problem(mpc._phase_key(0.25 + m * mpc.dt), 0.25 + m * mpc.dt, x)[0]
    prob.x0[:] = first.xs[m]
    xs, us, shot = mpc._warm_start(prob, 0.25 + m * mpc.dt, first.xs[m])
    T = mpc.T
    # the previous policy rolled out from its own predicted state is the plan moved on
    # (to rounding: the rollout repeats the plan's own arithmetic)
    scale = np.abs(first.xs).max()
    assert np.abs(xs[:T + 1 - m] - first.xs[m:]).max() < 1e-9 * scale
    assert np.abs(us[:T - m] - first.us[m:]).max() < 1e-9 * np.abs(first.us).max()
    # the rollout's successors are the next knots (no gaps) and the forces Problem.shoot's
    qx, vx, f = shot
    assert np.array_equal(qx, xs[1:, :solo.nq]) and np.array_equal(vx, xs[1:, solo.nq:])
    q, v = np.ascontiguousarray(xs[:, :solo.nq]), np.ascontiguousarray(xs[:, solo.nq:])
    assert np.allclose(prob.shoot(q, v, us)[2], f, rtol=1e-12, atol=1e-12)
    mpc.feasible_warm_start = False         # the plain shift: exactly the old knots
    xs2, us2, shot2 = mpc._warm_start(prob, 0.25 + m * mpc.dt, first.xs[m])
    assert np.array_equal(xs2[1:T + 1 - m], first.xs[m + 1:])
    assert np.array_equal(xs2[0], first.xs[m])
    assert np.array_equal(us2[:T - m], first.us[m:]) and shot2 is None
    # the knots past the old horizon repeat its last control and state
    assert np.array_equal(us2[T - m:], np.repeat(first.us[-1:], m, axis=0))
    assert np.array_equal(xs2[T + 1 - m:], np.repeat(first.xs[-1:], m, axis=0))


def test_feedback_gain_is_the_derivative_of_the_control(solo):
    """At a converged DDP tick, u0(x) changes with the measured state as K0 says: central
    differences on the manifold (integrate for q). Exactly only with the exact
    curvature: FDDP's Gauss-Newton gain is off by ~5 % here (measured: 0.07-0.14 on
    gains of ~1.5), DDP's by ~2e-7 relative (the finite difference's own error)."""
    def tick(x):
        mpc = MPC(solo, FEET, "stand", horizon=12, iterations=15, method="ddp")
        return mpc.step(0.0, x)

    mpc = MPC(solo, FEET, "stand", horizon=12)
    x = _standing(mpc)
    x[mpc.nq + 6:] = 0.05                    # joints moving: a non-trivial optimum
    base = tick(x)
    nq, nv = solo.nq, solo.nv
    rng = np.random.default_rng(0)
    eps = 1e-5
    for _ in range(3):
        d = rng.standard_normal(2 * nv)
        d[:6] = 0.0                         # the base's position / attitude: the feet's
        d /= np.linalg.norm(d)

        def moved(s):
            y = x.copy()
            y[:nq] = rbd.integrate(solo, x[:nq], s * d[:nv])
            y[nq:] = x[nq:] + s * d[nv:]
            return tick(y).u

        fd = (moved(eps) - moved(-eps)) / (2 * eps)
        predicted = base.K @ d
        err = np.abs(fd - predicted).max()
        assert err < 1e-5 * np.abs(predicted).max(), (err, np.abs(predicted).max())


def test_schedules_and_bad_input(solo):
    at = piecewise("0:0.3,3:0.5")
    assert (at(0.0), at(2.99), at(3.0), at(10.0)) == (0.3, 0.3, 0.5, 0.5)
    assert piecewise("5:0.5")(1.0) == 0.0 and piecewise(0.2)(7.0) == 0.2
    with pytest.raises(ValueError, match="t:value"):
        piecewise("fast")
    with pytest.raises(ValueError, match="unknown gait 'gallop'"):
        MPC(solo, FEET, "gallop")
    with pytest.raises(ValueError, match="shorter than the gait's swing"):
        MPC(solo, FEET, "trot", horizon=5)
    with pytest.raises(ValueError, match="unknown method"):
        MPC(solo, FEET, "trot", method="sqp")
    with pytest.raises(KeyError):
        MPC(solo, ("FL_FOOT", "FR_FOOT", "HL_FOOT", "nose"), "trot")
    with pytest.raises(ValueError, match="free-flyer"):
        MPC(rbd.load_robot("iiwa14"), ("iiwa_link_7",), "stand")
    mpc = MPC(solo, FEET, "trot", horizon=30)
    x = _standing(mpc)
    x[20] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        mpc.step(0.0, x)
    with pytest.raises(ValueError, match="command"):
        mpc.step(0.0, _standing(mpc), (0.3, np.inf, 0.0))


def test_a_fall_is_reported_not_raised(solo):
    plant = Plant(solo, feet=FEET)
    mpc = MPC(solo, FEET, "trot", horizon=30, foot_radius=float(plant.foot_radius.min()))
    r = run(mpc, plant, 1.0, speed=0.3, rate=50, pushes=["0.1:0,6,0"])
    s = r.summary()
    assert s["fell"] and s["seconds"] < 1.0
    assert "fell at" in s["reason"] or "failed" in s["reason"]


def test_command_line(tmp_path, capsys):
    from rbdiff.mpc.cli import main
    out = tmp_path / "run.json"
    status = main(["--robot", "solo12", "--gait", "trot", "--seconds", "0.4", "--horizon",
                   "30", "--json", str(out), "--no-progress"])
    assert status == 0
    s = json.loads(out.read_text())
    for key in ("fell", "seconds", "distance", "mean_speed", "lateral_drift",
                "max_abs_roll", "max_abs_pitch", "min_base_height", "ticks", "tick_ms_p50",
                "tick_ms_p99", "realtime_factor"):
        assert key in s, key
    assert s["ticks"] == 40 and not s["fell"]
    assert "no fall" in capsys.readouterr().out
    assert main(["--robot", "solo12", "--gait", "gallop", "--no-progress"]) == 2
    assert "unknown gait" in capsys.readouterr().err


def test_a_tick_solves_as_the_solver_does_without_the_mpc_shortcuts(solo):
    """The tick hands its warm start's rollout (successors, forces) to solve_fddp, which
    then takes the warm start's cost from the derivatives' pass: the same iterate, cost
    and gains as solve_fddp computing both itself."""
    from rbdiff.trajopt.solver import solve_fddp
    mpc = MPC(solo, FEET, "trot", horizon=30, iterations=1)
    x = _standing(mpc)
    mpc.step(0.25, x, (0.3, 0.0, 0.0))
    x2 = mpc._prev[1][2]
    for method in ("fddp", "ddp"):
        mpc.method = method
        tick = mpc.step(0.27, x2, (0.3, 0.0, 0.0))
        prob, xs, us = mpc.last
        ref = solve_fddp(prob, xs, us, max_iter=1, tol=0.0, second_order=method == "ddp",
                         local=True, reg=mpc.reg)
        assert ref.cost == pytest.approx(tick.cost, rel=1e-12)
        assert np.allclose(ref.xs, tick.xs, rtol=0, atol=1e-12)
        assert np.allclose(ref.gains, tick.gains, rtol=1e-10, atol=1e-10)
        mpc._prev = (0.25, *mpc._prev[1:])      # the same warm start for the next method


def test_constrained_tick_meets_the_cone_the_soft_cone_breaks(solo):
    """method "al": the cones (f_n >= 0 included) and the torque limits as constraints
    of the augmented-Lagrangian FDDP. From standing, commanded 0.3 m/s: run to
    convergence its plan meets them to 1e-6 where FDDP's soft-cone optimum breaks the
    cone (measured 0.009 N); at one iteration a tick its plan breaks them far less than
    FDDP's one-iteration plan (measured 0.79 N against 16 N)."""
    def plans(iterations):
        al = MPC(solo, FEET, "trot", method="al", horizon=30, iterations=iterations,
                 multiplier_step=1.0)
        fd = MPC(solo, FEET, "trot", horizon=30, iterations=iterations)
        x = _standing(al)
        al.step(0.25, x, (0.3, 0.0, 0.0))
        tf = fd.step(0.25, x, (0.3, 0.0, 0.0))
        cset = al.last[0].constraints
        q = np.ascontiguousarray(tf.xs[:, :solo.nq])
        v = np.ascontiguousarray(tf.xs[:, solo.nq:])
        return al.last_violation, cset.report(cset.residuals(q, v, tf.us, tf.forces))[0]

    mpc = MPC(solo, FEET, "trot", method="al", horizon=30)
    prob = mpc._problem(mpc._phase_key(0.25), 0.25, _standing(mpc))[0]
    assert {type(g[2]).__name__ for g in prob.constraints.groups} == {"ControlBox",
                                                                      "FrictionCone"}
    assert not any(type(g[2]).__name__ == "FrictionCone" for g in prob.cost_groups)
    al, soft = plans(150)
    assert al <= 1e-6 < 1e-3 < soft
    al, soft = plans(1)
    assert al < 0.2 * soft


def test_constrained_tick_in_closed_loop():
    """go2 (torque limits 23.7 / 45.4 N m as constraints) trots a second under the "al"
    tick, one iteration a tick."""
    go2 = rbd.load_robot("go2")
    feet = ("FL_foot", "FR_foot", "RL_foot", "RR_foot")
    plant = Plant(go2, feet=feet)
    mpc = MPC(go2, feet, "trot", method="al", horizon=30,
              foot_radius=float(plant.foot_radius.min()))
    s = run(mpc, plant, 1.0, speed=0.3, rate=100).summary()
    assert not s["fell"] and s["distance"] > 0.15 and s["failed_ticks"] == 0
