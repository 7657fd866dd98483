"""Argument checks shared by the core, the adapters and the harness (one wording everywhere)."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["check_int", "check_k", "checked_order"]


def check_int(name: str, value: Any, *, minimum: int = 1, allow_none: bool = False) -> int | None:
    """``value`` as an ``int >= minimum`` (``None`` passes when ``allow_none``).

    Raises
    ------
    TypeError
        When ``value`` is not an integer (``bool`` is refused).
    ValueError
        When it is below ``minimum``.
    """
    if value is None and allow_none:
        return None
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}: {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return int(value)


def check_k(k: Any, name: str = "k") -> int:
    """A budget: an ``int >= 1``."""
    return check_int(name, k)


def checked_order(selection: Any, k: int, P: int, selector: Any = None) -> np.ndarray:
    """A selector's order as intp positions, checked before an adapter trusts it.

    Parameters
    ----------
    selection : Selection or array_like of int, shape (n,)
    k : int
        The budget the selector was given.
    P : int
        The pool size.
    selector : object, optional
        Named in the error message.

    Returns
    -------
    ndarray of intp, shape (n,), ``n <= min(k, P)``

    Raises
    ------
    TypeError
        When the order is not integer.
    ValueError
        When it repeats a position, leaves ``range(P)`` or holds more than ``k`` positions.
    """
    order = np.asarray(getattr(selection, "order", selection)).reshape(-1)
    if order.size and not np.issubdtype(order.dtype, np.integer):
        raise TypeError(f"selector {selector!r} returned a non-integer order")
    order = order.astype(np.intp, copy=False)
    if (len(np.unique(order)) != len(order) or len(order) > k
            or (len(order) and (order.min() < 0 or order.max() >= P))):
        raise ValueError(f"selector {selector!r} returned an invalid order {order}")
    return order
