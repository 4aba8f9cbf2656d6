"""A floating base far from the world origin: what a translation of the world leaves
alone (ABA, CRBA, M^-1, the dynamics derivatives, contact and impulse dynamics in LOCAL
and LOCAL_WORLD_ALIGNED, the centroidal momentum about the com) comes out as with the
base at the origin, and what it moves (joint and frame placements, the com) moves by
the offset (kernels/fk.py's init_universe_at_base).

Tolerances: a result computed in world coordinates at distance d loses d/scale of its
digits (3e-10 relative at 100 m on solo12 before the fix), so each check allows only the
rounding of the problem itself: a few eps for the forward products (M, dtau/dx), a few
eps cond(M) for what solves with M (qdd, M^-1, dqdd/dx), a few eps cond(K) for the
contact and impulse solves (K = [[M, J^T], [J, 0]], the four feet's KKT matrix),
relative to the result's largest entry."""

import numpy as np
import pinocchio as pin
import pytest

import rbdiff as rbd
from conftest import robot_pair

EPS = np.finfo(float).eps
OFFSETS = (1e2, 1e3, 1e5)
FEET = {"solo12": ("FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT"),
        "anymal": ("LF_FOOT", "RF_FOOT", "LH_FOOT", "RH_FOOT")}
_CASES = {}


def case(name):
    """(model, q at its reference stance, v, tau, a, cond(M), cond(K), |K^-1| of the four
    feet)."""
    if name not in _CASES:
        model = rbd.load_robot(name)
        q = np.array(model.reference_configurations["standing"], float)
        rng = np.random.default_rng(7)
        v, tau, a = (rng.normal(size=model.nv) for _ in range(3))
        M = rbd.crba(model, q)
        J = np.vstack([rbd.frame_jacobian(model, q, f, "local")[:3] for f in FEET[name]])
        K = np.block([[M, J.T], [J, np.zeros((len(J), len(J)))]])
        _CASES[name] = (model, q, v, tau, a, np.linalg.cond(M), np.linalg.cond(K),
                        np.linalg.norm(np.linalg.inv(K), 2))
    return _CASES[name]


def moved(q, d):
    """q with the base translated by d in x and y."""
    q = q.copy()
    q[0] += d
    q[1] += d
    return q


def feet(name, ref="local_world_aligned"):
    return tuple(rbd.Contact(f, "3d", ref) for f in FEET[name])


def flat(r):
    """The arrays of a result record, raveled into one."""
    return np.hstack([np.ravel(x) for x in ([r] if isinstance(r, np.ndarray) else r)])


# name -> (result of (model, q, v, tau, a, name) as one array, tolerance factor: "eps",
# "M" (times cond(M)) or "K" (times cond(K)))
INVARIANT = {
    "aba": (lambda m, q, v, tau, a, n: rbd.aba(m, q, v, tau), "M"),
    "crba": (lambda m, q, v, tau, a, n: rbd.crba(m, q), "eps"),
    "minverse": (lambda m, q, v, tau, a, n: rbd.minverse(m, q), "M"),
    "aba_derivatives": (lambda m, q, v, tau, a, n: flat(rbd.aba_derivatives(m, q, v, tau)),
                        "M"),
    "aba_derivatives_chain_rule": (lambda m, q, v, tau, a, n: flat(
        rbd.aba_derivatives(m, q, v, tau, method="chain_rule")), "M"),
    "rnea_derivatives": (lambda m, q, v, tau, a, n: flat(rbd.rnea_derivatives(m, q, v, a)),
                         "eps"),
    "rnea_derivatives_chain_rule": (lambda m, q, v, tau, a, n: flat(
        rbd.rnea_derivatives(m, q, v, a, method="chain_rule")), "eps"),
    "contact_dynamics": (lambda m, q, v, tau, a, n: flat(
        rbd.contact_dynamics(m, q, v, tau, feet(n))), "K"),
    "contact_dynamics_local": (lambda m, q, v, tau, a, n: flat(
        rbd.contact_dynamics(m, q, v, tau, feet(n, "local"))), "K"),
    "contact_dynamics_derivatives": (lambda m, q, v, tau, a, n: flat(
        rbd.contact_dynamics_derivatives(m, q, v, tau, feet(n))), "K"),
    "impulse_dynamics": (lambda m, q, v, tau, a, n: flat(
        rbd.impulse_dynamics(m, q, v, feet(n))), "K"),
    "aba_second_order_derivatives": (lambda m, q, v, tau, a, n: flat(
        rbd.aba_second_order_derivatives(m, q, v, tau)), "M"),
    "rnea_second_order_derivatives": (lambda m, q, v, tau, a, n: flat(
        rbd.rnea_second_order_derivatives(m, q, v, a)), "eps"),
    "frame_jacobian_local": (lambda m, q, v, tau, a, n: rbd.frame_jacobian(
        m, q, FEET[n][0], "local"), "eps"),
    "frame_jacobian_local_world_aligned": (lambda m, q, v, tau, a, n: rbd.frame_jacobian(
        m, q, FEET[n][0], "local_world_aligned"), "eps"),
    "frame_acceleration_derivatives": (lambda m, q, v, tau, a, n: flat(
        rbd.frame_acceleration_derivatives(m, q, v, a, FEET[n][0], "local")), "eps"),
    "com_jacobian": (lambda m, q, v, tau, a, n: rbd.com_jacobian(m, q), "eps"),
    "centroidal_dynamics_derivatives": (lambda m, q, v, tau, a, n: flat(
        rbd.centroidal_dynamics_derivatives(m, q, v, a)), "eps"),
    "centroidal_momentum": (lambda m, q, v, tau, a, n: flat(
        rbd.centroidal_momentum(m, q, v, a)), "eps"),
    "centroidal_momentum_matrix": (lambda m, q, v, tau, a, n:
                                   flat(rbd.centroidal_momentum_matrix(m, q)), "eps"),
}


