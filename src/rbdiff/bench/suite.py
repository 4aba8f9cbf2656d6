"""The full benchmark: ``python -m rbdiff bench [--quick] [--out DIR] [--robots ...]
[--only table,scaling,accuracy,first_order,second_order,accuracy_n,precision,batch,trajopt]
[--cpp]``.

Writes ``DIR/report.md`` (markdown tables, the figures embedded), ``DIR/results.json``
(every raw number) and the PNG figures:

(a) ``table``: per robot, carpentier-mansard-2018 Table I: ID, FD, analytical ID and FD
    derivatives, central finite differences of ID and FD, M^-1 by the dedicated
    algorithm and by Cholesky; rbdiff and Pinocchio (called from Python) side by side
    with ratios, and MuJoCo (``mj_inverse``, ``mjd_inverseFD``, ``mj_forward``) when it
    is installed.
(b) ``scaling``: time vs number of bodies on serial chains and binary trees (2..500),
    log-log, with the least-squares slopes next to the papers' orders.
(c) ``accuracy``: carpentier-mansard-2018 Fig. 3: with v = a = 0, zero gravity and no
    external force the exact dtau/dv (and dqdd/dv) is zero; what finite differences
    return instead, vs the step size; plus the error of finite differences at a
    generic state vs the step (truncation vs rounding).
(d) ``first_order`` (bench/first_order.py): rnea_derivatives by IDSVA vs the chain
    rule, aba_derivatives with the DMM vs the AZA product (and FDCR) on the scaling
    sizes: times, slopes next to singh-2022 / singh-2023, the measured crossover.
(e) ``second_order`` (bench/second_order.py): IDSVA-SO vs Finite-Diff-1, Finite-Diff-2
    and complex step, FDSVA-SO, on chains and trees (slopes next to singh-2023 Table
    III); per robot, rbdiff vs Pinocchio's C++ via the optional anchor (bench/anchor.py;
    --cpp builds it, --quick / --tiny use it only when already built).
(f) ``accuracy_n`` (bench/accuracy_n.py): RMSRE and MAE of every first- and
    second-order method against the complex step vs N (singh-2023 Fig. 12 and 20).
(g) ``precision`` (bench/precision.py): the first-order derivative kernels in float32
    against float64: errors and time ratio per robot.
(h) ``batch`` (bench/batch.py): one batched call vs a Python loop of single rbdiff
    calls and of Pinocchio calls, per robot and batch size B, with the cores idle, with
    the other cores busy, and on one thread against the single-call kernel.

The optional dependencies (``pip install 'rbdiff[bench]'``: matplotlib unless
``--no-figures``, Pinocchio, example-robot-data for its robots, tqdm unless
``--no-progress``) are checked before any section starts; results.json is rewritten
after every section, so a run that fails later keeps what finished.

All timings are single-threaded (Numba's thread count is set to 1 while timing, like
the paper's single-core protocol; section (h)'s batches use all cores) and interleaved
round-robin in this process (``bench.timing.interleaved``; DESIGN.md section 4).
"""

import argparse
import datetime
import importlib
import json
import os
import platform
import sys
import time
from dataclasses import asdict, dataclass, field, replace
from functools import partial
from pathlib import Path

import numpy as np

import rbdiff as rbd
from rbdiff.bench import accuracy_n as sec_accuracy_n
from rbdiff.bench import batch as sec_batch
from rbdiff.bench import first_order as sec_first_order
from rbdiff.bench import models as bm
from rbdiff.bench import precision as sec_precision
from rbdiff.bench import trajopt as sec_trajopt
from rbdiff.bench import report as rp
from rbdiff.bench import second_order as sec_second_order
from rbdiff.bench.timing import interleaved

try:
    import pinocchio as pin
except ImportError:
    pin = None

try:
    import mujoco
except ImportError:
    mujoco = None

try:
    from rbdiff import derivatives
except ImportError:
    derivatives = None

try:
    from tqdm import tqdm
except ImportError:
    tqdm = None

SECTIONS = ("table", "scaling", "accuracy", "first_order", "second_order", "accuracy_n",
            "precision", "batch", "trajopt")
# the derivative sections: modules with total(cfg), run(cfg, bar, out), figures(sec,
# outdir) and report(sec, files, cfg) (bench/common.py)
SECTION_MODULES = {"first_order": sec_first_order, "second_order": sec_second_order,
                   "accuracy_n": sec_accuracy_n, "precision": sec_precision,
                   "batch": sec_batch, "trajopt": sec_trajopt}
ROBOTS = ("iiwa14", "hyq", "solo12", "g1", "talos_full_v2")
EPS = np.finfo(float).eps
FD_STEP = float(np.cbrt(EPS))     # central differences: truncation h^2 ~ rounding eps/h
CS_STEP = 1e-20                   # complex step
AGREE = 1e-6                      # max|diff| / max(1, max|ref|) flagged above this

# carpentier-mansard-2018 Table I, in the paper's order: (key, label)
TABLE_ROWS = (
    ("id", "ID"),
    ("id_derivs", "analytical derivatives of ID"),
    ("id_fd", "finite differences of ID"),
    ("fd", "FD"),
    ("fd_derivs", "analytical derivatives of FD"),
    ("fd_fd", "finite differences of FD"),
    ("minv", "M^-1 dedicated algorithm"),
    ("minv_chol", "M^-1 Cholesky factorization"),
)
# further rows (not in the paper)
EXTRA_ROWS = (
    ("id_cs", "complex step of ID"),
    ("fd_cs", "complex step of FD"),
    ("id_fd_loop", "finite differences of ID, loop of single calls"),
    ("fd_fd_loop", "finite differences of FD, loop of single calls"),
)
ALL_ROWS = TABLE_ROWS + EXTRA_ROWS
ROW_LABEL = dict(ALL_ROWS)

# carpentier-mansard-2018 Table I (us; C++, one core of a 2.2 GHz i7, 36-dof Atlas)
PAPER_TABLE = {
    "robots": ("KUKA-LWR (7)", "HyQ (18)", "Atlas (36)"),
    "id": (1.20, 2.14, 5.51), "id_derivs": (3.34, 7.01, 16.72),
    "id_fd": (21.26, 88.52, 452.46), "fd": (1.78, 4.28, 9.81),
    "fd_derivs": (5.78, 14.24, 45.20), "fd_fd": (22.67, 94.23, 470.14),
    "minv": (1.82, 4.86, 12.70), "minv_chol": (1.88, 5.82, 28.29),
}

# what each side calls, per row (for the report)
ROW_CALLS = {
    "id": ("rbd.rnea", "pin.rnea", "mujoco.mj_inverse"),
    "id_derivs": ("rbdiff.derivatives.rnea_derivatives", "pin.computeRNEADerivatives",
                  None),
    "id_fd": ("one batched rbd.integrate + one batched rbd.rnea over the 6 nv perturbed "
              "states", "Python loop: 6 nv pin.rnea (+ 2 nv pin.integrate)",
              "mujoco.mjd_inverseFD (forward differences)"),
    "fd": ("rbd.aba", "pin.aba", "mujoco.mj_forward (whole pipeline)"),
    "fd_derivs": ("rbdiff.derivatives.aba_derivatives", "pin.computeABADerivatives",
                  None),
    "fd_fd": ("one batched rbd.integrate + one batched rbd.aba over the 6 nv perturbed "
              "states", "Python loop: 6 nv pin.aba (+ 2 nv pin.integrate)", None),
    "minv": ("rbd.minverse", "pin.computeMinverse", None),
    "minv_chol": ("rbd.crba + numpy.linalg.cholesky + inverse of L (dense)",
                  "pin.crba + pin.cholesky.decompose + pin.cholesky.computeMinv (sparse)",
                  None),
    "id_cs": ("one batched complex128 rbd.rnea over 3 nv states (step 1e-20)", None, None),
    "fd_cs": ("one batched complex128 rbd.aba over 3 nv states (step 1e-20)", None, None),
    "id_fd_loop": ("one batched rbd.integrate, then a Python loop of 6 nv rbd.rnea",
                   "as in 'finite differences of ID'", None),
    "fd_fd_loop": ("one batched rbd.integrate, then a Python loop of 6 nv rbd.aba",
                   "as in 'finite differences of FD'", None),
}

