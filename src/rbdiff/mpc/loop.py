"""The closed loop: an MPC against a MuJoCo plant (rbdiff.sim.Plant).

The plant steps at its timestep (1 kHz by default); the controller ticks at ``rate``
(Hz) on the measured state; between ticks the inner loop applies the tick's policy
u = us[k] + K[k] (x (-) xs[k]) at every physics step (k the knot the time falls in),
clipped to the effort limits by the plant. The simulation waits for the controller
(the ticks' compute times are logged, not slept through): ``realtime_factor`` is the
simulated seconds over the wall seconds of the whole run.

A run stops cleanly when the robot falls (plant.fallen: base below half its height or
tilted beyond 45 degrees) or when a tick fails (a solver error is logged as the reason),
never with a stack trace from inside the loop.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from ..model.configuration import quat_to_rot
from .controller import yaw_of


def piecewise(spec, what="schedule"):
    """A schedule t -> value from a number, a list of (t, value) pairs, or a string
    "v" or "t0:v0,t1:v1,..." (each value from its time on; 0 before the first time).
    Raises ValueError for a malformed one."""
    if callable(spec):
        return spec
    if isinstance(spec, (int, float)):
        pairs = [(0.0, float(spec))]
    elif isinstance(spec, str):
        pairs = []
        try:
            for part in spec.split(","):
                if ":" in part:
                    a, b = part.split(":")
                    pairs.append((float(a), float(b)))
                else:
                    pairs.append((0.0, float(part)))
        except ValueError:
            raise ValueError(f"{what}: expected 'value' or 't:value,t:value,...', got "
                             f"{spec!r}") from None
    else:
        pairs = [(float(a), float(b)) for a, b in spec]
    if not pairs or not all(math.isfinite(a) and math.isfinite(b) for a, b in pairs):
        raise ValueError(f"{what}: expected finite times and values, got {spec!r}")
    pairs.sort()
    times = np.array([p[0] for p in pairs])
    values = np.array([p[1] for p in pairs])

    def at(t):
        i = int(np.searchsorted(times, t, side="right")) - 1
        return float(values[i]) if i >= 0 else 0.0

    return at


def parse_pushes(specs):
    """Pushes from "t:dvx,dvy,dvz" strings (or (t, (dvx, dvy, dvz)) pairs): a list of
    (t, dv (3,)) sorted by time; dv is a change of the base's world-frame velocity."""
    out = []
    for s in specs or ():
        if isinstance(s, str):
            try:
                t, dv = s.split(":")
                dv = [float(c) for c in dv.split(",")]
                t = float(t)
            except ValueError:
                raise ValueError(f"push: expected 't:dvx,dvy,dvz', got {s!r}") from None
        else:
            t, dv = s
        dv = np.array(dv, dtype=float)
        if dv.shape != (3,) or not np.isfinite(dv).all() or not math.isfinite(t):
            raise ValueError(f"push: expected a time and 3 velocity components, got {s!r}")
        out.append((float(t), dv))
    return sorted(out, key=lambda p: p[0])


