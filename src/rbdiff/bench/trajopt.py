"""Trajectory optimisation (rbdiff.trajopt) against Crocoddyl: the bench section
``trajopt`` (``python -m rbdiff bench --only trajopt``).

(A) panda reach (T = 100, dt = 0.01): iterations, time per iteration split into
    derivatives, backward pass and line search, final cost; rbdiff ilqr / ddp / fddp
    and, when a compatible Crocoddyl is installed (``pip install
    'rbdiff[trajopt-bench]'``: Crocoddyl 3.2 needs pin 4.0.x), Crocoddyl FDDP / DDP on
    the identical problem, interleaved in one process (the median of ``repeats`` solves
    of each).
(B) iiwa14 swing-up from a folded pose to the upright one (q = 0) from ``runs`` random
    initial controls (gravity torques + noise): iterations of ilqr against ddp per run,
    as Nganga & Wensing (RA-L 2021) compare them.
(C) double-pendulum swing-up (hanging to upright).
(D) solo12 with contact phases (four feet, three, a free knot, a touch-down impulse, four):
    rbdiff fddp against Crocoddyl FDDP from the same infeasible warm start, and the cost
    of the same controls in both.
Cost-against-iteration curves of (A) and (C) in ``trajopt.png``.
"""

from __future__ import annotations

import time

import numpy as np

import rbdiff as rbd
import rbdiff.trajopt as to
from rbdiff.bench import report as rp

METHODS = ("ilqr", "ddp")
CROCODDYL = ("FDDP", "DDP")


def crocoddyl_ok():
    """A Crocoddyl whose Pinocchio it was built against (3.2 wants pin 4.0.x; another
    can crash the process on the first rollout)."""
    try:
        import crocoddyl
        import pinocchio
    except ImportError:
        return False
    return crocoddyl.__version__.startswith("3.2") and pinocchio.__version__.startswith("4.0")


