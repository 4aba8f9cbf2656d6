"""rbdiff.torch against the NumPy API and adam-robotics' PyTorch backend.

    python -m rbdiff.bench.torch [--quick] [--json PATH]

Robot: iiwa14 with a free-flyer base (nq 14, nv 13): adam models every robot with a
floating base, so rbdiff gets the same one (adam's values are checked equal to rbdiff's
before timing; BODY_FIXED velocities, gravity 9.81). Per batch size B (1, 64, 1024;
--quick: 1, 64), timed interleaved in one process (rbdiff.bench.timing.interleaved,
median seconds per call over the rounds), float64:
- forward: rbd.aba / rbd.rnea on NumPy arrays, rbdiff.torch on tensors, adam (aba; for
  rnea, adam has no inverse dynamics with accelerations: M(q) a + h(q, v) from its
  mass_matrix and bias_force);
- forward + backward: out.sum().backward() with every input requiring grad, against
  the NumPy API's value plus derivatives (rbd.aba + rbd.aba_derivatives: the kernels the
  rule calls) and adam's forward + backward (autograd through its algorithm).
B = 1 uses adam's KinDynComputations, B > 1 its KinDynComputationsBatch.

Floors (issue 23): per robot (iiwa14; solo12, floating base, where example-robot-data is
installed) and function (aba, rnea), one state, float64, interleaved in one process:
rbdiff.torch's f(model, q, v, u).square().sum().backward() with q, v, u requiring grad,
against the framework's floor = a trivial torch.autograd.Function through the same loss
(its forward returns a NumPy-computed tensor, its backward precomputed tensors)
+ 2 x the NumPy derivative call (rbd.aba_derivatives / rbd.rnea_derivatives) + 20 us;
ratio = rbdiff / floor (at most 1: at the floor). --cpu-time times them with the
thread's CPU clock (time.thread_time) instead of the wall clock: on a shared machine the
rounds then leave out the time the process waited for a core.

Contact and impulse dynamics (contact_floors; --contacts-only runs just these): solo12 +
free flyer on its four point feet (bench.jax's case), one state and B = 64, the value
against 1.2 x the NumPy call + 3 us and forward + backward against 1.5 x the NumPy value
and derivatives + 20 us, interleaved in one process.
"""

import argparse
import json
import sys
import time

import numpy as np

import rbdiff as rbd
from rbdiff.bench.timing import interleaved

_G = 9.81


def _adam(model, path, batch):
    """adam's KinDynComputations(Batch) for the URDF at ``path``, float64, CPU, body-fixed
    velocities, rbdiff's gravity; or None (with the reason) where adam is missing."""
    try:
        import torch
        from adam.core.constants import Representations
        from adam.pytorch import KinDynComputations, KinDynComputationsBatch
    except ImportError as e:
        return None, f"adam-robotics[pytorch] is not installed ({e})"
    cls = KinDynComputationsBatch if batch else KinDynComputations
    g = torch.tensor([0, 0, -_G, 0, 0, 0], dtype=torch.float64)
    kd = cls(path, None, device=torch.device("cpu"), dtype=torch.float64, gravity=g)
    kd.set_frame_velocity_representation(Representations.BODY_FIXED_REPRESENTATION)
    return kd, None


def _states(model, rng, B):
    q = rbd.random_configuration(model, rng, batch=B)
    return q, rng.normal(size=(B, model.nv)), rng.normal(size=(B, model.nv))


def _adam_inputs(q, v, u):
    """(H, s, base velocity, joint velocities, u's joint part) of rbdiff's free-flyer
    state (B, ...) as adam takes them."""
    from rbdiff.model.configuration import quat_to_rot
    H = np.zeros(q.shape[:-1] + (4, 4))
    H[..., :3, :3] = quat_to_rot(q[..., 3:7])
    H[..., :3, 3] = q[..., :3]
    H[..., 3, 3] = 1.0
    return H, q[..., 7:], v[..., :6], v[..., 6:], u[..., 6:]


