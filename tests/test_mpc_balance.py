"""rbdiff.mpc.balance: the stance equilibrium holds still (rbd.contact_dynamics: zero
acceleration, the same forces), its linearisation equals finite differences of the
discrete step in the reduced and the full coordinates, the Riccati solution satisfies
the DARE (and equals SciPy's, when present) with a stable closed loop while the full
coordinates are refused, the balance controller keeps solo12 and talos_legs standing
through a push in MuJoCo, and bad input fails clearly."""

import functools

import numpy as np
import pytest

import rbdiff as rbd
from rbdiff.model import robots
from rbdiff.mpc import balance as S

FEET = {"solo12": ("FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT"),
        "talos_legs": ("left_sole_link", "right_sole_link")}
# talos: example-robot-data's talos_reduced_box.urdf foot collision box, 0.21 x 0.13 x 0.02
PLANT = {"solo12": {}, "talos_legs": {"sole": (0.21, 0.13), "foot_radius": 0.01}}
CASES = ["solo12", "talos_legs"]


@functools.lru_cache(maxsize=None)
def robot(name):
    if name != "iiwa14" and robots.example_robot_data_dir() is None:
        pytest.skip("example-robot-data is not installed")
    return rbd.load_robot(name)


@functools.lru_cache(maxsize=None)
def stance_of(name):
    return S.stance(robot(name), FEET[name])


def step(st, q, v, u, dt):
    """One symplectic Euler step of the rigid stance (trajopt's): the oracle."""
    a = rbd.contact_dynamics(st.model, q, v, np.r_[np.zeros(6), u], st.contacts).qdd
    v2 = v + dt * a
    return rbd.integrate(st.model, q, dt * v2), v2


@pytest.mark.parametrize("name", CASES)
def test_equilibrium(name):
    model, st = robot(name), stance_of(name)
    nfeet, dim = len(FEET[name]), 3 if name == "solo12" else 6
    assert st.kind == ("3d" if dim == 3 else "6d")
    assert st.forces.shape == (nfeet, dim) and st.u.shape == (model.nv - 6,)
    assert np.array_equal(st.tau, np.r_[np.zeros(6), st.u])
    # the reference configuration with the lowest foot frame on z = 0
    ref = np.array(model.reference_configurations[
        "standing" if name == "solo12" else "half_sitting"])
    assert np.array_equal(st.q[3:], ref[3:]) and np.array_equal(st.q[:2], ref[:2])
    assert abs(st.foot_positions[:, 2].min()) < 1e-15
    # the contact solver holds it still with the same forces
    qdd, forces = rbd.contact_dynamics(model, st.q, st.v, st.tau, st.contacts)
    scale = np.abs(st.forces).max()
    assert np.abs(qdd).max() < 1e-9
    assert np.abs(forces - st.forces.ravel()).max() < 1e-12 * scale
    # g = S^T u + J^T f, the feet carry the weight inside their cones
    assert np.abs(rbd.gravity(model, st.q) - st.tau - st.jacobian.T @ st.forces.ravel()
                  ).max() < 1e-10 * scale
    weight = rbd.total_mass(model) * 9.81
    assert st.forces[:, 2].sum() == pytest.approx(weight, rel=1e-12)
    assert np.all(st.forces[:, 2] > 0)
    assert np.all(np.hypot(st.forces[:, 0], st.forces[:, 1]) <= 1e-9 * weight)
    # the least weighted norm: W f is orthogonal to every force change that leaves the
    # base's balance (J_b^T df = 0), i.e. no internal squeeze between the feet
    w = np.tile(S._weights(None, dim), nfeet)
    Jb = st.jacobian[:, :6]
    internal = np.linalg.svd(Jb.T)[2][6:]                   # null(J_b^T), orthonormal
    assert np.abs(internal @ (w * st.forces.ravel())).max() < 1e-9 * weight


