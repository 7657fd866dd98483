"""The plugin host: one pluggy manager; the built-ins are registered the way a plugin is.

The core's own read policies (:mod:`mempursuit_core.builtins`) are registered when the host is
created; everything else (the framework adapters, the evaluation harness with the experimental
policies it measures, third parties) comes from entry points of the group ``mempursuit``, loaded only when something not built in is asked
for (an unknown selector name, the adapter list, the command line). Importing the core or
building a built-in selector therefore imports no plugin.

Set ``MEMPURSUIT_PLUGINS`` to a comma-separated allow-list of entry-point names to load only
those besides the ones the ``mempursuit`` distribution ships; set it to an empty string to load
no third-party plugin at all (tests do this).

Every hook is called through pluggy, one plugin's implementation at a time (a subset hook
caller), so a plugin's ``hookwrapper`` / ``wrapper`` and pluggy's tracing
(``pm.trace.root.setwriter(print)``) and monitoring work as pluggy documents, and each
registration is known to be its plugin's. A name registered twice keeps the registration of
the plugin that joined the host first (the built-ins, then the distribution's own plugins,
then third-party ones in the order they loaded), and a :class:`RuntimeWarning` says which
plugin was ignored. The hooks are the read's (:mod:`mempursuit_core.hookspecs`); the harness
declares its own (:mod:`mempursuit_eval.hookspecs`).
:func:`plugin_distribution` says which distribution a plugin came from (``mempursuit
adapters`` prints it).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import inspect
import json
import os
import threading
import warnings
from dataclasses import dataclass, field, fields
from typing import Any, Callable, Iterable, Mapping

import pluggy

from . import builtins, hookspecs
from .install import install_line

__all__ = [
    "AdapterSpec",
    "AdapterNotInstalledError",
    "UnknownNameError",
    "adapter_plugins",
    "add_commands",
    "collect",
    "get_adapter_spec",
    "get_plugin_manager",
    "check_selector_options",
    "get_selector",
    "is_allowed",
    "known_selector",
    "list_adapters",
    "list_selectors",
    "load_adapter",
    "load_plugins",
    "plugin_distribution",
    "resolve_selector",
    "selector_options",
    "signature_options",
]

ENTRY_POINT_GROUP = "mempursuit"
ALLOW_ENV = "MEMPURSUIT_PLUGINS"
DISTRIBUTION = "mempursuit"
BUILTIN = "builtin"


class _Host(pluggy.PluginManager):
    """pluggy's manager, reading a module plugin's hooks from the module's own namespace: an
    adapter package's lazy names (:func:`mempursuit_core.lazy.adapter_package`) are listed by
    its ``__dir__`` but never looked up, which would import its framework."""

    def parse_hookimpl_opts(self, plugin: Any, name: str):
        if inspect.ismodule(plugin) and name not in vars(plugin):
            return None
        return super().parse_hookimpl_opts(plugin, name)


pm = _Host(ENTRY_POINT_GROUP)
pm.add_hookspecs(hookspecs)
pm.register(builtins, name=BUILTIN)
_loaded = False
_lock = threading.Lock()
_warned: set[tuple[str, str, str]] = set()
_origins: dict[str, str] = {}  # entry-point plugin name -> "distribution version"
# what each hook registered, per set of registered plugins (a plugin registered or removed in
# code starts a new entry); the hooks are called once per such set, not on every lookup
_collected: dict[tuple, dict[str, tuple[str, Any]]] = {}


class UnknownNameError(KeyError):
    """An unknown selector or adapter was asked for; the message lists what exists.

    ``near`` names the one to suggest where it is not a near spelling (``zep`` -> ``graphiti``),
    ``why`` says why in a few words; without it the closest spelling is suggested."""

    def __init__(self, kind: str, name: str, known: list[str], *, near: str | None = None,
                 why: str = ""):
        self.kind, self.name, self.known = kind, name, sorted(known)
        self.near, self.why = near, why
        super().__init__(name)

    def __str__(self) -> str:
        if self.near:
            hint = f" (did you mean {self.near!r}?{' ' + self.why if self.why else ''})"
        else:
            hint = did_you_mean(self.name, self.known)
        return (f"unknown {self.kind} {self.name!r}{hint}; "
                f"registered: {', '.join(self.known) or '(none)'}")


def did_you_mean(name: str, known) -> str:
    """``" (did you mean 'x'?)"`` for the closest of ``known`` to a misspelt ``name``, or ``""``."""
    import difflib

    close = difflib.get_close_matches(str(name), [str(k) for k in known], n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


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
        Overrides the default hint, :func:`mempursuit_core.install.install_line` of ``extra``
        (``pip install -e ".[extra]"`` in a checkout, until the first release), which stands
        for ``{install}`` in it.
    swap : str
        The one-line swap a user writes (``mempursuit adapters`` prints it).
    docs : str
        Where the adapter is documented (a path in the repository or a URL).
    second_read : str
        How the adapter reads the store a second time for the titles its picks name, in a few
        words (the framework's filter and the scope it keeps); empty where it has none
        (``mempursuit adapters`` prints it).
    exports : mapping
        What the adapter's package exports: name -> the submodule that defines it
        (``{"MemPursuitStore": "store"}``, or ``"submodule:attr"``); the package's ``__all__``
        and lazy names (:func:`mempursuit_core.lazy.adapter_package`).
    needs : mapping or None
        Submodule -> the module it needs (``{"store": "langgraph.store"}``, ``"*"``: every
        submodule); None: every submodule needs ``framework``; ``{}``: none needs anything.
    label : str
        The framework's name as an error says it (``"LangGraph"``); default ``framework``.
    """

    name: str
    module: str
    framework: str
    extra: str | None = None
    summary: str = ""
    install_hint: str | None = None
    swap: str = ""
    docs: str = ""
    second_read: str = ""
    exports: Mapping[str, str] = field(default_factory=dict, hash=False)
    needs: Mapping[str, str] | None = field(default=None, hash=False)
    label: str = ""

    @classmethod
    def read(cls, path: "str | os.PathLike[str]") -> "AdapterSpec":
        """The spec a JSON file states (an adapter package's ``adapter.json``: the field names
        above as keys).

        Raises
        ------
        ValueError
            One line naming the file, for a key that is no field (with a did-you-mean) or a
            file that is not a JSON object.
        """
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        names = [spec_field.name for spec_field in fields(cls)]
        if not isinstance(data, dict):
            raise ValueError(f"{path}: an adapter spec is a JSON object, got {type(data).__name__}")
        unknown = [key for key in data if key not in names]
        if unknown:
            raise ValueError(f"{path}: unknown adapter spec key {unknown[0]!r}"
                             f"{did_you_mean(unknown[0], names)}; valid: {', '.join(names)}")
        return cls(**data)

    @property
    def hint(self) -> str:
        if self.install_hint:
            return self.install_hint.replace("{install}", install_line(self.extra or ""))
        if self.extra:
            return install_line(self.extra)
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


