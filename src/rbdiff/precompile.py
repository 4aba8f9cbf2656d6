"""Compile every public entry point ahead of use: ``python -m rbdiff compile``.

Numba compiles a function on its first call and keeps the machine code in its on-disk
cache (README, "Compilation and the cache"). This fills that cache for the common
specialisations, so that a later process's first call only loads: for a Docker image,
CI or a cluster, run it once where the cache lives.

It drives the public functions themselves (rbd.rnea, rbd.aba_derivatives, ...), single
and batched, with and without fext, on a small random tree with every joint type: what
gets compiled is exactly what a user's call compiles, however the modules below are
arranged. Numba's compiler holds a process-wide lock, so the jobs run in several
processes (``--jobs``, default all cores); kernels/jit.py serialises their writes to
the shared cache.
"""

import argparse
import importlib.util
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from multiprocessing import get_context

import numpy as np

from .declare import DECLARED

DTYPES = ("float64", "float32", "complex128")
BATCH = 2
SEED = 0
JOINT_TYPES = ("revolute", "prismatic", "continuous", "spherical", "free_flyer")


def _rnea(rbd, m, s, b=""):
    q, v, a, f = s[b + "q"], s[b + "v"], s[b + "a"], s[b + "f"]
    # a tiny batch runs cpu.batch.rnea_few once the policy has timed it (a few calls)
    for _ in range(10 if b else 1):
        rbd.rnea(m, q, v, a)
    rbd.rnea(m, q, v, a, fext=f)
    rbd.nonlinear_effects(m, q, v)
    rbd.gravity(m, q)


def _aba(rbd, m, s, b=""):
    q, v, a, f = s[b + "q"], s[b + "v"], s[b + "a"], s[b + "f"]
    for _ in range(10 if b else 1):     # ... and cpu.batch.aba_few
        rbd.aba(m, q, v, a)
    rbd.aba(m, q, v, a, fext=f)


def _rnea_derivatives(rbd, m, s, b=""):
    q, v, a, f = s[b + "q"], s[b + "v"], s[b + "a"], s[b + "f"]
    for method in ("idsva", "chain_rule"):
        rbd.rnea_derivatives(m, q, v, a, method=method)
        rbd.rnea_derivatives(m, q, v, a, fext=f, method=method)


def _aba_derivatives(rbd, m, s, b=""):
    q, v, a, f = s[b + "q"], s[b + "v"], s[b + "a"], s[b + "f"]
    for product in ("dmm", "aza"):          # "auto" picks one of them per model
        rbd.aba_derivatives(m, q, v, a, product=product)
        rbd.aba_derivatives(m, q, v, a, fext=f, product=product)


def _chain_rule(rbd, m, s, b=""):
    """aba_derivatives(method="chain_rule") (rnea_derivatives' is in its job)."""
    q, v, a, f = s[b + "q"], s[b + "v"], s[b + "a"], s[b + "f"]
    rbd.aba_derivatives(m, q, v, a, method="chain_rule")
    rbd.aba_derivatives(m, q, v, a, fext=f, method="chain_rule")


def _kinematics(rbd, m, s, b=""):
    q, v, a = s[b + "q"], s[b + "v"], s[b + "a"]
    rbd.forward_kinematics(m, q)
    rbd.forward_kinematics(m, q, v)
    rbd.forward_kinematics(m, q, v, a)
    rbd.frame_placements(m, q)
    rbd.frame_placement(m, q, m.frames[-1].name)
    for reference in ("world", "local", "local_world_aligned"):
        rbd.frame_jacobian(m, q, m.frames[-1].name, reference=reference)


def _kinematics_derivatives(rbd, m, s, b=""):
    q, v, a = (getattr(s, b + x) for x in "qva")
    kd = rbd.kinematics_derivatives(m, q, v, a)
    kd.joint(m.njoints - 1)         # a single state's getter (before the fields are written)
    kd.dv_dq                    # ... and the fields
    rbd.kinematics_derivatives(m, q, v, a, joint=m.njoints - 1)


