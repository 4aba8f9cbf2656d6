"""Bench section ``first_order``: the first-order derivative methods against each other
on serial chains and binary trees (singh-2022 Fig. 4 and 7, RAL Table III).

Per N (the scaling sizes), interleaved: ``rnea_derivatives`` by IDSVA and by the chain
rule (RNEACR in world coordinates, as Pinocchio), ``aba_derivatives`` by IDSVA with the
dense product (DMM, FDSVA-DMM) and with ABA-Zero columns (AZA, FDSVA-AZA), and by the
chain rule with DMM (FDCR). Reported: times, log-log slopes next to the papers', the
ratios chain rule / IDSVA and AZA / DMM, the measured DMM/AZA crossover N and the
library's own choice (``product="auto"``).
"""

from functools import partial

import numpy as np

import rbdiff as rbd
from rbdiff import derivatives
from rbdiff.bench import common as cm
from rbdiff.bench import models as bm
from rbdiff.bench import report as rp
from rbdiff.kernels.aza import AZA, AZA_MIN_BRANCH
from rbdiff.model.layout import MI_NV, MI_NVSUB, MI_PARENT

# (key, label, function, keyword arguments)
METHODS = (
    ("rnea_idsva", "rnea_derivatives IDSVA", "rnea", dict(method="idsva")),
    ("rnea_chain_rule", "rnea_derivatives chain rule", "rnea", dict(method="chain_rule")),
    ("aba_dmm", "aba_derivatives IDSVA + DMM", "aba", dict(method="idsva", product="dmm")),
    ("aba_aza", "aba_derivatives IDSVA + AZA", "aba", dict(method="idsva", product="aza")),
    ("aba_chain_rule", "aba_derivatives chain rule + DMM (FDCR)", "aba",
     dict(method="chain_rule", product="dmm")),
)
LABEL = {k: lab for k, lab, _, _ in METHODS}
# the papers' orders / slopes, per (family, method)
PAPER = {
    ("serial_chain", "rnea_idsva"): "1.76 (IDSVA-FO, singh-2023 Table III); O(Nd), d = N",
    ("binary_tree", "rnea_idsva"): "1.03 (IDSVA-FO, singh-2023 Table III); O(Nd), d = log2 N",
    ("serial_chain", "rnea_chain_rule"): "O(Nd), d = N (carpentier-mansard-2018)",
    ("binary_tree", "rnea_chain_rule"): "O(Nd), d = log2 N (carpentier-mansard-2018)",
    ("serial_chain", "aba_dmm"): "3 for large N (DMM product O(N^3), singh-2022)",
    ("binary_tree", "aba_dmm"): "3 for large N (DMM product O(N^3), singh-2022)",
    ("serial_chain", "aba_aza"): "2 (AZA O(N^2), singh-2022)",
    ("binary_tree", "aba_aza"): "2 (AZA O(N^2), singh-2022)",
    ("serial_chain", "aba_chain_rule"): "3 for large N (FDCR with DMM, singh-2022)",
    ("binary_tree", "aba_chain_rule"): "3 for large N (FDCR with DMM, singh-2022)",
}
PAPER_NOTES = (
    "singh-2022 (arXiv) Fig. 4: IDSVA vs RNEACR in body coordinates, Fortran, serial "
    "chains: 15x faster at N = 100; Fig. 5 (Pinocchio, C++): IDSVA 1.6x faster than "
    "RNEACR for the 36-dof ATLAS; Fig. 7 / conclusions: FDSVA 3x and 7x faster than FDCR "
    "at N = 10 and 100 (Fortran).",
    "singh-2022 (RAL, multi-DoF): IDSVA up to 1.4x faster than Pinocchio's ID derivatives "
    "for the 50-dof Talos (gcc-9.0); Table III, N above which AZA beats DMM in Pinocchio: "
    "gcc-9.0 50 (AVX off) / 450 (AVX on), clang-10 80 / 350.",
    "rbdiff's chain rule is in world coordinates, as Pinocchio's (the RAL paper attributes "
    "the smaller C++ speed-up to that), not the body-coordinate RNEACR of the Fortran "
    "figures.",
)


