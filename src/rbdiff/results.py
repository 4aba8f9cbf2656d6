"""Result types and reference-frame names of the public functions: below the api layer
and the GPU dispatch, so both can return them without importing each other."""

import dataclasses
from collections import namedtuple
from typing import Any, ClassVar, NamedTuple

import numpy as np

Kinematics = namedtuple("Kinematics", "placements velocities accelerations")
REFERENCE_FRAMES = ("local", "world", "local_world_aligned")
REFERENCE_CODES = {"world": 0, "local": 1, "local_world_aligned": 2}   # kernel codes


def reference_name(reference):
    """``reference`` as one of REFERENCE_FRAMES: those names in any case, or Pinocchio's
    pin.WORLD / pin.LOCAL / pin.LOCAL_WORLD_ALIGNED (an enum whose ``name`` is one of
    them); ValueError otherwise. (The fast paths look the lower-case names up directly;
    this is their general path.)"""
    name = getattr(reference, "name", reference)
    if isinstance(name, str) and name.lower() in REFERENCE_CODES:
        return name.lower()
    raise ValueError(f"reference: expected one of {REFERENCE_FRAMES} (any case, or "
                     f"Pinocchio's pin.WORLD, pin.LOCAL, pin.LOCAL_WORLD_ALIGNED), got "
                     f"{reference!r}")


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


class RNEASecondOrderContraction(NamedTuple):
    """RNEASecondOrderDerivatives contracted with a costate lam over the output index,
    each (nv, nv) or (B, nv, nv): d2tau_dq2[j, k] = sum_i lam_i d^2 tau_i / dq_j dq_k,
    and so on; with P = lam^T tau: d2P/dq2, d2P/dv2, d2P/dq_j dv_k and
    dM_dq[j, k] = sum_i lam_i dM_ij/dq_k = d2P/da_j dq_k."""
    d2tau_dq2: np.ndarray
    d2tau_dv2: np.ndarray
    d2tau_dqdv: np.ndarray
    dM_dq: np.ndarray


class ABASecondOrderContraction(NamedTuple):
    """ABASecondOrderDerivatives contracted with a costate lam over the output index,
    each (nv, nv) or (B, nv, nv): with P = lam^T qdd, d2qdd_dq2 = d2P/dq2,
    d2qdd_dv2 = d2P/dv2, d2qdd_dqdv[j, k] = d2P/dq_j dv_k and
    d2qdd_dtaudq[j, k] = d2P/dtau_j dq_k."""
    d2qdd_dq2: np.ndarray
    d2qdd_dv2: np.ndarray
    d2qdd_dqdv: np.ndarray
    d2qdd_dtaudq: np.ndarray


class ContactDynamicsContraction(NamedTuple):
    """The Hessian blocks of P = lam_a . qdd + lam_f . forces for contact_dynamics, each
    (nv, nv) or (B, nv, nv): d2_dq2 = d2P/dq2 (tangent space), d2_dv2 = d2P/dv2,
    d2_dqdv[j, k] = d2P/dq_j dv_k, d2_dtau_dq[j, k] = d2P/dtau_j dq_k (the tau-tau and
    tau-v blocks are zero)."""
    d2_dq2: np.ndarray
    d2_dv2: np.ndarray
    d2_dqdv: np.ndarray
    d2_dtau_dq: np.ndarray


class ImpulseDynamicsContraction(NamedTuple):
    """The Hessian blocks of P = lam_v . v_after + lam_f . impulses for impulse_dynamics,
    each (nv, nv) or (B, nv, nv): d2_dq2 = d2P/dq2 (tangent space), d2_dqdv[j, k] =
    d2P/dq_j dv_before_k (the v_before-v_before block is zero)."""
    d2_dq2: np.ndarray
    d2_dqdv: np.ndarray


class IntegrateJacobians(NamedTuple):
    """Jacobians of q' = integrate(q, v) on the configuration Lie group, each (nv, nv)
    or (B, nv, nv): dq = d q' / d q (tangent space at q to the one at q'), dv = d q' / d v
    (Pinocchio's dIntegrate ARG0, ARG1)."""
    dq: np.ndarray
    dv: np.ndarray


