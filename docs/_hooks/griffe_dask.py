"""A griffe extension for the reference: rbdiff.dask makes most of its functions when it is
imported (one lazy wrapper per declared NumPy function, ``globals()[name] = _lazy(name)``),
which reading the source cannot see. This imports rbdiff.dask alone, inspects it, and adds
the functions of its ``__all__`` that the source does not define to the statically loaded
module, with their signatures and docstrings; every other module stays read from source.
"""

import griffe


class DaskMembers(griffe.Extension):
    def on_module(self, *, mod, **kwargs):
        if mod.path != "rbdiff.dask":
            return
        import rbdiff.dask as rdd

        inspected = griffe.inspect("rbdiff.dask", docstring_parser=mod.docstring.parser
                                   if mod.docstring else None)
        for name in rdd.__all__:
            if name not in mod.members or mod.members[name].is_alias:
                member = inspected.members[name]
                member.parent = mod
                mod.set_member(name, member)
        mod.exports = list(rdd.__all__)
