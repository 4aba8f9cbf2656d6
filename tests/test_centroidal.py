"""rbd.total_mass, center_of_mass, com_jacobian, centroidal_momentum_matrix,
centroidal_momentum, centroidal_dynamics_derivatives, kinetic_energy and potential_energy
(kernels/centroidal.py, kernels/centroidal_derivatives.py) against Pinocchio 4.1, against
the complex step through rbdiff's own value functions on the manifold, batched (bit-equal
to a loop of single calls, serial and parallel), in float32, and on bad input."""

import numpy as np
import pinocchio as pin
import pytest

import rbdiff as rbd
from conftest import full, random_state, rel_err, robot_pair, tree_pair
from rbdiff.cpu import policy
from rbdiff.results import (CenterOfMassAcceleration, CenterOfMassVelocity,
                            CentroidalDynamicsDerivatives, CentroidalMomentum)

TOL = 1e-10
# random trees (every joint type; even seeds floating), then the robots the issue names
PAIRS = [("tree", 0, True), ("tree", 1, False), ("robot", "solo12", True),
         ("robot", "talos_full_v2", True), ("robot", "panda", False),
         ("robot", "anymal", True)]
_CACHE = {}


def _pair(key):
    if key not in _CACHE:
        kind, a, ff = key
        _CACHE[key] = robot_pair(a, ff) if kind == "robot" else tree_pair(a, 8, ff)
    return _CACHE[key]


@pytest.fixture(params=PAIRS, ids=lambda k: f"{k[1]}{'+ff' if k[2] else ''}")
def pair(request):
    return _pair(request.param)


def _pin_values(pm, q, v, a):
    d = pm.createData()
    out = {"mass": pin.computeTotalMass(pm)}
    pin.centerOfMass(pm, d, q, v, a)
    out["com"], out["vcom"], out["acom"] = (np.array(x[0]) for x in (d.com, d.vcom, d.acom))
    out["Jcom"] = np.array(pin.jacobianCenterOfMass(pm, pm.createData(), q))
    out["Ag"] = np.array(pin.computeCentroidalMap(pm, pm.createData(), q))
    pin.computeCentroidalMomentumTimeVariation(pm, d, q, v, a)
    out["h"], out["hdot"] = d.hg.vector.copy(), d.dhg.vector.copy()
    out["ke"] = pin.computeKineticEnergy(pm, pm.createData(), q, v)
    out["pe"] = pin.computePotentialEnergy(pm, pm.createData(), q)
    return out


def test_values_match_pinocchio(pair):
    model, pm = pair
    q, v, a = random_state(pm, np.random.default_rng(3))
    ref = _pin_values(pm, q, v, a)
    assert rel_err(rbd.total_mass(model), ref["mass"]) < TOL
    com = rbd.center_of_mass(model, q)
    assert com.shape == (3,) and rel_err(com, ref["com"]) < TOL
    cv = rbd.center_of_mass(model, q, v)
    assert isinstance(cv, CenterOfMassVelocity)
    assert rel_err(cv.com, ref["com"]) < TOL and rel_err(cv.vcom, ref["vcom"]) < TOL
    ca = rbd.center_of_mass(model, q, v, a)
    assert isinstance(ca, CenterOfMassAcceleration)
    for x, k in zip(ca, ("com", "vcom", "acom")):
        assert x.shape == (3,) and rel_err(x, ref[k]) < TOL, k
    J = rbd.com_jacobian(model, q)
    assert J.shape == (3, model.nv) and rel_err(J, ref["Jcom"]) < TOL
    Ag = rbd.centroidal_momentum_matrix(model, q)
    assert Ag.shape == (6, model.nv) and rel_err(Ag, ref["Ag"]) < TOL
    h = rbd.centroidal_momentum(model, q, v)
    assert h.shape == (6,) and rel_err(h, ref["h"]) < TOL
    hh = rbd.centroidal_momentum(model, q, v, a)
    assert isinstance(hh, CentroidalMomentum)
    assert rel_err(hh.h, ref["h"]) < TOL and rel_err(hh.hdot, ref["hdot"]) < TOL
    ke, pe = rbd.kinetic_energy(model, q, v), rbd.potential_energy(model, q)
    assert np.ndim(ke) == 0 and rel_err(ke, ref["ke"]) < TOL
    assert np.ndim(pe) == 0 and rel_err(pe, ref["pe"]) < TOL