def _contacts(rbd, m, s, b=""):
    """The contact and impulse entries, on a point contact at the model's last frame on
    a moving joint (a set the sample model cannot hold still is refused after the
    entry compiled: that is all a compile job needs)."""
    q, v, a, f = s[b + "q"], s[b + "v"], s[b + "a"], s[b + "f"]
    frame = max(range(len(m.frames)), key=lambda k: (m.frames[k].parent, k))
    cs = (rbd.Contact(frame, "3d"),)
    for call in (lambda: rbd.contact_dynamics(m, q, v, a, cs),
                 lambda: rbd.contact_dynamics_derivatives(m, q, v, a, cs),
                 lambda: rbd.contact_dynamics(m, q, v, a, cs, fext=f),
                 lambda: rbd.contact_dynamics_derivatives(m, q, v, a, cs, fext=f),
                 lambda: rbd.impulse_dynamics(m, q, v, cs),
                 lambda: rbd.impulse_dynamics_derivatives(m, q, v, cs),
                 lambda: rbd.contact_dynamics_contraction(m, q, v, a, cs, a,
                                                          np.ones_like(a[..., :3])),
                 lambda: rbd.impulse_dynamics_contraction(m, q, v, cs, a,
                                                          np.ones_like(a[..., :3]))):
        try:
            call()
        except rbd.DependentContacts:
            pass


def _centroidal(rbd, m, s, b=""):
    q, v, a = s[b + "q"], s[b + "v"], s[b + "a"]
    rbd.total_mass(m)
    rbd.center_of_mass(m, q)
    rbd.center_of_mass(m, q, v)
    rbd.center_of_mass(m, q, v, a)
    rbd.com_jacobian(m, q)
    rbd.centroidal_momentum_matrix(m, q)
    rbd.centroidal_momentum(m, q, v)
    rbd.centroidal_momentum(m, q, v, a)
    rbd.centroidal_dynamics_derivatives(m, q, v, a)
    rbd.kinetic_energy(m, q, v)
    rbd.potential_energy(m, q)


def _trajopt(rbd, m, s):
    """rbdiff.trajopt's compiled backward passes and rollouts (ilqr and the fixed-base
    ddp on a fixed-base model of their own, ddp's floating-base pass on the fixture)."""
    import rbdiff.trajopt as to
    p = rbd.load_robot("iiwa14")            # bundled: no example-robot-data needed
    goal = np.zeros(p.nq + p.nv)
    # a frame translation: DDP's residual curvature kernel (costs.FrameTranslation)
    prob = to.Problem(p, np.concatenate([np.full(p.nq, 0.3), np.zeros(p.nv)]), 3, 0.01,
                      running=[to.StateRegularization(goal, 1.0),
                               to.ControlRegularization(1e-3),
                               to.FrameTranslation(p.frames[-1].name, np.zeros(3), 1.0)],
                      terminal=[to.StateRegularization(goal, 10.0)])
    for method in ("ilqr", "ddp", "fddp"):    # fddp: its pass and the Euler rows' kernel
        to.solve(prob, method=method, max_iter=3)
    # ddp on the fixture's free flyer and spherical joints: the compiled curvature pass
    # (trajopt/curvature.ddp_segment; the contact and impulse contractions it calls by
    # address are the contacts job's entries)
    x0 = np.concatenate([rbd.neutral(m), np.zeros(m.nv)])
    to.solve(to.Problem(m, x0, 2, 0.01, running=[to.ControlRegularization(1e-3)]),
             method="ddp", max_iter=2)
    # a contact knot: the rollout's kept contact solves (cpu/contacts.contact_dynamics_kept)
    # and FDDP's derivatives from them (rollout.kept_parts); a set the sample model cannot
    # hold is refused after the entries compiled
    frame = max(range(len(m.frames)), key=lambda k: (m.frames[k].parent, k))
    try:
        to.solve(to.Problem(m, x0, 2, 0.01, running=[to.ControlRegularization(1e-3)],
                            contacts=(rbd.Contact(frame, "3d"),)), method="fddp", max_iter=1)
    except (rbd.DependentContacts, ValueError):
        pass
    # the frame placement cost's log6 kernel and the Gauss-Newton one (trajopt/residuals.py)
    to.FramePlacement(p.frames[-1].name, np.eye(4)).derivatives(p, np.zeros((1, p.nq)), None,
                                                                None)


def _configuration(rbd, m, s, b=""):
    q, v = s[b + "q"], s[b + "v"]
    rbd.difference(m, q, rbd.integrate(m, q, v))


def _lie(rbd, m, s, b=""):
    """The Lie-group Jacobians; integrate_transport's J (nv, k) is no declared input."""
    q, v = s[b + "q"], s[b + "v"]
    rbd.integrate_jacobians(m, q, v)
    rbd.difference_jacobians(m, q, rbd.integrate(m, q, v))
    J = np.ones(q.shape[:-1] + (m.nv, 2), q.dtype)
    rbd.integrate_transport(m, q, v, J, "q")