def crocoddyl_problem(prob, pin_model):
    """The Crocoddyl ShootingProblem of a trajopt.Problem on ``pin_model``, Pinocchio's
    model of the same robot: the cost terms one to one (ResidualModelFrameTranslation,
    ResidualModelState, ResidualModelControl with CostModelResidual's 0.5 ||r||^2);
    ActuationModelFull or ActuationModelFloatingBase as prob.actuation; per knot an
    IntegratedActionModelEuler of DifferentialActionModelFreeFwdDynamics (a free knot) or
    DifferentialActionModelContactFwdDynamics (a contact knot: ContactModel3D / 6D of the
    same frames, reference, gains and reference placement), or an
    ActionModelImpulseFwdDynamics (an impulse knot: ImpulseModel3D / 6D, r_coeff 0, its
    costs impulse_costs); the terminal one an Euler model with dt 0. Contact gains must be
    the same on every row (Crocoddyl's are two numbers). Per-knot costs (``running`` a
    list of T lists: the MPC's problems) give each knot a model of its own;
    per-coordinate weights become ActivationModelWeightedQuad, a FrictionCone a
    ResidualModelContactFrictionCone and a StateBounds a ResidualModelState, each with
    ActivationModelQuadraticBarrier on the same bounds."""
    import crocoddyl
    import pinocchio as pin
    from rbdiff.trajopt.rollout import CONTACT, IMPULSE

    state = crocoddyl.StateMultibody(pin_model)
    actuation = (crocoddyl.ActuationModelFloatingBase(state)
                 if prob.actuation == "floating_base" else
                 crocoddyl.ActuationModelFull(state))
    refs = {"local": pin.LOCAL, "local_world_aligned": pin.LOCAL_WORLD_ALIGNED}

    def fid(frame):
        return pin_model.getFrameId(prob.model.frames[
            rbd.kinematics._frame_id(prob.model, frame)].name)

    def weighted(t):
        w = getattr(t, "weights", None)
        return None if w is None else crocoddyl.ActivationModelWeightedQuad(np.asarray(w))

    def barrier(lower, upper):
        return crocoddyl.ActivationModelQuadraticBarrier(
            crocoddyl.ActivationBounds(np.asarray(lower, float), np.asarray(upper, float)))

    def costs(terms, nu):
        cm = crocoddyl.CostModelSum(state, nu)
        for k, t in enumerate(terms):
            act = None
            if isinstance(t, to.FrameTranslation):
                r = crocoddyl.ResidualModelFrameTranslation(state, fid(t.frame), t.target,
                                                            nu)
            elif isinstance(t, to.StateRegularization):
                r = crocoddyl.ResidualModelState(state, t.x_ref, nu)
                act = weighted(t)
            elif isinstance(t, to.ControlRegularization):
                r = crocoddyl.ResidualModelControl(state, nu) if t.u_ref is None else \
                    crocoddyl.ResidualModelControl(state, t.u_ref)
                act = weighted(t)
            elif isinstance(t, to.FrictionCone):
                mu, R, nf, inner, fmin, fmax = t.cone
                cone = crocoddyl.FrictionCone(R, mu, nf, inner, fmin, fmax)
                r = crocoddyl.ResidualModelContactFrictionCone(state, fid(t.frame), cone, nu)
                act = barrier(cone.lb, cone.ub)
            elif isinstance(t, to.StateBounds):
                r = crocoddyl.ResidualModelState(state, t.x_ref, nu)
                act = barrier(t.lower, t.upper)
            else:
                raise TypeError(f"no Crocoddyl twin for {type(t).__name__}")
            cost = crocoddyl.CostModelResidual(state, r) if act is None else \
                crocoddyl.CostModelResidual(state, act, r)
            cm.addCost(f"c{k}", cost, t.weight)
        return cm

    def placement(c):
        T = np.eye(4) if c.placement is None else np.vstack(
            [np.reshape(c.placement, (3, 4)), [0.0, 0.0, 0.0, 1.0]])
        return pin.SE3(T[:3, :3].copy(), T[:3, 3].copy())

    def gains(c):
        kp, kd = c.gains
        if len(set(kp)) > 1 or len(set(kd)) > 1:
            raise ValueError("Crocoddyl's contact gains are one kp and one kd")
        return np.array([kp[0], kd[0]])

    def contact_model(contacts):
        cm = crocoddyl.ContactModelMultiple(state, actuation.nu)
        for k, c in enumerate(contacts):
            if c.kind == "3d":
                m = crocoddyl.ContactModel3D(state, fid(c.frame), placement(c).translation,
                                             refs[c.reference], actuation.nu, gains(c))
            else:
                m = crocoddyl.ContactModel6D(state, fid(c.frame), placement(c),
                                             refs[c.reference], actuation.nu, gains(c))
            cm.addContact(f"k{k}", m)
        return cm

    def impulse_model(contacts):
        im = crocoddyl.ImpulseModelMultiple(state)
        for k, c in enumerate(contacts):
            cls = crocoddyl.ImpulseModel3D if c.kind == "3d" else crocoddyl.ImpulseModel6D
            im.addImpulse(f"i{k}", cls(state, fid(c.frame), refs[c.reference]))
        return im

    cache = {}

    def knot(kind, contacts):
        key = (kind, contacts)
        if key not in cache:
            if kind == IMPULSE:
                cache[key] = crocoddyl.ActionModelImpulseFwdDynamics(
                    state, impulse_model(contacts), costs(prob.impulse_costs, 0), 0.0, 0.0,
                    True)
            else:
                cm = costs(prob.running, actuation.nu)
                dam = (crocoddyl.DifferentialActionModelContactFwdDynamics(
                    state, actuation, contact_model(contacts), cm, 0.0, True)
                    if kind == CONTACT else
                    crocoddyl.DifferentialActionModelFreeFwdDynamics(state, actuation, cm))
                cache[key] = crocoddyl.IntegratedActionModelEuler(dam, prob.dt)
        return cache[key]

    if prob.running or not prob.T:
        running = [knot(int(prob.kind[t]), prob.knot_contacts[t]) for t in range(prob.T)]
    else:                       # per-knot costs: a model of each knot's own
        running = []
        for t in range(prob.T):
            kind, contacts = int(prob.kind[t]), prob.knot_contacts[t]
            if kind == IMPULSE:
                running.append(crocoddyl.ActionModelImpulseFwdDynamics(
                    state, impulse_model(contacts), costs(prob.knot_costs[t], 0), 0.0,
                    0.0, True))
                continue
            cm = costs(prob.knot_costs[t], actuation.nu)
            dam = (crocoddyl.DifferentialActionModelContactFwdDynamics(
                state, actuation, contact_model(contacts), cm, 0.0, True)
                if kind == CONTACT else
                crocoddyl.DifferentialActionModelFreeFwdDynamics(state, actuation, cm))
            running.append(crocoddyl.IntegratedActionModelEuler(dam, prob.dt))
    terminal = crocoddyl.IntegratedActionModelEuler(
        crocoddyl.DifferentialActionModelFreeFwdDynamics(
            state, actuation, costs(prob.terminal, actuation.nu)), 0.0)
    problem = crocoddyl.ShootingProblem(prob.x0, running, terminal)
    problem.nthreads = 1        # its default, 2 OpenMP threads, is not the single thread
    return problem              # rbdiff runs on (a loaded machine made it 2-4x slower)


def crocoddyl_controls(prob, us):
    """Crocoddyl's list of controls for ``us`` (T, nu): impulse knots take none."""
    from rbdiff.trajopt.rollout import IMPULSE
    return [np.zeros(0) if prob.kind[t] == IMPULSE else np.asarray(us[t], dtype=float)
            for t in range(prob.T)]


