"""Numba's on-disk cache for rbdiff's entry points (kernels/jit.py)."""

import os
import subprocess
import sys

import pytest
from numba.core import config

ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")


@pytest.mark.skipif(not hasattr(config, "CACHE_LOCATOR_CLASSES"),
                    reason="this Numba cannot restrict its cache locators")
def test_no_writable_cache_folder_still_imports_and_computes():
    """A read-only install with no writable user cache: Numba refuses cache=True (no
    locator); rbdiff must still import, warn once naming NUMBA_CACHE_DIR, and compute.
    IPythonCacheLocator is the only locator allowed here and takes no regular file."""
    code = ("import warnings, numpy as np\n"
            "with warnings.catch_warnings(record=True) as w:\n"
            "    warnings.simplefilter('always')\n"
            "    import rbdiff as rbd\n"
            "print(sum('NUMBA_CACHE_DIR' in str(x.message) for x in w))\n"
            "m = rbd.load_robot('iiwa14')\n"
            "print(rbd.gravity(m, np.zeros(7))[1])\n")
    env = dict(os.environ, NUMBA_CACHE_LOCATOR_CLASSES="IPythonCacheLocator",
               PYTHONPATH=ROOT)
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    warned, g1 = r.stdout.split()
    assert warned == "1"
    import numpy as np

    import rbdiff as rbd
    m = rbd.load_robot("iiwa14")
    assert float(g1) == pytest.approx(rbd.gravity(m, np.zeros(7))[1], rel=1e-12)
