"""pyversity's diversification strategies as named baselines (``pyversity-mmr``, ``-msd``,
``-dpp``, ``-cover``, ``-ssd``).

A user who wants less redundancy in the top K without our read policy would reach for a
diversifier library; `pyversity <https://pypi.org/project/pyversity/>`_ (0.2.0) bundles five
strategies behind one call, ``pyversity.diversify(embeddings, scores, k, strategy, diversity)``.
Each policy here makes that call on the framework's pool, with pyversity's documented defaults:

===================  =========================================================================
``pyversity-mmr``    maximal marginal relevance: ``diversity=0.5`` (lambda 0.5), cosine
``pyversity-msd``    max sum of distances: ``diversity=0.5``, cosine
``pyversity-dpp``    greedy DPP (the library's default strategy): ``diversity=0.5``, ``scale=1``
``pyversity-cover``  facility location: ``diversity=0.5``, ``gamma=0.5``, cosine
``pyversity-ssd``    sliding spectrum decomposition: ``diversity=0.5``, ``gamma=1``,
                     ``window=None`` (= K), ``append_bias=True``, ``normalize_scores=True``
===================  =========================================================================

What each call gets:

* ``embeddings``: the pool's stored vectors, each row scaled to unit length in float64 first
  (pyversity computes in float32, where a finite row of norm above ~3e38 would overflow; it
  normalises the rows again itself, so this changes nothing but the last float32 bit). A row
  that cannot be normalised is refused by name, as by every selector.
* ``scores``: the framework's own scores of the pool, ``native_scores`` (the plain store: the
  cosine of the dense order, or the min-max fused dense + BM25 score of the hybrid order), because
  a user drops the diversifier in after the retriever and hands it what the retriever scored;
  the first pick of MMR, MSD, DPP and SSD is then the native top 1. A pool without native scores
  (and ``scores="cosine"``) gets each row's cosine with the query, what a dense retriever
  scores. The scores must be finite.

pyversity ships only with the ``[diversifiers]`` extra (``pip install -e ".[diversifiers]"``);
without it these policies are not registered (``mempursuit selectors`` does not list them).
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping

import numpy as np

from mempursuit_core import Selection
from mempursuit_core.install import install_line
from mempursuit_core.lazy import installed as importable
from mempursuit_core.selectors import PoolSelector
from mempursuit_core.validation import unit_rows

__all__ = ["DIVERSIFIERS", "PyversitySelector", "installed"]

INSTALL = install_line("diversifiers")
SCORES = ("native", "cosine")


def installed() -> bool:
    """Whether pyversity can be imported (without importing it)."""
    return importable("pyversity")  # False too where sys.modules blocks it (as the tests do)


class PyversitySelector(PoolSelector):
    """One pyversity strategy over the pool (subclassed once per strategy below).

    Parameters
    ----------
    diversity : float, default 0.5
        pyversity's trade-off in [0, 1] (0: by ``scores`` alone, 1: diversity alone).
    scores : {"native", "cosine"}, default "native"
        What pyversity ranks by: the pool's ``native_scores`` (their cosine with the query when
        the pool has none), or always that cosine.
    **options
        The strategy's own keyword arguments (see :attr:`DEFAULTS`), pyversity's defaults
        unless given.
    """

    strategy = ""
    #: The strategy's own options with pyversity 0.2.0's documented defaults.
    DEFAULTS: dict = {}
    nested = True  # greedy: pyversity's k-selection is the first k of a larger one

    def __init__(self, *, diversity: float = 0.5, scores: str = "native", **options):
        if not installed():
            raise ValueError(f"{self.name} needs pyversity: {INSTALL}")
        unknown = sorted(set(options) - set(self.DEFAULTS))
        if unknown:
            known = ", ".join(["diversity", "scores", *self.DEFAULTS])
            raise ValueError(f"{self.name} has no option {unknown[0]!r} (options: {known})")
        if not (isinstance(diversity, (int, float)) and 0.0 <= diversity <= 1.0):
            raise ValueError(f"{self.name}: diversity must be in [0, 1], got {diversity!r}")
        if scores not in SCORES:
            raise ValueError(f"{self.name}: scores must be one of {', '.join(SCORES)}, got {scores!r}")
        self.diversity = float(diversity)
        self.scores = scores
        self.options = {**self.DEFAULTS, **options}
        self._check_options()

    def _check_options(self) -> None:
        # pyversity checks its options only on a call: one call on a two-row pool, so that a bad
        # option fails here, once, with pyversity's own message
        from pyversity import diversify

        try:
            diversify(np.eye(2, dtype=np.float32), np.ones(2, dtype=np.float32), 2,
                      strategy=self.strategy, diversity=self.diversity, **self.options)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{self.name}: {exc}") from None

    def _select(self, q, M, k, native_scores, signals) -> Selection:
        from pyversity import diversify

        U = unit_rows(M)
        if self.scores == "native" and native_scores is not None:
            s = native_scores
            bad = np.flatnonzero(~np.isfinite(s) | (np.abs(s) > np.finfo(np.float32).max))
            if bad.size:
                raise ValueError(f"{self.name} needs finite float32 native_scores; score "
                                 f"{int(bad[0])} is {s[bad[0]]!r}")
        else:
            s = U @ q  # q is unit length (PoolSelector)
        # past the pool's rank, DPP's float32 residuals divide by ~0 and overflow: pyversity
        # still returns distinct positions (it masks the chosen ones), so the warning is noise
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            res = diversify(U.astype(np.float32), s.astype(np.float32), k,
                            strategy=self.strategy, diversity=self.diversity, **self.options)
        return Selection(order=np.asarray(res.indices, dtype=np.intp),
                         info={"selection_scores": res.selection_scores})


def _make(strategy: str, description: str, defaults: Mapping) -> type[PyversitySelector]:
    cls = type(f"Pyversity{strategy.upper()}Selector", (PyversitySelector,), {
        "name": f"pyversity-{strategy}", "strategy": strategy, "DEFAULTS": dict(defaults),
        "description": description,
        "__doc__": f"pyversity's ``{strategy}`` strategy over the pool (defaults "
                   f"{', '.join(f'{k}={v!r}' for k, v in {'diversity': 0.5, **defaults}.items())}"
                   f"); see :class:`PyversitySelector`.",
    })
    cls.__module__ = __name__
    # the options by name, so that `mempursuit eval` checks them before it reads any data
    kw = inspect.Parameter.KEYWORD_ONLY
    cls.__signature__ = inspect.Signature(
        [inspect.Parameter("diversity", kw, default=0.5), inspect.Parameter("scores", kw, default="native")]
        + [inspect.Parameter(key, kw, default=value) for key, value in defaults.items()])
    return cls


#: The five strategies, pyversity 0.2.0's documented defaults (``metric`` and ``normalize`` are
#: left at cosine / True: the rows are unit length, so the dot product would be the same).
DIVERSIFIERS: tuple[type[PyversitySelector], ...] = (
    _make("mmr", "pyversity's MMR (diversity 0.5, cosine), by the native scores", {}),
    _make("msd", "pyversity's max sum of distances (diversity 0.5, cosine), by the native scores",
          {}),
    _make("dpp", "pyversity's greedy DPP (diversity 0.5, scale 1), by the native scores",
          {"scale": 1.0}),
    _make("cover", "pyversity's COVER facility location (diversity 0.5, gamma 0.5), by the "
          "native scores", {"gamma": 0.5}),
    _make("ssd", "pyversity's sliding spectrum decomposition (diversity 0.5, gamma 1, window K), "
          "by the native scores", {"gamma": 1.0, "window": None, "append_bias": True,
                                   "normalize_scores": True}),
)
