"""The documentation site (mkdocs.yml, docs/; `make docs`).

- The site builds in MkDocs' strict mode: a warning fails (a broken link or anchor, a
  reference that does not resolve, a page left out of the navigation).
- Every public name (each package's ``__all__``) has an entry in the generated
  reference, and the rbdiff reference documents no name outside ``rbdiff.__all__``.
- A headless Chromium (the viewer tests' browser) opens the built reference from disk and
  finds a function's signature on its page.
- Every ```python block of every page runs as written: a page's blocks in one fresh
  process, each block in a namespace of its own (so each stands alone, as a reader copies
  it). Blocks that need an extra that is not installed are skipped, each saying so; the
  GPU blocks run in Numba's CUDA simulator (NUMBA_ENABLE_CUDASIM=1), in a process of
  their own.

The site is built once per test session: under pytest-xdist the first worker builds it
into a folder the workers share, the others wait on a lock and reuse it.
"""

import ast
import fcntl
import glob
import importlib
import importlib.util
import json
import os
import re
import subprocess
import sys
import time

import pytest

from codeblocks import check_fences, markdown_blocks, needs

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = os.path.join(ROOT, "docs")
SRC = os.path.join(ROOT, "src")

# the packages whose public names the reference documents (docs/reference/)
PACKAGES = ["rbdiff", "rbdiff.trajopt", "rbdiff.viewer", "rbdiff.jax", "rbdiff.torch",
            "rbdiff.dask", "rbdiff.gpu", "rbdiff.sim", "rbdiff.mpc"]


def _pages():
    """The site's Markdown pages, relative to docs/ (the generated reference's stubs hold
    no code)."""
    out = []
    for path in sorted(glob.glob(os.path.join(DOCS, "**", "*.md"), recursive=True)):
        rel = os.path.relpath(path, DOCS)
        if not rel.startswith("reference" + os.sep):
            out.append(rel)
    return out


PAGES = _pages()


def _page_blocks(rel):
    with open(os.path.join(DOCS, rel), encoding="utf-8") as fh:
        return markdown_blocks(fh.read(), rel)


# ---------------------------------------------------------------- the site's build

def _build_site(dest):
    """Build the site into ``dest`` in strict mode; returns (return code, output)."""
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    env["PYTHONPATH"] = SRC + os.pathsep + env.get("PYTHONPATH", "")
    r = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict",
                        "--config-file", os.path.join(ROOT, "mkdocs.yml"),
                        "--site-dir", dest],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    return r.returncode, r.stdout + r.stderr


@pytest.fixture(scope="session")
def site(tmp_path_factory):
    """The built site's folder (built once for all xdist workers)."""
    for module in ("mkdocs", "material", "mkdocstrings_handlers.python"):
        if importlib.util.find_spec(module.split(".")[0]) is None:
            pytest.skip(f"the site's generator is not installed ({module}): "
                        "pip install -e '.[docs]'")
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent                          # shared by the workers of this run
    dest, done = base / "docs-site", base / "docs-site.json"
    with open(base / "docs-site.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            t0 = time.perf_counter()
            rc, output = _build_site(str(dest))
            done.write_text(json.dumps({"rc": rc, "output": output,
                                        "seconds": time.perf_counter() - t0}))
        result = json.loads(done.read_text())
    result["dir"] = dest
    return result


def test_site_builds_strict(site):
    print(f"built in {site['seconds']:.1f} s")
    warnings = [line for line in site["output"].splitlines()
                if line.startswith(("WARNING", "ERROR"))]
    assert site["rc"] == 0 and not warnings, site["output"][-6000:]
    # pages are files (use_directory_urls: false), so the site opens from disk
    for page in ["index.html", "getting-started.html", "tutorials/dynamics.html",
                 "pinocchio.html", "reference/rbdiff.html"]:
        assert (site["dir"] / page).is_file(), page


def _reference_ids(site):
    ids = set()
    for path in glob.glob(str(site["dir"] / "reference" / "*.html")):
        with open(path, encoding="utf-8") as fh:
            ids |= set(re.findall(r'id="([\w.]+)"', fh.read()))
    return ids


def _public_names(package):
    """``package.__all__``, read from its source where it is a literal (importing torch or
    jax costs seconds), else imported (rbdiff.dask's is computed)."""
    spec = importlib.util.find_spec(package)
    with open(spec.origin, encoding="utf-8") as fh:
        tree = ast.parse(fh.read())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__"
                                                for t in node.targets):
            try:
                return list(ast.literal_eval(node.value))
            except ValueError:
                break
    try:
        return list(importlib.import_module(package).__all__)
    except ImportError as e:
        pytest.skip(f"{package} cannot be imported here ({e})")


@pytest.mark.parametrize("package", PACKAGES)
def test_every_public_name_has_a_reference_entry(site, package):
    assert site["rc"] == 0, "the site did not build (test_site_builds_strict)"
    ids = _reference_ids(site)
    missing = [n for n in _public_names(package) if f"{package}.{n}" not in ids]
    assert not missing, f"{package}: no reference entry for {missing}"


def test_reference_documents_only_public_names():
    """The rbdiff page's entries are rbdiff.__all__ (and rbdiff.sim has its own page)."""
    import rbdiff
    with open(os.path.join(DOCS, "reference", "rbdiff.md"), encoding="utf-8") as fh:
        entries = re.findall(r"^::: rbdiff\.(\w+)$", fh.read(), flags=re.M)
    assert len(entries) == len(set(entries)), "an entry is listed twice"
    assert set(entries) | {"sim"} == set(rbdiff.__all__)


@pytest.mark.parametrize("package", ["rbdiff", "rbdiff.trajopt", "rbdiff.torch",
                                     "rbdiff.gpu"])
