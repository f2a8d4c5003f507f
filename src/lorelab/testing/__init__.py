"""Shipped, documented test doubles."""
