"""Optional C++ timing anchor: Pinocchio's derivatives called from C++.

Pinocchio exposes no second-order derivatives to Python, so the only fair peer for
``rnea_second_order_derivatives`` is its C++ ``ComputeRNEASecondOrderDerivatives``. This
module compiles ``cpp/pin_anchor.cpp`` against the headers that ship in the ``pin`` wheel
(cmeel prefix) and Eigen 3 (Debian's ``libeigen3-dev``), with ``-O3 -march=native`` and
every template instantiated in the program itself, then times it on the very model the
Python side built (saved with ``pinocchio.Model.saveToBinary``).

    python -m rbdiff.bench.anchor panda hyq talos_full_v2+ff

A robot name alone takes the robot's usual base (a free flyer for legged robots and
humanoids, as ``rbd.load_robot``); ``NAME+ff`` asks for a free-flyer base explicitly (as
``python -m rbdiff.bench.gpu --robots`` spells it).

Nothing here is needed by the library; ``available()`` says why the anchor cannot run
(no compiler, no Eigen, no pin) instead of failing.
"""

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

SOURCE = Path(__file__).with_name("cpp") / "pin_anchor.cpp"
# Pinocchio's CMake exports these for its variant of 25 joint types (pinocchio-targets.cmake)
DEFINES = ["-DBOOST_MPL_LIMIT_LIST_SIZE=30", "-DBOOST_MPL_LIMIT_VECTOR_SIZE=30",
           "-DBOOST_MPL_CFG_NO_PREPROCESSED_HEADERS", "-DBOOST_FUSION_INVOKE_MAX_ARITY=12",
           "-DNDEBUG"]
EIGEN_DIRS = ["/usr/include/eigen3", "/usr/local/include/eigen3"]


def _prefix():
    """The cmeel prefix of the installed pin wheel, or None."""
    try:
        import cmeel  # noqa: F401  (installed with pin)
    except ImportError:
        return None
    for p in map(Path, sys.path):
        cand = p / "cmeel.prefix"
        if (cand / "include" / "pinocchio").is_dir():
            return cand
    return None


def _eigen():
    env = os.environ.get("EIGEN3_INCLUDE_DIR")
    for d in ([env] if env else []) + EIGEN_DIRS:
        if d and (Path(d) / "Eigen" / "Core").is_file():
            return Path(d)
    return None


def available():
    """None when the anchor can be built, else the reason it cannot (a sentence)."""
    if shutil.which(os.environ.get("CXX", "g++")) is None:
        return "no C++ compiler (set CXX or install g++)"
    if _prefix() is None:
        return "the pin wheel's headers were not found (pip install pin)"
    if _eigen() is None:
        return "Eigen 3 headers not found (apt install libeigen3-dev or set EIGEN3_INCLUDE_DIR)"
    return None


def _cache_dir():
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "rbdiff"


def build(verbose=True):
    """Path of the compiled anchor (compiled once per source and flags: a few minutes)."""
    why = available()
    if why:
        raise RuntimeError(f"C++ anchor unavailable: {why}")
    prefix, eigen = _prefix(), _eigen()
    cxx = os.environ.get("CXX", "g++")
    cmd = [cxx, "-O3", "-march=native", "-std=c++17", *DEFINES, f"-I{prefix / 'include'}",
           f"-I{eigen}", str(SOURCE), "-L" + str(prefix / "lib"),
           "-Wl,-rpath," + str(prefix / "lib"), "-lboost_serialization", "-lboost_filesystem"]
    key = hashlib.sha256((SOURCE.read_text() + " ".join(cmd)).encode()).hexdigest()[:16]
    exe = _cache_dir() / f"pin_anchor-{key}"
    if exe.is_file():
        return exe
    exe.parent.mkdir(parents=True, exist_ok=True)
    if verbose:
        print(f"compiling the C++ anchor (once, a few minutes): {SOURCE.name}", file=sys.stderr)
    tmp = exe.with_suffix(".tmp")
    res = subprocess.run(cmd[:-4] + ["-o", str(tmp)] + cmd[-4:], capture_output=True,
                         text=True)
    if res.returncode:
        raise RuntimeError("compiling the C++ anchor failed:\n" + res.stderr[-3000:])
    tmp.rename(exe)
    return exe


