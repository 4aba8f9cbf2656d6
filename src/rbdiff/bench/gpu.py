"""GPU benchmark: N evaluations of aba_derivatives (dqdd/dq, dqdd/dv, dqdd/dtau) on the
GPU against the CPU batch, a loop of Pinocchio calls and JAX autodiff.

    python -m rbdiff.bench.gpu --out bench_gpu        (or: python -m rbdiff bench-gpu)

For each robot (default iiwa14, hyq + free-flyer, talos_full_v2 + free-flyer) and each
N in 1, 16, 32, ..., 65536 it times, interleaved round-robin (median of rounds):

* GPU device time, inputs already on the device and outputs left there (``out=``
  buffers), for each variant: the Plancher et al. 2021 Alg. 3 partitions "split",
  "fused", "completely_fused" and the fine-grained variant ("columns", 4 threads per
  evaluation). At N = 1 this is the single-computation latency of the paper's Fig. 1.
* GPU end to end: host NumPy arrays in, copied to the device, computed, the three
  results copied back into host arrays (the paper's Fig. 2 / 3 metric), per variant;
  inputs packed in one (N, nq + 2 nv) array and outputs in one (3, N, nv, nv) array, so
  that each direction is one transfer.
* CPU batch: ``rbdiff.aba_derivatives`` on (N, nq) arrays, all cores (prange).
* Pinocchio: a Python loop of ``computeABADerivatives`` (copies excluded); above
  ``--pin-max`` evaluations the per-evaluation time of ``--pin-max`` is extrapolated.
* JAX: ``jit(vmap(jacfwd(FD)))`` of the same dynamics (FD = M^-1 (tau - h) from
  adam-robotics), when jax with a GPU and adam-robotics are importable; otherwise the
  row says "not installed".

Before timing, the GPU results are checked against the CPU ones (max relative error in
the report). Writes report.md, results.json and (with matplotlib) gpu_times.png to
--out. Needs numpy, numba and a CUDA GPU (numba-cuda); everything else is optional.
``--tiny`` runs in seconds (N = 1, 2; iiwa14; one round), also in the CUDA simulator
(``NUMBA_ENABLE_CUDASIM=1``), so that a test covers this script.
"""

import argparse
import datetime
import json
import os
import platform
import statistics
import time
from pathlib import Path

import numpy as np

ROBOTS = (("iiwa14", False), ("hyq", True), ("talos_full_v2", True))
SIZES = (1, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536)
VARIANTS = {"split": dict(partition="split"),
            "fused": dict(partition="fused"),
            "completely_fused": dict(partition="completely_fused"),
            "columns": dict(partition="completely_fused", threads_per_eval=4)}
TARGETS = "B >= 4096: GPU >= 10x CPU batch and >= 10x JAX; B = 128: GPU end to end < CPU batch"


def _sync():
    from numba import cuda
    cuda.synchronize()


def _rounds(funcs, repeats):
    """{name: median seconds per call}: every round calls each function once, in an
    order rotated every round (a drift hits all alike); the first call warms up."""
    names = list(funcs)
    for f in funcs.values():
        f()
    times = {n: [] for n in names}
    for r in range(repeats):
        k = r % len(names)
        for n in names[k:] + names[:k]:
            t0 = time.perf_counter()
            funcs[n]()
            times[n].append(time.perf_counter() - t0)
    return {n: statistics.median(ts) for n, ts in times.items()}


def _robot(name, floating):
    import rbdiff as rbd
    from rbdiff.model.robots import robot_path
    model = rbd.load_robot(name, floating_base=floating)
    pm = None
    try:
        import pinocchio as pin
        path = str(robot_path(name))
        pm = (pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer()) if floating
              else pin.buildModelFromUrdf(path))
    except Exception:       # not installed, or the robot's file is not found
        pm = None
    return model, pm


def _states(model, n, seed=0, dtype=np.float64):
    import rbdiff as rbd
    rng = np.random.default_rng(seed)
    q = np.stack([rbd.random_configuration(model, rng) for _ in range(n)])
    v, tau = rng.normal(size=(2, n, model.nv))
    return tuple(np.ascontiguousarray(x, dtype=dtype) for x in (q, v, tau))


# ---------------------------------------------------------------------------------------
# peers


def _pin_loop(pm, q, v, tau):
    import pinocchio as pin
    data = pm.createData()

    def run():
        for b in range(q.shape[0]):
            pin.computeABADerivatives(pm, data, q[b], v[b], tau[b])
    return run


