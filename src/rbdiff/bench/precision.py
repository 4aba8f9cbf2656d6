"""Bench section ``precision``: the first-order derivative kernels in float32 against
float64 (issue 5: "the same derivative kernels in float32 against float64 (error
metrics) and their speed").

Per robot (``cfg.robots``), one random state drawn in float64 and rounded to float32:
``rnea_derivatives`` and ``aba_derivatives`` by IDSVA and by the chain rule, called with
float32 arrays (the kernels compile for float32 from the same source) and with float64
ones. Reported: the dtype float32 calls return (must be float32), the float32 error
against the float64 result (singh-2023 eqs. 40 and 43; MAE also relative to max|ref|),
the float64 error against the complex step for scale, and the float32 / float64 time
ratio (interleaved). float32 calls take the validating path of the public functions
(the float64 single-state fast path skips it), so small robots carry ~1 us more.
"""

from functools import partial

import numpy as np

import rbdiff as rbd
from rbdiff import derivatives
from rbdiff.bench import common as cm
from rbdiff.bench import models as bm
from rbdiff.bench import report as rp

# (key, label, function, last argument "a" or "tau", keyword arguments)
FUNCS = (
    ("rnea_idsva", "rnea_derivatives IDSVA", derivatives.rnea_derivatives, "a",
     dict(method="idsva")),
    ("rnea_chain_rule", "rnea_derivatives chain rule", derivatives.rnea_derivatives, "a",
     dict(method="chain_rule")),
    ("aba_idsva", "aba_derivatives IDSVA", derivatives.aba_derivatives, "tau",
     dict(method="idsva")),
    ("aba_chain_rule", "aba_derivatives chain rule", derivatives.aba_derivatives, "tau",
     dict(method="chain_rule")),
)
LABEL = {k: lab for k, lab, *_ in FUNCS}
# float32 results: entries below this fraction of max|ref| are zeros to float32
# rounding (about 80 float32 epsilons) for the relative metrics
ZERO_TOL32 = 1e-5


def total(cfg):
    return len(cfg.robots)


def run(cfg, bar, out):
    rng = np.random.default_rng(cfg.seed + 14)
    res = dict(zero_tol32=ZERO_TOL32, zero_tol64=cm.ZERO_TOL, eps32=float(np.finfo(np.float32).eps),
               rows=[], skipped=[], errors=[])
    for robot in cfg.robots:
        pair = cm.robot_pair_or_skip(robot, res, bar, "precision")
        if pair is None:
            continue
        model = pair[0]
        q, v, a = cm.state(model, rng)
        tau = rbd.rnea(model, q, v, a)
        args64 = {"a": (q, v, a), "tau": (q, v, tau)}
        args32 = {k: tuple(x.astype(np.float32) for x in xs) for k, xs in args64.items()}
        funcs = {}
        for key, label, fn, last, kw in FUNCS:
            row = dict(robot=robot, label=bm.robot_label(robot), nv=model.nv, func=key)
            try:
                r64 = fn(model, *args64[last], **kw)
                r32 = fn(model, *args32[last], **kw)
                ref = fn(model, *args64[last], method="complex_step")
            except Exception as e:      # noqa: BLE001
                row["error"] = f"{type(e).__name__}: {e}"
                res["rows"].append(row)
                continue
            row["dtype32"] = sorted({str(np.asarray(x).dtype) for x in r32})
            row["dtype_ok"] = row["dtype32"] == ["float32"]
            e32 = cm.errors(r32, r64, zero_tol=ZERO_TOL32)
            e64 = cm.errors(r64, ref)
            row.update({f"{k}32": cm.finite(x) for k, x in e32.items()})
            row.update({f"{k}64_cs": cm.finite(x) for k, x in e64.items()})
            row["mae32_rel"] = cm.finite(e32["mae"] / e32["scale"]) if e32["scale"] else None
            funcs[f"{key}|64"] = partial(fn, model, *args64[last], **kw)
            funcs[f"{key}|32"] = partial(fn, model, *args32[last], **kw)
            res["rows"].append(row)
        t = cm.timed(funcs, cfg, res["errors"], dict(family=robot, n=model.nv))
        for row in res["rows"]:
            if row["robot"] != robot or "error" in row:
                continue
            t64, t32 = t.get(f"{row['func']}|64"), t.get(f"{row['func']}|32")
            row["t64"] = t64["median"] if t64 else None
            row["t32"] = t32["median"] if t32 else None
            row["ratio"] = rp.ratio(row["t32"], row["t64"])
        bar.step(f"precision {robot}")
    return res


def figures(sec, outdir):
    rows = [r for r in sec["rows"] if "error" not in r]
    if not rows:
        return {}
    groups = list(dict.fromkeys(r["label"] for r in rows))
    series = [LABEL[k] for k, *_ in FUNCS]
    values = {"rmsre32": {}, "ratio": {}}
    for r in rows:
        for key in values:
            values[key].setdefault(LABEL[r["func"]], {})[r["label"]] = r.get(key)
    name = "precision_float32.png"
    rp.plot_bars(outdir / name, groups, series, values,
                 [("rmsre32", "RMSRE of float32 vs float64"),
                  ("ratio", "time float32 / float64")],
                 title="First-order derivative kernels in float32 against float64")
    return {"precision": name}


def report(sec, files, cfg):
    lines = ["## 7. Numeric types: float32 against float64", "",
             "Per robot, one random state (float64, rounded to float32 for the float32 "
             "call); each function called with float32 arrays and with float64 arrays. "
             "Errors of the float32 result against the float64 one: RMSRE (eq. 43, entries "
             f"below {sec['zero_tol32']:.0e} max|ref| count as zeros), MAE (eq. 40) and "
             "MAE / max|ref|; for scale, the float64 result against the complex step "
             f"(RMSRE, zeros below {sec['zero_tol64']:.0e} max|ref|). float32 epsilon = "
             f"{sec['eps32']:.1e}. Times: float32 and float64 calls of one robot "
             "interleaved; the float32 calls go through the public functions' validating "
             "path (about 1 us more than the float64 fast path).", ""]
    rows = []
    for r in sec["rows"]:
        if "error" in r:
            rows.append([r["label"], LABEL[r["func"]], f"failed: {r['error']}"] + ["-"] * 7)
            continue
        dt = ", ".join(r["dtype32"]) + ("" if r["dtype_ok"] else " (EXPECTED float32)")
        rows.append([r["label"], LABEL[r["func"]], dt, rp.fmt_sci(r["rmsre32"]),
                     rp.fmt_sci(r["mae32"]), rp.fmt_sci(r["mae32_rel"]),
                     rp.fmt_sci(r["rmsre64_cs"]), rp.fmt_time(r.get("t64")),
                     rp.fmt_time(r.get("t32")), rp.fmt_ratio(r.get("ratio"))])
    lines += [rp.md_table(["robot", "function", "float32 result dtype", "RMSRE f32 vs f64",
                           "MAE f32 vs f64", "MAE / max|ref|", "RMSRE f64 vs CS",
                           "float64 us", "float32 us", "f32 / f64"], rows, "lll" + "r" * 7),
              ""]
    return lines + cm.tail_lines(sec, files, "precision", "float32 vs float64",
                                 lambda e: f"{e['name']} failed on {e['family']}: {e['error']}")