def _cases(model, kd, B, rng):
    """{row: {column: zero-argument callable}} for one batch size, and the largest
    difference between adam's values and rbdiff's (a check that both compute the same)."""
    import torch

    import rbdiff.torch as rt
    q, v, u = _states(model, rng, B)
    u[:, :6] = 0.0                 # adam's aba takes joint torques only: no base wrench
    if B == 1:
        q, v, u = q[0], v[0], u[0]
    T = lambda x: torch.tensor(np.ascontiguousarray(x), dtype=torch.float64)  # noqa: E731
    tq, tv, tu = T(q), T(v), T(u)
    gq, gv, gu = (T(x).requires_grad_() for x in (q, v, u))
    rows, diff = {}, 0.0
    ad = [T(x) for x in _adam_inputs(q, v, u)] if kd is not None else None
    adg = [T(x).requires_grad_() for x in _adam_inputs(q, v, u)] if kd is not None else None

    def torch_fb(f):
        def run():
            f(model, gq, gv, gu).sum().backward()
        return run

    def adam_fb(f):
        def run():
            f(*adg).sum().backward()
        return run

    aba_adam = rnea_adam = None
    if kd is not None:
        aba_adam = lambda H, s, vb, vs, tj: kd.aba(H, s, vb, vs, tj)  # noqa: E731
        # adam has no inverse dynamics with accelerations: M(q) a + h(q, v)
        rnea_adam = lambda H, s, vb, vs, a: (  # noqa: E731
            (kd.mass_matrix(H, s) @ _a_full(a).unsqueeze(-1)).squeeze(-1)
            + kd.bias_force(H, s, vb, vs))
        diff = max(np.max(np.abs(aba_adam(*ad).numpy() - rbd.aba(model, q, v, u))),
                   np.max(np.abs(rnea_adam(*ad).numpy() - rbd.rnea(model, q, v, u))))

    for name, npf, tf, derivs, af in (
            ("aba", rbd.aba, rt.aba, rbd.aba_derivatives, aba_adam),
            ("rnea", rbd.rnea, rt.rnea, rbd.rnea_derivatives, rnea_adam)):
        fwd = {"numpy": lambda npf=npf: npf(model, q, v, u),
               "rbdiff.torch": lambda tf=tf: tf(model, tq, tv, tu)}
        fb = {"numpy": lambda npf=npf, d=derivs: (npf(model, q, v, u), d(model, q, v, u)),
              "rbdiff.torch": torch_fb(tf)}
        if af is not None:
            fwd["adam"] = lambda af=af: af(*ad)
            fb["adam"] = adam_fb(af)
        rows[f"{name} forward"] = fwd
        rows[f"{name} forward+backward"] = fb
    return rows, diff


def _a_full(a_joints):
    """adam's M a + h takes the full acceleration [base, joints]; the benchmark's rnea
    state uses u as a (its base part zeroed, as for aba): prepend zeros to the joints'."""
    import torch
    return torch.cat([torch.zeros(a_joints.shape[:-1] + (6,), dtype=a_joints.dtype), a_joints],
                     -1)


FLOOR_ROBOTS = ("iiwa14", "solo12")
FLOOR_SLACK_S = 20e-6


def floors(quick=False, seed=0, robots=FLOOR_ROBOTS, cpu_time=False):
    """[{"robot", "case", "rbdiff", "trivial", "derivatives", "floor", "ratio"}] (seconds
    per call, medians of interleaved rounds; cpu_time: of the thread's CPU time):
    rbdiff.torch's forward + backward against its floor (see the module's docstring). A
    robot that cannot be loaded (solo12 without example-robot-data) is left out."""
    if cpu_time:
        from rbdiff.bench import timing
        clock, timing._CLOCK = timing._CLOCK, time.thread_time
        try:
            return floors(quick, seed, robots)
        finally:
            timing._CLOCK = clock
    import torch

    import rbdiff.torch as rt
    rows = []
    for robot in robots:
        try:
            model = rbd.load_robot(robot)
        except Exception:           # noqa: BLE001 - an optional robot's data is missing
            continue
        rng = np.random.default_rng(seed)
        q = rbd.random_configuration(model, rng)
        v, u = rng.normal(size=model.nv), rng.normal(size=model.nv)
        for name, npf, derivs, tf in (("aba", rbd.aba, rbd.aba_derivatives, rt.aba),
                                      ("rnea", rbd.rnea, rbd.rnea_derivatives, rt.rnea)):
            funcs = _floor_funcs(torch, model, q, v, u, npf, derivs, tf)
            t = interleaved(funcs, repeats=5 if quick else 21, min_time=2e-3 if quick else 4e-3)
            med = {k: r["median"] for k, r in t.items()}
            floor = med["trivial"] + 2 * med["derivatives"] + FLOOR_SLACK_S
            rows.append(dict(robot=robot, nv=model.nv, case=f"{name} forward+backward",
                             floor=floor, ratio=med["rbdiff"] / floor, **med))
    return rows


