"""MemPursuit for Graphiti (the graph memory behind Zep): a read policy on fact and entity search.

The one line, after building the ``Graphiti`` instance::

    from mempursuit_graphiti import MemPursuitGraphiti

    graphiti = MemPursuitGraphiti(graphiti)

``graphiti.search(...)`` and ``graphiti.search_(...)`` then return what the read policy picks
from Graphiti's own fused top ``P``; every other attribute and method is the wrapped instance's.
Importing this package imports nothing from Graphiti.
"""

from mempursuit_core.adapter import adapter_package

SPEC, __all__, __getattr__, __dir__, register_adapters = adapter_package(globals())
