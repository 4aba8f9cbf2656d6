"""Batches on a Dask cluster (rbdiff.dask) against the local batch: throughput of one
function at one batch size on a dask.distributed LocalCluster, the first call on fresh
workers against later ones, and a chunk-size sweep (per-task overhead against chunk
time).

Each worker process gets one Dask thread and NUMBA_NUM_THREADS=1 (one worker per core:
Dask's threads and Numba's would otherwise compete for the same cores). The local batch
is the NumPy call on all cores in this process. The sweep times the computation with
inputs and results held by the workers (data generated and written out there); one
end-to-end call ships NumPy inputs from the client and gathers every result back.

Run: ``python -m rbdiff bench-dask [--robot hyq] [--batch 65536] [--chunks 1024 4096 ...]
[--workers 2] [--repeats 3] [--json PATH]``.
"""

import argparse
import json
import os
import time

import numpy as np

ROBOT = "hyq"
BATCH = 65536
CHUNKS = (512, 2048, 8192, 32768)
FUNCTION = "aba_derivatives"


def _states(rbd, model, B, seed=0):
    rng = np.random.default_rng(seed)
    q = np.stack([rbd.random_configuration(model, rng) for _ in range(B)])
    v, u = rng.normal(size=(2, B, model.nv))
    return q, v, u


def _median_time(fn, repeats):
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times)), times


def run(robot=ROBOT, batch=BATCH, chunks=CHUNKS, workers=None, repeats=3, progress=True):
    """The measurements as a dict (see the module docstring)."""
    import dask
    import dask.array as da
    import distributed

    import rbdiff as rbd
    import rbdiff.dask as rdd

    workers = workers or os.cpu_count()
    model = rbd.load_robot(robot, floating_base=robot not in ("iiwa14", "panda"))
    q, v, u = _states(rbd, model, batch)
    local = getattr(rbd, FUNCTION)
    local(model, q[:8], v[:8], u[:8])                 # compiled before timing
    t_local, _ = _median_time(lambda: local(model, q, v, u), repeats)

    def on_cluster(client, chunk):
        """The inputs chunked and held by the workers (as data generated there is)."""
        xs = [da.from_array(x, chunks=(chunk, -1)) for x in (q, v, u)]
        xs = client.persist(xs)
        distributed.wait(xs)
        return xs

    def kept(client, xs):
        """Compute, the results left on the workers (written out there, not gathered)."""
        res = client.persist(list(getattr(rdd, FUNCTION)(model, *xs)))
        distributed.wait(res)

    out = dict(robot=robot, nv=model.nv, function=FUNCTION, batch=batch, workers=workers,
               local_s=t_local, local_states_per_s=batch / t_local, sweep=[])
    with distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                  dashboard_address=None, worker_dashboard_address=None,
                                  env={"NUMBA_NUM_THREADS": "1"}) as cluster, \
            distributed.Client(cluster) as client:
        first = chunks[len(chunks) // 2]
        xs = on_cluster(client, first)
        t0 = time.perf_counter()
        kept(client, xs)
        out["first_call_s"] = time.perf_counter() - t0
        out["first_call_chunk"] = first
        t0 = time.perf_counter()
        kept(client, xs)
        out["second_call_s"] = time.perf_counter() - t0
        for chunk in chunks:
            xs = on_cluster(client, chunk)
            t, times = _median_time(lambda: kept(client, xs), repeats)
            row = dict(chunk=chunk, tasks=-(-batch // chunk), seconds=t, times=times,
                       states_per_s=batch / t, vs_local=t_local / t)
            out["sweep"].append(row)
            if progress:
                print(f"  chunk {chunk:>6}: {t:7.3f} s", flush=True)
        # end to end: NumPy inputs shipped from here, every result gathered back here
        xs = [da.from_array(x, chunks=(first, -1)) for x in (q, v, u)]
        t0 = time.perf_counter()
        got = dask.compute(getattr(rdd, FUNCTION)(model, *xs))[0]
        out["gathered_s"] = time.perf_counter() - t0
        for g, want in zip(got, local(model, q, v, u)):
            assert np.array_equal(g, want), "cluster result differs from the local batch"
    return out


def report(r):
    """The measurements as text."""
    lines = [f"{r['function']} on {r['robot']} (nv {r['nv']}), B = {r['batch']}; "
             f"LocalCluster of {r['workers']} worker processes x 1 thread",
             f"local batch (this process, all cores): {r['local_s']:.3f} s = "
             f"{r['local_states_per_s']:,.0f} states/s",
             f"cluster, first call on fresh workers (chunk {r['first_call_chunk']}): "
             f"{r['first_call_s']:.2f} s; second call: {r['second_call_s']:.2f} s "
             "(inputs and results held by the workers)",
             f"end to end (NumPy inputs shipped, {r['batch']} results gathered back, chunk "
             f"{r['first_call_chunk']}): {r['gathered_s']:.2f} s",
             "", "| chunk | tasks | seconds | states/s | vs local batch |",
             "|---|---|---|---|---|"]
    for s in r["sweep"]:
        lines.append(f"| {s['chunk']} | {s['tasks']} | {s['seconds']:.3f} | "
                     f"{s['states_per_s']:,.0f} | {s['vs_local']:.2f}x |")
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m rbdiff bench-dask", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--robot", default=ROBOT)
    p.add_argument("--batch", type=int, default=BATCH, metavar="B")
    p.add_argument("--chunks", type=int, nargs="+", default=list(CHUNKS), metavar="ROWS")
    p.add_argument("--workers", type=int, metavar="N", help="default: one per core")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--json", metavar="PATH", help="write the measurements as JSON")
    p.add_argument("--no-progress", action="store_true")
    args = p.parse_args(argv)
    import importlib.util
    if importlib.util.find_spec("distributed") is None:
        p.error("needs dask and distributed: pip install 'rbdiff[dask]'")
    r = run(args.robot, args.batch, tuple(args.chunks), args.workers, args.repeats,
            not args.no_progress)
    print(report(r))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(r, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
