"""The built-in read policies, registered through the plugin hook exactly as a plugin's are."""

from __future__ import annotations

import warnings

from .hookspecs import hookimpl
from .policies import (AnchoredPursuit, CenteredFusion, JointPursuit, NativeDedup,
                       RankPriorPursuit, TimePursuit)
from .selectors import MMRSelector, NativeSelector, PursuitSelector

#: The read policy the adapters and ``mempursuit eval`` use unless told otherwise.
DEFAULT_POLICY = CenteredFusion.name

#: Old names kept for one release: ``{old: new}``.
DEPRECATED_ALIASES = {"pursuit-center": CenteredFusion.name}


def _paper(**options) -> PursuitSelector:
    return PursuitSelector(adaptive=False, **options)


def _paper_adaptive(**options) -> PursuitSelector:
    return PursuitSelector(adaptive=True, **options)


def _deprecated(old: str, factory):
    def build(**options):
        warnings.warn(f"the read policy {old!r} is now called {DEPRECATED_ALIASES[old]!r}; "
                      "the old name goes in the next release", DeprecationWarning, stacklevel=3)
        return factory(**options)

    return build


FACTORIES = {
    "native": (NativeSelector, NativeSelector.description),
    "mempursuit": (_paper, "MemPursuit: the paper's simplex-constrained residual pursuit"),
    "mempursuit-adaptive": (_paper_adaptive,
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
