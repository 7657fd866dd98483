"""MemPursuit on plain arrays: reorder a candidate pool, then keep the first K.

Run: python examples/quickstart.py
"""

import numpy as np

from mempursuit_core import get_selector, select

rng = np.random.default_rng(0)
d = 384
facts = np.linalg.qr(rng.standard_normal((d, 3)))[0].T  # three unrelated facts
# A pool as a dense retriever returns it: many paraphrases of fact 0 first, then facts 1 and 2.
pool = np.array([facts[0] + 0.05 * rng.standard_normal(d) / np.sqrt(d) for _ in range(6)]
                + [facts[1], facts[2]])
query = np.array([0.7, 0.5, 0.5]) @ facts  # a question that needs all three facts

native = get_selector("native").select(query, pool, 3).order
result = select(query, pool, 3)
fact_of = [0] * 6 + [1, 2]
print("native top-3:  ", native.tolist(), "covers facts", sorted({fact_of[i] for i in native}))
print("pursuit top-3: ", result.order.tolist(), "covers facts", sorted({fact_of[i] for i in result.order}))
print("weights:       ", np.round(result.weights, 3).tolist())
print("loss per step: ", np.round(result.losses, 4).tolist())
print("certificate:   ", np.round(result.gaps, 4).tolist())
