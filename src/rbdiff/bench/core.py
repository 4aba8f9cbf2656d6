"""Core benchmark: one rbdiff call vs one Pinocchio Python call per robot and public
function, timed interleaved at a fixed random state, plus the empty-call overhead of an
rbdiff entry point. The dynamics pairs are here; each other family of public functions
lists its pairs in a module of its own (``PAIR_MODULES``: ``calls(model, pm, q, v, a)``
-> {name: (rbdiff call, Pinocchio call or None, post)}).

Run: ``python -m rbdiff.bench.core [--robots iiwa14 panda] [--quick] [--json PATH]``
(or ``python -m rbdiff bench-core ...``).
"""

import argparse
import json
import platform
import sys
from functools import partial

import numpy as np

import rbdiff as rbd
from rbdiff import api
from rbdiff.cpu import single
from rbdiff.cpu.scratch import HELD
from rbdiff.bench.timing import interleaved
from rbdiff.model.robots import default_floating_base, robot_names, robot_path

try:
    import pinocchio as pin
except ImportError:        # the rbdiff columns still run; Pinocchio's show as "-"
    pin = None

try:
    from tqdm import tqdm
except ImportError:
    tqdm = None

ROBOTS = ("iiwa14", "panda", "hyq", "solo12", "talos_full_v2", "g1")
ALGORITHMS = ("rnea", "crba", "aba", "minverse")      # the dynamics pairs, in calls()
# modules with more pairs
PAIR_MODULES = ("core_configuration", "core_kinematics", "core_derivatives", "core_lie",
                "core_frame_motion", "core_centroidal", "core_contacts", "core_contraction")
# rbdiff.jax / rbdiff.torch gradients against Pinocchio's derivative calls (``--frontends``:
# they time a framework's call overhead beside the math, so they stay out of the bar's table)
FRONTEND_MODULES = ("core_frontends",)
TARGET = 1.5               # rbdiff / Pinocchio per-call time: the bar (the goal is 1.0)
AGREE = 1e-8               # max|diff| allowed, relative to max(1, max|pin|)
SEED = 0
SETTINGS = {False: dict(repeats=25, min_time=3e-3), True: dict(repeats=7, min_time=2e-3)}


def _full(M):
    """Pinocchio's crba / computeMinverse fill only the upper triangle: mirror it."""
    return np.triu(M) + np.triu(M, 1).T


def load(name):
    """(rbdiff Model, Pinocchio model or None) of robot ``name``; raises ImportError or
    OSError when example-robot-data (or the URDF) is missing."""
    floating = default_floating_base(name)
    model = rbd.load_robot(name, floating_base=floating)
    pm = None
    if pin is not None:
        path = str(robot_path(name))
        pm = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer()) if floating \
            else pin.buildModelFromUrdf(path)
        assert (pm.nq, pm.nv) == (model.nq, model.nv), name
    return model, pm


def random_state(model, pm, rng):
    """A random (q, v, a); with Pinocchio, q integrates a random v from its neutral q."""
    if pm is not None:
        q = pin.integrate(pm, pin.neutral(pm), rng.normal(size=pm.nv))
    else:
        q = rbd.random_configuration(model, rng)
    return np.ascontiguousarray(q, dtype=float), rng.normal(size=model.nv), \
        rng.normal(size=model.nv)


def calls(model, pm, q, v, a, frontends=False):
    """{name: (rbdiff call, Pinocchio call or None, post)} of every pair: the dynamics and
    those of PAIR_MODULES (and FRONTEND_MODULES with ``frontends``)."""
    import importlib
    pairs = dynamics_calls(model, pm, q, v, a)
    for name in PAIR_MODULES + (FRONTEND_MODULES if frontends else ()):
        pairs.update(importlib.import_module(f"rbdiff.bench.{name}").calls(model, pm, q, v, a))
    return pairs


def dynamics_calls(model, pm, q, v, a):
    """{algorithm: (rbdiff call, Pinocchio call or None, full result from Pinocchio's)}.

    Calls are ``functools.partial`` objects: the cheapest zero-argument wrapper, the
    same for both sides."""
    tau = rbd.rnea(model, q, v, a)
    f, pf = external_forces(model)
    ours = {"rnea": partial(rbd.rnea, model, q, v, a), "crba": partial(rbd.crba, model, q),
            "aba": partial(rbd.aba, model, q, v, tau),
            "minverse": partial(rbd.minverse, model, q),
            # fext bound by position, as Pinocchio's: a partial's keywords cost ~90 ns a
            # call (a dict merged), which a direct call rbd.rnea(..., fext=f) does not pay
            "rnea+fext": partial(rbd.rnea, model, q, v, a, f),
            "aba+fext": partial(rbd.aba, model, q, v, tau, f)}
    if pm is None:
        return {k: (fn, None, None) for k, fn in ours.items()}
    pd = pm.createData()
    theirs = {"rnea": (partial(pin.rnea, pm, pd, q, v, a), np.array),
              "crba": (partial(pin.crba, pm, pd, q), _full),
              "aba": (partial(pin.aba, pm, pd, q, v, tau), np.array),
              "minverse": (partial(pin.computeMinverse, pm, pd, q), _full),
              "rnea+fext": (partial(pin.rnea, pm, pd, q, v, a, pf), np.array),
              "aba+fext": (partial(pin.aba, pm, pd, q, v, tau, pf), np.array)}
    return {k: (ours[k], *theirs[k]) for k in ours}


