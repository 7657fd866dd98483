"""Hook specifications for mempursuit plugins (entry-point group ``mempursuit``)."""

import pluggy

hookspec = pluggy.HookspecMarker("mempursuit")
hookimpl = pluggy.HookimplMarker("mempursuit")


@hookspec
def register_selectors(register):
    """Register read policies: ``register(name, factory, description="")``.

    ``factory(**options)`` returns an object with the :class:`mempursuit_core.Selector` interface.
    """


@hookspec
def register_adapters(register):
    """Register framework adapters: ``register(AdapterSpec(...))``."""


@hookspec
def register_commands(subparsers):
    """Add sub-commands to the ``mempursuit`` command line: ``subparsers.add_parser(...)``.

    Each parser sets ``func`` (``set_defaults(func=...)``) to a callable taking the parsed
    arguments and returning the exit status.
    """
