"""Cold start: seconds to the first result of each public function in a fresh process
with an empty Numba cache (compilation included), plus all of them in one process.

Each call runs in its own subprocess whose ``NUMBA_CACHE_DIR`` is a new empty temporary
folder: without it Numba reads and writes its cache in ``__pycache__`` beside the
sources, and a warm cache there would make the measurement meaningless. Import and
model loading are timed apart from the call.

Run: ``python -m rbdiff.bench.coldstart [--robot iiwa14] [--only rnea aba] [--json PATH]``
(or ``python -m rbdiff bench-coldstart ...``).
"""

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

ROBOT = "iiwa14"
FRAME = "iiwa_link_ee"
BATCH = 8
SEED = 0
# name -> target seconds (DESIGN.md section 2: the first call counts; issue 23: whole
# workflows, idle 2-core machine)
TARGETS = {"rnea": 3, "aba": 3, "crba": 3, "minverse": 3, "rnea_derivatives": 5,
           "aba_derivatives": 5, "rnea_second_order_derivatives": 10,
           "aba_second_order_derivatives": 6, "aba_derivatives_batch": 8,
           "frame_jacobian": None}
CALLS = tuple(TARGETS)
# workflows: what a user runs first, each timed alone from a fresh process (model loading
# included, rbdiff's import not); "demo" is `python -m rbdiff demo`'s work
WORKFLOW_TARGETS = {"trajopt_reach_ddp": 20, "jax_jit_aba_then_grad": 10, "demo": 10}
WORKFLOWS = tuple(WORKFLOW_TARGETS)
ALL_TARGET = 45
ALL = "all"


def _call(name, rbd, model, state):
    """Run public function ``name`` once at ``state`` (q, v, a, tau, qb, vb, taub)."""
    q, v, a, tau, qb, vb, taub = state
    if name == "rnea":
        return rbd.rnea(model, q, v, a)
    if name == "aba":
        return rbd.aba(model, q, v, tau)
    if name == "crba":
        return rbd.crba(model, q)
    if name == "minverse":
        return rbd.minverse(model, q)
    if name == "rnea_derivatives":
        return rbd.rnea_derivatives(model, q, v, a)
    if name == "aba_derivatives":
        return rbd.aba_derivatives(model, q, v, tau)
    if name == "rnea_second_order_derivatives":
        return rbd.rnea_second_order_derivatives(model, q, v, a)
    if name == "aba_second_order_derivatives":
        return rbd.aba_second_order_derivatives(model, q, v, tau)
    if name == "aba_derivatives_batch":
        return rbd.aba_derivatives(model, qb, vb, taub)
    if name == "frame_jacobian":
        names = [f.name for f in model.frames]
        return rbd.frame_jacobian(model, q, FRAME if FRAME in names else names[-1])
    raise ValueError(f"unknown call {name!r}")


def _workflow(name, rbd):
    """Run workflow ``name`` once (from loading its model to its first result)."""
    if name == "trajopt_reach_ddp":             # the README's trajopt example
        from .trajopt import reach_problem
        import rbdiff.trajopt as to
        return to.solve(reach_problem(), method="ddp")
    if name == "jax_jit_aba_then_grad":         # the README's JAX example, first calls
        import jax
        import jax.numpy as jnp
        import rbdiff.jax as rj
        jax.config.update("jax_enable_x64", True)
        model = rbd.load_robot(ROBOT)
        q = jnp.asarray(rbd.neutral(model))
        v = tau = jnp.zeros(model.nv)
        jax.jit(lambda q, v, t: rj.aba(model, q, v, t))(q, v, tau).block_until_ready()
        g = jax.jit(jax.grad(lambda q, v, t: jnp.sum(rj.aba(model, q, v, t) ** 2)))
        return g(q, v, tau).block_until_ready()
    if name == "demo":
        from ..cli import demo_results
        return demo_results()
    raise ValueError(f"unknown workflow {name!r}")


def child(names, robot, t0=None):
    """In this (fresh) process: import rbdiff (timed from ``t0``, the clock before any
    rbdiff import), load ``robot``, then time each first call.
    Returns {"import": s, "load": s, name: s, ..., "cpu": {name: CPU s, ...}}: the CPU
    seconds of the process (compilation is single-threaded), which another job on a
    shared machine inflates less than the wall-clock seconds."""
    clock, cpu = time.perf_counter, time.process_time
    t0 = clock() if t0 is None else t0
    import numpy as np
    import rbdiff as rbd
    t1 = clock()
    model = rbd.load_robot(robot)
    rng = np.random.default_rng(SEED)
    q = rbd.random_configuration(model, rng)     # NumPy only: compiles nothing
    v, a, tau = (rng.normal(size=model.nv) for _ in range(3))
    qb = rbd.random_configuration(model, rng, batch=BATCH)
    vb, taub = rng.normal(size=(BATCH, model.nv)), rng.normal(size=(BATCH, model.nv))
    state = (q, v, a, tau, qb, vb, taub)
    out = {"import": t1 - t0, "load": clock() - t1, "cpu": {}}
    for name in names:
        t, c = clock(), cpu()
        if name in WORKFLOW_TARGETS:
            _workflow(name, rbd)
        else:
            _call(name, rbd, model, state)
        out[name] = clock() - t
        out["cpu"][name] = cpu() - c
    return out


# the child's program: the clock starts before rbdiff is imported
_CHILD = ("import json, sys, time; t = time.perf_counter(); "
          "from rbdiff.bench import coldstart as c; "
          "print(json.dumps(c.child(sys.argv[2:], sys.argv[1], t)))")


