"""A selector that records the signals an adapter hands a read policy (shared by the tests)."""

import numpy as np

from mempursuit_core import Selection, Selector


class SignalProbe(Selector):
    """Keeps the native first ``k`` and records pool size, lexical features, times and texts."""

    name = "probe"

    def select(self, query, candidates, k, *, native_scores=None, signals=None):
        self.seen = (len(candidates), np.shape(signals["sparse"]), np.shape(signals["query_sparse"]),
                     list(signals["timestamps"]), list(signals["texts"]))
        return Selection(order=np.arange(min(k, len(candidates))))

    def assert_saw_signals(self, n_returned: int, k: int) -> None:
        """The adapter passed pool-aligned tf-idf rows, a query vector over the same terms, and a
        timestamp and text for every candidate."""
        P, sparse, query_sparse, stamps, texts = self.seen
        assert n_returned == k and sparse[0] == P == len(stamps) == len(texts)
        assert sparse[1] == query_sparse[0] > 0
        assert all(stamps) and all(texts)