def jax_status():
    """(usable, why): JAX with a GPU device and adam-robotics, or the reason not."""
    try:
        import jax
    except ImportError:
        return False, "not installed (jax)"
    try:
        import adam.jax  # noqa: F401
    except ImportError:
        return False, "not installed (adam-robotics)"
    try:
        gpus = jax.devices("gpu")
    except RuntimeError:
        gpus = []
    if not gpus:
        return False, "jax has no GPU device"
    return True, f"jax {jax.__version__} on {gpus[0].device_kind}"


def _jax_fd_jacobian(model, robot, floating):
    """jit(vmap(jacfwd)) of qdd = M^-1 (tau - h) by adam-robotics (JAX), the Jacobian
    with respect to (joint positions and base position/quaternion, velocities, tau)."""
    import adam
    import jax
    import jax.numpy as jnp
    from adam.jax import KinDynComputations
    from rbdiff.model.robots import robot_path
    jax.config.update("jax_enable_x64", True)
    names = [model.names[i] for i in range(1, model.njoints)
             if int(model.nvs[i]) == 1]
    urdf, root = _urdf_for_adam(robot_path(robot))
    grav = jnp.array(np.concatenate([model.gravity, np.zeros(3)]), dtype=jnp.float64)
    kd = KinDynComputations(urdf, names, root_link=root, gravity=grav)
    kd.set_frame_velocity_representation(adam.Representations.BODY_FIXED_REPRESENTATION)
    nj = len(names)

    def fd(x, dx, tau):
        if floating:
            p, quat, s = x[:3], x[3:7], x[7:]
            H = _homogeneous_jnp(p, quat)
            vb, ds = dx[:6], dx[6:]
            tau_full = jnp.concatenate([jnp.zeros(6), tau[6:]])
        else:
            H, s, vb, ds, tau_full = jnp.eye(4), x, jnp.zeros(6), dx, tau
        M = kd.mass_matrix(H, s)
        h = kd.bias_force(H, s, vb, ds)
        if not floating:
            M, h = M[6:, 6:], h[6:]
        return jnp.linalg.solve(M, tau_full - h)

    jac = jax.jit(jax.vmap(jax.jacfwd(fd, argnums=(0, 1, 2))))
    return jac, nj


def _urdf_for_adam(path):
    """(URDF text, root link) for adam: an <inertial> without <origin> gets the identity
    one, which URDF implies and adam's parser does not (hyq's file has such links);
    transmissions and a link's non-geometry tags are dropped."""
    import xml.etree.ElementTree as ET
    root = ET.parse(path).getroot()
    for t in root.findall("transmission"):      # not dynamics; adam's parser warns on
        root.remove(t)                          # them, and on a link's extra tags
    for link in root.findall("link"):
        for child in list(link):
            if child.tag not in ("inertial", "visual", "collision"):
                link.remove(child)
    for inertial in root.iter("inertial"):
        if inertial.find("origin") is None:
            ET.SubElement(inertial, "origin", xyz="0 0 0", rpy="0 0 0")
    links = {ln.get("name") for ln in root.findall("link")}
    children = {j.find("child").get("link") for j in root.findall("joint")}
    return ET.tostring(root, encoding="unicode"), sorted(links - children)[0]


def _homogeneous_jnp(p, quat):
    import jax.numpy as jnp
    x, y, z, w = quat / jnp.linalg.norm(quat)
    R = jnp.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                   [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                   [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])
    return jnp.eye(4).at[:3, :3].set(R).at[:3, 3].set(p)


def _jax_call(model, robot, floating, q, v, tau):
    import jax
    import jax.numpy as jnp
    jac, _ = _jax_fd_jacobian(model, robot, floating)
    args = tuple(jax.device_put(jnp.asarray(x)) for x in (q, v, tau))

    def run():
        jax.block_until_ready(jac(*args))
    return run


# ---------------------------------------------------------------------------------------
# one robot


def _check(model, q, v, tau):
    """Max relative error of every GPU variant against the CPU on the first few states."""
    import rbdiff as rbd
    from numba import cuda
    n = min(4, q.shape[0])
    ref = rbd.aba_derivatives(model, q[:n], v[:n], tau[:n], product="dmm")
    scale = max(1.0, max(float(np.max(np.abs(r))) for r in ref))
    errs = {}
    for name, kw in VARIANTS.items():
        got = rbd.gpu.aba_derivatives(model, *(cuda.to_device(x[:n]) for x in (q, v, tau)),
                                      **kw)
        errs[name] = max(float(np.max(np.abs(g.copy_to_host() - r))) / scale
                         for g, r in zip(got, ref))
    return errs


