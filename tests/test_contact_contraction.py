"""The contraction of contact dynamics' second derivatives (issue 27, part 2):
rbd.contact_dynamics_contraction and rbd.impulse_dynamics_contraction against the complex
step of rbdiff's own first-order contact and impulse derivatives, and the adjoint
decomposition they are built on, checked by finite differences.

With y = (a, f) the KKT solution (f the LOCAL contact forces), the residuals
    r1 = ID(q, v, a) - J(q)^T f - tau          (f held in the contact frame: fext)
    r2 = a_c(q, v, a) - e(q, v)                (LOCAL classical acceleration, Baumgarte e)
are linear in y, so with (mu, nu) = K^-1 (lam, 0), K = [[M, J^T], [J, 0]], and
L = lam.a - mu.r1 - nu.r2 the Hessian of lam.qdd(x), x = (q, v, tau), is
    H = L_xx + L_xy y_x + y_x^T L_yx             (L_yy = 0)
with y_x the first-order contact derivatives and L_yx = d/dx [lam - M mu - J^T nu; J mu].
mu = dqdd_dtau^T lam. The LOCAL_WORLD_ALIGNED reference gives the same H (its forces
rotated back to LOCAL)."""

import importlib.util

import numpy as np
import pytest
from conftest import robot_pair, tree_pair

import rbdiff as rbd

H = 1e-20


def complex_step(model, q, v, tau, contacts, lam_a, lam_f, damping=0.0):
    """The four blocks by the complex step (h = 1e-20: no cancellation) of the contracted
    first-order derivatives, q perturbed on the manifold: column k of each block is the
    derivative along q_k (or v_k) of the gradient."""
    nv = model.nv

    def grad(q, v, t):
        d = rbd.contact_dynamics_derivatives(model, q, v, t, contacts, damping)
        return (lam_a @ d.dqdd_dq + lam_f @ d.dforces_dq, lam_a @ d.dqdd_dv
                + lam_f @ d.dforces_dv, lam_a @ d.dqdd_dtau + lam_f @ d.dforces_dtau)

    qc, vc, tc = q.astype(complex), v.astype(complex), tau.astype(complex)
    out = [np.zeros((nv, nv)) for _ in range(4)]       # qq, vv, qv, tau q
    for k in range(nv):
        e = np.zeros(nv, complex)
        e[k] = 1j * H
        gq, _, gt = grad(rbd.integrate(model, qc, e), vc, tc)
        out[0][:, k], out[3][:, k] = gq.imag / H, gt.imag / H
        gq, gv, _ = grad(qc, vc + e, tc)
        out[2][:, k], out[1][:, k] = gq.imag / H, gv.imag / H
    return out


def check_case(model, contacts, seed, damping=0.0):
    rng = np.random.default_rng(seed)
    q = rbd.random_configuration(model, rng)
    v, tau, lam_a = rng.normal(size=(3, model.nv))
    lam_f = rng.normal(size=sum(c.dim for c in contacts))
    got = rbd.contact_dynamics_contraction(model, q, v, tau, contacts, lam_a, lam_f,
                                           damping=damping)
    ref = complex_step(model, q, v, tau, contacts, lam_a, lam_f, damping)
    for name, a, b in zip(got._fields, got, ref):
        scale = np.abs(b).max()
        assert scale > 0
        assert np.abs(a - b).max() <= 1e-10 * scale, (name, np.abs(a - b).max() / scale)
    return q, v, tau, lam_a, lam_f, got


@pytest.mark.parametrize("reference", ["local", "local_world_aligned"])
def test_solo12_four_point_feet(reference):
    model, _ = robot_pair("solo12", True)
    c = tuple(rbd.Contact(f, "3d", reference=reference, gains=(10.0, 2.0),
                          placement=np.eye(4))
              for f in ("FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT"))
    check_case(model, c, 1)


@pytest.mark.parametrize("reference", ["local", "local_world_aligned"])
def test_talos_surface_feet(reference):
    model, _ = robot_pair("talos_full_v2", True)
    c = tuple(rbd.Contact(f, "6d", reference=reference, gains=(6.0 if reference == "local"
                                                              else 0.0, 3.0),
                          placement=np.eye(4))
              for f in ("left_sole_link", "right_sole_link"))
    check_case(model, c, 2, damping=1e-3 if reference == "local" else 0.0)


