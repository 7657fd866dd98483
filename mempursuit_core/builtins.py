"""The built-in read policies, registered through the plugin hook exactly as a plugin's are.

The ones a user picks: ``native``, ``mempursuit`` (``adaptive=true`` stops early) and ``mmr``,
and the default ``centered-fusion``. The experiments that lost to it are the harness's
(``experimental/NAME``, :mod:`mempursuit_eval.experimental`).
"""

from __future__ import annotations

from .hookspecs import hookimpl
from .policies import CenteredFusion
from .selectors import MMRSelector, NativeSelector, PursuitSelector

#: The read policy the adapters and ``mempursuit eval`` use unless told otherwise.
DEFAULT_POLICY = CenteredFusion.name
#: Policies kept for research register under this prefix (``mempursuit selectors`` lists them
#: apart; the harness's, :mod:`mempursuit_eval.experimental`)
EXPERIMENTAL_PREFIX = "experimental/"

FACTORIES = {
    "native": (NativeSelector, NativeSelector.description),
    "mempursuit": (PursuitSelector,
                   "MemPursuit: the paper's simplex-constrained residual pursuit "
                   "(adaptive=true: adaptive stopping, tau=1e-5, patience=2)"),
    "mmr": (MMRSelector, MMRSelector.description),
    CenteredFusion.name: (CenteredFusion, CenteredFusion.description),
}


@hookimpl
def register_selectors(register):
    for name, (factory, description) in FACTORIES.items():
        register(name, factory, description)