def external_forces(model, seed=SEED):
    """(fext (njoints, 6), Pinocchio's StdVec_Force of the same, or None): a random
    local-frame spatial force [linear, angular] on every joint's body (the universe's
    row too, which both ignore)."""
    f = np.random.default_rng(seed + 1).normal(size=(model.njoints, 6))
    if pin is None:
        return f, None
    pf = pin.StdVec_Force()
    for row in f:
        pf.append(pin.Force(row[:3], row[3:]))
    return f, pf


def bench_pair(robot, model, alg, ours, theirs, post, settings):
    """One table row: agreement first (also the warm-up / compile call), then timings.
    ``ours.compared``, where set, picks from rbdiff's result the array compared."""
    row = dict(robot=robot, nq=model.nq, nv=model.nv, algorithm=alg)
    mine = np.array(getattr(ours, "compared", _itself)(ours()))
    funcs = {"rbdiff": ours}
    if theirs is not None:
        ref = post(theirs())          # copies: Pinocchio returns views into its Data
        row["max_abs_diff"] = float(np.max(np.abs(mine - ref)))
        row["agree"] = row["max_abs_diff"] <= AGREE * max(1.0, float(np.max(np.abs(ref))))
        funcs["pin"] = theirs
    t = interleaved(funcs, **settings)
    row["rbdiff_s"], row["rbdiff_min_s"] = t["rbdiff"]["median"], t["rbdiff"]["min"]
    if theirs is not None:
        row["pin_s"], row["pin_min_s"] = t["pin"]["median"], t["pin"]["min"]
        row["ratio"] = row["rbdiff_s"] / row["pin_s"]
        row["pass"] = row["ratio"] <= TARGET
    return row


def _itself(x):
    return x


def _noop(model, q, v, a):
    """The reference: a Python call with rbd.rnea's arguments that does nothing."""


def _one_joint_model():
    """``rbd.models.serial_chain(1)``: one z revolute, where the dynamics cost nothing."""
    return rbd.models.serial_chain(1)


def _pin_one_joint(m):
    """Pinocchio's twin of the 1-joint model ``m``."""
    pm = pin.Model()
    j = pm.addJoint(0, pin.JointModelRZ(), pin.SE3.Identity(), "joint1")
    pm.appendBodyToJoint(j, pin.Inertia(float(m.masses[1]), np.array(m.coms[1]),
                                        np.array(m.inertias[1])), pin.SE3.Identity())
    return pm


def overhead(settings):
    """Per-call seconds {label: {"median", "min", ...}} of entry points on a 1-joint
    chain, where the dynamics cost nothing and only the call overhead remains."""
    m = _one_joint_model()
    q, v, a = np.zeros(1), np.ones(1), np.ones(1)
    raw = (m.mi, m.mf, q, v, a, None,
           HELD[m._scratch_key], m._sv)   # no fext; tau made by the entry from its shape
    rbd.rnea(m, q, v, a)       # binds api._rnea_front to the compiled function
    funcs = {"python no-op f(model, q, v, a)": partial(_noop, m, q, v, a),
             "compiled front, as rbd.rnea calls it": partial(api._rnea_front, m, q, v, a),
             "compiled entry via Numba's dispatcher": partial(single.rnea_one, *raw),
             "rbd.rnea (public API)": partial(rbd.rnea, m, q, v, a)}
    if pin is not None:
        pm = _pin_one_joint(m)
        funcs["pin.rnea (same 1-joint model)"] = partial(pin.rnea, pm, pm.createData(),
                                                        q, v, a)
    return interleaved(funcs, **settings)


class _NoBar:
    def update(self, n=1):
        pass

    def set_postfix_str(self, s):
        pass

    def close(self):
        pass


