"""NumPy prototype of contact_dynamics_contraction (3D and 6D w/o Kp 6D)."""
import numpy as np
import rbdiff as rbd
from rbdiff.model.layout import MI_IV, MI_NV, MI_PARENT, FM_R, FM_P
from rbdiff.contacts import pack


def mx(x, y):
    return np.concatenate([np.cross(x[3:], y[:3]) + np.cross(x[:3], y[3:]), np.cross(x[3:], y[3:])])


def chain(model, j):
    mi = model.mi
    joints = []
    while j > 0:
        joints.append(j)
        j = mi[j, MI_PARENT]
    dofs, jof = [], []
    for j in reversed(joints):
        for d in range(mi[j, MI_IV], mi[j, MI_IV] + mi[j, MI_NV]):
            dofs.append(d)
            jof.append(j)
    return dofs, jof


def proto(model, q, v, tau, contacts, lam_a, lam_f, damping=0.0):
    nv = model.nv
    cint, cflt, nc = pack(model, contacts)
    qdd, forces = rbd.contact_dynamics(model, q, v, tau, contacts, damping)
    d = rbd.contact_dynamics_derivatives(model, q, v, tau, contacts, damping)
    yq = np.vstack([d.dqdd_dq, d.dforces_dq.copy()])
    yv = np.vstack([d.dqdd_dv, d.dforces_dv.copy()])
    yt = np.vstack([d.dqdd_dtau, d.dforces_dtau.copy()])
    Jrows, ell, floc = [], lam_f.copy(), forces.copy()
    Rs = []
    for k, c in enumerate(contacts):
        r0, dim = cint[k, 3], cint[k, 1]
        T = rbd.frame_placement(model, q, c.frame)
        R = T[:3, :3]
        Rs.append(R)
        Jl = rbd.frame_jacobian(model, q, c.frame, "local")
        Jrows.append(Jl[:dim])
        if c.reference == "local_world_aligned":
            Jw = rbd.frame_jacobian(model, q, c.frame, "local_world_aligned")[3:]
            for h in range(r0, r0 + dim, 3):
                f = forces[h:h + 3]
                yq[nv + h:nv + h + 3] = R.T @ (yq[nv + h:nv + h + 3] - np.cross(Jw.T, f).T)
                yv[nv + h:nv + h + 3] = R.T @ yv[nv + h:nv + h + 3]
                yt[nv + h:nv + h + 3] = R.T @ yt[nv + h:nv + h + 3]
                floc[h:h + 3] = R.T @ f
                ell[h:h + 3] = R.T @ lam_f[h:h + 3]
    J = np.vstack(Jrows)
    Minv = rbd.minverse(model, q)
    W = J @ Minv @ J.T + damping * np.eye(nc)
    nu = np.linalg.solve(W, J @ Minv @ lam_a + ell)
    mu = Minv @ lam_a - Minv @ J.T @ nu
    # contact forces on joints
    fc = np.zeros((model.njoints, 6))
    for k, c in enumerate(contacts):
        r0, dim, j, fr = cint[k, 3], cint[k, 1], cint[k, 4], cint[k, 0]
        fm = model.frame_mf[fr]
        Rf, pf = fm[FM_R:FM_R + 9].reshape(3, 3), fm[FM_P:FM_P + 3]
        f = Rf @ floc[r0:r0 + 3]
        n = Rf @ floc[r0 + 3:r0 + 6] if dim == 6 else np.zeros(3)
        fc[j, :3] += f
        fc[j, 3:] += n + np.cross(pf, f)
    C = rbd.rnea_second_order_contraction(model, q, v, qdd, mu, fext=fc)
    HQ, HV, HX = -C[0], -C[1], -C[2]
    BA = -C[3].copy()
    BF = np.zeros((nc, nv))
    for k, c in enumerate(contacts):
        r0, dim, j = cint[k, 3], cint[k, 1], cint[k, 4]
        dofs, jof = chain(model, j)
        Jl = rbd.frame_jacobian(model, q, c.frame, "local")
        Jc = [Jl[:, m] for m in dofs]
        n = len(dofs)
        nu6 = np.zeros(6); nu6[:dim] = nu[r0:r0 + dim]
        kp = cflt[k, 0:6]; kd = cflt[k, 6:12]
        nud, nup = kd * nu6, kp * nu6
        def prefix(w):
            lt, le = [], []
            above, cur, cj = np.zeros(6), np.zeros(6), None
            for p in range(n):
                if jof[p] != cj:
                    above = above + cur; cur = np.zeros(6); cj = jof[p]
                lt.append(above.copy())
                cur = cur + Jc[p] * w[dofs[p]]
            # le: incl own joint
            tot = above + cur
            for p in range(n):
                s = lt[p].copy()
                for r in range(n):
                    if jof[r] == jof[p]:
                        s += Jc[r] * w[dofs[r]]
                le.append(s)
            return lt, le, tot
        Vlt, Vle, Vt = prefix(v)
        Alt, _, _ = prefix(qdd)
        Mlt, _, _ = prefix(mu)
        Tlt, cur, cj, above = [], np.zeros(6), None, np.zeros(6)
        for p in range(n):
            if jof[p] != cj:
                above = above + cur; cur = np.zeros(6); cj = jof[p]
            Tlt.append(above.copy())
            cur = cur + v[dofs[p]] * mx(Vlt[p], Jc[p])
        def prec(a, b):   # a strictly above b (positions)
            return jof[a] != jof[b] and a < b
        def Cb(x, y):
            return nu6[:3] @ np.cross(x[3:], y[:3]) if dim == 3 else 0.0
        R = Rs[k]
        T = rbd.frame_placement(model, q, c.frame)
        perr = R.T @ (T[:3, 3] - cflt[k, 21:24])
        lwa = c.reference == "local_world_aligned"
        for a in range(n):        # k index -> position a
            ka = dofs[a]
            for b in range(n):    # l -> position b
                lb = dofs[b]
                mn = min(a, b)
                Jk, Jl_ = Jc[a], Jc[b]
                kl = prec(a, b)
                dJk = mx(Jk, Jl_) if kl else np.zeros(6)
                ddG = lambda P: mx(mx(P[mn], Jl_), Jk) + (mx(P[a], mx(Jk, Jl_)) if kl else 0)
                gA = ddG(Alt)
                dTk = mx(Tlt[mn], Jl_) + (mx(mx(Vlt[b], Jl_), Vlt[a] - Vlt[b]) if prec(b, a) else 0)
                dVk = mx(Vlt[mn], Jl_)
                dVge = mx(Vlt[b] - Vlt[a], Jl_) if kl else np.zeros(6)
                Vge = Vt - Vlt[a]
                gT = mx(dTk, Jk) + mx(Tlt[a], dJk) + mx(mx(dVk, Jk) + mx(Vlt[a], dJk), Vge) + mx(mx(Vlt[a], Jk), dVge)
                ddv = ddG(Vlt)
                dvk, dvl = mx(Vlt[a], Jk), mx(Vlt[b], Jl_)
                val = nu6 @ (gA + gT) + nud @ ddv
                val += Cb(ddv, Vt) + Cb(dvk, dvl) + Cb(dvl, dvk) + Cb(Vt, ddv)
                if dim == 3:
                    wk, wl = Jk[3:], Jl_[3:]
                    val += nup[:3] @ ((dJk[:3]) + np.cross(Jl_[:3] + np.cross(perr, wl), wk) + np.cross(perr, dJk[3:]))
                HQ[ka, lb] -= val
                if lwa:
                    for h in range(0, dim, 3):
                        l3, f3 = ell[r0 + h:r0 + h + 3], floc[r0 + h:r0 + h + 3]
                        HQ[ka, lb] += l3 @ np.cross(Jl_[3:], np.cross(Jk[3:], f3)) + l3 @ np.cross(dJk[3:], f3)
                # vv: i=a, j=b
                if a != b and jof[a] != jof[b]:
                    HV[ka, lb] -= nu6 @ (mx(Jc[min(a, b)], Jc[max(a, b)]))
                HV[ka, lb] -= Cb(Jk, Jl_) + Cb(Jl_, Jk)
                # qv: q_l (b), v_j (a)
                j_, l_ = a, b
                Jj = Jc[j_]
                jl = prec(j_, l_)
                Vjl = (Vlt[l_] - Vle[j_]) if jl else np.zeros(6)
                dJj = mx(Jj, Jl_) if jl else np.zeros(6)
                g = mx(mx(Vlt[min(j_, l_)], Jl_), Jj) + mx(Jj, mx(Vjl, Jl_))
                if jl:
                    g += mx(Vlt[j_], mx(Jj, Jl_)) + mx(mx(Jj, Jl_), Vt - Vle[j_])
                val = nu6 @ g + nud @ dJj + Cb(dJj, Vt) + Cb(Jj, dvl) + Cb(dvl, Jj) + Cb(Vt, dJj)
                HX[lb, ka] -= val
                # BA[m=a, l=b]
                if kl:
                    BA[ka, lb] -= nu6 @ mx(Jk, Jl_)
            BF[r0:r0 + dim, dofs[a]] = mx(Mlt[a], Jc[a])[:dim]
            if lwa:
                for h in range(0, dim, 3):
                    BF[r0 + h:r0 + h + 3, dofs[a]] += np.cross(ell[r0 + h:r0 + h + 3], Jc[a][3:])
    B = np.vstack([BA, BF])
    Hqq = HQ + B.T @ yq + yq.T @ B
    Hqv = HX + B.T @ yv
    Htq = yt.T @ B
    return Hqq, HV, Hqv, Htq


