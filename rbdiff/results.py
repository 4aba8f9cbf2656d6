"""Result types and reference-frame names of the public functions: below the api layer
and the GPU dispatch, so both can return them without importing each other."""

from collections import namedtuple
from typing import NamedTuple

import numpy as np

Kinematics = namedtuple("Kinematics", "placements velocities accelerations")
REFERENCE_FRAMES = ("local", "world", "local_world_aligned")
REFERENCE_CODES = {"world": 0, "local": 1, "local_world_aligned": 2}   # kernel codes


class RNEADerivatives(NamedTuple):
    """Partial derivatives of tau = ID(q, v, a, fext), each (nv, nv) or (B, nv, nv)."""
    dtau_dq: np.ndarray
    dtau_dv: np.ndarray
    dtau_da: np.ndarray


class ABADerivatives(NamedTuple):
    """Partial derivatives of qdd = FD(q, v, tau, fext), each (nv, nv) or (B, nv, nv)."""
    dqdd_dq: np.ndarray
    dqdd_dv: np.ndarray
    dqdd_dtau: np.ndarray


class RNEASecondOrderDerivatives(NamedTuple):
    """Second-order partial derivatives of tau = ID(q, v, a, fext), each (nv, nv, nv) or
    (B, nv, nv, nv), output index first: d2tau_dq2[i, j, k] = d^2 tau_i / dq_j dq_k,
    d2tau_dv2[i, j, k] = d^2 tau_i / dv_j dv_k, d2tau_dqdv[i, j, k] = d^2 tau_i / dq_j dv_k,
    dM_dq[i, j, k] = d M_ij / dq_k."""
    d2tau_dq2: np.ndarray
    d2tau_dv2: np.ndarray
    d2tau_dqdv: np.ndarray
    dM_dq: np.ndarray


class ABASecondOrderDerivatives(NamedTuple):
    """Second-order partial derivatives of qdd = FD(q, v, tau, fext), each (nv, nv, nv)
    or (B, nv, nv, nv), output index first: d2qdd_dq2[i, j, k] = d^2 qdd_i / dq_j dq_k,
    d2qdd_dv2, d2qdd_dqdv[i, j, k] = d^2 qdd_i / dq_j dv_k,
    d2qdd_dtaudq[i, j, k] = d^2 qdd_i / dtau_j dq_k = d Minv_ij / dq_k."""
    d2qdd_dq2: np.ndarray
    d2qdd_dv2: np.ndarray
    d2qdd_dqdv: np.ndarray
    d2qdd_dtaudq: np.ndarray


class KinematicsDerivatives(NamedTuple):
    """Partial derivatives of every joint's spatial velocity and acceleration, each
    (njoints, 6, nv) or (B, njoints, 6, nv); [i - 1, :, k] is joint i's [linear, angular]
    row pair against dof k (the universe, joint 0, is left out as in fext)."""
    dv_dq: np.ndarray
    dv_dv: np.ndarray
    da_dq: np.ndarray
    da_dv: np.ndarray
    da_da: np.ndarray