def total(cfg):
    return len(cfg.families) * len(cfg.sizes)


def mean_branch(model):
    """The mean branch length L = sum_j branch(j) / nv in dofs (kernels/aza.py: the
    quantity product="auto" compares with AZA_MIN_BRANCH; L = nv on a serial chain)."""
    mi = model.mi
    total_ = 0
    for i in range(1, model.njoints):
        depth, a = 0, i
        while a > 0:
            depth += int(mi[a, MI_NV])
            a = int(mi[a, MI_PARENT])
        total_ += int(mi[i, MI_NV]) * (depth + int(mi[i, MI_NVSUB]) - int(mi[i, MI_NV]))
    return total_ / model.nv


def calls(model, q, v, a):
    tau = rbd.rnea(model, q, v, a)
    f = {"rnea": (derivatives.rnea_derivatives, a), "aba": (derivatives.aba_derivatives, tau)}
    return {k: partial(f[fn][0], model, q, v, f[fn][1], **kw) for k, _, fn, kw in METHODS}


def run(cfg, bar, out):
    rng = np.random.default_rng(cfg.seed + 11)
    res = dict(sizes=list(cfg.sizes), fit_min_n=cfg.fit_min_n, aza_min_branch=AZA_MIN_BRANCH,
               points=[], slopes=[], crossover={}, errors=[])
    for family in cfg.families:
        for n in cfg.sizes:
            model = bm.synthetic(family, n)
            q, v, a = cm.state(model, rng)
            t = cm.timed(calls(model, q, v, a), cfg, res["errors"],
                         dict(family=family, n=n))
            p = dict(family=family, n=n, nv=model.nv, mean_branch=mean_branch(model),
                     auto="aza" if derivatives._product_code(model, "auto") == AZA else "dmm")
            for k, _, _, _ in METHODS:
                p[k] = t[k]["median"] if k in t else None
                p[f"{k}_min"] = t[k]["min"] if k in t else None
            p["chain_rule_over_idsva"] = rp.ratio(p["rnea_chain_rule"], p["rnea_idsva"])
            p["aza_over_dmm"] = rp.ratio(p["aba_aza"], p["aba_dmm"])
            p["fdcr_over_fdsva"] = rp.ratio(p["aba_chain_rule"], p["aba_dmm"])
            res["points"].append(p)
            bar.step(f"first order {family} N={n}")
        pts = [p for p in res["points"] if p["family"] == family]
        ns = [p["n"] for p in pts]
        for k, _, _, _ in METHODS:
            s, s_all = cm.slope_pair(ns, [p[k] for p in pts], cfg.fit_min_n)
            res["slopes"].append(dict(family=family, method=k, slope=s, slope_all=s_all,
                                      paper=PAPER.get((family, k), "-")))
        res["crossover"][family] = cm.crossover(ns, [p["aba_dmm"] for p in pts],
                                                [p["aba_aza"] for p in pts])
    return res


def figures(sec, outdir):
    if not sec["points"]:
        return {}
    families = list(dict.fromkeys(p["family"] for p in sec["points"]))
    panels = []
    for family in families:
        pts = sorted((p for p in sec["points"] if p["family"] == family), key=lambda p: p["n"])
        ns = [p["n"] for p in pts]
        fits = {s["method"]: s["slope"] for s in sec["slopes"] if s["family"] == family}
        curves = [(LABEL[k] + (f", slope {fits[k]:.2f}" if fits.get(k) is not None else ""),
                   ns, [p[k] * 1e6 if p[k] else None for p in pts], style)
                  for (k, _, _, _), style in zip(METHODS, ("o-", "s--", "^-", "v-", "d:"))]
        c = sec["crossover"].get(family, {})
        vlines = [(f"measured crossover N ~ {c['n']:.0f}", c["n"])] \
            if c.get("kind") == "between" else []
        panels.append(dict(title=f"{cm.family_label(family)}: time per call",
                           xlabel="number of bodies N", ylabel="time per call [us]",
                           curves=curves, vlines=vlines))
    for family in families:
        pts = sorted((p for p in sec["points"] if p["family"] == family), key=lambda p: p["n"])
        ns = [p["n"] for p in pts]
        curves = [("chain rule / IDSVA (rnea_derivatives)", ns,
                   [p["chain_rule_over_idsva"] for p in pts], "o-"),
                  ("AZA / DMM (aba_derivatives)", ns, [p["aza_over_dmm"] for p in pts], "^-"),
                  ("FDCR / FDSVA-DMM (aba_derivatives)", ns,
                   [p["fdcr_over_fdsva"] for p in pts], "d:")]
        panels.append(dict(title=f"{cm.family_label(family)}: time ratios (above 1: the "
                           "second is faster)", xlabel="number of bodies N",
                           ylabel="time ratio", curves=curves, hlines=[("1", 1.0)]))
    name = "first_order_methods.png"
    rp.plot_panels(outdir / name, panels, ncols=len(families),
                   title="First-order derivatives: IDSVA vs chain rule, DMM vs AZA (log-log)")
    return {"first_order": name}