SCALING_ALGS = ("rnea", "crba", "aba", "minverse", "rnea_derivatives", "aba_derivatives")
PIN_SCALING = {"rnea": "rnea", "crba": "crba", "aba": "aba", "minverse": "computeMinverse",
               "rnea_derivatives": "computeRNEADerivatives",
               "aba_derivatives": "computeABADerivatives"}
# the papers' orders as log-log slopes (d = depth: N on a chain, log2 N on a binary tree)
PAPER_SLOPES = {
    ("serial_chain", "rnea"): "1 (O(N), Featherstone)",
    ("binary_tree", "rnea"): "1 (O(N), Featherstone)",
    ("serial_chain", "crba"): "2 (O(Nd), d = N)",
    ("binary_tree", "crba"): "~1 (O(Nd), d = log2 N)",
    ("serial_chain", "aba"): "1 (O(N), Featherstone)",
    ("binary_tree", "aba"): "1 (O(N), Featherstone)",
    ("serial_chain", "minverse"): "2 (dense N x N result; carpentier-mansard-2018)",
    ("binary_tree", "minverse"): "2 (dense N x N result; carpentier-mansard-2018)",
    ("serial_chain", "rnea_derivatives"): "2 (IDSVA O(Nd), d = N; singh-2022)",
    ("binary_tree", "rnea_derivatives"): "~1 (IDSVA O(Nd), d = log2 N; singh-2022)",
    ("serial_chain", "aba_derivatives"): "2 (FDSVA O(N^2) with AZA, 3 with DMM; singh-2022)",
    ("binary_tree", "aba_derivatives"): "2 (FDSVA O(N^2) with AZA, 3 with DMM; singh-2022)",
}


@dataclass
class Config:
    """What to run. :data:`PRESETS` hold the full, ``--quick`` and ``--tiny`` ones."""
    mode: str = "full"
    sections: tuple = SECTIONS
    robots: tuple = ROBOTS
    families: tuple = bm.FAMILIES
    sizes: tuple = (2, 3, 5, 8, 12, 20, 32, 50, 80, 128, 200, 320, 500)
    fit_min_n: int = 32            # slopes fitted over N >= fit_min_n
    repeats: int = 21              # interleaved rounds per measurement
    min_time: float = 5e-3         # seconds per round and callable
    accuracy_cases: tuple = (("robot", "iiwa14"), ("robot", "hyq"),
                             ("serial_chain", 32), ("binary_tree", 31))
    steps: tuple = tuple(float(h) for h in np.logspace(-14, -1, 27))
    extra_rows: bool = True
    threads: int = 1               # Numba threads while timing
    seed: int = 0
    progress: bool = True
    mujoco: bool = True
    # second_order: sizes, fit range, caps of the numerical baselines (O(N^3) and more),
    # robots; cpp: C++ anchor (None: full mode builds it, quick / tiny use it only when
    # built; True: build if needed; False: never)
    so_sizes: tuple = (2, 3, 5, 8, 12, 20, 32, 50, 80, 110)
    so_fit_min_n: int = 12
    so_fd1_max: int = 110
    so_numeric_max: int = 110
    so_robots: tuple = ("panda", "hyq", "talos_full_v2")
    cpp: object = None
    # accuracy_n: sizes, cap of Finite-Diff-1
    acc_sizes: tuple = (2, 3, 5, 8, 12, 20, 32, 50, 80, 110)
    acc_fd1_max: int = 110
    # batch: robots (--robots sets them too), batch sizes B and measured modes
    batch_robots: tuple = ("iiwa14", "hyq", "talos_full_v2")
    batch_sizes: tuple = (1, 4, 16, 64, 256, 1024)
    batch_modes: tuple = sec_batch.MODES
    figures: bool = True           # PNG figures (matplotlib)
    notes: list = field(default_factory=list)


PRESETS = {
    "full": Config(),
    "quick": Config(mode="quick", sizes=(2, 4, 8, 16, 32, 64, 128), fit_min_n=16,
                    repeats=15, min_time=4e-3,
                    accuracy_cases=(("robot", "iiwa14"), ("robot", "hyq"),
                                    ("serial_chain", 32)),
                    steps=tuple(float(h) for h in np.logspace(-14, -1, 14)),
                    so_sizes=(2, 4, 8, 16, 32, 64), so_fit_min_n=8, so_fd1_max=32,
                    so_numeric_max=32, so_robots=("panda", "hyq"),
                    acc_sizes=(2, 4, 8, 16, 32), acc_fd1_max=32, batch_sizes=(16, 256)),
    "tiny": Config(mode="tiny", robots=("iiwa14",), sizes=(2, 4), fit_min_n=2, repeats=2,
                   min_time=2e-4, accuracy_cases=(("robot", "iiwa14"),),
                   steps=(1e-10, 1e-8, 1e-6, 1e-4, 1e-2), so_sizes=(2, 4),
                   so_fit_min_n=2, so_fd1_max=4, so_numeric_max=4, so_robots=("iiwa14",),
                   acc_sizes=(2, 4), acc_fd1_max=4, batch_robots=("iiwa14",),
                   batch_sizes=(4,)),
}


# ------------------------------------------------------------------ progress

class Progress:
    """tqdm over all measurements, or one stderr line per ~5% without tqdm."""

    def __init__(self, total, enabled=True):
        self.total, self.done, self.enabled = max(1, total), 0, enabled
        self.bar = tqdm(total=self.total, file=sys.stderr, unit="meas", leave=False,
                        dynamic_ncols=True) if (enabled and tqdm is not None) else None
        self._last, self._t0 = -1, time.perf_counter()

    def step(self, desc, n=1):
        self.done += n
        if self.bar is not None:
            self.bar.set_postfix_str(desc[:40])
            self.bar.update(n)
        elif self.enabled:
            pct = int(100 * self.done / self.total)
            if pct // 5 != self._last // 5 or self.done >= self.total:
                self._last = pct
                print(f"bench: {self.done}/{self.total} ({pct}%, "
                      f"{time.perf_counter() - self._t0:.0f} s) {desc}", file=sys.stderr,
                      flush=True)

    def close(self):
        if self.bar is not None:
            self.bar.close()


# ------------------------------------------------------------------ helpers

def _has_derivatives():
    return derivatives is not None and hasattr(derivatives, "rnea_derivatives") \
        and hasattr(derivatives, "aba_derivatives")


def _full(M):
    """Pinocchio may fill only the upper triangle of M and M^-1: mirror it."""
    M = np.array(M)
    return np.triu(M) + np.triu(M, 1).T


def _stack(r):
    return np.hstack([np.array(x) for x in r])


def random_state(model, pm, rng):
    """A random (q, v, a): with Pinocchio, q = integrate(neutral, random v) (as
    bench-core), else rbd.random_configuration."""
    if pm is not None:
        q = pin.integrate(pm, pin.neutral(pm), rng.normal(size=pm.nv))
    else:
        q = rbd.random_configuration(model, rng)
    return (np.ascontiguousarray(q, dtype=float), rng.normal(size=model.nv),
            rng.normal(size=model.nv))