def test_stance_given_q_and_height():
    model = robot("solo12")
    q = np.array(model.reference_configurations["standing"])
    q[7:] += 0.05
    st = S.stance(model, FEET["solo12"], q=q)                  # q's base height kept
    assert np.array_equal(st.q, q)
    st2 = S.stance(model, FEET["solo12"], q=q, foot_height=0.019)
    assert st2.foot_positions[:, 2].min() == pytest.approx(0.019, abs=1e-15)
    assert np.array_equal(st2.q[3:], q[3:]) and np.allclose(st2.u, st.u, atol=1e-12)
    qdd = rbd.contact_dynamics(model, st2.q, st2.v, st2.tau, st2.contacts).qdd
    assert np.abs(qdd).max() < 1e-9


@pytest.mark.parametrize("name", CASES)
def test_linearisation_against_finite_differences(name):
    st = stance_of(name)
    model, nv = st.model, st.model.nv
    dt = 0.02           # a large step: dt a_q, dt a_v are well above the FD noise
    lin = S.linearise(st, dt)
    m = nv - len(st.contacts) * st.contacts[0].dim
    assert lin.A.shape == (2 * m, 2 * m) and lin.B.shape == (2 * m, nv - 6)
    assert np.allclose(lin.N.T @ lin.N, np.eye(m), atol=1e-12)
    assert np.abs(st.jacobian @ lin.N).max() < 1e-12
    eps = 1e-6

    def fd(f, n):
        return np.column_stack([(f(e) - f(-e)) / (2 * eps) for e in eps * np.eye(n)])

    # reduced: z -> z' through the nonlinear step (q, v) = state(z)
    u0 = st.u
    Az = fd(lambda dz: lin.coordinates(*step(st, *lin.state(dz), u0, dt)), 2 * m)
    Bz = fd(lambda du: lin.coordinates(*step(st, st.q, st.v, u0 + du, dt)), nv - 6)
    assert np.abs(Az - lin.A).max() < 1e-6 * np.abs(lin.A - np.eye(2 * m)).max()
    assert np.abs(Bz - lin.B).max() < 1e-6 * np.abs(lin.B).max()

    # full tangent coordinates: dx -> difference(q0, q'), v'
    def full(dx, du=0.0):
        q2, v2 = step(st, rbd.integrate(model, st.q, dx[:nv]), dx[nv:], u0 + du, dt)
        return np.r_[rbd.difference(model, st.q, q2), v2]

    Af = fd(full, 2 * nv)
    Bf = fd(lambda du: full(np.zeros(2 * nv), du), nv - 6)
    assert np.abs(Af - lin.A_full).max() < 1e-6 * np.abs(lin.A_full - np.eye(2 * nv)).max()
    assert np.abs(Bf - lin.B_full).max() < 1e-6 * np.abs(lin.B_full).max()
    # the subspace is invariant, so the reduced (A, B) lose nothing...
    assert np.abs(lin.A_full @ lin.P - lin.P @ lin.A).max() < 1e-12
    assert np.abs(lin.B_full - lin.P @ lin.B).max() < 1e-12
    # ...and the full one has 2 nc unit eigenvalues (the feet's errors), the reduced none
    nc = len(st.contacts) * st.contacts[0].dim
    assert np.sum(np.abs(np.linalg.eigvals(lin.A_full) - 1) < 1e-7) == 2 * nc
    assert np.all(np.abs(np.linalg.eigvals(lin.A) - 1) > 1e-4)
    # the forces' derivatives: f(state(z), u0 + du) by finite differences
    fz = fd(lambda dz: rbd.contact_dynamics(model, *lin.state(dz), st.tau,
                                            st.contacts).forces, 2 * m)
    assert np.abs(fz - lin.forces_z).max() < 1e-6 * np.abs(lin.forces_z).max()
    fu = fd(lambda du: rbd.contact_dynamics(model, st.q, st.v,
                                            st.tau + np.r_[np.zeros(6), du],
                                            st.contacts).forces, nv - 6)
    assert np.abs(fu - lin.forces_u).max() < 1e-6 * np.abs(lin.forces_u).max()