FEET = ("FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT")


def solo_standing():
    """(model, x0): solo12 with a free flyer standing on its four feet (soles at z = 0),
    at rest."""
    m = rbd.load_robot("solo12", floating_base=True)
    q0 = rbd.neutral(m)
    q0[7:] = [0.1, 0.8, -1.6, -0.1, 0.8, -1.6, 0.1, -0.8, 1.6, -0.1, -0.8, 1.6]
    q0[2] -= min(rbd.frame_placement(m, q0, f)[2, 3] for f in FEET)
    return m, np.concatenate([q0, np.zeros(m.nv)])


def feet_contacts(frames=FEET):
    """Point contacts on the feet as Crocoddyl's quadruped gaits make them
    (LOCAL_WORLD_ALIGNED, Baumgarte kp 0, kd 50)."""
    return tuple(rbd.Contact(f, "3d", "local_world_aligned", gains=(0.0, 50.0))
                 for f in frames)


def legged_problem(T=12, dt=0.01):
    """(D): solo12 shifting its base 3 cm forward and 2 cm down while lifting a foot:
    four feet at knots 0-3, three (FL lifted) at 4-6, a free knot at 7, a touch-down on
    four (an impulse knot) at 8, four feet from 9 on (T >= 10); state and control
    regularisation, Crocoddyl's weights of its gaits' order."""
    m, x0 = solo_standing()
    four, three = feet_contacts(), feet_contacts(FEET[1:])
    xref = x0.copy()
    xref[0] += 0.03
    xref[2] -= 0.02
    per = [four] * 4 + [three] * 3 + [None, None] + [four] * (T - 9)
    return to.Problem(m, x0, T, dt,
                      running=[to.StateRegularization(xref, 1e-1),
                               to.ControlRegularization(1e-3)],
                      terminal=[to.StateRegularization(xref, 1e2)],
                      contacts=per, impulses={8: four},
                      impulse_costs=[to.StateRegularization(xref, 1e1)])


def reach_problem(T=100, dt=0.01):
    """(A): panda's hand to a point 25 cm away, from a bent pose at rest."""
    model = rbd.load_robot("panda")
    q0 = rbd.neutral(model)
    q0[:7] = [0.0, -0.3, 0.0, -2.2, 0.0, 2.0, 0.8]
    x0 = np.concatenate([q0, np.zeros(model.nv)])
    frame = "panda_hand_tcp"
    target = rbd.frame_placement(model, q0, frame)[:3, 3] + [0.2, 0.1, -0.1]
    return to.Problem(model, x0, T, dt,
                      running=[to.FrameTranslation(frame, target, 1.0),
                               to.StateRegularization(x0, 1e-2),
                               to.ControlRegularization(1e-4)],
                      terminal=[to.FrameTranslation(frame, target, 1e3),
                                to.StateRegularization(x0, 1e-2)])


def swing_problem(name, x0, T, dt):
    """(B), (C): from x0 to the upright rest state (q = 0, v = 0)."""
    model = rbd.load_robot(name)
    goal = np.zeros(model.nq + model.nv)
    return to.Problem(model, np.asarray(x0, dtype=float), T, dt,
                      running=[to.StateRegularization(goal, 1e-2),
                               to.ControlRegularization(1e-3)],
                      terminal=[to.StateRegularization(goal, 1e3)])


def _solve_rbdiff(prob, method, us=None, max_iter=200):
    t0 = time.perf_counter()
    r = to.solve(prob, method=method, us=us, max_iter=max_iter)
    wall = time.perf_counter() - t0
    it = max(r.iterations, 1)
    return dict(solver=f"rbdiff {method}", iterations=r.iterations, converged=r.converged,
                cost=r.cost, per_iter_s=wall / it,
                split_s={k: v / it for k, v in r.timings.items() if k != "compile"},
                history=[h["cost"] for h in r.history])


def _solve_crocoddyl(problem, kind, x0, us0, max_iter=200):
    import crocoddyl
    s = (crocoddyl.SolverFDDP if kind == "FDDP" else crocoddyl.SolverDDP)(problem)
    s.th_stop = 1e-9
    costs = []

    class Log(crocoddyl.CallbackAbstract):
        def __call__(self, solver):
            costs.append(solver.cost)

    s.setCallbacks([Log()])
    t0 = time.perf_counter()
    ok = s.solve([x0] * (problem.T + 1), list(us0), max_iter, False)
    wall = time.perf_counter() - t0
    return dict(solver=f"Crocoddyl {kind}", iterations=s.iter, converged=bool(ok),
                cost=s.cost, per_iter_s=wall / max(s.iter, 1), split_s={},
                history=costs)


def _median_of(runs):
    best = dict(runs[-1])
    best["per_iter_s"] = float(np.median([r["per_iter_s"] for r in runs]))
    for k in best["split_s"]:
        best["split_s"][k] = float(np.median([r["split_s"][k] for r in runs]))
    return best


