"""The service as a plugin of the ``mempursuit`` command: it adds ``mempursuit serve``."""

from mempursuit_core.hookspecs import hookimpl


@hookimpl
def register_commands(subparsers):
    from .cli import add_serve_parser

    add_serve_parser(subparsers)
