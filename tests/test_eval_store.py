"""The built-in plain store, its lexical signals and the embedding cache."""

import math
from collections import Counter

import numpy as np
import pytest

from mempursuit_eval.base import MemoryUnit, StoreBackend
from mempursuit_eval.cache import CachedEmbedder, EmbeddingCache, text_key
from mempursuit_core.lexical import LexicalIndex, pool_bm25, stem, tokenize
from mempursuit_eval.store import PlainStore, PoolSignals, minmax


class TableEmbedder:
    """A fixed lookup table text -> vector (a real, if tiny, embedder for exact expectations)."""

    name = "table"

    def __init__(self, table):
        self.table = {k: np.asarray(v, dtype=np.float32) / np.linalg.norm(v)
                      for k, v in table.items()}
        self.dim = len(next(iter(table.values())))
        self.calls = 0

    def encode(self, texts, *, batch_size=64):
        self.calls += 1
        return np.stack([self.table[t] for t in texts]) if texts else np.zeros((0, self.dim))


def _units(texts, group="g"):
    return [MemoryUnit(uid=f"{group}/{i}", text=t, group=group, session_id=f"{group}/s{i // 2}",
                       source_ids=(f"{group}/t{i}",), timestamp=f"2023-01-0{1 + i % 9}")
            for i, t in enumerate(texts)]


def test_plain_store_is_a_store_backend():
    assert isinstance(PlainStore(), StoreBackend)


def test_dense_order_ties_by_insertion_and_size_cap():
    emb = TableEmbedder({"a": [1, 0], "b": [0, 1], "c": [1, 0], "d": [1, 1], "q": [1, 0]})
    store = PlainStore()
    store.build(_units(["a", "b", "c", "d"]), embedder=emb)
    p = store.pool("g", "q", 3)
    assert p.items == ["g/0", "g/2", "g/3"]          # a and c tie: insertion order
    assert np.allclose(p.native_scores, [1, 1, math.sqrt(0.5)], atol=1e-6)
    assert p.vectors.shape == (3, 2) and p.query_vector.shape == (2,)
    assert store.pool("g", "q", 50).items == ["g/0", "g/2", "g/3", "g/1"]
    with pytest.raises(KeyError, match="no units in group"):
        store.pool("other", "q", 3)
    with pytest.raises(ValueError, match="pool size must be >= 1, got 0"):
        store.pool("g", "q", 0)
    with pytest.raises(RuntimeError, match="build\\(\\) the store"):
        PlainStore().pool("g", "q", 3)


def test_groups_are_separate_and_duplicates_rejected():
    emb = TableEmbedder({"x": [1, 0], "y": [0, 1], "q": [0, 1]})
    store = PlainStore()
    store.build(_units(["x"], "g1") + _units(["y", "x"], "g2"), embedder=emb)
    assert store.pool("g1", "q", 5).items == ["g1/0"]
    assert store.pool("g2", "q", 5).items == ["g2/0", "g2/1"]
    with pytest.raises(ValueError, match="duplicate unit uid"):
        PlainStore().build(_units(["x", "y"]) + _units(["x"]), embedder=emb)


def test_hybrid_is_equal_weight_minmax_of_dense_and_bm25():
    texts = ["the red apple pie", "green apple", "blue sky today", "red red car", "apple"]
    vecs = {t: [np.cos(i), np.sin(i), 0.3] for i, t in enumerate(texts)}
    vecs["red apple?"] = [1.0, 0.2, 0.1]
    emb = TableEmbedder(vecs)
    store = PlainStore(native="hybrid")
    store.build(_units(texts), embedder=emb)
    p = store.pool("g", "red apple?", 5)
    V = np.stack([emb.table[t] for t in texts])
    dense = V @ emb.table["red apple?"]
    bm25 = LexicalIndex(texts).bm25("red apple?")
    combined = minmax(dense) + minmax(bm25)
    expected = [f"g/{i}" for i in np.argsort(-combined, kind="stable")]
    assert p.items == expected
    assert np.allclose(p.native_scores, np.sort(combined)[::-1])
    assert np.allclose(p.signals["bm25"], bm25[np.argsort(-combined, kind="stable")])
    # the hybrid store's keyword channel is its "lexical" signal; a dense store has none
    assert np.allclose(p.signals["lexical"], p.signals["bm25"])
    assert p.signals["query_text"] == "red apple?"
    dense_store = PlainStore(native="dense")
    dense_store.build(_units(texts), embedder=emb)
    assert "lexical" not in dense_store.pool("g", "red apple?", 5).signals
    with pytest.raises(ValueError, match="native order"):
        PlainStore(native="sparse")


