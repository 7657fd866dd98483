"""MemPursuit for cognee: a read policy on cognee's chunk search.

The one line, once, before ``cognee.search``::

    from mempursuit_cognee import use_mempursuit

    use_mempursuit()            # SearchType.CHUNKS now returns what the read policy picks

``cognee.search(query, query_type=SearchType.CHUNKS, top_k=K)`` then reads ``P`` chunks from
cognee's vector engine with their stored vectors and returns the policy's ``K``. Importing this
package imports nothing from cognee.
"""

from mempursuit_core.adapter import adapter_package

SPEC, __all__, __getattr__, __dir__, register_adapters = adapter_package(globals())
