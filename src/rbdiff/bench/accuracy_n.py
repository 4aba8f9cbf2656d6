"""Bench section ``accuracy_n``: accuracy of every derivative method against the complex
step as the number of bodies grows (singh-2023 Fig. 12 and 20; singh-2022 sec. VI-B).

Per serial chain / binary tree of N bodies, one random state; the reference is the same
function with ``method="complex_step"`` (exact to rounding). Compared, by singh-2023
eqs. 40-43 (``rbdiff.metrics``, pooled over the returned matrices / tensors):

- first order, ``rnea_derivatives`` and ``aba_derivatives``: IDSVA, chain rule, central
  finite differences;
- second order, ``rnea_second_order_derivatives``: IDSVA-SO, Finite-Diff-2 (central
  differences of the first-order IDSVA), Finite-Diff-1 (second differences of RNEA,
  N <= cfg.acc_fd1_max);
- second order, ``aba_second_order_derivatives``: FDSVA-SO, Finite-Diff-2.

Entries of a reference that are zero to rounding (|ref_k| <= ZERO_TOL max|ref|, per
tensor) count with relative error 0, like the paper's structural zeros
(``bench.common.errors``); their absolute error stays in MAE.
"""

import numpy as np

import rbdiff as rbd
from rbdiff import derivatives
from rbdiff import second_order as so
from rbdiff.bench import common as cm
from rbdiff.bench import models as bm
from rbdiff.bench import report as rp

# (group key, title, function, argument 4 is "a" or "tau", [(method key, label, method)])
GROUPS = (
    ("rnea_fo", "rnea_derivatives (first order ID)", derivatives.rnea_derivatives, "a",
     (("idsva", "IDSVA", "idsva"), ("chain_rule", "chain rule", "chain_rule"),
      ("fd", "finite differences", "finite_difference"))),
    ("aba_fo", "aba_derivatives (first order FD)", derivatives.aba_derivatives, "tau",
     (("idsva", "FDSVA (IDSVA)", "idsva"), ("chain_rule", "FDCR (chain rule)", "chain_rule"),
      ("fd", "finite differences", "finite_difference"))),
    ("rnea_so", "rnea_second_order_derivatives (second order ID)",
     so.rnea_second_order_derivatives, "a",
     (("idsva", "IDSVA-SO", "idsva"), ("fd2", "Finite-Diff-2", "finite_difference"),
      ("fd1", "Finite-Diff-1", "finite_difference_rnea"))),
    ("aba_so", "aba_second_order_derivatives (second order FD)",
     so.aba_second_order_derivatives, "tau",
     (("idsva", "FDSVA-SO", "idsva"), ("fd2", "Finite-Diff-2", "finite_difference"))),
)
TITLE = {g[0]: g[1] for g in GROUPS}
METHOD_LABEL = {(g[0], k): lab for g in GROUPS for k, lab, _ in g[4]}
PAPER_NOTES = (
    "singh-2023 Fig. 12 (ID, second order, vs bi-complex step, N = 2..110): IDSVA-SO and "
    "the SO chain rule have similar errors; Finite-Diff-2 is much more accurate than "
    "Finite-Diff-1; binary trees have lower RMSRE than serial chains (their tensors are "
    "sparse).",
    "singh-2023 Fig. 20 (FD, second order): Finite-Diff-1 is the least accurate; FDSVA-SO "
    "accumulates the errors of its steps and stays bounded; trees again lower than chains.",
    "singh-2022 (first-order FD derivatives vs complex step, N = 100 serial chain): RMS "
    "relative error about 1e-13 for ABACR and about 1e-12 for FDSVA and FDCR.",
)


def total(cfg):
    return len(cfg.families) * len(cfg.acc_sizes)