def test_identities(pair):
    """vcom = Jcom v, h = Ag v, Jcom = Ag's linear rows / M, KE = 0.5 v^T M v."""
    model, pm = pair
    q, v, _ = random_state(pm, np.random.default_rng(4))
    Ag = rbd.centroidal_momentum_matrix(model, q)
    J = rbd.com_jacobian(model, q)
    assert rel_err(J @ v, rbd.center_of_mass(model, q, v).vcom) < TOL
    assert rel_err(Ag @ v, rbd.centroidal_momentum(model, q, v)) < TOL
    assert rel_err(Ag[:3] / rbd.total_mass(model), J) < TOL
    assert rel_err(rbd.kinetic_energy(model, q, v), 0.5 * v @ rbd.crba(model, q) @ v) < TOL


def test_derivatives_match_pinocchio(pair):
    model, pm = pair
    q, v, a = random_state(pm, np.random.default_rng(5))
    got = rbd.centroidal_dynamics_derivatives(model, q, v, a)
    assert isinstance(got, CentroidalDynamicsDerivatives)
    ref = pin.computeCentroidalDynamicsDerivatives(pm, pm.createData(), q, v, a)
    for name, x, r in zip(got._fields, got, ref):
        assert x.shape == (6, model.nv) and rel_err(x, np.array(r)) < TOL, name


def test_armature_in_kinetic_energy():
    """The armature counts, 0.5 v^T M v with M = Pinocchio's crba (armature included).
    Pinocchio's computeKineticEnergy agrees except on a JointModelRevoluteUnaligned,
    whose armature it leaves out (its joint data's joint_v() stays zero there): those
    dofs get no armature in the comparison with it."""
    model, pm = _pair(("tree", 0, True))
    arm = np.linspace(0.1, 0.9, model.nv)
    q, v, _ = random_state(pm, np.random.default_rng(6))
    ke = rbd.kinetic_energy(model.with_armature(arm), q, v)
    pm = pm.copy()
    pm.armature = arm
    M = full(pin.crba(pm, pm.createData(), q))
    assert rel_err(ke, 0.5 * v @ M @ v) < TOL
    for j in pm.joints[1:]:
        if j.shortname() == "JointModelRevoluteUnaligned":
            arm[j.idx_v:j.idx_v + j.nv] = 0.0
    pm.armature = arm
    assert rel_err(rbd.kinetic_energy(model.with_armature(arm), q, v),
                   pin.computeKineticEnergy(pm, pm.createData(), q, v)) < TOL


@pytest.mark.parametrize("key", [("tree", 2, True), ("tree", 3, False),
                                 ("robot", "solo12", True)],
                         ids=["tree2+ff", "tree3", "solo12+ff"])
def test_complex_step(key):
    """Jcom, Ag and the four derivatives from the complex step through center_of_mass and
    centroidal_momentum (complex128), q moved on the manifold: integrate(q, i h e_k)."""
    model, pm = _pair(key)
    q, v, a = random_state(pm, np.random.default_rng(7))
    qc = q.astype(complex)
    nv, step = model.nv, 1e-30
    cs = np.zeros((6, 6, nv))   # Jcom (3 rows used), Ag, dh_dq, dhdot_dq, dhdot_dv, dhdot_da
    for k in range(nv):
        e = np.zeros(nv)
        e[k] = step
        qk = rbd.integrate(model, qc, 1j * e)
        cs[0, :3, k] = rbd.center_of_mass(model, qk).imag / step
        cs[1, :, k] = rbd.centroidal_momentum(model, qc, v + 1j * e).imag / step
        hq = rbd.centroidal_momentum(model, qk, v, a)
        cs[2, :, k], cs[3, :, k] = hq.h.imag / step, hq.hdot.imag / step
        cs[4, :, k] = rbd.centroidal_momentum(model, qc, v + 1j * e, a).hdot.imag / step
        cs[5, :, k] = rbd.centroidal_momentum(model, qc, v, a + 1j * e).hdot.imag / step
    assert rel_err(rbd.com_jacobian(model, q), cs[0, :3]) < TOL
    assert rel_err(rbd.centroidal_momentum_matrix(model, q), cs[1]) < TOL
    d = rbd.centroidal_dynamics_derivatives(model, q, v, a)
    for name, x, r in zip(d._fields, d, cs[2:]):
        assert rel_err(x, r) < TOL, name
    # the energies: dKE/dv = M v, dPE/dq = -g^T (M Jcom) (gravity's generalized force)
    ke = np.array([rbd.kinetic_energy(model, qc, v + 1j * np.eye(nv)[k] * step).imag / step
                   for k in range(nv)])
    assert rel_err(ke, rbd.crba(model, q) @ v) < TOL
    pe = np.array([rbd.potential_energy(model, rbd.integrate(model, qc, 1j * np.eye(nv)[k]
                                                            * step)).imag / step
                   for k in range(nv)])
    assert rel_err(pe, rbd.gravity(model, q)) < TOL


