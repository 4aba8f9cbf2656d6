"""A trajectory-optimisation problem in Crocoddyl's conventions: state x = (q, v) on the
configuration manifold, tangent differences x (-) y = (difference(y_q, x_q), x_v - y_v)
(2 nv), controls u the actuated joints' torques, tau = [0_6; u] under a free-flyer root
(Crocoddyl's ActuationModelFloatingBase, nu = nv - 6), u = tau otherwise
(ActuationModelFull). Knot t = 0..T-1 is one of

- a free knot: a = aba(q, v, tau);
- a contact knot (its tuple of rbd.Contact, Baumgarte gains included): a =
  contact_dynamics(q, v, tau, contacts) (Crocoddyl's
  DifferentialActionModelContactFwdDynamics with ContactModel3D / 6D of the same frames,
  gains and reference, no damping);

  both then the symplectic Euler step x' = f(x, u) of Crocoddyl's
  IntegratedActionModelEuler: v' = v + a dt, q' = integrate(q, v' dt), the running costs
  times dt;

- an impulse knot (a touch-down, Crocoddyl's ActionModelImpulseFwdDynamics with r_coeff 0,
  no damping): q' = q, v' = impulse_dynamics(q, v, contacts); no control (its row of us is
  carried but unused), the ``impulse_costs`` not multiplied by dt.

The terminal cost is not multiplied by dt. The Jacobians of f in the tangent spaces use
the Lie-group Jacobians of integrate (integrate_jacobians; Crocoddyl's Jintegrate and
JintegrateTransport), batched over the knots of each kind and contact set.

iLQR and DDP (solver.py) use the structured blocks of ``dynamics_blocks`` (identity
tangent maps), valid only for a "simple" problem: vector-space joints, free knots, full
actuation; FDDP uses the factors of ``_dynamics_parts`` (the same blocks and integrate's
Jacobians) and handles every problem; ``dynamics_jacobians`` assembles the dense ones.
"""

from __future__ import annotations

import numpy as np

import rbdiff as _rbd
from ..contacts import Contact, _as_tuple, pack
from ..cpu import policy
from ..cpu.scratch import single_call_scratch
from ..cpu.trajopt_costs import euler_rows_batch, euler_velocity_batch
from ..kernels.contact_dynamics import CF_WIDTH, CI_WIDTH, kept_size
from ..model.layout import FREE_FLYER, SPHERICAL
from ..validation import DIVERGED as _DIVERGED
from . import calls
from .constraints import ConstraintSet
from .costs import _copy, per_knot
from .rollout import CONTACT, FREE, IMPULSE, closed_loop, kept_parts

_ACTUATIONS = ("auto", "full", "floating_base")
# the cost terms' batched calls (a phase's knots, tens of us of work each) run serially:
# a parallel region's wake-up and join cost as much, and a worker descheduled by another
# process costs a time slice (ms); the dynamics' larger batches keep cpu.policy's choice
_COST_POLICY = "serial"
_NO_ACC = np.zeros((0, 1))      # closed_loop's acc when the accelerations are not kept
_NO_KEPT = np.zeros((0, 0))     # closed_loop's kept when the contact solves are not kept
_NO_DF = np.zeros((0, 1, 1))    # kept_parts' df_x, df_u and first when not wanted
_NO_FIRST = np.zeros((0, 1, 1, 1))


def _rows(K):
    """Row indices of K for a fancy index with a (len K, dim) column index."""
    if isinstance(K, slice):
        return np.arange(K.start, K.stop)[:, None]
    return K[:, None]


def _curved(term, H):
    """accumulate's keyword for a term with a residual curvature when H is wanted."""
    return {"curvature": H} if H is not None and hasattr(term, "curvature") else {}


def _total(scale, c):
    """A group's cost: scale times the sum of its knots' costs c (K,), or with a scale
    (K,) per knot their dot product."""
    return float(np.dot(scale, c)) if per_knot(scale) else scale * c.sum()


def _span(K):
    """The knot indices K as a slice when they are consecutive (views, not copies)."""
    if len(K) and K[-1] - K[0] == len(K) - 1:
        return slice(int(K[0]), int(K[-1]) + 1)
    return K