def run_reach(cfg):
    """(A): each solver ``repeats`` times, interleaved; medians."""
    tiny = cfg.mode == "tiny"
    prob = reach_problem(T=20 if tiny else 100)
    repeats = 1 if tiny else 3
    us0 = to.solve(prob, max_iter=0).us
    res = dict(T=prob.T, dt=prob.dt, nv=prob.nv, rows=[], crocoddyl=crocoddyl_ok())
    croc = None
    if res["crocoddyl"]:
        from rbdiff.bench.anchor import pin_model
        croc = crocoddyl_problem(prob, pin_model("panda", False))
        xs = croc.rollout(list(us0))
        res["cost_check"] = dict(crocoddyl=croc.calc(xs, list(us0)),
                                 rbdiff=to.rollout_cost(prob, us0))
    ours = METHODS + ("fddp",)      # fddp from x0 at every knot, as Crocoddyl's solves
    for m in ours:
        _solve_rbdiff(prob, m, us0)                        # compiled before timing
    runs = {k: [] for k in ours + (CROCODDYL if croc is not None else ())}
    for _ in range(repeats):
        for m in ours:
            runs[m].append(_solve_rbdiff(prob, m, us0))
        if croc is not None:
            for k in CROCODDYL:
                runs[k].append(_solve_crocoddyl(croc, k, prob.x0, us0))
    res["rows"] = [_median_of(r) for r in runs.values()]
    return res


def run_swing(cfg, name, x0, T, dt, runs, seed, noise):
    """(B) / (C): ilqr and ddp from ``runs`` initial controls (gravity + noise)."""
    prob = swing_problem(name, x0, T, dt)
    rng = np.random.default_rng(seed)
    g = prob.quasi_static(np.broadcast_to(prob.x0[:prob.nq], (T, prob.nq)).copy())
    out = dict(robot=name, T=T, dt=dt, runs=[])
    for _ in range(runs):
        us = g + noise * rng.normal(size=g.shape)
        try:
            row = {m: _solve_rbdiff(prob, m, us, max_iter=300) for m in METHODS}
        except ValueError:          # these controls' rollout diverges: draw others
            out["diverged"] = out.get("diverged", 0) + 1
            continue
        out["runs"].append({m: dict(iterations=r["iterations"], converged=r["converged"],
                                    cost=r["cost"], history=r["history"])
                            for m, r in row.items()})
    best = min(r[m]["cost"] for r in out["runs"] for m in METHODS)
    for r in out["runs"]:
        for m in METHODS:     # solved: converged within 1 % of the best cost found
            r[m]["solved"] = r[m]["converged"] and r[m]["cost"] <= 1.01 * best + 1e-9
    out["best_cost"] = best
    return out


def run_legged(cfg):
    """(D): rbdiff fddp and Crocoddyl FDDP on legged_problem from the same infeasible warm
    start (x0 at every knot, quasi-static controls + noise), ``repeats`` solves each,
    interleaved; medians; and the cost of the same controls in both."""
    tiny = cfg.mode == "tiny"
    prob = legged_problem(T=12 if tiny else 60)
    repeats = 1 if tiny else 5
    T, nq = prob.T, prob.nq
    rng = np.random.default_rng(cfg.seed + 17)
    xs = np.broadcast_to(prob.x0, (T + 1, prob.x0.size)).copy()
    us = prob.quasi_static_controls(xs[:, :nq]) + 0.3 * rng.normal(size=(T, prob.nu))
    res = dict(T=T, dt=prob.dt, nu=prob.nu, crocoddyl=crocoddyl_ok(), rows=[])
    runs = {"rbdiff fddp": []}
    croc = None
    if res["crocoddyl"]:
        from rbdiff.bench.anchor import pin_model
        croc = crocoddyl_problem(prob, pin_model("solo12", True))
        cu = crocoddyl_controls(prob, us)
        res["cost_check"] = dict(crocoddyl=float(croc.calc(croc.rollout(cu), cu)),
                                 rbdiff=float(to.rollout_cost(prob, us)))
        runs["Crocoddyl FDDP"] = []
    for _ in range(repeats + 1):       # the first of each warms up (compiles, allocates)
        t0 = time.perf_counter()
        r = to.solve(prob, method="fddp", xs=xs, us=us)
        wall = time.perf_counter() - t0
        runs["rbdiff fddp"].append(dict(
            solver="rbdiff fddp", iterations=r.iterations, converged=r.converged,
            cost=r.cost, per_iter_s=wall / max(r.iterations, 1),
            split_s={k: v / max(r.iterations, 1) for k, v in r.timings.items()
                     if k != "compile"}, history=[h["cost"] for h in r.history]))
        if croc is not None:
            row = _solve_crocoddyl(croc, "FDDP", prob.x0, crocoddyl_controls(prob, us))
            # Crocoddyl's iter counts from 0 when it converges
            row["iterations"] += row["converged"]
            runs["Crocoddyl FDDP"].append(row)
    res["rows"] = [_median_of(v[1:] if len(v) > 1 else v) for v in runs.values()]
    return res


