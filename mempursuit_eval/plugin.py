"""The harness as a plugin of the ``mempursuit`` command: it adds ``mempursuit eval``,
``mempursuit convert`` and ``mempursuit bench``, declares its own hook
(``register_eval_backends``, :mod:`mempursuit_eval.hookspecs`) and registers the built-in stores
for ``--framework`` through it."""

from mempursuit_core.hookspecs import hookimpl

#: The built-in evaluation stores: ``{framework: ("module:factory", description)}``; each module
#: imports its framework, so it is imported only when its store is built. A store class may
#: declare ``loggers`` (held back to ERROR while it is open) and ``option_constraints``
#: (``{option: allowed values}``, checked before it is built).
BACKENDS = {
    "plain": ("mempursuit_eval.store:PlainStore",
              "the harness's own exact store (numpy; native=hybrid adds BM25)"),
    "mem0": ("mempursuit_eval.backends.mem0:Mem0Backend",
             "Mem0 (infer=False) over Qdrant local, FAISS or Chroma"),
    "lightmem": ("mempursuit_eval.backends.lightmem:LightMemBackend", "LightMem over local Qdrant (offline_update)"),
    "simplemem": ("mempursuit_eval.backends.simplemem:SimpleMemBackend",
                  "SimpleMem's LanceDB store, retrieval without LLM planning"),
    "memorybank": ("mempursuit_eval.backends.memorybank:MemoryBankBackend",
                   "MemoryBank's FAISS index per user"),
    "llamaindex": ("mempursuit_eval.backends.llamaindex:LlamaIndexBackend",
                   "a LlamaIndex VectorMemoryBlock over local Qdrant"),
    "haystack": ("mempursuit_eval.backends.haystack:HaystackBackend",
                 "Haystack's InMemoryDocumentStore and embedding retriever"),
    "langgraph": ("mempursuit_eval.backends.langgraph:LangGraphBackend",
                  "LangGraph's own store (memory, sqlite or postgres)"),
    "agno": ("mempursuit_eval.backends.agno:AgnoBackend",
             "Agno's LanceDb vector db, one table per group, read as Knowledge.search reads it"),
    "semantic-kernel": ("mempursuit_eval.backends.semantic_kernel:SemanticKernelBackend",
                        "Semantic Kernel's InMemoryCollection, one per group, read with include_vectors"),
    "autogen": ("mempursuit_eval.backends.autogen:AutoGenBackend",
                "AutoGen's ChromaDBVectorMemory, one Chroma collection per group"),
    "crewai": ("mempursuit_eval.backends.crewai:CrewAIBackend",
               "CrewAI's Memory over its LanceDBStorage, one table per group, read as recall reads it"),
    "graphiti": ("mempursuit_eval.backends.graphiti:GraphitiBackend",
                 "Graphiti on embedded Kuzu, one fact edge per turn (no LLM)"),
    # ``NAME+OPTION`` takes over ``--framework NAME`` when OPTION is given (stages.build_backend)
    "mem0+config": ("mempursuit_eval.backends.mem0_existing:ExistingMem0Backend",
                    "your own Mem0 store, read-only (--mem0-config)"),
}


@hookimpl
def register_commands(subparsers):
    from .bench import add_bench_parser
    from .cli import add_eval_parser
    from .convert import add_convert_parser

    add_eval_parser(subparsers)
    add_convert_parser(subparsers)
    add_bench_parser(subparsers)


@hookimpl
def register_eval_backends(register):
    for name, (factory, description) in BACKENDS.items():
        register(name, factory, description)


@hookimpl
def register_selectors(register):
    from .experimental import SELECTORS

    for name, cls in SELECTORS.items():  # the experiments behind the default (docs/results.md)
        register(name, cls, "[experimental] " + cls.description)
    # a database's own diversity as a named baseline (issue 36); needs qdrant-client
    from .qdrant_mmr import QdrantMMRSelector  # imports qdrant-client only when it selects

    register(QdrantMMRSelector.name, QdrantMMRSelector, QdrantMMRSelector.description)
    # the diversifiers a user would pick instead (issue 45): listed only with pyversity installed
    from .diversifiers import DIVERSIFIERS, installed  # imports pyversity only when it selects

    if installed():
        for cls in DIVERSIFIERS:
            register(cls.name, cls, cls.description)
    # Haystack's own rankers (issue 45): each listed only when what it imports is installed
    from .haystack_rankers import HAYSTACK_RANKERS
    from .haystack_rankers import installed as haystack_installed

    for cls in HAYSTACK_RANKERS:
        if haystack_installed(cls.needs):
            register(cls.name, cls, cls.description)