def _aba_second_order(rbd, m, s):
    rbd.aba_second_order_derivatives(m, s.q, s.v, s.a)
    # the IDFOZA products compile apart (cpu/pieces.py): the job's model may not take them
    rbd.aba_second_order_derivatives(m, s.q, s.v, s.a, inner="idfoza")


# the public functions a job calls, where they are not the job's name
CALLS_OF = {"rnea": ("rnea", "nonlinear_effects", "gravity"),
            "kinematics": ("forward_kinematics", "frame_placements", "frame_placement",
                           "frame_jacobian"),
            "configuration": ("integrate", "difference"),
            "lie": ("integrate_jacobians", "difference_jacobians", "integrate_transport"),
            # every combination of the optional v and a (each its own specialisation)
            "contacts": ("contact_dynamics", "contact_dynamics_derivatives",
                         "impulse_dynamics", "impulse_dynamics_derivatives",
                         "contact_dynamics_contraction", "impulse_dynamics_contraction"),
            "centroidal": ("total_mass", "center_of_mass", "com_jacobian",
                           "centroidal_momentum_matrix", "centroidal_momentum",
                           "centroidal_dynamics_derivatives", "kinetic_energy",
                           "potential_energy")}

# job name -> (relative cost, for longest-first scheduling; calls of public functions).
# "[batch]" jobs call with a leading batch axis (their "[parallel]" twins, below, on the
# parallel entries). Every public function taking a model and states is here
# (tests/test_cli.py checks it against rbdiff's namespace).
JOBS = {
    "rnea": (1, _rnea),
    "rnea[batch]": (2, lambda rbd, m, s: _rnea(rbd, m, s, "b")),
    "aba": (2, _aba),
    "aba[batch]": (3, lambda rbd, m, s: _aba(rbd, m, s, "b")),
    "crba": (1, lambda rbd, m, s: rbd.crba(m, s.q)),
    "crba[batch]": (2, lambda rbd, m, s: rbd.crba(m, s.bq)),
    "minverse": (2, lambda rbd, m, s: rbd.minverse(m, s.q)),
    "minverse[batch]": (3, lambda rbd, m, s: rbd.minverse(m, s.bq)),
    "rnea_derivatives": (3, _rnea_derivatives),
    "rnea_derivatives[batch]": (4, lambda rbd, m, s: _rnea_derivatives(rbd, m, s, "b")),
    "aba_derivatives": (6, _aba_derivatives),
    "aba_derivatives[batch]": (8, lambda rbd, m, s: _aba_derivatives(rbd, m, s, "b")),
    "aba_derivatives[chain_rule]": (3, _chain_rule),
    "aba_derivatives[chain_rule,batch]": (4, lambda rbd, m, s: _chain_rule(rbd, m, s, "b")),
    "rnea_second_order_derivatives": (
        4, lambda rbd, m, s: rbd.rnea_second_order_derivatives(m, s.q, s.v, s.a)),
    "rnea_second_order_derivatives[batch]": (
        5, lambda rbd, m, s: rbd.rnea_second_order_derivatives(m, s.bq, s.bv, s.ba)),
    "aba_second_order_derivatives": (
        8, lambda rbd, m, s: _aba_second_order(rbd, m, s)),
    "aba_second_order_derivatives[batch]": (
        10, lambda rbd, m, s: rbd.aba_second_order_derivatives(m, s.bq, s.bv, s.ba)),
    "kinematics": (1, _kinematics),
    "kinematics[batch]": (1, lambda rbd, m, s: _kinematics(rbd, m, s, "b")),
    "configuration": (1, _configuration),
    "configuration[batch]": (1, lambda rbd, m, s: _configuration(rbd, m, s, "b")),
    "lie": (1, _lie),
    "lie[batch]": (1, lambda rbd, m, s: _lie(rbd, m, s, "b")),
    "kinematics_derivatives": (2, lambda rbd, m, s: _kinematics_derivatives(rbd, m, s)),
    "kinematics_derivatives[batch]": (
        2, lambda rbd, m, s: _kinematics_derivatives(rbd, m, s, "b")),
    "centroidal": (2, _centroidal),
    "contacts": (3, _contacts),
    "contacts[batch]": (3, lambda rbd, m, s: _contacts(rbd, m, s, "b")),
    "centroidal[batch]": (2, lambda rbd, m, s: _centroidal(rbd, m, s, "b")),
    "trajopt": (3, _trajopt),
}