def total(cfg):
    full = cfg.mode != "tiny"
    return 4 + (full and _csqp_ok()) + (full and crocoddyl_ok())


def _csqp_ok():
    """mim-solvers' CSQP importable beside a compatible Crocoddyl (the constrained-bench
    extra, its own environment)."""
    if not crocoddyl_ok():
        return False
    try:
        import mim_solvers  # noqa: F401
    except ImportError:
        return False
    return True


def run(cfg, bar, out):
    tiny = cfg.mode == "tiny"
    res = dict(reach=run_reach(cfg))
    bar.step("trajopt reach")
    T = 20 if tiny else 100
    res["arm"] = run_swing(cfg, "iiwa14", np.concatenate([[0, 1.6, 0, -1.6, 0, 0.5, 0],
                                                          np.zeros(7)]),
                           T, 0.01, 2 if tiny else 40, cfg.seed + 15, 1.0)
    bar.step("trajopt arm swing-up")
    res["pendulum"] = run_swing(cfg, "double_pendulum", [np.pi, 0.0, 0.0, 0.0], T, 0.01,
                                1, cfg.seed + 16, 0.0)
    bar.step("trajopt double pendulum")
    res["legged"] = run_legged(cfg)
    bar.step("trajopt legged (solo12, contact phases)")
    if not tiny and _csqp_ok():     # the constraints against mim-solvers' CSQP
        from . import trajopt_constrained
        res["constrained"] = trajopt_constrained.run(repeats=1)
        bar.step("trajopt constrained (against CSQP)")
    if not tiny and crocoddyl_ok():     # control bounds alone against BoxFDDP
        from . import trajopt_box
        res["box"] = trajopt_box.run(repeats=1)
        bar.step("trajopt control bounds (against BoxFDDP)")
    return res


def _gap(histories):
    """Each cost history minus the lowest cost reached (the suboptimality), floored."""
    best = min(min(h) for h in histories if h)
    return [[max(c - best, 1e-13) for c in h] for h in histories]


def figures(sec, outdir):
    rows = sec["reach"]["rows"]
    gaps = _gap([r["history"] for r in rows])
    panels = [dict(title=f"(A) panda reach, T = {sec['reach']['T']}", xlabel="iteration",
                   ylabel="cost - lowest cost reached", logx=False,
                   curves=[(r["solver"], list(range(1, len(g) + 1)), g, "o-")
                           for r, g in zip(rows, gaps)])]
    arm = sec["arm"]["runs"]
    panels.append(dict(title="(B) iiwa14 swing-up: iterations per initial control sequence",
                       xlabel="run", ylabel="iterations", logx=False, logy=False,
                       curves=[(f"rbdiff {m}", list(range(1, len(arm) + 1)),
                                [r[m]["iterations"] for r in arm], "o") for m in METHODS]))
    pend = sec["pendulum"]["runs"][0]
    gaps = _gap([pend[m]["history"] for m in METHODS])
    panels.append(dict(title="(C) double-pendulum swing-up", xlabel="iteration",
                       ylabel="cost - lowest cost reached", logx=False,
                       curves=[(f"rbdiff {m}", list(range(1, len(g) + 1)), g, "o-")
                               for m, g in zip(METHODS, gaps)]))
    name = "trajopt.png"
    rp.plot_panels(outdir / name, panels, ncols=3, title="Trajectory optimisation")
    return {"trajopt": name}