def is_allowed(name: str) -> bool:
    """Whether ``MEMPURSUIT_PLUGINS`` lets the third-party entry point ``name`` load."""
    allow = _allow_list()
    return allow is None or name in allow


def _shipped(ep: importlib.metadata.EntryPoint) -> bool:
    dist = getattr(ep, "dist", None)
    return dist is not None and (dist.metadata["Name"] or "").lower() == DISTRIBUTION


def load_plugins() -> pluggy.PluginManager:
    """Register the entry-point plugins (honouring the allow-list); idempotent, thread-safe.

    A plugin that fails to import is skipped with a :class:`RuntimeWarning` naming it.
    """
    global _loaded
    with _lock:
        if _loaded:
            return pm
        eps = importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)
        for ep in sorted(eps, key=lambda ep: not _shipped(ep)):  # shipped first: they win a clash
            if pm.get_plugin(ep.name) is not None or pm.is_blocked(ep.name):
                continue
            if not is_allowed(ep.name) and not _shipped(ep):
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
            dist = getattr(ep, "dist", None)
            _origins[ep.name] = (f"{dist.metadata['Name']} {dist.version}" if dist is not None
                                 else f"(entry point {ep.value})")
        _loaded = True
    return pm


def get_plugin_manager() -> pluggy.PluginManager:
    """The host's manager with every plugin loaded."""
    return load_plugins()