def _everything(model, q, v, a):
    """Every output of every function, in one list."""
    out = [rbd.center_of_mass(model, q), *rbd.center_of_mass(model, q, v),
           *rbd.center_of_mass(model, q, v, a), rbd.com_jacobian(model, q),
           rbd.centroidal_momentum_matrix(model, q), rbd.centroidal_momentum(model, q, v),
           *rbd.centroidal_momentum(model, q, v, a),
           *rbd.centroidal_dynamics_derivatives(model, q, v, a),
           rbd.kinetic_energy(model, q, v), rbd.potential_energy(model, q)]
    return [np.asarray(x) for x in out]


@pytest.mark.parametrize("mode", ["serial", "parallel"])
def test_batch_bit_equal_to_single_calls(mode):
    model, pm = _pair(("tree", 0, True))
    rng = np.random.default_rng(8)
    states = [random_state(pm, rng) for _ in range(5)]
    Q, V, A = (np.array(x) for x in zip(*states))
    with policy.forced(mode):
        got = _everything(model, Q, V, A)
    for b, (q, v, a) in enumerate(states):
        for k, (x, r) in enumerate(zip(got, _everything(model, q, v, a))):
            assert x.shape[0] == 5 and x.shape[1:] == r.shape, k
            assert np.array_equal(x[b], r), k


def test_float32_close():
    model, pm = _pair(("robot", "solo12", True))
    q, v, a = random_state(pm, np.random.default_rng(9))
    ref = _everything(model, q, v, a)
    got = _everything(model, q.astype(np.float32), v.astype(np.float32), a.astype(np.float32))
    for k, (x, r) in enumerate(zip(got, ref)):
        assert x.dtype == np.float32, k
        assert rel_err(x, r) < 2e-4, k


def test_bad_input():
    model, pm = _pair(("tree", 0, True))
    q, v, a = random_state(pm, np.random.default_rng(10))
    with pytest.raises(ValueError, match="q"):
        rbd.center_of_mass(model, q[:-1])
    with pytest.raises(ValueError, match="v"):
        rbd.centroidal_momentum(model, q, v[:-1])
    bad = v.copy()
    bad[2] = np.nan
    with pytest.raises(ValueError, match=r"v contains NaN or Inf at index \(2,\)"):
        rbd.centroidal_dynamics_derivatives(model, q, bad, a)
    with pytest.raises(ValueError, match=r"a contains NaN"):
        rbd.center_of_mass(model, q, v, np.full_like(a, np.inf))
    qb = q.copy()
    qb[3:7] *= 2.0            # the free flyer's quaternion, not unit
    with pytest.raises(ValueError, match="quaternion"):
        rbd.com_jacobian(model, qb)
    with pytest.raises(ValueError, match="quaternion"):
        rbd.kinetic_energy(model, np.stack([q, qb]), np.stack([v, v]))
    with pytest.raises(ValueError, match="batch size"):
        rbd.potential_energy(model, q) and rbd.centroidal_momentum(model, np.stack([q, q]),
                                                                   np.stack([v, v, v]))


def test_massless_model_has_no_center_of_mass():
    b = rbd.ModelBuilder()
    j = b.add_joint(0, "revolute", "j", axis=[0, 0, 1])
    b.append_body(j, mass=0.0, com=[0, 0, 0], inertia=np.zeros((3, 3)))
    model = b.build(allow_singular=True)
    q, v = np.zeros(1), np.ones(1)
    assert rbd.total_mass(model) == 0.0
    for call in (lambda: rbd.center_of_mass(model, q), lambda: rbd.com_jacobian(model, q),
                 lambda: rbd.centroidal_momentum_matrix(model, q),
                 lambda: rbd.centroidal_momentum(model, q, v),
                 lambda: rbd.centroidal_dynamics_derivatives(model, q, v, v),
                 lambda: rbd.center_of_mass(model, q[None], v[None])):
        with pytest.raises(ValueError, match="no centre of mass"):
            call()
    assert rbd.kinetic_energy(model, q, v) == 0.0 and rbd.potential_energy(model, q) == 0.0
