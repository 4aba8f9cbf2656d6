"""The compile cache's source digest (kernels/jit.py) leaves out only rooms that compile
nothing: an edit there must not recompile every entry, and an edit anywhere an entry can
reach must."""

import ast
import os

import rbdiff
from rbdiff.kernels import jit

ROOT = os.path.dirname(os.path.abspath(rbdiff.__file__))


def _all_sources():
    out = []
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        out += [os.path.relpath(os.path.join(folder, f), ROOT) for f in files
                if f.endswith(".py")]
    return sorted(out)


def _module(rel):
    parts = rel[:-3].split(os.sep)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return "rbdiff." + ".".join(parts) if parts else "rbdiff"


def _imports(rel):
    """The rbdiff modules ``rel`` imports (absolute names; a name imported from a
    package counts as its module too)."""
    tree = ast.parse(open(os.path.join(ROOT, rel)).read())
    pkg = _module(rel).split(".")
    if not rel.endswith("__init__.py"):
        pkg = pkg[:-1]
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = pkg[:len(pkg) - node.level + 1] if node.level else []
            mod = ".".join(base + ([node.module] if node.module else []))
            if not node.level:
                mod = node.module or ""
            out.add(mod)
            out.update(f"{mod}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return {m for m in out if m == "rbdiff" or m.startswith("rbdiff.")}


def test_left_out_files_compile_nothing_and_nothing_compiled_imports_them():
    kept = set(jit.compiled_sources())
    left = [f for f in _all_sources() if f not in kept]
    assert left and "kernels/jit.py" in kept and "trajopt/riccati.py" in kept
    assert "trajopt/problem.py" in left and "sim.py" in left
    for rel in left:
        if rel.startswith("bench"):     # the benchmarks' own kernels: never an entry's
            continue
        text = open(os.path.join(ROOT, rel)).read()
        assert not jit.compiles(text), rel
    left_modules = {_module(f) for f in left}
    for rel in kept:
        text = open(os.path.join(ROOT, rel)).read()
        if not jit.compiles(text):
            continue        # a driver (precompile.py): its imports compile nothing
        hit = _imports(rel) & left_modules
        assert not hit, (rel, hit)


def test_digest_follows_compiled_sources(tmp_path):
    import shutil
    root = tmp_path / "rbdiff"
    shutil.copytree(ROOT, root, ignore=shutil.ignore_patterns("__pycache__"))
    before = jit._sources_digest(str(root))
    for rel, counts in (("trajopt/problem.py", False), ("sim.py", False),
                        ("trajopt/riccati.py", True), ("model/layout.py", True)):
        path = root / rel
        text = path.read_text()
        path.write_text(text + "\n# an edit\n")
        assert (jit._sources_digest(str(root)) != before) == counts, rel
        path.write_text(text)
    assert jit._sources_digest(str(root)) == before
