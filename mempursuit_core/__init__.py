"""mempursuit: residual-pursuit read policies for agent-memory frameworks."""

from .pursuit import PursuitResult, select, select_batch
from .selectors import Selection, Selector, get_selector, list_selectors

__all__ = [
    "PursuitResult",
    "Selection",
    "Selector",
    "get_selector",
    "list_selectors",
    "select",
    "select_batch",
]
__version__ = "0.1.0"
