"""A headless Chromium that keeps a page open (the viewer's renders come from a real
browser: render_gif, screenshots, the tests).

Playwright drives the system's Chromium (``executable_path``; Playwright's own browser
download is not needed). WebGL without a GPU goes through SwiftShader. Playwright's sync
API refuses to run inside an asyncio loop (a Jupyter kernel), so the browser lives in a
thread of its own and the caller talks to it through a queue.
"""

from __future__ import annotations

import os
import queue
import shutil
import tempfile
import threading

_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")

# a closed network and no GPU: no first-run, sync or update traffic; WebGL on SwiftShader
CHROMIUM_ARGS = ("--no-sandbox", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--use-angle=swiftshader", "--enable-unsafe-swiftshader",
                 "--ignore-gpu-blocklist")


def find_browser():
    """Path of a Chromium or Chrome executable ($RBDIFF_BROWSER first), or None."""
    env = os.environ.get("RBDIFF_BROWSER")
    if env:
        return env if os.path.isfile(env) else shutil.which(env)
    for name in _NAMES:
        path = shutil.which(name)
        if path:
            return path
    return None


def _playwright():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError as e:
        raise ImportError("rbdiff.viewer's headless renders need playwright: pip install "
                          "'rbdiff[viewer]'") from e
    return sync_playwright


class HeadlessPage:
    """One headless Chromium page at ``url`` (``width`` x ``height`` CSS pixels), open
    until :meth:`close`. :meth:`call` runs ``fn(page)`` in the browser's thread and
    returns its result (or raises its exception)."""

    def __init__(self, url, width=1024, height=768, executable=None, timeout=60.0):
        exe = executable or find_browser()
        if exe is None:
            raise RuntimeError("no Chromium found for rbdiff.viewer's headless renders: "
                               "install one (Debian: apt-get install chromium) or set "
                               "RBDIFF_BROWSER to its path")
        sync_playwright = _playwright()
        self._jobs = queue.Queue()
        ready = queue.Queue()
        self._profile = tempfile.mkdtemp(prefix="rbdiff-chromium-")

        def run():
            try:
                with sync_playwright() as p:
                    ctx = p.chromium.launch_persistent_context(
                        self._profile, executable_path=exe, headless=True,
                        args=list(CHROMIUM_ARGS),
                        viewport={"width": int(width), "height": int(height)})
                    page = ctx.pages[0] if ctx.pages else ctx.new_page()
                    page.goto(url)
                    ready.put(None)
                    while True:
                        job = self._jobs.get()
                        if job is None:
                            break
                        fn, out = job
                        try:
                            out.put((True, fn(page)))
                        except Exception as e:      # handed back to the caller
                            out.put((False, e))
                    ctx.close()
            except Exception as e:      # a launch failure reaches the constructor
                ready.put(e)

        self._thread = threading.Thread(target=run, name="rbdiff-viewer-browser",
                                        daemon=True)
        self._thread.start()
        try:
            err = ready.get(timeout=timeout)
        except queue.Empty:
            err = TimeoutError(f"Chromium did not open {url} within {timeout} s")
        if err is not None:
            self.close()
            raise RuntimeError(f"headless Chromium ({exe}) failed: {err}") from err

    def call(self, fn, timeout=120.0):
        out = queue.Queue()
        self._jobs.put((fn, out))
        ok, value = out.get(timeout=timeout)
        if not ok:
            raise value
        return value

    def close(self):
        if self._thread.is_alive():
            self._jobs.put(None)
            self._thread.join(timeout=30)
        shutil.rmtree(self._profile, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