def run(robots=ROBOTS, quick=False, progress=True, only=None, frontends=False):
    """All measurements as a JSON-ready dict: "results" (one row per robot and
    algorithm; times in seconds per call, median over rounds and min), "skipped"
    ([{robot, reason}]), "overhead" and the settings and library versions."""
    settings = SETTINGS[bool(quick)]
    rng = np.random.default_rng(SEED)
    out = dict(target_ratio=TARGET, quick=bool(quick), seed=SEED, **settings,
               python=platform.python_version(), numpy=np.__version__,
               numba=__import__("numba").__version__,
               pinocchio=None if pin is None else pin.__version__,
               results=[], skipped=[])
    total = len(robots)
    bar = tqdm(total=total, file=sys.stderr, leave=False, unit="robot") \
        if (progress and tqdm is not None) else _NoBar()
    try:
        for robot in robots:
            try:
                model, pm = load(robot)
            except (ImportError, OSError) as e:   # example-robot-data or a URDF missing
                out["skipped"].append(dict(robot=robot, reason=str(e)))
                bar.update()
                continue
            q, v, a = random_state(model, pm, rng)
            for alg, (ours, theirs, post) in calls(model, pm, q, v, a, frontends).items():
                if only and not alg.startswith(tuple(only)):
                    continue
                bar.set_postfix_str(f"{robot} {alg}")
                out["results"].append(bench_pair(robot, model, alg, ours, theirs, post,
                                                 settings))
            bar.update()
    finally:
        bar.close()
    out["overhead"] = overhead(settings)
    return out


def _us(s):
    return "-" if s is None else f"{s * 1e6:.2f}"


def format_table(out):
    """The results and overhead of :func:`run` as printable text."""
    head = ("robot", "nq", "nv", "algorithm", "rbdiff us", "pin us", "ratio", "target",
            "pass", "max|diff|")
    rows = []
    for r in out["results"]:
        has_pin = "pin_s" in r
        rows.append((r["robot"], str(r["nq"]), str(r["nv"]), r["algorithm"],
                     _us(r["rbdiff_s"]), _us(r.get("pin_s")),
                     f"{r['ratio']:.2f}" if has_pin else "-", f"{out['target_ratio']:.2f}",
                     ("pass" if r["pass"] else "FAIL") if has_pin else "-",
                     f"{r['max_abs_diff']:.1e}" + ("" if r["agree"] else " (DISAGREE)")
                     if has_pin else "-"))
    width = [max(len(h), *(len(row[k]) for row in rows)) if rows else len(h)
             for k, h in enumerate(head)]
    left = {0, 3}               # text columns left-aligned, numbers right-aligned

    def line(cells):
        return "  ".join(c.ljust(w) if k in left else c.rjust(w)
                         for k, (c, w) in enumerate(zip(cells, width)))

    lines = [f"rbdiff vs Pinocchio {out['pinocchio'] or '(not installed)'}: per-call "
             f"time, median of {out['repeats']} interleaved rounds (seed {out['seed']})",
             line(head), line(["-" * w for w in width])]
    lines += [line(row) for row in rows]
    timed = [r for r in out["results"] if "pass" in r]
    if timed:
        lines.append(f"{sum(r['pass'] for r in timed)}/{len(timed)} within "
                     f"{out['target_ratio']}x of Pinocchio; geometric-mean ratio "
                     f"{np.exp(np.mean([np.log(r['ratio']) for r in timed])):.2f}")
    for s in out["skipped"]:
        lines.append(f"skipped {s['robot']}: {s['reason']}")
    lines += ["", "Empty-call overhead (1-joint serial chain, per call):"]
    w = max(len(k) for k in out["overhead"])
    for k, t in out["overhead"].items():
        lines.append(f"  {k.ljust(w)}  {t['median'] * 1e9:8.0f} ns  "
                     f"(min {t['min'] * 1e9:.0f} ns)")
    return "\n".join(lines)


def main(argv=None):
    """Command line entry point; prints the table and returns 0."""
    p = argparse.ArgumentParser(prog="python -m rbdiff bench-core", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--robots", nargs="+", default=list(ROBOTS), metavar="NAME",
                   help=f"robots to time (default: {' '.join(ROBOTS)})")
    p.add_argument("--quick", action="store_true",
                   help="fewer and shorter rounds (noisier, ~4x faster)")
    p.add_argument("--json", metavar="PATH", help="also write the raw numbers as JSON")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--only", nargs="+", metavar="PREFIX",
                   help="only the rows whose name starts with one of these (e.g. frame_ com)")
    p.add_argument("--frontends", action="store_true",
                   help="add the rbdiff.jax / rbdiff.torch gradient rows (core_frontends)")
    args = p.parse_args(argv)
    unknown = [r for r in args.robots if r not in robot_names()]
    if unknown:
        p.error(f"unknown robot(s) {', '.join(unknown)}; known: {', '.join(robot_names())}")
    out = run(args.robots, quick=args.quick, progress=not args.no_progress, only=args.only,
              frontends=args.frontends)
    print(format_table(out))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