@pytest.mark.parametrize("reference", ["local", "local_world_aligned"])
def test_iiwa14_end_effector(reference):
    model = rbd.load_robot("iiwa14")
    c = (rbd.Contact("iiwa_link_ee", "3d", reference=reference, gains=(5.0, 1.5),
                     placement=np.eye(4)),)
    check_case(model, c, 3)
    c6 = (rbd.Contact("iiwa_link_ee", "6d", reference=reference, gains=(0.0, 1.5)),)
    check_case(model, c6, 4)


@pytest.mark.parametrize("reference", ["local", "local_world_aligned"])
def test_iiwa14_surface_contact_baumgarte_kp(reference):
    """kp > 0 on a 6D contact: the Hessian of log6 (lie.third_coefficients' series below
    a rotation error of 1 rad, its closed form above; both within one test)."""
    model = rbd.load_robot("iiwa14")
    rng = np.random.default_rng(8)
    q = rbd.random_configuration(model, np.random.default_rng(18))   # check_case's q
    for scale, seed in ((1e-3, 18), (None, 19)):
        target = (rbd.frame_placement(model, rbd.integrate(model, q, scale * rng.normal(
            size=model.nv)), "iiwa_link_ee") if scale else
            rbd.frame_placement(model, rbd.random_configuration(model, rng), "iiwa_link_ee"))
        c6 = (rbd.Contact("iiwa_link_ee", "6d", reference=reference, gains=(7.0, 2.0),
                          placement=target),)
        check_case(model, c6, seed)


def test_random_tree_spherical_joints():
    model, _ = tree_pair(5, 10, True)
    assert 3 in {model.mi[j, 5] for j in range(1, model.njoints)}     # a spherical joint
    parents = model.frame_parents
    deep = max(range(len(model.frames)), key=lambda f: model.mi[parents[f], 3])
    check_case(model, (rbd.Contact(deep, "3d", "local_world_aligned", gains=(4.0, 1.0),
                                   placement=np.eye(4)),), 5)
    check_case(model, (rbd.Contact(deep, "3d", "local", gains=(0.0, 2.0)),), 6)


def test_batch_equals_loop_bit_for_bit():
    model, _ = robot_pair("solo12", True)
    c = tuple(rbd.Contact(f, "3d", reference="local_world_aligned", gains=(10.0, 2.0),
                          placement=np.eye(4))
              for f in ("FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT"))
    rng = np.random.default_rng(6)
    B = 5
    q = np.stack([rbd.random_configuration(model, rng) for _ in range(B)])
    v, tau, lam_a = rng.normal(size=(3, B, model.nv))
    lam_f = rng.normal(size=(B, 12))
    got = rbd.contact_dynamics_contraction(model, q, v, tau, c, lam_a, lam_f)
    for b in range(B):
        one = rbd.contact_dynamics_contraction(model, q[b], v[b], tau[b], c, lam_a[b],
                                               lam_f[b])
        for x, y in zip(got, one):
            assert x.shape == (B, model.nv, model.nv)
            assert np.array_equal(x[b], y)


def test_parallel_entries_equal_a_loop():
    """The contractions' parallel entries (make test's compile step skips them, so a
    compile here): chunks on the serial twin without its checks, bit-equal to single
    calls. contact_contraction_batch allocated qdd inside its checks, so the unchecked
    twin wrote through an unset array: `rbdiff compile` crashed (SIGSEGV) in this job."""
    from rbdiff.cpu import policy
    model, pm = tree_pair(5, n=6, floating=True)
    frames = [k for k, f in enumerate(model.frames) if f.parent > 0]
    c = (rbd.Contact(frames[-1], "3d", "local_world_aligned"),)
    rng = np.random.default_rng(8)
    B = 3
    q = np.stack([rbd.random_configuration(model, rng) for _ in range(B)])
    v, tau, lam_a = rng.normal(size=(3, B, model.nv))
    lam_f = rng.normal(size=(B, 3))
    with policy.forced("parallel"):
        got = rbd.contact_dynamics_contraction(model, q, v, tau, c, lam_a, lam_f)
        imp = rbd.impulse_dynamics_contraction(model, q, v, c, lam_a, lam_f)
    for b in range(B):
        one = rbd.contact_dynamics_contraction(model, q[b], v[b], tau[b], c, lam_a[b],
                                               lam_f[b])
        assert all(np.array_equal(x[b], y) for x, y in zip(got, one))
        one = rbd.impulse_dynamics_contraction(model, q[b], v[b], c, lam_a[b], lam_f[b])
        assert all(np.array_equal(x[b], y) for x, y in zip(imp, one))