# a declared function (declare.py) that no job above calls gets one from its declaration:
# sample inputs by size, its keyword options from these samples
_SAMPLES = {"frame": lambda m: m.frames[-1].name, "reference": lambda m: "local",
            "joint": lambda m: m.njoints - 1}


def _declared_job(name, b=""):
    def job(rbd, m, s):
        fn = DECLARED[name]
        xs = [s[b + ("q" if size == "nq" else "v")] for _, size in fn.inputs]
        getattr(rbd, name)(m, *xs, **{k: _SAMPLES[k](m) for k, _ in fn.params
                                      if k in _SAMPLES})      # others: their defaults
    return job


_COVERED = {f for j in JOBS for f in (CALLS_OF.get(j.split("[")[0]) or (j.split("[")[0],))}
for _name in [n for n in DECLARED if "[" not in n and n not in _COVERED
              and not DECLARED[n].sizes]:     # call-supplied sizes: a job of its own
    JOBS[_name] = (1, _declared_job(_name))
    JOBS[_name + "[batch]"] = (1, _declared_job(_name, "b"))


def _parallel(job):
    """Job ``job`` (a "[batch]" one) with every batch on the parallel entries: the policy
    tries them on a batch's third call when the work pays (a DDP's third iteration
    would otherwise stop to compile aba_second_order_parallel, ~30 s)."""
    def run(rbd, m, s):
        from rbdiff.cpu import policy
        with policy.forced("parallel"):
            JOBS[job][1](rbd, m, s)
    return run


# weight 1: last, once the "[batch]" jobs have cached the serial entries that the parallel
# ones call by address (cpu/twin.py): then about a second each; run beside its "[batch]"
# job, a parallel job compiled that serial entry again (aba_second_order's: 9 s)
JOBS.update({j.replace("[batch]", "[parallel]"): (1, _parallel(j))
             for j in list(JOBS) if j.endswith("[batch]")})


def _jax_handler(name):
    """rbdiff.jax's XLA FFI handler of kernel ``name``: a cfunc calling the batch entries
    by address (rbdiff/jax/entries.py), about a second once the entries are compiled;
    weight 1 puts these jobs last, after the batch jobs that compile those entries."""
    def job(rbd, m, s):
        from rbdiff.jax import calls
        calls._target(name)
    return job


def _jax_rule_calls(rbd, m, s):
    """The custom calls every rbdiff.jax derivative rule makes (contract.py's products,
    tangent_map.py's T(q)): else a fresh cache's first jitted gradient compiles them."""
    from rbdiff.jax import contract, tangent_map
    contract._target(False)
    contract._target(True)
    tangent_map._target()


if importlib.util.find_spec("jax") is not None:      # the extra rbdiff[jax]
    from rbdiff.jax.ffi import _KERNELS as _JAX_KERNELS
    JOBS.update({f"jax:{k}": (1, _jax_handler(k)) for k in _JAX_KERNELS})
    JOBS["jax:rule_calls"] = (1, _jax_rule_calls)

# the public functions each job calls (for --only and the coverage test)
CALLS = {**CALLS_OF, **{j: ("jax",) for j in JOBS if j.startswith("jax:")}}


def job_functions(job):
    """The public function names job ``job`` calls."""
    base = job.split("[")[0]
    return CALLS.get(base, (base,))


class _State(dict):
    """q, v, a, f (fext) and their batched twins bq, bv, ba, bf; as attributes too."""
    __getattr__ = dict.__getitem__


def model():
    """A small random tree (free-flyer root) with a joint of every type."""
    import rbdiff as rbd
    for seed in range(SEED, SEED + 1000):
        m = rbd.models.random_tree(8, seed, joint_types=JOINT_TYPES[:-1], floating_base=True)
        names = " ".join(m.names)
        if all(t in names for t in JOINT_TYPES):
            return m
    raise RuntimeError("no random tree with every joint type")


def state(m, dtype):
    """A valid random state of model ``m`` in ``dtype``, single and batched."""
    import rbdiff as rbd
    rng = np.random.default_rng(SEED)
    s = _State(q=rbd.random_configuration(m, rng),
               bq=rbd.random_configuration(m, rng, batch=BATCH))
    for k, shape in (("v", (m.nv,)), ("a", (m.nv,)), ("f", (m.njoints, 6))):
        s[k] = rng.normal(size=shape)
        s["b" + k] = rng.normal(size=(BATCH,) + shape)
    return _State({k: x.astype(dtype) for k, x in s.items()})


