"""Entry points of the trajectory-optimisation kernels (kernels/trajopt_costs.py).
No math."""

import numpy as np

from ..kernels.jit import entry
from ..kernels.trajopt_costs import (diagonal_add, euler_configuration_rows,
                                     euler_velocity_rows,
                                     gauss_newton_add, placement_log,
                                     translation_curvature_add)


@entry
def placement_log_batch(M, ref, r, Jl):
    """r (K, 6), Jl (K, 6, 6) of the placements M (K, 4, 4) relative to the references
    ref (K, 4, 4) or (1, 4, 4) (one for all); the caller checks shapes and finiteness."""
    placement_log(M, ref, r, Jl)


@entry
def gauss_newton_batch(knots, scale, Ar, Arr, Rx, cx, Ru, lx, lu, lxx, luu, lxu):
    """kernels.trajopt_costs.gauss_newton_add on its own scratch; the caller (residuals.py)
    checks shapes: knots (K,) within the outputs' first axis, Ar, Arr (K, nr), Rx (K, nr,
    mx) with cx + mx <= lx.shape[1], Ru (K, nr, mu), lxu (T, 2nv, mu) where mu > 0."""
    act = np.empty(Ar.shape[1], np.int64)
    nz = np.empty(Rx.shape[2] + Ru.shape[2], np.int64)
    gauss_newton_add(knots, scale, Ar, Arr, Rx, cx, Ru, lx, lu, lxx, luu, lxu, act, nz)


@entry
def diagonal_batch(knots, scale, Ar, Arr, c0, g, H):
    """kernels.trajopt_costs.diagonal_add; the caller (costs.py) checks shapes: knots (K,)
    within g's and H's first axis, Ar (K, n), Arr (K, n) or (1, n), c0 + n <= g.shape[1]."""
    diagonal_add(knots, scale, Ar, Arr, c0, g, H)


@entry
def euler_velocity_batch(knots, dt, off, a_q, a_v, a_t, Pq, Pv, Pu):
    """kernels.trajopt_costs.euler_velocity_rows; the caller (problem.py) checks shapes:
    knots (K,) within Pq's first axis, a_q, a_v, a_t (K, nv, nv), Pq, Pv (T, nv, nv),
    Pu (T, nv, nu), off = nv - nu."""
    euler_velocity_rows(knots, dt, off, a_q, a_v, a_t, Pq, Pv, Pu)


@entry
def euler_rows_batch(knots, Jq, Jv, dt, Fx, Fu):
    """kernels.trajopt_costs.euler_configuration_rows on its own scratch; the caller
    (problem.py) checks shapes: knots (K,) within Fx's first axis, Jq, Jv (K, nv, nv),
    Fx (T, 2nv, 2nv), Fu (T, 2nv, nu)."""
    nz = np.empty(Jq.shape[1], np.int64)
    euler_configuration_rows(knots, Jq, Jv, dt, Fx, Fu, nz)


@entry
def translation_curvature_batch(knots, scale, r, J, rel, H):
    """kernels.trajopt_costs.translation_curvature_add; the caller (costs.py) checks
    shapes: knots (K,) within H's first axis, r (K, 3), J (K, 6, nv), rel (nv, nv)
    int64, H (T, nv, nv)."""
    translation_curvature_add(knots, scale, r, J, rel, H)