def bench_robot(robot, floating, sizes, repeats, pin_max, variants, log=print):
    """Rows {robot, nv, N, what, variant, seconds} for one robot, and the check."""
    import numba
    import rbdiff as rbd
    from numba import cuda
    from rbdiff.gpu import launch
    model, pm = _robot(robot, floating)
    label = robot + ("+ff" if floating else "")
    q0, v0, t0 = _states(model, 4, seed=123)
    check = _check(model, q0, v0, t0)
    log(f"{label}: nv = {model.nv}; GPU vs CPU max rel. error "
        + ", ".join(f"{k} {e:.1e}" for k, e in check.items()))
    usable, why = jax_status()
    rows = []
    try:
        free = cuda.current_context().get_memory_info()[0]
    except Exception:
        free = 1 << 32
    launch.set_workspace_budget(max(64 << 20, int(0.5 * min(free, 1 << 46)
                                                  / max(1, len(variants)))))
    try:
        for N in sizes:
            q, v, tau = _states(model, N, seed=N)
            dq, dv, dt = (cuda.to_device(x) for x in (q, v, tau))
            outs = {k: tuple(cuda.device_array((N, model.nv, model.nv)) for _ in range(3))
                    for k in variants}
            # end to end: one packed host array in (N, nq + 2 nv), one (3, N, nv, nv) out,
            # so that each way is a single transfer, as a user's loop would do it
            nq, nv = model.nq, model.nv
            packed = np.ascontiguousarray(np.concatenate([q, v, tau], axis=1))
            d_packed = cuda.to_device(packed)
            pq, pv, pt = d_packed[:, :nq], d_packed[:, nq:nq + nv], d_packed[:, nq + nv:]
            d_res = {k: cuda.device_array((3, N, nv, nv)) for k in variants}
            host = np.empty((3, N, nv, nv))
            funcs = {}
            for name in variants:
                kw = VARIANTS[name]

                def device(kw=kw, o=outs[name]):
                    rbd.gpu.aba_derivatives(model, dq, dv, dt, out=o, **kw)
                    _sync()

                def end_to_end(kw=kw, r=d_res[name]):
                    d_packed.copy_to_device(packed)
                    rbd.gpu.aba_derivatives(model, pq, pv, pt, out=(r[0], r[1], r[2]), **kw)
                    r.copy_to_host(host)
                funcs[("gpu_device", name)] = device
                funcs[("gpu_end_to_end", name)] = end_to_end
            funcs[("cpu_batch", f"{numba.get_num_threads()} threads")] = \
                lambda: rbd.aba_derivatives(model, q, v, tau)
            pin_n = None
            if pm is not None:
                pin_n = min(N, pin_max)
                funcs[("pinocchio_loop", "computeABADerivatives")] = \
                    _pin_loop(pm, q[:pin_n], v[:pin_n], tau[:pin_n])
            if usable:
                try:
                    funcs[("jax", "jit(vmap(jacfwd))")] = _jax_call(model, robot, floating,
                                                                    q, v, tau)
                except Exception as e:      # a peer that fails must not stop the bench
                    why = f"failed: {type(e).__name__}: {e}"[:200]
            res = _rounds(funcs, repeats)
            for (what, variant), s in res.items():
                if what == "pinocchio_loop" and pin_n != N:
                    s, variant = s * N / pin_n, f"{variant} (extrapolated from {pin_n})"
                rows.append(dict(robot=label, nv=model.nv, N=N, what=what, variant=variant,
                                 seconds=s))
            if pm is None:
                rows.append(dict(robot=label, nv=model.nv, N=N, what="pinocchio_loop",
                                 variant="not installed", seconds=None))
            if not usable or ("jax", "jit(vmap(jacfwd))") not in funcs:
                rows.append(dict(robot=label, nv=model.nv, N=N, what="jax", variant=why,
                                 seconds=None))
            best = min(s for (w, _), s in res.items() if w == "gpu_device")
            log(f"  N = {N:6d}: GPU {best * 1e6:10.1f} us, CPU batch "
                f"{res[next(k for k in res if k[0] == 'cpu_batch')] * 1e6:10.1f} us")
    finally:
        launch.set_workspace_budget(None)
        launch.release(model)
    return rows, {"robot": label, "nv": model.nv, "max_rel_err": check}