def _lqr_terms(ctrl):
    """(A, B, Q, R, S) of the controller's LQR in the reduced coordinates: the state
    cost with the force cost's part, the control cost with its, and their cross term."""
    lin = ctrl.linearisation
    Fz, Fu, W = lin.forces_z, lin.forces_u, ctrl.force_weights
    return (lin.A, lin.B, lin.P.T @ ctrl.Q @ lin.P + Fz.T @ W @ Fz,
            ctrl.R + Fu.T @ W @ Fu, Fz.T @ W @ Fu)


def test_riccati_and_closed_loop():
    st = stance_of("talos_legs")
    ctrl = S.BalanceController(st, 1e-3, allocate=False)
    lin = ctrl.linearisation
    A, B, Q, R, Sx = _lqr_terms(ctrl)
    # no cross term: X solves the DARE, K is its gain, A - B K is stable
    X = S.dare(A, B, Q, R)
    K = S.lqr(A, B, Q, R)
    G = R + B.T @ X @ B
    res = A.T @ X @ A - A.T @ X @ B @ np.linalg.solve(G, B.T @ X @ A) + Q - X
    assert np.abs(res).max() < 1e-9 * np.abs(X).max()
    assert np.allclose(K, np.linalg.solve(G, B.T @ X @ A), rtol=0,
                       atol=1e-12 * np.abs(K).max())
    assert np.max(np.abs(np.linalg.eigvals(A - B @ K))) < 1
    # the controller's gain (with the force cost's cross term): the first-order condition
    # of the Bellman step, K = (R + B^T X B)^-1 (B^T X A + S^T) with its own X
    Kc = ctrl.K
    assert np.max(np.abs(np.linalg.eigvals(A - B @ Kc))) < 1
    L0 = np.linalg.solve(R, Sx.T)
    X2 = S.dare(A - B @ L0, B, Q - Sx @ L0, R)
    Acl = A - B @ Kc
    bellman = Q + Kc.T @ R @ Kc - Sx @ Kc - Kc.T @ Sx.T + Acl.T @ X2 @ Acl - X2
    assert np.abs(bellman).max() < 1e-9 * np.abs(X2).max()
    # the control law is u0 - K z, and K_full = K P^T on the full tangent error
    q, v = lin.state(np.linspace(-1e-3, 1e-3, 2 * lin.m))
    dx = np.r_[rbd.difference(st.model, st.q, q), v]
    assert np.allclose(ctrl(q, v), ctrl.u0 - ctrl.K_full @ dx, rtol=0, atol=1e-12)


def test_riccati_against_scipy():
    scipy_linalg = pytest.importorskip("scipy.linalg", reason="SciPy is optional")
    st = stance_of("talos_legs")
    ctrl = S.BalanceController(st, 1e-3)
    A, B, Q, R, Sx = _lqr_terms(ctrl)
    X = S.dare(A, B, Q, R)
    Xs = scipy_linalg.solve_discrete_are(A, B, Q, R)
    assert np.abs(Xs - X).max() < 1e-8 * np.abs(X).max()
    Xs2 = scipy_linalg.solve_discrete_are(A, B, Q, R, s=Sx)
    Ks = np.linalg.solve(R + B.T @ Xs2 @ B, B.T @ Xs2 @ A + Sx.T)
    assert np.abs(Ks - ctrl.K).max() < 1e-7 * np.abs(ctrl.K).max()


