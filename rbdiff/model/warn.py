"""Warnings attributed to the user's line rather than rbdiff's parser."""

import os
import sys
import warnings

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep   # rbdiff/


def warn_user(message, category=UserWarning):
    """warnings.warn(message, category) pointing at the first caller outside rbdiff (the
    line that called load_urdf, not the parser's), as Python 3.12's skip_file_prefixes."""
    level, f = 2, sys._getframe(1)
    while f is not None and os.path.abspath(f.f_code.co_filename).startswith(_PACKAGE):
        f, level = f.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)