def test_signals_are_lazy_and_consistent():
    texts = ["alpha beta", "beta gamma", "delta", "alpha alpha epsilon"]
    emb = TableEmbedder({**{t: [1, i, 0.5] for i, t in enumerate(texts)}, "alpha?": [1, 0, 0]})
    store = PlainStore()
    store.build(_units(texts), embedder=emb)
    p = store.pool("g", "alpha?", 4)
    assert isinstance(p.signals, PoolSignals) and p.signals.computed() == []
    assert set(p.signals) >= {"dense", "bm25", "sparse", "query_sparse", "timestamps",
                              "session_ids", "texts", "sparse_terms"}
    X = p.signals["sparse"]
    assert p.signals.computed() == ["sparse"]
    qx = p.signals["query_sparse"]
    assert X.shape == (4, len(p.signals["sparse_terms"])) and qx.shape == (X.shape[1],)
    norms = np.linalg.norm(X, axis=1)
    assert np.allclose(norms[norms > 0], 1.0, atol=1e-6) and np.isclose(np.linalg.norm(qx), 1)
    terms = p.signals["sparse_terms"]
    assert qx[terms.index("alpha")] == pytest.approx(1.0)
    assert np.allclose(p.signals["dense"], p.native_scores)
    assert p.signals["texts"] == [texts[int(u.split("/")[1])] for u in p.items]
    # write order within the group: the unit's index among the group's units
    assert p.signals["positions"].tolist() == [int(u.split("/")[1]) for u in p.items]
    s2 = PlainStore(signals=False)
    s2.build(_units(texts), embedder=emb)
    assert dict(s2.pool("g", "alpha?", 2).signals) == {}


def _bm25_reference(docs, query, k1=1.2, b=0.75):
    toks = [tokenize(d) for d in docs]
    N = len(docs)
    avgdl = sum(map(len, toks)) / N
    df = Counter(t for d in toks for t in set(d))
    out = []
    for d in toks:
        tf = Counter(d)
        s = 0.0
        for t in set(tokenize(query)):
            if t in tf:
                idf = math.log(1 + (N - df[t] + 0.5) / (df[t] + 0.5))
                s += idf * tf[t] * (k1 + 1) / (tf[t] + k1 * (1 - b + b * len(d) / avgdl))
        out.append(s)
    return np.array(out)


def test_bm25_and_tfidf_match_slow_references(rng):
    words = "cat dog bird fish tree rock sun moon star river lake hill".split()
    docs = [" ".join(rng.choice(words, size=rng.integers(0, 12))) for _ in range(40)]
    ix = LexicalIndex(docs)
    for query in ("cat dog", "moon moon river", "zebra", "the a of", "Star LAKE hill fish"):
        assert np.allclose(ix.bm25(query), _bm25_reference(docs, query))
    rows = [3, 0, 17, 39]
    X, q, terms = ix.tfidf(rows, "cat cat moon zebra")
    N = len(docs)
    df = Counter(t for d in docs for t in set(tokenize(d)))
    for r, row in zip(rows, X):
        tf = Counter(tokenize(docs[r]))
        ref = {t: (1 + math.log(c)) * (math.log((1 + N) / (1 + df[t])) + 1) for t, c in tf.items()}
        norm = math.sqrt(sum(v * v for v in ref.values())) or 1.0
        got = {t: row[j] for j, t in enumerate(terms) if row[j] != 0}
        assert set(got) == set(ref)
        for t in ref:
            assert got[t] == pytest.approx(ref[t] / norm, rel=1e-5)
    qref = {"cat": (1 + math.log(2)) * (math.log((1 + N) / (1 + df["cat"])) + 1),
            "moon": math.log((1 + N) / (1 + df["moon"])) + 1}
    qn = math.sqrt(sum(v * v for v in qref.values()))
    assert "zebra" not in terms  # out-of-vocabulary query terms are ignored
    for t, v in qref.items():
        assert q[terms.index(t)] == pytest.approx(v / qn, rel=1e-5)
    assert tokenize("The cat's 3 toys, and THE dog_bone") == ["cat", "3", "toys", "dog", "bone"]