class DifferenceJacobians(NamedTuple):
    """Jacobians of v = difference(q0, q1), each (nv, nv) or (B, nv, nv): dq0 = d v / d q0,
    dq1 = d v / d q1, in the tangent spaces at q0 and q1 (Pinocchio's dDifference ARG0,
    ARG1)."""
    dq0: np.ndarray
    dq1: np.ndarray


@dataclasses.dataclass(init=False, eq=False, repr=False)
class KinematicsDerivatives:
    """Partial derivatives of every joint's spatial velocity and acceleration: dv_dq,
    dv_dv, da_dq, da_dv, da_da, each (njoints, 6, nv) or (B, njoints, 6, nv);
    [i, :, k] is joint i's [linear, angular] row pair against dof k (row 0, the universe,
    is zero: joints are indexed as in fext). A record of five arrays that unpacks, indexes and
    iterates like a namedtuple; a dataclass (not a tuple), so dask.compute finds the dask
    arrays in it.

    rbd.kinematics_derivatives on one float64 state works as Pinocchio's
    computeForwardKinematicsDerivatives: the call computes the kinematics state only
    (placements, velocities, accelerations, motion subspaces); the five arrays are
    written on the first read of a field, and ``joint(i)`` reads one joint's five (6, nv)
    without them (Pinocchio's getJoint{Velocity,Acceleration}Derivatives)."""

    __slots__ = ("dv_dq", "dv_dv", "da_dq", "da_dv", "da_da", "_state")
    dv_dq: Any
    dv_dv: Any
    da_dq: Any
    da_dv: Any
    da_da: Any
    _fields: ClassVar[tuple] = ("dv_dq", "dv_dv", "da_dq", "da_dv", "da_da")

    def __init__(self, dv_dq, dv_dv, da_dq, da_dv, da_da):
        self.dv_dq, self.dv_dv, self.da_dq, self.da_dv, self.da_da = \
            dv_dq, dv_dv, da_dq, da_dv, da_da
        self._state = None          # written (pending(): the state to write them from)

    def _write(self):
        """Write a pending result's five arrays."""
        expand, _, model, st, code = self._state
        out = expand(model, st, code)
        self.dv_dq, self.dv_dv, self.da_dq, self.da_dv, self.da_da = out
        self._state = None          # the model and the state are not needed any more
        return out

    def __getattr__(self, name):    # only reached for a field not yet written
        k = _INDEX.get(name)
        if k is None or self._state is None:
            raise AttributeError(name)
        return self._write()[k]

    def joint(self, i):
        """Joint i's (1..njoints-1, an int) five derivatives, each (6, nv) ((B, 6, nv) for
        a batch): row i of every field, as a KinematicsDerivatives. Computed alone
        from the kinematics state while the full arrays have not been read; views into
        them once they have."""
        if self._state is not None:
            _, get, model, st, code = self._state
            return get(model, st, _joint_index(i, model.njoints - 1), code)
        i = _joint_index(i, self.dv_dq.shape[-3] - 1)
        return KinematicsDerivatives(*(x[..., i, :, :] for x in self))

    def __len__(self):
        return 5

    def __iter__(self):
        if self._state is not None:
            return iter(self._write())
        return iter((self.dv_dq, self.dv_dv, self.da_dq, self.da_dv, self.da_da))

    def __getitem__(self, k):
        return tuple(self)[k]

    def _asdict(self):
        return dict(zip(self._fields, self))

    def __reduce__(self):           # pickles (dask, multiprocessing) as the five arrays
        return KinematicsDerivatives, tuple(self)

    def __repr__(self):
        if self._state is not None:
            return "KinematicsDerivatives(<kinematics state; fields written on first read>)"
        return "KinematicsDerivatives(" + ", ".join(
            f"{f}=<{type(x).__name__} {getattr(x, 'shape', '?')}>"
            for f, x in zip(self._fields, self)) + ")"