def test_all_lists_what_the_package_re_exports(package):
    """These packages' __init__ re-export their API (``from .api import rnea``): a name
    added there must be added to ``__all__`` too, or neither ``from rbdiff import *`` nor
    the reference would have it."""
    spec = importlib.util.find_spec(package)
    with open(spec.origin, encoding="utf-8") as fh:
        tree = ast.parse(fh.read())
    exported = set(_public_names(package))
    imported = {a.asname or a.name for node in tree.body
                if isinstance(node, ast.ImportFrom) and node.level >= 1
                for a in node.names if not (a.asname or a.name).startswith("_")}
    assert imported <= exported, f"{package}: not in __all__: {sorted(imported - exported)}"


def test_reference_page_in_a_browser(site):
    """Chromium renders the reference from disk: the function's heading and its full
    signature are shown."""
    assert site["rc"] == 0, "the site did not build (test_site_builds_strict)"
    pytest.importorskip("playwright", reason="the browser check needs playwright "
                        "(the viewer extra)")
    from rbdiff.viewer.browser import HeadlessPage, find_browser
    if find_browser() is None:
        pytest.skip("no headless browser: install Chromium (apt-get install chromium; "
                    ".ci/run does)")
    url = (site["dir"] / "reference" / "rbdiff.html").as_uri() + "#rbdiff.aba_derivatives"
    page = HeadlessPage(url, 1280, 900)
    try:
        def read(p):
            p.wait_for_load_state("load")
            entry = p.locator(".doc-object:has(> [id='rbdiff.aba_derivatives'])").first
            return (p.title(), entry.is_visible(), entry.inner_text())
        title, visible, text = page.call(read)
    finally:
        page.close()
    assert "rbdiff" in title and visible
    flat = " ".join(text.split())
    assert "aba_derivatives(model, q, v, tau, fext=None, method='idsva', " \
           "product='auto', out=None)" in flat, flat[:2000]
    assert "FDSVA" in flat or "forward dynamics" in flat.lower(), flat[:2000]


def test_make_docs_and_the_extras():
    """`make docs` builds the site, and the test extra installs the docs extra's
    generator (CI installs .[test] only, and this file builds the site)."""
    tomllib = pytest.importorskip("tomllib", reason="Python 3.11's tomllib reads pyproject.toml")
    with open(os.path.join(ROOT, "Makefile"), encoding="utf-8") as fh:
        make = fh.read()
    assert re.search(r"^docs:", make, flags=re.M) and "mkdocs build" in make
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as fh:
        extras = tomllib.load(fh)["project"]["optional-dependencies"]
    for req in extras["docs"]:
        assert req in extras["test"], f"{req} is in the docs extra but not in test"
    with open(os.path.join(ROOT, "mkdocs.yml"), encoding="utf-8") as fh:
        assert re.search(r"^use_directory_urls: false", fh.read(), flags=re.M)


# ---------------------------------------------------------------- the pages' code

def test_every_page_is_checked_for_fences():
    """Fences are paired and labelled on every page, and the tutorials have code."""
    counts = {}
    for rel in PAGES:
        with open(os.path.join(DOCS, rel), encoding="utf-8") as fh:
            text = fh.read()
        counts[rel] = check_fences(text, markdown_blocks(text, rel))
    for rel in PAGES:
        if rel.startswith("tutorials" + os.sep):
            assert counts[rel] > 0, f"{rel} has no python block"


def _groups():
    """pytest params: one per page and environment (the blocks that run together in one
    process), and one per block to skip, with its reason."""
    params = []
    for rel in PAGES:
        runs = {}
        for line, lang, code in _page_blocks(rel):
            if lang != "python":
                continue
            skip, env = needs(code)
            where = f"{rel}:{line}"
            if skip:
                params.append(pytest.param(rel, (), {}, id=where,
                                           marks=pytest.mark.skip(reason=skip)))
                continue
            runs.setdefault(tuple(sorted(env.items())), []).append((line, code))
        for env, blocks in runs.items():
            tag = rel + ("[" + ",".join(f"{k}={v}" for k, v in env) + "]" if env else "")
            params.append(pytest.param(rel, tuple(blocks), dict(env), id=tag))
    return params


RUNNER = '''\
import json, sys, time, traceback
if __name__ == "__main__":          # a spawned child (Dask's workers) imports this again
    page, blocks = sys.argv[1], json.load(open(sys.argv[2]))
    for line, code in blocks:
        t0 = time.perf_counter()
        try:
            exec(compile(code, f"{page}:{line}", "exec"), {"__name__": "__main__"})
        except BaseException:
            traceback.print_exc()
            print(f"FAILED {page}:{line}", file=sys.stderr)
            sys.exit(1)
        print(f"{page}:{line} ran in {time.perf_counter() - t0:.1f} s", flush=True)
'''


@pytest.mark.parametrize("page, blocks, env", _groups())
def test_page_blocks_run(page, blocks, env, tmp_path):
    runner, data = tmp_path / "run_blocks.py", tmp_path / "blocks.json"
    runner.write_text(RUNNER, encoding="utf-8")
    data.write_text(json.dumps(list(blocks)), encoding="utf-8")
    full = dict(os.environ, **env)
    full["PYTHONPATH"] = SRC + os.pathsep + full.get("PYTHONPATH", "")
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, str(runner), page, str(data)], cwd=tmp_path,
                       env=full, capture_output=True, text=True, timeout=600)
    wall = time.perf_counter() - t0
    print(f"{len(blocks)} blocks in {wall:.1f} s\n{r.stdout[-3000:]}")
    assert r.returncode == 0, (f"exit code {r.returncode} after {wall:.1f} s\n"
                               f"--- stdout ---\n{r.stdout[-4000:]}\n"
                               f"--- stderr ---\n{r.stderr[-8000:]}")
