"""MemPursuit as the read policy of cognee's chunk search: the one-line swap.

    # in the root of a checkout of mempursuit (until the first release: README, Install)
    pip install -e ".[cognee]"
    python examples/cognee_quickstart.py

Adds a few memories about Priya (three paraphrases of one fact, the fact that complements it,
and others) to cognee on its default embedded stores (SQLite, LanceDB, the Ladybug graph) in a
temporary directory, as chunks (cognee's own add, classify and chunk tasks, and
``add_data_points``; no LLM, so no ``cognify`` graph extraction), with the packaged
all-MiniLM-L6-v2 (int8 ONNX, offline) as cognee's embedding engine. It then compares cognee's own
top 3 chunks with those of the default read policy (and, named as a reproduction, the paper's
rule, ``policy="mempursuit"``). The swap is one line, before searching::

    use_mempursuit()

``cognee.search(query, query_type=SearchType.CHUNKS, top_k=K)`` then reads through the policy
(docs/adapters/cognee.md).
"""

import asyncio
import os
import shutil
import tempfile

ROOT = tempfile.mkdtemp(prefix="cognee-quickstart-")
# cognee reads its settings from the environment: keep its stores in the temporary directory,
# 384-d vectors (MiniLM), no access control (one local user), no LLM or key needed
os.environ.update(SYSTEM_ROOT_DIRECTORY=os.path.join(ROOT, "system"),
                  DATA_ROOT_DIRECTORY=os.path.join(ROOT, "data"),
                  EMBEDDING_DIMENSIONS="384", ENABLE_BACKEND_ACCESS_CONTROL="false",
                  COGNEE_SKIP_CONNECTION_TEST="true", LLM_API_KEY="unused",
                  TELEMETRY_DISABLED="1", LOG_LEVEL="WARNING")

import cognee  # noqa: E402
from cognee.modules.pipelines.tasks.task import Task  # noqa: E402
from cognee.tasks.documents import (classify_documents,  # noqa: E402
                                    extract_chunks_from_documents)
from cognee.tasks.storage import add_data_points  # noqa: E402

from mempursuit_cognee import use_mempursuit, use_offline_embedder  # noqa: E402
# the sample memories (examples/_sample.py)
from _sample import PRIYA_FACTS as MEMORIES, PRIYA_QUESTION as QUESTION  # noqa: E402


async def main() -> None:
    await cognee.add(MEMORIES, dataset_name="priya")
    await cognee.run_custom_pipeline(
        tasks=[Task(classify_documents), Task(extract_chunks_from_documents, max_chunk_size=512),
               Task(add_data_points)], dataset="priya")

    native = await cognee.search(QUESTION, query_type=cognee.SearchType.CHUNKS, top_k=3)
    use_mempursuit()  # the one line: the default read policy
    ours = await cognee.search(QUESTION, query_type=cognee.SearchType.CHUNKS, top_k=3)
    # the paper's rule (MemPursuit, arXiv 2610.15642), named: a reproduction, not the default
    use_mempursuit(policy="mempursuit")
    paper = await cognee.search(QUESTION, query_type=cognee.SearchType.CHUNKS, top_k=3)

    print(f"Q: {QUESTION}\n")
    print("cognee's own top 3:")
    for chunk in native:
        print(f"  {chunk['text']}")
    print("\nMemPursuit's 3 (the default policy, from cognee's top 200 chunks):")
    for chunk in ours:
        print(f"  {chunk['text']}")
    print('\nthe paper\'s rule, policy="mempursuit" (a reproduction of the paper, not the default):')
    for chunk in paper:
        print(f"  {chunk['text']}")


use_offline_embedder()  # the packaged MiniLM as cognee's embedding engine (no key, no download)
try:
    asyncio.run(main())
finally:
    shutil.rmtree(ROOT, ignore_errors=True)