def _perturbed(model, q, x, y, h):
    """Batched central-difference inputs: rows 0..2nv perturb q on the manifold
    (+h e_k then -h e_k), rows 2nv..4nv perturb x, rows 4nv..6nv perturb y."""
    nv, nq = model.nv, model.nq
    E = h * np.eye(nv)
    Q = np.empty((6 * nv, nq))
    Q[:] = q
    Q[:2 * nv] = rbd.integrate(model, Q[:2 * nv], np.concatenate([E, -E]))
    X = np.empty((6 * nv, nv))
    X[:] = x
    X[2 * nv:3 * nv] += E
    X[3 * nv:4 * nv] -= E
    Y = np.empty((6 * nv, nv))
    Y[:] = y
    Y[4 * nv:5 * nv] += E
    Y[5 * nv:] -= E
    return Q, X, Y


def _central(out, nv, h):
    """(d/dq, d/dx, d/dy) from the 6 nv outputs of :func:`_perturbed` inputs."""
    return tuple((out[2 * k * nv:(2 * k + 1) * nv] - out[(2 * k + 1) * nv:(2 * k + 2) * nv]).T
                 / (2 * h) for k in range(3))


def fd_batched(model, f, q, x, y, h=FD_STEP):
    """Central finite differences of f(model, q, x, y) (rbd.rnea or rbd.aba) with
    respect to q (on the manifold), x and y: one batched call of f."""
    return _central(f(model, *_perturbed(model, q, x, y, h)), model.nv, h)


def fd_loop(model, f, q, x, y, h=FD_STEP):
    """As :func:`fd_batched` with a Python loop of 6 nv single calls of f."""
    Q, X, Y = _perturbed(model, q, x, y, h)
    out = np.empty((6 * model.nv, model.nv))
    for k in range(6 * model.nv):
        out[k] = f(model, Q[k], X[k], Y[k])
    return _central(out, model.nv, h)


def fd_pin(pm, pd, f, q, x, y, h=FD_STEP):
    """Central finite differences of Pinocchio's f(pm, pd, q, x, y) (pin.rnea, pin.aba)
    with respect to q (pin.integrate), x and y: a Python loop of 6 nv calls."""
    nv = pm.nv
    dq, dx, dy = np.empty((nv, nv)), np.empty((nv, nv)), np.empty((nv, nv))
    e = np.zeros(nv)
    for k in range(nv):
        e[k] = h
        dq[:, k] = np.array(f(pm, pd, pin.integrate(pm, q, e), x, y)) \
            - f(pm, pd, pin.integrate(pm, q, -e), x, y)
        dx[:, k] = np.array(f(pm, pd, q, x + e, y)) - f(pm, pd, q, x - e, y)
        dy[:, k] = np.array(f(pm, pd, q, x, y + e)) - f(pm, pd, q, x, y - e)
        e[k] = 0.0
    return dq / (2 * h), dx / (2 * h), dy / (2 * h)


def cs_batched(model, f, q, x, y, h=CS_STEP):
    """Complex-step derivatives of f with respect to q (on the manifold), x and y: one
    batched complex128 call over 3 nv states; exact to rounding."""
    nv, nq = model.nv, model.nq
    E = 1j * h * np.eye(nv)
    Q = np.empty((3 * nv, nq), complex)
    Q[:] = q
    Q[:nv] = rbd.integrate(model, Q[:nv], E)
    X = np.empty((3 * nv, nv), complex)
    X[:] = x
    X[nv:2 * nv] += E
    Y = np.empty((3 * nv, nv), complex)
    Y[:] = y
    Y[2 * nv:] += E
    out = f(model, Q, X, Y).imag / h
    return out[:nv].T, out[nv:2 * nv].T, out[2 * nv:].T


def minv_cholesky(model, q):
    """M^-1 = L^-T L^-1 from rbd.crba and numpy's dense Cholesky factor L."""
    Li = np.linalg.inv(np.linalg.cholesky(rbd.crba(model, q)))
    return Li.T @ Li


def _pin_minv_cholesky(pm, pd, q):
    pin.crba(pm, pd, q)
    pin.cholesky.decompose(pm, pd)
    return pin.cholesky.computeMinv(pm, pd)


def _pin_aba_derivs_result(r):
    """Pinocchio's (dqdd_dq, dqdd_dv, Minv) stacked, copied out of its Data (the copy is
    not timed: only the call is)."""
    return np.hstack([np.array(r[0]), np.array(r[1]), _full(r[2])])


def mujoco_calls(model, q, v, a, tau, h=FD_STEP):
    """{row: zero-argument MuJoCo call} for the rows MuJoCo has a peer for; raises when
    MuJoCo is missing or the twin does not build."""
    mm, md = bm.mujoco_twin(model)
    qm = bm.mujoco_q(model, q)
    nv = mm.nv
    D = [np.zeros((nv, nv)) for _ in range(3)]

    def set_state(acc):
        md.qpos[:] = qm
        md.qvel[:] = v
        md.qacc[:] = acc

    def inverse():
        set_state(a)
        mujoco.mj_inverse(mm, md)
        return md.qfrc_inverse.copy()

    def inverse_fd():
        set_state(a)
        mujoco.mjd_inverseFD(mm, md, h, False, D[0], D[1], D[2], None, None, None, None)
        return np.hstack([D[0].T, D[1].T, D[2].T])

    def forward():
        md.qpos[:] = qm
        md.qvel[:] = v
        md.qfrc_applied[:] = tau
        mujoco.mj_forward(mm, md)
        return md.qacc.copy()

    return {"id": inverse, "id_fd": inverse_fd, "fd": forward}


# ------------------------------------------------------------------ (a) table

def table_calls(model, pm, q, v, a, extra=True):
    """{row: (rbdiff call or None, Pinocchio call or None, post-processing of
    Pinocchio's output)}; a missing rbdiff call comes with its reason in ``skip``."""
    tau = rbd.rnea(model, q, v, a)
    ours = {
        "id": partial(rbd.rnea, model, q, v, a),
        "fd": partial(rbd.aba, model, q, v, tau),
        "id_fd": partial(fd_batched, model, rbd.rnea, q, v, a),
        "fd_fd": partial(fd_batched, model, rbd.aba, q, v, tau),
        "minv": partial(rbd.minverse, model, q),
        "minv_chol": partial(minv_cholesky, model, q),
        "id_derivs": None, "fd_derivs": None,
    }
    if _has_derivatives():
        ours["id_derivs"] = partial(derivatives.rnea_derivatives, model, q, v, a)
        ours["fd_derivs"] = partial(derivatives.aba_derivatives, model, q, v, tau)
    if extra:
        ours.update(id_cs=partial(cs_batched, model, rbd.rnea, q, v, a),
                    fd_cs=partial(cs_batched, model, rbd.aba, q, v, tau),
                    id_fd_loop=partial(fd_loop, model, rbd.rnea, q, v, a),
                    fd_fd_loop=partial(fd_loop, model, rbd.aba, q, v, tau))
    theirs = {k: (None, None) for k in ours}
    if pm is not None:
        pd = pm.createData()
        theirs.update({
            "id": (partial(pin.rnea, pm, pd, q, v, a), np.array),
            "fd": (partial(pin.aba, pm, pd, q, v, tau), np.array),
            "id_derivs": (partial(pin.computeRNEADerivatives, pm, pd, q, v, a), _stack),
            "fd_derivs": (partial(pin.computeABADerivatives, pm, pd, q, v, tau),
                          _pin_aba_derivs_result),
            "id_fd": (partial(fd_pin, pm, pd, pin.rnea, q, v, a), _stack),
            "fd_fd": (partial(fd_pin, pm, pd, pin.aba, q, v, tau), _stack),
            "minv": (partial(pin.computeMinverse, pm, pd, q), _full),
            "minv_chol": (partial(_pin_minv_cholesky, pm, pd, q), _full),
        })
        if extra:     # the loop rows time the same Pinocchio loop again, interleaved
            theirs["id_fd_loop"] = theirs["id_fd"]
            theirs["fd_fd_loop"] = theirs["fd_fd"]
    rows = [k for k, _ in (ALL_ROWS if extra else TABLE_ROWS)]
    return {k: (ours.get(k), *theirs.get(k, (None, None))) for k in rows}, tau