def tolerance(kind, condM, condK):
    return 8 * EPS * {"eps": 1.0, "M": condM, "K": condK}[kind]


@pytest.mark.parametrize("d", OFFSETS)
@pytest.mark.parametrize("fn", sorted(INVARIANT))
@pytest.mark.parametrize("name", ["solo12", "anymal"])
def test_invariant_results_do_not_see_the_offset(name, fn, d):
    model, q, v, tau, a, condM, condK, _ = case(name)
    f, kind = INVARIANT[fn]
    ref = f(model, q, v, tau, a, name)
    got = f(model, moved(q, d), v, tau, a, name)
    err = np.abs(got - ref).max() / np.abs(ref).max()
    assert err <= tolerance(kind, condM, condK), (err, tolerance(kind, condM, condK))


@pytest.mark.parametrize("d", OFFSETS)
def test_aba_matches_pinocchio_far_away(d):
    """Pinocchio's aba is exact under the translation: rbdiff's, far away, agrees with it
    as at the origin."""
    model, q, v, tau, a, condM, _, _ = case("solo12")
    _, pm = robot_pair("solo12", True)
    pm.armature[:] = model.armature
    pd = pm.createData()
    qf = moved(q, d)
    ref = pin.aba(pm, pd, qf, v, tau).copy()
    err = np.abs(rbd.aba(model, qf, v, tau) - ref).max() / np.abs(ref).max()
    assert err <= tolerance("M", condM, 1.0)


@pytest.mark.parametrize("d", OFFSETS)
def test_baumgarte_against_a_placement_moved_with_the_base(d):
    """Kp pulls the feet to world placements: moved with the base, the same dynamics,
    but for the rounding of p - p2 with both of size d (4 eps d on each of the nc rows of
    the right-hand side, through |K^-1|)."""
    model, q, v, tau, a, _, condK, kinv = case("solo12")
    kp, kd = 50.0, 5.0

    def solve(qx, shift):
        cs = []
        for f in FEET["solo12"]:
            T = rbd.frame_placement(model, q, f).copy()
            T[:3, 3] += shift + 1e-3        # off the current pose: a nonzero error
            cs.append(rbd.Contact(f, "3d", "local_world_aligned", gains=(kp, kd),
                                  placement=T))
        return flat(rbd.contact_dynamics(model, qx, v, tau, tuple(cs)))
    ref = solve(q, np.zeros(3))
    got = solve(moved(q, d), np.array([d, d, 0.0]))
    tol = 8 * EPS * condK * np.abs(ref).max() + kinv * kp * 4 * EPS * d * np.sqrt(12)
    assert np.abs(got - ref).max() <= tol


@pytest.mark.parametrize("d", OFFSETS)
def test_placements_move_with_the_base(d):
    """Forward kinematics, frame placements, WORLD Jacobians and the com stay in the true
    world frame: translated by the offset (to the rounding of numbers of size d)."""
    model, q, v, tau, a, _, _, _ = case("solo12")
    qf = moved(q, d)
    shift = np.array([d, d, 0.0])
    tol = 8 * EPS * (d + 1.0)
    T0 = rbd.forward_kinematics(model, q)[0]
    T1 = rbd.forward_kinematics(model, qf)[0]
    np.testing.assert_allclose(T1[1:, :3, 3] - shift, T0[1:, :3, 3], rtol=0, atol=tol)
    np.testing.assert_allclose(T1[:, :3, :3], T0[:, :3, :3], rtol=0, atol=8 * EPS)
    on = np.asarray(model.frame_parents) > 0        # frames on the universe do not move
    F0 = rbd.frame_placements(model, q)[on]
    F1 = rbd.frame_placements(model, qf)[on]
    np.testing.assert_allclose(F1[:, :3, 3] - shift, F0[:, :3, 3], rtol=0, atol=tol)
    np.testing.assert_allclose(rbd.center_of_mass(model, qf) - shift,
                               rbd.center_of_mass(model, q), rtol=0, atol=tol)
    # a WORLD Jacobian is taken at the world origin: its linear rows see the offset
    J0 = rbd.frame_jacobian(model, q, "FL_FOOT", "world")
    J1 = rbd.frame_jacobian(model, qf, "FL_FOOT", "world")
    w = J0[3:]
    np.testing.assert_allclose(J1[:3], J0[:3] - np.cross(w.T, shift).T, rtol=0,
                               atol=8 * EPS * (d + 1.0) * np.abs(w).max())