def collect(hook: str, *, everything: bool = True) -> dict[str, tuple[str, Any]]:
    """``{name: (plugin name, registered value)}`` from real calls of the ``register``-style
    ``hook`` (``register(name, value, description)``, or ``register(spec)`` for adapters).

    Each plugin's implementation is called through pluggy on its own (a subset hook caller:
    its ``wrapper`` / ``hookwrapper`` and pluggy's tracing and monitoring apply), so every
    registration is the plugin's that made it. On a clash the plugin registered with the host
    first keeps the name (built-ins, then the distribution's own plugins, then third-party ones
    in load order), and a :class:`RuntimeWarning` (once) names the one ignored. Names come in
    that order. ``everything=False``: the plugins loaded so far (the built-ins at least).
    """
    if everything:
        load_plugins()
    key = (hook, everything, tuple((name, id(p)) for name, p in pm.list_name_plugin()))
    if key in _collected:
        return dict(_collected[key])
    found = _call_each(hook)
    if len(_collected) > 32:  # plugins registered and removed in code, many times (tests)
        _collected.clear()
    _collected[key] = found
    return dict(found)


def _call_each(hook: str) -> dict[str, tuple[str, Any]]:
    caller = getattr(pm.hook, hook, None)
    if caller is None:
        return {}
    plugins = [(name, plugin) for name, plugin in pm.list_name_plugin()
               if any(impl.plugin is plugin for impl in caller.get_hookimpls())]
    found: dict[str, tuple[str, Any]] = {}
    for name, plugin in plugins:  # the order plugins joined the host: the first keeps a name
        made: list[tuple[str, Any]] = []
        if hook == "register_adapters":
            def register(spec: AdapterSpec) -> None:
                made.append((spec.name, spec))
        else:
            def register(key: str, factory: Callable[..., Any], description: str = "") -> None:
                made.append((key, (factory, description)))
        others = [p for _, p in plugins if p is not plugin]
        pm.subset_hook_caller(hook, remove_plugins=others)(register=register)
        for key, value in made:
            if key not in found:
                found[key] = (name, value)
            elif found[key][0] != name and (hook, key, name) not in _warned:
                _warned.add((hook, key, name))
                warnings.warn(f"plugin {name!r} registers {key!r}, which plugin "
                              f"{found[key][0]!r} already registered; {found[key][0]!r} is kept",
                              RuntimeWarning, stacklevel=3)
    return found


def plugin_distribution(plugin: str) -> str:
    """Which distribution a registered plugin came from: ``"NAME VERSION"`` for an entry-point
    plugin, ``"mempursuit VERSION (built in)"`` for the host's own, ``"(registered in code)"``
    for one given to ``pm.register`` directly."""
    if plugin == BUILTIN:
        return f"{DISTRIBUTION} {_version(DISTRIBUTION)} (built in)"
    return _origins.get(plugin, "(registered in code)")


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "?"


def adapter_plugins() -> dict[str, tuple[AdapterSpec, str, str]]:
    """Registered adapters by name with where each came from:
    ``{name: (spec, plugin name, distribution)}`` (:func:`plugin_distribution`)."""
    return {name: (spec, plugin, plugin_distribution(plugin))
            for name, (plugin, spec) in collect("register_adapters").items()}


def list_adapters() -> dict[str, AdapterSpec]:
    """Registered adapters by name."""
    return {name: spec for name, (_, spec) in collect("register_adapters").items()}


def list_selector_factories(*, plugins: bool = True) -> dict[str, tuple[Callable[..., Any], str]]:
    """Registered selector factories by name: ``{name: (factory, description)}``.

    ``plugins=False``: without loading any entry point (the built-ins, and the plugins loaded
    so far)."""
    return {name: value
            for name, (_, value) in collect("register_selectors", everything=plugins).items()}


def known_selector(name: str) -> bool:
    """Whether ``name`` is a registered selector: the built-ins first (no plugin loaded for
    them), then every plugin's."""
    return (name in collect("register_selectors", everything=False)
            or name in collect("register_selectors"))


def list_selectors() -> dict[str, str]:
    """Registered selector names and one-line descriptions, sorted by name."""
    return {name: desc for name, (_, desc) in sorted(list_selector_factories().items())}