def reference(model, q, v, tau, contacts, lam_a, lam_f, damping=0.0, h=1e-20):
    nv = model.nv
    def grad(q, v, tau):
        d = rbd.contact_dynamics_derivatives(model, q, v, tau, contacts, damping)
        return (lam_a @ d.dqdd_dq + lam_f @ d.dforces_dq, lam_a @ d.dqdd_dv + lam_f @ d.dforces_dv,
                lam_a @ d.dqdd_dtau + lam_f @ d.dforces_dtau)
    qc, vc, tc = q.astype(complex), v.astype(complex), tau.astype(complex)
    Hqq, Hvv, Hqv, Htq = (np.zeros((nv, nv)) for _ in range(4))
    for k in range(nv):
        e = np.zeros(nv, complex); e[k] = 1j * h
        gq, gv, gt = grad(rbd.integrate(model, qc, e), vc, tc)
        Hqq[:, k] = gq.imag / h; Htq[:, k] = gt.imag / h
        gq, gv, gt = grad(qc, vc + e, tc)
        Hqv[:, k] = gq.imag / h; Hvv[:, k] = gv.imag / h
    return Hqq, Hvv, Hqv, Htq


if __name__ == "__main__":
    import sys
    rng = np.random.default_rng(1)
    cases = {
        "iiwa": (rbd.load_robot("iiwa14"), ["iiwa_link_ee"], "3d"),
        "solo": (rbd.load_robot("solo12", floating_base=True), ["FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT"], "3d"),
    }
    for name, (model, frames, kind) in cases.items():
        for ref in ["local", "local_world_aligned"]:
            cs = tuple(rbd.Contact(f, kind, reference=ref, gains=(10.0, 2.0)) for f in frames)
            q = rbd.random_configuration(model, rng)
            v, tau, la = rng.normal(size=(3, model.nv))
            nc = sum(c.dim for c in cs)
            lf = rng.normal(size=nc)
            P = proto(model, q, v, tau, cs, la, lf)
            Rf = reference(model, q, v, tau, cs, la, lf)
            for nm, a, b in zip(["qq", "vv", "qv", "tq"], P, Rf):
                print(name, ref, nm, np.abs(a - b).max() / np.abs(b).max())
