"""Benchmark: rbdiff.jax (jitted) against the NumPy API and JAX autodiff through adam.

    python -m rbdiff.bench.jax [--quick] [--json PATH]

iiwa14 (7 dofs). Per batch size B = 1, 64, 1024: forward dynamics (aba) and its gradient
(jax.jacrev of aba in q, v, tau: the full FD Jacobians), each as
- NumPy API: rbd.aba / rbd.aba_derivatives (the batch entries for B > 1);
- rbdiff.jax: jax.jit(aba) and jax.jit(jacrev(aba)), under jax.vmap for B > 1;
- adam (adam-robotics' JAX backend, the same URDF; its aba is floating-base, here with
  the base at the identity and at rest, so 6 more dofs and different values: a
  cost comparison, not a value check): jax.jit of aba and of jax.jacrev(aba)
  (autodiff through the algorithm), vmapped likewise;
- and rbdiff.jax.aba_derivatives (the partials as one kernel call, no autodiff), against
  rbd.aba_derivatives: the cost of the FFI call itself.
Contenders interleaved in one process, medians of repeated timings (us per call, the
whole batch), ratios against NumPy and adam. jaxsim is not measured (see the note).

Floors (issue 23): jax.jit(jax.vmap(jax.grad(loss))) with loss = sum(rj.aba(...) ** 2),
per robot (iiwa14; solo12 and hyq, floating bases, where example-robot-data is
installed) and B = 1, 4, 16, 64, 256 (--quick: 1, 64), against floor = 1.5 x the NumPy
batch (rbd.aba + rbd.aba_derivatives) + 20 us, interleaved (rbdiff.bench.timing);
ratio = rbdiff / floor (at most 1: at the floor).

Contact dynamics (contact_floors): solo12 + free flyer on its four feet, jitted
rj.contact_dynamics, jit(value_and_grad) of a loss of it and jit(vmap(grad)) over B = 64
states, each beside its floor (JAX's empty jitted call of the same arguments and as many
outputs + 1.5 x the NumPy call; the batch: 1.5 x the NumPy batch of the same value and
derivatives + 20 us), interleaved in one process, medians and fastest rounds.
"""

import argparse
import json
import os
import time

import numpy as np

import jax

jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402

import rbdiff as rbd  # noqa: E402
import rbdiff.jax as rj  # noqa: E402


def _timer(fn, number):
    def once():
        t = time.perf_counter()
        for _ in range(number):
            fn()
        return (time.perf_counter() - t) / number
    return once


def _adam(model_path, joints):
    try:
        from adam.jax import KinDynComputations
    except ImportError:
        return None
    kd = KinDynComputations(model_path, joints)
    H = jnp.eye(4)
    z6 = jnp.zeros(6)

    def aba(q, v, tau):
        return kd.aba(H, q, z6, v, tau)[6:]
    return aba


def _block(x):
    jax.tree_util.tree_map(lambda y: y.block_until_ready(), x)
    return x


