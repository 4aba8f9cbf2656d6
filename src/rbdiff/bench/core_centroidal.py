"""bench-core pairs of the centre of mass, centroidal momentum and energy functions
(rbdiff.centroidal) against the Pinocchio call that computes the same thing from q (and
v, a): each Pinocchio function named here runs its own kinematics (bench/core.py's
PAIR_MODULES convention: ``calls(model, pm, q, v, a)``). Rows whose rbdiff result is a
tuple compare its last field (the one that needs all the others) through a closure;
Pinocchio's side reads the same field from its Data."""

from functools import partial

import numpy as np

import rbdiff as rbd

try:
    import pinocchio as pin
except ImportError:
    pin = None


def _ours(model, q, v, a):
    def center_of_mass_va():
        return rbd.center_of_mass(model, q, v, a).acom

    def centroidal_momentum_a():
        return rbd.centroidal_momentum(model, q, v, a).hdot

    def centroidal_dynamics_derivatives():
        return tuple(rbd.centroidal_dynamics_derivatives(model, q, v, a))

    return {"total_mass": partial(rbd.total_mass, model),
            "center_of_mass": partial(rbd.center_of_mass, model, q),
            "center_of_mass(v, a)": center_of_mass_va,
            "com_jacobian": partial(rbd.com_jacobian, model, q),
            "centroidal_momentum_matrix": partial(rbd.centroidal_momentum_matrix, model, q),
            "centroidal_momentum": partial(rbd.centroidal_momentum, model, q, v),
            "centroidal_momentum(a)": centroidal_momentum_a,
            "centroidal_dynamics_derivatives": centroidal_dynamics_derivatives,
            "kinetic_energy": partial(rbd.kinetic_energy, model, q, v),
            "potential_energy": partial(rbd.potential_energy, model, q)}


def _theirs(pm, q, v, a):
    pd = pm.createData()

    def center_of_mass_va():
        pin.centerOfMass(pm, pd, q, v, a)
        return pd.acom[0]

    def centroidal_momentum_a():
        pin.computeCentroidalMomentumTimeVariation(pm, pd, q, v, a)
        return pd.dhg

    return {"total_mass": (partial(pin.computeTotalMass, pm), np.array),
            "center_of_mass": (partial(pin.centerOfMass, pm, pd, q), np.array),
            "center_of_mass(v, a)": (center_of_mass_va, np.array),
            "com_jacobian": (partial(pin.jacobianCenterOfMass, pm, pd, q), np.array),
            "centroidal_momentum_matrix": (partial(pin.computeCentroidalMap, pm, pd, q),
                                           np.array),
            "centroidal_momentum": (partial(pin.computeCentroidalMomentum, pm, pd, q, v),
                                    lambda f: f.vector.copy()),
            "centroidal_momentum(a)": (centroidal_momentum_a, lambda f: f.vector.copy()),
            "centroidal_dynamics_derivatives": (
                partial(pin.computeCentroidalDynamicsDerivatives, pm, pd, q, v, a),
                lambda r: np.array([np.array(x) for x in r])),
            "kinetic_energy": (partial(pin.computeKineticEnergy, pm, pd, q, v), np.array),
            "potential_energy": (partial(pin.computePotentialEnergy, pm, pd, q), np.array)}


def calls(model, pm, q, v, a):
    """{name: (rbdiff call, Pinocchio call or None, post)}: post turns the Pinocchio
    call's result into rbdiff's array."""
    ours = _ours(model, q, v, a)
    if pm is None:
        return {k: (f, None, None) for k, f in ours.items()}
    theirs = _theirs(pm, q, v, a)
    return {k: (ours[k], *theirs[k]) for k in ours}