def _as_matrix(x):
    return _stack(x) if isinstance(x, tuple) else np.asarray(x)


def bench_row(robot, model, key, ours, theirs, post, mj, cfg):
    """One Table I row: agreement (also the warm-up call), then interleaved timings."""
    row = dict(robot=robot, nq=model.nq, nv=model.nv, row=key, name=ROW_LABEL[key],
               rbdiff_s=None, pin_s=None, mujoco_s=None)
    funcs = {}
    mine = ref = None
    if ours is not None:
        try:
            mine = _as_matrix(ours())
            funcs["rbdiff"] = ours
        except Exception as e:          # noqa: BLE001 (a broken row must not stop all)
            row["rbdiff_error"] = f"{type(e).__name__}: {e}"
    if theirs is not None:
        ref = post(theirs())
        funcs["pin"] = theirs
    if mj is not None:
        try:
            m_out = mj()
            funcs["mujoco"] = mj
            if ref is not None and bm.mujoco_comparable(model):
                row["mujoco_max_abs_diff"] = float(np.max(np.abs(m_out - ref)))
        except Exception as e:          # noqa: BLE001
            row["mujoco_error"] = f"{type(e).__name__}: {e}"
    if mine is not None and ref is not None:
        row["max_abs_diff"] = float(np.max(np.abs(mine - ref)))
        row["agree"] = bool(row["max_abs_diff"]
                            <= AGREE * max(1.0, float(np.max(np.abs(ref)))))
    if funcs:
        t = interleaved(funcs, repeats=cfg.repeats, min_time=cfg.min_time)
        for lib, name in (("rbdiff", "rbdiff"), ("pin", "pin"), ("mujoco", "mujoco")):
            if lib in t:
                row[f"{name}_s"] = t[lib]["median"]
                row[f"{name}_min_s"] = t[lib]["min"]
                row[f"{name}_number"] = t[lib]["number"]
    row["ratio_pin"] = rp.ratio(row["rbdiff_s"], row["pin_s"])
    row["ratio_mujoco"] = rp.ratio(row["rbdiff_s"], row["mujoco_s"])
    return row


def run_table(cfg, bar, out):
    rng = np.random.default_rng(cfg.seed)
    res = dict(rows=[], skipped=[], robots=[])
    nrows = len(ALL_ROWS if cfg.extra_rows else TABLE_ROWS)
    for robot in cfg.robots:
        try:
            model, pm = bm.robot_pair(robot)
        except (ImportError, OSError, KeyError, ValueError) as e:
            res["skipped"].append(dict(robot=robot, reason=f"{type(e).__name__}: {e}"))
            bar.step(f"{robot}: skipped", nrows)
            continue
        label = bm.robot_label(robot)
        res["robots"].append(dict(robot=robot, label=label, nq=model.nq, nv=model.nv,
                                  njoints=model.njoints))
        q, v, a = random_state(model, pm, rng)
        calls, tau = table_calls(model, pm, q, v, a, extra=cfg.extra_rows)
        mj = {}
        if cfg.mujoco and mujoco is not None:
            try:
                mj = mujoco_calls(model, q, v, a, tau)
            except Exception as e:      # noqa: BLE001
                out["notes"].append(f"MuJoCo twin of {robot} failed: {e}")
        for key, (ours, theirs, post) in calls.items():
            if ours is None and theirs is None:
                bar.step(f"{robot} {key}")
                continue
            row = bench_row(robot, model, key, ours, theirs, post, mj.get(key), cfg)
            row["label"] = label
            if ours is None:
                row["rbdiff_error"] = "rbdiff.derivatives is not available"
            res["rows"].append(row)
            bar.step(f"{robot} {key}")
    return res


# ------------------------------------------------------------------ (b) scaling

def scaling_calls(model, pm, q, v, a):
    """{alg: (rbdiff call or None, Pinocchio call or None)}."""
    tau = rbd.rnea(model, q, v, a)
    ours = {"rnea": partial(rbd.rnea, model, q, v, a), "crba": partial(rbd.crba, model, q),
            "aba": partial(rbd.aba, model, q, v, tau),
            "minverse": partial(rbd.minverse, model, q),
            "rnea_derivatives": None, "aba_derivatives": None}
    if _has_derivatives():
        ours["rnea_derivatives"] = partial(derivatives.rnea_derivatives, model, q, v, a)
        ours["aba_derivatives"] = partial(derivatives.aba_derivatives, model, q, v, tau)
    theirs = {k: None for k in ours}
    if pm is not None:
        pd = pm.createData()
        args = {"rnea": (q, v, a), "crba": (q,), "aba": (q, v, tau), "minverse": (q,),
                "rnea_derivatives": (q, v, a), "aba_derivatives": (q, v, tau)}
        theirs = {k: partial(getattr(pin, PIN_SCALING[k]), pm, pd, *args[k]) for k in ours}
    return {k: (ours[k], theirs[k]) for k in SCALING_ALGS}


def run_scaling(cfg, bar, out):
    rng = np.random.default_rng(cfg.seed + 1)
    res = dict(sizes=list(cfg.sizes), fit_min_n=cfg.fit_min_n, points=[], slopes=[],
               errors=[])
    for family in cfg.families:
        for n in cfg.sizes:
            model, pm = bm.synthetic_pair(family, n)
            q, v, a = random_state(model, pm, rng)
            funcs = {}
            for alg, (ours, theirs) in scaling_calls(model, pm, q, v, a).items():
                for lib, f in (("rbdiff", ours), ("Pinocchio", theirs)):
                    if f is None:
                        continue
                    try:
                        f()                      # compile / warm up; skip what fails
                        funcs[(alg, lib)] = f
                    except Exception as e:       # noqa: BLE001
                        res["errors"].append(dict(family=family, n=n, alg=alg, lib=lib,
                                                  error=f"{type(e).__name__}: {e}"))
            t = interleaved({f"{a_}|{l_}": f for (a_, l_), f in funcs.items()},
                            repeats=cfg.repeats, min_time=cfg.min_time)
            for alg in SCALING_ALGS:
                p = dict(family=family, n=n, nv=model.nv, alg=alg)
                for lib in ("rbdiff", "Pinocchio"):
                    r = t.get(f"{alg}|{lib}")
                    p[lib] = r["median"] if r else None
                    p[f"{lib}_min"] = r["min"] if r else None
                p["ratio"] = rp.ratio(p["rbdiff"], p["Pinocchio"])
                res["points"].append(p)
            bar.step(f"{family} N={n}", len(SCALING_ALGS))
        for alg in SCALING_ALGS:
            pts = [p for p in res["points"] if p["family"] == family and p["alg"] == alg]
            s = dict(family=family, alg=alg, paper=PAPER_SLOPES.get((family, alg), "-"))
            for lib in ("rbdiff", "Pinocchio"):
                ns, ts = [p["n"] for p in pts], [p[lib] for p in pts]
                s[lib], s[f"{lib}_c"] = rp.loglog_slope(ns, ts, cfg.fit_min_n)
                s[f"{lib}_all"], _ = rp.loglog_slope(ns, ts, 1)
            res["slopes"].append(s)
    return res


# ------------------------------------------------------------------ (c) accuracy

def _accuracy_model(case):
    """(label, zero-gravity rbdiff Model, Pinocchio twin or None, gravity-on pair)."""
    kind, arg = case
    zero = (0.0, 0.0, 0.0)
    if kind == "robot":
        m0, p0 = bm.robot_pair(arg, gravity=zero)
        m1, p1 = bm.robot_pair(arg)
        return bm.robot_label(arg), m0, p0, m1, p1
    m0, p0 = bm.synthetic_pair(kind, int(arg), gravity=zero)
    m1, p1 = bm.synthetic_pair(kind, int(arg))
    return f"{kind.replace('_', ' ')} N={arg}", m0, p0, m1, p1