def run(pin_model, seed=0, repeats=21, dump=False):
    """Median seconds per call of Pinocchio's C++ ComputeRNEASecondOrderDerivatives,
    computeRNEADerivatives and computeABADerivatives on ``pin_model`` (a pinocchio.Model).

    Returns a dict (keys rnea_second_order_derivatives, rnea_derivatives,
    aba_derivatives, nq, nv). With dump=True it also holds the state C++ drew (q, v, a)
    and Pinocchio's four second-order tensors as (nv, nv, nv) arrays under "tensors"
    (d2tau_dqdq, d2tau_dvdv, d2tau_dqdv, d2tau_dadq), in Pinocchio's index order."""
    exe = build()
    with tempfile.TemporaryDirectory() as d:
        mpath = os.path.join(d, "model.bin")
        pin_model.saveToBinary(mpath)
        args = [str(exe), mpath, str(seed), str(repeats)]
        if dump:
            args.append(os.path.join(d, "dump.bin"))
        res = subprocess.run(args, capture_output=True, text=True)
        if res.returncode:
            raise RuntimeError(f"C++ anchor failed: {res.stderr[-2000:]}")
        out = json.loads(res.stdout)
        if dump:
            nq, nv = out["nq"], out["nv"]
            raw = np.fromfile(args[-1], dtype=np.float64)
            out["q"], out["v"], out["a"] = raw[:nq], raw[nq:nq + nv], raw[nq + nv:nq + 2 * nv]
            n3, o = nv ** 3, nq + 2 * nv
            names = ("d2tau_dqdq", "d2tau_dvdv", "d2tau_dqdv", "d2tau_dadq")
            # Eigen tensors are column-major: element (i, j, k) at i + nv j + nv^2 k
            out["tensors"] = {n: raw[o + m * n3:o + (m + 1) * n3].reshape(nv, nv, nv, order="F")
                              for m, n in enumerate(names)}
    return out


def robot_arg(s):
    """``NAME`` or ``NAME+ff`` (argparse type): (name, floating base), the usual base for a
    name alone; ArgumentTypeError for an unknown robot or suffix."""
    import argparse

    from rbdiff.model.robots import default_floating_base, robot_names
    name, plus, suffix = s.partition("+")
    if plus and suffix != "ff":
        raise argparse.ArgumentTypeError(f"{s!r}: expected NAME or NAME+ff")
    if name not in robot_names():
        raise argparse.ArgumentTypeError(f"unknown robot {name!r}; known: "
                                         f"{', '.join(robot_names())}")
    return name, (True if plus else default_floating_base(name))


def pin_model(name, floating):
    """Pinocchio's model of robot ``name`` from its URDF, with a free flyer or fixed."""
    import pinocchio as pin

    from rbdiff.model.robots import robot_path
    path = str(robot_path(name))
    return (pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer()) if floating
            else pin.buildModelFromUrdf(path))


def main(argv=None):
    import argparse
    p = argparse.ArgumentParser(prog="python -m rbdiff.bench.anchor", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("robots", nargs="*", type=robot_arg, metavar="NAME[+ff]",
                   default=[robot_arg(n) for n in ("panda", "hyq", "talos_full_v2")],
                   help="robots: NAME with its usual base (hyq and talos: free-flyer), "
                        "NAME+ff with a free-flyer base (default: panda hyq talos_full_v2)")
    p.add_argument("--repeats", type=int, default=21)
    args = p.parse_args(argv)
    why = available()
    if why:
        print(f"C++ anchor unavailable: {why}")
        return 1
    for name, floating in args.robots:
        r = run(pin_model(name, floating), repeats=args.repeats)
        label = name + ("+ff" if floating else "")
        print(f"{label:20s} nv={r['nv']:3d}  ComputeRNEASecondOrderDerivatives "
              f"{r['rnea_second_order_derivatives'] * 1e6:8.2f} us   computeRNEADerivatives "
              f"{r['rnea_derivatives'] * 1e6:7.2f} us   computeABADerivatives "
              f"{r['aba_derivatives'] * 1e6:7.2f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