def run(cfg, bar, out):
    rng = np.random.default_rng(cfg.seed + 13)
    res = dict(sizes=list(cfg.acc_sizes), fd1_max=cfg.acc_fd1_max, zero_tol=cm.ZERO_TOL,
               points=[], errors=[])
    for family in cfg.families:
        for n in cfg.acc_sizes:
            model = bm.synthetic(family, n)
            q, v, a = cm.state(model, rng)
            tau = rbd.rnea(model, q, v, a)
            p = dict(family=family, n=n, nv=model.nv)
            for key, _, fn, last, methods in GROUPS:
                u = a if last == "a" else tau
                try:
                    ref = fn(model, q, v, u, method="complex_step")
                except Exception as e:  # noqa: BLE001
                    res["errors"].append(dict(family=family, n=n, name=f"{key} complex_step",
                                              error=f"{type(e).__name__}: {e}"))
                    continue
                p[key] = {}
                for mk, _, method in methods:
                    if mk == "fd1" and n > cfg.acc_fd1_max:
                        continue
                    try:
                        x = fn(model, q, v, u, method=method)
                    except Exception as e:  # noqa: BLE001
                        res["errors"].append(dict(family=family, n=n, name=f"{key} {method}",
                                                  error=f"{type(e).__name__}: {e}"))
                        continue
                    e = cm.errors(x, ref)
                    p[key][mk] = {k: cm.finite(val) for k, val in e.items()}
            res["points"].append(p)
            bar.step(f"accuracy {family} N={n}")
    return res


def _series(sec, family, key, mk, metric):
    pts = sorted((p for p in sec["points"] if p["family"] == family), key=lambda p: p["n"])
    return [p["n"] for p in pts], [p.get(key, {}).get(mk, {}).get(metric) for p in pts]


def figures(sec, outdir):
    if not sec["points"]:
        return {}
    families = list(dict.fromkeys(p["family"] for p in sec["points"]))
    panels = []
    for key, title, _, _, methods in GROUPS:
        for family in families:
            curves = []
            for j, (mk, lab, _) in enumerate(methods):
                ns, ys = _series(sec, family, key, mk, "rmsre")
                curves.append((f"{lab} RMSRE", ns, ys, "o-", j))
                ns, ys = _series(sec, family, key, mk, "mae")
                curves.append((f"{lab} MAE", ns, ys, "x:", j))
            panels.append(dict(title=f"{title}, {cm.family_label(family)}",
                               xlabel="number of bodies N",
                               ylabel="error vs complex step", curves=curves))
    name = "accuracy_vs_n.png"
    rp.plot_panels(outdir / name, panels, ncols=len(families),
                   title="Error against the complex step vs N: RMSRE (solid, eq. 43) and "
                         "MAE (dotted, eq. 40) (singh-2023 Fig. 12 and 20)")
    return {"accuracy_n": name}


def report(sec, files, cfg):
    lines = ["## 6. Accuracy vs N: every method against the complex step "
             "(singh-2023 Fig. 12 and 20)", "",
             f"Serial chains and binary trees, N in {sec['sizes']}, one random state per N; "
             "reference: the same function with method=\"complex_step\". RMSRE (eq. 43) "
             "and MAE (eq. 40) pooled over all returned matrices / tensors "
             "(rbdiff.metrics). Entries whose reference is zero to rounding "
             f"(|ref| <= {sec['zero_tol']:.0e} max|ref| of their tensor; the complex step "
             "and the analytical kernels leave different residue, 1e-17 or exactly 0, "
             "there) count with relative error 0, as the paper's structural zeros do; "
             "their absolute error is in MAE. Finite-Diff-1 up to N = "
             f"{sec['fd1_max']}.", ""]
    families = list(dict.fromkeys(p["family"] for p in sec["points"]))
    for key, title, _, _, methods in GROUPS:
        head = ["N"]
        for family in families:
            for mk, lab, _ in methods:
                head.append(f"{lab} ({'chain' if family == 'serial_chain' else 'tree'})")
        lines += [f"### {title}: RMSRE / MAE", ""]
        by_n = {}
        for p in sec["points"]:
            by_n.setdefault(p["n"], {})[p["family"]] = p
        rows = []
        for n in sorted(by_n):
            cells = [n]
            for family in families:
                p = by_n[n].get(family, {})
                for mk, _, _ in methods:
                    e = p.get(key, {}).get(mk)
                    cells.append("-" if e is None else
                                 f"{rp.fmt_sci(e['rmsre'])} / {rp.fmt_sci(e['mae'])}")
            rows.append(cells)
        lines += [rp.md_table(head, rows), ""]
    lines += ["Papers:", ""] + [f"- {t}" for t in PAPER_NOTES] + [""]
    for e in sec["errors"]:
        lines.append(f"> {e['name']} failed on {e['family']} N={e['n']}: {e['error']}")
    if "accuracy_n" in files:
        lines += ["", f"![accuracy vs N]({files['accuracy_n']})", ""]
    return lines + [""]