def run(quick=False):
    model = rbd.load_robot("iiwa14")
    path = os.path.join(os.path.dirname(rbd.__file__), "robots_data", "iiwa14.urdf")
    joints = [model.names[i] for i in range(1, model.njoints)]
    adam_aba = _adam(path, joints)
    rng = np.random.default_rng(0)
    rows = []
    reps = 5 if quick else 15
    for B in (1, 64, 1024):
        shape = () if B == 1 else (B,)
        q = rbd.random_configuration(model, rng, batch=None if B == 1 else B)
        v, tau = rng.normal(size=shape + (model.nv,)), rng.normal(size=shape + (model.nv,))
        vm = (lambda f: f) if B == 1 else jax.vmap
        f_rj = jax.jit(vm(lambda q_, v_, t_: rj.aba(model, q_, v_, t_)))
        g_rj = jax.jit(vm(jax.jacrev(lambda q_, v_, t_: rj.aba(model, q_, v_, t_),
                                     argnums=(0, 1, 2))))
        d_rj = jax.jit(vm(lambda q_, v_, t_: rj.aba_derivatives(model, q_, v_, t_)))
        qj, vj, tj = jnp.asarray(q), jnp.asarray(v), jnp.asarray(tau)   # JAX users' arrays
        cands = {
            ("aba", "numpy"): lambda: rbd.aba(model, q, v, tau),
            ("aba", "rbdiff.jax"): lambda: _block(f_rj(qj, vj, tj)),
            ("grad aba", "numpy"): lambda: rbd.aba_derivatives(model, q, v, tau),
            ("grad aba", "rbdiff.jax"): lambda: _block(g_rj(qj, vj, tj)),
            ("aba_derivatives", "numpy"): lambda: rbd.aba_derivatives(model, q, v, tau),
            ("aba_derivatives", "rbdiff.jax"): lambda: _block(d_rj(qj, vj, tj)),
        }
        if adam_aba is not None:
            f_ad = jax.jit(vm(adam_aba))
            g_ad = jax.jit(vm(jax.jacrev(adam_aba, argnums=(0, 1, 2))))
            try:        # adam 0.5 under vmap fails on jax 0.10 (asarray's device=)
                _block(g_ad(q, v, tau))
                cands[("aba", "adam")] = lambda: _block(f_ad(qj, vj, tj))
                cands[("grad aba", "adam")] = lambda: _block(g_ad(qj, vj, tj))
            except Exception as err:
                print(f"adam, B={B}: {type(err).__name__}: {str(err)[:80]}")
            # (not the same values: adam's aba is floating-base, a free base at rest
            # accelerates; the same robot and the same algorithm size plus 6 base dofs)
        for fn in cands.values():       # compile / warm
            fn()
            fn()
        number = {1: 200, 64: 20, 1024: 3}[B] // (4 if quick else 1) or 1
        timers = {k: _timer(fn, number) for k, fn in cands.items()}
        samples = {k: [] for k in cands}
        for _ in range(reps):           # interleaved
            for k, t in timers.items():
                samples[k].append(t())
        for what in ("aba", "grad aba", "aba_derivatives"):
            med = {who: float(np.median(samples[(w, who)])) * 1e6
                   for (w, who) in samples if w == what}
            rows.append(dict(B=B, what=what, **{f"{k}_us": v for k, v in med.items()}))
    return rows


FLOOR_ROBOTS = ("iiwa14", "solo12", "hyq")
FLOOR_BATCHES = (1, 4, 16, 64, 256)
FLOOR_FACTOR, FLOOR_SLACK_S = 1.5, 20e-6


def floors(quick=False, robots=FLOOR_ROBOTS, batches=None):
    """[{"robot", "B", "rbdiff", "numpy", "floor", "ratio"}] (seconds, whole batch,
    medians of interleaved rounds): the jitted vmapped gradient of a loss of rj.aba
    against 1.5 x the NumPy batch of aba + aba_derivatives + 20 us. A robot that cannot
    be loaded (no example-robot-data) is left out."""
    from rbdiff.bench.timing import interleaved
    batches = batches or ((1, 64) if quick else FLOOR_BATCHES)
    rows = []
    for robot in robots:
        try:
            model = rbd.load_robot(robot)
        except Exception:           # noqa: BLE001 - an optional robot's data is missing
            continue
        rng = np.random.default_rng(0)
        grad = jax.jit(jax.vmap(jax.grad(
            lambda q_, v_, t_: jnp.sum(rj.aba(model, q_, v_, t_) ** 2), argnums=(0, 1, 2))))
        for B in batches:
            q = rbd.random_configuration(model, rng, batch=B)
            v, tau = rng.normal(size=(B, model.nv)), rng.normal(size=(B, model.nv))
            qj, vj, tj = jnp.asarray(q), jnp.asarray(v), jnp.asarray(tau)

            def numpy(q=q, v=v, tau=tau):
                rbd.aba(model, q, v, tau)
                rbd.aba_derivatives(model, q, v, tau)
            t = interleaved({"rbdiff": lambda: _block(grad(qj, vj, tj)), "numpy": numpy},
                            repeats=5 if quick else 15, min_time=2e-3 if quick else 4e-3)
            med = {k: r["median"] for k, r in t.items()}
            floor = FLOOR_FACTOR * med["numpy"] + FLOOR_SLACK_S
            rows.append(dict(robot=robot, nv=model.nv, B=B, floor=floor,
                             ratio=med["rbdiff"] / floor, **med))
    return rows


