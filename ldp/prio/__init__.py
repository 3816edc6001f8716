"""Prio3 secure aggregation for the two-aggregator mode: VDAF draft 18 (the ``prio`` crate 0.18.1) and, beside it,
VDAF draft 08 (the ``prio`` crate 0.16.8: the draft every deployed DAP client speaks), bound for Python, the
aggregators' side and sharding (for simulations and test-vector replays).

Four types, built from their parameters and the application's context string ``ctx`` (bytes: every client and
aggregator of a collection uses the same one; ``num_aggregators`` is 2 unless given; ``draft`` 18 unless given, see
**Two drafts** below)::

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

The operations are named as in draft 18 and its crate (their "preparation", draft 08's ``prepare_init``,
``prepare_shares_to_prepare_message`` and ``prepare_next``, is "verification" there): ``shard`` (``nonce=`` and
``rand=`` for a replay), ``verify_init`` (→ a :class:`VerifyState` and the verifier share, bytes),
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

**Two drafts, one API.** Every class takes ``draft=18`` (the default) or ``draft=8`` (:data:`VDAF_DRAFTS`; anything
else is refused, ``operation="parameters"``, naming the drafts), its object says ``.draft``, and every method has the
same name and signature in both, so the aggregators need not know the draft. Each draft is its own crate's
implementation (:data:`PRIO_VERSIONS`: ``{8: "0.16.8", 18: "0.18.1"}``), bound through the crate's public API and
never rewritten (``bindings/prio/src/draft08.rs`` and ``draft18.rs``, thin adapters behind one trait). Draft 08
(VDAF-08: Janus 0.7 and janus_client 0.7, divviup-ts) differs in:

* *no context string*: VDAF-08 binds none, so ``ctx`` must be empty (``b""``, the default with ``draft=8``; draft 18
  still requires one);
* *Sum and SumVec bounded by a bit length* (VDAF-08 §7.4): ``Prio3Sum(bits=8, draft=8)``, or ``max_measurement=255``
  when it is exactly ``2**bits - 1`` (any other value is refused, naming the two nearest it takes; ``bits=`` is
  refused for draft 18); exactly one of them. ``.bits`` is the bit length (``None`` for draft 18) and
  ``.max_measurement`` is ``2**bits - 1`` (what the aggregators calibrate central noise on). Draft 08's Prio3Sum is
  in Field128 (draft 18's in Field64): ``modulus`` says which;
* *16-byte verify keys and seeds*: ``vdaf.verify_key_size`` is 16 (the module's ``VERIFY_KEY_SIZE`` stays draft
  18's 32), and shares and joint randomness parts are shorter (``input_share_len``, ``public_share_len``);
* ``chunk_length`` defaults to the ``optimal_chunk_length`` of that draft's crate.

What draft 08 cannot do here, and why: ``shard(m, rand=...)`` is refused (``operation="shard"``) and ``rand_size``
is ``None``, because the crate 0.16.8 has no public sharding with given randomness (its only public sharding,
``Client::shard``, draws it; ``shard_with_random`` is crate-private): the binding shards draft 08 with a given
``nonce=`` but OS randomness, so a draft 08 vector cannot be replayed from its randomness through Python. The crate's
own test of its vectors does that step in Rust (``bindings/prio/tests/vectors_08.rs``); tests/prio replays the rest
from the vectors' input shares.

A share of one draft is refused by a VDAF of the other: states, output and aggregate shares carry their VDAF's
parameters, the draft among them (their ``repr`` and every refusal's message end with ``draft 08`` for draft 08).
Output and aggregate shares are one representation in both drafts (the fields are the same primes), so that
:class:`OutputShare` and :class:`AggregateShare` are one class each. A draft 08 state's ``to_bytes()`` is its
draft's byte (8) and then its crate's encoding, so that neither draft's ``verify_state_from_bytes`` reads the
other's (draft 18's is the crate's encoding alone). An aggregate share's bytes are its field elements in both
drafts (what the collector receives, unmarked): a Count, SumVec or Histogram aggregate share of one draft has the
same bytes, and means the same, as the other's.

**What a share's bytes must be** (the leader's door, :mod:`ldp.aggregators.door`): ``input_share_len(agg_id)`` and
``public_share_len`` are the exact lengths ``shard`` makes (the crate's, learnt once by sharding the all-zero
measurement), and ``check_input_share(agg_id, data)`` / ``check_public_share(data)`` refuse bytes that are not
exactly one such share (the crate's decoding, every byte consumed; :class:`~ldp.errors.PrioError` with
``operation="decode"``)::

    vdaf.check_input_share(0, leader_in)               # the leader's share of this VDAF, or PrioError
    vdaf.check_public_share(public_share)
    vdaf.input_share_len(1), vdaf.public_share_len     # (64, 64) for Prio3Histogram: seeds, one part per aggregator

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

**Availability.** The binding is its own distribution, ``ldp-telemetry-prio`` (``bindings/prio``, Rust: the
extension module ``ldp_prio``, which ``ldp.prio._native`` imports), so that no other install of ldp-telemetry
carries compiled Rust. From a source tree, with ``cargo`` on PATH, ``pip install ./bindings/prio`` (the README's
test command does); from a package index, ``pip install 'ldp-telemetry[prio]'``. Without it ``ldp.prio`` still
imports, and its classes raise :class:`~ldp.errors.MissingExtraError` saying how to install it (:func:`available`
tells). Client code (``ldp.encoders``, ``ldp.client``) never imports this module.

**Why pyo3, built by setuptools-rust, as a second distribution.** The constraints: a client-only install ships no
server-side compiled code (its venv is capped; issue 83) and needs no Rust toolchain to install from source; an
aggregator's install and the README's test command get the binding, or fail saying why; CI builds it once (its
cargo build cached) and installs that wheel wherever tests/prio runs.

* *A distribution of its own* (chosen) rather than an optional part of ldp-telemetry's ``setup.py``: a wheel cannot
  be built with or without a part by the extras asked for, so an optional ``RustExtension`` put the 2.4 MB library
  in every install where cargo was found, a client's too. Apart, the binding is compiled only where it is asked
  for, and there it is not optional: without cargo ``pip install ./bindings/prio`` fails and says so, instead of
  leaving it out with a note nobody reads. The price: its version is pinned to ldp-telemetry's by the ``prio`` extra
  (the two are released together), and pip cannot resolve a folder from an extra, so a source install names
  ``./bindings/prio`` beside ``.`` (one ``pip install`` still).
* *pyo3 + setuptools-rust* (chosen): pyo3 turns the crate's types into Python objects without hand-written glue:
  ``bytes`` borrowed in and copied out once, 64- and 128-bit field elements as Python ints, Rust errors as
  ``ldp.errors.PrioError``, no ``unsafe`` in our code. Built against the stable ABI (``abi3``, Python 3.11+), one
  wheel serves every supported Python. setuptools-rust runs the same cargo build as when the binding was part of
  ldp-telemetry (its target folder, ``--locked``, ``PYO3_PYTHON`` left as the environment sets it), so CI's cargo
  cache serves it unchanged, and it is pure Python, as is the rest of both builds (setuptools).
* *maturin* would build the binding alone as well (abi3, stripped, locked), and makes a self-contained sdist of a
  crate with path dependencies; but it is a compiled build tool of its own (a binary wheel, or a cargo build of
  maturin where there is none), a second build backend beside setuptools, and the source release of both
  distributions is already ldp-telemetry's sdist, which carries both crates.
* *cffi over a C library* needs a C ABI written by hand in Rust (opaque handles, buffer ownership, error codes,
  128-bit integers split by hand) and its ``unsafe`` code, plus the cffi runtime dependency and a header kept in
  step; each call pays cffi's marshalling, and nothing is gained since the only consumer is Python.

The binding's speed against the crate's own API is measured by ``simulations/bench_prio.py``.

**Poplar1** (heavy hitters: strings nobody listed in advance, VDAF draft 18 §8, the same crate's): its classes are
here too (``Poplar1``, ``Poplar1AggregationParam``, its states and shares); its helpers and documentation are in
:mod:`ldp.prio.poplar1`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ldp.errors import MissingExtraError, PrioError

__all__ = ["Prio3Count", "Prio3Sum", "Prio3SumVec", "Prio3Histogram", "VerifyState", "OutputShare", "AggregateShare",
           "PrioError", "VERIFY_KEY_SIZE", "NONCE_SIZE", "PRIO_VERSION", "VDAF_DRAFT", "VDAF_DRAFTS", "PRIO_VERSIONS",
           "available", "require", "HpkeConfig", "HpkeKeypair", "DapReport", "encode_hpke_config_list",
           "decode_hpke_config_list", "seal_report", "open_input_share", "hpke_seal", "hpke_open", "batch_threads",
           "set_batch_threads", "open_input_shares", "HttpFront", "FrontRequest", "poplar1", "Poplar1",
           "Poplar1AggregationParam", "Poplar1VerifyState", "Poplar1OutputShare", "Poplar1AggregateShare"]

_NATIVE = ("Prio3Count", "Prio3Sum", "Prio3SumVec", "Prio3Histogram", "VerifyState", "OutputShare", "AggregateShare",
           "VERIFY_KEY_SIZE", "NONCE_SIZE", "PRIO_VERSION", "VDAF_DRAFT", "VDAF_DRAFTS", "PRIO_VERSIONS", "HpkeConfig",
           "HpkeKeypair", "DapReport", "encode_hpke_config_list", "decode_hpke_config_list", "seal_report",
           "open_input_share", "hpke_seal", "hpke_open", "batch_threads", "set_batch_threads",
           "open_input_shares", "HttpFront", "FrontRequest", "Poplar1", "Poplar1AggregationParam",
           "Poplar1VerifyState", "Poplar1OutputShare", "Poplar1AggregateShare")

_why_missing: str | None = None

if TYPE_CHECKING:
    from ldp.prio._native import (
        NONCE_SIZE,
        PRIO_VERSION,
        PRIO_VERSIONS,
        VDAF_DRAFT,
        VDAF_DRAFTS,
        VERIFY_KEY_SIZE,
        AggregateShare,
        DapReport,
        FrontRequest,
        HpkeConfig,
        HpkeKeypair,
        HttpFront,
        OutputShare,
        Poplar1,
        Poplar1AggregateShare,
        Poplar1AggregationParam,
        Poplar1OutputShare,
        Poplar1VerifyState,
        Prio3Count,
        Prio3Histogram,
        Prio3Sum,
        Prio3SumVec,
        VerifyState,
        batch_threads,
        decode_hpke_config_list,
        encode_hpke_config_list,
        hpke_open,
        hpke_seal,
        open_input_share,
        open_input_shares,
        seal_report,
        set_batch_threads,
    )
else:
    try:  # optional: ldp_prio, the distribution ldp-telemetry-prio (bindings/prio), through ldp/prio/_native.py
        from ldp.prio._native import (
            NONCE_SIZE,
            PRIO_VERSION,
            PRIO_VERSIONS,
            VDAF_DRAFT,
            VDAF_DRAFTS,
            VERIFY_KEY_SIZE,
            AggregateShare,
            DapReport,
            FrontRequest,
            HpkeConfig,
            HpkeKeypair,
            HttpFront,
            OutputShare,
            Poplar1,
            Poplar1AggregateShare,
            Poplar1AggregationParam,
            Poplar1OutputShare,
            Poplar1VerifyState,
            Prio3Count,
            Prio3Histogram,
            Prio3Sum,
            Prio3SumVec,
            VerifyState,
            batch_threads,
            decode_hpke_config_list,
            encode_hpke_config_list,
            hpke_open,
            hpke_seal,
            open_input_share,
            open_input_shares,
            seal_report,
            set_batch_threads,
        )
    except ImportError as exc:
        _why_missing = f"{type(exc).__name__}: {exc}"


def available() -> bool:
    """Whether the Prio3 binding (the distribution ``ldp-telemetry-prio``) is installed beside this package."""
    return _why_missing is None


_INSTALL_FROM_SOURCE = "pip install ./bindings/prio"
"""How a source tree (the repository, or ldp-telemetry's unpacked sdist) installs the binding: cargo compiles it."""
_INSTALL_FROM_INDEX = "pip install 'ldp-telemetry[prio]'"
"""How an install from a package index gets it: the ``prio`` extra, the distribution ``ldp-telemetry-prio``."""


def _missing_message() -> str:
    return ("ldp.prio needs the Prio3 binding, the distribution ldp-telemetry-prio (its module ldp_prio), which is "
            f"not installed beside ldp-telemetry. From a package index: {_INSTALL_FROM_INDEX}. From the source tree "
            f"(the repository's root): {_INSTALL_FROM_SOURCE}, which compiles bindings/prio with cargo (Rust 1.89 or "
            f"later, https://rustup.rs). (The import said: {_why_missing})")


def require() -> None:
    """Raise :class:`~ldp.errors.MissingExtraError` (saying how to install it) unless the binding is there."""
    if _why_missing is not None:
        raise MissingExtraError(_missing_message())


def __getattr__(name: str) -> Any:
    """The binding's names when it is missing: a :class:`~ldp.errors.MissingExtraError` that says how to install it."""
    if name in _NATIVE and _why_missing is not None:
        raise MissingExtraError(_missing_message())
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