@dataclass
class Run:
    """A closed-loop run's log (one row per physics step unless said): t (N,), q (N, nq),
    v (N, nv), u (N, nu) the applied (clipped) torques, command (N, 3), feet (N, nfeet, 3)
    the feet's positions, forces (N, nfeet, 3) the feet's contact forces (world),
    tick_t (M,), tick_ms (M,) the ticks' times and compute times, fell, reason,
    seconds (simulated), wall (s), pushes, and ``summary()``."""
    t: np.ndarray
    q: np.ndarray
    v: np.ndarray
    u: np.ndarray
    command: np.ndarray
    feet: np.ndarray
    forces: np.ndarray
    tick_t: np.ndarray
    tick_ms: np.ndarray
    fell: bool
    reason: str
    seconds: float
    wall: float
    pushes: list = field(default_factory=list)
    nominal_height: float = 0.0
    failed_ticks: int = 0       # ticks whose solver gave up (the previous plan kept)
    mu: float = None            # the plant's friction coefficient

    def _rotations(self):
        """(N, 3, 3) the base's orientation at every sample (one batched call)."""
        return quat_to_rot(self.q[:, 3:7])

    def base_velocity_world(self):
        """(N, 3) the base's linear velocity in the world frame."""
        return np.einsum("nij,nj->ni", self._rotations(), self.v[:, :3])

    def heading_velocity(self, start=0):
        """(forward (N,), lateral (N,)): the base's world velocity in its heading frame
        (rotated by its yaw) from sample ``start`` on."""
        R = self._rotations()[start:]
        vw = np.einsum("nij,nj->ni", R, self.v[start:, :3])
        yaw = np.arctan2(R[:, 1, 0], R[:, 0, 0])
        c, s = np.cos(yaw), np.sin(yaw)
        return c * vw[:, 0] + s * vw[:, 1], -s * vw[:, 0] + c * vw[:, 1]

    def summary(self):
        """The run in numbers: fell, seconds, distance (m, along the commanded heading's
        integral), mean_speed (m/s), lateral_drift (m), max_abs_roll, max_abs_pitch
        (rad), min_base_height (m), ticks, tick_ms_p50, tick_ms_p99, realtime_factor,
        recovery_s (per push: :meth:`recovery_time`), max_friction_ratio and
        friction_saturated (:meth:`friction_ratio`, at the plant's mu)."""
        q = self.q
        yaw0 = yaw_of(q[0]) if len(q) else 0.0
        d = q[-1, :2] - q[0, :2] if len(q) else np.zeros(2)
        # the commanded heading: integrate the commanded yaw rate from the start
        dt = np.diff(self.t, prepend=self.t[0]) if len(self.t) else np.zeros(0)
        heading = yaw0 + np.cumsum(self.command[:, 2] * dt) if len(self.t) else np.zeros(0)
        # along / across the commanded velocity's direction, integrated
        along = lateral = 0.0
        if len(q) > 1:
            vcmd = self.command[:, :2]
            dirs = np.arctan2(vcmd[:, 1], vcmd[:, 0]) + heading
            dp = np.diff(q[:, :2], axis=0)
            c, s = np.cos(dirs[1:]), np.sin(dirs[1:])
            along = float(np.sum(c * dp[:, 0] + s * dp[:, 1]))
            lateral = float(np.sum(-s * dp[:, 0] + c * dp[:, 1]))
        if len(q):
            R = self._rotations()       # ZYX Euler angles' roll and pitch
            rp = np.stack([np.arctan2(R[:, 2, 1], R[:, 2, 2]),
                           np.arcsin(np.clip(-R[:, 2, 0], -1.0, 1.0))], axis=1)
        else:
            rp = np.zeros((1, 2))
        recovery = [self.recovery_time(tp) for tp, _ in self.pushes if tp < self.seconds]
        ratio, saturated = self.friction_ratio(mu=self.mu)
        ms = self.tick_ms if len(self.tick_ms) else np.zeros(1)
        return dict(fell=bool(self.fell), reason=self.reason, seconds=float(self.seconds),
                    distance=along, mean_speed=along / max(self.seconds, 1e-9),
                    lateral_drift=abs(lateral),
                    displacement=[float(d[0]), float(d[1])],
                    max_abs_roll=float(np.abs(rp[:, 0]).max()),
                    max_abs_pitch=float(np.abs(rp[:, 1]).max()),
                    min_base_height=float(q[:, 2].min()) if len(q) else 0.0,
                    nominal_height=float(self.nominal_height),
                    ticks=int(len(self.tick_ms)), failed_ticks=int(self.failed_ticks),
                    tick_ms_p50=float(np.percentile(ms, 50)),
                    tick_ms_p99=float(np.percentile(ms, 99)),
                    tick_ms_max=float(ms.max()),
                    realtime_factor=float(self.seconds / max(self.wall, 1e-9)),
                    recovery_s=recovery, max_friction_ratio=ratio,
                    friction_saturated=saturated)

    def friction_ratio(self, min_share=0.05, mu=None):
        """(largest, share): the largest |f_t| / f_n of MuJoCo's contact forces on the
        feet over the run, and the share of the samples at 99 % of ``mu`` or more (the
        feet sliding: MuJoCo's elliptic cone caps the ratio at mu), counting the feet
        that carry at least ``min_share`` of the largest total load."""
        if not len(self.forces):
            return 0.0, 0.0
        f = self.forces.reshape(-1, 3)
        load = np.abs(self.forces[:, :, 2]).sum(axis=1).max()
        on = f[:, 2] > min_share * max(load, 1e-9)
        if not on.any():
            return 0.0, 0.0
        ratio = np.hypot(f[on, 0], f[on, 1]) / f[on, 2]
        top = float(ratio.max())
        mu = top if mu is None else mu
        return top, float(np.mean(ratio >= 0.99 * mu))

    def recovery_time(self, t_push, window=0.4, band=0.2):
        """Seconds after ``t_push`` until the base's velocity in the heading frame,
        averaged over ``window`` s (a gait cycle: the stride's own oscillation out), is
        within ``band`` of the commanded speed (forward: band x |command|, lateral:
        band x |command| too, at least 0.05 m/s) and stays there; None if it never
        does within the run."""
        k0 = int(np.searchsorted(self.t, t_push))
        if k0 >= len(self.t) - 1:
            return None
        fwd, lat = self.heading_velocity(k0)
        dt = float(self.t[1] - self.t[0])
        n = max(int(round(window / dt)), 1)
        if len(fwd) < n:
            return None
        kernel = np.ones(n) / n
        fa = np.convolve(fwd - self.command[k0:, 0], kernel, "valid")
        la = np.convolve(lat - self.command[k0:, 1], kernel, "valid")
        tol = np.maximum(band * np.hypot(self.command[k0:, 0], self.command[k0:, 1]),
                         0.05)[n - 1:]
        bad = np.flatnonzero((np.abs(fa) > tol) | (np.abs(la) > tol))
        if not len(bad):
            return 0.0
        if bad[-1] == len(fa) - 1:
            return None
        # the window ending at sample bad[-1] + n is the first good one from there on
        return float((bad[-1] + n) * dt)