def run_fresh(names, robot=ROBOT):
    """``child(names, robot)`` in a new interpreter with an empty NUMBA_CACHE_DIR (this
    rbdiff first on its path); returns its dict, plus "wall" (the subprocess's seconds)."""
    from ..cpu.background import child_environment
    with tempfile.TemporaryDirectory(prefix="rbdiff-cold-") as cache:
        env = child_environment(NUMBA_CACHE_DIR=cache)
        cmd = [sys.executable, "-c", _CHILD, robot, *names]
        t = time.perf_counter()
        # a session of its own: the background compiles it leaves (a large batch's
        # parallel entry, cpu/background.py) are waited for before the next measurement
        r = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, start_new_session=True)
        stdout, stderr = r.communicate()
        wall = time.perf_counter() - t
        leftover = _wait_for_group(r.pid)
        if r.returncode != 0:
            raise RuntimeError(f"cold-start child {names} failed:\n{stderr[-4000:]}")
    out = json.loads(stdout.strip().splitlines()[-1])
    out["wall"], out["leftover"] = wall, leftover
    return out


def _wait_for_group(pgid, timeout=900):
    """Seconds until no process of group ``pgid`` is left (the measured process's
    background children finishing their compiles)."""
    t = time.perf_counter()
    while time.perf_counter() - t < timeout:
        try:
            os.killpg(pgid, 0)
        except (ProcessLookupError, PermissionError):
            break
        time.sleep(0.1)
    return time.perf_counter() - t


def run(names=CALLS, robot=ROBOT, together=True, progress=True, workflows=WORKFLOWS):
    """{"single": {name: child dict}, "all": child dict or None, "workflows": {name: child
    dict}, ...}: each call alone in a fresh process, then (``together``) all of ``names``
    in one fresh process, then each workflow alone in a fresh process."""
    res = {"robot": robot, "batch": BATCH, "python": platform.python_version(),
           "single": {}, "all": None, "workflows": {}}
    try:
        import numba
        res["numba"] = numba.__version__
    except ImportError:
        pass
    def fresh(label, calls):
        if progress:
            print(f"  {label} ...", end="", flush=True, file=sys.stderr)
        out = run_fresh(calls, robot)
        if progress:
            print(f" {sum(out[n] for n in calls):.1f} s", file=sys.stderr)
        return out

    for name in names:
        res["single"][name] = fresh(name, [name])
    if together:
        res["all"] = fresh(f"{ALL} ({len(names)} in one process)", list(names))
    for name in workflows:
        res["workflows"][name] = fresh(f"workflow {name}", [name])
    return res


def format_table(res):
    """The result of :func:`run` as a text table: wall-clock and CPU seconds of each first
    call alone, its target, and the same call's seconds in the all-in-one process (where
    what earlier calls compiled is already there)."""
    names = list(res["single"])
    w = max([len(n) for n in names] + [len(ALL)])
    lines = [f"cold start on {res['robot']} (fresh process, empty NUMBA_CACHE_DIR; "
             f"batch B={res['batch']}; numba {res.get('numba', '?')})",
             f"{'call'.ljust(w)}  {'wall s':>7}  {'cpu s':>7}  {'target':>6}  "
             f"{'all-in-one wall s':>17}"]
    together = res.get("all") or {}
    dash = lambda x, f: "-" if x is None else format(x, f)
    for n in names:
        one = res["single"][n]
        lines.append(f"{n.ljust(w)}  {one[n]:7.2f}  {one['cpu'][n]:7.2f}  "
                     f"{dash(TARGETS.get(n), 'd'):>6}  {dash(together.get(n), '.2f'):>17}")
    if together:
        tot = sum(together[n] for n in names)
        cpu = sum(together["cpu"][n] for n in names)
        lines.append(f"{ALL.ljust(w)}  {tot:7.2f}  {cpu:7.2f}  {ALL_TARGET:>6d}  "
                     f"{'(one process)':>17}")
        lines.append(f"(not counted: import rbdiff {together['import']:.2f} s, load the "
                     f"model {together['load']:.2f} s)")
    flows = res.get("workflows") or {}
    if flows:
        lines.append(f"{'workflow'.ljust(w)}  {'wall s':>7}  {'cpu s':>7}  {'target':>6}  "
                     f"{'children after exit s':>21}")
        for n, one in flows.items():
            lines.append(f"{n.ljust(w)}  {one[n]:7.2f}  {one['cpu'][n]:7.2f}  "
                         f"{dash(WORKFLOW_TARGETS.get(n), 'd'):>6}  "
                         f"{one.get('leftover', 0.0):21.1f}")
    return "\n".join(lines)


def main(argv=None):
    """Command line entry point; prints the table and returns 0."""
    p = argparse.ArgumentParser(prog="python -m rbdiff bench-coldstart", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--robot", default=ROBOT, help=f"bundled or example-robot-data robot "
                                                   f"(default {ROBOT})")
    p.add_argument("--only", nargs="+", choices=CALLS, metavar="CALL",
                   help=f"calls to time (default all: {' '.join(CALLS)})")
    p.add_argument("--workflows", nargs="*", choices=WORKFLOWS, metavar="WORKFLOW",
                   default=None, help=f"workflows to time (default all: "
                                      f"{' '.join(WORKFLOWS)}; none: --workflows)")
    p.add_argument("--no-all", action="store_true",
                   help="skip the run of all calls in one process")
    p.add_argument("--json", metavar="PATH", help="also write the raw numbers as JSON")
    args = p.parse_args(argv)
    res = run(args.only or CALLS, args.robot, together=not args.no_all,
              workflows=WORKFLOWS if args.workflows is None else args.workflows)
    print(format_table(res))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