def _floor_funcs(torch, model, q, v, u, npf, derivs, tf):
    """The three timed callables of one floor row."""
    xs = [torch.tensor(x, requires_grad=True) for x in (q, v, u)]
    pre = [torch.tensor(x) for x in (q, v, u)]

    class Trivial(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a, b, c):
            return torch.from_numpy(npf(model, q, v, u))

        @staticmethod
        def backward(ctx, g):
            return pre[0], pre[1], pre[2]

    def clear():
        for x in xs:
            x.grad = None

    def rbdiff_fb():
        clear()
        tf(model, *xs).square().sum().backward()

    def trivial_fb():
        clear()
        Trivial.apply(*xs).square().sum().backward()

    return {"rbdiff": rbdiff_fb, "trivial": trivial_fb,
            "derivatives": lambda: derivs(model, q, v, u)}


def floor_table(rows, cpu_time=False):
    """Markdown table of floors()' rows."""
    lines = ["rbdiff.torch forward + backward (loss f(...).square().sum()) against its "
             "floor: trivial autograd.Function + 2 x NumPy derivatives + 20 us; median us"
             + (" of CPU time" if cpu_time else ""),
             "", "| robot | case | rbdiff.torch | trivial Function | NumPy derivatives "
             "| floor | rbdiff / floor |", "|---|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['robot']} | {r['case']} | {_us(r['rbdiff'])} | "
                     f"{_us(r['trivial'])} | {_us(r['derivatives'])} | {_us(r['floor'])} "
                     f"| {r['ratio']:.2f} |")
    return "\n".join(lines)


CONTACT_BATCH = 64
# target floors of the contact rows: value <= 1.2 x NumPy + 3 us; forward + backward
# <= 1.5 x NumPy's value + derivatives + 20 us (the batch rows alike)
CONTACT_FLOORS = {"value": (1.2, 3e-6), "forward+backward": (1.5, FLOOR_SLACK_S)}


