"""What a report's VDAF bytes must be before the leader answers 201 (issue 84, item 1): pure functions of the task's
VDAF (a Prio3 class of :mod:`ldp.prio`) and the decoded report (:class:`ldp.prio.DapReport`, or anything with its
``public_share`` and ``helper_ciphertext``, as the helper's view of a :class:`~ldp.aggregators.messages.ReportShare`),
each returning nothing or raising :class:`~ldp.errors.AggregatorError` with DAP's code ``invalid_message`` (400).

Why at the door: a report answered 201 is stored and later sent, whole, in an aggregation job to the helper, whose
body is bounded (:data:`ldp.aggregators.routes.MAX_BODY`). A door that only opened the leader's own share took
a valid report whose helper ciphertext was padded to ~1 MiB (the upload's limit), and some 65 of them in one window
pushed its job past the helper's limit, blocking the window; it took reports of another VDAF draft (a Janus 0.7
client's VDAF-08 shares) that were then all refused ``vdaf_invalid``, though the leader held its share, opened, and
could tell.

The checks, each with its source:

* :func:`check_public_share`: the public share decodes for the task's VDAF, every byte consumed, so it has exactly
  the VDAF's length (VDAF-18 §7: Prio3's public share is one joint randomness part per aggregator, and empty for a
  type without joint randomness; the binding's ``check_public_share``, the ``prio`` crate's decoding).
* :func:`check_input_share`: an aggregator's input share, once opened, decodes for the task's VDAF with that
  aggregator's ID (0: the leader), every byte consumed (VDAF-18 §7: the leader's share is its measurement and proof
  shares, field elements below the modulus, then its blind when the type has joint randomness; a helper's is seeds).
  A share of another VDAF, or of another draft's encoding, has another length or does not decode.
* :func:`check_helper_ciphertext`: the helper's sealed share, which the leader cannot open, has exactly the length
  the task's VDAF implies (DAP-09 §4.4.2): an ``HpkeCiphertext`` is ``config_id`` (u8) ‖ ``enc`` (u16 length
  prefix) ‖ ``payload`` (u32 length prefix), where ``payload`` is the AEAD ciphertext of the helper's
  ``PlaintextInputShare`` with its tag, and a ``PlaintextInputShare`` is ``extensions`` (a u16-prefixed list:
  this deployment defines none, and an aggregator refuses those it does not recognize, so it is empty) ‖
  ``payload`` (the u32-prefixed helper input share). See :func:`check_helper_ciphertext` for the bound this puts on
  what a device can add.

The code is ``invalid_message`` for each: DAP-09 §3.2's for a message that could not be parsed or otherwise was
invalid, and bytes that do not decode as the task's VDAF's shares are a report that does not parse for this task.
Not ``vdaf_invalid`` (DAP's ``vdaf_prep_error``), which names a report whose preparation failed: these reports are
refused before any preparation, at the door, with a 400 the device reads at once.

:meth:`ldp.aggregators.leader_door.LeaderDoor._check` runs them at the door (:func:`check_report` before
opening, then :func:`check_input_share` on the leader's opened share), and
:meth:`~ldp.aggregators.leader_door.LeaderDoor.upload` counts each refusal in the task's door counter
(``refused_at_upload``); the helper can run the same per report in its jobs (:func:`check_public_share`,
:func:`check_input_share` with :data:`HELPER`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from ldp.aggregators.messages import ReportError
from ldp.errors import AggregatorError, PrioError

__all__ = ["LEADER", "HELPER", "KEM_ENC_SIZES", "AEAD_TAG_SIZE", "PLAINTEXT_PREFIXES", "Shares", "helper_payload_len",
           "check_public_share", "check_input_share", "check_helper_ciphertext", "check_report"]

LEADER = 0
"""The leader's aggregator ID (VDAF-18 §7: its input share carries the measurement and proof shares)."""
HELPER = 1
"""The helper's aggregator ID (its input share is seeds)."""
KEM_ENC_SIZES: Mapping[int, int] = {0x0020: 32, 0x0010: 65, 0x0012: 133}
"""The encapsulated key's length (RFC 9180 §7.1's ``Nenc``) of each KEM devices can seal to (the native client's
``ldp_client::dap``): DHKEM(X25519, HKDF-SHA256), DHKEM(P-256, HKDF-SHA256), DHKEM(P-521, HKDF-SHA512)."""
AEAD_TAG_SIZE = 16
"""The AEAD's tag (RFC 9180 §7.3's ``Nt``): 16 bytes for each AEAD devices can seal with (AES-128-GCM, AES-256-GCM,
ChaCha20Poly1305)."""
PLAINTEXT_PREFIXES = 2 + 4
"""A ``PlaintextInputShare``'s bytes besides its payload (DAP-09 §4.4.2): the empty extensions' u16 length and the
payload's u32 length."""


