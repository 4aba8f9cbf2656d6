"""Every ```python block of README.md runs as written, each in a fresh process.

Each block is written to a temporary script and run with ``sys.executable`` (the
repository on PYTHONPATH, a temporary folder as the working directory), so a block can
rely on nothing but what it imports and loads itself. A block that needs an optional
extra (jax, torch, dask / distributed, mujoco, gymnasium, example-robot-data's robots)
is skipped when that extra is not installed; the GPU block (``from numba import
cuda``) runs in Numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``). ```bash blocks and
unlabelled ones are not run.
"""

import ast
import importlib.util
import os
import re
import subprocess
import sys
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
README = os.path.join(ROOT, "README.md")
SRC = os.path.join(ROOT, "src")         # the package (src layout)

FENCE = re.compile(r"^```(\S*)\s*$")


def readme_blocks(text):
    """(first line number of the code, language, code) of every fenced block, in order.
    A fence is a line starting with ``` at column 0; raises if one is left open."""
    blocks, open_at, lang, body = [], None, None, []
    for n, line in enumerate(text.splitlines(), start=1):
        m = FENCE.match(line)
        if open_at is None:
            if line.startswith("```"):
                if m is None:
                    raise ValueError(f"README.md:{n}: malformed opening fence {line!r}")
                open_at, lang, body = n, m.group(1), []
        elif line.startswith("```"):
            if line.rstrip() != "```":
                raise ValueError(f"README.md:{n}: closing fence {line!r} carries text "
                                 f"(block opened at line {open_at})")
            blocks.append((open_at + 1, lang, "\n".join(body) + "\n"))
            open_at = None
        else:
            body.append(line)
    if open_at is not None:
        raise ValueError(f"README.md:{open_at}: fence never closed")
    return blocks


with open(README, encoding="utf-8") as fh:
    TEXT = fh.read()
BLOCKS = readme_blocks(TEXT)
PYTHON = [(line, code) for line, lang, code in BLOCKS if lang == "python"]


def test_extractor_finds_every_python_block():
    """A fence typo (```pyhton, a missing closing fence) cannot silently drop a block:
    the number of python blocks extracted equals the number of ```python fences in the
    text, every fence is paired, and there are python blocks at all."""
    opening = len(re.findall(r"^```python\b", TEXT, flags=re.M))
    fences = len(re.findall(r"^```", TEXT, flags=re.M))
    assert fences % 2 == 0, f"{fences} fence lines: one is unpaired"
    assert fences == 2 * len(BLOCKS)
    assert len(PYTHON) == opening > 0
    # a misspelt language (```pyhton, ```py) would be skipped as "not python": only the
    # languages this README uses are allowed
    langs = {lang for _, lang, _ in BLOCKS}
    assert langs <= {"python", "bash", ""}, f"unexpected fence languages {langs}"


def test_extractor_on_bad_fences():
    ok = "text\n```python\nx = 1\n```\n\n```bash\nls\n```\n"
    assert readme_blocks(ok) == [(3, "python", "x = 1\n"), (7, "bash", "ls\n")]
    with pytest.raises(ValueError, match="never closed"):
        readme_blocks("```python\nx = 1\n")
    with pytest.raises(ValueError, match="carries text"):      # closing fence forgotten
        readme_blocks("```python\nx = 1\n\n```bash\nls\n```\n")


def _imports(code):
    """Top-level names of the modules a block imports ("numba.cuda" kept whole too)."""
    names = set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Import):
            for a in node.names:
                names.add(a.name)
                names.add(a.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.add(node.module.split(".")[0])
            for a in node.names:
                names.add(f"{node.module}.{a.name}")
    return names


# what a block's imports need installed: (module to find, extra to name when it is absent)
EXTRAS = {
    "jax": ("jax", "jax"), "rbdiff.jax": ("jax", "jax"),
    "torch": ("torch", "torch"), "rbdiff.torch": ("torch", "torch"),
    "dask": ("dask", "dask"), "distributed": ("distributed", "dask"),
    "dask.distributed": ("distributed", "dask"),
    "rbdiff.dask": ("distributed", "dask"),
    "mujoco": ("mujoco", "mujoco"), "rbdiff.mujoco": ("mujoco", "mujoco"),
    "rbdiff.sim": ("mujoco", "sim"),
    "gymnasium": ("gymnasium", "gymnasium (MuJoCo assets)"),
    "rbdiff.viewer": ("viser", "viewer"),
}


def _example_robot_data():
    from rbdiff.model import robots
    return robots.example_robot_data_dir() is not None


def _needs(code):
    """(reason to skip or None, extra environment) for one block."""
    imports = _imports(code)
    env = {}
    for name, (module, extra) in EXTRAS.items():
        if name in imports and importlib.util.find_spec(module) is None:
            return f"needs the {extra} extra ({module} is not installed)", env
    if "numba.cuda" in imports:
        env["NUMBA_ENABLE_CUDASIM"] = "1"
    robots = set(re.findall(r"load_robot\(\s*[\"'](\w+)[\"']", code)) - {"iiwa14"}
    if robots and not _example_robot_data():
        return f"needs example-robot-data (robots {sorted(robots)})", env
    return None, env


@pytest.mark.parametrize("code", [pytest.param(code, id=f"README.md:{line}")
                                  for line, code in PYTHON])
def test_readme_block_runs(code, tmp_path):
    skip, extra_env = _needs(code)
    if skip:
        pytest.skip(skip)
    script = tmp_path / "block.py"
    script.write_text(code, encoding="utf-8")
    env = dict(os.environ, **extra_env)
    env["PYTHONPATH"] = SRC + os.pathsep + env.get("PYTHONPATH", "")
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=600)
    wall = time.perf_counter() - t0
    print(f"{wall:.1f} s")
    assert r.returncode == 0, (f"exit code {r.returncode} after {wall:.1f} s\n"
                               f"--- stdout ---\n{r.stdout[-4000:]}\n"
                               f"--- stderr ---\n{r.stderr[-8000:]}")


def test_extras_detected_from_imports(monkeypatch):
    """A block is skipped only for an extra it imports, and the GPU block gets the
    simulator."""
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name in ("jax", "distributed") else real(name, *a))
    assert "jax" in _needs("import jax.numpy as jnp\n")[0]
    assert "jax" in _needs("import rbdiff.jax as rj\n")[0]
    assert "dask" in _needs("from dask.distributed import Client\n")[0]
    assert _needs("import numpy as np\nimport rbdiff as rbd\n") == (None, {})
    assert _needs("from numba import cuda\n") == (None, {"NUMBA_ENABLE_CUDASIM": "1"})
