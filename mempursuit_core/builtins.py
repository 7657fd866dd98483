"""The built-in read policies, registered through the plugin hook exactly as a plugin's are.

The ones a user picks: ``native``, ``mempursuit`` (``adaptive=true`` stops early) and ``mmr``,
and the default ``centered-fusion``. The experiments register themselves as
``experimental/NAME`` (:mod:`mempursuit_core.experimental`); old names work for one release.
"""

from __future__ import annotations

import functools
import inspect
import warnings

from .hookspecs import hookimpl
from .policies import CenteredFusion
from .selectors import MMRSelector, NativeSelector, PursuitSelector

#: The read policy the adapters and ``mempursuit eval`` use unless told otherwise.
DEFAULT_POLICY = CenteredFusion.name

#: Old names kept for one release: ``{old: (new name, options it fixes)}``.
DEPRECATED_ALIASES = {
    "pursuit-center": (CenteredFusion.name, {}),
    "mempursuit-adaptive": ("mempursuit", {"adaptive": True}),
    **{old: (f"experimental/{old}", {}) for old in (
        "pursuit-rank", "pursuit-anchor", "pursuit-joint", "pursuit-time", "native-dedup")},
}


def _fixing(cls, **fixed):
    """``cls`` with some keywords fixed; its signature lists the options it still takes."""
    def build(**options):
        return cls(**fixed, **options)

    sig = inspect.signature(cls)
    build.__signature__ = sig.replace(
        parameters=[p for p in sig.parameters.values() if p.name not in fixed])
    return build


def spelled(name: str, fixed: dict) -> str:
    """A policy as ``mempursuit eval --policies`` spells it: ``NAME[:KEY=VALUE,...]``."""
    opts = ",".join(f"{k}={str(v).lower() if isinstance(v, bool) else v}"
                    for k, v in fixed.items())
    return f"{name}:{opts}" if opts else name


def _deprecated(old: str, factory):
    new = spelled(*DEPRECATED_ALIASES[old])

    @functools.wraps(factory)  # the same signature as the policy it names
    def build(**options):
        warnings.warn(f"the read policy {old!r} is now {new!r}; the old name goes in the next "
                      "release", DeprecationWarning, stacklevel=3)
        return factory(**options)

    return build


def _old_factory(new: str, fixed: dict):
    if new.startswith("experimental/"):
        from . import experimental

        cls = experimental.SELECTORS[new]
    else:
        cls = FACTORIES[new][0]
    return _fixing(cls, **fixed) if fixed else cls


FACTORIES = {
    "native": (NativeSelector, NativeSelector.description),
    "mempursuit": (PursuitSelector,
                   "MemPursuit: the paper's simplex-constrained residual pursuit "
                   "(adaptive=true: adaptive stopping, tau=1e-5, patience=2)"),
    "mmr": (MMRSelector, MMRSelector.description),
    CenteredFusion.name: (CenteredFusion, CenteredFusion.description),
}
for _old, (_new, _fixed) in DEPRECATED_ALIASES.items():
    FACTORIES[_old] = (_deprecated(_old, _old_factory(_new, _fixed)),
                       f"deprecated name of {spelled(_new, _fixed)}")


@hookimpl
def register_selectors(register):
    for name, (factory, description) in FACTORIES.items():
        register(name, factory, description)
