"""MemPursuit on plain arrays: reorder a candidate pool, then keep the first K.

Run: python examples/quickstart.py

The default read policy (``mempursuit_core.DEFAULT_POLICY``) is what the adapters use; the
paper's rule (``select``, MemPursuit, arXiv 2610.15642) is shown after it as a reproduction,
with the trace the paper describes (simplex weights, loss and certificate per step).
"""

import numpy as np

from mempursuit_core import DEFAULT_POLICY, get_selector, select

rng = np.random.default_rng(0)
d = 384
facts = np.linalg.qr(rng.standard_normal((d, 3)))[0].T  # three unrelated facts
# A pool as a dense retriever returns it: many paraphrases of fact 0 first, then facts 1 and 2.
pool = np.array([facts[0] + 0.05 * rng.standard_normal(d) / np.sqrt(d) for _ in range(6)]
                + [facts[1], facts[2]])
query = np.array([0.7, 0.5, 0.5]) @ facts  # a question that needs all three facts

native = get_selector("native").select(query, pool, 3).order
default = get_selector(DEFAULT_POLICY).select(query, pool, 3).order  # what the adapters use
fact_of = [0] * 6 + [1, 2]
print("native top-3:  ", native.tolist(), "covers facts", sorted({fact_of[i] for i in native}))
print("default top-3: ", default.tolist(), "covers facts", sorted({fact_of[i] for i in default}),
      f"({DEFAULT_POLICY})")

# the paper's rule, as a reproduction of the paper: its order and its trace
result = select(query, pool, 3)
print("paper's rule:  ", result.order.tolist(), "covers facts", sorted({fact_of[i] for i in result.order}),
      "(mempursuit, a reproduction of the paper)")
print("weights:       ", np.round(result.weights, 3).tolist())
print("loss per step: ", np.round(result.losses, 4).tolist())
print("certificate:   ", np.round(result.gaps, 4).tolist())