@pytest.mark.parametrize("name", CASES)
def test_allocation_moves_nothing(name):
    """The allocation adds internal-force torques only: the rigid model's acceleration
    (rbd.contact_dynamics, not the linearisation) is the LQR's at q0 (dqdd/dtau depends
    on q alone; away from q0 it is so to first order), and the feet's largest load use
    is lower."""
    st = stance_of(name)
    ctrl = S.BalanceController(st, 1e-3)
    plain = S.BalanceController(st, 1e-3, allocate=False)
    assert np.array_equal(ctrl.K, plain.K)
    lin = ctrl.linearisation
    assert np.abs(lin.B @ ctrl._Nb).max() < 1e-12 * np.abs(lin.B).max()
    rng = np.random.default_rng(4)
    for _ in range(3):
        z = rng.normal(scale=[0.0] * lin.m + [0.2] * lin.m)        # at q0, moving
        q, v = lin.state(z)
        u, u_lqr = ctrl(q, v), plain(q, v)
        assert np.abs(u - u_lqr).max() > 1e-3 * np.abs(u_lqr - st.u).max()   # it acts
        a, f = rbd.contact_dynamics(st.model, q, v, np.r_[np.zeros(6), u], st.contacts)
        a0, f0 = rbd.contact_dynamics(st.model, q, v, np.r_[np.zeros(6), u_lqr],
                                      st.contacts)
        assert np.abs(a - a0).max() < 1e-9 * np.abs(a0).max()
        dim = st.forces.shape[1]
        f, f0 = f.reshape(-1, dim), f0.reshape(-1, dim)
        # the feet's largest friction (and centre-of-pressure) use relative to their load
        use = [np.hypot(g[:, 0], g[:, 1]) / g[:, 2] for g in (f, f0)]
        if dim == 6:
            use = [np.maximum(x, np.hypot(g[:, 3], g[:, 4]) / (0.1 * g[:, 2]))
                   for x, g in zip(use, (f, f0))]
        assert use[0].max() < use[1].max()


def test_full_coordinates_are_refused():
    """With zero Baumgarte gains the feet's errors are 2 nc uncontrollable unit modes:
    the Riccati solver says so (the reason linearise reduces the coordinates)."""
    st = stance_of("solo12")
    lin = S.linearise(st, 1e-3)
    n, k = lin.A_full.shape[0], lin.B_full.shape[1]
    with pytest.raises(ValueError, match="not stabilisable"):
        S.lqr(lin.A_full, lin.B_full, np.eye(n), np.eye(k))
    with pytest.raises(ValueError, match="not stabilisable"):   # a plain unstable mode
        S.lqr(np.diag([1.1, 0.5]), np.array([[0.0], [1.0]]), np.eye(2), np.eye(1))


def stands_through_push(name, push, seconds=1.5, t_push=0.3):
    """name's balance controller in the MuJoCo plant at 1 kHz, pushed at t_push:
    (fallen, largest horizontal foot travel from the push on, largest and final
    |[difference(q0, q), v]| after the push)."""
    pytest.importorskip("mujoco", reason="the closed loop needs MuJoCo (rbdiff[sim])")
    model = robot(name)
    plant = rbd.sim.Plant(model, feet=FEET[name], **PLANT[name])
    st = S.stance(model, FEET[name], foot_height=plant.foot_radius.min())
    ctrl = S.BalanceController(st, plant.mj_model.opt.timestep)
    plant.set_state(st.q)
    dt = plant.mj_model.opt.timestep
    start, peak = None, 0.0
    for i in range(int(round(seconds / dt))):
        if i == int(round(t_push / dt)):
            start = plant.foot_positions()
            plant.push(push)
        q, v = plant.state()
        plant.step(ctrl(q, v))
        if plant.fallen():
            return True, None, None, None
        if start is not None:
            err = np.abs(np.r_[rbd.difference(model, st.q, q), v]).max()
            peak = max(peak, err)
    travel = np.linalg.norm((plant.foot_positions() - start)[:, :2], axis=1).max()
    return False, travel, peak, err


@pytest.mark.parametrize("name, push", [("solo12", (0.0, 0.3, 0.0)),
                                        ("talos_legs", (0.3, 0.0, 0.0)),
                                        ("talos_legs", (0.0, -0.3, 0.0))])
