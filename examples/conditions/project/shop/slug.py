"""URL slugs for product pages."""

import re


def slugify(name: str) -> str:
    """'Blue Mug (large)' -> 'blue-mug-large'."""
    lowered = name.lower()
    return re.sub(r"[^a-z0-9]", "-", lowered).strip("-")
