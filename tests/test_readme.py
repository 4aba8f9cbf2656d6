"""Every ```python block of README.md runs as written, each in a fresh process.

Each block is written to a temporary script and run with ``sys.executable`` (the
repository on PYTHONPATH, a temporary folder as the working directory), so a block can
rely on nothing but what it imports and loads itself. A block that needs an optional
extra (jax, torch, dask / distributed, mujoco, gymnasium, example-robot-data's robots)
is skipped when that extra is not installed; the GPU block (``from numba import
cuda``) runs in Numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``). ```bash blocks and
unlabelled ones are not run.
"""

import importlib.util
import os
import subprocess
import sys
import time

import pytest

from codeblocks import check_fences, markdown_blocks, needs as _needs

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
README = os.path.join(ROOT, "README.md")
SRC = os.path.join(ROOT, "src")         # the package (src layout)
readme_blocks = markdown_blocks


with open(README, encoding="utf-8") as fh:
    TEXT = fh.read()
BLOCKS = readme_blocks(TEXT)
PYTHON = [(line, code) for line, lang, code in BLOCKS if lang == "python"]


def test_extractor_finds_every_python_block():
    """A fence typo (```pyhton, a missing closing fence) cannot silently drop a block:
    the number of python blocks extracted equals the number of ```python fences in the
    text, every fence is paired, and there are python blocks at all."""
    assert check_fences(TEXT, BLOCKS) == len(PYTHON) > 0


def test_extractor_on_bad_fences():
    ok = "text\n```python\nx = 1\n```\n\n```bash\nls\n```\n"
    assert readme_blocks(ok) == [(3, "python", "x = 1\n"), (7, "bash", "ls\n")]
    with pytest.raises(ValueError, match="never closed"):
        readme_blocks("```python\nx = 1\n")
    with pytest.raises(ValueError, match="carries text"):      # closing fence forgotten
        readme_blocks("```python\nx = 1\n\n```bash\nls\n```\n")


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
