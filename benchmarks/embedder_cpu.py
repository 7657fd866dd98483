"""How much the packaged int8 embedder's vectors depend on the CPU's instructions.

The packaged MiniLM keeps int8 weights; ONNX Runtime dequantises them when it loads the model
and runs float32 kernels (MatMul, Softmax, Erf, LayerNormalization: ``--ops`` lists them) that
MLAS picks by CPU: AVX-512F where the CPU has it, else AVX2/FMA3. No int8 product runs, so
AVX-512 VNNI and the session option ``session.x64quantprecision=1`` (u8 x u8 instead of the
saturating u8 x s8 products on CPUs without VNNI) change nothing: the option is run as a
control. Run this once on the machine (``--out``) and once
under an AVX2-only CPU, e.g. QEMU's user-mode emulator (TCG has no AVX-512; slow: minutes per
batch), then compare the two files (``--ops`` lists the operators the model runs):

    python benchmarks/embedder_cpu.py --texts 8 --out /tmp/native.npz
    qemu-x86_64 -cpu Haswell .venv/bin/python benchmarks/embedder_cpu.py --texts 8 \\
        --variants default --out /tmp/haswell.npz
    python benchmarks/embedder_cpu.py --compare /tmp/native.npz /tmp/haswell.npz \\
        --json benchmarks/results/embedder_cpu.json

The texts are the first ``--texts`` turns of LoCoMo's first conversation
(``$MEMPURSUIT_DATA`` or ``../shared/data``), embedded in one batch at one thread, with the
default session options and with ``session.x64quantprecision=1``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("MEMPURSUIT_DATA") or ROOT.parent / "shared" / "data")


def _texts(n: int) -> list[str]:
    conv = json.loads((DATA / "locomo" / "locomo10.json").read_text())[0]["conversation"]
    turns = [t["text"] for key, s in conv.items() if isinstance(s, list) for t in s]
    return turns[:n]


def _isa() -> str:
    """What the CPU reports (through CPUID, so an emulator's CPU model shows)."""
    import numpy

    found = numpy._core._multiarray_umath.__cpu_features__
    return ("avx512_vnni" if found.get("AVX512VNNI") else
            "avx512" if found.get("AVX512F") else "avx2" if found.get("AVX2") else "other")


VARIANTS = {"default": {}, "x64quantprecision": {"session.x64quantprecision": "1"}}


def embed(n: int, out: Path, variants) -> None:
    from mempursuit_core.embed import get_embedder

    texts = _texts(n)
    runs = {}
    for name in variants:
        config = VARIANTS[name]
        embedder = get_embedder(threads=1)
        ort = embedder._ort
        opts = ort.SessionOptions()
        opts.intra_op_num_threads, opts.inter_op_num_threads = 1, 1
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        opts.log_severity_level = 3
        for key, value in config.items():
            opts.add_session_config_entry(key, value)
        session = ort.InferenceSession(str(embedder.model_path), sess_options=opts,
                                       providers=["CPUExecutionProvider"])
        embedder._session = session
        embedder._input_names = tuple(i.name for i in session.get_inputs())
        runs[name] = embedder.encode(texts, batch_size=len(texts))
    np.savez(out, isa=np.array(_isa()), **runs)
    print(f"{out}: {len(texts)} texts on {_isa()}")


def ops() -> None:
    """The operators ONNX Runtime runs for the packaged model after its graph optimisations
    (from a profile of one read): which kernels the CPU's instructions can change."""
    import collections
    import tempfile

    from mempursuit_core.embed import get_embedder

    embedder = get_embedder(threads=1)
    ort = embedder._ort
    opts = ort.SessionOptions()
    opts.intra_op_num_threads, opts.log_severity_level = 1, 3
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    opts.enable_profiling = True
    opts.profile_file_prefix = str(Path(tempfile.mkdtemp()) / "ort")
    session = ort.InferenceSession(str(embedder.model_path), sess_options=opts,
                                   providers=["CPUExecutionProvider"])
    ids = np.array([[101, 7592, 2088, 102]], dtype=np.int64)
    feed = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
    if "token_type_ids" in {i.name for i in session.get_inputs()}:
        feed["token_type_ids"] = np.zeros_like(ids)
    session.run(None, feed)
    events = json.loads(Path(session.end_profiling()).read_text())
    counts = collections.Counter(e["args"].get("op_name") for e in events if e.get("cat") == "Node")
    print(", ".join(f"{op} {n}" for op, n in counts.most_common()))


def compare(a: Path, b: Path, json_out: Path | None) -> None:
    A, B = np.load(a), np.load(b)
    rows = []
    for x in (v for v in VARIANTS if v in A.files):
        for y in (v for v in VARIANTS if v in B.files):
            d = A[x].astype(np.float64) - B[y].astype(np.float64)
            cos = (A[x].astype(np.float64) * B[y]).sum(axis=1)
            rows.append({"a": f"{A['isa']} {x}", "b": f"{B['isa']} {y}",
                         "max_abs": float(np.abs(d).max()), "min_cosine": float(cos.min()),
                         "identical_rows": int((d == 0).all(axis=1).sum()),
                         "rows": int(d.shape[0])})
    print("| a | b | max abs difference | min cosine | identical rows |")
    print("|---|---|---:|---:|---:|")
    for r in rows:
        print(f"| {r['a']} | {r['b']} | {r['max_abs']:.2e} | {r['min_cosine']:.6f} | "
              f"{r['identical_rows']} / {r['rows']} |")
    if json_out is not None:
        json_out.write_text(json.dumps({"machine": platform.processor() or platform.machine(),
                                        "comparisons": rows}, indent=1) + "\n")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--texts", type=int, default=16)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--compare", nargs=2, type=Path, metavar=("A", "B"))
    ap.add_argument("--json", type=Path)
    ap.add_argument("--variants", nargs="+", choices=list(VARIANTS), default=list(VARIANTS),
                    help="the session options to run (under an emulator: one, it is slow)")
    ap.add_argument("--ops", action="store_true", help="list the operators the model runs")
    args = ap.parse_args(argv)
    if args.ops:
        ops()
    elif args.compare:
        compare(*args.compare, args.json)
    elif args.out:
        embed(args.texts, args.out, args.variants)
    else:
        ap.error("give --out FILE (embed here) or --compare A B")
    return 0


if __name__ == "__main__":
    sys.exit(main())