def test_stands_through_a_push_in_mujoco(name, push):
    fallen, travel, peak, final = stands_through_push(name, push)
    assert not fallen
    assert travel < 5e-3                 # the feet hold
    assert final < 0.1 * peak            # recovered 1.2 s after the push (measured <= 0.07)


def test_sole_plant():
    pytest.importorskip("mujoco", reason="the plant needs MuJoCo (rbdiff[sim])")
    model = robot("talos_legs")
    plant = rbd.sim.Plant(model, feet=FEET["talos_legs"], sole=(0.21, 0.13),
                          foot_radius=0.01)
    mm = plant.mj_model
    for g in plant._foot_geoms:
        assert int(mm.geom_type[g]) == 6                      # mjGEOM_BOX
        assert np.allclose(mm.geom_size[g], [0.105, 0.065, 0.01])
    assert plant.nominal_height == model.reference_configurations["half_sitting"][2]
    st = S.stance(model, FEET["talos_legs"], foot_height=0.01)
    plant.set_state(st.q)
    for k, name in enumerate(plant.feet):      # the box is on the frame, along its axes
        T = rbd.frame_placement(model, st.q, name)
        g = plant._foot_geoms[k]
        assert np.allclose(plant.foot_positions()[k], T[:3, 3], rtol=0, atol=1e-12)
        assert np.allclose(plant.mj_data.geom_xmat[g].reshape(3, 3), T[:3, :3],
                           rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match="sole"):
        rbd.sim.Plant(model, feet=FEET["talos_legs"], sole=(0.2, -0.1))


def test_clear_errors():
    solo = robot("solo12")
    with pytest.raises(KeyError, match="FL_FOOT"):
        S.stance(solo, ("FL_FOT", "FR_FOOT", "HL_FOOT", "HR_FOOT"))
    with pytest.raises(ValueError, match="no free-flyer root"):
        S.stance(robot("iiwa14"), ("iiwa_link_7",))
    q = np.array(solo.reference_configurations["standing"])
    q[9] = np.nan
    with pytest.raises(ValueError, match="q: not finite"):
        S.stance(solo, FEET["solo12"], q=q)
    with pytest.raises(ValueError, match=r"q: expected shape \(19,\)"):
        S.stance(solo, FEET["solo12"], q=q[:-1])
    with pytest.raises(ValueError, match="kind"):
        S.stance(solo, FEET["solo12"], kind="2d")
    with pytest.raises(ValueError, match="named twice"):
        S.stance(solo, ("FL_FOOT", "FL_FOOT", "HL_FOOT"))
    with pytest.raises(ValueError, match="cannot hold the base"):     # two point feet
        S.stance(solo, ("FL_FOOT", "HR_FOOT"), kind="3d")
    with pytest.raises(rbd.DependentContacts, match="depends on the rows"):  # 24 > 18 rows
        S.stance(solo, FEET["solo12"], kind="6d")
    q = np.array(solo.reference_configurations["standing"])
    q[0] += 0.5                 # the base moved, feet with it: fine; now lean far over
    q[3:7] = [0.0, np.sin(0.6), 0.0, np.cos(0.6)]
    with pytest.raises(ValueError, match="friction|pull on the floor"):
        S.stance(solo, FEET["solo12"], q=q)
    st = stance_of("solo12")
    with pytest.raises(ValueError, match="dt"):
        S.linearise(st, 0.0)
    with pytest.raises(TypeError, match="Stance"):
        S.linearise(st.q, 1e-3)
    lin = S.linearise(st, 1e-3)
    bad = st.v.copy()
    bad[0] = np.inf
    with pytest.raises(ValueError, match="not finite"):
        lin.coordinates(st.q, bad)
    with pytest.raises(ValueError, match=r"expected A \(n, n\)"):
        S.lqr(np.eye(2), np.eye(3), np.eye(2), np.eye(3))
