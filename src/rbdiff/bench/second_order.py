"""Bench section ``second_order``: second-order derivatives of inverse and forward
dynamics (singh-2023 Fig. 7 and Table III, Fig. 10 for robots).

Scaling on serial chains and binary trees: ``rnea_second_order_derivatives`` by IDSVA-SO
against its numerical baselines, Finite-Diff-1 (``finite_difference_rnea``: second
differences of RNEA, O(N^3)), Finite-Diff-2 (``finite_difference``: central differences
of the first-order IDSVA) and the complex step (``complex_step``, through the first-order
IDSVA on complex128), plus ``aba_second_order_derivatives`` by FDSVA-SO and the
first-order IDSVA for the IDSVA-FO row; log-log slopes next to singh-2023 Table III. The
baselines are capped in N (``cfg.so_fd1_max``, ``cfg.so_numeric_max``). FDSVA-SO also
runs with its inner term forced to DTM and to IDFOZA (singh-2023 Fig. 14): their ratio,
the measured crossover and the route ``inner="auto"`` takes.

Per robot: rbdiff's IDSVA-SO, FDSVA-SO and first-order times and, when the optional C++
anchor (``bench.anchor``: Pinocchio's C++ ComputeRNEASecondOrderDerivatives,
computeRNEADerivatives, computeABADerivatives) can run, its times and the ratios.
"""

from functools import partial

import numpy as np

import rbdiff as rbd
from rbdiff import derivatives
from rbdiff import second_order as so
from rbdiff.bench import anchor
from rbdiff.bench import common as cm
from rbdiff.bench import models as bm
from rbdiff.bench import report as rp
from rbdiff.kernels.idfoza import idfoza_beats_dtm

# (key, label, Table III row or None)
METHODS = (
    ("idsva_so", "IDSVA-SO (rnea_second_order_derivatives)", "IDSVA-SO"),
    ("fd1", "Finite-Diff-1 (finite_difference_rnea)", "Finite-Diff-1"),
    ("fd2", "Finite-Diff-2 (finite_difference)", "Finite-Diff-2"),
    ("complex_step", "complex step (complex_step)", "RNEA SO Bi-complex"),
    ("fdsva_so", "FDSVA-SO (aba_second_order_derivatives)", None),
    ("idsva_fo", "IDSVA-FO (rnea_derivatives)", "IDSVA-FO"),
    ("fdsva_so_dtm", "FDSVA-SO, inner=\"dtm\"", None),
    ("fdsva_so_idfoza", "FDSVA-SO, inner=\"idfoza\"", None),
)
LABEL = {k: lab for k, lab, _ in METHODS}
# singh-2023 Table III: least-squares slope of log t vs log N (Fortran 90, i5-12400),
# (serial chains, binary trees); the paper's intercepts are left out (units not stated)
TABLE_III = {
    "RNEA SO Bi-complex": (2.98, 2.98),
    "RNEA SO Chain-Rule": (3.05, 3.17),
    "Finite-Diff-1": (3.02, 3.03),
    "Finite-Diff-2": (2.38, 2.15),
    "IDSVA-SO": (3.08, 1.45),
    "IDSVA-FO": (1.76, 1.03),
}
PAPER_NOTE = {
    "complex_step": "bi-complex step through RNEA in the paper; here a complex step "
                    "through the first-order IDSVA",
    "fdsva_so": "not in Table III; routes chosen by inner=\"auto\", outer=\"auto\"",
    "fdsva_so_dtm": "not in Table III (singh-2023 Fig. 14: DTM inner term, O(N^4) on a "
                    "chain)",
    "fdsva_so_idfoza": "not in Table III (singh-2023 Fig. 14: IDFOZA inner term, O(N^3) "
                       "on a chain)",
}


def total(cfg):
    return len(cfg.families) * len(cfg.so_sizes) + len(cfg.so_robots)


def calls(model, q, v, a, fd1=True, numeric=True):
    tau = rbd.rnea(model, q, v, a)
    r = so.rnea_second_order_derivatives
    out = {"idsva_so": partial(r, model, q, v, a),
           "fdsva_so": partial(so.aba_second_order_derivatives, model, q, v, tau),
           "idsva_fo": partial(derivatives.rnea_derivatives, model, q, v, a),
           "fdsva_so_dtm": partial(so.aba_second_order_derivatives, model, q, v, tau,
                                   inner="dtm"),
           "fdsva_so_idfoza": partial(so.aba_second_order_derivatives, model, q, v, tau,
                                      inner="idfoza")}
    if fd1:
        out["fd1"] = partial(r, model, q, v, a, method="finite_difference_rnea")
    if numeric:
        out["fd2"] = partial(r, model, q, v, a, method="finite_difference")
        out["complex_step"] = partial(r, model, q, v, a, method="complex_step")
    return out


