"""Prio3 secure aggregation (VDAF draft 18) for the two-aggregator mode: the ``prio`` crate (0.18.1) bound for
Python, the aggregators' side and sharding (for simulations and test-vector replays).

Four types, built from their parameters and the application's context string ``ctx`` (bytes: every client and
aggregator of a collection uses the same one; ``num_aggregators`` is 2 unless given)::

    Prio3Count(ctx=ctx)                                          each measurement 0 or 1; the result their sum
    Prio3Sum(max_measurement=255, ctx=ctx)                       an int in [0, max_measurement]; the sum
    Prio3SumVec(length=3, max_measurement=32000, ctx=ctx)        length ints in [0, max]; the element-wise sum
    Prio3Histogram(length=5, ctx=ctx)                            a bucket index in [0, length); each bucket's count

(``chunk_length``, the FLP's parallel-sum chunk, defaults to the crate's ``optimal_chunk_length``.) One report,
from the client's shares to the result, the verify key being a 32-byte secret the aggregators share::

    vdaf = Prio3Histogram(length=5, ctx=b"my app")
    nonce, public_share, (leader_in, helper_in) = vdaf.shard(3)      # the client; randomness from the OS
    leader, leader_vs = vdaf.verify_init(verify_key, 0, nonce, public_share, leader_in)
    helper, helper_vs = vdaf.verify_init(verify_key, 1, nonce, public_share, helper_in)
    message = vdaf.verifier_shares_to_message([leader_vs, helper_vs]) # PrioError: a proof that does not verify
    leader_agg, helper_agg = vdaf.aggregate_init(), vdaf.aggregate_init()
    leader_agg.accumulate(vdaf.verify_next(leader, message))          # PrioError: a joint randomness mismatch
    helper_agg.accumulate(vdaf.verify_next(helper, message))
    vdaf.unshard([leader_agg, helper_agg], 1)                         # [0, 0, 0, 1, 0]

The operations are named as in the draft and the crate (its "preparation" is "verification" there): ``shard``
(``nonce=`` and ``rand=`` for a replay), ``verify_init`` (→ a :class:`VerifyState` and the verifier share, bytes),
``verifier_shares_to_message`` (bytes), ``verify_next`` (→ an :class:`OutputShare`; the state is consumed),
``aggregate`` / ``aggregate_init`` with :meth:`AggregateShare.accumulate` and :meth:`AggregateShare.merge`, ``unshard``.
**The aggregators' jobs in one call each** (the GIL released while Rust runs the loop): ``helper_prepare_batch``
(the helper's whole job: open, ``verify_init``, the joint randomness check, ``verifier_shares_to_message``,
``verify_next``, aggregation), ``leader_init_batch`` (open unless opened at the door, ``verify_init``) and
``leader_finish_batch`` (``verify_next`` with the helper's messages, aggregation); a report that fails a step is its
refusal code (``"hpke_unknown_config_id"``, ``"hpke_decrypt_error"``, ``"vdaf_invalid"``), not an error::

    messages, helper_agg = vdaf.helper_prepare_batch(helper_key, verify_key, task_id,
                                                     [(report_id, time, public_share, helper_ciphertext, leader_vs)])
    inits = vdaf.leader_init_batch(leader_key, verify_key, task_id, [(report_id, time, public_share,
                                                                      leader_ciphertext, leader_in_or_None)])
    finished, leader_agg = vdaf.leader_finish_batch([state], [message])     # [True], an AggregateShare

Every message between the parties is bytes; states and shares travel as ``to_bytes()`` and come back through
``verify_state_from_bytes`` and ``aggregate_share_from_bytes``. An aggregate share's ``field_elements()`` are Python
ints below its ``modulus``, and ``add_integers(noise)`` adds signed ints modulo that prime: central noise on a share,
the wrap-around handled (``aggregate_share_from_field_elements`` builds one from ints). Every refusal is a
:class:`~ldp.errors.PrioError` (a ``ValueError``) whose message names the VDAF and the operation, and whose
``operation`` attribute is the operation's name; a Python value of the wrong type is a ``TypeError``.

**DAP-09 reports** (``draft-ietf-ppm-dap-09``, the draft the newest published ``janus_messages`` speaks, so that an
independent implementation reads our reports): the upload encoding and HPKE (RFC 9180) sealing of the native client
(``ldp_client::dap`` in ``clients/rust``, which this binding links), so devices and aggregators share one
implementation. An aggregator makes its key pair and publishes its config (an aggregator's ``/hpke_config`` answers
``encode_hpke_config_list([keypair.config])``)::

    leader_key, helper_key = HpkeKeypair.generate(1), HpkeKeypair.generate(2)    # X25519, HKDF-SHA256, AES-128-GCM
    report = seal_report(vdaf, 3, task_id=task_id, time=now, time_precision=3600,  # a simulated device's upload
                         leader=leader_key.config, helper=helper_key.config)
    r = DapReport.from_bytes(report)                                  # the leader reads it (PrioError: malformed)
    leader_in = open_input_share(leader_key, role="leader", task_id=task_id, report_id=r.report_id, time=r.time,
                                 public_share=r.public_share, ciphertext=r.leader_ciphertext)
    state, verifier_share = vdaf.verify_init(verify_key, 0, r.report_id, r.public_share, leader_in)

The report ID (16 random bytes) is the VDAF nonce; each input share is a ``PlaintextInputShare`` without extensions
sealed to its aggregator's config with ``info`` ``"dap-09 input share" || 0x01 || role`` (0x02 leader, 0x03 helper) and
the report's task ID, metadata and public share as ``aad``, so a share opens only under the report it came in
(:class:`~ldp.errors.PrioError` with ``operation="open"`` otherwise, and for a wrong key or config id, a malformed
plaintext, or extensions, which this deployment does not define). ``hpke_seal`` and ``hpke_open`` seal any bytes
(aggregate shares to the collector) in DAP's ``HpkeCiphertext`` encoding. Suites sealed to: DHKEM X25519, P-256 or
P-521; HKDF-SHA256 or -SHA512; AES-128-GCM, AES-256-GCM or ChaCha20Poly1305 (an ``HpkeConfig`` of other ids decodes,
and sealing to it is refused).

**Availability.** The binding is compiled from ``bindings/prio`` (Rust) when ``pip install`` or ``pip wheel`` finds
``cargo``; without it the install goes on without the binding (as without a C compiler the C kernels), and
``ldp.prio``'s classes raise :class:`~ldp.errors.MissingExtraError` saying how to get them (:func:`available` tells).
Client code (``ldp.encoders``, ``ldp.client``) never imports this module.

**Why pyo3, built by setuptools-rust.** The constraints: a client-only install needs no Rust toolchain and must
still install from source; with ``cargo`` present the README's ``pip install '.[test]'`` and a ``pip wheel .``
include the binding; the build stays one ``setup.py`` with optional compiled parts; CI builds it several times.

* *pyo3 + setuptools-rust* (chosen): setuptools-rust adds a ``RustExtension(..., optional=True)`` to the
  ``setup()`` that already builds the six optional C kernels, so there is one build backend, one wheel and one
  contract: missing cargo (or a failed compile) is a printed note, not a failed install. pyo3 turns the crate's
  types into Python objects without hand-written glue: ``bytes`` borrowed in and copied out once, 64- and 128-bit
  field elements as Python ints, Rust errors as ``ldp.errors.PrioError``, no ``unsafe`` in our code. Built against
  the stable ABI (``abi3``, Python 3.11+), one compiled artifact serves every supported Python, which lets CI's
  cargo cache serve each wheel build.
* *maturin* would become the build backend of the whole distribution: it needs a Rust toolchain to build anything
  from source (the client-only install without Rust would break), has no place for the C kernels, and cannot
  leave an extension out when cargo is missing. Making the binding a second distribution instead would split
  the version and the README's one ``pip install``.
* *cffi over a C library* needs a C ABI written by hand in Rust (opaque handles, buffer ownership, error codes,
  128-bit integers split by hand) and its ``unsafe`` code, plus the cffi runtime dependency and a header kept in
  step; each call pays cffi's marshalling, and nothing is gained since the only consumer is Python.

The binding's speed against the crate's own API is measured by ``simulations/bench_prio.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ldp.errors import MissingExtraError, PrioError

__all__ = ["Prio3Count", "Prio3Sum", "Prio3SumVec", "Prio3Histogram", "VerifyState", "OutputShare", "AggregateShare",
           "PrioError", "VERIFY_KEY_SIZE", "NONCE_SIZE", "PRIO_VERSION", "VDAF_DRAFT", "available", "require",
           "HpkeConfig", "HpkeKeypair", "DapReport", "encode_hpke_config_list", "decode_hpke_config_list",
           "seal_report", "open_input_share", "hpke_seal", "hpke_open"]

_NATIVE = ("Prio3Count", "Prio3Sum", "Prio3SumVec", "Prio3Histogram", "VerifyState", "OutputShare", "AggregateShare",
           "VERIFY_KEY_SIZE", "NONCE_SIZE", "PRIO_VERSION", "VDAF_DRAFT", "HpkeConfig", "HpkeKeypair", "DapReport",
           "encode_hpke_config_list", "decode_hpke_config_list", "seal_report", "open_input_share", "hpke_seal",
           "hpke_open")

_why_missing: str | None = None

if TYPE_CHECKING:
    from ldp.prio._native import (
        NONCE_SIZE,
        PRIO_VERSION,
        VDAF_DRAFT,
        VERIFY_KEY_SIZE,
        AggregateShare,
        DapReport,
        HpkeConfig,
        HpkeKeypair,
        OutputShare,
        Prio3Count,
        Prio3Histogram,
        Prio3Sum,
        Prio3SumVec,
        VerifyState,
        decode_hpke_config_list,
        encode_hpke_config_list,
        hpke_open,
        hpke_seal,
        open_input_share,
        seal_report,
    )
else:
    try:  # optional: compiled from bindings/prio where cargo was found at install time
        from ldp.prio._native import (
            NONCE_SIZE,
            PRIO_VERSION,
            VDAF_DRAFT,
            VERIFY_KEY_SIZE,
            AggregateShare,
            DapReport,
            HpkeConfig,
            HpkeKeypair,
            OutputShare,
            Prio3Count,
            Prio3Histogram,
            Prio3Sum,
            Prio3SumVec,
            VerifyState,
            decode_hpke_config_list,
            encode_hpke_config_list,
            hpke_open,
            hpke_seal,
            open_input_share,
            seal_report,
        )
    except ImportError as exc:
        _why_missing = f"{type(exc).__name__}: {exc}"


def available() -> bool:
    """Whether the Prio3 binding was built into this install."""
    return _why_missing is None


def _missing_message() -> str:
    return ("ldp.prio needs the Prio3 binding (ldp.prio._native), which this install of ldp-telemetry was built "
            "without: it is compiled from bindings/prio when cargo (Rust 1.89 or later) is on PATH while pip builds "
            "the package. Install Rust (https://rustup.rs), then reinstall from the source tree: pip install "
            f"--force-reinstall --no-deps . (the import said: {_why_missing})")


def require() -> None:
    """Raise :class:`~ldp.errors.MissingExtraError` (saying how to build it) unless the binding is there."""
    if _why_missing is not None:
        raise MissingExtraError(_missing_message())


def __getattr__(name: str) -> Any:
    """The binding's names when it is missing: a :class:`~ldp.errors.MissingExtraError` that says how to build it."""
    if name in _NATIVE and _why_missing is not None:
        raise MissingExtraError(_missing_message())
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
