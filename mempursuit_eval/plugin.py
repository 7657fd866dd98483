"""The harness as a plugin of the ``mempursuit`` command: it adds ``mempursuit eval`` and
``mempursuit convert``."""

from mempursuit_core.hookspecs import hookimpl


@hookimpl
def register_commands(subparsers):
    from .cli import add_eval_parser
    from .convert import add_convert_parser

    add_eval_parser(subparsers)
    add_convert_parser(subparsers)