# ------------------------------------------------------------------ C++ anchor

class _NotCached(Exception):
    pass


class _NoCompile:
    """Stands in for ``subprocess`` in bench.anchor while asking whether its binary is
    already built: anchor.build returns the cached path without running anything, and
    reaches subprocess.run only to compile."""

    def run(self, *args, **kwargs):
        raise _NotCached


def anchor_cached():
    """True when bench.anchor's binary for the current source and flags is built (asks
    anchor.build itself, with compiling disabled, so the cache key stays anchor's)."""
    if anchor.available() is not None:
        return False
    saved = anchor.subprocess
    anchor.subprocess = _NoCompile()
    try:
        anchor.build(verbose=False)
        return True
    except _NotCached:
        return False
    except Exception:                   # noqa: BLE001 (anything else: not usable)
        return False
    finally:
        anchor.subprocess = saved


def anchor_status(cfg):
    """(use the anchor?, reason if not). cfg.cpp: True builds it if needed (~4 min once),
    False never uses it, None: the full mode builds it, --quick / --tiny use it only
    when it is already built."""
    why = anchor.available()
    if why:
        return False, why
    if cfg.cpp is False:
        return False, "disabled (--no-cpp)"
    if cfg.cpp is None and cfg.mode != "full" and not anchor_cached():
        return False, ("not built yet, and --quick / --tiny do not compile it: pass --cpp "
                       "(about 4 minutes, once; cached in ~/.cache/rbdiff)")
    return True, None


# ------------------------------------------------------------------ run

def run(cfg, bar, out):
    rng = np.random.default_rng(cfg.seed + 12)
    res = dict(sizes=list(cfg.so_sizes), fit_min_n=cfg.so_fit_min_n, fd1_max=cfg.so_fd1_max,
               numeric_max=cfg.so_numeric_max, points=[], slopes=[], robots=[], errors=[],
               inner_crossover={})
    for family in cfg.families:
        for n in cfg.so_sizes:
            model = bm.synthetic(family, n)
            q, v, a = cm.state(model, rng)
            t = cm.timed(calls(model, q, v, a, fd1=n <= cfg.so_fd1_max,
                               numeric=n <= cfg.so_numeric_max), cfg, res["errors"],
                         dict(family=family, n=n))
            p = dict(family=family, n=n, nv=model.nv)
            for k, _, _ in METHODS:
                p[k] = t[k]["median"] if k in t else None
                p[f"{k}_rounds"] = t[k]["rounds"] if k in t else None
            for k in ("fd1", "fd2", "complex_step"):
                p[f"{k}_over_idsva_so"] = rp.ratio(p[k], p["idsva_so"])
            p["idfoza_over_dtm"] = rp.ratio(p["fdsva_so_idfoza"], p["fdsva_so_dtm"])
            p["inner_auto"] = "idfoza" if idfoza_beats_dtm(model.mi) else "dtm"
            res["points"].append(p)
            bar.step(f"second order {family} N={n}")
        pts = [p for p in res["points"] if p["family"] == family]
        ns = [p["n"] for p in pts]
        res["inner_crossover"][family] = cm.crossover(
            ns, [p["fdsva_so_dtm"] for p in pts], [p["fdsva_so_idfoza"] for p in pts])
        for k, _, row in METHODS:
            s, s_all = cm.slope_pair(ns, [p[k] for p in pts], cfg.so_fit_min_n)
            col = 0 if family == "serial_chain" else 1
            res["slopes"].append(dict(
                family=family, method=k, slope=s, slope_all=s_all, table_iii_row=row,
                paper=TABLE_III[row][col] if row in TABLE_III else None,
                n_points=sum(1 for p in pts if p[k])))
    use, why = anchor_status(cfg)
    res["anchor"] = dict(used=use, reason=why)
    for robot in cfg.so_robots:
        try:
            model, pm = bm.robot_pair(robot)
        except (ImportError, OSError, KeyError, ValueError) as e:
            res["robots"].append(dict(robot=robot, skipped=f"{type(e).__name__}: {e}"))
            bar.step(f"second order {robot}: skipped")
            continue
        q, v, a = cm.state(model, rng)
        tau = rbd.rnea(model, q, v, a)
        funcs = {"idsva_so": partial(so.rnea_second_order_derivatives, model, q, v, a),
                 "fdsva_so": partial(so.aba_second_order_derivatives, model, q, v, tau),
                 "idsva_fo": partial(derivatives.rnea_derivatives, model, q, v, a),
                 "fdsva_fo": partial(derivatives.aba_derivatives, model, q, v, tau)}
        t = cm.timed(funcs, cfg, res["errors"], dict(family=robot, n=model.nv))
        r = dict(robot=robot, label=bm.robot_label(robot), nq=model.nq, nv=model.nv,
                 **{k: (t[k]["median"] if k in t else None) for k in funcs})
        if use and pm is not None:
            try:
                c = anchor.run(pm, seed=cfg.seed, repeats=cfg.repeats)
                r["cpp_so"] = c["rnea_second_order_derivatives"]
                r["cpp_fo"] = c["rnea_derivatives"]
                r["cpp_aba_fo"] = c["aba_derivatives"]
            except Exception as e:      # noqa: BLE001
                r["cpp_error"] = f"{type(e).__name__}: {e}"
        r["so_ratio"] = rp.ratio(r["idsva_so"], r.get("cpp_so"))
        r["fo_ratio"] = rp.ratio(r["idsva_fo"], r.get("cpp_fo"))
        r["aba_fo_ratio"] = rp.ratio(r["fdsva_fo"], r.get("cpp_aba_fo"))
        res["robots"].append(r)
        bar.step(f"second order {robot}")
    return res


