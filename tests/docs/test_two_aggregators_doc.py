"""docs/two-aggregators.md and docs/trust-models.md say what the code does (issue 84, items 5, 6b and 6f): the
aggregators' tokens made with ``--role`` (whose comment is theirs), a report time not rounded refused (§7 as §11),
the per-device figure of a Gaussian release the zCDP one, not k·ε, with the numbers the code gives."""

from __future__ import annotations

import math
import re
import shlex

from support import ROOT, call_main

from ldp.aggregators.release import device_cost
from ldp.privacy.share_noise import ShareNoise

DOC = ROOT / "docs" / "two-aggregators.md"
TRUST = ROOT / "docs" / "trust-models.md"


def _section(number: int) -> str:
    text = DOC.read_text(encoding="utf-8")
    return re.search(rf"^## {number}\. .*?(?=^## )", text, re.S | re.M).group(0)  # type: ignore[union-attr]


def test_the_token_commands_make_two_aggregator_tokens() -> None:
    lines = [line.split("#")[0].strip() for line in re.findall(r"```sh\n(.*?)```", _section(2), re.S)[0].splitlines()]
    tokens = [line for line in lines if line.startswith("ldp serve token")]
    assert len(tokens) == 2 and all("--role leader" in t or "--role helper" in t for t in tokens)
    for line in tokens:
        code, out, err = call_main(shlex.split(line.split(">")[0])[1:])
        assert code == 0, err
        printed = out.splitlines()
        assert printed[-1].startswith('token_sha256 = "') and "two-aggregator mode" in printed[1]
        assert "ldp collect --token-file" in printed[1] and "app's clients" not in out
    _, plain, _ = call_main(["serve", "token"])  # without --role: the ingest service's comment, for an app
    assert "app's clients" in plain


def test_section_7_says_a_time_not_rounded_is_refused_as_section_11_does() -> None:
    seven, eleven = _section(7), _section(11)
    assert "do not" not in seven.split("**Time precision.**")[1].split("- **")[0]
    assert re.search(r"not\s+rounded down to the task's `time_precision` is refused, `invalid_message`", seven)
    rows = [line for line in eleven.splitlines() if line.startswith("| `invalid_message` |")]
    assert any("not rounded down to the task's `time_precision`" in row and "helper in a job" in row for row in rows)


def test_trust_models_states_the_per_device_figures_the_code_computes() -> None:
    text = " ".join(TRUST.read_text(encoding="utf-8").split())
    assert "a device with k reports in one window is covered as k·ε" not in text
    assert "ρ = (kΔ₂)²/(2σ²) = k²·ρ₁" in text and "ε_k = k·ε" in text
    for eps, k in ((1.0, 10), (4.0, 2)):
        n = ShareNoise.gaussian(eps, 1e-9, math.sqrt(2))
        rec = {"noise": {"mechanism": "gaussian", "epsilon": eps, "delta": 1e-9, "sensitivity": n.sensitivity,
                         "scale": str(n.scale)}}
        cost = device_cost(rec, k)
        assert cost is not None and f"{cost.epsilon:.2f}" in text
    doc = " ".join(_section(13).split())
    assert "11.97" in doc and "8.55" in doc and "the composition per device when k > 1" in doc