def test_float32_close():
    model = rbd.load_robot("iiwa14")
    c = (rbd.Contact("iiwa_link_ee", "3d", gains=(5.0, 1.5), placement=np.eye(4)),)
    rng = np.random.default_rng(7)
    q = rbd.random_configuration(model, rng)
    v, tau, lam_a = rng.normal(size=(3, model.nv))
    lam_f = rng.normal(size=3)
    ref = rbd.contact_dynamics_contraction(model, q, v, tau, c, lam_a, lam_f)
    got = rbd.contact_dynamics_contraction(model, *(x.astype(np.float32) for x in
                                                    (q, v, tau)), c,
                                           lam_a.astype(np.float32), lam_f.astype(np.float32))
    for a, b in zip(got, ref):
        assert a.dtype == np.float32
        assert np.abs(a - b).max() <= 2e-3 * np.abs(b).max()


def test_bad_input_refused():
    model = rbd.load_robot("iiwa14")
    c = (rbd.Contact("iiwa_link_ee", "3d"),)
    q, v, tau, lam_a = rbd.neutral(model), *np.ones((3, model.nv))
    with pytest.raises(ValueError, match="lam_f"):
        rbd.contact_dynamics_contraction(model, q, v, tau, c, lam_a, np.ones(6))
    with pytest.raises(ValueError, match="lam_a"):
        rbd.contact_dynamics_contraction(model, q, v, tau, c, np.ones(3), np.ones(3))
    with pytest.raises(ValueError, match="finite"):
        rbd.contact_dynamics_contraction(model, q, v, tau, c, lam_a, np.array([1, np.nan, 0]))
    with pytest.raises(KeyError):
        rbd.contact_dynamics_contraction(model, q, v, tau, (rbd.Contact("nope", "3d"),),
                                         lam_a, np.ones(3))


# ---- impulse dynamics ------------------------------------------------------------------

def impulse_complex_step(model, q, v, contacts, lam_v, lam_f, restitution, damping):
    """d2_dq2, d2_dqdv and the v-v block by the complex step of the contracted
    impulse_dynamics_derivatives (complex128 throughout), q on the manifold."""
    nv = model.nv

    def grad(q, v):
        d = rbd.impulse_dynamics_derivatives(model, q, v, contacts, restitution, damping)
        return (lam_v @ d.dvafter_dq + lam_f @ d.dimpulses_dq,
                lam_v @ d.dvafter_dv + lam_f @ d.dimpulses_dv)

    qc, vc = q.astype(complex), v.astype(complex)
    out = [np.zeros((nv, nv)) for _ in range(3)]        # qq, qv, vv
    for k in range(nv):
        e = np.zeros(nv, complex)
        e[k] = 1j * H
        out[0][:, k] = grad(rbd.integrate(model, qc, e), vc)[0].imag / H
        gq, gv = grad(qc, vc + e)
        out[1][:, k], out[2][:, k] = gq.imag / H, gv.imag / H
    return out


def check_impulse(model, contacts, seed, restitution=0.0, damping=0.0):
    rng = np.random.default_rng(seed)
    q = rbd.random_configuration(model, rng)
    v, lam_v = rng.normal(size=(2, model.nv))
    lam_f = rng.normal(size=sum(c.dim for c in contacts))
    got = rbd.impulse_dynamics_contraction(model, q, v, contacts, lam_v, lam_f,
                                           restitution=restitution, damping=damping)
    assert got._fields == ("d2_dq2", "d2_dqdv")
    ref = impulse_complex_step(model, q, v, contacts, lam_v, lam_f, restitution, damping)
    assert np.abs(ref[2]).max() == 0.0          # the v-v block the docstring calls zero
    for name, a, b in zip(got._fields, got, ref):
        scale = np.abs(b).max()
        assert scale > 0
        assert np.abs(a - b).max() <= 1e-10 * scale, (name, np.abs(a - b).max() / scale)


@pytest.mark.parametrize("reference", ["local", "local_world_aligned"])
def test_impulse_solo12_four_point_feet(reference):
    model, _ = robot_pair("solo12", True)
    c = tuple(rbd.Contact(f, "3d", reference=reference)
              for f in ("FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT"))
    check_impulse(model, c, 11, restitution=0.3 if reference == "local" else 0.0)