class Shares(Protocol):
    """What the checks read of a report: a :class:`ldp.prio.DapReport` at the leader, a
    :class:`~ldp.aggregators.messages.ReportShare`'s public share and sealed share at the helper."""

    @property
    def public_share(self) -> bytes: ...

    @property
    def helper_ciphertext(self) -> bytes: ...


def _refuse(message: str) -> AggregatorError:
    """DAP's ``invalid_message`` (DAP-09 §3.2: a message that could not be parsed or otherwise was invalid): the
    report's bytes are no report of this task's VDAF."""
    return AggregatorError(message, ReportError.invalid_message.code)


def check_public_share(vdaf: Any, report: Shares) -> None:
    """The report's public share decodes for ``vdaf``, every byte consumed (module docstring)."""
    try:
        vdaf.check_public_share(report.public_share)
    except PrioError as exc:
        raise _refuse(f"the public share is no public share of the task's VDAF: {exc}") from None


def check_input_share(vdaf: Any, share: bytes, agg_id: int = LEADER) -> None:
    """An opened input share decodes for ``vdaf`` as aggregator ``agg_id``'s, every byte consumed (module
    docstring)."""
    try:
        vdaf.check_input_share(agg_id, share)
    except PrioError as exc:
        who = "leader" if agg_id == LEADER else "helper"
        raise _refuse(f"the {who}'s input share is no share of the task's VDAF (another VDAF or draft?): {exc}"
                      ) from None


def helper_payload_len(vdaf: Any) -> int:
    """The exact length of the helper's sealed ``PlaintextInputShare`` for ``vdaf`` (DAP-09 §4.4.2): its two length
    prefixes, the helper's input share and the AEAD's tag."""
    return PLAINTEXT_PREFIXES + int(vdaf.input_share_len(HELPER)) + AEAD_TAG_SIZE


def _ciphertext_lengths(ciphertext: bytes) -> tuple[int, int]:
    """The lengths of an encoded ``HpkeCiphertext``'s ``enc`` and ``payload`` (DAP-09 §4.4.2), its framing checked."""
    if len(ciphertext) < 3:
        raise _refuse("the helper's sealed share is no HpkeCiphertext")
    enc = int.from_bytes(ciphertext[1:3], "big")
    if len(ciphertext) < 7 + enc:
        raise _refuse("the helper's sealed share is no HpkeCiphertext")
    payload = int.from_bytes(ciphertext[3 + enc:7 + enc], "big")
    if len(ciphertext) != 7 + enc + payload:
        raise _refuse("the helper's sealed share is no HpkeCiphertext")
    return enc, payload


def check_helper_ciphertext(vdaf: Any, report: Shares) -> None:
    """The helper's sealed share has exactly the length ``vdaf`` implies (module docstring): its ``payload`` exactly
    :func:`helper_payload_len`, its ``enc`` one of :data:`KEM_ENC_SIZES`.

    The leader cannot open the helper's share, nor does it know the helper's HPKE config (devices fetch it from the
    helper; the task carries none), so it cannot know which KEM the share was sealed with: ``enc`` may have the
    length of any KEM a device can seal to (32, 65 or 133 bytes), and the helper, which knows its own, refuses the
    others in its job (``hpke_decrypt_error``). Everything else is fixed by the task's VDAF: the AEAD adds its
    16-byte tag whichever AEAD the config names, and the plaintext is the empty extensions and the helper's input
    share, whose length is the VDAF's. What a device can add to a valid report's helper share is therefore at most
    133 − 32 = 101 bytes (a P-521 ``enc`` in place of an X25519 one), where it was the whole upload limit (1 MiB)."""
    enc, payload = _ciphertext_lengths(report.helper_ciphertext)
    if enc not in KEM_ENC_SIZES.values():
        sizes = ", ".join(str(n) for n in sorted(KEM_ENC_SIZES.values()))
        raise _refuse(f"the helper's sealed share has a {enc}-byte encapsulated key; a supported KEM's is {sizes}")
    expected = helper_payload_len(vdaf)
    if payload != expected:
        raise _refuse(f"the helper's sealed share is {payload} bytes; a helper share of the task's VDAF sealed is "
                      f"{expected}")


def fits(vdaf: Any, reports: list[tuple[bytes, bytes]]) -> list[bool]:
    """For each ``(public_share, helper_ciphertext)`` of a job, whether :func:`check_report` takes it (the helper's
    check of a job: the VDAF's lengths read once)."""
    expected = helper_payload_len(vdaf)
    enc_sizes = set(KEM_ENC_SIZES.values())
    out = []
    for public_share, ciphertext in reports:
        try:
            enc, payload = _ciphertext_lengths(ciphertext)
            vdaf.check_public_share(public_share)
        except (AggregatorError, PrioError):
            out.append(False)
            continue
        out.append(enc in enc_sizes and payload == expected)
    return out


def check_report(vdaf: Any, report: Shares) -> None:
    """What the door checks of a report before it opens anything: :func:`check_public_share` and
    :func:`check_helper_ciphertext`."""
    check_public_share(vdaf, report)
    check_helper_ciphertext(vdaf, report)
