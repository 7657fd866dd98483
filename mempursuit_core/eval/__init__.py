"""Paired with/without evaluation of read policies (``mempursuit eval``)."""
