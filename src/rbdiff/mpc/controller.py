"""A receding-horizon controller for legged robots on rbdiff.trajopt's FDDP / DDP.

Every tick solves an optimal-control problem of ``horizon`` knots of ``dt`` seconds from
the measured state: rigid contacts (3D point feet, Baumgarte gains (0, 50), as
Crocoddyl's gaits) on the feet the gait schedule (gaits.py) says support at each knot,
and costs that ask for the commanded base velocity:

- a state regularisation towards a reference that moves with the command: base height
  and posture of the standing configuration, heading and horizontal position integrated
  from the command (a "carrot" kept within ``lag`` of the measured base, so a push does
  not leave the robot chasing where it would have been), base twist = command (vx, vy,
  yaw rate, in the heading frame), joints at the standing posture, at rest;
- swing feet on a reference from their lift-off point to a foothold (Raibert's: under
  the hip at touch-down, plus the command over half a stance, plus sqrt(z / g) times
  the base velocity's error), lifted ``step_height`` on a (1 - cos) profile so that the
  foot leaves and lands with zero vertical velocity;
- the control (0.1, Crocoddyl's), Crocoddyl's linearised friction cone on the support
  feet (10), the velocity limits as a barrier.

The problem of each phase of the gait (the horizon's contact pattern) is built once and
kept; a tick writes the new references into its cost terms in place
(``Problem.restack``), shifts the previous solution by the elapsed knots as the warm
start (the measured state at knot 0), and runs ``iterations`` of the solver. It returns
a :class:`Tick`: the first control, the feedback gains of the whole horizon for the
inner loop (u = us[k] + K[k] (x (-) xs[k]) at the physics rate, k the knot the time
falls in), the predicted trajectory and the timings.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

import rbdiff as _rbd
from ..contacts import Contact
from ..kinematics import _frame_id
from ..model.configuration import quat_to_rot
from ..trajopt.costs import ControlRegularization, FrameTranslation, StateRegularization
from ..trajopt.problem import Problem
from ..trajopt.residuals import FramePlacement, FrictionCone, StateBounds, WrenchCone
from ..trajopt import constraints as C
from ..trajopt.constrained import Infeasible, solve_al
from ..trajopt.solver import solve_fddp
from .gaits import Gait, gait as _preset

METHODS = ("fddp", "ddp", "al")
RHO_MPC = 100.0     # "al": the penalty a tick starts from is at most this (see step)
# "al": the first tick's penalty: the soft cone's weight (10); from solve_al's offline
# start (0.1) solo12's trotting plans broke the cone twice as much (2.96 N median
# against 1.38)
RHO0_MPC = 10.0
GRAVITY = 9.81

# per-coordinate weights of the state regularisation (squared-residual weights): base
# position x, y, z | roll, pitch, yaw | joints | base linear velocity | base angular
# velocity | joint velocities
DEFAULT_WEIGHTS = dict(position=(1e2, 1e2, 1e4), orientation=(1e4, 1e4, 1e3),
                       joints=1.0, linear_velocity=(1e2, 1e2, 1e1),
                       angular_velocity=(1e1, 1e1, 1e2), joint_velocities=1e-1,
                       swing=1e4, control=1e-1, cone=1e1, bounds=1e3, terminal=10.0)


def yaw_of(q):
    """The base's heading (rad) of a free-flyer configuration."""
    R = quat_to_rot(np.asarray(q[3:7], dtype=float))
    return math.atan2(R[1, 0], R[0, 0])


def _yaw_quaternion(psi):
    """[qx, qy, qz, qw] of a rotation psi about z, for psi (n,): (n, 4)."""
    out = np.zeros(np.shape(psi) + (4,))
    out[..., 2] = np.sin(0.5 * np.asarray(psi))
    out[..., 3] = np.cos(0.5 * np.asarray(psi))
    return out