_FIXTURE = {}


def run_job(job, dtype):
    """Run job ``job`` in ``dtype`` in this process; returns (job, dtype, seconds)."""
    t = time.perf_counter()
    import rbdiff as rbd
    if "model" not in _FIXTURE:
        _FIXTURE["model"] = model()
    m = _FIXTURE["model"]
    if dtype not in _FIXTURE:
        _FIXTURE[dtype] = state(m, dtype)
    JOBS[job][1](rbd, m, _FIXTURE[dtype])
    return job, dtype, time.perf_counter() - t


def select(only=None):
    """Job names whose public functions include one of ``only`` (all when None)."""
    if not only:
        return list(JOBS)
    chosen = [j for j in JOBS if set(job_functions(j)) & set(only) or j.split("[")[0] in only]
    unknown = set(only) - {f for j in JOBS for f in job_functions(j)} - set(JOBS)
    if unknown:
        raise ValueError(f"unknown function(s) {', '.join(sorted(unknown))}")
    return chosen


def cache_dir():
    """Where Numba keeps rbdiff's compiled entry points (the folder of one of them)."""
    from .cpu import single
    return getattr(getattr(single.rnea_one, "_cache", None), "cache_path", None)


def _progress(total):
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=total, unit="job", desc="compiling", file=sys.stderr)


def compile_all(jobs, dtypes=("float64",), processes=None, progress=True):
    """Run every (job, dtype) pair, longest first, on ``processes`` processes (default:
    all cores; 1: in this process). Returns [(job, dtype, seconds)] in completion order."""
    work = sorted(((j, d) for j in jobs for d in dtypes), key=lambda w: -JOBS[w[0]][0])
    processes = min(processes or os.cpu_count() or 1, len(work)) or 1
    bar = _progress(len(work)) if progress else None
    done = []

    def report(r):
        done.append(r)
        if bar is not None:
            bar.set_postfix_str(f"{r[0]} {r[1]}", refresh=False)
            bar.update()
        elif progress:
            print(f"[{len(done)}/{len(work)}] {r[0]} ({r[1]}): {r[2]:.1f} s", flush=True)

    if processes == 1:
        for w in work:
            report(run_job(*w))
    else:
        # spawn: a fresh interpreter per worker, nothing inherited from this one
        with ProcessPoolExecutor(processes, mp_context=get_context("spawn")) as pool:
            for f in as_completed([pool.submit(run_job, *w) for w in work]):
                report(f.result())
    if bar is not None:
        bar.close()
    return done


def main(argv=None):
    """Command line entry point; returns 0."""
    p = argparse.ArgumentParser(prog="python -m rbdiff compile", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dtypes", nargs="+", default=["float64"], choices=DTYPES,
                   help="scalar types to compile for (default float64)")
    p.add_argument("--only", nargs="+", metavar="FUNCTION",
                   help="only the jobs calling these public functions (e.g. rnea aba)")
    p.add_argument("--jobs", "-j", type=int, default=None,
                   help="processes (default: all cores; 1: in this process)")
    p.add_argument("--skip", nargs="+", default=(), metavar="JOB",
                   help="jobs to leave out (e.g. 'contacts[parallel]': `make test` skips "
                        "the parallel entries no test runs)")
    p.add_argument("--list", action="store_true", help="list the jobs and exit")
    p.add_argument("--no-progress", action="store_true", help="no progress bar or lines")
    args = p.parse_args(argv)
    try:
        jobs = select(args.only)
    except ValueError as e:
        p.error(str(e))
    unknown = set(args.skip) - set(JOBS)
    if unknown:
        p.error(f"--skip: unknown job(s) {', '.join(sorted(unknown))} (see --list)")
    jobs = [j for j in jobs if j not in args.skip]
    if args.list:
        for j in jobs:
            print(f"{j}: {', '.join(job_functions(j))}")
        return 0
    t = time.perf_counter()
    done = compile_all(jobs, args.dtypes, args.jobs, progress=not args.no_progress)
    wall = time.perf_counter() - t
    print(f"compiled {len(done)} jobs ({', '.join(args.dtypes)}) in {wall:.1f} s "
          f"({sum(r[2] for r in done):.1f} s of work); cache: {cache_dir()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
