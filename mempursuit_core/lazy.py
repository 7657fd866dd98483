"""Lazy exports for an adapter package: importing the adapter imports no framework.

An adapter states itself once, in its :class:`AdapterSpec` (its name, framework, extra, swap
line, and what it exports from which submodule): the shipped adapters in an ``adapter.json``
beside their ``__init__.py`` (the spec's fields as keys), read by :meth:`AdapterSpec.read`. The
package derives the rest from it with one call: a name is imported on first use, a submodule that
needs a framework that is not installed raises
:class:`~mempursuit_core.plugins.AdapterNotInstalledError` naming the extra to install, and the
package is its own plugin (its entry point names the package)::

    from mempursuit_core.adapter import adapter_package

    SPEC, __all__, __getattr__, __dir__, register_adapters = adapter_package(globals())

A third-party package may pass its spec instead: ``adapter_package(globals(), AdapterSpec(...))``.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from collections.abc import Callable, Mapping
from typing import Any

from .hookspecs import hookimpl
from .install import install_line
from .plugins import AdapterNotInstalledError, AdapterSpec

__all__ = ["adapter_package", "installed", "lazy_exports"]


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


def adapter_package(namespace: dict[str, Any], spec: AdapterSpec | None = None, *,
                    moved: Mapping[str, str] | None = None
                    ) -> tuple[AdapterSpec, list[str], Callable[[str], Any],
                               Callable[[], list[str]], Callable[..., None]]:
    """An adapter package's spec, ``__all__``, lazy ``__getattr__`` / ``__dir__`` and plugin
    hook, from its one :class:`AdapterSpec`.

    Parameters
    ----------
    namespace : dict
        The package's ``globals()``.
    spec : AdapterSpec, optional
        The adapter; default the ``adapter.json`` beside the package's ``__init__.py``. Its
        ``exports`` are the package's lazy names, each needing what ``needs`` says (every
        submodule its ``framework`` by default), named in the error by ``label`` with the
        spec's install line.
    moved : mapping, optional
        Names that left the package -> where they went (:func:`lazy_exports`).

    Returns
    -------
    (SPEC, __all__, __getattr__, __dir__, register_adapters)
        ``__all__``: the exported names, sorted; ``register_adapters``: the package's
        ``register_adapters`` hook implementation, registering ``spec`` (the package is the
        plugin its entry point names).
    """
    if spec is None:
        spec = AdapterSpec.read(os.path.join(os.path.dirname(namespace["__file__"]),
                                             "adapter.json"))
    needs = {"*": spec.framework} if spec.needs is None else spec.needs
    getattr_, dir_ = lazy_exports(namespace, spec.exports, needs=needs,
                                  framework=spec.label or spec.framework, extra=spec.extra or "",
                                  install=spec.hint, moved=moved)

    @hookimpl
    def register_adapters(register):
        register(spec)

    return spec, sorted(spec.exports), getattr_, dir_, register_adapters
