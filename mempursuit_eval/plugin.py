"""The harness as a plugin of the ``mempursuit`` command: it adds ``mempursuit eval``."""

from mempursuit_core.hookspecs import hookimpl


@hookimpl
def register_commands(subparsers):
    from .cli import add_eval_parser

    add_eval_parser(subparsers)
