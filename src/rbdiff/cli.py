"""Command line: ``python -m rbdiff <command>``.

Commands are argparse subparsers. A command that forwards its arguments to another
module's ``main(argv)`` (as ``bench-core`` does) is one :func:`_forward` line in
:func:`build_parser`.
"""

import argparse
import importlib
from functools import partial

import numpy as np

DEMO_ROBOT = "iiwa14"
DEMO_FRAME = "iiwa_link_ee"     # iiwa14's last link frame (the flange), on joint 7
COMPILING = "compiling kernels (first run only, cached afterwards)..."


def _end_effector(model):
    """DEMO_FRAME if the model has it, else the last frame (the deepest link)."""
    names = [f.name for f in model.frames]
    return DEMO_FRAME if DEMO_FRAME in names else names[-1]


def demo_results(seed=0, timing=True, repeats=5):
    """Everything the demo prints, for the bundled iiwa14 at a seeded random state.

    Returns a dict: "model", "q", "v", "a", "tau" = rnea(q, v, a), "M" = crba(q),
    "qdd" = aba(q, v, tau), "Minv" = minverse(q), "nle", "gravity", "frame" (its name),
    "placement" (4, 4), "jacobian" (6, nv, local_world_aligned), the checks
    "err_minv" = ||M Minv - I||_F, "err_aba" = ||rnea(q, v, aba(q, v, tau)) - tau||,
    "err_qdd" = ||qdd - a||, and "times" ({name: median seconds per call}, empty when
    ``timing`` is False).
    """
    import rbdiff as rbd
    from rbdiff.bench.timing import interleaved

    model = rbd.load_robot(DEMO_ROBOT)
    rng = np.random.default_rng(seed)
    q = rbd.random_configuration(model, rng)
    v, a = rng.normal(size=model.nv), rng.normal(size=model.nv)
    frame = _end_effector(model)
    r = dict(model=model, q=q, v=v, a=a, frame=frame)
    r["tau"] = rbd.rnea(model, q, v, a)
    r["M"] = rbd.crba(model, q)
    r["qdd"] = rbd.aba(model, q, v, r["tau"])
    r["Minv"] = rbd.minverse(model, q)
    r["nle"] = rbd.nonlinear_effects(model, q, v)
    r["gravity"] = rbd.gravity(model, q)
    r["placement"] = rbd.frame_placement(model, q, frame)
    r["jacobian"] = rbd.frame_jacobian(model, q, frame, reference="local_world_aligned")
    r["err_minv"] = float(np.linalg.norm(r["M"] @ r["Minv"] - np.eye(model.nv)))
    r["err_aba"] = float(np.linalg.norm(rbd.rnea(model, q, v, r["qdd"]) - r["tau"]))
    r["err_qdd"] = float(np.linalg.norm(r["qdd"] - a))
    r["times"] = {}
    if timing:
        tau = r["tau"]
        funcs = {"rnea": partial(rbd.rnea, model, q, v, a),
                 "crba": partial(rbd.crba, model, q),
                 "aba": partial(rbd.aba, model, q, v, tau),
                 "minverse": partial(rbd.minverse, model, q),
                 "nonlinear_effects": partial(rbd.nonlinear_effects, model, q, v),
                 "gravity": partial(rbd.gravity, model, q),
                 "frame_jacobian": partial(rbd.frame_jacobian, model, q, frame)}
        r["times"] = {k: t["median"] for k, t in interleaved(funcs, repeats=repeats,
                                                             min_time=2e-3).items()}
    return r


def demo(seed=0, timing=True):
    """Print the demo (see :func:`demo_results`); returns its results."""
    import rbdiff as rbd
    print(f"rbdiff {rbd.__version__} demo: {DEMO_ROBOT} (bundled URDF), seed {seed}")
    print(COMPILING, flush=True)      # before the first call: it compiles (~seconds)
    from rbdiff.kernels import jit
    jit.COMPILE_NOTICE = False        # the line above says it
    r = demo_results(seed, timing=timing)
    m = r["model"]
    print(f"model: {m!r}\n")

    def show(title, x):
        print(f"{title}\n{x}\n")

    with np.printoptions(precision=4, suppress=True, linewidth=110):
        show("q (random configuration within joint limits)", r["q"])
        show("v (random joint velocity)", r["v"])
        show("a (random joint acceleration)", r["a"])
        show("tau = rnea(q, v, a)   [inverse dynamics]", r["tau"])
        show("M = crba(q)   [joint-space inertia matrix]", r["M"])
        show("qdd = aba(q, v, tau)   [forward dynamics; equals a]", r["qdd"])
        show("Minv = minverse(q)", r["Minv"])
        show("nonlinear_effects(q, v) = C(q, v) v + g(q)", r["nle"])
        show("gravity(q) = g(q)", r["gravity"])
        show(f"frame placement of {r['frame']!r} in the world (4x4)", r["placement"])
        show(f"frame Jacobian of {r['frame']!r} (6 x nv, local_world_aligned, rows "
             "[linear; angular])", r["jacobian"])
    print("checks")
    for label, key in (("||M Minv - I||_F", "err_minv"),
                       ("||rnea(q, v, aba(q, v, tau)) - tau||", "err_aba"),
                       ("||aba(q, v, rnea(q, v, a)) - a||", "err_qdd")):
        print(f"  {label:<38} = {r[key]:.3e}")
    if r["times"]:
        print("\nper-call time (median of interleaved rounds)")
        w = max(len(k) for k in r["times"])
        for k, t in r["times"].items():
            print(f"  {k.ljust(w)}  {t * 1e6:8.2f} us")
    return r


