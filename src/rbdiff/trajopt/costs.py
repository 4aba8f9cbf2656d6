"""Cost terms of a trajectory-optimisation problem, Crocoddyl's conventions: a term is
0.5 w ||r||^2 of a residual r, with the Gauss-Newton Hessian w J^T J of its residual
Jacobian J (Crocoddyl's ActivationModelQuad; exact for the linear residuals below, the
frame translation's curvature left out as in Crocoddyl); with per-coordinate
``weights`` a, 0.5 w sum_i a_i r_i^2 (ActivationModelWeightedQuad). More terms (centre
of mass, frame placement and velocity, contact forces, friction and wrench cones, state
bounds) in residuals.py. A term whose residual is not linear may also have
``curvature(model, q)`` (K, nv, nv): w sum_i r_i d2 r_i/dq2, what DDP adds to make its
cost Hessian exact (Newton's method needs both curvatures: the dynamics' alone made DDP
converge more slowly than iLQR); its ``accumulate`` then takes ``curvature`` (None or
(T+1, nv, nv)) and adds scale times it there at its knots from the kinematics its
derivatives computed (no second frame pass).

Every term is evaluated on a whole trajectory at once: ``value(model, q, v, u)`` with
q (K, nq), v (K, nv), u (K, nu) or None (terminal knots) returns the costs (K,);
``accumulate(model, q, v, u, out, knots, scale)`` adds scale times its derivatives at
the K knots to the problem's arrays out = (l_x (T+1, 2nv), l_u (T, nu), l_xx, l_uu,
l_xu or None) at rows ``knots`` (K,) and returns the costs (K,) (Problem's path: no
per-term arrays, the Gauss-Newton products in one compiled kernel over each residual
row's nonzero columns, kernels/trajopt_costs.gauss_newton_add); ``derivatives(...)``
returns them as arrays of their own: (cost (K,), l_x (K, 2nv), l_u (K, nu) or None,
l_xx (K, 2nv, 2nv), l_uu (K, nu, nu) or None); x is the tangent (dq, dv); the frame
functions run batched.
"""

from __future__ import annotations

import numpy as np

import rbdiff as _rbd
from ..cpu.trajopt_costs import (diagonal_batch, gauss_newton_batch,
                                 translation_curvature_batch)
from . import calls
from ..kinematics import _frame_id as _frame_index
from ..model.layout import FREE_FLYER, SPHERICAL


_NO_U = np.zeros((1, 1, 0))      # Ru / l_xu of a term without control columns
_ONES3 = np.ones(3)


_RELATIONS = {}
_ONES = {}


def ones(n):
    """np.ones(n) made once per n and shared (the activations' a'' of unit weights,
    which no kernel writes; writeable, so the kernels see one array type)."""
    a = _ONES.get(n)
    if a is None:
        a = _ONES[n] = np.ones(n)
    return a


def _reference_rows(x, K):
    """A reference's rows (K, n) C-contiguous: x stacked per knot (K, n) or one (n,)
    broadcast."""
    return np.ascontiguousarray(x if x.ndim == 2 else np.broadcast_to(x, (K, x.shape[-1])))


def joint_relation(model):
    """(nv, nv) int64, the dofs' relation translation_curvature_add reads: 1 where dof j's
    joint is a strict ancestor of dof c's, 2 where they share a joint, 0 otherwise
    (cached per model: one pass over the joints' parents)."""
    key = id(model)
    hit = _RELATIONS.get(key)
    if hit is not None and hit[0] is model:
        return hit[1]
    nv, par = model.nv, model.parents
    rel = np.zeros((nv, nv), np.int64)
    for i in range(1, model.njoints):
        ci = slice(model.idx_v[i], model.idx_v[i] + model.nvs[i])
        rel[ci, ci] = 2
        a = par[i]
        while a > 0:
            rel[model.idx_v[a]:model.idx_v[a] + model.nvs[a], ci] = 1
            a = par[a]
    _RELATIONS[key] = (model, rel)
    return rel


def _rows(A):
    """a'' as the kernels take it: (K, nr), or (1, nr) for one row shared by every knot
    (a weight vector: no (K, nr) copy)."""
    A = np.ascontiguousarray(A, dtype=float)
    return A.reshape(1, -1) if A.ndim == 1 else A


def per_knot(scale):
    """Whether ``scale`` is one number a knot ((K,)) rather than one number (np.ndim's
    answer without its dispatch: ~0.6 us a call, dozens of calls an iteration)."""
    return isinstance(scale, np.ndarray) and scale.ndim > 0