@pytest.mark.parametrize("reference", ["local", "local_world_aligned"])
def test_impulse_talos_surface_feet(reference):
    model, _ = robot_pair("talos_full_v2", True)
    c = tuple(rbd.Contact(f, "6d", reference=reference)
              for f in ("left_sole_link", "right_sole_link"))
    check_impulse(model, c, 12, damping=1e-3 if reference == "local_world_aligned" else 0.0)


def test_impulse_iiwa14_and_random_tree():
    model = rbd.load_robot("iiwa14")
    check_impulse(model, (rbd.Contact("iiwa_link_ee", "3d", "local_world_aligned"),), 13)
    check_impulse(model, (rbd.Contact("iiwa_link_ee", "6d"),), 14, restitution=0.5)
    tree, _ = tree_pair(5, 10, True)
    assert 3 in {tree.mi[j, 5] for j in range(1, tree.njoints)}     # a spherical joint
    parents = tree.frame_parents
    deep = max(range(len(tree.frames)), key=lambda f: tree.mi[parents[f], 3])
    check_impulse(tree, (rbd.Contact(deep, "3d", "local_world_aligned"),), 15)
    check_impulse(tree, (rbd.Contact(deep, "6d", "local"),), 16, restitution=0.2)


def test_impulse_batch_float32_and_bad_input():
    model, _ = robot_pair("solo12", True)
    c = tuple(rbd.Contact(f, "3d", reference="local_world_aligned")
              for f in ("FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT"))
    rng = np.random.default_rng(17)
    B = 4
    q = np.stack([rbd.random_configuration(model, rng) for _ in range(B)])
    v, lam_v = rng.normal(size=(2, B, model.nv))
    lam_f = rng.normal(size=(B, 12))
    got = rbd.impulse_dynamics_contraction(model, q, v, c, lam_v, lam_f, restitution=0.2)
    for b in range(B):
        one = rbd.impulse_dynamics_contraction(model, q[b], v[b], c, lam_v[b], lam_f[b],
                                               restitution=0.2)
        for x, y in zip(got, one):
            assert x.shape == (B, model.nv, model.nv)
            assert np.array_equal(x[b], y)
    if importlib.util.find_spec("dask") is not None:    # its wrapper: the same batch
        import dask.array as da
        import rbdiff.dask as rdd
        lazy = rdd.impulse_dynamics_contraction(
            model, *(da.from_array(x, chunks=(2, -1)) for x in (q, v)), c,
            *(da.from_array(x, chunks=(2, -1)) for x in (lam_v, lam_f)), restitution=0.2)
        for x, y in zip(lazy, got):
            assert np.array_equal(x.compute(scheduler="sync"), y)
    small = rbd.load_robot("iiwa14")
    ce = (rbd.Contact("iiwa_link_ee", "3d"),)
    q1 = rbd.random_configuration(small, rng)
    v1, lv1 = rng.normal(size=(2, small.nv))
    lf1 = rng.normal(size=3)
    ref = rbd.impulse_dynamics_contraction(small, q1, v1, ce, lv1, lf1)
    f32 = rbd.impulse_dynamics_contraction(small, *(x.astype(np.float32)
                                                    for x in (q1, v1)), ce,
                                           lv1.astype(np.float32), lf1.astype(np.float32))
    for a, b in zip(f32, ref):
        assert a.dtype == np.float32
        assert np.abs(a - b).max() <= 2e-3 * np.abs(b).max()
    with pytest.raises(ValueError, match="lam_f"):
        rbd.impulse_dynamics_contraction(small, q1, v1, ce, lv1, np.ones(6))
    with pytest.raises(ValueError, match="lam_v"):
        rbd.impulse_dynamics_contraction(small, q1, v1, ce, np.ones(3), lf1)
    with pytest.raises(ValueError, match="finite"):
        rbd.impulse_dynamics_contraction(small, q1, v1, ce, lv1, np.array([1, np.nan, 0]))
    with pytest.raises(ValueError, match="restitution"):
        rbd.impulse_dynamics_contraction(small, q1, v1, ce, lv1, lf1, restitution=2.0)
    with pytest.raises(KeyError):
        rbd.impulse_dynamics_contraction(small, q1, v1, (rbd.Contact("nope", "3d"),), lv1,
                                         lf1)


