"""Numeric types for the dynamics gradient (Plancher et al. 2021 sec. V-C, footnote 2).

The paper solves an iiwa14 trajectory optimisation with the dynamics gradient computed
in fixed point and finds that it still solves down to 12 integer and 5 fractional bits
(the FPGA used Q16.16). This module repeats that study on rbdiff's own kernels:

* :class:`Fixed` (made per format by :func:`fixed_type`): a Q(i.f) scalar, i integer bits
  including the sign, f fractional bits, stored as a Python int of units 2^-f. Every
  arithmetic result is rounded to nearest on the grid and saturated to
  [-2^(i-1), 2^(i-1) - 2^-f]; floats and ints meeting a Fixed are rounded to the grid
  first (constants are on the grid in hardware too). Saturations are counted.
* :func:`aba_derivatives_fixed`: the first-order FD derivative kernel
  (kernels/aba_derivatives.py, DMM product: what ``rbd.aba_derivatives`` picks for
  iiwa14) run from its Python source on object arrays of Fixed, in a process started
  with ``NUMBA_DISABLE_JIT=1`` (Numba's decorators then return the plain functions), so
  every intermediate of the gradient lives on the grid, not only inputs and outputs.
  The model's constants (inertias, placements, gravity) are rounded to the grid too.
  Exception, documented: sin/cos of the joint angles are computed in float64 and then
  rounded to the grid (``trig.sincos``'s Cody-Waite reduction needs ~66-bit constants;
  the FPGA takes sin/cos as inputs or from a table, likewise one rounding).
* :func:`run_study`: the iiwa14 reach solved by iLQR with Pq, Pv, Pu from float64,
  float32 (rbdiff's compiled float32 kernels) and fixed-point formats; the rollouts and
  line search stay float64 (the study is about the gradient). ``--io-only`` adds the
  contrast: the gradient's inputs and outputs rounded, float64 in between.

Results and their comparison with the paper: docs/fixed_point.md.

CLI: ``python -m rbdiff.bench.fixed_point [--quick] [--out DIR]``.
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing as mp
import os
import sys
import time

import numpy as np


# ---------------------------------------------------------------- the scalar type

class Fixed:
    """A Q(I.F) number; subclasses made by :func:`fixed_type` fix I and F. ``n`` is the
    value in units of 2^-F. Class attribute ``saturations`` counts saturated results
    (shared by all formats: reset it with :func:`reset_saturations`)."""

    __slots__ = ("n",)
    I = F = 0
    LO = HI = 0
    HALF = 0                     # 2^(F-1): rounding offset of products
    SCALE = 1.0                  # 2^F
    saturations = 0

    def __init__(self, n):
        self.n = n

    # -- construction and saturation

    @classmethod
    def sat(cls, n):
        """A Fixed of n units, saturated to the format's range (counted)."""
        if n > cls.HI:
            Fixed.saturations += 1
            n = cls.HI
        elif n < cls.LO:
            Fixed.saturations += 1
            n = cls.LO
        return cls(n)

    @classmethod
    def of(cls, x):
        """x (Fixed, float, int, NumPy scalar) rounded to nearest on the grid, saturated.
        NaN saturates to the top (counted): hardware has no NaN."""
        if isinstance(x, Fixed):
            return x if type(x) is cls else cls.of(float(x))
        x = float(x)
        if x != x:
            Fixed.saturations += 1
            return cls(cls.HI)
        if math.isinf(x):
            return cls.sat(cls.HI + 1 if x > 0 else cls.LO - 1)
        return cls.sat(round(x * cls.SCALE))

    # -- conversions

    def __float__(self):
        return self.n / self.SCALE

    def __repr__(self):
        return f"Q{self.I}.{self.F}({float(self)})"

    @property
    def real(self):
        """Itself (kernels take ``x.real`` to serve complex step)."""
        return self

    # -- arithmetic (every result rounded and saturated)

    def __add__(self, o):
        return self.sat(self.n + self.of(o).n)

    __radd__ = __add__

    def __sub__(self, o):
        return self.sat(self.n - self.of(o).n)

    def __rsub__(self, o):
        return self.sat(self.of(o).n - self.n)

    def __mul__(self, o):
        # exact product has 2F fractional bits: round half up back to F
        return self.sat((self.n * self.of(o).n + self.HALF) >> self.F)

    __rmul__ = __mul__

    def __truediv__(self, o):
        return _div(self, self.of(o))

    def __rtruediv__(self, o):
        return _div(self.of(o), self)

    def __neg__(self):
        return self.sat(-self.n)

    def __pos__(self):
        return self

    def __abs__(self):
        return self.sat(abs(self.n))

    # -- comparisons (on the values; a float is compared exactly, not rounded)

    def __eq__(self, o):
        return float(self) == float(o)

    def __ne__(self, o):
        return float(self) != float(o)

    def __lt__(self, o):
        return float(self) < float(o)

    def __le__(self, o):
        return float(self) <= float(o)

    def __gt__(self, o):
        return float(self) > float(o)

    def __ge__(self, o):
        return float(self) >= float(o)

    def __hash__(self):
        return hash(float(self))

    def sqrt(self):
        """sqrt rounded to the grid (what np.sqrt calls on an object array)."""
        return self.of(math.sqrt(max(float(self), 0.0)))


