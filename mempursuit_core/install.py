"""The install line of a ``mempursuit`` extra, in one place.

Until the first release is on the registry, ``pip install`` of the package by name finds
nothing: every install line (error messages, ``mempursuit adapters``, the docs, the examples'
*Run it*, the tests' skip reasons) installs from a checkout of the repository, run in it:
``pip install -e ".[mem0]"``. ``tests/test_install_lines.py`` keeps them consistent; the
README's *Install* names the one line that works after the release.
"""

from __future__ import annotations

__all__ = ["install_line"]


def install_line(extras: str) -> str:
    """The command that installs ``mempursuit`` with ``extras``, and where to run it.

    Parameters
    ----------
    extras : str
        One extra or several, comma-separated (``"mem0"``, ``"graphiti,embed"``).

    Returns
    -------
    str
        ``pip install -e ".[mem0]" (in a mempursuit checkout)``.
    """
    return f'pip install -e ".[{extras}]" (in a mempursuit checkout)'
