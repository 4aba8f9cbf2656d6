"""Second-order derivatives contracted with a costate (rbdiff.contraction, issue 27).

bench-core pairs (``calls``, listed in rbdiff.bench.core.PAIR_MODULES): the two public
functions, without a Pinocchio peer (Pinocchio exposes no contraction to Python; its
tensors neither, see core_derivatives.py).

The issue's own table (``python -m rbdiff.bench.core_contraction``): per robot,
aba_second_order_contraction against (a) the tensor route,
aba_second_order_derivatives then np.einsum with lam, and (b) the first-order
aba_derivatives (the issue caps contraction / aba_derivatives at 3x, goal 2x), timed
interleaved in one process; then the contraction on serial chains of N = 8..64 links
and the slope of log(time) against log(N) (issue: <= 2.2); and (issue 27 part 2)
contact_dynamics_contraction against contact_dynamics_derivatives on the robots with
feet (core_contacts.contacts_of: solo12's point feet, talos' soles; goal <= 3x).
"""

import argparse
from functools import partial

import numpy as np

import rbdiff as rbd
from rbdiff.bench.core_contacts import contacts_of
from rbdiff.bench.timing import interleaved
from rbdiff.model.robots import default_floating_base

ROBOTS = ("iiwa14", "panda", "hyq", "talos_full_v2")
CONTACT_ROBOTS = ("solo12", "talos_full_v2")
CHAINS = (8, 16, 32, 64)
SETTINGS = dict(repeats=15, min_time=3e-3)


def calls(model, pm, q, v, a):
    """{name: (rbdiff call, None, None)}: no Pinocchio peer. aba's torque is rnea's, as
    in core_derivatives; the costate is a fixed random vector."""
    tau = rbd.rnea(model, q, v, a)
    lam = np.random.default_rng(1).normal(size=model.nv)
    got = {"rnea_second_order_contraction": (
               partial(rbd.rnea_second_order_contraction, model, q, v, a, lam), None, None),
           "aba_second_order_contraction": (
               partial(rbd.aba_second_order_contraction, model, q, v, tau, lam), None, None)}
    cs = contacts_of(model)
    if cs is not None:      # a = tau, as core_contacts
        lam_f = np.random.default_rng(2).normal(size=sum(c.dim for c in cs))
        got["contact_dynamics_contraction"] = (
            partial(rbd.contact_dynamics_contraction, model, q, v, a, cs, lam, lam_f), None,
            None)
    return got


def _tensor_route(model, q, v, tau, lam):
    """The four contractions through the tensors: what a DDP did before issue 27."""
    return [np.einsum("i,ijk->jk", lam, t)
            for t in rbd.aba_second_order_derivatives(model, q, v, tau)]


def _state(model, seed=0):
    rng = np.random.default_rng(seed)
    q = rbd.random_configuration(model, rng)
    v, tau, lam = rng.normal(size=(3, model.nv))
    return q, v, tau, lam


def compare(model, label, settings=SETTINGS, stat="median"):
    """One row: seconds per call (``stat``: "median" or "min" over the rounds) of the
    contraction, the tensor route and aba_derivatives at one random state, and the
    largest difference between the contraction and the tensor route (relative to
    max(1, |tensor route|))."""
    q, v, tau, lam = _state(model)
    got = rbd.aba_second_order_contraction(model, q, v, tau, lam)
    ref = _tensor_route(model, q, v, tau, lam)
    err = max(float(np.max(np.abs(g - r)) / max(1.0, np.max(np.abs(r))))
              for g, r in zip(got, ref))
    t = interleaved({"contraction": partial(rbd.aba_second_order_contraction, model, q, v,
                                            tau, lam),
                     "tensors": partial(_tensor_route, model, q, v, tau, lam),
                     "aba_derivatives": partial(rbd.aba_derivatives, model, q, v, tau)},
                    **settings)
    return dict(robot=label, nv=model.nv, err=err,
                **{k: t[k][stat] for k in ("contraction", "tensors", "aba_derivatives")})


def robots_table(robots=ROBOTS, settings=SETTINGS, stat="median"):
    rows = []
    for name in robots:
        floating = default_floating_base(name)
        model = rbd.load_robot(name, floating_base=floating)
        rows.append(compare(model, name + ("+ff" if floating else ""), settings, stat))
    return rows