def test_light_stemmer_joins_inflections_and_keeps_short_words():
    groups = [("paint", "paints", "painted", "painting"), ("adopt", "adopted", "adoption"),
              ("hike", "hiked", "hiking", "hikes"), ("party", "parties"), ("run", "running"),
              ("class", "classes"), ("happy", "happily")]
    for forms in groups:
        assert len({stem(w) for w in forms}) == 1, forms
    assert len({stem("paint"), stem("pain"), stem("party")}) == 3
    for w in ("cat", "bus", "is", "2023", "mp3s", "thing", "string"):
        assert stem(w) == w
    assert stem("bus") == "bus" and stem("glass") == "glass" and stem("status") == "status"
    assert tokenize("We adopted TWO puppies", stem=True) == ["adopt", "two", "puppi"]


def test_stemmed_bm25_matches_the_reference_on_stemmed_text(rng):
    words = "paint painted painting paints hike hiking hiked class classes moon".split()
    docs = [" ".join(rng.choice(words, size=rng.integers(0, 10))) for _ in range(30)]
    stemmed_docs = [" ".join(tokenize(d, stem=True)) for d in docs]
    for query in ("painting classes", "hiked", "moon paints"):
        got = LexicalIndex(docs, stem=True).bm25(query)
        ref = _bm25_reference(stemmed_docs, " ".join(tokenize(query, stem=True)))
        assert np.allclose(got, ref)
        assert np.allclose(pool_bm25(docs, query, stem=True), got)
        assert np.allclose(pool_bm25(docs, query), LexicalIndex(docs).bm25(query))
    # stemming changes which documents match, not only the scores
    docs = ["we painted the fence", "paint is cheap", "hello"]
    assert pool_bm25(docs, "painting")[:2].tolist() == [0.0, 0.0]
    assert (pool_bm25(docs, "painting", stem=True)[:2] > 0).all()
    X, q, terms = LexicalIndex(docs, stem=True).tfidf([0, 1], "Painting")
    assert "paint" in terms and q[terms.index("paint")] == pytest.approx(1.0)


def test_embedding_cache_persists_and_dedupes(tmp_path):
    texts = ["one", "two", "three"]
    emb = TableEmbedder({t: [i + 1.0, 1.0] for i, t in enumerate(texts)})
    c1 = CachedEmbedder(emb, tmp_path)
    a = c1.encode(["one", "two", "one"])
    assert emb.calls == 1 and c1.misses == 2 and c1.hits == 1
    assert np.array_equal(a[0], a[2])
    c2 = CachedEmbedder(emb, tmp_path)  # a new process would see the same shards
    b = c2.encode(["two", "one"])
    assert emb.calls == 1 and c2.misses == 0
    assert np.array_equal(b, a[[1, 0]])
    c2.encode(["three"])
    assert emb.calls == 2
    assert len(EmbeddingCache(tmp_path, emb.name)) == 3
    assert emb.calls == 2
    assert text_key("x") != text_key("y")
    # a digest ending in a NUL byte must survive the round trip through the shard file
    nul = next(t for t in (f"text {i}" for i in range(100_000)) if text_key(t)[-1] == 0)
    emb.table[nul] = np.array([0.6, 0.8], dtype=np.float32)
    CachedEmbedder(emb, tmp_path).encode([nul])
    calls = emb.calls
    assert CachedEmbedder(emb, tmp_path).encode([nul]).shape == (1, 2) and emb.calls == calls
    mem = CachedEmbedder(emb, None)
    mem.encode(["one"])
    assert mem.cache.dir is None and emb.calls == calls + 1
    with pytest.raises(TypeError):
        c1.encode("one")