def run(mpc, plant, seconds, speed=0.0, lateral=0.0, turn=0.0, pushes=(), rate=50.0,
        x0=None, progress=False, on_tick=None):
    """Run ``mpc`` (an rbdiff.mpc.MPC) against ``plant`` (an rbdiff.sim.Plant of the same
    model and feet) for ``seconds`` of simulated time: the controller at ``rate`` Hz,
    the physics at the plant's timestep; speed / lateral / turn: the command's vx, vy
    (m/s) and yaw rate (rad/s), each a number or a schedule (:func:`piecewise`); pushes:
    (t, dv (3,)) or "t:dvx,dvy,dvz"; x0: the initial state (default the MPC's standing
    configuration at rest). progress: a tqdm bar. on_tick(tick): called after each tick.
    Returns a :class:`Run`."""
    if not (math.isfinite(seconds) and seconds > 0):
        raise ValueError(f"seconds: expected > 0, got {seconds}")
    if not (math.isfinite(rate) and rate > 0):
        raise ValueError(f"rate: expected > 0 Hz, got {rate}")
    speed, lateral, turn = (piecewise(speed, "speed"), piecewise(lateral, "lateral"),
                            piecewise(turn, "turn"))
    pushes = parse_pushes(pushes)
    model = mpc.model
    h = float(plant.mj_model.opt.timestep)
    per_tick = max(int(round(1.0 / (rate * h))), 1)
    steps = int(round(seconds / h))
    if x0 is None:
        x0 = np.concatenate([mpc.q_ref, np.zeros(model.nv)])
    plant.set_state(x0[:model.nq], x0[model.nq:])
    mpc.reset()
    nf = len(mpc.feet)
    log_t, log_q, log_v, log_u, log_c, log_f, log_p = [], [], [], [], [], [], []
    tick_t, tick_ms = [], []
    bar = None
    if progress:
        try:
            from tqdm.auto import tqdm
            bar = tqdm(total=steps, unit="step", desc="mpc", leave=False)
        except ImportError:
            bar = None
    fell, reason = False, ""
    tick = None
    failed_ticks = 0
    pending = list(pushes)
    wall0 = time.perf_counter()
    n = 0
    for n in range(steps):
        t = n * h
        while pending and pending[0][0] <= t + 1e-12:
            plant.push(pending.pop(0)[1])
        q, v = plant.state()
        x = np.concatenate([q, v])
        cmd = (speed(t), lateral(t), turn(t))
        if n % per_tick == 0:
            try:
                tick = mpc.step(t, x, cmd)
            except (ValueError, np.linalg.LinAlgError, FloatingPointError) as e:
                fell, reason = True, f"the controller failed at t = {t:.3f} s: {e}"
                break
            tick_t.append(t)
            tick_ms.append(tick.timings["total"])
            failed_ticks += tick.failed is not None
            if on_tick is not None:
                on_tick(tick)
        u = tick.control(x, t)
        if not np.isfinite(u).all():
            fell, reason = True, f"the controller's torques are not finite at t = {t:.3f} s"
            break
        applied = plant.clip(u)
        log_t.append(t)
        log_q.append(q)
        log_v.append(v)
        log_u.append(applied)
        log_c.append(cmd)
        log_p.append(plant.foot_positions())
        log_f.append(plant.foot_forces())
        plant.step(applied)
        if plant.fallen():
            fell, reason = True, f"fell at t = {t + h:.3f} s"
            break
        if bar is not None and n % 100 == 0:
            bar.update(min(100, steps - bar.n))
    if bar is not None:
        bar.close()
    wall = time.perf_counter() - wall0
    arr = np.array
    return Run(arr(log_t), arr(log_q).reshape(-1, model.nq),
               arr(log_v).reshape(-1, model.nv), arr(log_u).reshape(-1, mpc.nu), arr(log_c).reshape(-1, 3),
               arr(log_p).reshape(-1, nf, 3), arr(log_f).reshape(-1, nf, 3),
               arr(tick_t), arr(tick_ms), fell, reason or "ran to the end",
               float(len(log_t) * h), wall, pushes, mpc.z0, failed_ticks,
               float(plant.mu) if hasattr(plant, "mu") else None)