# ------------------------------------------------------------------ figure, report

def figures(sec, outdir):
    if not sec["points"]:
        return {}
    panels = []
    styles = ("o-", "s--", "^--", "v:", "d-", "x-", "<:", ">:")
    for family in dict.fromkeys(p["family"] for p in sec["points"]):
        pts = sorted((p for p in sec["points"] if p["family"] == family), key=lambda p: p["n"])
        ns = [p["n"] for p in pts]
        fits = {s["method"]: s["slope"] for s in sec["slopes"] if s["family"] == family}
        curves = [(LABEL[k] + (f", slope {fits[k]:.2f}" if fits.get(k) is not None else ""),
                   ns, [p[k] * 1e6 if p[k] else None for p in pts], st)
                  for (k, _, _), st in zip(METHODS, styles)]
        panels.append(dict(title=f"{cm.family_label(family)}", xlabel="number of bodies N",
                           ylabel="time per call [us]", curves=curves))
    name = "second_order_scaling.png"
    rp.plot_panels(outdir / name, panels, ncols=2,
                   title="Second-order derivatives of ID: IDSVA-SO vs Finite-Diff-1, "
                         "Finite-Diff-2 and complex step (singh-2023 Fig. 7), log-log")
    return {"second_order": name}


def report(sec, files, cfg):
    lines = ["## 5. Second-order derivatives (singh-2023 Fig. 7, Table III)", "",
             f"Serial chains and binary trees, N in {sec['sizes']} (Finite-Diff-1 up to N = "
             f"{sec['fd1_max']}, Finite-Diff-2 and complex step up to N = "
             f"{sec['numeric_max']}: they cost O(N^3) and more), one random state per N, "
             "the calls of one N timed interleaved (median per call; calls over "
             f"{cm.SLOW * 1e3:.0f} ms are timed one call a round, at least 3 rounds). "
             "Methods: " + "; ".join(f"**{lab}**" for _, lab, _ in METHODS) + ".", ""]
    lines += [f"### Fitted log-log slopes (N >= {sec['fit_min_n']}) next to singh-2023 "
              "Table III", "",
              "singh-2023 Table III fits log t = a log N + b to Fortran 90 timings "
              "(i5-12400, N = 2..110); its slopes a are quoted. Rows of Table III without "
              f"an rbdiff counterpart: RNEA SO Chain-Rule (a = "
              f"{TABLE_III['RNEA SO Chain-Rule'][0]} chains, "
              f"{TABLE_III['RNEA SO Chain-Rule'][1]} trees). Every call returns new "
              "(nv, nv, nv) tensors: from nv ~ 100 on (4 nv^3 doubles > 32 MB, glibc's "
              "largest mmap threshold) their pages are mapped afresh on each call, which "
              "steepens the last points (binary tree N = 110, IDSVA-SO: 4.6 ms, 0.92 ms "
              "with MALLOC_MMAP_THRESHOLD_=2000000000 in the environment).", ""]
    rows = []
    for s in sec["slopes"]:
        paper = "-" if s["paper"] is None else f"{s['paper']:.2f} ({s['table_iii_row']})"
        if s["method"] in PAPER_NOTE:
            paper += f"; {PAPER_NOTE[s['method']]}"
        rows.append([cm.family_label(s["family"]), LABEL[s["method"]], rp.fmt_slope(s["slope"]),
                     rp.fmt_slope(s["slope_all"]), s["n_points"], paper])
    lines += [rp.md_table(["family", "method", "slope", "slope (all N)", "points",
                           "singh-2023 Table III"], rows, "llrrrl"), ""]
    for family in dict.fromkeys(p["family"] for p in sec["points"]):
        lines += [f"### {cm.family_label(family)}: time per call, us", ""]
        rows = [[p["n"], *(rp.fmt_time(p[k]) for k, _, _ in METHODS),
                 rp.fmt_ratio(p["fd1_over_idsva_so"]), rp.fmt_ratio(p["fd2_over_idsva_so"]),
                 rp.fmt_ratio(p["complex_step_over_idsva_so"]),
                 rp.fmt_ratio(p["idfoza_over_dtm"]), p["inner_auto"]]
                for p in sec["points"] if p["family"] == family]
        lines += [rp.md_table(["N", "IDSVA-SO", "Finite-Diff-1", "Finite-Diff-2",
                               "complex step", "FDSVA-SO", "IDSVA-FO", "FDSVA-SO dtm",
                               "FDSVA-SO idfoza", "FD-1 / IDSVA-SO", "FD-2 / IDSVA-SO",
                               "CS / IDSVA-SO", "idfoza / dtm", "inner=\"auto\""], rows), ""]
        c = sec["inner_crossover"][family]
        lines += [f"FDSVA-SO inner term, DTM vs IDFOZA (singh-2023 Fig. 14): "
                  f"{cm.crossover_text(c, 'IDFOZA')}.", ""]
    if "second_order" in files:
        lines += [f"![second-order scaling]({files['second_order']})", ""]
    an = sec["anchor"]
    lines += ["### Robots: rbdiff vs Pinocchio's C++ (singh-2023 Fig. 10)", "",
              "rbdiff is called from Python (about 1 us of call overhead included); the "
              "anchor times Pinocchio's C++ ComputeRNEASecondOrderDerivatives, "
              "computeRNEADerivatives and computeABADerivatives in a C++ loop on the same "
              "Pinocchio model (-O3 -march=native, its own random state; bench/anchor.py). "
              "ratio = rbdiff / C++.", ""]
    if not an["used"]:
        lines += [f"> C++ anchor not run: {an['reason']}", ""]
    rows = []
    for r in sec["robots"]:
        if "skipped" in r:
            rows.append([r["robot"], "-", f"skipped: {r['skipped']}"] + ["-"] * 10)
            continue
        rows.append([r["label"], r["nv"], rp.fmt_time(r["idsva_so"]),
                     rp.fmt_time(r.get("cpp_so")), rp.fmt_ratio(r["so_ratio"]),
                     rp.fmt_time(r["fdsva_so"]), rp.fmt_time(r["idsva_fo"]),
                     rp.fmt_time(r.get("cpp_fo")), rp.fmt_ratio(r["fo_ratio"]),
                     rp.fmt_time(r["fdsva_fo"]), rp.fmt_time(r.get("cpp_aba_fo")),
                     rp.fmt_ratio(r["aba_fo_ratio"]), r.get("cpp_error", "")])
    lines += [rp.md_table(["robot", "nv", "IDSVA-SO us", "C++ SO us", "SO ratio",
                           "FDSVA-SO us", "IDSVA us", "C++ ID derivs us", "ratio",
                           "FDSVA us", "C++ FD derivs us", "ratio", "note"], rows,
                          "lrrrrrrrrrrrl"), ""]
    for e in sec["errors"]:
        lines.append(f"> {e['name']} failed on {e['family']} N={e['n']}: {e['error']}")
    return lines + [""]
