"""The contraction of contact dynamics' second derivatives (issue 27, part 2), as far as
it stands: the adjoint decomposition it is to be built on, checked by finite differences
of rbdiff's own first-order contact derivatives (no kernel computes it yet).

With y = (a, f) the KKT solution (f the LOCAL contact forces), the residuals
    r1 = ID(q, v, a) - J(q)^T f - tau          (f held in the contact frame: fext)
    r2 = a_c(q, v, a) - e(q, v)                (LOCAL classical acceleration, Baumgarte e)
are linear in y, so with (mu, nu) = K^-1 (lam, 0), K = [[M, J^T], [J, 0]], and
L = lam.a - mu.r1 - nu.r2 the Hessian of lam.qdd(x), x = (q, v, tau), is
    H = L_xx + L_xy y_x + y_x^T L_yx             (L_yy = 0)
with y_x the first-order contact derivatives and L_yx = d/dx [lam - M mu - J^T nu; J mu].
mu = dqdd_dtau^T lam. The LOCAL_WORLD_ALIGNED reference gives the same H (its forces
rotated back to LOCAL)."""

import numpy as np
import pytest

import rbdiff as rbd


@pytest.mark.parametrize("reference", ["local", "local_world_aligned"])
def test_adjoint_decomposition_of_the_contracted_hessian(reference):
    model, frame, kp, kd = rbd.load_robot("iiwa14"), "iiwa_link_ee", 10.0, 2.0
    n = model.nv
    c = (rbd.Contact(frame, "3d", reference=reference, gains=(kp, kd)),)
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