def chain_scaling(sizes=CHAINS, settings=SETTINGS, stat="median"):
    """Rows of compare on serial chains, and the log-log slope of the contraction's
    time (least squares over the sizes) and of aba_derivatives'."""
    rows = [compare(rbd.models.serial_chain(n), f"chain {n}", settings, stat)
            for n in sizes]
    x = np.log([r["nv"] for r in rows])
    slope = {k: float(np.polyfit(x, np.log([r[k] for r in rows]), 1)[0])
             for k in ("contraction", "tensors", "aba_derivatives")}
    return rows, slope


def contact_compare(model, label, settings=SETTINGS, stat="median"):
    """One row: seconds per call of contact_dynamics_contraction and of the first-order
    contact_dynamics_derivatives (the robot's feet, LOCAL) at one random state."""
    q, v, tau, lam = _state(model)
    cs = contacts_of(model)
    lam_f = np.random.default_rng(2).normal(size=sum(c.dim for c in cs))
    t = interleaved({"contraction": partial(rbd.contact_dynamics_contraction, model, q, v,
                                            tau, cs, lam, lam_f),
                     "derivatives": partial(rbd.contact_dynamics_derivatives, model, q, v,
                                            tau, cs)}, **settings)
    return dict(robot=label, nv=model.nv, nc=len(lam_f),
                **{k: t[k][stat] for k in ("contraction", "derivatives")})


def contacts_table(robots=CONTACT_ROBOTS, settings=SETTINGS, stat="median"):
    return [contact_compare(rbd.load_robot(n, floating_base=True), n + "+ff", settings, stat)
            for n in robots]


def format_contact_rows(rows):
    head = (f"{'robot':18s} {'nv':>3s} {'nc':>3s} {'contraction us':>15s} "
            f"{'contact_dynamics_derivatives us':>32s} {'ratio':>6s}")
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(f"{r['robot']:18s} {r['nv']:3d} {r['nc']:3d} "
                     f"{r['contraction'] * 1e6:15.2f} {r['derivatives'] * 1e6:32.2f} "
                     f"{r['contraction'] / r['derivatives']:6.2f}")
    return "\n".join(lines)


def format_rows(rows):
    head = (f"{'robot':18s} {'nv':>3s} {'contraction us':>15s} {'tensors+einsum us':>18s} "
            f"{'speedup':>8s} {'aba_derivatives us':>19s} {'ratio':>6s} {'max|diff|':>9s}")
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(f"{r['robot']:18s} {r['nv']:3d} {r['contraction'] * 1e6:15.2f} "
                     f"{r['tensors'] * 1e6:18.2f} {r['tensors'] / r['contraction']:8.2f} "
                     f"{r['aba_derivatives'] * 1e6:19.2f} "
                     f"{r['contraction'] / r['aba_derivatives']:6.2f} {r['err']:9.1e}")
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m rbdiff.bench.core_contraction",
                                description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--robots", nargs="*", default=list(ROBOTS), metavar="NAME")
    p.add_argument("--chains", nargs="*", type=int, default=list(CHAINS), metavar="N")
    p.add_argument("--contacts", nargs="*", default=list(CONTACT_ROBOTS), metavar="NAME",
                   help="robots for contact_dynamics_contraction vs "
                        "contact_dynamics_derivatives (floating base, feet)")
    p.add_argument("--quick", action="store_true", help="fewer, shorter rounds")
    p.add_argument("--stat", choices=("median", "min"), default="median",
                   help="per-call time over the rounds (min: on a loaded machine)")
    args = p.parse_args(argv)
    settings = dict(repeats=7, min_time=2e-3) if args.quick else SETTINGS
    print("aba_second_order_contraction vs the tensor route (aba_second_order_derivatives "
          "+ einsum) and vs aba_derivatives (ratio: contraction / aba_derivatives; issue "
          "27: <= 3, goal 2); " + args.stat + " per call")
    if args.robots:
        print(format_rows(robots_table(args.robots, settings, args.stat)))
    if args.chains:
        rows, slope = chain_scaling(args.chains, settings, args.stat)
        print()
        print(format_rows(rows))
        print("log-log slope over N = " + ", ".join(map(str, args.chains)) + ": "
              + ", ".join(f"{k} {s:.2f}" for k, s in slope.items())
              + " (issue 27: contraction <= 2.2)")
    if args.contacts:
        print()
        print("contact_dynamics_contraction vs contact_dynamics_derivatives (ratio; issue "
              "27 part 2: <= 3); " + args.stat + " per call")
        print(format_contact_rows(contacts_table(args.contacts, settings, args.stat)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
