"""The harness's own hook, declared by the harness (the core declares only the read's hooks):
pluggy takes hook specifications from several modules, and :func:`add_hookspecs` adds this one
to the core's plugin host the first time the harness asks for its stores."""

import threading

from mempursuit_core.hookspecs import hookspec

_lock = threading.Lock()
_added = False


@hookspec
def register_eval_backends(register):
    """Register evaluation stores (``mempursuit eval --framework NAME``):
    ``register(name, factory, description="")``.

    ``factory`` is the store class (or a callable taking the ``--backend-opt`` options) or, to
    keep listing the stores cheap, a ``"module:attr"`` string imported only when the store is
    built (a store's module imports its framework). The built-in ones come from the harness's
    plugin (:mod:`mempursuit_eval.plugin`).
    """


def add_hookspecs() -> None:
    """Declare :func:`register_eval_backends` on the core's plugin host (once)."""
    global _added
    with _lock:
        if not _added:
            import sys

            from mempursuit_core.plugins import pm

            pm.add_hookspecs(sys.modules[__name__])
            _added = True
