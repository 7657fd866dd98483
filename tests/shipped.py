"""What the ``mempursuit`` distribution registers through its entry points (group
``mempursuit``, read with :mod:`importlib.metadata`), for the tests that must cover every
adapter: a new adapter with an entry point is found here, never left out of a hard-coded list."""

from __future__ import annotations

import importlib.metadata
import importlib.util
from pathlib import Path

from mempursuit_core.plugins import DISTRIBUTION, ENTRY_POINT_GROUP, AdapterSpec


#: Adapters whose framework takes over the process when imported (cognee clears the root
#: logger's handlers, sets ``sys.excepthook`` and writes log files at import): the in-process
#: tests skip them, saying so; their own module checks the same in a subprocess.
OWN_PROCESS = {"cognee": "cognee reconfigures the process's logging at import: its option "
                         "surface is checked in its own process (integration_tests/test_cognee.py)",
               "crewai": "crewai replaces warnings.warn at import (dropping pydantic's deprecation "
                         "warnings process-wide): its option surface is checked by "
                         "integration_tests/test_crewai.py, which puts warnings.warn back"}


def shipped_entry_points() -> dict[str, importlib.metadata.EntryPoint]:
    """``{name: entry point}`` of the group ``mempursuit`` that this distribution declares."""
    return {ep.name: ep for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)
            if ep.dist is not None and (ep.dist.metadata["Name"] or "").lower() == DISTRIBUTION}


def shipped_adapters() -> dict[str, AdapterSpec]:
    """``{adapter name: spec}`` registered by the distribution's own plugins (each plugin's
    ``register_adapters`` called directly, so no third-party plugin is involved)."""
    found: dict[str, AdapterSpec] = {}
    for ep in shipped_entry_points().values():
        hook = getattr(ep.load(), "register_adapters", None)
        if hook is not None:
            hook(register=lambda spec: found.setdefault(spec.name, spec))
    return dict(sorted(found.items()))


def top_package(spec: AdapterSpec) -> str:
    """The adapter's import package (``mempursuit_mem0``)."""
    return spec.module.split(".")[0]


def package_folder(package: str) -> Path:
    """Where an installed package's sources lie (``adapters/mempursuit_mem0`` for ``mempursuit_mem0``)."""
    return Path(next(iter(importlib.util.find_spec(package).submodule_search_locations)))