@dataclass
class Tick:
    """One MPC tick's answer. t (s); u (nu,) the first control; K (nu, 2 nv) its feedback
    gain; xs (T+1, nq+nv), us (T, nu), gains (T, nu, 2 nv) the predicted trajectory and
    the horizon's policy; support (T, nfeet) the knots' supporting feet; forces (T,
    ncmax) the predicted contact forces; cost, iterations; timings (ms): "references"
    (the problem's targets), "warm_start" (the previous policy rolled out), "solve" and
    within it the solver's "derivatives", "backward", "line_search"; "total"; and
    "second_order" (bool: a ddp tick whose exact-curvature pass was taken); failed:
    None, or why the solver gave up this tick (the previous plan, moved on, kept)."""
    t: float
    dt: float
    u: np.ndarray
    K: np.ndarray
    xs: np.ndarray
    us: np.ndarray
    gains: np.ndarray
    support: np.ndarray
    forces: np.ndarray
    cost: float
    iterations: int
    timings: dict = field(default_factory=dict)
    model: object = None
    failed: str = None      # why the solver stopped without a step (the plan kept), or None

    def control(self, x, s=None):
        """The inner loop's torques at time s (default this tick's time) for the
        measured state x (nq + nv,): us[k] + gains[k] (x (-) xs[k]), k the knot s falls
        in (the last one beyond the horizon)."""
        m = self.model
        k = 0 if s is None else min(max(int((s - self.t) / self.dt + 1e-9), 0),
                                    self.us.shape[0] - 1)
        x = np.asarray(x, dtype=float)
        dx = np.empty(2 * m.nv)
        dx[:m.nv] = _rbd.difference(m, self.xs[k, :m.nq], x[:m.nq])
        dx[m.nv:] = x[m.nq:] - self.xs[k, m.nq:]
        return self.us[k] + self.gains[k] @ dx