def _dv_forward(model, f, q, h):
    """Forward differences of f(q, v, 0) at v = 0 with respect to v: one batched call."""
    nv = model.nv
    Z = np.zeros((nv, nv))
    out = f(model, np.tile(q, (nv, 1)), h * np.eye(nv), Z)
    return (out - f(model, q, np.zeros(nv), np.zeros(nv))).T / h


def _dv_central(model, f, q, h):
    nv = model.nv
    Z = np.zeros((nv, nv))
    Q = np.tile(q, (nv, 1))
    return (f(model, Q, h * np.eye(nv), Z) - f(model, Q, -h * np.eye(nv), Z)).T / (2 * h)


def _maxabs(x):
    return float(np.max(np.abs(x)))


def run_accuracy(cfg, bar, out):
    rng = np.random.default_rng(cfg.seed + 2)
    steps = [float(h) for h in cfg.steps]
    res = dict(steps=steps, cases=[], heat=None, fd_step=FD_STEP)
    for case in cfg.accuracy_cases:
        try:
            label, m0, p0, m1, p1 = _accuracy_model(case)
        except (ImportError, OSError, KeyError, ValueError) as e:
            out["notes"].append(f"accuracy case {case} skipped: {e}")
            bar.step(f"accuracy {case}")
            continue
        q, _, _ = random_state(m0, p0, rng)
        nv = m0.nv
        z = np.zeros(nv)
        c = dict(case=label, nv=nv, nq=m0.nq)
        # (1) Fig. 3: exact d/dv is zero at v = a = 0, g = 0, no fext
        c["id_forward"] = [_maxabs(_dv_forward(m0, rbd.rnea, q, h)) for h in steps]
        c["id_central"] = [_maxabs(_dv_central(m0, rbd.rnea, q, h)) for h in steps]
        c["fd_forward"] = [_maxabs(_dv_forward(m0, rbd.aba, q, h)) for h in steps]
        c["fd_central"] = [_maxabs(_dv_central(m0, rbd.aba, q, h)) for h in steps]
        c["id_complex_step"] = _maxabs(cs_batched(m0, rbd.rnea, q, z, z)[1])
        c["fd_complex_step"] = _maxabs(cs_batched(m0, rbd.aba, q, z, z)[1])
        if p0 is not None:
            pd = p0.createData()
            c["id_pinocchio"] = _maxabs(pin.computeRNEADerivatives(p0, pd, q, z, z)[1])
            c["fd_pinocchio"] = _maxabs(pin.computeABADerivatives(p0, pd, q, z, z)[1])
        if _has_derivatives():
            try:
                c["id_rbdiff"] = _maxabs(derivatives.rnea_derivatives(m0, q, z, z)[1])
                c["fd_rbdiff"] = _maxabs(derivatives.aba_derivatives(m0, q, z, z)[1])
            except Exception as e:      # noqa: BLE001
                out["notes"].append(f"rbdiff.derivatives failed on {label}: {e}")
        if res["heat"] is None:
            h0 = float(np.sqrt(EPS))
            res["heat"] = dict(case=label, step=h0,
                               values=_dv_forward(m0, rbd.rnea, q, h0).tolist())
        # (2) generic state (gravity on): error of finite differences vs the step,
        # against complex step (exact to rounding) as the reference
        q1, v1, a1 = random_state(m1, p1, rng)
        ref = np.hstack(cs_batched(m1, rbd.rnea, q1, v1, a1)[:2])
        scale = max(1.0, _maxabs(ref))
        errs = []
        for h in steps:
            d = fd_batched(m1, rbd.rnea, q1, v1, a1, h)
            errs.append(_maxabs(np.hstack(d[:2]) - ref) / scale)
        c["generic_central_rel_err"] = errs
        if p1 is not None:
            pd1 = p1.createData()
            r = pin.computeRNEADerivatives(p1, pd1, q1, v1, a1)
            c["generic_pinocchio_rel_err"] = _maxabs(
                np.hstack([np.array(r[0]), np.array(r[1])]) - ref) / scale
        if _has_derivatives():
            try:
                r = derivatives.rnea_derivatives(m1, q1, v1, a1)
                c["generic_rbdiff_rel_err"] = _maxabs(np.hstack(r[:2]) - ref) / scale
            except Exception as e:      # noqa: BLE001
                out["notes"].append(f"rbdiff.derivatives failed on {label}: {e}")
        res["cases"].append(c)
        bar.step(f"accuracy {label}")
    return res


# ------------------------------------------------------------------ report

def _robot_rows(out, robot):
    return {r["row"]: r for r in out["table"]["rows"] if r["robot"] == robot}


def _diff_cell(r):
    if "max_abs_diff" not in r:
        return "-"
    return rp.fmt_sci(r["max_abs_diff"]) + ("" if r["agree"] else " (DISAGREE)")


def report_table(out, files):
    tab = out["table"]
    has_mj = any(r.get("mujoco_s") for r in tab["rows"])
    lines = ["## 1. Per-robot timings (carpentier-mansard-2018 Table I)", "",
             "Comparisons, per robot at one random state (median seconds per call over "
             f"{out['config']['repeats']} interleaved rounds, shown in microseconds; "
             "ratio = rbdiff / peer, below 1 means rbdiff is faster):", ""]
    for key, label in ALL_ROWS if out["config"]["extra_rows"] else TABLE_ROWS:
        ours, theirs, mj = ROW_CALLS[key]
        txt = f"- **{label}**: rbdiff: {ours}; Pinocchio: {theirs or '-'}"
        if mj and has_mj:
            txt += f"; MuJoCo: {mj}"
        lines.append(txt)
    lines += ["", f"Finite differences are central, step h = {FD_STEP:.2e} (cbrt(eps)); "
              "'max|diff|' compares rbdiff's result with Pinocchio's for the same "
              "quantity (for finite-difference rows: Pinocchio's finite differences)."
              + (" 'max|diff| MuJoCo' compares MuJoCo's result with Pinocchio's where "
                 "the coordinates agree (fixed base, revolute/prismatic joints only; "
                 "mjd_inverseFD uses forward differences)." if has_mj else ""), ""]
    if not _has_derivatives():
        lines += ["> rbdiff.derivatives is not available in this build: the analytical "
                  "derivative rows show Pinocchio only.", ""]
    if mujoco is None or not out["config"]["mujoco"]:
        lines += ["> MuJoCo is not installed (pip install mujoco): no MuJoCo column.", ""]
    # summary of ratios
    robots = [r["robot"] for r in tab["robots"]]
    labels = {r["robot"]: r["label"] for r in tab["robots"]}
    keys = [k for k, _ in (ALL_ROWS if out["config"]["extra_rows"] else TABLE_ROWS)]
    if robots:
        lines += ["### Summary: rbdiff / Pinocchio time ratio", ""]
        rows = []
        for k in (k for k in keys if ROW_CALLS[k][1] is not None):   # has a peer
            cells = [rp.fmt_ratio(_robot_rows(out, rb).get(k, {}).get("ratio_pin"))
                     for rb in robots]
            rows.append([ROW_LABEL[k], *cells])
        lines += [rp.md_table(["quantity", *(labels[r] for r in robots)], rows), ""]
    for rb in robots:
        info = next(r for r in tab["robots"] if r["robot"] == rb)
        rr = _robot_rows(out, rb)
        head = ["quantity", "rbdiff us", "Pinocchio us", "rbdiff/Pinocchio"]
        if has_mj:
            head += ["MuJoCo us", "rbdiff/MuJoCo"]
        head.append("max|diff|")
        if has_mj:
            head.append("max|diff| MuJoCo")
        rows = []
        for k in keys:
            if k not in rr:
                continue
            r = rr[k]
            cells = [ROW_LABEL[k], rp.fmt_time(r["rbdiff_s"]), rp.fmt_time(r["pin_s"]),
                     rp.fmt_ratio(r["ratio_pin"])]
            if has_mj:
                cells += [rp.fmt_time(r["mujoco_s"]), rp.fmt_ratio(r["ratio_mujoco"])]
            cells.append(_diff_cell(r))
            if has_mj:
                cells.append(rp.fmt_sci(r.get("mujoco_max_abs_diff")))
            rows.append(cells)
        lines += [f"### {info['label']} (nq = {info['nq']}, nv = {info['nv']})", "",
                  rp.md_table(head, rows), ""]
        errs = [f"{ROW_LABEL[k]}: {r['rbdiff_error']}" for k, r in rr.items()
                if "rbdiff_error" in r]
        if errs:
            lines += ["rbdiff rows not measured: " + "; ".join(errs), ""]
    for s in tab["skipped"]:
        lines += [f"> skipped {s['robot']}: {s['reason']}", ""]
    lines += ["### The paper's Table I (for reference)", "",
              "carpentier-mansard-2018 Table I, us: Pinocchio in C++ on one core of a "
              "2.2 GHz Intel Core i7 (no Python call overhead; other robots, other "
              "machine: compare orders of magnitude and ratios between rows, not the "
              "absolute times above).", ""]
    rows = [[ROW_LABEL[k], *(f"{x:.2f}" for x in PAPER_TABLE[k])] for k, _ in TABLE_ROWS]
    lines += [rp.md_table(["quantity", *PAPER_TABLE["robots"]], rows), ""]
    if "table" in files:
        lines += [f"![Table I times]({files['table']})", ""]
    return lines