def report(sec, files, cfg):
    r = sec["reach"]
    lines = ["## Trajectory optimisation: iLQR and DDP against Crocoddyl", "",
             f"(A) panda reach, T = {r['T']}, dt = {r['dt']}: median of the solves, time "
             "per iteration (wall time of a solve / iterations) and its split.", ""]
    if not r["crocoddyl"]:
        lines += ["Crocoddyl not measured: it needs `pip install 'rbdiff[trajopt-bench]'` "
                  "(Crocoddyl 3.2 with pin 4.0.x).", ""]
    elif "cost_check" in r:
        c = r["cost_check"]
        lines += [f"Same problem, same initial controls: Crocoddyl's cost {c['crocoddyl']:.15g}, "
                  f"rbdiff's {c['rbdiff']:.15g}.", ""]
    lines.append(_solver_table(r["rows"], 10))
    for key, title in (("arm", "(B) iiwa14 swing-up to upright"),
                       ("pendulum", "(C) double-pendulum swing-up")):
        s = sec[key]
        it = {m: np.array([x[m]["iterations"] for x in s["runs"]]) for m in METHODS}
        ok = {m: np.mean([x[m]["solved"] for x in s["runs"]]) for m in METHODS}
        ratio = it["ilqr"] / np.maximum(it["ddp"], 1)
        lines += ["", f"{title}, T = {s['T']}, dt = {s['dt']}, {len(s['runs'])} initial "
                  f"control sequence(s) ({s.get('diverged', 0)} more drawn whose rollout "
                  f"diverged): iterations ilqr median {np.median(it['ilqr']):g}, "
                  f"ddp median {np.median(it['ddp']):g}; ilqr / ddp iterations median "
                  f"{np.median(ratio):.2f} (ilqr needs more in {np.mean(ratio > 1):.0%} of "
                  f"runs); solved (converged within 1 % of the best cost "
                  f"{s['best_cost']:.6g}): ilqr {ok['ilqr']:.0%}, ddp {ok['ddp']:.0%}."]
    if "legged" in sec:
        lines += ["", *_legged_report(sec["legged"])]
    if "constrained" in sec:
        from . import trajopt_constrained
        lines += ["", "(E) Crocoddyl's gaits with the cones and torque limits as constraints: "
                  "rbdiff's augmented-Lagrangian FDDP against mim-solvers' CSQP "
                  "(termination_tolerance 1e-3), from x0 at every knot and the quasi-static "
                  "controls, one thread.", "",
                  trajopt_constrained.report(sec["constrained"])]
    if "box" in sec:
        from . import trajopt_box
        lines += ["", "(F) Control bounds alone (torques limited to 0.8 of the free "
                  "optimum's): rbdiff's FDDP with a box QP in its backward pass against "
                  "Crocoddyl's SolverBoxFDDP, the same start, one thread.", "",
                  trajopt_box.report(sec["box"])]
    if "trajopt" in files:
        lines += ["", f"![cost against iteration]({files['trajopt']})"]
    return lines


def _solver_table(rows, digits):
    """The markdown table of solver rows (iterations, convergence, the final cost to
    ``digits`` significant digits, ms per iteration and its split)."""
    cells = [[x["solver"], str(x["iterations"]), "yes" if x["converged"] else "no",
              f"{x['cost']:.{digits}g}", f"{x['per_iter_s'] * 1e3:.3f}"]
             + [f"{x['split_s'][k] * 1e3:.3f}" if k in x["split_s"] else "-"
                for k in ("derivatives", "backward", "line_search")] for x in rows]
    return rp.md_table(["solver", "iterations", "converged", "final cost", "ms / iter",
                        "derivatives", "backward", "line search"], cells)


def _legged_report(r):
    lines = [f"(D) solo12, contact phases (four feet, three, a free knot, a touch-down "
             f"impulse, four), T = {r['T']}, dt = {r['dt']}, nu = {r['nu']}: FDDP from x0 "
             "at every knot (infeasible), median of the solves.", ""]
    if "cost_check" in r:
        c = r["cost_check"]
        lines += [f"Same controls: Crocoddyl's cost {c['crocoddyl']:.15g}, rbdiff's "
                  f"{c['rbdiff']:.15g}.", ""]
    lines.append(_solver_table(r["rows"], 12))
    return lines


# ---- (D) continued: Crocoddyl's gaits ----------------------------------------------------

# Crocoddyl's examples (examples/quadrupedal_gaits.py, bipedal_walk.py): the gait, its
# builder's arguments, as issue 26 lists them
GAITS = {
    "anymal walking": ("anymal", "walking", (0.25, 0.25, 1e-2, 25, 2)),
    "anymal trotting": ("anymal", "trotting", (0.15, 0.1, 1e-2, 25, 2)),
    "anymal jumping": ("anymal", "jumping", (0.15, (0.0, 0.3, 0.0), 1e-2, 10, 20)),
    "hyq walking": ("hyq", "walking", (0.25, 0.25, 1e-2, 25, 2)),
    # examples/bipedal_gaits_fwddyn.py's first phase
    "talos_legs walking": ("talos_legs", "walking", (0.6, 0.1, 0.03, 15, 4)),
}
QUADRUPED_FEET = {"anymal": ("LF_FOOT", "RF_FOOT", "LH_FOOT", "RH_FOOT"),
                  "hyq": ("lf_foot", "rf_foot", "lh_foot", "rh_foot"),
                  "solo12": ("FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT")}
BIPED_FEET = {"talos_legs": ("right_sole_link", "left_sole_link")}


def _args(args):
    return [np.array(a, dtype=float) if isinstance(a, tuple) else a for a in args]


