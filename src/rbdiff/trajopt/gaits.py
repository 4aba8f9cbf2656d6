"""Crocoddyl's example gaits as rbdiff.trajopt Problems: the quadruped's
(crocoddyl.utils.quadruped.SimpleQuadrupedalGaitProblem) and the biped's
(crocoddyl.utils.biped.SimpleBipedGaitProblem), knot for knot: the same phases, contact
models (3D point feet with Baumgarte gains (0, 50), 6D soles with (0, 30), in
LOCAL_WORLD_ALIGNED), impulse knots at touch-downs, cost terms, weights, activations and
reference trajectories of the swing feet and of the centre of mass, so that the same
controls have the same cost in both (tests/test_trajopt_costs.py, bench section (D)).

    import rbdiff.trajopt as to
    from rbdiff.trajopt.gaits import Quadruped
    anymal = rbd.load_robot("anymal")
    gait = Quadruped(anymal, "LF_FOOT", "RF_FOOT", "LH_FOOT", "RH_FOOT")
    x0 = np.concatenate([gait.q_ref, np.zeros(anymal.nv)])
    prob = gait.walking(x0, 0.25, 0.25, 1e-2, 25, 2)
    res = to.solve(prob, method="fddp", xs=[x0] * (prob.T + 1),
                   us=prob.quasi_static_controls(np.tile(x0[:anymal.nq], (prob.T, 1))))

As Crocoddyl's builders, the first walking / trotting / pacing problem of a gait object
takes half steps with its first moving feet (``first_step``), later ones full steps.
"""

from __future__ import annotations

import numpy as np

import rbdiff as _rbd
from ..contacts import Contact
from ..kinematics import _frame_id
from . import constraints as _con
from .costs import ControlRegularization, FrameTranslation, StateRegularization
from .problem import Problem
from .residuals import CoMPosition, FramePlacement, FrictionCone, StateBounds, WrenchCone


def _reference(model, reference, name):
    """The state regularisation's configuration: ``reference`` (nq,) or the model's
    reference configuration ``name`` (rbd.load_robot's SRDF ones)."""
    if reference is None:
        refs = getattr(model, "reference_configurations", None) or {}
        if name not in refs:
            raise ValueError(f"reference: the model has no reference configuration "
                             f"{name!r}; pass reference= (its configuration, nq)")
        reference = refs[name]
    q = np.array(reference, dtype=float)
    if q.shape != (model.nq,) or not np.isfinite(q).all():
        raise ValueError(f"reference: expected ({model.nq},) finite, got {q.shape}")
    return q


