"""Markdown tables for the README from `mempursuit eval` run directories.

    python benchmarks/readme_tables.py benchmarks/results/eval/locomo-dense ...

For each run: complete coverage at the session level and at the turn / message level, at
K = 10 and 20, each policy's paired difference with the native order and its exact p-value.
"""

import json
import sys
from pathlib import Path

METRICS = (("complete_coverage", "session"), ("turn_coverage", "turn"))


def cell(paired: dict | None, value: float) -> str:
    if paired is None:
        return f"{value:.1f}"
    p = paired["p_value"]
    mark = "**" if p < 0.05 and paired["diff"] > 0 else ""
    return f"{mark}{value:.1f} ({paired['diff']:+.1f}, p={p:.2g}){mark}"


def table(run: Path, ks=("10", "20")) -> str:
    s = json.loads((run / "summary.json").read_text())
    order = s["native_order"] or f"{s['framework']}'s own"
    head = (f"**{s['dataset']}**, {s['framework']} store, {order} native order, "
            f"{s['units']}, {s['embedder']}, P={s['pool']}, {s['n_scored']} questions")
    cols = [f"{lvl} K={k}" for k in ks for _, lvl in METRICS]
    lines = [head, "", "| policy | " + " | ".join(cols) + " |",
             "|---|" + "---:|" * len(cols)]
    for policy, by_k in s["results"].items():
        row = []
        for k in ks:
            for metric, _ in METRICS:
                value = by_k[k]["overall"][metric]
                paired = None if policy == s["baseline"] else s["paired"][policy][k]["overall"][metric]
                row.append(cell(paired, value))
        lines.append(f"| {policy} | " + " | ".join(row) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    print("\n\n".join(table(Path(p)) for p in sys.argv[1:]))