def _selector_factory(name: str) -> Callable[..., Any]:
    found = collect("register_selectors", everything=False)
    if name not in found:
        found = collect("register_selectors")
    if name not in found:
        raise UnknownNameError("selector", name, list(found))
    return found[name][1][0]


def get_selector(name: str, **options: Any):
    """Build a registered selector by name, e.g. ``get_selector("mempursuit", ridge=1e-8)``.

    Built-in names are found without loading any plugin.

    Raises
    ------
    UnknownNameError
        (a ``KeyError``) naming the registered selectors when ``name`` is unknown.
    TypeError
        One line naming an option the selector does not take, with the ones it does
        (:func:`check_selector_options`).
    """
    factory = _selector_factory(name)
    check_selector_options(name, options)
    return factory(**options)


def signature_options(factory: Callable[..., Any]) -> tuple[str, ...] | None:
    """The keyword options ``factory`` takes, from its signature, or None where it takes any.

    A class is read through the ``__init__`` of its bases while each passes ``**options`` on
    (a subclass that adds one option to a policy takes the policy's too); a ``**options`` that
    reaches no base ``__init__`` but ``object``'s is its own, and takes any keyword.
    """
    is_class = isinstance(factory, type)
    inits = ([vars(c)["__init__"] for c in factory.__mro__ if "__init__" in vars(c)]
             if is_class else [factory])
    names: list[str] = []
    for i, init in enumerate(inits):
        if init is object.__init__:
            return () if i == 0 else None  # no __init__ at all: no options
        try:
            params = list(inspect.signature(init).parameters.values())
        except (TypeError, ValueError):  # a builtin or C callable: nothing to check against
            return None
        names += [p.name for p in params[is_class:]  # a method's first parameter is self
                  if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
        if not any(p.kind is p.VAR_KEYWORD for p in params):
            return tuple(dict.fromkeys(names))
    return None


def selector_options(name: str) -> tuple[str, ...] | None:
    """The options the selector registered as ``name`` takes (:func:`signature_options` of its
    factory), or None where it takes any keyword."""
    return signature_options(_selector_factory(name))


def check_selector_options(policy: str, options: Iterable[str] | Mapping[str, Any], *,
                           where: str = "", own: Iterable[str] = ()) -> None:
    """Raise ``TypeError`` (one line) for an option that neither the selector registered as
    ``policy`` nor the caller (``own``: an adapter's own parameter names) takes, with a
    did-you-mean and the valid names.

    ``where`` (an adapter's name) starts the message; with ``own`` the option came through the
    adapter's keywords, else through ``policy_options``. A policy that takes any keyword (a
    factory with ``**options``) accepts every name.
    """
    valid = selector_options(policy)
    own = tuple(own)
    if valid is None:
        return
    unknown = [name for name in options if name not in valid and name not in own]
    if not unknown:
        return
    head = f"{where}: " if where else ""
    what = "option" if own else "policy option"
    bad = ", ".join(f"{name!r}{did_you_mean(name, [*own, *valid])}" for name in unknown)
    ours = f"{', '.join(sorted(own))} ({where or 'the adapter'})" if own else ""
    if valid:
        theirs = f"{', '.join(sorted(valid))} (policy {policy!r})"
        valid_names = f"valid: {ours} and {theirs}" if own else f"valid: {theirs}"
    else:
        valid_names = (f"valid: {ours}; " if own else "") + f"policy {policy!r} takes no options"
    raise TypeError(f"{head}unknown {what}{'s' if len(unknown) > 1 else ''} {bad}; "
                    f"{valid_names}")


def resolve_selector(policy: Any, **options: Any):
    """A selector from a registered name (with ``options``) or a ready selector object.

    Raises
    ------
    UnknownNameError
        For an unknown name.
    TypeError
        For options given with an object, or an object without ``select``.
    """
    if isinstance(policy, str):
        return get_selector(policy, **options)
    if options:
        raise TypeError("policy options are only accepted with a policy name")
    if not callable(getattr(policy, "select", None)):
        raise TypeError(f"policy must be a selector name or a Selector, got {policy!r}")
    return policy


def add_commands(subparsers: Any) -> None:
    """Call every plugin's ``register_commands`` hook with the command line's sub-parsers."""
    load_plugins()
    pm.hook.register_commands(subparsers=subparsers)


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