class Problem:
    """``Problem(model, x0, horizon, dt, running, terminal, u_lower=None, u_upper=None,
    actuation="auto", contacts=None, impulses=None, impulse_costs=())``.

    x0 (nq + nv,); horizon T knots of control (T + 1 states); dt > 0; running / terminal:
    lists of cost terms (rbdiff.trajopt.costs); u_lower, u_upper (nu,) optional control
    bounds (the solver clamps its controls to them). ``actuation``: "full" (u = tau,
    nu = nv), "floating_base" (a free-flyer root joint 1 unactuated: tau = [0_6; u],
    nu = nv - 6), or "auto" (floating_base when joint 1 is a free flyer).
    ``contacts``: None (every knot free), a Contact or a tuple of them (every knot in
    contact), or a list of T entries, each None / () (a free knot) or a tuple of Contact.
    ``impulses``: {knot: Contact or tuple of them}: impulse knots (touch-downs).
    ``impulse_costs``: cost terms of the impulse knots (state terms only).
    ``running`` may instead be a list of T lists, the cost terms of each knot (the
    running costs of a free or contact knot, the costs of an impulse knot; then
    ``impulse_costs`` must be empty): Crocoddyl's gaits, whose targets change from knot
    to knot. Knots whose terms differ only in their targets are evaluated together
    (one batched call per term kind: ``stacked``).

    Raises at construction: a contact on a missing frame (KeyError), a contact set whose
    rows are dependent at x0 (rbd.DependentContacts), an empty horizon (ValueError), a
    cost term on a missing frame (KeyError), a force term (ContactForce, FrictionCone,
    WrenchCone) at a knot without a contact on its frame or at an impulse knot, a state
    bound whose lower bound is above its upper one (ValueError).

    ``constraints``: None, a list of constraints (trajopt/constraints.py) at every knot
    that is not an impulse knot, or a list of T lists (each knot's);
    ``terminal_constraints``: knot T's (state constraints). ``self.constraints``: their
    ConstraintSet, or None; solve() then takes the constrained solver (constrained.py)."""

    def __init__(self, model, x0, horizon, dt, running=(), terminal=(), u_lower=None,
                 u_upper=None, actuation="auto", contacts=None, impulses=None,
                 impulse_costs=(), constraints=None, terminal_constraints=()):
        self.model = model
        self.nq, self.nv = model.nq, model.nv
        self.x0 = np.array(x0, dtype=float)
        if self.x0.shape != (self.nq + self.nv,) or not np.isfinite(self.x0).all():
            raise ValueError(f"x0: expected ({self.nq + self.nv},) finite, got "
                             f"{self.x0.shape}")
        self.T = int(horizon)
        if self.T < 1:
            raise ValueError(f"horizon: expected >= 1 knot, got {horizon}")
        self.dt = float(dt)
        if not self.dt > 0:
            raise ValueError(f"dt: expected > 0, got {dt}")
        self.actuation = self._actuation(actuation)
        self.nu = self.nv - 6 if self.actuation == "floating_base" else self.nv
        self._knots(contacts, impulses)
        self._costs(running, terminal, impulse_costs)
        self.u_lower = None if u_lower is None else np.asarray(u_lower, dtype=float)
        self.u_upper = None if u_upper is None else np.asarray(u_upper, dtype=float)
        for name, b in (("u_lower", self.u_lower), ("u_upper", self.u_upper)):
            if b is not None and b.shape != (self.nu,):
                raise ValueError(f"{name}: expected ({self.nu},), got {b.shape}")
        self._lo = np.full(self.nu, -np.inf) if u_lower is None else self.u_lower
        self._hi = np.full(self.nu, np.inf) if u_upper is None else self.u_upper
        if (self._lo > self._hi).any():
            raise ValueError("u_lower above u_upper")
        self._ws = single_call_scratch(model.njoints, model.nv)[0]   # the rollouts'
        # (first dof, size) of the joints whose tangent maps are not the identity (the
        # multi-dof ones): where integrate's Jacobians are dense (backward_pass_fddp)
        self._lie_blocks = np.array([(model.idx_v[j], model.nvs[j])
                                     for j in range(1, model.njoints) if model.nvs[j] > 1],
                                    np.int64).reshape(-1, 2)
        self._args = (contacts, impulses)
        self._constraint_args = (constraints, terminal_constraints)
        self.constraints = ConstraintSet(self, constraints, terminal_constraints) \
            if (constraints or terminal_constraints) else None

    def _costs(self, running, terminal, impulse_costs):
        """The knots' cost terms, checked, and their groups: knots sharing a term's key
        (its kind, frame, weights: all but its targets) and kind (impulse or not), one
        stacked term per group (residuals.py)."""
        T, model = self.T, self.model
        running = list(running)
        self._running_arg = running
        per_knot = len(running) == T and T > 0 and all(
            isinstance(r, (list, tuple)) for r in running)
        self.terminal = list(terminal)
        self.impulse_costs = list(impulse_costs)
        if per_knot:
            if self.impulse_costs:
                raise ValueError("impulse_costs: give the impulse knots' costs in their "
                                 "entries of the per-knot running costs instead")
            knot_costs = [list(r) for r in running]
            self.running = []
        else:
            self.running = running
            knot_costs = [self.impulse_costs if k == IMPULSE else self.running
                          for k in self.kind]
        seen = set()
        for term in [t for ts in knot_costs for t in ts] + self.terminal:
            if id(term) in seen:
                continue
            seen.add(id(term))
            if not hasattr(term, "derivatives"):
                raise TypeError("costs: expected rbdiff.trajopt cost terms")
            term.check(model, self.nu)
        groups = {}
        ends = [t for t in self.terminal if not getattr(t, "reads_control", False)]
        for t, terms in enumerate(knot_costs + [ends]):
            end = t == T
            imp = not end and self.kind[t] == IMPULSE
            count = {}
            for term in terms:
                if imp and getattr(term, "reads_control", False):
                    raise ValueError(f"knot {t}: {type(term).__name__} reads the control "
                                     "(or the contact forces), which an impulse knot does "
                                     "not have")
                key = term.key() if hasattr(term, "key") else ("id", id(term))
                forces = getattr(term, "reads_forces", False)
                # what the group shares: a force term's not its frame (the contact's
                # dim, not its row: the group reads each knot's rows through its own
                # offsets: one group for every foot's cone, not one a foot and phase),
                # a weight_per_knot term's not its weight
                shared = term.group_key() if hasattr(term, "group_key") else key
                n = (key if forces else shared)        # a key twice at one knot
                n = count[n] = count.get(n, -1) + 1
                if getattr(term, "reads_control", False):
                    key = (bool(imp), shared, n)
                else:
                    # a state term's knots of every kind in one group (one call, not one
                    # a kind and one for the terminal knot), each knot's scale its own
                    key = ("state", shared, n)
                if forces:
                    key += (self._force_slot(t, term)[1],)
                groups.setdefault(key, ([], []))
                groups[key][0].append(t)
                groups[key][1].append(term)
        self.knot_costs = knot_costs
        self.cost_groups = []
        for key, (knots, terms) in groups.items():
            K = np.array(knots, np.int64)
            term = terms[0].stacked(terms) if hasattr(terms[0], "stacked") else terms[0]
            weights = [t.weight for t in terms] \
                if getattr(term, "weight_per_knot", False) else []
            if any(w != weights[0] for w in weights):      # one weight a knot (K,)
                term = _copy(term) if term is terms[0] else term
                term.weight = np.array(weights)
            off = None
            if getattr(term, "reads_forces", False):
                dim = key[-1]
                off = np.array([self._force_slot(t, tm)[0] for t, tm in zip(knots, terms)])
                off = off[:, None] + np.arange(dim)
            dynamic = np.array([t < T and self.kind[t] != IMPULSE for t in knots])
            # the running knots' costs times dt, the impulse and terminal knots' not
            scale = np.where(dynamic, self.dt, 1.0)
            scale = float(scale[0]) if (scale == scale[0]).all() else scale
            # the controls where every knot has them (an impulse or the terminal knot:
            # None, which a term that does not read them ignores)
            self.cost_groups.append((_span(K), K, term, scale, off, bool(dynamic.all())))
        self.reads_forces = any(g[4] is not None for g in self.cost_groups)

    def _force_slot(self, t, term):
        """(row offset, dim) of the contact on term.frame in knot t's forces."""
        from ..kinematics import _frame_id
        fid = _frame_id(self.model, term.frame)
        row = 0
        for c in self.knot_contacts[t]:
            if _frame_id(self.model, c.frame) == fid:
                term.dim_ok(c.dim)
                return (row, c.dim)
            row += c.dim
        raise ValueError(f"knot {t}: {type(term).__name__} on frame {term.frame!r}, which "
                         "has no contact at that knot")

    def _actuation(self, actuation):
        if actuation not in _ACTUATIONS:
            raise ValueError(f"actuation: expected one of {_ACTUATIONS}, got {actuation!r}")
        floating = self.model.njoints > 1 and int(self.model.joint_types[1]) == FREE_FLYER
        if actuation == "auto":
            return "floating_base" if floating else "full"
        if actuation == "floating_base" and not floating:
            raise ValueError("actuation: 'floating_base' needs a free-flyer root joint "
                             "(joint 1)")
        return actuation

    def _knots(self, contacts, impulses):
        """kind (T,), the knots' contact sets, their packed tables stacked (cint, cflt,
        cstart) and the groups of knots sharing a kind and a contact set."""
        T, model = self.T, self.model
        if contacts is None:
            per = [()] * T
        elif isinstance(contacts, Contact) or (
                isinstance(contacts, (tuple, list)) and contacts
                and all(isinstance(c, Contact) for c in contacts)):
            per = [_as_tuple(contacts)] * T
        else:
            per = list(contacts)
            if len(per) != T:
                raise ValueError(f"contacts: expected None, a tuple of Contact or a list "
                                 f"of {T} per-knot entries, got {len(per)} entries")
            per = [() if c is None else _as_tuple(c) for c in per]
        kind = np.array([CONTACT if c else FREE for c in per], np.int64)
        for t, c in dict(impulses or {}).items():
            if not (isinstance(t, (int, np.integer)) and 0 <= t < T):
                raise ValueError(f"impulses: knot {t!r} is not in 0..{T - 1}")
            c = _as_tuple(c)
            if not c:
                raise ValueError(f"impulses: knot {t} has no contacts")
            per[t] = c
            kind[t] = IMPULSE
        q0 = self.x0[:self.nq]
        packed, groups = {}, {}
        for t, c in enumerate(per):
            if c and c not in packed:
                packed[c] = pack(model, c)       # KeyError / IndexError for a bad frame
                z = np.zeros(self.nv)            # DependentContacts naming the rows
                _rbd.contact_dynamics(model, q0, z, z, c)
            groups.setdefault((int(kind[t]), c), []).append(t)
        cstart = np.zeros(T + 1, np.int64)
        rows_i, rows_f = [], []
        for t, c in enumerate(per):
            n = len(c)
            cstart[t + 1] = cstart[t] + n
            if n:
                rows_i.append(packed[c][0])
                rows_f.append(packed[c][1])
        self.kind = kind
        self.knot_contacts = per
        self._packed = packed
        self.groups = {k: np.array(v, np.int64) for k, v in groups.items()}
        self._cint = np.concatenate(rows_i) if rows_i else np.zeros((0, CI_WIDTH), np.int64)
        self._cflt = np.concatenate(rows_f) if rows_f else np.zeros((0, CF_WIDTH))
        # read-only as pack's: the rollout's contact entries then run the API's specialisation
        self._cint.flags.writeable = False
        self._cflt.flags.writeable = False
        self._cstart = cstart
        self.ncmax = max([packed[c][2] for c in packed], default=0)
        self.dynamic = np.flatnonzero(kind != IMPULSE)
        self._contact_knots = np.flatnonzero(kind == CONTACT)
        self.impulse_knots = np.flatnonzero(kind == IMPULSE)

    @property
    def simple(self):
        """A problem iLQR / DDP handle (their structured derivatives assume identity
        tangent maps and u = tau): vector-space joints, free knots, full actuation."""
        lie = any(int(self.model.joint_types[i]) in (SPHERICAL, FREE_FLYER)
                  for i in range(1, self.model.njoints))
        return not lie and self.actuation == "full" and (self.kind == FREE).all()

    def restack(self):
        """Copy the knots' cost targets into the problem's stacked terms, in place: after
        a change to a knot term's target (FrameTranslation.target, StateRegularization
        .x_ref, ...) the problem solves for the new ones without being built again (model
        predictive control moves its references every tick). A target's shape may not
        change."""
        for group in self.cost_groups:
            name, terms = getattr(group[2], "_stacked_from", (None, None))
            if name is not None:
                np.stack([getattr(t, name) for t in terms], out=getattr(group[2], name))

    def with_x0(self, x0):
        """The same problem from another initial state (model predictive control)."""
        return Problem(self.model, x0, self.T, self.dt, self._running_arg, self.terminal,
                       self.u_lower, self.u_upper, self.actuation, *self._args,
                       self.impulse_costs, *self._constraint_args)

    def clamp(self, u):
        """u clipped to the control bounds (if any)."""
        if self.u_lower is not None:
            u = np.maximum(u, self.u_lower)
        if self.u_upper is not None:
            u = np.minimum(u, self.u_upper)
        return u

    def tau(self, u):
        """Joint torques (K, nv) of controls u (K, nu): [0_6; u] under a floating base."""
        if self.nu == self.nv:
            return u
        tau = np.zeros(u.shape[:-1] + (self.nv,))
        tau[..., self.nv - self.nu:] = u
        return tau

    def quasi_static(self, q):
        """Gravity torques at configurations q (K, nq): the default initial controls of a
        simple problem."""
        return _rbd.gravity(self.model, q)

    def quasi_static_controls(self, q):
        """Controls (T, nu) that hold each knot's configuration q (T or T+1, nq) at rest:
        the least-norm [u; forces] of B u + J_c^T f = g(q) (B the actuation's columns,
        J_c the knot's contact Jacobians in their references; Crocoddyl's quasiStatic);
        impulse knots get zeros."""
        q = np.ascontiguousarray(q[:self.T])
        g = _rbd.gravity(self.model, q)
        off = self.nv - self.nu
        u = np.zeros((self.T, self.nu))
        for t in range(self.T):
            if self.kind[t] == IMPULSE:
                continue
            cols = [np.eye(self.nv)[:, off:]]
            for c in self.knot_contacts[t]:
                J = _rbd.frame_jacobian(self.model, q[t], c.frame, c.reference)[:c.dim]
                cols.append(J.T)
            A = np.hstack(cols)
            u[t] = np.linalg.lstsq(A, g[t], rcond=None)[0][:self.nu]
        return u

    def _run(self, q, v, us, k_ff, K_fb, alpha, fs=None, gap=0.0, shoot=False, acc=None,
             keep=None):
        """(q, v, u) of the trial and each knot's (q', v', forces) (rollout.py); ``acc``
        (T, nv) or None: filled with each knot's acceleration; ``keep``: None or a Kept,
        which then holds this run's contact solves (and says at which trajectory)."""
        T, nq, nv, nu = self.T, self.nq, self.nv, self.nu
        qn, vn, un = np.empty((T + 1, nq)), np.empty((T + 1, nv)), np.empty((T, nu))
        qx, vx = np.empty((T, nq)), np.empty((T, nv))
        forces = np.zeros((T, self.ncmax))
        qn[0], vn[0] = self.x0[:nq], self.x0[nq:]
        fb = K_fb is not None
        m = self.model
        kept = _NO_KEPT if keep is None or keep.buf is None else keep.buf
        if keep is not None:
            keep.at = None      # until this run is through (a refusal leaves it partial)
        # a strided or read-only us (a column slice) copied: closed_loop is cached for C ones
        uc = us
        if type(us) is np.ndarray and not (us.flags.c_contiguous and us.flags.writeable):
            uc = np.array(us, order="C")
        t = closed_loop(m.mi, m.mf, m.frame_parents, m.frame_mf, self._ws,
                        q if (fb or shoot) else qn, v if (fb or shoot) else vn, uc, k_ff,
                        K_fb if fb else np.zeros((T, nu, 2 * nv)), alpha, self.dt,
                        self._lo, self._hi, fb, self.kind, self._cstart, self._cint,
                        self._cflt, fs if fs is not None else np.zeros((T + 1, 2 * nv)),
                        float(gap), shoot, qn, vn, un, qx, vx, forces,
                        _NO_ACC if acc is None else acc, kept)
        if t >= 0:
            raise ValueError(f"the rollout diverged at knot {t} of {T}: max |q| = "
                             f"{np.abs(qn[t]).max():.3g}, max |v| = {np.abs(vn[t]).max():.3g} "
                             f"(not finite, or beyond {_DIVERGED:g}: no robot's state)")
        if kept.shape[0] and not shoot:
            keep.at = (qn, vn, un)
        elif kept.shape[0]:
            # shot: solved at the given states with the controls clamped (u + 0.0 * 0.0):
            # the caller's own only where that changed no bit of them (-0.0 included)
            same = np.array_equal(un, us) and np.array_equal(np.signbit(un), np.signbit(us))
            keep.at = (q, v, us) if same else None
        return qn, vn, un, qx, vx, forces

    def rollout(self, us, acc=None):
        """States (q (T+1, nq), v (T+1, nv)) from x0 under controls us (T, nu) (clamped
        to the bounds); ``acc`` (T, nv) or None: filled with the knots' accelerations
        aba(q_t, v_t, u_t) (what DDP's contraction needs)."""
        zeros = np.zeros((self.T, self.nu))
        q, v, _, _, _, _ = self._run(None, None, us, zeros, None, 0.0, acc=acc)
        return q, v

    def closed_loop(self, q, v, us, k_ff, K_fb, alpha, acc=None):
        """(q, v, u) of the policy u = clamp(us + alpha k_ff + K_fb (x (-) (q, v))) from x0
        (rollout.py); K_fb None: open loop; ``acc`` as rollout's."""
        return self._run(q, v, us, k_ff, K_fb, alpha, acc=acc)[:3]

    def shoot(self, q, v, us, keep=None):
        """Each knot's successor from the given states (multiple shooting): (q' (T, nq),
        v' (T, nv), forces (T, ncmax)), the contact forces / impulses of knot t in its
        first nc entries; ``keep``: _run's."""
        zeros = np.zeros((self.T, self.nu))
        _, _, _, qx, vx, f = self._run(np.ascontiguousarray(q), np.ascontiguousarray(v), us,
                                       zeros, None, 0.0, shoot=True, keep=keep)
        return qx, vx, f

    def kept(self):
        """A new Kept of this problem's rollouts: one solve's (per-call state)."""
        return Kept(self)

    def cost(self, q, v, us, forces=None):
        """Total cost of a trajectory: dt * sum of running costs at the free and contact
        knots + the impulse knots' costs + the terminal cost; ``forces`` (T, ncmax) the
        knots' contact forces (shoot, or a rollout's), needed by force terms."""
        c = 0.0
        m = self.model
        with policy.forced(_COST_POLICY):
            for K, _, term, scale, off, ctrl in self.cost_groups:
                uk = us[K] if ctrl else None
                if off is None:
                    c += _total(scale, term.value(m, q[K], v[K], uk))
                    continue
                if forces is None:
                    raise ValueError("cost: this problem's force terms need the knots' "
                                     "contact forces")
                f = forces[_rows(K), off]
                c += _total(scale, term.value(m, q[K], v[K], uk, f))
        return c

    def rollout_cost(self, us):
        """Total cost of controls us (T, nu) (clamped) from x0 (forces included)."""
        us = self.clamp(us)
        zeros = np.zeros((self.T, self.nu))
        q, v, u, _, _, f = self._run(None, None, us, zeros, None, 0.0)
        return self.cost(q, v, u, f)

    def cost_derivatives(self, q, v, us, forces=None, dforces=None, curvature=None,
                         total=None):
        """(l_x (T+1, 2nv), l_u (T, nu), l_xx (T+1, 2nv, 2nv), l_uu (T, nu, nu)): running
        terms times dt at the free and contact knots, the impulse terms at the impulse
        knots, the terminal terms at knot T. With force terms, ``forces`` (T, ncmax) and
        ``dforces`` = (df_dx (T, ncmax, 2nv), df_du (T, ncmax, nu)) (``derivatives``),
        and the result has a fifth entry l_xu (T, 2nv, nu). ``curvature`` (T+1, nv, nv)
        or None: the terms that have a residual curvature add it there, scaled as their
        l_xx (cost_curvature's values, from the kinematics their derivatives compute;
        what DDP adds). ``total``: None or a list, to which the total cost (the terms'
        values, which the derivatives compute on the way) is appended: ``cost``'s
        number without a second pass over the terms."""
        T, n, nu = self.T, 2 * self.nv, self.nu
        J = 0.0
        lx, lu = np.zeros((T + 1, n)), np.zeros((T, nu))
        lxx, luu = np.zeros((T + 1, n, n)), np.zeros((T, nu, nu))
        lxu = np.zeros((T, n, nu)) if self.reads_forces else None
        out = (lx, lu, lxx, luu, lxu)
        m = self.model
        with policy.forced(_COST_POLICY):
            for K, knots, term, scale, off, ctrl in self.cost_groups:
                uk = us[K] if ctrl else None
                if off is None:
                    J += _total(scale, term.accumulate(m, q[K], v[K], uk, out=out,
                                                       knots=knots, scale=scale,
                                                       **_curved(term, curvature)))
                    continue
                if forces is None or dforces is None:
                    raise ValueError("cost_derivatives: this problem's force terms need "
                                     "the knots' contact forces and their derivatives")
                r = _rows(K)
                J += _total(scale, term.accumulate(m, q[K], v[K], uk, forces[r, off],
                                                   dforces[0][r, off], dforces[1][r, off],
                                                   out=out, knots=knots, scale=scale))
        if total is not None:
            total.append(float(J))
        if self.reads_forces:
            return lx, lu, lxx, luu, lxu
        return lx, lu, lxx, luu

    def force_costates(self, forces):
        """(T, ncmax): dl/df at each knot, the force terms' gradients in their contacts'
        rows (running terms times dt), zero where no term reads the forces (DDP contracts
        the contact dynamics' force curvature with it)."""
        lf = np.zeros((self.T, self.ncmax))
        for K, _, term, scale, off, _ in self.cost_groups:
            if off is not None:
                r = _rows(K)
                lf[r, off] += scale * term.force_gradient(forces[r, off])
        return lf

    @property
    def curved(self):
        """Whether a cost term has a residual curvature (cost_curvature not None)."""
        return any(hasattr(g[2], "curvature") for g in self.cost_groups)

    def cost_curvature(self, q):
        """(T+1, nv, nv): the residuals' curvature w r^T r_qq of the terms that have it
        (costs.py), running terms times dt, knot T the terminal's; None when no term has
        any (every residual linear: l_xx is exact), on any tree
        (cost_derivatives(..., curvature=H) adds the same along with the derivatives)."""
        groups = [g for g in self.cost_groups if hasattr(g[2], "curvature")]
        if not groups:
            return None
        H = np.zeros((self.T + 1, self.nv, self.nv))
        for K, _, term, scale, _, _ in groups:
            H[K] += np.reshape(scale, (-1, 1, 1)) * term.curvature(self.model, q[K])
        return H

    def derivatives(self, q, v, us, vnext, forces=None):
        """(F_x, F_u, l_x, l_u, l_xx, l_uu, l_xu or None): dynamics_jacobians and
        cost_derivatives at once, the force terms' derivatives taken from the contact
        knots' dynamics derivatives (no second call)."""
        parts, *costs = self.derivative_parts(q, v, us, vnext, forces)
        return self._assemble(*parts) + tuple(costs)

    def derivative_parts(self, q, v, us, vnext, forces=None, first=None, curvature=None,
                         total=None, kept=None):
        """(parts, l_x, l_u, l_xx, l_uu, l_xu or None): derivatives with the dynamics'
        Jacobians as their factors (_dynamics_parts: what FDDP's backward pass takes);
        ``first``: None or (T, 3, nv + ncmax, nv), filled at the contact knots with
        their contact dynamics derivatives (ddp's contractions reuse them);
        ``curvature``: None or (T+1, nv, nv), the residuals' curvature added there
        (cost_derivatives'; l_xx stays Gauss-Newton's); ``total``: cost_derivatives';
        ``kept``: None or a Kept (_run's): its contact solves are used where it holds
        those of (q, v, us)."""
        df = None
        if self.reads_forces:
            nc = max(self.ncmax, 1)
            df = (np.zeros((self.T, nc, 2 * self.nv)), np.zeros((self.T, nc, self.nu)))
        parts = self._dynamics_parts(q, v, us, vnext, df, first, kept)
        c = self.cost_derivatives(q, v, us, forces, df, curvature, total)
        return (parts,) + tuple(c) + ((None,) if len(c) == 4 else ())

    def dynamics_jacobians(self, q, v, us, vnext):
        """(F_x (T, 2nv, 2nv), F_u (T, 2nv, nu)): f's Jacobians in the tangent spaces at
        knots 0..T-1, v' = vnext (T, nv) the knots' successor velocities (shoot or a
        rollout), assembled from _dynamics_parts (Crocoddyl's IntegratedActionModelEuler):

            F_x = [[Jq, 0] + dt Jv P_x ; P_x],   F_u = [dt Jv P_u ; P_u]

        with P_x = [Pq, Pv], P_u = Pu; an impulse knot: F_x = [[I, 0], [Pq, Pv]], F_u = 0."""
        return self._assemble(*self._dynamics_parts(q, v, us, vnext, None))

    def _assemble(self, Pq, Pv, Pu, Jq, Jv, c):
        """The dense (F_x, F_u) of _dynamics_parts' factors."""
        T, nv = self.T, self.nv
        Fx = np.zeros((T, 2 * nv, 2 * nv))
        Fu = np.zeros((T, 2 * nv, self.nu))
        Fx[:, nv:, :nv] = Pq
        Fx[:, nv:, nv:] = Pv
        Fu[:, nv:] = Pu
        D = self.dynamic
        euler_rows_batch(D, np.ascontiguousarray(Jq[D]), np.ascontiguousarray(Jv[D]),
                         self.dt, Fx, Fu)
        Fx[self.impulse_knots, :nv, :nv] = np.eye(nv)
        return Fx, Fu

    def _dynamics_parts(self, q, v, us, vnext, df, first=None, kept=None):
        """The factors of f's tangent Jacobians at knots 0..T-1 (riccati.backward_pass_fddp):
        (Pq, Pv (T, nv, nv), Pu (T, nv, nu), Jq, Jv (T, nv, nv), c (T,)) with

            F_x = S [[I, 0], [Pq, Pv]],   F_u = S [[0], [Pu]],   S = [[Jq, c Jv], [0, I]].

        A free or contact knot (symplectic Euler, v' = v + dt a, q' = integrate(q, dt v')):
        Pq = dt a_q, Pv = I + dt a_v, Pu = dt a_tau B, (Jq, Jv) = integrate_jacobians(q,
        dt v') with v' = vnext (T, nv) (shoot or a rollout), c = dt; an impulse knot:
        (Pq, Pv) = (dv'/dq, dv'/dv), Pu = 0, Jq = I, Jv = 0, c = 0 (q' = q). One batched
        derivatives call per kind and contact set (every contact knot in one kept_parts
        call where ``kept`` holds this trajectory's solves), one batched
        integrate_jacobians call.
        ``df``: None, or (df_dx (T, ncmax, 2nv), df_du (T, ncmax, nu)) filled at the
        contact knots with their forces' derivatives (the force terms' Jacobians);
        ``first``, ``kept``: derivative_parts'."""
        T, nv, nu, dt, m = self.T, self.nv, self.nu, self.dt, self.model
        off = nv - nu
        Pq, Pv = np.empty((T, nv, nv)), np.empty((T, nv, nv))
        Pu = np.zeros((T, nv, nu))
        c = np.zeros(T)
        eye = np.eye(nv)
        at = None if kept is None else kept.at
        solved = at is not None and at[0] is q and at[1] is v and at[2] is us
        # integrate's Jacobians at every knot in one call, written in place of the
        # impulse knots' below (a copy of the dynamic knots' rows fewer)
        Jq, Jv = calls.integrate_jacobians(m, q[:-1], dt * vnext) if len(self.dynamic) \
            else (np.empty((T, nv, nv)), np.empty((T, nv, nv)))
        if solved:          # every contact knot at once, from the rollout's solves
            C = self._contact_knots
            kept_parts(m.mi, m.mf, m.frame_parents, m.frame_mf, q, v, us, kept.buf, C,
                       self._cstart, self._cint, self._cflt, dt, Pq, Pv, Pu,
                       _NO_DF if df is None else df[0], _NO_DF if df is None else df[1],
                       _NO_FIRST if first is None else first)
            c[C] = dt
        for (kind, contacts), knots in self.groups.items():
            K = _span(knots)             # a phase's consecutive knots: views
            qk, vk = q[K], v[K]
            if kind == IMPULSE:
                d = calls.impulse_dynamics_derivatives(m, qk, vk, self._packed[contacts],
                                                       contacts)
                Pq[K] = d.dvafter_dq
                Pv[K] = d.dvafter_dv
                Jq[K] = eye
                Jv[K] = 0.0
                continue
            if kind == CONTACT and solved:
                continue
            tau = np.ascontiguousarray(self.tau(us[K]))
            if kind == CONTACT:
                d = calls.contact_dynamics_derivatives(m, qk, vk, tau,
                                                       self._packed[contacts], contacts)
                a_q, a_v, a_t = d.dqdd_dq, d.dqdd_dv, d.dqdd_dtau
                if df is not None:
                    nc = d.dforces_dq.shape[-2]
                    df[0][K, :nc, :nv] = d.dforces_dq
                    df[0][K, :nc, nv:] = d.dforces_dv
                    df[1][K, :nc] = d.dforces_dtau[..., off:]
                if first is not None:
                    nc = d.dforces_dq.shape[-2]
                    for b, (a, f) in enumerate(((d.dqdd_dq, d.dforces_dq),
                                                (d.dqdd_dv, d.dforces_dv),
                                                (d.dqdd_dtau, d.dforces_dtau))):
                        first[K, b, :nv] = a
                        first[K, b, nv:nv + nc] = f
            else:
                a_q, a_v, a_t = _rbd.aba_derivatives(m, qk, vk, tau)
            # Pq = dt a_q, Pv = I + dt a_v, Pu = dt a_tau B in one compiled pass (numpy's
            # four passes over the knots' blocks: ~50 us an iteration on anymal jumping)
            euler_velocity_batch(knots, dt, off, a_q, a_v, a_t, Pq, Pv, Pu)
            c[K] = dt
            # let go of the outputs: a next group of this size reuses their block
            # (cpu/outputs.py keeps 3; one more alive made a fresh one every iteration)
            d = a_q = a_v = a_t = None
        return Pq, Pv, Pu, Jq, Jv, c

    def dynamics_blocks(self, q, v, us, second_order=False):
        """(Pq, Pv, Pu) = (dt a_q, I + dt a_v, dt M^-1), each (T, nv, nv), at knots
        0..T-1 from one batched aba_derivatives call: the blocks of f's Jacobians
        (riccati.py); with ``second_order`` also the forward-dynamics tensors
        (a_qq, a_vv, a_qv, a_uq), each (T, nv, nv, nv) output index first, from one
        batched aba_second_order_derivatives call (DDP's lambda^T f_xx terms; f's
        curvature is a's, f being linear in a)."""
        dt = self.dt
        a_q, a_v, Minv = _rbd.aba_derivatives(self.model, q[:-1], v[:-1], us)
        a_q *= dt
        a_v *= dt
        a_v += np.eye(self.nv)
        Minv *= dt
        so = _rbd.aba_second_order_derivatives(self.model, q[:-1], v[:-1], us) \
            if second_order else None
        return a_q, a_v, Minv, so

    def dynamics_derivatives(self, q, v, us, second_order=False):
        """(F_x (T, 2nv, 2nv), F_u (T, 2nv, nv), tensors or None): f's Jacobians at knots
        0..T-1 assembled from dynamics_blocks (x' = (q + dt v', v'), v' = v + dt a)."""
        Pq, Pv, Pu, so = self.dynamics_blocks(q, v, us, second_order)
        T, nv, dt = self.T, self.nv, self.dt
        Fx = np.empty((T, 2 * nv, 2 * nv))
        Fu = np.empty((T, 2 * nv, nv))
        Fx[:, nv:, :nv] = Pq
        Fx[:, nv:, nv:] = Pv
        Fu[:, nv:] = Pu
        Fx[:, :nv, :nv] = np.eye(nv) + dt * Pq
        Fx[:, :nv, nv:] = dt * Pv
        Fu[:, :nv] = dt * Pu
        return Fx, Fu, so


class Kept:
    """One solve's record of its rollouts' contact solves (M^-1, J, Yt, W's factor, the
    forces and qdd of each contact knot: kernels.contact_dynamics.kept_solve), so that
    the derivatives at an accepted trial do not solve its contact dynamics again
    (Crocoddyl's calcDiff reads its calc's data). Per-call state: the solver's, never the Problem's
    or the Model's (threads share those). ``buf`` (T, kept_size) or None (no contact
    knot); ``at``: the (q, v, u) arrays whose solves it holds (the last run's), or None."""

    def __init__(self, prob):
        n = kept_size(prob.nv, prob.ncmax)
        self.buf = np.empty((prob.T, n)) if (prob.kind == CONTACT).any() else None
        self.at = None