class _Gait:
    """What the quadruped and the biped share: the model, the feet, the default state
    and the knot builders (a knot: its contacts and its cost terms)."""

    contact_kind, gains, impulse_weights, foot_weight = "3d", (0.0, 50.0), None, 1e6

    def __init__(self, model, feet, reference, reference_name, mu, constrained=False):
        if not (model.njoints > 1 and model.nqs[1] == 7):
            raise ValueError("gaits: expected a model with a free-flyer root joint")
        for f in feet:
            _frame_id(model, f)              # KeyError naming a missing foot frame
        self.model = model
        self.q_ref = _reference(model, reference, reference_name)
        self.x_ref = np.concatenate([self.q_ref, np.zeros(model.nv)])
        self.mu = float(mu)
        self.first_step = True
        nv = model.nv
        self._state_reg = StateRegularization(self.x_ref, 1e1, self.state_weights(nv) ** 2)
        self._impulse_reg = StateRegularization(self.x_ref, 1e1,
                                                self.impulse_state_weights(nv) ** 2)
        self._ctrl_reg = ControlRegularization(1e-1)
        self._contacts = {}
        self._cones = {}
        # constrained: the cones (their f_n >= 0 row the minimum normal force) and the
        # torque limits (the model's, where it states them) are constraints, not costs
        self.constrained = bool(constrained)
        lim = np.asarray(model.effort_limits, dtype=float)[6:]
        self._torque_box = _con.ControlBox() if np.isfinite(lim).any() else None

    # ---- knots -------------------------------------------------------------------------

    def _contact(self, foot):
        if foot not in self._contacts:
            self._contacts[foot] = Contact(foot, self.contact_kind, "local_world_aligned",
                                           gains=self.gains)
        return self._contacts[foot]

    def _positions(self, q):
        return {f: _rbd.frame_placement(self.model, q, f)[:3, 3].copy() for f in self.feet}

    def _com(self, q):
        return _rbd.center_of_mass(self.model, q)

    def _swing(self, support, com=None, swing=()):
        """(contacts, costs) of createSwingFootModel(timeStep, support, comTask,
        swingFootTask): swing a list of (foot, target position)."""
        costs = []
        if com is not None:
            costs.append(CoMPosition(com, 1e6))
        if not self.constrained:
            costs += [self._cone(f) for f in support]
        costs += [self._foot_track(f, p, self.foot_weight) for f, p in swing]
        costs += self._regularisation()
        return tuple(self._contact(f) for f in support), costs

    def _impulse(self, support, swing):
        """(contacts, costs) of createImpulseModel(support, swingFootTask)."""
        costs = [self._foot_track(f, p, self.impulse_foot_weight) for f, p in swing]
        costs.append(self._impulse_reg)
        return tuple(self._contact(f) for f in support), costs

    def _footsteps(self, com0, feet0, step_length, step_height, knots, support, swing):
        """createFootstepModels: ``knots`` swing knots then the touch-down impulse;
        com0 and the swing feet's positions feet0 (arrays, updated in place as
        Crocoddyl's) move by the step."""
        share = len(swing) / (len(support) + len(swing))
        out, task = [], []
        for k in range(knots):
            task = []
            for f, p in zip(swing, feet0):
                ph = knots / 2
                if k < ph:
                    dp = [step_length * (k + 1) / knots, 0.0, step_height * k / ph]
                elif k == ph:
                    dp = [step_length * (k + 1) / knots, 0.0, step_height]
                else:
                    dp = [step_length * (k + 1) / knots, 0.0,
                          step_height * (1 - float(k - ph) / ph)]
                task.append((f, p + np.array(dp)))
            com = np.array([step_length * (k + 1) / knots, 0.0, 0.0]) * share + com0
            out.append(("knot",) + self._swing(support, com, task))
        out.append(("impulse",) + self._impulse(swing, task))
        com0 += [step_length * share, 0.0, 0.0]
        for p in feet0:
            p += [step_length, 0.0, 0.0]
        return out

    def _problem(self, x0, dt, knots):
        """The Problem of Crocoddyl's list of action models (the last one terminal)."""
        running, terminal = knots[:-1], knots[-1]
        T = len(running)
        contacts, impulses, costs = [], {}, []
        for t, (kind, c, terms) in enumerate(running):
            if kind == "impulse":
                impulses[t] = c
                contacts.append(None)
            else:
                contacts.append(c if c else None)
            costs.append(terms)
        # the terminal model's costs at x_T (no control, no forces: those terms are zero)
        term = [t for t in terminal[2] if not getattr(t, "reads_control", False)]
        cons = None
        if self.constrained:
            box = [self._torque_box] if self._torque_box is not None else []
            cons = [[] if t in impulses else
                    [self._cone_constraint(c.frame) for c in (contacts[t] or ())] + box
                    for t in range(T)]
        return Problem(self.model, x0, T, dt, running=costs, terminal=term,
                       actuation="floating_base", contacts=contacts, impulses=impulses,
                       constraints=cons)

    def _cone_constraint(self, foot):
        """The cost's cone (_cone) as a constraint, its normal-force row f_n >= 0."""
        key = ("constraint", foot)
        if key not in self._cones:
            self._cones[key] = self._cone_kind(foot)
        return self._cones[key]

    def _jumping(self, x0, jump_height, jump_length, dt, ground_knots, flying_knots,
                 landed_knots):
        q0 = np.asarray(x0, dtype=float)[:self.model.nq]
        pos = self._positions(q0)
        jump = np.array(jump_length, dtype=float)
        df = jump[2] - pos[self._right_front][2]      # Crocoddyl's rf foot
        for p in pos.values():
            p[2] = 0.0
        com_ref = sum(pos[f] for f in self.feet) / len(self.feet)
        com_ref[2] = self._com(q0)[2]
        feet = list(self.feet)
        knots = [("knot",) + self._swing(feet) for _ in range(ground_knots)]
        up = np.array([jump[0] / 2.0, jump[1] / 2.0, jump[2] / 2.0 + jump_height])
        knots += [("knot",) + self._swing([], up * (k + 1) / flying_knots + com_ref)
                  for k in range(flying_knots)]
        knots += [("knot",) + self._swing([]) for _ in range(flying_knots)]
        knots.append(("impulse",) + self._impulse(
            self.landing_order, [(f, pos[f] + jump) for f in self.landing_order]))
        jump[2] = df
        knots += [("knot",) + self._swing(feet, com_ref + jump) for _ in range(landed_knots)]
        return self._problem(x0, dt, knots)