def floor_table(rows):
    lines = ["jit(vmap(grad(sum(rj.aba(...) ** 2)))) against its floor: 1.5 x NumPy "
             "batch (aba + aba_derivatives) + 20 us; median us per call (whole batch)", "",
             "| robot | B | rbdiff.jax | NumPy | floor | rbdiff / floor |",
             "|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['robot']} | {r['B']} | {r['rbdiff'] * 1e6:.1f} | "
                     f"{r['numpy'] * 1e6:.1f} | {r['floor'] * 1e6:.1f} | {r['ratio']:.2f} |")
    return "\n".join(lines)


CONTACT_BATCH = 64


def contact_floors(quick=False):
    """[{"what", "rbdiff", "floor", "numpy", "ratio", "strict_floor", "strict_ratio",
    ...}] (seconds per call, medians of interleaved rounds in one process; "min_*": the
    same from each contender's fastest round) on solo12 + free flyer standing on its
    four feet (3D point contacts, LOCAL_WORLD_ALIGNED, Baumgarte gains):
    - jit(contact_dynamics) against JAX's empty jitted call + 1.5 x rbd.contact_dynamics;
    - jit(value_and_grad(loss)) in q, v, tau, loss = |qdd|^2 + 0.5 |forces|^2, against
      the empty call + 1.5 x (rbd.contact_dynamics + rbd.contact_dynamics_derivatives);
    - jit(vmap(grad(loss))) over B = 64 states against 1.5 x the NumPy batch of the same
      value and derivatives + 20 us.
    The empty call takes the same arguments and returns as many arrays (2, and 4 for
    value_and_grad: JAX's dispatch cost grows with the outputs); "strict_*" uses the
    empty call of one output instead. ratio = rbdiff / floor (at most 1: at the floor)."""
    from rbdiff.bench.models import solo12_four_feet
    from rbdiff.bench.timing import interleaved
    B = CONTACT_BATCH
    model, feet, (q, v, tau), (qb, vb, tb) = solo12_four_feet(B)

    def loss(q_, v_, t_):
        qdd, forces = rj.contact_dynamics(model, q_, v_, t_, feet)
        return jnp.sum(qdd ** 2) + 0.5 * jnp.sum(forces ** 2)

    value = jax.jit(lambda q_, v_, t_: rj.contact_dynamics(model, q_, v_, t_, feet))
    vgrad = jax.jit(jax.value_and_grad(loss, argnums=(0, 1, 2)))
    bgrad = jax.jit(jax.vmap(jax.grad(loss, argnums=(0, 1, 2))))
    empties = {1: jax.jit(lambda q_, v_, t_: q_), 2: jax.jit(lambda q_, v_, t_: (q_, v_)),
               4: jax.jit(lambda q_, v_, t_: (q_, (q_, v_, t_)))}
    qj, vj, tj = jnp.asarray(q), jnp.asarray(v), jnp.asarray(tau)
    qbj, vbj, tbj = jnp.asarray(qb), jnp.asarray(vb), jnp.asarray(tb)

    def numpy_d(q=q, v=v, tau=tau):
        rbd.contact_dynamics(model, q, v, tau, feet)
        rbd.contact_dynamics_derivatives(model, q, v, tau, feet)

    t = interleaved({
        **{f"empty {n}": (lambda f=f: _block(f(qj, vj, tj))) for n, f in empties.items()},
        "contact_dynamics": lambda: _block(value(qj, vj, tj)),
        "numpy contact_dynamics": lambda: rbd.contact_dynamics(model, q, v, tau, feet),
        "value_and_grad": lambda: _block(vgrad(qj, vj, tj)),
        "numpy value + derivatives": numpy_d,
        "vmap grad": lambda: _block(bgrad(qbj, vbj, tbj)),
        "numpy batch": lambda: numpy_d(qb, vb, tb),
    }, repeats=7 if quick else 21, min_time=2e-3 if quick else 4e-3)
    rows = []
    for what, ours, numpy, outs in (
            ("jit(contact_dynamics)", "contact_dynamics", "numpy contact_dynamics", 2),
            ("jit(value_and_grad(loss))", "value_and_grad", "numpy value + derivatives", 4),
            (f"jit(vmap(grad(loss))), B = {B}", "vmap grad", "numpy batch", None)):
        row = dict(what=what)
        for stat, key in (("", "median"), ("min_", "min")):
            x = {k: r[key] for k, r in t.items()}
            base = FLOOR_FACTOR * x[numpy]
            floor = base + (x[f"empty {outs}"] if outs else FLOOR_SLACK_S)
            strict = base + (x["empty 1"] if outs else FLOOR_SLACK_S)
            row.update({f"{stat}rbdiff": x[ours], f"{stat}numpy": x[numpy],
                        f"{stat}empty": x[f"empty {outs}"] if outs else None,
                        f"{stat}floor": floor, f"{stat}ratio": x[ours] / floor,
                        f"{stat}strict_floor": strict,
                        f"{stat}strict_ratio": x[ours] / strict})
        rows.append(row)
    return rows


