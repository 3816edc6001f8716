"""What the experiment scripts in ``simulations/`` share: CSV rows, a comma-list option type, compact PNGs."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["comma_list", "save_png", "write_rows_csv"]


def _csv_cell(v: Any) -> Any:
    if hasattr(v, "item") and not isinstance(v, (str, bytes)):  # numpy scalar
        v = v.item()
    if isinstance(v, float):
        return "nan" if math.isnan(v) else ("inf" if v == math.inf else ("-inf" if v == -math.inf else f"{v:.6g}"))
    return "" if v is None else v


def write_rows_csv(path: Any, columns: Sequence[str], rows: list[dict[str, Any]]) -> None:
    """Write ``rows`` (dicts) as CSV with the given ``columns`` (missing keys empty, other keys
    ignored); floats with 6 significant digits, ``nan``/``inf`` spelled out. The experiment
    scripts in ``simulations/`` share it."""
    import csv

    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(columns), extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({c: _csv_cell(r.get(c)) for c in columns})


def comma_list(kind: type = float) -> Callable[[str], list[Any]]:
    """An argparse type for ``"a,b,c"`` lists of ``float`` (``"1/3"`` accepted), ``int``
    (``"1e6"`` accepted) or ``str``: the experiment scripts' shared option parser."""
    def parse(text: str) -> list[Any]:
        out: list[Any] = []
        for t in (t.strip() for t in text.split(",")):
            if not t:
                continue
            if kind is float:
                num, sep, den = t.partition("/")
                out.append(float(num) / float(den) if sep else float(t))
            elif kind is int:
                value = float(t)
                if value != int(value):
                    raise ValueError(f"not an integer: {t!r}")
                out.append(int(value))
            else:
                out.append(kind(t))
        return out

    parse.__name__ = f"{kind.__name__}_list"  # argparse names the type in its error messages
    return parse


def save_png(fig: Any, path: Any, dpi: int = 100) -> None:
    """Save a matplotlib figure and close it; with Pillow (a matplotlib dependency) as a 256-colour
    palette PNG, about a quarter of the size, which keeps figures committed to docs/img small."""
    import io
    from pathlib import Path

    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, dpi=dpi, format="png")
    plt.close(fig)
    try:
        from PIL import Image
    except ImportError:  # pragma: no cover - Pillow ships with matplotlib
        Path(path).write_bytes(buf.getvalue())
        return
    img = Image.open(io.BytesIO(buf.getvalue())).convert("RGB")
    img.quantize(colors=256, method=Image.Quantize.FASTOCTREE).save(path, optimize=True)