class Quadruped(_Gait):
    """Crocoddyl's SimpleQuadrupedalGaitProblem on ``model`` (a free-flyer quadruped)
    with feet frames lf, rf, lh, rh. ``reference``: the state regularisation's
    configuration (default the model's "standing" reference configuration);
    ``velocity_limits`` (nv - 6,): the joints' velocity limits of the state bounds; None:
    the model's ``velocity_limits`` (the URDF's), as Crocoddyl's builder takes
    Pinocchio's velocityLimit (its StateMultibody's bounds); +inf bounds nothing.

    Every knot: state regularisation (weights (0, 500, 0.01 | 10, 1)^2 on base position,
    base orientation, joints | base and joint velocities, weight 10), control
    regularisation (0.1), the joint limits as a quadratic barrier (1000); a contact knot
    (3D feet, LOCAL_WORLD_ALIGNED, Baumgarte (0, 50)) Crocoddyl's linearised friction
    cone (mu 0.7, 4 facets) on each support foot (10); a swing knot the swing feet's
    positions (1e6) and the centre of mass (1e6); a touch-down an impulse knot with the
    feet's positions (1e7) and its state regularisation.

    ``constrained``: the cone (its f_n >= 0 row the minimum normal force) and the
    model's torque limits (ControlBox, where model.effort_limits states them) are
    constraints (trajopt/constraints.py) at every knot that is not an impulse knot,
    not costs: solve(prob) then takes the augmented-Lagrangian FDDP."""

    impulse_foot_weight = 1e7

    def __init__(self, model, lf, rf, lh, rh, reference=None, velocity_limits=None,
                 mu=0.7, constrained=False):
        self.feet = (lf, rf, lh, rh)
        self.lf, self.rf, self.lh, self.rh = self.feet
        self.landing_order = self.feet
        self._right_front = rf
        super().__init__(model, self.feet, reference, "standing", mu, constrained)
        lo, hi = StateBounds.limits(model, model.velocity_limits if velocity_limits is None
                                    else velocity_limits)
        self._bounds = StateBounds(lo, hi, 1e3)

    @staticmethod
    def state_weights(nv):
        return np.array([0.0] * 3 + [500.0] * 3 + [0.01] * (nv - 6) + [10.0] * 6
                        + [1.0] * (nv - 6))

    @staticmethod
    def impulse_state_weights(nv):
        return np.array([1.0] * 6 + [10.0] * (nv - 6) + [10.0] * nv)

    def _cone(self, foot):
        if foot not in self._cones:
            self._cones[foot] = FrictionCone(foot, self.mu, np.eye(3), 4, False, 1e1)
        return self._cones[foot]

    def _cone_kind(self, foot):
        return _con.FrictionCone(foot, self.mu, np.eye(3), 4, False)

    def _foot_track(self, foot, p, weight):
        return FrameTranslation(foot, p, weight)

    def _regularisation(self):
        return [self._state_reg, self._ctrl_reg, self._bounds]

    def _start(self, x0):
        q0 = np.asarray(x0, dtype=float)[:self.model.nq]
        pos = self._positions(q0)
        com_ref = sum(pos[f] for f in (self.rf, self.rh, self.lf, self.lh)) / 4
        com_ref[2] = self._com(q0)[2]
        return pos, com_ref

    def _steps(self, x0, step_length, step_height, dt, step_knots, support_knots,
               first, second):
        """doubleSupport + first steps (half length on a gait's first problem) +
        doubleSupport + second steps + a double-support terminal knot; first / second: a
        list of (swing feet, support feet) steps."""
        pos, com = self._start(x0)
        four = list(self.feet)
        double = [("knot",) + self._swing(four) for _ in range(support_knots)]
        knots = list(double)
        scale = 0.5 if self.first_step else 1.0
        self.first_step = False
        for swing, support in first:
            knots += self._footsteps(com, [pos[f] for f in swing], scale * step_length,
                                     step_height, step_knots, support, swing)
        knots += double
        for swing, support in second:
            knots += self._footsteps(com, [pos[f] for f in swing], step_length,
                                     step_height, step_knots, support, swing)
        knots.append(double[0])
        return self._problem(x0, dt, knots)

    def walking(self, x0, step_length, step_height, dt, step_knots, support_knots):
        """createWalkingProblem: right-hind, right-front, then left-hind, left-front."""
        lf, rf, lh, rh = self.feet
        return self._steps(x0, step_length, step_height, dt, step_knots, support_knots,
                           [([rh], [lf, rf, lh]), ([rf], [lf, lh, rh])],
                           [([lh], [lf, rf, rh]), ([lf], [rf, lh, rh])])

    def trotting(self, x0, step_length, step_height, dt, step_knots, support_knots):
        """createTrottingProblem: right-front and left-hind, then left-front and
        right-hind."""
        lf, rf, lh, rh = self.feet
        return self._steps(x0, step_length, step_height, dt, step_knots, support_knots,
                           [([rf, lh], [lf, rh])], [([lf, rh], [rf, lh])])

    def pacing(self, x0, step_length, step_height, dt, step_knots, support_knots):
        """createPacingProblem: the right feet, then the left feet."""
        lf, rf, lh, rh = self.feet
        return self._steps(x0, step_length, step_height, dt, step_knots, support_knots,
                           [([rf, rh], [lf, lh])], [([lf, lh], [rf, rh])])

    def bounding(self, x0, step_length, step_height, dt, step_knots, support_knots):
        """createBoundingProblem: the front feet (from the hind feet's positions, as
        Crocoddyl's), then the hind feet (from the front feet's); full steps always."""
        lf, rf, lh, rh = self.feet
        pos, com = self._start(x0)
        four = list(self.feet)
        double = [("knot",) + self._swing(four) for _ in range(support_knots)]
        knots = list(double)
        # Crocoddyl pairs the front feet with the hind feet's positions and back
        knots += self._footsteps(com, [pos[lf], pos[rf]], step_length, step_height,
                                 step_knots, [lh, rh], [lf, rf])
        knots += double
        knots += self._footsteps(com, [pos[lh], pos[rh]], step_length, step_height,
                                 step_knots, [lf, rf], [lh, rh])
        knots.append(double[0])
        return self._problem(x0, dt, knots)

    def jumping(self, x0, jump_height, jump_length, dt, ground_knots, flying_knots):
        """createJumpingProblem: take-off on four feet, flying up (the centre of mass
        raised by jump_height, moved half jump_length (3,)) and down, a touch-down
        impulse with the feet at their positions + jump_length, landed knots."""
        return self._jumping(x0, jump_height, jump_length, dt, ground_knots, flying_knots,
                             ground_knots)


