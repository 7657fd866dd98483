"""``mempursuit convert``: a benchmark as a custom data file (:mod:`mempursuit_eval.datasets.custom`).

The file holds the loaded :class:`~mempursuit_eval.datasets.Dataset` as it is: the same units
(ids, texts, groups, sessions, source ids, timestamps, speakers) and questions (gold, categories,
answers, dates), and the benchmark's default category exclusions, so ``--dataset custom --data
FILE`` evaluates exactly what ``--dataset NAME`` does.
"""

from __future__ import annotations

import argparse
import sys

from .datasets import DATASETS, UNIT_KINDS

__all__ = ["add_convert_parser", "run_convert", "convert"]

SOURCES = tuple(n for n, spec in DATASETS.items() if not spec.path_only)


def convert(dataset: str, out: str, *, data: str | None = None, units: str | None = None,
            download: bool = True):
    """Load ``dataset`` and write it to ``out`` in the custom format; returns (path, Dataset)."""
    from .datasets import load_dataset
    from .datasets.custom import check_output_path, write_custom

    check_output_path(out)  # before the (slow) load
    ds = load_dataset(dataset, data, units=units, download=download)
    path = write_custom(ds, out, default_excluded=DATASETS[ds.name].default_excluded)
    return path, ds


def add_convert_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "convert", help="write a benchmark (LoCoMo, LongMemEval, BEAM, HotpotQA, 2WikiMultihopQA, "
             "MuSiQue) in the custom data format",
        description="Load a benchmark the way `mempursuit eval` does and write it as a custom "
                    "data file (docs/eval-custom-data.md) for `mempursuit eval --dataset custom`.")
    p.add_argument("--dataset", required=True, choices=SOURCES, help="benchmark to convert")
    p.add_argument("--data", metavar="PATH", help="file or folder to read (as for `eval`)")
    p.add_argument("--units", choices=UNIT_KINDS,
                   help="memory units (default: the dataset's first, turns; paragraphs for the "
                        "multi-hop document sets; observations/summaries: LoCoMo; sentences: "
                        "hotpotqa, 2wikimultihopqa)")
    p.add_argument("--out", required=True, metavar="FILE",
                   help="output: .json, .json.gz, .jsonl or .jsonl.gz")
    p.add_argument("--no-download", action="store_true", help="never try to download data")
    p.set_defaults(func=run_convert)
    return p


def run_convert(args) -> int:
    from .datasets import DatasetNotFoundError

    try:
        path, ds = convert(args.dataset, args.out, data=args.data, units=args.units,
                           download=not args.no_download)
    except (ValueError, DatasetNotFoundError, OSError) as exc:
        print(f"mempursuit convert: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {path}: {len(ds.units)} memories, {len(ds.questions)} questions in "
          f"{len(ds.groups())} group(s)")
    return 0