def _per_knot(scale, Ar, Arr):
    """(scale, a', a'') as the kernels take them; a scale (K,) per knot (a group whose
    knots scale differently: the running ones by dt, the impulse and terminal ones not)
    folded into a' and a'' (the kernels' products scale a' and scale a'' are the same
    numbers: s a' and 1.0 (s a'') round alike)."""
    Ar = np.ascontiguousarray(Ar, dtype=float)
    if not per_knot(scale):
        return float(scale), Ar, _rows(Arr)
    s = np.asarray(scale, dtype=float)[:, None]
    return 1.0, s * Ar, s * _rows(Arr)


def add_gauss_newton(out, knots, scale, Ar, Arr, Rx, cx=0, Ru=None):
    """Add scale R^T a' and scale R^T diag(a'') R of the residual Jacobians Rx (K, nr, mx)
    (x's columns cx..cx+mx) and Ru (K, nr, nu) or None at rows ``knots`` of out = (l_x,
    l_u, l_xx, l_uu, l_xu or None) (kernels/trajopt_costs.gauss_newton_add); Ar (K, nr)
    the activation's a', Arr its a'' diagonal ((K, nr) or (nr,))."""
    lx, lu, lxx, luu, lxu = out
    scale, Ar, Arr = _per_knot(scale, Ar, Arr)
    gauss_newton_batch(np.ascontiguousarray(knots, dtype=np.int64), scale, Ar,
                       Arr, np.ascontiguousarray(Rx, dtype=float), int(cx),
                       _NO_U if Ru is None else np.ascontiguousarray(Ru, dtype=float),
                       lx, lu, lxx, luu, _NO_U if lxu is None else lxu)


def add_diagonal(out, knots, scale, Ar, Arr, cx, control=False):
    """The same for a residual whose Jacobian is the identity on x's columns cx..cx+n
    (or the controls' with ``control``): l += scale a', the diagonal += scale a''
    (kernels/trajopt_costs.diagonal_add)."""
    lx, lu, lxx, luu, _ = out
    g, H = (lu, luu) if control else (lx, lxx)
    scale, Ar, Arr = _per_knot(scale, Ar, Arr)
    diagonal_batch(np.ascontiguousarray(knots, dtype=np.int64), scale, Ar, Arr, int(cx),
                   g, H)


def derivative_arrays(K, nx, nu):
    """Zero (l_x, l_u, l_xx, l_uu, l_xu) of K knots."""
    return (np.zeros((K, nx)), np.zeros((K, nu)), np.zeros((K, nx, nx)),
            np.zeros((K, nu, nu)), np.zeros((K, nx, nu)))


class Term:
    """What every cost term shares: ``derivatives`` from its ``accumulate``."""

    reads_forces = False
    reads_control = False
    # every use of ``weight`` is elementwise per knot: knots whose terms differ only in
    # it (and their targets) share a group, their weights stacked (K,) (Problem)
    weight_per_knot = False

    def key(self):
        """What knots sharing this term share: its group_key and its weight (a term of
        its own where it has no group_key)."""
        if not self.weight_per_knot:
            return ("id", id(self))
        return self.group_key() + (self.weight,)

    def derivatives(self, model, q, v, u, *forces):
        """(cost (K,), l_x (K, 2nv), l_u (K, nu) or None, l_xx (K, 2nv, 2nv), l_uu or None)
        at the K knots (and l_xu (K, 2nv, nu) or None for a force term): ``accumulate``
        into arrays of their own. l_u, l_uu, l_xu are None for a term that does not read
        the control or at a terminal knot (u None)."""
        K = q.shape[0]
        nu = 0 if u is None else u.shape[1]
        out = derivative_arrays(K, 2 * model.nv, nu)
        c = self.accumulate(model, q, v, u, *forces, out=out, knots=np.arange(K),
                            scale=1.0)
        lx, lu, lxx, luu, lxu = out
        if u is None or not self.reads_control:
            lu = luu = lxu = None
        return (c, lx, lu, lxx, luu) + ((lxu,) if self.reads_forces else ())


def _lie(model):
    """Whether a joint's configuration space is not a vector space (its tangent maps
    are not the identity): spherical joints and free flyers."""
    return any(int(model.joint_types[i]) in (SPHERICAL, FREE_FLYER)
               for i in range(1, model.njoints))