class MPC:
    """``MPC(model, feet, gait="trot", horizon=50, dt=0.01, method="fddp",
    iterations=1, ...)``: a receding-horizon controller of a free-flyer legged robot.

    - model: a Model with a free-flyer root; feet: the foot frames (lf, rf, lh, rh for a
      quadruped, right, left for a biped);
    - gait: a preset of rbdiff.mpc.gaits (stand, walk, trot, pace, bound) or a Gait;
      period / duty / start (s: the standing lead-in) change a preset's;
    - horizon (knots) and dt (s); iterations: the solver's budget a tick; method "fddp"
      (Gauss-Newton) or "ddp" (the dynamics' exact curvature from the first iteration,
      where its Q_uu is positive definite; FDDP's step where not); reg: the solver's
      starting regularisation (1e-3: one regularised iteration a tick tracks as well as
      two unregularised ones, measured on solo12's trot at 50 Hz);
    - q_ref (nq,): the standing configuration (default the model's "standing" (else
      "half_sitting") reference, its base lowered until the lowest foot is at ``floor`` +
      ``foot_radius``, the sphere the plant puts there); step_height (m; default 40 % of
      the feet's depth below the base, at most 8 cm); touchdown_depth (m): how far below
      the floor a swing aims (a late foot still lands when the plan says);
    - weights: DEFAULT_WEIGHTS overrides; lag (m): how far the reference may lead the
      measured base; mu: the friction coefficient of the cone costs;
    - contact: "3d" (point feet, Baumgarte (0, 50), the linearised friction cone; the
      default for four feet) or "6d" (soles, (0, 30), Crocoddyl's wrench cone on a
      ``sole`` (length, width) box, the swing soles level; the default for two feet);
    - feasible_warm_start: the previous policy rolled out from the measured state (no
      gaps; default) rather than the previous plan shifted with the measured state put
      at its first knot;
    - methods "fddp" and "ddp" hold the model's effort limits (where finite) as the
      controls' box (Problem's u_lower / u_upper: the backward pass's box QP);
    - method "al": the cones (f_n >= 0 included; 6D: the wrench cone) and the effort
      limits as constraints (rbdiff.trajopt.constraints) of the augmented-Lagrangian
      FDDP (trajopt.constrained), ``iterations`` FDDP iterations a tick, the multipliers
      carried from tick to tick with their knots and moved ``multiplier_step`` of the
      way to the tick's update (a full step, as an offline outer iteration takes after
      a converged inner solve, diverged on solo12 at one iteration a tick: 0.2 holds
      the plans' cone violation at 1.4 N median, 5.9 N p99 while trotting, pushed).

    Raises ValueError for a model without a free flyer, an unknown gait or method, a
    horizon shorter than a swing, an unknown weight; KeyError for a missing foot
    frame."""

    def __init__(self, model, feet, gait="trot", horizon=50, dt=0.01, method="fddp",
                 iterations=1, q_ref=None, step_height=None, period=None, duty=None,
                 start=0.2, weights=None, lag=0.1, mu=0.7, floor=0.0, foot_radius=0.0,
                 touchdown_depth=0.01, feasible_warm_start=True, contact=None,
                 sole=(0.1, 0.05), reg=1e-3, multiplier_step=0.2):
        if not (model.njoints > 1 and model.nqs[1] == 7):
            raise ValueError("MPC: expected a model with a free-flyer root joint")
        self.model = model
        self.feet = tuple(feet)
        for f in self.feet:
            _frame_id(model, f)                 # KeyError naming a missing frame
        if method not in METHODS:
            raise ValueError(f"MPC: unknown method {method!r}: expected one of "
                             f"{', '.join(METHODS)}")
        self.method = method
        self.T = int(horizon)
        self.dt = float(dt)
        if not (self.T >= 2 and self.dt > 0 and math.isfinite(self.dt)):
            raise ValueError(f"MPC: expected horizon >= 2 knots and dt > 0, got {horizon}, "
                             f"{dt}")
        self.iterations = int(iterations)
        if self.iterations < 1:
            raise ValueError(f"MPC: iterations must be >= 1, got {iterations}")
        self.gait = gait if isinstance(gait, Gait) else _preset(gait, self.feet, period,
                                                                duty, start)
        if self.gait.nfeet != len(self.feet):
            raise ValueError(f"MPC: the gait has {self.gait.nfeet} feet, got "
                             f"{len(self.feet)} foot frames")
        if self.gait.swing_time > 0 and self.T * self.dt < self.gait.swing_time:
            raise ValueError(f"MPC: a horizon of {self.T * self.dt:.3g} s is shorter than "
                             f"the gait's swing ({self.gait.swing_time:.3g} s): give more "
                             "knots")
        w = dict(DEFAULT_WEIGHTS)
        for k, val in (weights or {}).items():
            if k not in w:
                raise ValueError(f"MPC weights: unknown {k!r}: expected some of "
                                 f"{', '.join(w)}")
            w[k] = val
        self.weights = w
        self.lag, self.mu = float(lag), float(mu)
        self.nq, self.nv = model.nq, model.nv
        self.nu = model.nv - 6
        self.q_ref = self._standing(q_ref, floor, foot_radius)
        self.z0 = float(self.q_ref[2])
        self._ground = floor + foot_radius
        feet0 = self._foot_positions(self.q_ref)
        # the feet's standing positions in the heading frame, relative to the base
        self._nominal = feet0[:, :2] - self.q_ref[:2]
        reach = self.z0 - self._ground
        self.step_height = float(min(0.4 * reach, 0.08) if step_height is None
                                 else step_height)
        self.touchdown_depth = float(touchdown_depth)
        self.feasible_warm_start = bool(feasible_warm_start)
        self.reg = float(reg)
        # point feet (3D, Crocoddyl's quadruped gains) or soles (6D, its biped's)
        self.contact = contact or ("6d" if len(self.feet) == 2 else "3d")
        if self.contact not in ("3d", "6d"):
            raise ValueError(f"MPC contact: expected '3d' or '6d', got {contact!r}")
        self.sole = tuple(float(a) for a in sole)
        gains = (0.0, 50.0) if self.contact == "3d" else (0.0, 30.0)
        self._contacts = tuple(Contact(f, self.contact, "local_world_aligned", gains=gains)
                               for f in self.feet)
        self._state_weights = self._weight_vector(w)
        self._problems = {}
        self._ddp_wait = self._ddp_backoff = 0
        self._al = None
        self.al_step = float(multiplier_step)
        self.last_violation = None
        self._prev = None
        self._carrot = None
        self._liftoff = feet0.copy()

    # ---- set-up ------------------------------------------------------------------------

    def _standing(self, q_ref, floor, radius):
        m = self.model
        if q_ref is None:
            refs = getattr(m, "reference_configurations", None) or {}
            name = next((n for n in ("standing", "half_sitting") if n in refs), None)
            if name is None:
                raise ValueError("MPC: the model has no 'standing' or 'half_sitting' "
                                 "reference configuration; pass q_ref= (nq,)")
            q_ref = refs[name]
            q = np.array(q_ref, dtype=float)
            q[2] -= self._foot_positions(q)[:, 2].min() - (floor + radius)
        else:
            q = np.array(q_ref, dtype=float)
        if q.shape != (m.nq,) or not np.isfinite(q).all():
            raise ValueError(f"MPC q_ref: expected ({m.nq},) finite, got {q.shape}")
        return q

    def _foot_positions(self, q):
        return np.array([_rbd.frame_placement(self.model, q, f)[:3, 3] for f in self.feet])

    def _weight_vector(self, w):
        nj = self.nu

        def three(x):
            return np.broadcast_to(np.asarray(x, dtype=float), (3,))

        return np.concatenate([three(w["position"]), three(w["orientation"]),
                               np.full(nj, float(w["joints"])),
                               three(w["linear_velocity"]), three(w["angular_velocity"]),
                               np.full(nj, float(w["joint_velocities"]))])

    def _phase_key(self, t):
        """The gait phase of time t in knots: the horizon's contact pattern."""
        g = self.gait
        if g.duty >= 1.0:
            return 0
        if t < g.start - 1e-9:      # the standing lead-in, then the periodic part
            return ("lead", int(round((g.start - t) / self.dt)))
        n = int(round(g.period / self.dt))
        return int(round((t - g.start) / self.dt)) % max(n, 1)

    def prepare(self, rate=None, progress=False):
        """Build the problems of every phase of the gait now (each tick then only
        updates one), and of the standing lead-in ticks at ``rate`` Hz (a first tick
        of a phase would otherwise build its problem: tens of ms), and run one tick
        (then forgotten: reset) so that the first real one finds the solver's code
        loaded. Returns self."""
        g, dt = self.gait, self.dt
        times = [g.start] if g.duty >= 1.0 else \
            [g.start + k * dt for k in range(max(int(round(g.period / dt)), 1))]
        if rate and g.start > 0 and g.duty < 1.0:
            times += list(np.arange(0.0, g.start - 1e-9, 1.0 / rate))
        x = np.concatenate([self.q_ref, np.zeros(self.nv)])
        it = times
        if progress:
            try:
                from tqdm.auto import tqdm
                it = tqdm(times, desc="mpc problems", leave=False)
            except ImportError:
                pass
        for t in it:
            self._problem(self._phase_key(t), t, x)
        # one tick from standing, forgotten: the solver's compiled code loaded (a first
        # tick would otherwise take ~0.1 s of it)
        self.step(min(times), x)
        self.reset()
        return self

    def _problem(self, key, t, x):
        """The kept problem of the phase ``key`` (built at its first tick)."""
        if key in self._problems:
            return self._problems[key]
        T, nx = self.T, self.nq + self.nv
        w = self.weights
        support = self.gait.table(t, self.dt, T)
        xref = np.zeros((T + 1, nx))                  # the knots' targets are views
        targets = np.zeros((T, len(self.feet), 3))
        ctrl = ControlRegularization(w["control"])
        placements = np.tile(np.eye(4), (T, len(self.feet), 1, 1))
        if self.contact == "3d":
            cones = [FrictionCone(f, self.mu, np.eye(3), 4, False, w["cone"])
                     for f in self.feet]
        else:       # the sole's centre of pressure inside its box (Crocoddyl's biped)
            cones = [WrenchCone(f, self.mu, self.sole, np.eye(3), 4, True, w["cone"])
                     for f in self.feet]
        lo, hi = StateBounds.limits(self.model, self.model.velocity_limits)
        bounds = StateBounds(lo, hi, w["bounds"]) if np.isfinite(hi).any() else None
        hard = self.method == "al"
        limits = np.asarray(self.model.effort_limits, dtype=float)[6:]
        limited = bool(np.isfinite(limits).any())
        if hard:            # the cones (f_n >= 0 included) and torque limits as constraints
            ccones = [C.FrictionCone(f, self.mu, np.eye(3), 4, False) if self.contact == "3d"
                      else C.WrenchCone(f, self.mu, self.sole, np.eye(3), 4, True)
                      for f in self.feet]
            torque = [C.ControlBox()] if limited else []
        running, contacts, constraints = [], [], []
        for k in range(T):
            terms = [StateRegularization(xref[k], 1.0, self._state_weights), ctrl]
            if bounds is not None:
                terms.append(bounds)
            cs = []
            hard_k = list(torque) if hard else []
            for i, f in enumerate(self.feet):
                if support[k, i]:
                    cs.append(self._contacts[i])
                    if hard:
                        hard_k.append(ccones[i])
                    else:
                        terms.append(cones[i])
                else:
                    terms.append(FrameTranslation(f, targets[k, i], w["swing"])
                                 if self.contact == "3d" else
                                 FramePlacement(f, placements[k, i], w["swing"]))
            contacts.append(tuple(cs) if cs else None)
            running.append(terms)
            constraints.append(hard_k)
        terminal = [StateRegularization(xref[T], w["terminal"], self._state_weights)]
        # fddp / ddp: the effort limits as the controls' box (the backward pass's box QP
        # holds them at every iterate: the plant clips what a plan asks beyond them)
        box = limited and not hard
        prob = Problem(self.model, x, T, self.dt, running=running, terminal=terminal,
                       u_lower=-limits if box else None, u_upper=limits if box else None,
                       actuation="floating_base", contacts=contacts,
                       constraints=constraints if hard else None)
        entry = (prob, xref, targets, support, placements)
        self._problems[key] = entry
        return entry

    # ---- references --------------------------------------------------------------------

    def _references(self, t, x, command, xref, targets, support):
        """Write the knots' state references and the swing feet's targets for a tick at
        time t from state x under command (vx, vy, yaw rate)."""
        T, dt, nq = self.T, self.dt, self.nq
        vx, vy, wz = command
        psi_m = yaw_of(x)
        pos_m = x[:2]
        if self._carrot is None:
            self._carrot = np.array([pos_m[0], pos_m[1], psi_m])
        else:                       # integrate the command since the last tick
            elapsed = t - self._t_prev
            c = self._carrot
            c[0] += elapsed * (vx * math.cos(c[2]) - vy * math.sin(c[2]))
            c[1] += elapsed * (vx * math.sin(c[2]) + vy * math.cos(c[2]))
            c[2] += elapsed * wz
        c = self._carrot
        lead = c[:2] - pos_m       # keep the carrot within lag of the measured base
        d = float(np.hypot(*lead))
        if d > self.lag:
            c[:2] = pos_m + lead * (self.lag / d)
        c[2] = psi_m + float(np.clip(math.remainder(c[2] - psi_m, 2 * math.pi), -0.3, 0.3))
        # the reference path: the carrot moved on by the command, knot by knot
        psi = c[2] + wz * dt * np.arange(T + 1)
        step = dt * np.stack([vx * np.cos(psi) - vy * np.sin(psi),
                              vx * np.sin(psi) + vy * np.cos(psi)], axis=1)
        path = c[:2] + np.concatenate([np.zeros((1, 2)), np.cumsum(step[:-1], axis=0)])
        xref[:, 0:2] = path
        xref[:, 2] = self.z0
        xref[:, 3:7] = _yaw_quaternion(psi)
        xref[:, 7:nq] = self.q_ref[7:]
        xref[:, nq:nq + 3] = (vx, vy, 0.0)
        xref[:, nq + 3:nq + 6] = (0.0, 0.0, wz)
        xref[:, nq + 6:] = 0.0
        self._feet_targets(t, x, command, path, psi, targets, support)

    def _feet_targets(self, t, x, command, path, psi, targets, support):
        """Each swing foot's reference at the knots it swings."""
        g, dt, T = self.gait, self.dt, self.T
        if g.duty >= 1.0:
            return
        now = self.gait.support(t)
        feet = self._foot_positions(x[:self.nq])
        R = quat_to_rot(np.asarray(x[3:7], dtype=float))
        v_world = R @ x[self.nq:self.nq + 3]
        vx, vy, wz = command
        stance = g.duty * g.period
        k_fb = math.sqrt(max(self.z0 - self._ground, 1e-3) / GRAVITY)
        for i in range(len(self.feet)):
            if now[i]:
                self._liftoff[i] = feet[i]
            start = self._liftoff[i].copy()
            for lo, td in g.swings(i, t, t + T * dt):
                # the foothold: under the nominal foot at touch-down, Raibert's terms
                j = min(max(int(round((td - t) / dt)), 0), T)
                c, s = math.cos(psi[j]), math.sin(psi[j])
                nominal = np.array([c * self._nominal[i, 0] - s * self._nominal[i, 1],
                                    s * self._nominal[i, 0] + c * self._nominal[i, 1]])
                cmd = np.array([c * vx - s * vy, s * vx + c * vy])
                land = path[j] + nominal + 0.5 * stance * cmd + k_fb * (v_world[:2] - cmd)
                # aimed below the floor: a foot late on its way down touches it by the
                # knot the plan puts it in contact (a plan's contact on a foot still in
                # the air is a support that is not there)
                end = np.array([land[0], land[1], self._ground - self.touchdown_depth])
                k0 = max(int(math.ceil((lo - t) / dt - 1e-9)), 0)
                k1 = min(int(math.ceil((td - t) / dt - 1e-9)), T)
                k = np.arange(k0, k1)
                k = k[~support[k, i]]
                tau = np.clip((t + k * dt - lo) / (td - lo), 0.0, 1.0)
                s3 = (tau * tau * (3.0 - 2.0 * tau))[:, None]
                targets[k, i] = start + (end - start) * s3
                targets[k, i, 2] += 0.5 * self.step_height * (1.0 - np.cos(2 * np.pi * tau))
                start = end.copy()          # the next swing lifts off from this foothold
                start[2] = self._ground

    # ---- the tick ----------------------------------------------------------------------

    def step(self, t, x, command=(0.0, 0.0, 0.0)):
        """One tick at time t (s) from the measured state x (nq + nv,) under command
        (vx, vy, yaw rate) (m/s, m/s, rad/s; in the heading frame): a :class:`Tick`.
        Raises ValueError for a state of the wrong shape or not finite."""
        t0 = time.perf_counter()
        x = np.asarray(x, dtype=float)
        if x.shape != (self.nq + self.nv,) or not np.isfinite(x).all():
            raise ValueError(f"MPC.step: x expected ({self.nq + self.nv},) finite, got "
                             f"shape {x.shape}" + ("" if x.shape != (self.nq + self.nv,)
                                                   else " with NaN or inf"))
        command = tuple(float(c) for c in command)
        if len(command) != 3 or not all(math.isfinite(c) for c in command):
            raise ValueError(f"MPC.step: command expected (vx, vy, yaw rate) finite, got "
                             f"{command}")
        prob, xref, targets, support, placements = self._problem(self._phase_key(t), t, x)
        self._references(t, x, command, xref, targets, support)
        if self.contact == "6d":     # a sole's target: its position, level, the heading
            psi = np.arctan2(xref[:-1, 5], xref[:-1, 6]) * 2.0
            c, sn = np.cos(psi)[:, None], np.sin(psi)[:, None]
            placements[..., :3, 3] = targets
            placements[..., 0, 0], placements[..., 0, 1] = c, -sn
            placements[..., 1, 0], placements[..., 1, 1] = sn, c
        self._t_prev = t
        prob.x0[:] = x
        prob.restack()
        tw = time.perf_counter()
        xs, us, shot = self._warm_start(prob, t, x)
        self.last = (prob, xs, us)          # what this tick solved from (bench-mpc)
        t1 = time.perf_counter()
        # ddp: after a tick whose exact pass was refused (Q_uu not positive definite)
        # the next 1, 2, 4, 8 ticks take FDDP's pass without the try (consecutive
        # refusals; reset by a success), as solve_fddp backs off within a solve
        second = self.method == "ddp" and self._ddp_wait == 0
        self._ddp_wait = max(self._ddp_wait - 1, 0)
        if self.method == "al":
            res = self._solve_al(prob, xs, us, t)
        else:
            res = solve_fddp(prob, xs, us, max_iter=self.iterations, tol=0.0,
                             second_order=second, local=True, shot=shot, reg=self.reg)
        t2 = time.perf_counter()
        if second and res.history:
            if any(h.get("second_order") for h in res.history):
                self._ddp_backoff = 0
            else:
                self._ddp_backoff = min(2 * self._ddp_backoff or 1, 8)
                self._ddp_wait = self._ddp_backoff
        timings_second = bool(second and res.history
                              and any(h.get("second_order") for h in res.history))
        failed = res.history[-1].get("stop") if res.history else None
        if res.gains is None:       # no backward pass succeeded: keep the previous plan
            if self._prev is None:
                raise ValueError(f"MPC tick at t = {t:.3f} s: the solver gave up on the "
                                 f"first tick ({failed})")
            m = min(max(int(round((t - self._prev[0]) / self.dt)), 0), self.T)
            K = self._prev[3]
            res.gains = np.concatenate([K[m:], np.repeat(K[-1:], m, axis=0)])
            res.xs, res.us = xs, us
        self._prev = (t, res.xs, res.us, res.gains)
        timings = {k: 1e3 * res.timings.get(k, 0.0)
                   for k in ("derivatives", "backward", "line_search")}
        timings.update(references=1e3 * (tw - t0), warm_start=1e3 * (t1 - tw),
                       solve=1e3 * (t2 - t1), total=1e3 * (t2 - t0))
        timings["second_order"] = timings_second
        return Tick(t, self.dt, res.us[0].copy(), res.gains[0].copy(), res.xs, res.us,
                    res.gains, support.copy(), res.forces, res.cost, res.iterations,
                    timings, self.model, failed)

    def _solve_al(self, prob, xs, us, t):
        """A tick of the augmented-Lagrangian FDDP: ``iterations`` FDDP iterations on the
        augmented Lagrangian, the multipliers of the previous tick moved on with the
        knots (by constraint kind and frame) and damped (``multiplier_step``), the
        penalty carried over (at most RHO_MPC:
        a tick's few iterations must not stiffen the penalty without bound). A tick the
        solver calls infeasible returns its least-violation plan (a plan must still
        come out: the robot is moving)."""
        cset = prob.constraints
        shift = 0 if self._al is None else int(round((t - self._al[0]) / self.dt))
        old = {} if self._al is None else self._al[1]
        mus = []
        for _, knots, con, _ in cset.groups:
            key = (type(con).__name__, getattr(con, "frame", None))
            mus.append(np.array([old.get((int(k) + shift, key), np.zeros(con.size))
                                 for k in knots]).reshape(len(knots), con.size))
        rho = min(self._al[2], RHO_MPC) if self._al is not None else RHO0_MPC
        try:
            res = solve_al(prob, xs, us, max_iter=self.iterations, reg=self.reg,
                           multipliers=mus, rho=rho)
        except Infeasible as e:
            res = e.result
            res.history[-1]["stop"] = f"infeasible: {e}"
        kept = {}
        beta = self.al_step
        for (_, knots, con, _), mu, mu0 in zip(cset.groups, res.multipliers, mus):
            key = (type(con).__name__, getattr(con, "frame", None))
            for k, row, row0 in zip(knots, mu, mu0):
                kept[(int(k), key)] = row0 + beta * (row - row0)
        self._al = (t, kept, res.rho)
        self.last_violation = res.max_violation
        return res

    def _warm_start(self, prob, t, x):
        """The previous solution shifted by the knots elapsed since (its last knot
        repeated), the measured state at knot 0; quasi-static controls the first time."""
        T = self.T
        if self._prev is None:
            xs = np.tile(x, (T + 1, 1))
            xs[:, 2] = np.maximum(xs[:, 2], 0.0)
            us = prob.quasi_static_controls(xs[:, :self.nq])
            return xs, us, None
        t_prev, xs_p, us_p, K_p = self._prev
        m = min(max(int(round((t - t_prev) / self.dt)), 0), T)
        xs = np.concatenate([xs_p[m:], np.repeat(xs_p[-1:], m, axis=0)])
        us = np.concatenate([us_p[m:], np.repeat(us_p[-1:], m, axis=0)])
        if self.feasible_warm_start:
            K = np.concatenate([K_p[m:], np.repeat(K_p[-1:], m, axis=0)])
            nq = self.nq
            try:        # the previous policy rolled out from the measured state: no gaps
                q, v, u, qx, vx, f = prob._run(np.ascontiguousarray(xs[:, :nq]),
                                               np.ascontiguousarray(xs[:, nq:]), us,
                                               np.zeros_like(us), K, 0.0)
                return np.concatenate([q, v], axis=1), u, (qx, vx, f)
            except ValueError:
                pass
        xs[0] = x
        return xs, us, None

    def reset(self):
        """Forget the warm start and the references' memory (a new run)."""
        self._prev = self._carrot = self._al = None
        self._ddp_wait = self._ddp_backoff = 0
        feet0 = self._foot_positions(self.q_ref)
        self._liftoff = feet0.copy()