def contact_table(rows):
    lines = ["rbdiff.jax contact dynamics, solo12 on four point feet, against its floor: "
             "JAX's empty jitted call (same arguments, as many outputs) + 1.5 x NumPy (the "
             "batch: 1.5 x NumPy + 20 us); strict: the empty call of one output. us per "
             "call, medians of interleaved rounds (fastest rounds in brackets)", "",
             "| function | rbdiff.jax | NumPy | empty jit | floor | rbdiff / floor | "
             "strict floor | rbdiff / strict |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        e = "-" if r["empty"] is None else f"{r['empty'] * 1e6:.1f}"
        lines.append(f"| {r['what']} | {r['rbdiff'] * 1e6:.1f} ({r['min_rbdiff'] * 1e6:.1f}) "
                     f"| {r['numpy'] * 1e6:.1f} | {e} | {r['floor'] * 1e6:.1f} | "
                     f"{r['ratio']:.2f} ({r['min_ratio']:.2f}) | "
                     f"{r['strict_floor'] * 1e6:.1f} | {r['strict_ratio']:.2f} "
                     f"({r['min_strict_ratio']:.2f}) |")
    return "\n".join(lines)


def table(rows):
    lines = ["| B | function | NumPy (us) | rbdiff.jax jit (us) | adam jit (us) | "
             "rbdiff.jax - NumPy (us) | adam / rbdiff.jax |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        n, j, a = r["numpy_us"], r["rbdiff.jax_us"], r.get("adam_us", float("nan"))
        ratio = f"{a / j:.1f}x" if a == a else "-"
        adam = f"{a:.1f}" if a == a else "-"
        lines.append(f"| {r['B']} | {r['what']} | {n:.1f} | {j:.1f} | {adam} | "
                     f"{j - n:+.1f} | {ratio} |")
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--json")
    p.add_argument("--floors-only", action="store_true",
                   help="only the floor rows (no adam, no B = 1024 comparison)")
    args = p.parse_args(argv)
    rows = [] if args.floors_only else run(args.quick)
    if rows:
        print(table(rows))
        print()
    fl = floors(args.quick)
    print(floor_table(fl))
    print()
    cf = contact_floors(args.quick)
    print(contact_table(cf))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(dict(({"rows": rows} if rows else {}), floors=fl, contacts=cf), fh,
                      indent=1)


if __name__ == "__main__":
    main()
