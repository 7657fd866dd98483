"""Progress bars for the harness's long steps (tqdm when installed, else nothing)."""

from __future__ import annotations

import sys

__all__ = ["Progress"]


class Progress:
    """tqdm when installed and enabled, else a no-op with the same methods.

    Used as a context manager, a step that ends without an error shows 100% even where some
    of its items were served from a cache or repeated (texts that occur twice are embedded once).
    """

    def __init__(self, enabled: bool, total: int, desc: str):
        self.bar = None
        if enabled:
            try:
                from tqdm.auto import tqdm
            except ImportError:
                tqdm = None
            if tqdm is not None:
                self.bar = tqdm(total=total, desc=desc, unit="it", leave=True, file=sys.stderr,
                                dynamic_ncols=True)

    def update(self, n: int = 1) -> None:
        if self.bar is not None:
            self.bar.update(n)

    def close(self, *, complete: bool = False) -> None:
        if self.bar is not None:
            if complete and self.bar.total is not None and self.bar.n < self.bar.total:
                self.bar.update(self.bar.total - self.bar.n)
            self.bar.close()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, *exc):
        self.close(complete=exc_type is None)