# ---------------------------------------------------------------------------------------
# report


def _best(rows, robot, N, what):
    c = [r for r in rows if r["robot"] == robot and r["N"] == N and r["what"] == what
         and r["seconds"] is not None]
    return min(c, key=lambda r: r["seconds"]) if c else None


def _fmt(s):
    if s is None:
        return "-"
    return f"{s * 1e3:.3f} ms" if s >= 1e-3 else f"{s * 1e6:.1f} us"


def _ratio(a, b):
    return "-" if a is None or b is None else f"{b['seconds'] / a['seconds']:.1f}x"


def write_report(out, outdir):
    rows = out["rows"]
    lines = ["# rbdiff GPU benchmark: aba_derivatives", "",
             f"{out['meta']['date']}, device: {out['meta']['device']}, "
             f"CPU: {out['meta']['cpu_count']} cores, numba {out['meta']['numba']}"
             + (" (CUDA simulator: times mean nothing)" if out['meta']['simulator'] else ""),
             "", "Times are medians of interleaved rounds, for all N evaluations. GPU device "
             "time: inputs on the device, outputs left there; end to end: host arrays in, "
             "results back in host arrays. Speed-ups use the best GPU variant.", "",
             f"Targets (issue): {TARGETS}.", ""]
    for chk in out["checks"]:
        robot = chk["robot"]
        lines += [f"## {robot} (nv = {chk['nv']})", "",
                  "GPU vs CPU max relative error: " + ", ".join(
                      f"{k} {e:.1e}" for k, e in chk["max_rel_err"].items()), "",
                  "| N | GPU device | GPU end to end | CPU batch | Pinocchio loop | JAX | "
                  "GPU vs CPU batch | e2e vs CPU batch | GPU vs JAX |",
                  "|---:|---|---|---|---|---|---:|---:|---:|"]
        sizes = sorted({r["N"] for r in rows if r["robot"] == robot})
        for N in sizes:
            g = _best(rows, robot, N, "gpu_device")
            e = _best(rows, robot, N, "gpu_end_to_end")
            c = _best(rows, robot, N, "cpu_batch")
            p = _best(rows, robot, N, "pinocchio_loop")
            j = _best(rows, robot, N, "jax")
            jcell = _fmt(j["seconds"]) if j else next(
                (r["variant"] for r in rows if r["robot"] == robot and r["N"] == N
                 and r["what"] == "jax"), "-")
            pcell = _fmt(p["seconds"]) if p else "not installed"
            lines.append(f"| {N} | {_fmt(g['seconds'])} ({g['variant']}) | "
                         f"{_fmt(e['seconds'])} ({e['variant']}) | {_fmt(c['seconds'])} | "
                         f"{pcell} | {jcell} | {_ratio(g, c)} | {_ratio(e, c)} | "
                         f"{_ratio(g, j)} |")
        lines += ["", "Partitions (GPU device time / end to end):", "",
                  "| N | " + " | ".join(VARIANTS) + " |",
                  "|---:|" + "---|" * len(VARIANTS)]
        for N in sizes:
            cells = []
            for var in VARIANTS:
                d = [r for r in rows if r["robot"] == robot and r["N"] == N
                     and r["variant"] == var]
                dd = next((r["seconds"] for r in d if r["what"] == "gpu_device"), None)
                ee = next((r["seconds"] for r in d if r["what"] == "gpu_end_to_end"), None)
                cells.append(f"{_fmt(dd)} / {_fmt(ee)}")
            lines.append(f"| {N} | " + " | ".join(cells) + " |")
        lines.append("")
    if out.get("files"):
        lines += ["![GPU times](" + out["files"][0] + ")", ""]
    lines += ["Command: `" + out["meta"]["command"] + "`", ""]
    (Path(outdir) / "report.md").write_text("\n".join(lines))