def contact_floors(quick=False, seed=0, repeats=None, min_time=None):
    """[{"function", "B", "case", "rbdiff", "numpy", "floor", "ratio", "min_*", and for
    one state "trivial"}] (seconds per call, medians of interleaved rounds in one
    process; "min_*": from each contender's fastest round) on solo12 + free flyer on its
    four feet (bench.models.solo12_four_feet, as bench.jax's contact rows), one state and
    B = 64, float64:
    - value: rt.contact_dynamics / rt.impulse_dynamics (restitution 0.5) on tensors
      against rbd.contact_dynamics / rbd.impulse_dynamics on the arrays; floor 1.2 x
      NumPy + 3 us;
    - forward+backward: every input requiring grad, torch.autograd.backward of both
      outputs with fixed cotangents (no loss ops), against the NumPy value plus
      rbd.contact_dynamics_derivatives / rbd.impulse_dynamics_derivatives; floor 1.5 x
      NumPy + 20 us. "trivial": PyTorch's own cost of the same, a trivial
      autograd.Function (NumPy-made outputs, precomputed gradients) with the same inputs
      and outputs: not in the floor.
    ratio = rbdiff / floor (at most 1: at the floor)."""
    import torch

    import rbdiff.torch as rt
    from rbdiff.bench.models import solo12_four_feet
    model, feet, one, batch = solo12_four_feet(CONTACT_BATCH, seed)
    rng = np.random.default_rng(seed + 1)
    nv, nc, r = model.nv, 3 * len(feet), 0.5
    funcs, rows = {}, []
    for B, (q, v, tau) in ((1, one), (CONTACT_BATCH, batch)):
        lead = q.shape[:-1]
        T = torch.tensor
        xs = [T(x) for x in (q, v, tau)]
        gx = [T(x, requires_grad=True) for x in (q, v, tau)]
        w = (T(rng.normal(size=lead + (nv,))), T(rng.normal(size=lead + (nc,))))

        def fb(f, n, gx=gx, w=w):
            def run():
                for x in gx[:n]:
                    x.grad = None
                torch.autograd.backward(tuple(f(*gx[:n])), w)
            return run

        def both(f, d, *a):
            f(*a)
            d(*a)

        cd = lambda *x: rt.contact_dynamics(model, *x, feet)  # noqa: E731
        imp = lambda *x: rt.impulse_dynamics(model, *x, feet, r)  # noqa: E731
        for name, ours, theirs, derivs, n in (
                ("contact_dynamics", cd, lambda *x: rbd.contact_dynamics(model, *x, feet),
                 lambda *x: rbd.contact_dynamics_derivatives(model, *x, feet), 3),
                ("impulse_dynamics", imp,
                 lambda *x: rbd.impulse_dynamics(model, *x, feet, r),
                 lambda *x: rbd.impulse_dynamics_derivatives(model, *x, feet, r), 2)):
            arrays = (q, v, tau)[:n]
            key = (name, B)
            funcs[key + ("value", "rbdiff")] = lambda o=ours, n=n, xs=xs: o(*xs[:n])
            funcs[key + ("value", "numpy")] = lambda t=theirs, a=arrays: t(*a)
            funcs[key + ("forward+backward", "rbdiff")] = fb(ours, n)
            funcs[key + ("forward+backward", "numpy")] = (
                lambda t=theirs, d=derivs, a=arrays: both(t, d, *a))
            if B == 1:
                funcs[key + ("forward+backward", "trivial")] = _trivial_fb(
                    torch, gx[:n], w, list(theirs(*arrays)))
    t = interleaved(funcs, repeats=repeats or (7 if quick else 21),
                    min_time=min_time or (2e-3 if quick else 4e-3))
    for key in dict.fromkeys(k[:3] for k in funcs):
        factor, slack = CONTACT_FLOORS[key[2]]
        row = dict(function=key[0], B=key[1], case=key[2])
        for stat, s in (("", "median"), ("min_", "min")):
            x = {k[3]: t[k][s] for k in funcs if k[:3] == key}
            floor = factor * x["numpy"] + slack
            row.update({f"{stat}rbdiff": x["rbdiff"], f"{stat}numpy": x["numpy"],
                        f"{stat}floor": floor, f"{stat}ratio": x["rbdiff"] / floor,
                        f"{stat}trivial": x.get("trivial")})
        rows.append(row)
    return rows


def _trivial_fb(torch, xs, w, outs):
    """PyTorch's cost of a forward + backward like rbdiff's contact rows: a trivial
    autograd.Function of the same inputs and outputs (made from NumPy arrays, as rbdiff's
    are) whose backward returns precomputed gradients."""
    grads = [torch.zeros_like(x) for x in xs]

    class Trivial(torch.autograd.Function):
        @staticmethod
        def forward(ctx, *a):
            return tuple(torch.from_numpy(o.copy()) for o in outs)

        @staticmethod
        def backward(ctx, *g):
            return tuple(grads)

    def run():
        for x in xs:
            x.grad = None
        torch.autograd.backward(Trivial.apply(*xs), w)
    return run


def contact_table(rows):
    """Markdown table of contact_floors()' rows."""
    lines = ["rbdiff.torch contact and impulse dynamics, solo12 on four point feet, against "
             "their floors (value: 1.2 x NumPy + 3 us; forward+backward: 1.5 x NumPy value "
             "+ derivatives + 20 us); us per call (whole batch), medians of interleaved "
             "rounds (fastest rounds in brackets); trivial: PyTorch's own cost of a "
             "forward+backward (not in the floor)", "",
             "| function | B | case | rbdiff.torch | NumPy | torch / NumPy | trivial "
             "| floor | rbdiff / floor |", "|---|---:|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['function']} | {r['B']} | {r['case']} | {_us(r['rbdiff'])} "
                     f"({_us(r['min_rbdiff'])}) | {_us(r['numpy'])} | "
                     f"{r['rbdiff'] / r['numpy']:.2f} | {_us(r['trivial'])} | "
                     f"{_us(r['floor'])} | {r['ratio']:.2f} ({r['min_ratio']:.2f}) |")
    return "\n".join(lines)