def _div(a, b):
    """a / b rounded to nearest (half away from zero) on a's grid; b = 0 saturates."""
    if b.n == 0:
        return a.sat(a.HI + 1 if a.n >= 0 else a.LO - 1)
    num, den = a.n << a.F, b.n
    q, r = divmod(abs(num), abs(den))
    if 2 * r >= abs(den):
        q += 1
    return a.sat(q if (num >= 0) == (den > 0) else -q)


_TYPES = {}


def fixed_type(i, f):
    """The Fixed subclass for Q(i.f): i integer bits including the sign, f >= 1
    fractional bits; range [-2^(i-1), 2^(i-1) - 2^-f]."""
    if (i, f) not in _TYPES:
        if i < 1 or f < 1:
            raise ValueError(f"Q({i}.{f}): expected i >= 1 and f >= 1")
        _TYPES[i, f] = type(f"Q{i}_{f}", (Fixed,), dict(
            __slots__=(), I=i, F=f, LO=-(1 << (i - 1 + f)), HI=(1 << (i - 1 + f)) - 1,
            HALF=1 << (f - 1), SCALE=float(1 << f)))
    return _TYPES[i, f]


def reset_saturations():
    """Zero the saturation counter; returns the count it had."""
    n, Fixed.saturations = Fixed.saturations, 0
    return n


def to_fixed(a, cls):
    """An object array of cls with a's shape, each entry rounded to the grid."""
    a = np.asarray(a, dtype=float)
    out = np.empty(a.shape, dtype=object)
    flat = out.reshape(-1)
    for k, x in enumerate(a.reshape(-1)):
        flat[k] = cls.of(x)
    return out


def to_float(a):
    """A float64 array of an object array of Fixed (or floats)."""
    return np.array([float(x) for x in np.asarray(a).reshape(-1)],
                    dtype=float).reshape(np.shape(a))


# ---------------------------------------------------------------- the emulated gradient

def _jit_disabled():
    import numba
    return bool(numba.config.DISABLE_JIT)


def _patch_sincos(cls):
    """sin/cos in float64, each rounded once to cls's grid (see the module docstring):
    the kernels call ``sincos`` as a global of fk.py / configuration.py."""
    from ..kernels import configuration, fk

    def sincos(x):
        t = float(x)
        return cls.of(math.cos(t)), cls.of(math.sin(t))

    fk.sincos = sincos
    configuration.sincos = sincos


def _one_state_fixed(mi, mf_fx, q, v, tau, cls):
    """The DMM FD-derivative kernel on one state, all in cls: (dq, dv, Minv) float64."""
    from ..kernels.aba_derivatives import aba_derivatives
    from ..kernels.workspace import W_WIDTH, workspace_rows
    nv = int(mi[0, 2])
    obj = dict(dtype=object)
    ws = np.empty((workspace_rows(mi), W_WIDTH), **obj)
    ws[:] = cls(0)           # no entry is ever a None, should the kernel read before write
    qdd = np.empty(nv, **obj)
    S3 = np.empty((3, nv, nv), **obj)
    S3[:] = cls(0)
    F = np.empty((mi[0, 0] + 1, nv, 6), **obj)
    F[:] = cls(0)
    dq, dv, dtau = (np.full((nv, nv), cls(0), **obj) for _ in range(3))
    aba_derivatives(mi, mf_fx, to_fixed(q, cls), to_fixed(v, cls), to_fixed(tau, cls),
                    None, ws, qdd, S3, F, dq, dv, dtau)
    return to_float(dq), to_float(dv), to_float(dtau)