class Biped(_Gait):
    """Crocoddyl's SimpleBipedGaitProblem on ``model`` (a free-flyer biped) with sole
    frames right_foot, left_foot. ``reference`` defaults to the model's "half_sitting"
    configuration. 6D contacts (LOCAL_WORLD_ALIGNED, Baumgarte (0, 30)) with Crocoddyl's
    wrench cone (mu 0.7, foot 0.1 x 0.05, 10); swing feet tracked by their placement
    (identity rotation; 1e6, 1e8 at a touch-down); state regularisation (weights
    (0, 500, 0.01 | 10)^2, 10), control regularisation (0.1); no state bounds.
    ``constrained``: the wrench cone and the torque limits as constraints (Quadruped's)."""

    contact_kind, gains = "6d", (0.0, 30.0)
    impulse_foot_weight = 1e8

    def __init__(self, model, right_foot, left_foot, reference=None, mu=0.7,
                 constrained=False):
        self.feet = (right_foot, left_foot)
        self.right_foot, self.left_foot = self.feet
        self.landing_order = (left_foot, right_foot)
        self._right_front = right_foot
        super().__init__(model, self.feet, reference, "half_sitting", mu, constrained)

    @staticmethod
    def state_weights(nv):
        return np.array([0.0] * 3 + [500.0] * 3 + [0.01] * (nv - 6) + [10.0] * nv)

    @staticmethod
    def impulse_state_weights(nv):
        return np.array([1.0] * 6 + [0.1] * (nv - 6) + [10.0] * nv)

    def _cone(self, foot):
        if foot not in self._cones:
            self._cones[foot] = WrenchCone(foot, self.mu, (0.1, 0.05), np.eye(3), 4, True,
                                           1e1)
        return self._cones[foot]

    def _cone_kind(self, foot):
        return _con.WrenchCone(foot, self.mu, (0.1, 0.05), np.eye(3), 4, True)

    def _foot_track(self, foot, p, weight):
        M = np.eye(4)
        M[:3, 3] = p
        return FramePlacement(foot, M, weight)

    def _regularisation(self):
        return [self._state_reg, self._ctrl_reg]

    def walking(self, x0, step_length, step_height, dt, step_knots, support_knots):
        """createWalkingProblem: double support, a right step (half length on the first
        problem), double support, a left step; the last touch-down is the terminal
        knot."""
        q0 = np.asarray(x0, dtype=float)[:self.model.nq]
        pos = self._positions(q0)
        rf, lf = self.feet
        com = (pos[rf] + pos[lf]) / 2
        com[2] = self._com(q0)[2]
        double = [("knot",) + self._swing([rf, lf]) for _ in range(support_knots)]
        scale = 0.5 if self.first_step else 1.0
        self.first_step = False
        knots = list(double)
        knots += self._footsteps(com, [pos[rf]], scale * step_length, step_height,
                                 step_knots, [lf], [rf])
        knots += double
        knots += self._footsteps(com, [pos[lf]], step_length, step_height, step_knots,
                                 [rf], [lf])
        return self._problem(x0, dt, knots)

    def jumping(self, x0, jump_height, jump_length, dt, ground_knots, flying_knots):
        """createJumpingProblem: as the quadruped's, ground_knots // 2 landed knots."""
        return self._jumping(x0, jump_height, jump_length, dt, ground_knots, flying_knots,
                             int(ground_knots / 2))