def run(quick=False, seed=0):
    """The timings: {"robot", "nv", "rows": [{"B", "case", "numpy", "rbdiff.torch",
    "adam", "adam_max_abs_diff"}], "adam": None or the reason it is absent}."""
    model = rbd.load_robot("iiwa14", floating_base=True)
    from rbdiff.model.robots import robot_path
    path = str(robot_path("iiwa14"))
    rng = np.random.default_rng(seed)
    out = {"robot": "iiwa14 + free flyer", "nv": model.nv, "rows": [], "adam": None}
    for B in ((1, 64) if quick else (1, 64, 1024)):
        kd, why = _adam(model, path, B > 1)
        out["adam"] = why
        rows, diff = _cases(model, kd, B, rng)
        for case, funcs in rows.items():
            t = interleaved(funcs, repeats=5 if quick else 11, min_time=2e-3 if quick else 5e-3)
            out["rows"].append(dict(B=B, case=case, adam_max_abs_diff=diff,
                                    **{k: r["median"] for k, r in t.items()}))
    return out


def _us(s):
    return "" if s is None else f"{s * 1e6:,.1f}"


def table(res):
    """Markdown table of run()'s result."""
    lines = [f"rbdiff.torch on {res['robot']} (nv {res['nv']}), float64, median us per call "
             "(whole batch)", "",
             "| B | case | NumPy API | rbdiff.torch | torch - NumPy | adam (PyTorch) "
             "| adam / rbdiff.torch |",
             "|---:|---|---:|---:|---:|---:|---:|"]
    for r in res["rows"]:
        n, t, a = r.get("numpy"), r.get("rbdiff.torch"), r.get("adam")
        ratio = "" if a is None else f"{a / t:.1f}x"
        lines.append(f"| {r['B']} | {r['case']} | {_us(n)} | {_us(t)} | {_us(t - n)} "
                     f"| {_us(a)} | {ratio} |")
    lines += ["", "NumPy API column for forward+backward: rbd.aba + rbd.aba_derivatives "
              "(rbd.rnea + rbd.rnea_derivatives). adam's rnea: M(q) a + h(q, v) "
              "(mass_matrix, bias_force). B > 1: rbdiff's batches pick a serial or a parallel "
              "entry per call from the measured load (rbdiff.cpu.policy), so on a busy machine "
              "those rows vary from run to run; compare the columns within a row."]
    if res["adam"]:
        lines.append(f"adam skipped: {res['adam']}")
    else:
        d = max(r["adam_max_abs_diff"] for r in res["rows"])
        lines.append(f"adam's values agree with rbdiff's to {d:.1e} (max abs difference).")
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m rbdiff.bench.torch", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="B = 1, 64 and fewer rounds")
    p.add_argument("--json", metavar="PATH", help="write the raw numbers there")
    p.add_argument("--floors-only", action="store_true",
                   help="only the floor rows: aba and rnea, then the contact rows (no adam)")
    p.add_argument("--cpu-time", action="store_true",
                   help="floor rows timed with the thread's CPU clock (time.thread_time)")
    p.add_argument("--contacts-only", action="store_true",
                   help="only the contact and impulse dynamics rows")
    a = p.parse_args(argv)
    res = {} if a.floors_only or a.contacts_only else run(quick=a.quick)
    if res:
        print(table(res))
        print()
    if not a.contacts_only:
        res["floors"] = floors(quick=a.quick, cpu_time=a.cpu_time)
        print(floor_table(res["floors"], a.cpu_time))
        print()
    res["contacts"] = contact_floors(quick=a.quick)
    print(contact_table(res["contacts"]))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