def gait_pair(name, gaits=None, constrained=False):
    """(rbdiff Problem, Crocoddyl ShootingProblem, warm-start controls (T, nu)) of the gait
    ``name`` of ``gaits`` (default GAITS): the rbdiff problem from rbdiff.trajopt.gaits on
    rbd.load_robot's model (its default reference posture: the model's "standing" or
    "half_sitting" configuration), Crocoddyl's from its own builder
    (SimpleQuadrupedalGaitProblem, SimpleBipedGaitProblem) on example-robot-data's, both
    from that posture at rest; the controls Crocoddyl's quasiStatic along x0 (its
    examples' warm start). ``constrained``: rbdiff's builder's constrained=True (the
    cones and torque limits as constraints); Crocoddyl's problem is its builder's (the
    caller puts the same constraints in it: trajopt_constrained)."""
    import crocoddyl
    import example_robot_data as erd
    from crocoddyl.utils.biped import SimpleBipedGaitProblem
    from crocoddyl.utils.quadruped import SimpleQuadrupedalGaitProblem

    from rbdiff.trajopt.gaits import Biped, Quadruped
    from rbdiff.trajopt.rollout import IMPULSE
    robot, gait, args = (GAITS if gaits is None else gaits)[name]
    pm = erd.load(robot).model
    model = rbd.load_robot(robot)
    if robot in BIPED_FEET:
        feet = BIPED_FEET[robot]
        q0 = pm.referenceConfigurations["half_sitting"].copy()
        croc = SimpleBipedGaitProblem(pm, *feet)
        ours = Biped(model, *feet, constrained=constrained)
    else:
        feet = QUADRUPED_FEET[robot]
        q0 = pm.referenceConfigurations["standing"].copy()
        croc = SimpleQuadrupedalGaitProblem(pm, *feet)
        ours = Quadruped(model, *feet, reference=q0,
                         velocity_limits=np.array(pm.velocityLimit[6:]),
                         constrained=constrained)
    x0 = np.concatenate([q0, np.zeros(pm.nv)])
    cp = getattr(croc, f"create{gait.capitalize()}Problem")(x0, *_args(args))
    prob = getattr(ours, gait)(x0, *_args(args))
    cu = cp.quasiStatic([x0] * cp.T)
    us = np.array([np.zeros(prob.nu) if prob.kind[t] == IMPULSE else cu[t]
                   for t in range(prob.T)])
    assert crocoddyl is not None
    return prob, cp, us


def _croc_fddp(cp, x0, us, threads, max_iter=200):
    import crocoddyl
    cp.nthreads = threads
    s = crocoddyl.SolverFDDP(cp)
    s.th_stop = 1e-9
    cu = crocoddyl_controls_list(cp, us)
    t0 = time.perf_counter()
    ok = s.solve([x0] * (cp.T + 1), cu, max_iter, False)
    wall = time.perf_counter() - t0
    it = s.iter + int(bool(ok))       # Crocoddyl's iter counts from 0 when it converges
    return dict(iterations=it, converged=bool(ok), cost=float(s.cost),
                per_iter_s=wall / max(it, 1), total_s=wall)


def crocoddyl_controls_list(cp, us):
    """Crocoddyl's controls of ``us`` (T, nu): none at its impulse models (nu = 0)."""
    return [np.asarray(us[t]) if m.nu else np.zeros(0)
            for t, m in enumerate(cp.runningModels)]


def _rbdiff_fddp(prob, us, threads, max_iter=200, method="fddp"):
    import numba
    old = numba.get_num_threads()
    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    try:
        t0 = time.perf_counter()
        r = to.solve(prob, method=method, xs=np.tile(prob.x0, (prob.T + 1, 1)), us=us,
                     max_iter=max_iter)
        wall = time.perf_counter() - t0
    finally:
        numba.set_num_threads(old)
    it = max(r.iterations, 1)
    return dict(iterations=r.iterations, converged=r.converged, cost=r.cost,
                per_iter_s=wall / it, total_s=wall,
                second_order=sum(bool(h.get("second_order")) for h in r.history),
                split_s={k: v / it for k, v in r.timings.items() if k != "compile"})


def interleaved_solves(solvers, repeats):
    """{name: the last solve's dict with per_iter_s and total_s the medians} of
    ``solvers`` ({name: a function returning a solve's dict}), each run once to warm up
    (compiles, allocates) and then ``repeats`` times, interleaved."""
    runs = {k: [] for k in solvers}
    for f in solvers.values():
        f()
    for _ in range(repeats):
        for k, f in solvers.items():
            runs[k].append(f())
    out = {}
    for k, rs in runs.items():
        best = dict(rs[-1])
        best["per_iter_s"] = float(np.median([r["per_iter_s"] for r in rs]))
        best["total_s"] = float(np.median([r["total_s"] for r in rs]))
        out[k] = best
    return out


