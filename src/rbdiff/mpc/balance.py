"""Standing and balancing: the stance equilibrium (the configuration, the joint torques
and the contact forces that hold it), its linearisation as a discrete (A, B) in
coordinates that keep the feet in place, a discrete LQR, and the balance controller
made of them.

- :func:`stance` (model, feet) -> :class:`Stance`: q, u, the feet's forces, the
  contacts. Of the many (u, f) with g(q) = S^T u + J^T f it picks the contact forces of
  least weighted norm that balance the base (tangential components weighted 10x the
  normal ones, moments at 1/(0.1 m)^2): no internal squeeze between the feet, so the
  forces lean as little as they can and the friction margin is near its largest; u
  then follows uniquely from the joint rows. The friction cones (and effort limits)
  are checked.
- :func:`linearise` (stance, dt) -> :class:`Linearisation`: the symplectic Euler step
  of rbdiff.trajopt (v' = v + a dt, q' = integrate(q, v' dt), a from
  rbd.contact_dynamics with zero Baumgarte gains) differentiated analytically
  (rbd.contact_dynamics_derivatives, rbd.integrate_jacobians), restricted to the
  contact-consistent tangent subspace: dq = N zq, v = N zv with N (nv, m) an
  orthonormal basis of the stacked contact Jacobian's null space (m = nv - nc). In the
  full 2 nv tangent coordinates the feet's position and velocity errors are constants
  of the zero-gain contact dynamics: 2 nc unit eigenvalues (the continuous-time zero
  eigenvalues), uncontrollable, and no stabilising Riccati solution exists. In z they
  are gone.
- :func:`lqr` / :func:`dare`: discrete LQR by the structure-preserving doubling
  algorithm (NumPy only; SciPy is not needed).
- :class:`BalanceController`: u = u0 - K z(q, v), the LQR of the reduced (A, B) with a
  cost on the full tangent error (projected onto z) and on the predicted contact
  forces' change; then, per call, the internal forces between the feet (torques that
  move nothing) allocated so that each foot's friction and centre-of-pressure use
  relative to its own load is least.

Forces, Jacobians and contacts are "local_world_aligned": each foot's force (and, for
a surface contact, moment) at its frame's origin on world axes. The floor is taken as
horizontal: world z is every foot's normal (the friction checks, the load weights).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

import rbdiff as rbd
from ..model import layout as L

__all__ = ["Stance", "Linearisation", "BalanceController", "stance", "linearise", "lqr",
           "dare"]

_REFERENCES = ("standing", "half_sitting")
_REF = "local_world_aligned"
_TANGENTIAL_WEIGHT = 10.0       # a tangential newton costs 10x a normal one
_MOMENT_LENGTH = 0.1            # m: a moment of 0.1 N m costs as much as 1 N
_KEEP = object()                # foot_height's default: see stance()
# BalanceController's default costs, in the robot's own units (weight m g, CoM height h
# above the lowest foot): a joint torque of m g h / 16 costs 1; per foot, a tangential
# force of m g costs 20, a normal one 2 (shifting load between feet is cheap), a moment
# of m g h / 10 costs 20 (a centre of pressure that stays near the frame)
TORQUE_SCALE = 1.0 / 16.0
FORCE_WEIGHTS = (20.0, 20.0, 2.0)
MOMENT_SCALE, MOMENT_WEIGHT = 0.1, 20.0


@dataclass(frozen=True, eq=False)
class Stance:
    """A stance equilibrium (:func:`stance`): at q with v = 0, the joint torques u hold
    the robot still on its feet, which push with ``forces``.

    Attributes: ``model``; ``feet`` (frame names); ``kind`` ("3d" or "6d");
    ``contacts`` (the rbd.Contact tuple: "local_world_aligned", zero gains; what
    rbd.contact_dynamics takes); ``q`` (nq,); ``u`` (nu = nv - 6,: the actuated joints'
    torques); ``tau`` (nv,: [0_6, u]); ``forces`` (nfeet, 3 | 6: each foot's force, or
    [force, moment], at its frame origin on world axes); ``foot_positions`` (nfeet,
    3); ``jacobian`` (nc, nv: the stacked contact Jacobian at q, rows in ``contacts``'
    order and reference); ``mu`` (the friction the cones were checked with)."""

    model: object
    feet: tuple
    kind: str
    contacts: tuple
    q: np.ndarray
    u: np.ndarray
    tau: np.ndarray
    forces: np.ndarray
    foot_positions: np.ndarray
    jacobian: np.ndarray
    mu: float

    @property
    def v(self):
        """(nv,) zeros: the equilibrium is at rest."""
        return np.zeros(self.model.nv)


def stance(model, feet, q=None, kind=None, foot_height=_KEEP, mu=0.7, weights=None,
           check=True):
    """The stance equilibrium of ``model`` (a free-flyer root) on ``feet`` (frame names):
    a :class:`Stance` with q, the joint torques u and the feet's forces that hold it at
    rest: g(q) = S^T u + J^T f, qdd = 0.

    ``q`` (nq,): the configuration; None: the model's reference configuration
    "standing" (quadrupeds) or else "half_sitting" (bipeds). ``foot_height`` (m): the
    base is moved vertically so that the lowest foot frame is at this height (the floor
    height, plus a round foot's radius since its frame is its centre: pass
    ``plant.foot_radius.min()`` for a rbdiff.sim.Plant); default 0.0 when q is None,
    and q's base height kept when q is given (None keeps it too). ``kind``: "3d" (point
    feet) or "6d" (soles); None: "6d" for one or two feet, else "3d".

    The choice among the solutions (nc forces, 6 base equations): the forces f of
    least f^T W f with J_b^T f = g_b (the base rows), W diagonal per foot (``weights``,
    3 or 6 numbers; default tangential 10, normal 1, moments 1 / 0.1^2: forces as
    vertical as they can be, moments as small as a 0.1 m lever, no internal squeeze),
    then u = g_j - J_j^T f (the joint rows, unique). ``check``: raise ValueError when
    a normal force is not positive, a force leaves its friction cone (``mu``) or a
    torque exceeds ``model.effort_limits``. rbd.contact_dynamics then confirms qdd = 0
    with these very forces (rbd.DependentContacts for contacts whose forces are not
    unique, e.g. kind="6d" on four legs)."""
    model, feet, dim = _check_model_feet(model, feet, kind)
    kind = "3d" if dim == 3 else "6d"
    if q is None:
        q = _reference(model)
        if foot_height is _KEEP:
            foot_height = 0.0
    else:
        q = _vector(q, model.nq, "q").copy()
    if foot_height is _KEEP:
        foot_height = None
    if not np.all(np.isfinite(q)):
        raise ValueError(f"q: not finite at {np.flatnonzero(~np.isfinite(q)).tolist()}")
    if foot_height is not None:
        h = float(foot_height)
        if not math.isfinite(h):
            raise ValueError(f"foot_height: expected a finite height, got {foot_height!r}")
        dz = h - min(rbd.frame_placement(model, q, f)[2, 3] for f in feet)
        # the free flyer's translation is in its parent frame (the root's placement)
        q[:3] += np.asarray(model.placements[1])[:3, :3].T @ [0.0, 0.0, dz]
    w = _weights(weights, dim)
    contacts = tuple(rbd.Contact(f, kind, _REF) for f in feet)
    J = _jacobian(model, q, contacts)
    g = rbd.gravity(model, q)
    # base rows: the contact wrenches balance gravity's (6 equations on nc forces)
    Jb = J[:, :6]
    Winv = np.tile(1.0 / w, len(feet))
    G = Jb.T @ (Winv[:, None] * Jb)
    s = np.linalg.svd(G, compute_uv=False)
    if s[-1] <= 1e-10 * s[0]:
        raise ValueError(f"stance: {len(feet)} {kind} contacts on {list(feet)} cannot "
                         "hold the base in every direction (the contact wrenches span "
                         f"{int(np.sum(s > 1e-10 * s[0]))} of 6): use more feet, or "
                         "kind='6d' soles")
    f = Winv * (Jb @ np.linalg.solve(G, g[:6]))
    tau = g - J.T @ f
    tau[:6] = 0.0                   # zero up to rounding: the base rows were solved
    forces = f.reshape(len(feet), dim)
    u = tau[6:].copy()
    if check:
        _check_holds(model, feet, forces, u, mu)
    # the contact solver must hold it still with these forces (it refuses dependent
    # contacts, e.g. 6d feet on four legs, whose forces no torque determines)
    qdd, f_cd = rbd.contact_dynamics(model, q, np.zeros(model.nv), tau, contacts)
    scale = max(np.abs(f).max(), 1.0)
    if not (np.abs(qdd).max() <= 1e-8 * scale and np.abs(f_cd - f).max() <= 1e-8 * scale):
        raise RuntimeError(f"stance: rbd.contact_dynamics does not hold the equilibrium "
                           f"(max |qdd| {np.abs(qdd).max():.3g}, force mismatch "
                           f"{np.abs(f_cd - f).max():.3g} N): a bug, please report it")
    pos = np.array([rbd.frame_placement(model, q, c)[:3, 3] for c in feet])
    return Stance(model, feet, kind, contacts, q, u, tau, forces, pos, J, float(mu))


@dataclass(frozen=True, eq=False)
class Linearisation:
    """The stance's discrete dynamics linearised in contact-consistent coordinates
    (:func:`linearise`): z' = A z + B du, z = [zq, zv] (2 m,), du = u - u0 (nu,).

    Attributes: ``stance``; ``dt``; ``N`` (nv, m): an orthonormal basis of the null
    space of the contact Jacobian at q0 (dq = N zq, v = N zv); ``A`` (2m, 2m); ``B``
    (2m, nu); ``P`` (2nv, 2m) = blockdiag(N, N): dx = P z, z = P^T dx for the tangent
    error dx = [difference(q0, q), v]; ``A_full`` (2nv, 2nv), ``B_full`` (2nv, nu): the
    step's Jacobians in the full tangent coordinates (2 nc unit eigenvalues: the feet's
    errors); ``forces_z`` (nc, 2m), ``forces_u`` (nc, nu): the contact forces'
    derivatives (forces = f0 + forces_z z + forces_u du, the stacked ``stance.forces``)."""

    stance: Stance
    dt: float
    N: np.ndarray
    A: np.ndarray
    B: np.ndarray
    A_full: np.ndarray
    B_full: np.ndarray
    forces_z: np.ndarray
    forces_u: np.ndarray
    P: np.ndarray = field(repr=False)

    @property
    def m(self):
        """Dimension of the contact-consistent configuration subspace (nv - nc)."""
        return self.N.shape[1]

    def coordinates(self, q, v):
        """z (2m,) of a state (q (nq,), v (nv,)): the projection P^T [difference(q0,
        q), v] (exact on the subspace; off it, the feet's errors are dropped)."""
        st = self.stance
        q = _vector(q, st.model.nq, "q")
        v = _vector(v, st.model.nv, "v")
        if not (np.all(np.isfinite(q)) and np.all(np.isfinite(v))):
            raise ValueError("(q, v): not finite")
        return np.concatenate([self.N.T @ rbd.difference(st.model, st.q, q),
                               self.N.T @ v])

    def state(self, z):
        """(q, v) = (integrate(q0, N zq), N zv) of z (2m,)."""
        z = _vector(z, 2 * self.m, "z")
        m = self.m
        return (rbd.integrate(self.stance.model, self.stance.q, self.N @ z[:m]),
                self.N @ z[m:])


def linearise(st, dt):
    """Linearise the stance ``st`` (a :class:`Stance`) for a discrete step of ``dt``
    (s): the symplectic Euler step of rbdiff.trajopt, v' = v + a dt, q' = integrate(q,
    v' dt), with a = contact_dynamics(q, v, [0; u], st.contacts) (rigid feet, zero
    Baumgarte gains), at (q0, 0, u0). Returns a :class:`Linearisation`.

    The full tangent Jacobians (Crocoddyl's IntegratedActionModelEuler): with a_q,
    a_v, a_u from contact_dynamics_derivatives and (Jq, Jv) = integrate_jacobians(q0,
    0), Fv = [dt a_q, I + dt a_v], Fq = [Jq, 0] + dt Jv Fv, B = [dt Jv dt a_u; dt a_u].
    At the equilibrium J a_q = J a_v = J a_u = 0 (the contact rows' acceleration stays
    zero and its drift is quadratic in v), so dq, v in null(J) stay there: A = P^T
    A_full P, B = P^T B_full with P = blockdiag(N, N) are exact."""
    if not isinstance(st, Stance):
        raise TypeError(f"linearise: expected a Stance (from stance()), got "
                        f"{type(st).__name__}")
    dt = float(dt)
    if not (dt > 0 and math.isfinite(dt)):
        raise ValueError(f"dt: expected a positive time step, got {dt!r}")
    model, nv = st.model, st.model.nv
    d = rbd.contact_dynamics_derivatives(model, st.q, st.v, st.tau, st.contacts)
    Jq, Jv = rbd.integrate_jacobians(model, st.q, np.zeros(nv))
    a_u = d.dqdd_dtau[:, 6:]
    Fv = np.hstack([dt * d.dqdd_dq, np.eye(nv) + dt * d.dqdd_dv])       # dv'/d[dq, v]
    Fq = np.hstack([Jq, np.zeros((nv, nv))]) + dt * Jv @ Fv            # dq'/d[dq, v]
    A_full = np.vstack([Fq, Fv])
    B_full = np.vstack([dt * dt * Jv @ a_u, dt * a_u])
    N = _null_space(st.jacobian, st.contacts)
    m = N.shape[1]
    P = np.zeros((2 * nv, 2 * m))
    P[:nv, :m] = N
    P[nv:, m:] = N
    A = P.T @ A_full @ P
    B = P.T @ B_full
    forces_z = np.hstack([d.dforces_dq, d.dforces_dv]) @ P
    forces_u = d.dforces_dtau[:, 6:]
    return Linearisation(st, dt, N, A, B, A_full, B_full, forces_z, forces_u, P)


def dare(A, B, Q, R, tol=1e-12, max_iterations=100):
    """The stabilising solution X (n, n) of the discrete algebraic Riccati equation
    X = A^T X A - A^T X B (R + B^T X B)^-1 B^T X A + Q, A (n, n), B (n, k), Q (n, n)
    symmetric >= 0, R (k, k) symmetric > 0, by the structure-preserving doubling
    algorithm (Chu, Fan, Lin & Wang 2004: quadratic convergence, no eigen-solver):

        A+ = A W^-1 A,  G+ = G + A W^-1 G A^T,  H+ = H + A^T H W^-1 A,  W = I + G H,

    from (A, B R^-1 B^T, Q); H tends to X. Raises ValueError when it does not converge
    in ``max_iterations`` doublings (2^100 steps of the Riccati recursion) or the
    closed loop A - B K is not stable: (A, B) not stabilisable, or modes on the unit
    circle that Q does not see (e.g. a stance in full coordinates: use linearise's)."""
    A, B, Q, R = _riccati_inputs(A, B, Q, R)
    with np.errstate(over="ignore", invalid="ignore"):   # divergence is reported below
        X = _doubling(A, B, Q, R, tol, max_iterations)
    if X is not None:
        return X
    raise ValueError(f"dare: no stabilising solution (the doubling did not converge in "
                     f"{max_iterations} iterations): (A, B) is not stabilisable or has "
                     "uncontrollable modes on the unit circle (a stance linearised in full "
                     "coordinates has 2 nc of them: use linearise()'s reduced A, B)")


def _doubling(A, B, Q, R, tol, max_iterations):
    """dare's iteration: X, or None when it does not converge."""
    Ak, Gk, Hk = A.copy(), B @ np.linalg.solve(R, B.T), Q.copy()
    Gk = 0.5 * (Gk + Gk.T)
    eye = np.eye(A.shape[0])
    for _ in range(int(max_iterations)):
        W = eye + Gk @ Hk
        try:
            WA = np.linalg.solve(W, Ak)
            WG = np.linalg.solve(W, Gk)
        except np.linalg.LinAlgError:
            break
        H_next = Hk + Ak.T @ Hk @ WA
        Gk = Gk + Ak @ WG @ Ak.T
        Ak = Ak @ WA
        H_next = 0.5 * (H_next + H_next.T)
        Gk = 0.5 * (Gk + Gk.T)
        if not np.all(np.isfinite(H_next)):
            break
        # converged: H settled and A_k ~ (A - B K)^(2^k) gone (it stays O(1) on modes
        # of the unit circle that B cannot move, where H may still settle)
        done = np.max(np.abs(H_next - Hk)) <= tol * max(1.0, np.max(np.abs(H_next))) \
            and np.max(np.abs(Ak)) <= math.sqrt(tol) * max(1.0, np.max(np.abs(A)))
        Hk = H_next
        if done:
            K = np.linalg.solve(R + B.T @ Hk @ B, B.T @ Hk @ A)
            rho = np.max(np.abs(np.linalg.eigvals(A - B @ K)))
            if rho < 1.0:
                return Hk
            raise ValueError(f"dare: the doubling converged but the closed loop A - B K "
                             f"is not stable (spectral radius {rho:.12g}): (A, B) is not "
                             "stabilisable, or Q leaves modes on the unit circle unseen")
    return None


def lqr(A, B, Q, R, S=None, **kwargs):
    """The discrete LQR gain K (k, n): u = -K x minimises the sum of x^T Q x + u^T R u
    + 2 x^T S u over x' = A x + B u (S (n, k): a cross term, None for none), and A - B K
    is stable. K = (R + B^T X B)^-1 (B^T X A + S^T), X from :func:`dare` (``kwargs`` go
    to it) of (A - B R^-1 S^T, B, Q - S R^-1 S^T, R), the cross term removed by the
    change of control u = w - R^-1 S^T x."""
    A, B, Q, R = _riccati_inputs(A, B, Q, R)
    if S is None:
        X = dare(A, B, Q, R, **kwargs)
        return np.linalg.solve(R + B.T @ X @ B, B.T @ X @ A)
    S = np.asarray(S, dtype=float)
    if S.shape != B.shape or not np.all(np.isfinite(S)):
        raise ValueError(f"lqr: expected a finite cross term S of B's shape {B.shape}, got "
                         f"{S.shape}")
    L0 = np.linalg.solve(R, S.T)                                  # (k, n)
    A0, Q0 = A - B @ L0, Q - S @ L0
    X = dare(A0, B, 0.5 * (Q0 + Q0.T), R, **kwargs)
    return np.linalg.solve(R + B.T @ X @ B, B.T @ X @ A0) + L0


class BalanceController:
    """An LQR balance controller about a stance: u = u0 - K z(q, v) (+ an allocation of
    internal forces), with z the contact-consistent coordinates of :class:`Linearisation`
    and K the discrete LQR gain of its (A, B) for the step ``dt`` (the rate the law runs
    at, e.g. the plant's timestep).

    The LQR's cost per step: dx^T Q dx + du^T R du + df^T W df, dx = [difference(q0,
    q), v] (projected: P^T Q P), du = u - u0, df = forces_z z + forces_u du the contact
    forces' predicted change (a cross term in (z, du)). Defaults, in the robot's own
    units (weight m g, centre-of-mass height h over the lowest foot): ``Q`` base
    position and orientation 100, joint positions 10, velocities 1; ``R`` 1 / (m g h /
    16)^2 per torque; ``force_weights`` (per foot row: 3, or 6 for soles) 20 / (m g)^2
    tangential, 2 / (m g)^2 normal, 20 / (m g h / 10)^2 per moment. ``Q``: (2nv, 2nv),
    2nv weights; ``R``: (nu, nu), nu weights or a number.

    ``allocate`` (default True): the LQR's torques leave the internal forces between
    the feet (the torques Nb with B Nb = 0, which change no motion of the rigid model)
    to the torque cost; each call then adds the Nb w that spreads the predicted loads
    so that every foot's friction and centre-of-pressure use relative to its own
    normal load is least (see __call__). In MuJoCo this keeps a lightly loaded foot
    from rolling over its edge: talos_legs holds lateral pushes of 0.45 m/s with it,
    0.30 without.

    Attributes: ``stance``, ``linearisation``, ``K`` (nu, 2m), ``K_full`` (nu, 2nv) = K
    P^T (the LQR law on dx: u = u0 - K_full dx), ``u0``, ``Q``, ``R``,
    ``force_weights`` (the matrices used). Calling it with (q, v) gives u (nu,), not
    clipped (rbdiff.sim.Plant.step clips)."""

    def __init__(self, st, dt, Q=None, R=None, force_weights=None, allocate=True):
        self.stance = st
        self.linearisation = lin = linearise(st, dt)
        model = st.model
        nv, nu = model.nv, st.u.shape[0]
        if Q is None:
            Q = np.r_[np.full(6, 100.0), np.full(nv - 6, 10.0), np.ones(nv)]
        Q = _weight_matrix(Q, 2 * nv, "Q")
        weight = rbd.total_mass(model) * np.linalg.norm(model.gravity)
        height = rbd.center_of_mass(model, st.q)[2] - st.foot_positions[:, 2].min()
        torque = TORQUE_SCALE * weight * max(height, 1e-3)
        R = _weight_matrix(1.0 / torque ** 2 if R is None else R, nu, "R")
        dim = st.forces.shape[1]
        if force_weights is None:
            force_weights = np.array(FORCE_WEIGHTS) / weight ** 2
            if dim == 6:
                moment = MOMENT_SCALE * weight * max(height, 1e-3)
                force_weights = np.r_[force_weights,
                                      np.full(3, MOMENT_WEIGHT / moment ** 2)]
        wf = _weight_matrix(np.tile(_vector(force_weights, dim, "force_weights"),
                                    len(st.feet)), dim * len(st.feet), "force_weights")
        self.Q, self.R, self.force_weights = Q, R, wf
        Fz, Fu = lin.forces_z, lin.forces_u
        self.K = lqr(lin.A, lin.B, lin.P.T @ Q @ lin.P + Fz.T @ wf @ Fz,
                     R + Fu.T @ wf @ Fu, Fz.T @ wf @ Fu)
        self.K_full = self.K @ lin.P.T
        self.u0 = st.u.copy()
        # the torques that move nothing (B Nb = 0: internal forces between the feet)
        U, sv, Vt = np.linalg.svd(lin.B)
        rank = int(np.sum(sv > 1e-10 * sv[0]))
        self.allocate = bool(allocate) and rank < nu
        self._Nb = Vt[rank:].T.copy()
        self._G = lin.forces_u @ self._Nb           # the forces they change (nc, nu - rank)
        self._RNb = self._Nb.T @ R @ self._Nb
        self._f0 = st.forces.ravel()
        self._dim, self._mu = dim, st.mu
        self._floor = 0.05 * weight / len(st.feet)   # the load the weights divide by, >=
        self._lever = MOMENT_SCALE * max(height, 1e-3)
        # (f_n / (m g / 2))^2: a foot unloads only as far as its own use needs (1 / (m g)^2
        # let talos's unloaded foot slide 6 mm under a 0.3 m/s lateral push, this 3.7)
        self._normal = 4.0 / weight ** 2

    def forces(self, z, u):
        """The contact forces (nc,) the linearisation predicts at z (2m,) under u (nu,)
        (the stacked feet, as ``stance.forces.ravel()``)."""
        lin = self.linearisation
        return self._f0 + lin.forces_z @ z + lin.forces_u @ (u - self.u0)

    def __call__(self, q, v):
        """u (nu,) for the measured q (nq,), v (nv,): u0 - K z(q, v), then (``allocate``)
        plus the internal-force torques Nb w (B Nb = 0: the motion is the LQR's, exactly
        at q0 since dqdd/dtau depends on q alone, to first order about it) that spread
        the feet's predicted loads best: w minimises the sum over feet of (|f_t| / (mu
        f_n))^2 + (|moment| / (lever f_n))^2 + (2 f_n / m g)^2 (each foot's friction and
        centre-of-pressure use relative to its own load; f_n at least 5 % of its share,
        lever = h / 10) plus (Nb w)^T R (Nb w): one least-squares solve, nu - m
        unknowns."""
        z = self.linearisation.coordinates(q, v)
        u = self.u0 - self.K @ z
        if not self.allocate:
            return u
        f = self.forces(z, u).reshape(-1, self._dim)
        fn = np.maximum(f[:, 2], self._floor)
        c = np.empty_like(f)                        # the weights, per force row
        c[:, :2] = 1.0 / (self._mu * fn[:, None]) ** 2
        c[:, 2] = self._normal
        if self._dim == 6:
            c[:, 3:] = 1.0 / (self._lever * fn[:, None]) ** 2
        c = c.ravel()
        G = self._G
        w = np.linalg.solve(G.T @ (c[:, None] * G) + self._RNb, -(G.T @ (c * f.ravel())))
        return u + self._Nb @ w


# ---- helpers ---------------------------------------------------------------------------

def _check_model_feet(model, feet, kind):
    if not isinstance(model, rbd.Model):
        raise TypeError(f"model: expected an rbdiff Model, got {type(model).__name__}")
    if model.njoints < 2 or int(model.joint_types[1]) != L.FREE_FLYER or \
            int(model.idx_v[1]) != 0 or int(model.idx_q[1]) != 0:
        raise ValueError("stance: the model has no free-flyer root (a fixed base needs no "
                         "feet to stand): load it with its floating base, e.g. "
                         "rbd.load_robot(name) or load_urdf(..., free_flyer=True)")
    if isinstance(feet, str):
        feet = (feet,)
    feet = tuple(feet)
    if not feet:
        raise ValueError("feet: expected at least one foot frame name")
    for name in feet:
        if not isinstance(name, str):
            raise TypeError(f"feet: expected frame names, got {name!r}")
        model.get_frame_id(name)        # KeyError naming close matches
    if len(set(feet)) != len(feet):
        raise ValueError(f"feet: a frame is named twice in {list(feet)}")
    if kind is None:
        kind = "6d" if len(feet) <= 2 else "3d"
    k = str(kind).lower()
    if k not in ("3d", "6d"):
        raise ValueError(f"kind: expected '3d' (point feet) or '6d' (soles), got {kind!r}")
    return model, feet, 3 if k == "3d" else 6


def _reference(model):
    refs = model.reference_configurations
    for name in _REFERENCES:
        if name in refs:
            return np.array(refs[name], dtype=float)
    raise ValueError(f"stance: the model has no reference configuration named "
                     f"{' or '.join(map(repr, _REFERENCES))} (it has {sorted(refs)}): "
                     "pass q")


def _vector(x, n, what):
    x = np.asarray(x, dtype=float)
    if x.shape != (n,):
        raise ValueError(f"{what}: expected shape ({n},), got {x.shape}")
    return x


def _weights(weights, dim):
    if weights is None:
        w = [_TANGENTIAL_WEIGHT, _TANGENTIAL_WEIGHT, 1.0]
        if dim == 6:
            w += [1.0 / _MOMENT_LENGTH ** 2] * 3
        return np.array(w)
    w = np.asarray(weights, dtype=float)
    if w.shape != (dim,) or not np.all(np.isfinite(w)) or np.any(w <= 0):
        raise ValueError(f"weights: expected {dim} positive numbers (one per force row of "
                         f"a foot), got {weights!r}")
    return w


def _jacobian(model, q, contacts):
    return np.vstack([rbd.frame_jacobian(model, q, c.frame, c.reference)[:c.dim]
                      for c in contacts])


def _check_holds(model, feet, forces, u, mu):
    for k, f in enumerate(forces):
        if not f[2] > 0:
            raise ValueError(f"stance: foot {feet[k]!r} would pull on the floor (normal "
                             f"force {f[2]:.4g} N): the centre of mass is outside the "
                             "support; pass another q or other feet")
        t = math.hypot(f[0], f[1])
        if t > mu * f[2]:
            raise ValueError(f"stance: foot {feet[k]!r} needs friction {t / f[2]:.3g} > "
                             f"mu = {mu:g} (force {np.round(f[:3], 4).tolist()} N)")
    lim = np.asarray(model.effort_limits, dtype=float)[6:]
    over = np.flatnonzero(np.abs(u) > lim)
    if len(over):
        names = [model.names[int(model.joint_of_dof[6 + i])] for i in over]
        raise ValueError(f"stance: torques {np.round(u[over], 3).tolist()} exceed the "
                         f"effort limits {lim[over].tolist()} at {names}")


def _null_space(J, contacts):
    """N (nv, nv - nc): orthonormal, J N = 0 (J (nc, nv) of full row rank)."""
    nc, nv = J.shape
    U, s, Vt = np.linalg.svd(J)
    if nc > nv or s[-1] <= 1e-10 * s[0]:
        raise rbd.DependentContacts(
            f"linearise: the {nc} contact rows of {[c.frame for c in contacts]} are "
            "linearly dependent: the feet do not fix independent directions")
    return Vt[nc:].T.copy()


def _weight_matrix(W, n, what):
    W = np.asarray(W, dtype=float)
    if W.ndim == 0:
        W = np.full(n, float(W))
    if W.shape == (n,):
        W = np.diag(W)
    if W.shape != (n, n) or not np.all(np.isfinite(W)):
        raise ValueError(f"{what}: expected a number, {n} weights or an ({n}, {n}) matrix, "
                         f"got shape {W.shape}")
    return W


def _riccati_inputs(A, B, Q, R):
    A, B = np.asarray(A, dtype=float), np.asarray(B, dtype=float)
    Q, R = np.asarray(Q, dtype=float), np.asarray(R, dtype=float)
    n = A.shape[0] if A.ndim == 2 else -1
    if A.shape != (n, n) or B.ndim != 2 or B.shape[0] != n or Q.shape != (n, n) or \
            R.shape != (B.shape[1],) * 2:
        raise ValueError(f"lqr/dare: expected A (n, n), B (n, k), Q (n, n), R (k, k), got "
                         f"{A.shape}, {B.shape}, {Q.shape}, {R.shape}")
    if not all(np.all(np.isfinite(x)) for x in (A, B, Q, R)):
        raise ValueError("lqr/dare: A, B, Q, R must be finite")
    return A, B, 0.5 * (Q + Q.T), 0.5 * (R + R.T)