def report_scaling(out, files):
    sc = out["scaling"]
    lines = ["## 2. Scaling with the number of bodies (serial chains, binary trees)", "",
             "Models: `rbd.models.serial_chain(N)` and `rbd.models.binary_tree(N)` "
             "(singh-2022 protocol: revolute z joints, 1 kg, 1 m links, Izz = 1) and "
             "Pinocchio twins built joint by joint from them; one random state per N; "
             f"N in {sc['sizes']}. Comparisons: rbdiff vs Pinocchio for rnea (ID), crba "
             "(M), aba (FD), minverse (M^-1, Pinocchio computeMinverse), and "
             "rnea_derivatives / aba_derivatives vs computeRNEADerivatives / "
             "computeABADerivatives.", ""]
    if not _has_derivatives():
        lines += ["> rbdiff.derivatives is not available in this build: the derivative "
                  "curves show Pinocchio only.", ""]
    lines += [f"### Fitted log-log slopes (least squares over N >= {sc['fit_min_n']})", "",
              "slope = empirical polynomial order (time ~ N^slope); 'paper' gives the "
              "order the papers state (d = depth of the tree). The constant per-call "
              "overhead of a Python call (~1-2 us on each side) flattens the slopes at "
              "small N; the columns '(all N)' fit every point.", ""]
    rows = [[s["family"].replace("_", " "), s["alg"], rp.fmt_slope(s["rbdiff"]),
             rp.fmt_slope(s["Pinocchio"]), rp.fmt_slope(s["rbdiff_all"]),
             rp.fmt_slope(s["Pinocchio_all"]), s["paper"]] for s in sc["slopes"]]
    lines += [rp.md_table(["family", "algorithm", "rbdiff", "Pinocchio",
                           "rbdiff (all N)", "Pinocchio (all N)", "paper"], rows,
                          "llrrrrl"), ""]
    for family in dict.fromkeys(p["family"] for p in sc["points"]):
        algs = [a for a in SCALING_ALGS
                if any(p[lib] for p in sc["points"] if p["alg"] == a
                       and p["family"] == family for lib in ("rbdiff", "Pinocchio"))]
        lines += [f"### {family.replace('_', ' ')}: time per call, us "
                  "(rbdiff / Pinocchio)", ""]
        rows = []
        for n in sc["sizes"]:
            cells = [str(n)]
            for a in algs:
                p = next(p for p in sc["points"] if p["family"] == family
                         and p["n"] == n and p["alg"] == a)
                cells.append(f"{rp.fmt_time(p['rbdiff'])} / {rp.fmt_time(p['Pinocchio'])}")
            rows.append(cells)
        lines += [rp.md_table(["N", *algs], rows), ""]
        if family in files:
            lines += [f"![{family} scaling]({files[family]})", ""]
    for e in sc["errors"]:
        lines.append(f"> {e['lib']} {e['alg']} failed on {e['family']} N={e['n']}: "
                     f"{e['error']}")
    return lines + [""]


def _at(steps, vals, h):
    k = int(np.argmin(np.abs(np.log10(steps) - np.log10(h))))
    return vals[k]


def report_accuracy(out, files):
    ac = out["accuracy"]
    steps = ac["steps"]
    show = [h for h in (1e-2, 1e-4, 1e-6, 1e-8, 1e-10, 1e-12)
            if min(steps) <= h <= max(steps)]
    lines = ["## 3. Accuracy: finite differences where the exact derivative is zero "
             "(carpentier-mansard-2018 Fig. 3)", "",
             "At a random q with v = a = 0, zero gravity and no external force, ID and FD "
             "do not depend on v to first order: the exact dtau/dv and dqdd/dv are zero. "
             "Compared: forward and central finite differences of rbd.rnea / rbd.aba "
             "with respect to v for each step h, complex step (one batched complex128 "
             "call, step 1e-20), Pinocchio's analytical derivatives "
             "(computeRNEADerivatives / computeABADerivatives) and rbdiff's analytical "
             "derivatives (rbdiff.derivatives) when available. Values are max |entry|.",
             "",
             "Forward differences return (f(h e_j) - f(0)) / h = h c(e_j, e_j), the "
             "velocity-product term: tau and qdd are quadratic in v, so the entries are "
             "O(h) truncation (f(0) = 0 exactly here, so rounding hardly shows; the paper "
             "attributes the nonzero entries to rounding). Central differences cancel "
             "them exactly (f(-h e) equals f(h e) bit for bit). Generic states, where "
             "rounding does show, follow in the next table.", ""]
    head = ["case", "quantity", "method", *(f"h={h:.0e}" for h in show)]
    rows = []
    for c in ac["cases"]:
        for q, name in (("id", "dtau/dv"), ("fd", "dqdd/dv")):
            for meth in ("forward", "central"):
                rows.append([c["case"], name, f"{meth} differences",
                             *(rp.fmt_sci(_at(steps, c[f"{q}_{meth}"], h)) for h in show)])
            for meth, key in (("complex step", "complex_step"),
                              ("Pinocchio analytical", "pinocchio"),
                              ("rbdiff analytical", "rbdiff")):
                if f"{q}_{key}" in c:
                    rows.append([c["case"], name, meth, rp.fmt_sci(c[f"{q}_{key}"]),
                                 *([""] * (len(show) - 1))])
    lines += [rp.md_table(head, rows, "lll" + "r" * len(show)), ""]
    if not _has_derivatives():
        lines += ["> rbdiff.derivatives is not available in this build: no rbdiff "
                  "analytical rows.", ""]
    if "accuracy" in files:
        lines += [f"![Fig. 3: finite differences of a zero derivative]({files['accuracy']})",
                  ""]
    lines += ["### Error of central finite differences at a generic state", "",
              "Random q, v, a with gravity: max |FD - reference| / max(1, max|reference|) "
              "over [dtau/dq, dtau/dv]; reference: complex step (exact to rounding). "
              "Truncation falls as h^2, rounding grows as eps/h.", ""]
    head = ["case", *(f"h={h:.0e}" for h in show), "best h", "Pinocchio analytical",
            "rbdiff analytical"]
    rows = []
    for c in ac["cases"]:
        e = c["generic_central_rel_err"]
        k = int(np.argmin(e))
        rows.append([c["case"], *(rp.fmt_sci(_at(steps, e, h)) for h in show),
                     f"{steps[k]:.0e} ({e[k]:.1e})",
                     rp.fmt_sci(c.get("generic_pinocchio_rel_err")),
                     rp.fmt_sci(c.get("generic_rbdiff_rel_err"))])
    lines += [rp.md_table(head, rows), ""]
    if "accuracy_error" in files:
        lines += [f"![FD error vs step]({files['accuracy_error']})", ""]
    return lines