def _batch_here(mi, mf, Q, V, U, i, f):
    """Emulated derivatives of a batch in this (JIT-disabled) process; also returns the
    number of saturations it caused."""
    if not _jit_disabled():
        raise RuntimeError("needs a process started with NUMBA_DISABLE_JIT=1")
    cls = fixed_type(i, f)
    _patch_sincos(cls)
    before = Fixed.saturations
    mf_fx = to_fixed(mf, cls)
    outs = [_one_state_fixed(mi, mf_fx, q, v, u, cls) for q, v, u in zip(Q, V, U)]
    dq, dv, dtau = (np.stack(o) for o in zip(*outs))
    return dq, dv, dtau, Fixed.saturations - before


class Emulator:
    """A pool of ``workers`` processes started with NUMBA_DISABLE_JIT=1 that compute
    :func:`aba_derivatives_fixed` batches, split by state. Use as a context manager."""

    def __init__(self, workers=1):
        ctx = mp.get_context("spawn")
        old = os.environ.get("NUMBA_DISABLE_JIT")
        os.environ["NUMBA_DISABLE_JIT"] = "1"     # inherited by the spawned children
        try:
            self.pool = ctx.Pool(workers)
        finally:
            if old is None:
                del os.environ["NUMBA_DISABLE_JIT"]
            else:
                os.environ["NUMBA_DISABLE_JIT"] = old
        self.workers = workers

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.pool.terminate()
        self.pool.join()

    def derivatives(self, model, Q, V, U, i, f):
        """(dqdd_dq, dqdd_dv, Minv) each (B, nv, nv) float64, and the saturation count,
        for states Q (B, nq), V, U (B, nv) in Q(i.f)."""
        Q, V, U = (np.atleast_2d(np.asarray(a, dtype=float)) for a in (Q, V, U))
        parts = np.array_split(np.arange(len(Q)), min(self.workers, len(Q)))
        jobs = [self.pool.apply_async(_batch_here, (model.mi, model.mf, Q[p], V[p], U[p],
                                                    i, f)) for p in parts]
        res = [j.get() for j in jobs]
        return (np.concatenate([r[0] for r in res]), np.concatenate([r[1] for r in res]),
                np.concatenate([r[2] for r in res]), sum(r[3] for r in res))


def aba_derivatives_fixed(model, q, v, tau, i, f, emulator=None):
    """dqdd/dq, dqdd/dv, M^-1 (float64, shapes as rbd.aba_derivatives) with every
    arithmetic result of the kernel in Q(i.f). Runs here if this process has Numba's JIT
    disabled, else in ``emulator`` (or a one-off single-worker one)."""
    single = np.ndim(q) == 1
    Q, V, U = (np.atleast_2d(np.asarray(a, dtype=float)) for a in (q, v, tau))
    if _jit_disabled():
        dq, dv, dm, _ = _batch_here(model.mi, model.mf, Q, V, U, i, f)
    elif emulator is not None:
        dq, dv, dm, _ = emulator.derivatives(model, Q, V, U, i, f)
    else:
        with Emulator(1) as em:
            dq, dv, dm, _ = em.derivatives(model, Q, V, U, i, f)
    return (dq[0], dv[0], dm[0]) if single else (dq, dv, dm)


# ---------------------------------------------------------------- the study

def quantize(a, i, f):
    """a rounded to nearest on the Q(i.f) grid and saturated (vectorised, float64);
    also returns how many entries saturated."""
    step = 2.0 ** -f
    lo, hi = -2.0 ** (i - 1), 2.0 ** (i - 1) - step
    r = np.round(np.asarray(a, dtype=float) / step) * step
    n = int(np.count_nonzero((r < lo) | (r > hi)))
    return np.clip(r, lo, hi), n


def io_only_derivatives(model, Q, V, U, i, f):
    """The contrast to the emulation: inputs and outputs on the Q(i.f) grid, everything
    in between float64. (dqdd_dq, dqdd_dv, Minv, saturations)."""
    import rbdiff as rbd
    ins = [quantize(a, i, f) for a in (Q, V, U)]
    outs = [quantize(d, i, f) for d in rbd.aba_derivatives(model, *(x for x, _ in ins))]
    return (*(x for x, _ in outs), sum(n for _, n in ins + outs))