def make_figure(out, outdir):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    rows = out["rows"]
    robots = [c["robot"] for c in out["checks"]]
    fig, axes = plt.subplots(1, len(robots), figsize=(5 * len(robots), 4), squeeze=False)
    for ax, robot in zip(axes[0], robots):
        sizes = sorted({r["N"] for r in rows if r["robot"] == robot})
        for what, style in (("gpu_device", "o-"), ("gpu_end_to_end", "s--"),
                            ("cpu_batch", "^-"), ("pinocchio_loop", "v:"), ("jax", "d-.")):
            pts = [(N, _best(rows, robot, N, what)) for N in sizes]
            pts = [(N, b["seconds"]) for N, b in pts if b is not None]
            if pts:
                ax.loglog(*zip(*pts), style, label=what.replace("_", " "))
        ax.set_title(robot + (" (CUDA simulator)" if out["meta"]["simulator"] else ""))
        ax.set_xlabel("N evaluations")
        ax.set_ylabel("seconds")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(Path(outdir) / "gpu_times.png", dpi=110)
    plt.close(fig)
    return ["gpu_times.png"]


def _meta(argv):
    import numba
    from numba import config
    try:
        from numba import cuda
        device = cuda.get_current_device().name
        device = device.decode() if isinstance(device, bytes) else str(device)
    except Exception as e:
        device = f"unknown ({type(e).__name__})"
    return dict(date=datetime.datetime.now().isoformat(timespec="seconds"),
                platform=platform.platform(), cpu_count=os.cpu_count(),
                python=platform.python_version(), numpy=np.__version__,
                numba=numba.__version__, device=device,
                simulator=bool(config.ENABLE_CUDASIM),
                command="python -m rbdiff.bench.gpu " + " ".join(argv),
                max_registers=_max_registers())


def _max_registers():
    from rbdiff.gpu import launch
    return launch._max_registers[0]


def run(robots, sizes, repeats, pin_max, outdir, argv=(), variants=tuple(VARIANTS),
        log=print):
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    out = dict(meta=_meta(list(argv)), rows=[], checks=[], targets=TARGETS,
               jax=jax_status()[1])
    for robot, floating in robots:
        rows, check = bench_robot(robot, floating, sizes, repeats, pin_max, variants, log)
        out["rows"] += rows
        out["checks"].append(check)
    out["files"] = make_figure(out, outdir)
    write_report(out, outdir)
    with open(outdir / "results.json", "w") as f:
        json.dump(out, f, indent=1)
    return out


def _robot_arg(s):
    name, _, ff = s.partition("+")
    if ff not in ("", "ff"):
        raise argparse.ArgumentTypeError(f"{s!r}: expected NAME or NAME+ff")
    return name, ff == "ff"


def main(argv=None):
    import sys
    argv = list(sys.argv[1:] if argv is None else argv)
    p = argparse.ArgumentParser(prog="python -m rbdiff.bench.gpu", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default="bench_gpu", metavar="DIR", help="output directory")
    p.add_argument("--robots", nargs="+", type=_robot_arg, metavar="NAME[+ff]",
                   help="robots (default: iiwa14 hyq+ff talos_full_v2+ff)")
    p.add_argument("--sizes", nargs="+", type=int, metavar="N",
                   help="batch sizes (default 1 16 32 ... 65536)")
    p.add_argument("--repeats", type=int, default=None, metavar="R",
                   help="interleaved rounds (default 7)")
    p.add_argument("--pin-max", type=int, default=2048, metavar="N",
                   help="largest Pinocchio loop timed; beyond it, extrapolated")
    p.add_argument("--variants", nargs="+", choices=list(VARIANTS), metavar="V",
                   help=f"GPU variants (default all: {', '.join(VARIANTS)})")
    p.add_argument("--max-registers", type=int, default=None, metavar="R",
                   help="cap registers per thread of the GPU kernels (more resident "
                        "threads, more spills); default: the compiler's choice")
    p.add_argument("--tiny", action="store_true",
                   help="seconds-long smoke run (iiwa14, N = 1 2, one round)")
    a = p.parse_args(argv)
    if a.tiny:
        robots, sizes, repeats = [("iiwa14", False)], [1, 2], 1
    else:
        robots, sizes, repeats = list(ROBOTS), list(SIZES), 7
    robots = a.robots or robots
    sizes = a.sizes or sizes
    repeats = a.repeats or repeats
    if any(n < 1 for n in sizes) or repeats < 1 or a.pin_max < 1:
        p.error("sizes, --repeats and --pin-max must be positive")
    if a.max_registers is not None:
        from rbdiff.gpu import launch
        launch.set_max_registers(a.max_registers)
    out = run(robots, sizes, repeats, a.pin_max, a.out, argv,
              tuple(a.variants or VARIANTS))
    print(f"wrote {Path(a.out) / 'report.md'} and results.json"
          + (f" and {out['files'][0]}" if out["files"] else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