@pytest.mark.parametrize("reference", ["local", "local_world_aligned"])
def test_adjoint_decomposition_of_the_contracted_hessian(reference):
    model, frame, kp, kd = rbd.load_robot("iiwa14"), "iiwa_link_ee", 10.0, 2.0
    n = model.nv
    c = (rbd.Contact(frame, "3d", reference=reference, gains=(kp, kd),
                     placement=np.eye(4)),)
    rng = np.random.default_rng(0)
    q = rbd.random_configuration(model, rng)
    v, tau, lam = rng.normal(size=(3, n))
    x0, N = np.concatenate([q, v, tau]), 3 * n

    def split(x):
        return x[:n], x[n:2 * n], x[2 * n:]

    def contracted_gradient(x):
        d = rbd.contact_dynamics_derivatives(model, *split(x), c)
        return lam @ np.hstack([d.dqdd_dq, d.dqdd_dv, d.dqdd_dtau])

    h = 1e-6
    Href = np.zeros((N, N))
    for k in range(N):
        e = np.zeros(N)
        e[k] = h
        Href[:, k] = (contracted_gradient(x0 + e) - contracted_gradient(x0 - e)) / (2 * h)

    def Jc(q):
        return rbd.frame_jacobian(model, q, frame, "local")[:3]

    def r1(x, a, f):
        q, v, t = split(x)
        return rbd.rnea(model, q, v, a) - Jc(q).T @ f - t

    def r2(x, a, f):
        q, v, _ = split(x)
        ac = rbd.frame_acceleration(model, q, v, a, frame, "local", classical=True)[:3]
        T = rbd.frame_placement(model, q, frame)
        vl = rbd.frame_velocity(model, q, v, frame, "local")[:3]
        return ac + kp * (T[:3, :3].T @ T[:3, 3]) + kd * vl      # a_c - e, placement I

    a0, f0 = rbd.contact_dynamics(model, q, v, tau, c)
    d = rbd.contact_dynamics_derivatives(model, q, v, tau, c)
    dfq, dfv, dft = d.dforces_dq, d.dforces_dv, d.dforces_dtau
    if reference == "local_world_aligned":      # f_lwa = R f_local, back to LOCAL
        R = rbd.frame_placement(model, q, frame)[:3, :3]
        Jw = rbd.frame_jacobian(model, q, frame, "local_world_aligned")[3:]
        dfq = R.T @ (dfq - np.cross(Jw.T, f0).T)
        dfv, dft, f0 = R.T @ dfv, R.T @ dft, R.T @ f0
    assert np.abs(r1(x0, a0, f0)).max() < 1e-10 and np.abs(r2(x0, a0, f0)).max() < 1e-10
    J = Jc(q)
    K = np.block([[rbd.crba(model, q), J.T], [J, np.zeros((3, 3))]])
    mn = np.linalg.solve(K, np.concatenate([lam, np.zeros(3)]))
    mu, nu = mn[:n], mn[n:]
    np.testing.assert_allclose(mu, d.dqdd_dtau.T @ lam, atol=1e-10 * np.abs(mu).max())

    def L(x):
        return lam @ a0 - mu @ r1(x, a0, f0) - nu @ r2(x, a0, f0)

    hh = 1e-4
    Lxx = np.zeros((N, N))
    for i in range(N):
        for j in range(i, N):
            ei, ej = np.zeros(N), np.zeros(N)
            ei[i] = ej[j] = hh
            Lxx[i, j] = Lxx[j, i] = (L(x0 + ei + ej) - L(x0 + ei - ej) - L(x0 - ei + ej)
                                     + L(x0 - ei - ej)) / (4 * hh * hh)

    def dL_dy(x):           # at fixed (mu, nu): zero at x0 (the adjoint equations)
        q = split(x)[0]
        J = Jc(q)
        return np.concatenate([lam - rbd.crba(model, q) @ mu - J.T @ nu, J @ mu])

    assert np.abs(dL_dy(x0)).max() < 1e-10
    Lyx = np.zeros((n + 3, N))
    for k in range(N):
        e = np.zeros(N)
        e[k] = h
        Lyx[:, k] = (dL_dy(x0 + e) - dL_dy(x0 - e)) / (2 * h)
    yx = np.vstack([np.hstack([d.dqdd_dq, d.dqdd_dv, d.dqdd_dtau]),
                    np.hstack([dfq, dfv, dft])])
    H = Lxx + Lyx.T @ yx + yx.T @ Lyx
    scale = np.abs(Href).max()
    assert np.abs(H - Href).max() < 1e-5 * scale            # finite differences' accuracy
    assert np.abs(Lxx - Href).max() > 0.1 * scale           # the cross terms count
