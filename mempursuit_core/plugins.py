"""The plugin host: one pluggy manager, built-ins registered the same way as third parties.

Set ``MEMPURSUIT_PLUGINS`` to a comma-separated allow-list of plugin (entry-point) names to load
only those; set it to an empty string to load no external plugin at all (tests do this).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import os
import threading
import warnings
from dataclasses import dataclass
from typing import Any, Callable

import pluggy

from . import hookspecs

__all__ = [
    "AdapterSpec",
    "AdapterNotInstalledError",
    "UnknownNameError",
    "get_plugin_manager",
    "load_plugins",
    "get_adapter_spec",
    "load_adapter",
    "list_adapters",
]

ENTRY_POINT_GROUP = "mempursuit"
ALLOW_ENV = "MEMPURSUIT_PLUGINS"

# Modules with the built-in hook implementations; registered under their entry-point names when
# the distribution is not installed (running from a source checkout) or the entry point was skipped.
BUILTIN_PLUGINS = {
    "builtin-selectors": "mempursuit_core.selectors",
    "mem0": "mempursuit_mem0.plugin",
    "lightmem": "mempursuit_lightmem.plugin",
    "simplemem": "mempursuit_simplemem.plugin",
    "memorybank": "mempursuit_memorybank.plugin",
}

pm = pluggy.PluginManager(ENTRY_POINT_GROUP)
pm.add_hookspecs(hookspecs)
_loaded = False
_lock = threading.Lock()


class UnknownNameError(KeyError):
    """An unknown selector or adapter was asked for; the message lists what exists."""

    def __init__(self, kind: str, name: str, known: list[str]):
        self.kind, self.name, self.known = kind, name, sorted(known)
        super().__init__(name)

    def __str__(self) -> str:
        return f"unknown {self.kind} {self.name!r}; registered: {', '.join(self.known) or '(none)'}"


class AdapterNotInstalledError(ImportError):
    """The framework an adapter needs is not importable; the message names the extra to install."""


@dataclass(frozen=True)
class AdapterSpec:
    """What a plugin says about one framework adapter.

    Parameters
    ----------
    name : str
        Short name used on the command line and in configs (``"mem0"``).
    module : str
        Import path of the adapter module (imported only when asked for).
    framework : str
        Top-level import name of the framework (``"mem0"``); used to report whether it is installed.
    extra : str or None
        The ``mempursuit`` extra that installs the framework's dependencies (``"mem0"``).
    summary : str
        One line for ``mempursuit adapters``.
    install_hint : str or None
        Overrides the default ``pip install "mempursuit[extra]"`` hint.
    eval_backend : str or None
        ``"module:attr"`` of a callable returning a :class:`mempursuit_core.eval.base.StoreBackend`
        for ``mempursuit eval --framework NAME`` (imported only when asked for).
    """

    name: str
    module: str
    framework: str
    extra: str | None = None
    summary: str = ""
    install_hint: str | None = None
    eval_backend: str | None = None

    @property
    def hint(self) -> str:
        if self.install_hint:
            return self.install_hint
        if self.extra:
            return f'pip install "mempursuit[{self.extra}]"'
        return f"pip install {self.framework}"

    def framework_installed(self) -> bool:
        try:
            return importlib.util.find_spec(self.framework) is not None
        except (ImportError, ValueError):
            return False


def _allow_list() -> set[str] | None:
    raw = os.environ.get(ALLOW_ENV)
    if raw is None:
        return None
    return {p.strip() for p in raw.split(",") if p.strip()}


def load_plugins() -> pluggy.PluginManager:
    """Load entry-point plugins (honouring the allow-list) and the built-ins; idempotent."""
    global _loaded
    with _lock:
        if _loaded:
            return pm
        allow = _allow_list()
        for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
            if pm.get_plugin(ep.name) is not None or pm.is_blocked(ep.name):
                continue
            is_builtin = BUILTIN_PLUGINS.get(ep.name) == ep.value
            if allow is not None and ep.name not in allow and not is_builtin:
                continue
            try:
                module = ep.load()
            except Exception as exc:  # a broken plugin must not take the host down; say so
                warnings.warn(
                    f"mempursuit plugin {ep.name!r} ({ep.value}) failed to load and was skipped: "
                    f"{type(exc).__name__}: {exc}",
                    RuntimeWarning,
                    stacklevel=2,
                )
                pm.set_blocked(ep.name)
                continue
            pm.register(module, name=ep.name)
        for name, modname in BUILTIN_PLUGINS.items():
            if pm.get_plugin(name) is None and not pm.is_blocked(name):
                try:
                    module = importlib.import_module(modname)
                except ModuleNotFoundError as exc:
                    # An adapter package left out of a partial install: skip it, nothing else.
                    if exc.name and modname.startswith(exc.name):
                        continue
                    raise
                pm.register(module, name=name)
        _loaded = True
    return pm


def get_plugin_manager() -> pluggy.PluginManager:
    return load_plugins()


def _collect(hook: str) -> dict[str, Any]:
    found: dict[str, Any] = {}
    getattr(load_plugins().hook, hook)(register=_registrar(hook, found))
    return found


def _registrar(hook: str, found: dict[str, Any]) -> Callable[..., None]:
    if hook == "register_adapters":

        def register(spec: AdapterSpec) -> None:
            found[spec.name] = spec

    else:

        def register(name: str, factory: Callable[..., Any], description: str = "") -> None:
            found[name] = (factory, description)

    return register


def list_adapters() -> dict[str, AdapterSpec]:
    """Registered adapters by name."""
    return _collect("register_adapters")


def list_selector_factories() -> dict[str, tuple[Callable[..., Any], str]]:
    """Registered selector factories by name: ``{name: (factory, description)}``."""
    return _collect("register_selectors")


def get_adapter_spec(name: str) -> AdapterSpec:
    adapters = list_adapters()
    if name not in adapters:
        raise UnknownNameError("adapter", name, list(adapters))
    return adapters[name]


def load_adapter(name: str):
    """Import an adapter's module, raising :class:`AdapterNotInstalledError` if its framework is missing."""
    spec = get_adapter_spec(name)
    if not spec.framework_installed():
        raise AdapterNotInstalledError(
            f"the {name} adapter needs the {spec.framework!r} package, which is not installed: "
            f"{spec.hint}"
        )
    return importlib.import_module(spec.module)