def write_report(out, outdir, files):
    m = out["meta"]
    lines = ["# rbdiff benchmark report", "",
             f"- date: {m['date']}; mode: {out['config']['mode']}; wall time "
             f"{m['wall_s']:.0f} s",
             f"- machine: {m['machine']} ({m['cpu_count']} CPUs), {m['platform']}",
             f"- rbdiff {m['rbdiff']}, numpy {m['numpy']}, numba {m['numba']} (threads "
             f"while timing: {out['config']['threads']}), Pinocchio "
             f"{m['pinocchio'] or 'not installed'}, MuJoCo {m['mujoco'] or 'not installed'}"
             f", rbdiff.derivatives {'available' if m['derivatives'] else 'not available'}",
             "- method: every comparison is timed in this process, interleaved "
             "round-robin (rbdiff.bench.timing.interleaved), median over rounds; peers "
             "are called from Python (DESIGN.md section 4).",
             f"- raw numbers: `results.json`; sections run: "
             f"{', '.join(m.get('sections_done', out['config']['sections']))}",
             ""]
    if m.get("failed"):
        f = m["failed"]
        lines[-1:-1] = [f"- **incomplete run**: section {f['section']} failed ({f['error']}); "
                        "the sections above it are complete"]
    if "table" in out:
        lines += report_table(out, files)
    if "scaling" in out:
        lines += report_scaling(out, files)
    if "accuracy" in out:
        lines += report_accuracy(out, files)
    cfg = out["config"]
    for name, mod in SECTION_MODULES.items():
        if name in out:
            lines += mod.report(out[name], files, cfg)
    if out["notes"]:
        lines += ["## Notes", ""] + [f"- {n}" for n in out["notes"]] + [""]
    (outdir / "report.md").write_text("\n".join(lines))


def make_figures(out, outdir):
    """Write the PNGs; returns {name: file name}."""
    files = {}
    if "table" in out and out["table"]["robots"]:
        robots = [r["robot"] for r in out["table"]["robots"]]
        times = {rb: {} for rb in robots}
        for r in out["table"]["rows"]:
            times[r["robot"]][r["row"]] = {"rbdiff": r["rbdiff_s"], "Pinocchio": r["pin_s"],
                                           "MuJoCo": r["mujoco_s"]}
        for rb in robots:
            for k, _ in ALL_ROWS:
                times[rb].setdefault(k, {})
        labels = {r["robot"]: r["label"] for r in out["table"]["robots"]}
        times = {labels[rb]: t for rb, t in times.items()}
        files["table"] = "table1_times.png"
        rp.plot_table(outdir / files["table"], list(times), list(TABLE_ROWS), times,
                      "carpentier-mansard-2018 Table I quantities: time per call "
                      "(log scale)")
    if "scaling" in out:
        sc = out["scaling"]
        for family in dict.fromkeys(p["family"] for p in sc["points"]):
            curves, fits = {}, {}
            for alg in SCALING_ALGS:
                pts = sorted((p for p in sc["points"] if p["family"] == family
                              and p["alg"] == alg), key=lambda p: p["n"])
                for lib in ("rbdiff", "Pinocchio"):
                    curves[(alg, lib)] = [p[lib] for p in pts]
            for s in sc["slopes"]:
                if s["family"] == family:
                    fits.update({(s["alg"], lib): s[lib] for lib in ("rbdiff", "Pinocchio")})
            files[family] = f"scaling_{family}.png"
            rp.plot_scaling(outdir / files[family], family, sc["sizes"], curves, fits,
                            f"{family.replace('_', ' ')}: rbdiff (solid) vs Pinocchio "
                            "(dashed), log-log")
    if "accuracy" in out and out["accuracy"]["cases"]:
        ac = out["accuracy"]
        floor = 1e-20
        curves = []
        for c in ac["cases"]:
            curves.append((f"{c['case']}: dtau/dv forward", ac["steps"], c["id_forward"],
                           "o-"))
            curves.append((f"{c['case']}: dqdd/dv forward", ac["steps"], c["fd_forward"],
                           "^:"))
            curves.append((f"{c['case']}: dtau/dv central", ac["steps"], c["id_central"],
                           "s--"))
        heat = ac["heat"]
        files["accuracy"] = "accuracy_fig3.png"
        rp.plot_accuracy(outdir / files["accuracy"], np.array(heat["values"]),
                         f"{heat['case']}: forward-difference dtau/dv, h = "
                         f"{heat['step']:.1e} (exact: 0)", curves, floor,
                         "Finite differences of a zero derivative (v = a = 0, g = 0)")
        curves = [(f"{c['case']}: central differences", ac["steps"],
                   c["generic_central_rel_err"], "o-") for c in ac["cases"]]
        hlines = [(f"{c['case']}: {who} analytical", c[key]) for c in ac["cases"]
                  for who, key in (("Pinocchio", "generic_pinocchio_rel_err"),
                                   ("rbdiff", "generic_rbdiff_rel_err")) if key in c]
        files["accuracy_error"] = "accuracy_error.png"
        rp.plot_accuracy(outdir / files["accuracy_error"], None, "", curves, 1e-18,
                         "Generic state: error of [dtau/dq, dtau/dv] vs complex step",
                         ylabel="max |error| / max(1, max |reference|)", hlines=hlines)
    for name, mod in SECTION_MODULES.items():
        if name in out:
            files.update(mod.figures(out[name], outdir))
    return files


# ------------------------------------------------------------------ driver

def _total(cfg):
    n = 0
    if "table" in cfg.sections:
        n += len(cfg.robots) * len(ALL_ROWS if cfg.extra_rows else TABLE_ROWS)
    if "scaling" in cfg.sections:
        n += len(cfg.families) * len(cfg.sizes) * len(SCALING_ALGS)
    if "accuracy" in cfg.sections:
        n += len(cfg.accuracy_cases)
    for name, mod in SECTION_MODULES.items():
        if name in cfg.sections:
            n += mod.total(cfg)
    return n


def _meta():
    import numba
    return dict(date=datetime.datetime.now().isoformat(timespec="seconds"),
                machine=platform.processor() or platform.machine(),
                platform=platform.platform(), cpu_count=os.cpu_count(),
                python=platform.python_version(), rbdiff=rbd.__version__,
                numpy=np.__version__, numba=numba.__version__,
                pinocchio=None if pin is None else pin.__version__,
                mujoco=None if mujoco is None else mujoco.__version__,
                derivatives=_has_derivatives())


# the extra that installs the benchmark's optional dependencies (pyproject.toml)
EXTRA = "rbdiff[bench]"


def _robots_needed(cfg):
    """The robots the sections of ``cfg`` load."""
    sec = cfg.sections
    names = []
    if "table" in sec or "precision" in sec:
        names += cfg.robots
    if "second_order" in sec:
        names += cfg.so_robots
    if "accuracy" in sec:
        names += [arg for kind, arg in cfg.accuracy_cases if kind == "robot"]
    if "batch" in sec:
        names += cfg.batch_robots
    return list(dict.fromkeys(names))


def _importable(name):
    try:
        importlib.import_module(name)
        return True
    except ImportError:
        return False


