"""Code blocks of Markdown files (README.md, the site's pages under docs/): extracting them,
and what a block needs installed to run. Shared by tests/test_readme.py and
tests/test_docs.py."""

import ast
import importlib.util
import re

FENCE = re.compile(r"^```(\S*)\s*$")
# the fence languages these files use: a misspelt one (```pyhton, ```py) would be skipped
# as "not python", so any other is refused
LANGUAGES = {"python", "bash", ""}


def markdown_blocks(text, name="README.md"):
    """(first line number of the code, language, code) of every fenced block, in order.
    A fence is a line starting with ``` at column 0; raises if one is left open."""
    blocks, open_at, lang, body = [], None, None, []
    for n, line in enumerate(text.splitlines(), start=1):
        m = FENCE.match(line)
        if open_at is None:
            if line.startswith("```"):
                if m is None:
                    raise ValueError(f"{name}:{n}: malformed opening fence {line!r}")
                open_at, lang, body = n, m.group(1), []
        elif line.startswith("```"):
            if line.rstrip() != "```":
                raise ValueError(f"{name}:{n}: closing fence {line!r} carries text "
                                 f"(block opened at line {open_at})")
            blocks.append((open_at + 1, lang, "\n".join(body) + "\n"))
            open_at = None
        else:
            body.append(line)
    if open_at is not None:
        raise ValueError(f"{name}:{open_at}: fence never closed")
    return blocks


def check_fences(text, blocks):
    """A fence typo (```pyhton, a missing closing fence) cannot silently drop a block: the
    python blocks extracted are as many as the ```python fences, every fence is paired,
    and only LANGUAGES are used. Returns the number of python blocks."""
    opening = len(re.findall(r"^```python\b", text, flags=re.M))
    fences = len(re.findall(r"^```", text, flags=re.M))
    assert fences % 2 == 0, f"{fences} fence lines: one is unpaired"
    assert fences == 2 * len(blocks)
    python = [b for b in blocks if b[1] == "python"]
    assert len(python) == opening
    langs = {lang for _, lang, _ in blocks}
    assert langs <= LANGUAGES, f"unexpected fence languages {langs}"
    return len(python)


def imports(code):
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
    "pinocchio": ("pinocchio", "test (pin)"),
}


def _example_robot_data():
    from rbdiff.model import robots
    return robots.example_robot_data_dir() is not None


def needs(code):
    """(reason to skip or None, extra environment) for one block: a block that imports
    an extra that is not installed, or loads a robot of example-robot-data without it, is
    skipped; the GPU blocks (``from numba import cuda``) run in Numba's CUDA simulator."""
    names = imports(code)
    env = {}
    for name, (module, extra) in EXTRAS.items():
        if name in names and importlib.util.find_spec(module) is None:
            return f"needs the {extra} extra ({module} is not installed)", env
    if "numba.cuda" in names:
        env["NUMBA_ENABLE_CUDASIM"] = "1"
    robots = set(re.findall(r"load_robot\(\s*[\"'](\w+)[\"']", code)) - {"iiwa14"}
    if robots and not _example_robot_data():
        return f"needs example-robot-data (robots {sorted(robots)})", env
    return None, env
