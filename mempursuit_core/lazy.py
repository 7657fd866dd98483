"""Lazy exports for an adapter package: importing the adapter imports no framework.

An adapter's ``__init__.py`` names what it exports and which submodule holds each name; a name
is imported on first use, and a submodule that needs a framework that is not installed raises
:class:`~mempursuit_core.plugins.AdapterNotInstalledError` naming the extra to install::

    from mempursuit_core.adapter import lazy_exports

    __getattr__, __dir__ = lazy_exports(
        globals(), {"MemPursuitStore": "store", "supported_stores": "readers"},
        needs={"store": "langgraph.store"}, framework="LangGraph", extra="langgraph")
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable, Mapping
from typing import Any

from .install import install_line
from .plugins import AdapterNotInstalledError

__all__ = ["installed", "lazy_exports"]


def installed(module: str) -> bool:
    """Whether ``module`` can be imported (found without importing it)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent missing, or blocked in sys.modules
        return False


def lazy_exports(namespace: dict[str, Any], exports: Mapping[str, str], *,
                 needs: Mapping[str, str] | None = None, framework: str, extra: str,
                 install: str | None = None, moved: Mapping[str, str] | None = None
                 ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A package's module-level ``__getattr__`` and ``__dir__`` for its lazy names.

    Parameters
    ----------
    namespace : dict
        The package's ``globals()`` (its ``__name__``; imported names are cached there).
    exports : mapping
        Exported name -> the submodule that defines it (``"store"``), or ``"submodule:attr"``
        when the attribute has another name there.
    needs : mapping, optional
        Submodule -> the module it needs (``{"store": "langgraph.store"}``); ``"*"`` stands for
        every submodule. Default: none needs anything.
    framework : str
        Named in the error (``"LangGraph"``).
    extra : str
        The extra that installs it (:func:`mempursuit_core.install.install_line`).
    install : str, optional
        Another install instruction, where the extra alone does not install the framework.
    moved : mapping, optional
        Names that left the package -> where they went (an ``AttributeError`` says so).

    Returns
    -------
    (__getattr__, __dir__)
    """
    package = namespace["__name__"]
    needs = dict(needs or {})
    moved = dict(moved or {})
    how = install or install_line(extra)

    def __getattr__(name: str) -> Any:
        if name in moved:
            raise AttributeError(f"{package}.{name} moved to {moved[name]}")
        target = exports.get(name)
        if target is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module_name, _, attr = target.partition(":")
        required = needs.get(module_name, needs.get("*"))
        if required is not None and not installed(required):
            raise AdapterNotInstalledError(
                f"{package}.{name} needs {framework}, which is not installed: {how}")
        value = getattr(importlib.import_module(f".{module_name}", package), attr or name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(exports))

    return __getattr__, __dir__