def gradient_problem(base, numeric, emulator=None):
    """``base`` (a trajopt.Problem) whose dynamics_blocks use the gradient in
    ``numeric``: "float64", "float32", (i, f) fixed point emulated throughout, or
    ("io", i, f) fixed point at inputs and outputs only. Counts saturations in
    ``.saturations``."""
    import rbdiff as rbd
    from ..trajopt import Problem

    class P(Problem):
        saturations = 0

        def dynamics_blocks(self, q, v, us, second_order=False):
            if second_order:
                raise ValueError("the numeric-type study is first order (iLQR)")
            Q, V = q[:-1], v[:-1]
            if numeric == "float64":
                return super().dynamics_blocks(q, v, us)
            if numeric == "float32":
                f32 = [np.ascontiguousarray(a, dtype=np.float32) for a in (Q, V, us)]
                a_q, a_v, Minv = (np.asarray(a, dtype=float)
                                  for a in rbd.aba_derivatives(self.model, *f32))
            elif numeric[0] == "io":
                a_q, a_v, Minv, n = io_only_derivatives(self.model, Q, V, us, *numeric[1:])
                self.saturations += n
            else:
                a_q, a_v, Minv, n = emulator.derivatives(self.model, Q, V, us, *numeric)
                self.saturations += n
            dt = self.dt
            return dt * a_q, np.eye(self.nv) + dt * a_v, dt * Minv, None

    p = P(base.model, base.x0, base.T, base.dt, base.running, base.terminal,
          base.u_lower, base.u_upper)
    return p


def iiwa_reach(T=20, dt=0.02):
    """The reach of bench/trajopt.py (A) on the iiwa14: its end effector to a point
    ~25 cm away, from a bent pose at rest."""
    import rbdiff as rbd
    from .. import trajopt as to
    model = rbd.load_robot("iiwa14")
    q0 = np.array([0.0, 0.5, 0.0, -1.2, 0.0, 0.8, 0.0])
    x0 = np.concatenate([q0, np.zeros(model.nv)])
    frame = "iiwa_link_ee"
    target = rbd.frame_placement(model, q0, frame)[:3, 3] + [0.2, 0.1, -0.1]
    prob = to.Problem(model, x0, T, dt,
                      running=[to.FrameTranslation(frame, target, 1.0),
                               to.StateRegularization(x0, 1e-2),
                               to.ControlRegularization(1e-4)],
                      terminal=[to.FrameTranslation(frame, target, 1e3),
                                to.StateRegularization(x0, 1e-2)])
    return prob, frame, target


def _solve_one(base, numeric, emulator, us64, frame, target, max_iter, tol):
    import rbdiff as rbd
    from .. import trajopt as to
    p = gradient_problem(base, numeric, emulator)
    t0 = time.perf_counter()
    try:
        r = to.solve(p, method="ilqr", max_iter=max_iter, tol=tol)
    except (ValueError, FloatingPointError) as e:
        return dict(format=_name(numeric), converged=False, error=str(e),
                    saturations=p.saturations, wall_s=time.perf_counter() - t0)
    qT = r.xs[-1, :base.nq]
    ee = float(np.linalg.norm(rbd.frame_placement(base.model, qT, frame)[:3, 3] - target))
    du = (float(np.linalg.norm(r.us - us64) / np.linalg.norm(us64))
          if us64 is not None else 0.0)
    return dict(format=_name(numeric), converged=bool(r.converged),
                iterations=int(r.iterations), cost=float(r.cost), du_rel=du, ee_err_m=ee,
                saturations=int(p.saturations), wall_s=time.perf_counter() - t0,
                us=r.us, xs=r.xs)


def gradient_error(base, numeric, emulator, xs, us):
    """max over (dqdd/dq, dqdd/dv, M^-1) of ||D - D64||_F / ||D64||_F on the knots of
    the trajectory (xs, us): how wrong the gradient itself is, solver aside."""
    import rbdiff as rbd
    Q, V = xs[:-1, :base.nq], xs[:-1, base.nq:]
    ref = rbd.aba_derivatives(base.model, Q, V, us)
    if numeric == "float32":
        got = rbd.aba_derivatives(base.model, *(np.ascontiguousarray(a, dtype=np.float32)
                                                for a in (Q, V, us)))
    elif numeric[0] == "io":
        got = io_only_derivatives(base.model, Q, V, us, *numeric[1:])[:3]
    else:
        got = emulator.derivatives(base.model, Q, V, us, *numeric)[:3]
    return max(float(np.linalg.norm(np.asarray(g, dtype=float) - r) / np.linalg.norm(r))
               for g, r in zip(got, ref))


def _name(numeric):
    if isinstance(numeric, str):
        return numeric
    if numeric[0] == "io":
        return f"Q{numeric[1]}.{numeric[2]} I/O only"
    return f"Q{numeric[0]}.{numeric[1]}"