def run_gaits(names=tuple(GAITS), repeats=3):
    """For each gait: the cost of the warm-start controls in both, then FDDP from
    Crocoddyl's quasi-static warm start, rbdiff (numba threads 2 and 1) and Crocoddyl
    (1 and 2 threads), ``repeats`` solves each interleaved after one warm-up; medians.
    And rbdiff's exact DDP (solve(prob, "ddp"): FDDP's solver with the dynamics'
    curvature, issue 27) on 1 thread from the same warm start."""
    out = []
    for name in names:
        prob, cp, us = gait_pair(name)
        cu = crocoddyl_controls_list(cp, us)
        cc = float(cp.calc(cp.rollout(cu), cu))
        rc = float(to.rollout_cost(prob, us))
        row = dict(gait=name, T=prob.T, cost_croc=cc, cost_rbdiff=rc,
                   cost_rel=abs(cc - rc) / abs(cc))
        solvers = {"rbdiff 2": lambda: _rbdiff_fddp(prob, us, 2),
                   "rbdiff 1": lambda: _rbdiff_fddp(prob, us, 1),
                   "rbdiff ddp 1": lambda: _rbdiff_fddp(prob, us, 1, method="ddp"),
                   "Crocoddyl 1": lambda: _croc_fddp(cp, prob.x0, us, 1),
                   "Crocoddyl 2": lambda: _croc_fddp(cp, prob.x0, us, 2)}
        row.update(interleaved_solves(solvers, repeats))
        row["optimum_rel"] = abs(row["rbdiff 2"]["cost"] - row["Crocoddyl 1"]["cost"]) \
            / abs(row["Crocoddyl 1"]["cost"])
        out.append(row)
    return out


def gaits_report(rows):
    """The gait table: cost agreement, iterations, ms / iteration and the time to
    convergence of each solver."""
    head = ["gait", "T", "same-controls cost rel. diff", "optimum rel. diff",
            "rbdiff it", "rbdiff ms/it (2 thr)", "rbdiff ms/it (1 thr)", "Crocoddyl it",
            "Crocoddyl ms/it (1 thr)", "Crocoddyl ms/it (2 thr)", "ratio (2 thr / croc 1)",
            "ratio (1 thr / croc 1)", "to convergence ms: rbdiff 2 thr / 1 thr / croc 1"]
    body = []
    for r in rows:
        a, b, c, d = r["rbdiff 2"], r["rbdiff 1"], r["Crocoddyl 1"], r["Crocoddyl 2"]
        body.append([r["gait"], str(r["T"]), f"{r['cost_rel']:.1e}", f"{r['optimum_rel']:.1e}",
                     str(a["iterations"]), f"{a['per_iter_s'] * 1e3:.2f}",
                     f"{b['per_iter_s'] * 1e3:.2f}", str(c["iterations"]),
                     f"{c['per_iter_s'] * 1e3:.2f}", f"{d['per_iter_s'] * 1e3:.2f}",
                     f"{a['per_iter_s'] / c['per_iter_s']:.2f}",
                     f"{b['per_iter_s'] / c['per_iter_s']:.2f}",
                     f"{a['total_s'] * 1e3:.0f} / {b['total_s'] * 1e3:.0f} / "
                     f"{c['total_s'] * 1e3:.0f}"])
    table = rp.md_table(head, body)
    if not all("rbdiff ddp 1" in r for r in rows):
        return table
    head = ["gait", "rbdiff fddp it", "rbdiff ddp it (second-order its)",
            "Crocoddyl FDDP it", "ms/it: rbdiff fddp / ddp / Crocoddyl (1 thr)",
            "to convergence ms: rbdiff fddp / ddp / Crocoddyl (1 thr)"]
    body = []
    for r in rows:
        b, e, c = r["rbdiff 1"], r["rbdiff ddp 1"], r["Crocoddyl 1"]
        body.append([r["gait"], str(b["iterations"]),
                     f"{e['iterations']} ({e['second_order']})", str(c["iterations"]),
                     f"{b['per_iter_s'] * 1e3:.2f} / {e['per_iter_s'] * 1e3:.2f} / "
                     f"{c['per_iter_s'] * 1e3:.2f}",
                     f"{b['total_s'] * 1e3:.0f} / {e['total_s'] * 1e3:.0f} / "
                     f"{c['total_s'] * 1e3:.0f}"])
    return table + "\n\nExact DDP (solve(prob, 'ddp')), 1 thread:\n\n" + \
        rp.md_table(head, body)


if __name__ == "__main__":      # python -m rbdiff.bench.trajopt [gait ...]: the gait rows
    import sys
    import warnings
    warnings.filterwarnings("ignore")
    names = [" ".join(a.rsplit("_", 1)) for a in sys.argv[1:]] or list(GAITS)
    rows = run_gaits(names)
    print(gaits_report(rows))
    for r in rows:
        print(r["gait"], {k: (v["cost"], v["converged"], v.get("split_s"))
                          for k, v in r.items() if isinstance(v, dict)})
