"""Armature (rotor inertia), as Pinocchio's ``model.armature``: a constant inertia per
velocity coordinate added to M(q)'s diagonal. RNEA adds armature_k a_k to tau_k, every
algorithm that forms M adds it to the diagonal, and the articulated-body algorithms add
it to D = S^T I^A S before inverting (so aba, minverse and their derivatives see
M + diag(armature)). dM/dq and the second-order tensors do not change."""

from ..model.layout import MF_ARM, MI_IV, MI_NV
from .jit import helper


@helper
def armature_torque(mi, mf, a, tau):
    """tau_k += armature_k a_k."""
    for i in range(1, mi[0, 0] + 1):
        iv = mi[i, MI_IV]
        for k in range(mi[i, MI_NV]):
            tau[iv + k] += mf[i, MF_ARM + k] * a[iv + k]


@helper
def armature_diagonal(mi, mf, M):
    """M_kk += armature_k."""
    for i in range(1, mi[0, 0] + 1):
        iv = mi[i, MI_IV]
        for k in range(mi[i, MI_NV]):
            M[iv + k, iv + k] += mf[i, MF_ARM + k]