def run_study(formats, T=20, dt=0.02, max_iter=100, tol=1e-9, workers=2, log=print,
              io_only=False):
    """Rows (dicts) for float64, float32 and each (i, f) in ``formats`` (emulated
    throughout; with ``io_only`` then again rounded at inputs and outputs only);
    "solves" = converged within max_iter and final cost within 1% of float64's."""
    base, frame, target = iiwa_reach(T, dt)
    ref = _solve_one(base, "float64", None, None, frame, target, max_iter, tol)
    rows = [ref]
    log(_row_line(ref, ref))
    with Emulator(workers) as em:
        io = [("io", i, f) for i, f in formats] if io_only else []
        for numeric in ["float32"] + list(formats) + io:
            row = _solve_one(base, numeric, em, ref["us"], frame, target, max_iter, tol)
            row["grad_err"] = gradient_error(base, numeric, em, ref["xs"], ref["us"])
            rows.append(row)
            log(_row_line(row, ref))
    for r in rows:
        r["solves"] = bool(r.get("converged") and abs(r["cost"] - ref["cost"])
                           <= 0.01 * abs(ref["cost"]))
        r.pop("us", None)
        r.pop("xs", None)
    return rows


def _row_line(r, ref):
    return (f"{r['format']}: converged={r.get('converged')} it={r.get('iterations')} "
            f"cost={r.get('cost')} du={r.get('du_rel')} sat={r.get('saturations')} "
            f"grad_err={r.get('grad_err')} {r['wall_s']:.1f}s {r.get('error', '')}")


def markdown(rows):
    """The study's table."""
    ref = rows[0]["cost"]
    out = ["| format | gradient rel. error | solves | converged | iterations | final cost "
           "| cost / float64 - 1 | rel. dist. of controls to float64 "
           "| end-effector error [mm] | saturations | wall [s] |", "|" + "---|" * 11]
    for r in rows:
        if "cost" not in r:
            out.append(f"| {r['format']} | {r.get('grad_err', 0):.1e} | no | no (error: "
                       f"{r.get('error')}) | | | | | | {r['saturations']} | "
                       f"{r['wall_s']:.0f} |")
            continue
        out.append(f"| {r['format']} | {r.get('grad_err', 0):.1e} | "
                   f"{'yes' if r['solves'] else 'no'} | "
                   f"{'yes' if r['converged'] else 'no'} | {r['iterations']} | "
                   f"{r['cost']:.6g} | {r['cost'] / ref - 1:+.2e} | {r['du_rel']:.2e} | "
                   f"{1e3 * r['ee_err_m']:.2f} | {r['saturations']} | {r['wall_s']:.0f} |")
    return "\n".join(out)


QUICK = [(16, 16), (12, 5), (8, 8)]
FULL = [(i, f) for i in (8, 10, 12, 14, 16, 20) for f in (3, 5, 8, 10, 12, 14, 16, 20)]


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m rbdiff.bench.fixed_point",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help=f"formats {QUICK}, T = 10")
    ap.add_argument("--formats", help="i.f list, e.g. 16.16,12.5")
    ap.add_argument("--T", type=int, default=None)
    ap.add_argument("--dt", type=float, default=0.02)
    ap.add_argument("--max-iter", type=int, default=100)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--io-only", action="store_true",
                    help="also each format rounded at the gradient's inputs and outputs "
                         "only (the contrast to rounding every intermediate)")
    ap.add_argument("--out", help="folder for fixed_point.md and fixed_point.json")
    a = ap.parse_args(argv)
    formats = ([tuple(int(x) for x in s.split(".")) for s in a.formats.split(",")]
               if a.formats else QUICK if a.quick else FULL)
    T = a.T or (10 if a.quick else 20)
    log = lambda s: print(s, file=sys.stderr, flush=True)   # noqa: E731
    t0 = time.perf_counter()
    rows = run_study(formats, T=T, dt=a.dt, max_iter=a.max_iter, workers=a.workers, log=log,
                     io_only=a.io_only)
    md = (f"iiwa14 reach, T = {T}, dt = {a.dt}, iLQR (max_iter {a.max_iter}); gradient "
          "in the format shown, rollouts float64. Solves = converged and final cost "
          "within 1% of float64's.\n\n" + markdown(rows) + "\n")
    print(md)
    log(f"total {time.perf_counter() - t0:.0f} s")
    if a.out:
        os.makedirs(a.out, exist_ok=True)
        with open(os.path.join(a.out, "fixed_point.md"), "w") as fh:
            fh.write(md)
        with open(os.path.join(a.out, "fixed_point.json"), "w") as fh:
            json.dump(dict(T=T, dt=a.dt, max_iter=a.max_iter, rows=rows), fh, indent=1)


if __name__ == "__main__":
    main()
