"""What to tell an operator whose store is not there: the first step of a trial (docs/scale-out.md, "A first
trial") is to create it, and nothing in ``ldp`` creates a bucket or a container (a typo must not make a new one)."""

from __future__ import annotations

__all__ = ["missing_root"]


def missing_root(url: str) -> str:
    """The message for a store ``url`` whose folder, bucket or container is not there (or not visible with these
    credentials), the action first."""
    if url.startswith("file://") or "://" not in url:
        return (f"no store at {url}: no such folder: create it first (mkdir -p), or check the path")
    scheme, _, rest = url.partition("://")
    root = rest.split("/", 1)[0]
    what = "container" if scheme in ("az", "abfs", "abfss") else "bucket"
    return (f"no {what} at {url}: create it first ({what} {root!r}; ldp creates none: docs/scale-out.md, "
            f"'A first trial'), or check the URL and that these credentials may list it")
