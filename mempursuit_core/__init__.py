"""mempursuit: residual-pursuit read policies for agent-memory frameworks."""

from .builtins import DEFAULT_POLICY
from .plugins import get_selector, list_selectors, resolve_selector
from .pursuit import PursuitOptions, PursuitResult, select, select_batch
from .selectors import PoolSelector, Selection, Selector

__all__ = [
    "DEFAULT_POLICY",
    "PoolSelector",
    "PursuitOptions",
    "PursuitResult",
    "Selection",
    "Selector",
    "get_selector",
    "list_selectors",
    "resolve_selector",
    "select",
    "select_batch",
]
__version__ = "0.1.0"