def _forward(sub, name, module, help):
    """A command that hands its arguments, unparsed, to ``module.main(argv)``
    (``--help`` included, so the module's own help is shown)."""
    p = sub.add_parser(name, help=help, add_help=False)
    p.set_defaults(run=lambda args, rest: importlib.import_module(module).main(rest),
                   forwards=True)
    return p


def build_parser():
    """The top-level parser: one subparser per command."""
    parser = argparse.ArgumentParser(
        prog="python -m rbdiff", description="rbdiff: rigid-body dynamics with Numba.")
    sub = parser.add_subparsers(title="commands", dest="command", metavar="COMMAND")
    sub.required = True
    p = sub.add_parser("demo", help="dynamics of the bundled iiwa14 at a random state, "
                                    "with checks and per-call times")
    p.add_argument("--seed", type=int, default=0, help="random state seed (default 0)")
    p.add_argument("--no-timing", action="store_true", help="skip the timing table")
    p.set_defaults(run=lambda args, rest: demo(args.seed, timing=not args.no_timing),
                   forwards=False)
    _forward(sub, "compile", "rbdiff.precompile",
             "compile every public function ahead of use into Numba's on-disk cache "
             "(Docker images, CI, clusters); see compile --help")
    _forward(sub, "mpc", "rbdiff.mpc.cli",
             "a legged robot under model-predictive control in MuJoCo (trot, walk, "
             "pushes; summary, JSON, GIF, figure); see mpc --help")
    _forward(sub, "bench-mpc", "rbdiff.bench.mpc",
             "the MPC tick: rbdiff fddp / ddp against MuJoCo finite differences and "
             "Crocoddyl on the same problem, and fddp vs ddp in closed loop; see "
             "bench-mpc --help")
    _forward(sub, "bench-core", "rbdiff.bench.core",
             "rbdiff vs Pinocchio single-call times per robot (rnea, crba, aba, "
             "minverse); see bench-core --help")
    _forward(sub, "bench-limit", "rbdiff.bench.limit",
             "rnea, aba and aba_derivatives on panda against their flop counts at one "
             "FMA per cycle, and the Python boundary's share of a call; see "
             "bench-limit --help")
    _forward(sub, "bench-coldstart", "rbdiff.bench.coldstart",
             "seconds to the first call of each public function in a fresh process with "
             "an empty Numba cache; see bench-coldstart --help")
    _forward(sub, "bench-batch", "rbdiff.bench.batch",
             "batches against loops of single calls, idle and with the other cores busy "
             "(iiwa14, hyq, talos; B = 4..1024); see bench-batch --help")
    _forward(sub, "bench", "rbdiff.bench.suite", "benchmark report: Table I, scaling, "
             "accuracy (report.md, PNGs, results.json); see bench --help")
    _forward(sub, "bench-gpu", "rbdiff.bench.gpu", "GPU aba_derivatives vs CPU batch, "
             "Pinocchio and JAX for N = 1..65536 (report.md, results.json, PNG); see "
             "bench-gpu --help")
    _forward(sub, "bench-dask", "rbdiff.bench.cluster", "batches on a Dask LocalCluster "
             "vs the local batch, with a chunk-size sweep; see bench-dask --help")
    _forward(sub, "bench-torch", "rbdiff.bench.torch", "rbdiff.torch forward and backward "
             "vs the NumPy API and adam-robotics' PyTorch backend; see bench-torch --help")
    _forward(sub, "bench-jax", "rbdiff.bench.jax", "jitted rbdiff.jax aba and its gradient "
             "vs the NumPy API and adam-robotics' JAX autodiff; see bench-jax --help")
    return parser


def main(argv=None):
    """Run a command; returns the process exit status (0 on success)."""
    parser = build_parser()
    args, rest = parser.parse_known_args(argv)
    if rest and not args.forwards:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    status = args.run(args, rest)
    return status if isinstance(status, int) else 0
