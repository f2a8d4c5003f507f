"""Shipped adapters: small programs that speak ``lorelab.worker/1`` (``python -m ...``)."""