def _joint_index(i, n):
    """i as an int in 1..n, else IndexError."""
    if isinstance(i, bool) or not isinstance(i, (int, np.integer)) or not 1 <= i <= n:
        raise IndexError(f"joint: expected an int 1..{n} (joint 0, the universe, does not "
                         f"move), got {i!r}")
    return int(i)


_new_object = object.__new__
_INDEX = {f: k for k, f in enumerate(KinematicsDerivatives._fields)}


def pending(expand, get, model, st, code):
    """A KinematicsDerivatives whose arrays ``expand(model, st, code)`` writes on first
    read; ``get(model, st, i, code)`` answers joint(i) until then (rbdiff.kinematics)."""
    kd = _new_object(KinematicsDerivatives)
    kd._state = (expand, get, model, st, code)
    return kd


# frame motion

class FrameVelocityDerivatives(NamedTuple):
    """Partial derivatives of a frame's spatial velocity [linear, angular] (in the reference
    asked for) with respect to q (tangent space) and v, each (6, nv) or (B, 6, nv)."""
    dv_dq: np.ndarray
    dv_dv: np.ndarray


class FrameAccelerationDerivatives(NamedTuple):
    """Partial derivatives of a frame's spatial velocity (dv_dq) and spatial or classical
    acceleration (da_dq, da_dv, da_da) [linear, angular] in the reference asked for, each
    (6, nv) or (B, 6, nv)."""
    dv_dq: np.ndarray
    da_dq: np.ndarray
    da_dv: np.ndarray
    da_da: np.ndarray


# centroidal

class CenterOfMassVelocity(NamedTuple):
    """rbd.center_of_mass(model, q, v): com and its velocity, (3,) each (or (B, 3))."""
    com: np.ndarray
    vcom: np.ndarray


class CenterOfMassAcceleration(NamedTuple):
    """rbd.center_of_mass(model, q, v, a): com, its velocity and acceleration, (3,) each
    (or (B, 3))."""
    com: np.ndarray
    vcom: np.ndarray
    acom: np.ndarray


class CentroidalMomentum(NamedTuple):
    """rbd.centroidal_momentum(model, q, v, a): h and dh/dt, (6,) each (or (B, 6))
    [linear, angular] about the centre of mass, world axes."""
    h: np.ndarray
    hdot: np.ndarray


class CentroidalDynamicsDerivatives(NamedTuple):
    """Partial derivatives of the centroidal momentum h(q, v) and of its rate
    hdot(q, v, a), each (6, nv) or (B, 6, nv)."""
    dh_dq: np.ndarray
    dhdot_dq: np.ndarray
    dhdot_dv: np.ndarray
    dhdot_da: np.ndarray


class ContactDynamics(NamedTuple):
    """contact_dynamics' solution: qdd (nv,) and the stacked contact forces (nc,), 3 per
    point contact and 6 per surface contact, each in its contact's reference."""
    qdd: np.ndarray
    forces: np.ndarray


class ContactDynamicsDerivatives(NamedTuple):
    """Partial derivatives of contact_dynamics: dqdd_* (nv, nv), dforces_* (nc, nv)."""
    dqdd_dq: np.ndarray
    dqdd_dv: np.ndarray
    dqdd_dtau: np.ndarray
    dforces_dq: np.ndarray
    dforces_dv: np.ndarray
    dforces_dtau: np.ndarray


class ImpulseDynamics(NamedTuple):
    """impulse_dynamics' solution: v_after (nv,) and the stacked impulses (nc,)."""
    v_after: np.ndarray
    impulses: np.ndarray


class ImpulseDynamicsDerivatives(NamedTuple):
    """Partial derivatives of impulse_dynamics: dvafter_* (nv, nv), dimpulses_* (nc, nv)."""
    dvafter_dq: np.ndarray
    dvafter_dv: np.ndarray
    dimpulses_dq: np.ndarray
    dimpulses_dv: np.ndarray
