"""Warnings attributed to the user's line rather than rbdiff's (a leaf module: the
kernels' compile notice uses it too)."""

import os
import sys
import warnings

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep   # rbdiff/


def warn_user(message, category=UserWarning, skip=()):
    """warnings.warn(message, category) pointing at the first caller outside rbdiff (and
    outside the folders ``skip``, each ending in os.sep): the line that called
    load_urdf, not the parser's, as Python 3.12's skip_file_prefixes."""
    prefixes = (_PACKAGE,) + tuple(skip)
    level, f = 2, sys._getframe(1)
    while f.f_back is not None and os.path.abspath(f.f_code.co_filename).startswith(prefixes):
        f, level = f.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)