def missing_dependencies(cfg):
    """[(module, what it is for, option that does without it or None)] of the optional
    dependencies the run ``cfg`` needs and cannot import; checked before any section
    starts (a missing matplotlib used to end a long run at the figures)."""
    from rbdiff.model.robots import _BUNDLED, example_robot_data_dir
    missing = []
    if getattr(cfg, "figures", True) and not _importable("matplotlib"):
        missing.append(("matplotlib", "the PNG figures", "--no-figures"))
    if not _importable("pinocchio"):
        missing.append(("pinocchio (pip package pin)", "the Pinocchio peer of every "
                        "comparison", None))
    erd = [r for r in _robots_needed(cfg) if r not in _BUNDLED]
    if erd and example_robot_data_dir() is None:
        missing.append(("example-robot-data", f"the robots {', '.join(erd)}", None))
    if cfg.progress and not _importable("tqdm"):
        missing.append(("tqdm", "the progress bar", "--no-progress"))
    return missing


def missing_message(missing):
    """The sentence that names what is missing and the extra that installs it."""
    parts = [f"{m} ({what}" + (f"; or run with {opt}" if opt else "") + ")"
             for m, what, opt in missing]
    return (f"missing optional dependencies of the benchmark: {', '.join(parts)}. Install "
            f"them with: pip install '{EXTRA}'")


def _json_default(o):
    if isinstance(o, (np.floating, np.integer)):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, Path):
        return str(o)
    raise TypeError(type(o).__name__)


def write_json(out, outdir):
    """results.json in ``outdir``, replaced whole (a crash mid-write leaves the last one)."""
    tmp = outdir / "results.json.tmp"
    with open(tmp, "w") as f:
        json.dump(out, f, indent=1, default=_json_default)
    os.replace(tmp, outdir / "results.json")


def _section_runners(cfg):
    """[(name, run(cfg, bar, out))] of the sections of ``cfg``, in the report's order."""
    runners = [("table", run_table), ("scaling", run_scaling), ("accuracy", run_accuracy)]
    runners += [(name, mod.run) for name, mod in SECTION_MODULES.items()]
    return [(name, f) for name, f in runners if name in cfg.sections]


def run(cfg, outdir):
    """Run the sections of ``cfg``, write report.md, results.json and the PNGs into
    ``outdir``; returns the results dict. results.json is rewritten after every section
    (``meta.sections_done``); when a section raises, results.json and report.md keep the
    finished sections and name the failure (``meta.failed``), and the error propagates."""
    import numba
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    out = dict(meta=_meta(), config={k: v for k, v in asdict(cfg).items() if k != "notes"},
               notes=list(cfg.notes))
    out["meta"].update(complete=False, sections_done=[])
    if not _has_derivatives():
        out["notes"].append("rbdiff.derivatives is not available: analytical derivative "
                            "rows and curves show Pinocchio only.")
    if cfg.mujoco and mujoco is None:
        out["notes"].append("MuJoCo is not installed: no MuJoCo peer (pip install mujoco).")
    if pin is None:
        out["notes"].append("Pinocchio is not installed: no Pinocchio peer.")
    threads = numba.get_num_threads()
    bar = Progress(_total(cfg), cfg.progress)
    name = None
    try:
        numba.set_num_threads(max(1, min(cfg.threads, numba.config.NUMBA_NUM_THREADS)))
        for name, section in _section_runners(cfg):
            out[name] = section(cfg, bar, out)
            out["meta"]["sections_done"].append(name)
            out["meta"]["wall_s"] = time.perf_counter() - t0
            write_json(out, outdir)
        name = None
    except BaseException as e:          # KeyboardInterrupt too: keep what finished
        out["meta"]["failed"] = dict(section=name, error=f"{type(e).__name__}: {e}")
        out["meta"]["wall_s"] = time.perf_counter() - t0
        out["files"] = {}
        try:
            write_json(out, outdir)
            write_report(out, outdir, {})
        except Exception as e2:         # noqa: BLE001 (the section's error matters more)
            print(f"bench: could not write the partial results: {e2}", file=sys.stderr)
        raise
    finally:
        numba.set_num_threads(threads)
        bar.close()
    files = make_figures(out, outdir) if cfg.figures else {}
    out["files"] = files
    out["meta"]["wall_s"] = time.perf_counter() - t0
    out["meta"]["complete"] = True
    write_report(out, outdir, files)
    write_json(out, outdir)
    return out


def config_from_args(args):
    cfg = PRESETS["tiny" if args.tiny else "quick" if args.quick else "full"]
    changes = dict(progress=not args.no_progress, mujoco=not args.no_mujoco,
                   figures=not getattr(args, "no_figures", False))
    if getattr(args, "batch_modes", None):
        changes["batch_modes"] = tuple(m for m in sec_batch.MODES if m in args.batch_modes)
    if args.robots:
        changes["robots"] = changes["batch_robots"] = tuple(args.robots)
    if args.only:
        only = tuple(s.strip() for part in args.only for s in part.split(",") if s.strip())
        bad = [s for s in only if s not in SECTIONS]
        if bad:
            raise ValueError(f"unknown section(s) {', '.join(bad)}; "
                             f"known: {', '.join(SECTIONS)}")
        changes["sections"] = tuple(s for s in SECTIONS if s in only)
    if args.sizes:
        changes["sizes"] = tuple(args.sizes)
    if args.repeats:
        changes["repeats"] = args.repeats
    if args.cpp or args.no_cpp:
        changes["cpp"] = bool(args.cpp)
    return replace(cfg, **changes)


def main(argv=None):
    """Command line entry point; returns 0."""
    p = argparse.ArgumentParser(prog="python -m rbdiff bench", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true",
                   help="N up to 128 (second order up to 64), fewer points and rounds (a "
                        "few minutes on 2 cores)")
    p.add_argument("--tiny", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--out", default="bench_out", metavar="DIR",
                   help="output directory (default: bench_out)")
    p.add_argument("--robots", nargs="+", metavar="NAME",
                   help="robots of the per-robot table, the float32 and the batch "
                        f"sections (default: {' '.join(ROBOTS)}; batch: "
                        f"{' '.join(Config.batch_robots)})")
    p.add_argument("--only", nargs="+", metavar="SECTION",
                   help="sections to run, comma or space separated: "
                        f"{','.join(SECTIONS)} (default: all)")
    p.add_argument("--sizes", nargs="+", type=int, metavar="N",
                   help="numbers of bodies of the scaling section")
    p.add_argument("--repeats", type=int, metavar="R", help="interleaved rounds")
    p.add_argument("--no-mujoco", action="store_true", help="skip the MuJoCo peer")
    cpp = p.add_mutually_exclusive_group()
    cpp.add_argument("--cpp", action="store_true",
                     help="second_order: time Pinocchio's C++ via bench/anchor.py, building "
                          "it if needed (about 4 minutes once; the full mode does by "
                          "default, --quick / --tiny only use an already built one)")
    cpp.add_argument("--no-cpp", action="store_true", help="never use the C++ anchor")
    p.add_argument("--batch-modes", nargs="+", choices=sec_batch.MODES, metavar="MODE",
                   help="batch section: measured modes, of "
                        f"{' '.join(sec_batch.MODES)} (default: all)")
    p.add_argument("--no-figures", action="store_true",
                   help="no PNG figures (matplotlib not needed)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    args = p.parse_args(argv)
    from rbdiff.model.robots import robot_names
    unknown = [r for r in (args.robots or []) if r not in robot_names()]
    if unknown:
        p.error(f"unknown robot(s) {', '.join(unknown)}; known: {', '.join(robot_names())}")
    try:
        cfg = config_from_args(args)
    except ValueError as e:
        p.error(str(e))
    missing = missing_dependencies(cfg)      # before any section: fail in seconds
    if missing:
        p.error(missing_message(missing))
    print(f"rbdiff bench ({cfg.mode}): sections {', '.join(cfg.sections)} -> {args.out}/ "
          "(the first run compiles kernels)", file=sys.stderr, flush=True)
    out = run(cfg, args.out)
    print(f"wrote {Path(args.out) / 'report.md'}, results.json and "
          f"{len(out['files'])} figure(s) in {out['meta']['wall_s']:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