def _weight(w):
    w = float(w)
    if not (np.isfinite(w) and w >= 0):
        raise ValueError(f"weight: expected a finite number >= 0, got {w}")
    return w


def _weights(name, a, n):
    """Per-coordinate activation weights (n,) >= 0 or None (all ones)."""
    if a is None:
        return None
    a = np.asarray(a, dtype=float)
    if a.shape != (n,) or not (np.isfinite(a).all() and (a >= 0).all()):
        raise ValueError(f"{name}: expected {n} finite weights >= 0, got shape {a.shape}")
    return a


def _finite(name, x, shape):
    x = np.asarray(x, dtype=float)
    if x.shape != shape or not np.isfinite(x).all():
        raise ValueError(f"{name}: expected finite values of shape {shape}, got "
                         f"{x.shape}")
    return x


def _hashable(a):
    return None if a is None else tuple(np.ravel(a).tolist())


def _copy(term):
    out = object.__new__(type(term))
    out.__dict__.update(term.__dict__)
    return out


def _stacked(term, terms, name):
    """A copy of ``term`` whose attribute ``name`` holds the knots' values of ``terms``
    stacked (K, ...): one term for knots that share everything else (their key)."""
    out = _copy(term)
    setattr(out, name, np.stack([getattr(t, name) for t in terms]))
    out._stacked_from = (name, list(terms))     # Problem.restack refreshes it in place
    return out


class FrameTranslation(Term):
    """0.5 w ||p_frame(q) - target||^2: the frame's origin in the world (Crocoddyl's
    ResidualModelFrameTranslation; its Jacobian is the LOCAL_WORLD_ALIGNED linear rows)."""

    def __init__(self, frame, target, weight=1.0):
        self.frame = frame
        self.target = _finite("target", target, (3,))
        self.weight = _weight(weight)

    def check(self, model, nu=None):
        model.frames[_frame_index(model, self.frame)]      # KeyError naming the frame

    weight_per_knot = True

    def group_key(self):
        return (type(self), self.frame)

    def stacked(self, terms):
        return _stacked(self, terms, "target")

    def value(self, model, q, v, u):
        fid = _frame_index(model, self.frame)
        r = calls.frame_placement(model, q, fid)[:, :3, 3] - self.target
        return 0.5 * self.weight * np.einsum("ki,ki->k", r, r)

    def accumulate(self, model, q, v, u, out, knots, scale, curvature=None):
        fid = _frame_index(model, self.frame)
        p = calls.frame_placement(model, q, fid)[:, :3, 3]
        J = calls.frame_jacobian(model, q, fid, "local_world_aligned")
        r = p - self.target
        add_gauss_newton(out, knots, scale * self.weight, r, _ONES3, J[:, :3, :])
        if curvature is not None:
            self._curvature_add(knots, scale, r, J, curvature, model)
        return 0.5 * self.weight * np.einsum("ki,ki->k", r, r)

    def _curvature_add(self, knots, scale, r, J, H, model):
        w = scale * self.weight
        if per_knot(w):                 # per knot: folded into r (the kernel's scale r)
            w, r = 1.0, w[:, None] * r
        translation_curvature_batch(np.ascontiguousarray(knots, dtype=np.int64),
                                    float(w), np.ascontiguousarray(r),
                                    np.ascontiguousarray(J), joint_relation(model), H)

    def curvature(self, model, q):
        """w sum_i r_i d2p_i/dq2 (K, nv, nv) in tangent-space q, any tree (free flyer,
        spherical): d2p/dq_j dq_k = omega_j x Jp_k for j's joint a strict ancestor of
        k's, its symmetrised half-sum within a joint, omega the world-frame columns'
        rotation part (the Jacobian's angular rows) and Jp the linear rows; zero off the
        frame's support (its Jacobian columns are). The math: kernels/trajopt_costs.py's
        translation_curvature_add."""
        r = _rbd.frame_placement(model, q, self.frame)[:, :3, 3] - self.target
        J = _rbd.frame_jacobian(model, q, self.frame, "local_world_aligned")
        H = np.zeros((q.shape[0], model.nv, model.nv))
        self._curvature_add(np.arange(q.shape[0]), 1.0, r, J, H, model)
        return H