def report(sec, files, cfg):
    lines = ["## 4. First-order methods: IDSVA vs chain rule, DMM vs AZA "
             "(singh-2022 Fig. 4 and 7)", "",
             "Same models and sizes as section 2 (N in " f"{sec['sizes']}), one random "
             "state per N, all five calls of one N timed interleaved (median per call, "
             "single thread): "
             + "; ".join(f"**{lab}**" for _, lab, _, _ in METHODS) + ". The DMM and AZA "
             "variants are the same IDSVA derivatives and the same M^-1; only the product "
             "-M^-1 dtau/du (Carpentier-Mansard eq. 24) differs. 'auto' is what "
             "`product=\"auto\"` picks: AZA when the mean branch length L reaches "
             f"AZA_MIN_BRANCH = {sec['aza_min_branch']} dofs (L = N on a chain).", ""]
    lines += [f"### Fitted log-log slopes (N >= {sec['fit_min_n']})", ""]
    rows = [[cm.family_label(s["family"]), LABEL[s["method"]], rp.fmt_slope(s["slope"]),
             rp.fmt_slope(s["slope_all"]), s["paper"]] for s in sec["slopes"]]
    lines += [rp.md_table(["family", "method", "slope", "slope (all N)", "paper"], rows,
                          "llrrl"), ""]
    lines += ["### Measured DMM/AZA crossover (where AZA becomes faster for good)", ""]
    rows = [[cm.family_label(f), cm.crossover_text(c)] for f, c in sec["crossover"].items()]
    lines += [rp.md_table(["family", "crossover"], rows, "ll"), ""]
    lines += ["Papers:", ""] + [f"- {t}" for t in PAPER_NOTES] + [""]
    for family in dict.fromkeys(p["family"] for p in sec["points"]):
        lines += [f"### {cm.family_label(family)}: time per call, us", ""]
        rows = []
        for p in (p for p in sec["points"] if p["family"] == family):
            rows.append([p["n"], rp.fmt_time(p["rnea_idsva"]), rp.fmt_time(p["rnea_chain_rule"]),
                         rp.fmt_ratio(p["chain_rule_over_idsva"]), rp.fmt_time(p["aba_dmm"]),
                         rp.fmt_time(p["aba_aza"]), rp.fmt_ratio(p["aza_over_dmm"]),
                         f"{p['auto']} (L = {p['mean_branch']:.1f})",
                         rp.fmt_time(p["aba_chain_rule"]), rp.fmt_ratio(p["fdcr_over_fdsva"])])
        lines += [rp.md_table(["N", "IDSVA", "chain rule", "chain rule / IDSVA", "FDSVA DMM",
                               "FDSVA AZA", "AZA / DMM", "auto", "FDCR (DMM)",
                               "FDCR / FDSVA-DMM"], rows), ""]
    for e in sec["errors"]:
        lines.append(f"> {e['name']} failed on {e['family']} N={e['n']}: {e['error']}")
    if "first_order" in files:
        lines += ["", f"![first-order methods]({files['first_order']})", ""]
    return lines + [""]
