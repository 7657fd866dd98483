"""The built-in read policies, registered through the plugin hook exactly as a plugin's are."""

from __future__ import annotations

import functools
import inspect
import warnings

from .hookspecs import hookimpl
from .policies import (AnchoredPursuit, CenteredFusion, JointPursuit, NativeDedup,
                       RankPriorPursuit, TimePursuit)
from .selectors import MMRSelector, NativeSelector, PursuitSelector

#: The read policy the adapters and ``mempursuit eval`` use unless told otherwise.
DEFAULT_POLICY = CenteredFusion.name

#: Old names kept for one release: ``{old: new}``.
DEPRECATED_ALIASES = {"pursuit-center": CenteredFusion.name}


def _fixing(cls, **fixed):
    """``cls`` with some keywords fixed; its signature lists the options it still takes."""
    def build(**options):
        return cls(**fixed, **options)

    sig = inspect.signature(cls)
    build.__signature__ = sig.replace(
        parameters=[p for p in sig.parameters.values() if p.name not in fixed])
    return build


def _deprecated(old: str, factory):
    @functools.wraps(factory)  # the same signature as the policy it names
    def build(**options):
        warnings.warn(f"the read policy {old!r} is now called {DEPRECATED_ALIASES[old]!r}; "
                      "the old name goes in the next release", DeprecationWarning, stacklevel=3)
        return factory(**options)

    return build


FACTORIES = {
    "native": (NativeSelector, NativeSelector.description),
    "mempursuit": (_fixing(PursuitSelector, adaptive=False),
                   "MemPursuit: the paper's simplex-constrained residual pursuit"),
    "mempursuit-adaptive": (_fixing(PursuitSelector, adaptive=True),
                            "MemPursuit with adaptive stopping (tau=1e-5, patience=2)"),
    "mmr": (MMRSelector, MMRSelector.description),
    CenteredFusion.name: (CenteredFusion, CenteredFusion.description),
    "pursuit-rank": (RankPriorPursuit, RankPriorPursuit.description),
    "pursuit-anchor": (AnchoredPursuit, AnchoredPursuit.description),
    "pursuit-joint": (JointPursuit, JointPursuit.description),
    "pursuit-time": (TimePursuit, TimePursuit.description),
    "native-dedup": (NativeDedup, NativeDedup.description),
}
for _old, _new in DEPRECATED_ALIASES.items():
    FACTORIES[_old] = (_deprecated(_old, FACTORIES[_new][0]), f"deprecated name of {_new}")


@hookimpl
def register_selectors(register):
    for name, (factory, description) in FACTORIES.items():
        register(name, factory, description)