class StateRegularization(Term):
    """0.5 w ||x (-) x_ref||^2 with x (-) x_ref = (difference(q_ref, q), v - v_ref)
    (Crocoddyl's ResidualModelState); x_ref (nq + nv,); ``weights`` (2 nv,) optional
    per-coordinate weights a: 0.5 w sum_i a_i r_i^2 (ActivationModelWeightedQuad). Its
    Jacobian is blockdiag(d difference / d q, I) (difference_jacobians; Crocoddyl's
    Jdiff), the identity for vector-space joints (then not computed)."""

    def __init__(self, x_ref, weight=1.0, weights=None):
        self.x_ref = np.asarray(x_ref, dtype=float)
        self.weight = _weight(weight)
        self.weights = weights

    def check(self, model, nu=None):
        self.x_ref = _finite("StateRegularization x_ref", self.x_ref,
                             (model.nq + model.nv,))
        self.weights = _weights("StateRegularization weights", self.weights, 2 * model.nv)

    weight_per_knot = True

    def group_key(self):
        """What knots sharing this term share (all but x_ref and the weight: stacked per
        knot)."""
        return (type(self), _hashable(self.weights))

    def stacked(self, terms):
        """One term for the knots of ``terms`` (same key): x_ref (K, nq + nv)."""
        return _stacked(self, terms, "x_ref")

    def residual(self, model, q, v):
        return self._residual(model, q, v)[0]

    def _residual(self, model, q, v):
        """(r (K, 2nv), the reference configurations (K, nq) it was taken from)."""
        K, nq, nv = q.shape[0], model.nq, model.nv
        r = np.empty((K, 2 * nv))
        qref = _reference_rows(self.x_ref[..., :nq], K)
        r[:, :nv] = calls.difference(model, qref, np.ascontiguousarray(q))
        r[:, nv:] = v - self.x_ref[..., nq:]
        return r, qref

    def value(self, model, q, v, u):
        r = self.residual(model, q, v)
        a = r if self.weights is None else r * self.weights
        return 0.5 * self.weight * np.einsum("ki,ki->k", a, r)

    def accumulate(self, model, q, v, u, out, knots, scale):
        nv = model.nv
        r, qref = self._residual(model, q, v)
        w = scale * self.weight
        a = ones(2 * nv) if self.weights is None else self.weights
        Ar = a * r
        add_diagonal(out, knots, w, Ar[:, nv:], a[nv:], nv)
        if _lie(model):
            Rq = calls.difference_jacobians(model, qref, np.ascontiguousarray(q)).dq1
            add_gauss_newton(out, knots, w, Ar[:, :nv], a[:nv], Rq)
        else:
            add_diagonal(out, knots, w, Ar[:, :nv], a[:nv], 0)
        return 0.5 * self.weight * np.einsum("ki,ki->k", Ar, r)


class ControlRegularization(Term):
    """0.5 w ||u - u_ref||^2 (Crocoddyl's ResidualModelControl; u_ref defaults to 0);
    u the problem's controls (nu: the actuated joints' torques); ``weights`` (nu,)
    optional per-coordinate weights (ActivationModelWeightedQuad)."""

    reads_control = True

    def __init__(self, weight=1.0, u_ref=None, weights=None):
        self.weight = _weight(weight)
        self.u_ref = None if u_ref is None else np.asarray(u_ref, dtype=float)
        self.weights = weights

    def check(self, model, nu=None):
        n = model.nv if nu is None else nu
        if self.u_ref is not None:
            self.u_ref = _finite("ControlRegularization u_ref", self.u_ref, (n,))
        self.weights = _weights("ControlRegularization weights", self.weights, n)

    weight_per_knot = True

    def group_key(self):
        return (type(self), _hashable(self.weights), self.u_ref is None)

    def stacked(self, terms):
        return _copy(self) if self.u_ref is None else _stacked(self, terms, "u_ref")

    def value(self, model, q, v, u):
        r = u if self.u_ref is None else u - self.u_ref
        a = r if self.weights is None else r * self.weights
        return 0.5 * self.weight * np.einsum("ki,ki->k", a, r)

    def accumulate(self, model, q, v, u, out, knots, scale):
        if u is None:                   # a terminal knot: no control
            return np.zeros(q.shape[0])
        r = u if self.u_ref is None else u - self.u_ref
        a = ones(u.shape[1]) if self.weights is None else self.weights
        Ar = a * r
        add_diagonal(out, knots, scale * self.weight, Ar, a, 0, control=True)
        return 0.5 * self.weight * np.einsum("ki,ki->k", Ar, r)
