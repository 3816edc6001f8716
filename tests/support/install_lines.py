"""The detector of install lines that name the unrelated ``ldp`` distribution on PyPI (ours is
``ldp-telemetry``): used by the scan of the tree (tests/docs/test_distribution_name.py) and on what scripts print."""

from __future__ import annotations

import re

# `pip install ldp`, `pip install -U "ldp[server]"`, `uv pip install ldp==0.1`, or a quoted requirement 'ldp[plot]'
BARE_INSTALL = re.compile(r"""(?:pip3?\s+install|pipx\s+install|poetry\s+add|uv\s+add)\s+"""
                          r"""(?:-\S+\s+)*['"]?ldp(?![\w.-])"""
                          r"""|['"]ldp\[[\w,\s-]*\]""")


def bare_install_lines(text: str) -> list[str]:
    """The lines of ``text`` that would install the unrelated ``ldp`` distribution."""
    return [line.strip() for line in text.splitlines() if BARE_INSTALL.search(line)]
