"""Every exception and warning of :mod:`ldp`, under two bases (standard library only; imports nothing of ldp).

Each class keeps the builtin base it always had, so ``except ValueError`` still catches a bad report, and each
stays importable from the module that raises it (``from ldp.privacy.ledger import BudgetExceeded``)::

    LdpError (Exception)
    ├── BudgetExceeded                       a charge would exceed a privacy cap    (ldp.privacy.ledger)
    ├── OutboxFull                           a report would pass the outbox's cap   (ldp.client.runtime)
    ├── OptedOutError                        the device opted out of collection     (ldp.client.state)
    ├── SecretChanged                        the secret changed under a charge      (ldp.client.consent)
    ├── LedgerError                          not a usable budget ledger             (ldp.privacy.ledger)
    │   ├── LedgerDamagedError               a stored value is unreadable           (ldp.privacy.ledger)
    │   ├── ClockError, ValueError           a clock reading that is no Unix time   (ldp.privacy.ledger)
    │   └── StateError                       a foreign or damaged client state file (ldp.client.runtime)
    ├── AuditError, RuntimeError             a mechanism that cannot be audited     (ldp.privacy.audit)
    ├── Refusal                              a refused parameter or value, by code  (ldp.encoders.base)
    │   ├── RefusalTypeError, TypeError      of the wrong type                      (ldp.encoders.base)
    │   └── RefusalValueError, ValueError    out of range, unknown, breaking a rule (ldp.encoders.base)
    ├── ProtocolClashError, RuntimeError     two definitions of one protocol name   (ldp.protocols.registry)
    ├── ReplayError, AssertionError          a replayed stream drawn from otherwise (ldp.randomness)
    ├── ReportError, ValueError              a malformed or mismatched report       (ldp.reports)
    │   └── EnvelopeError                    a rejected upload line                 (ldp.spec.envelope)
    ├── SpecError, ValueError                an invalid collection spec             (ldp.spec.schema)
    ├── UploadError                          an upload that stopped                 (ldp.client.uploader)
    │   └── UploadProtocolError              an answer that is not a sane answer    (ldp.client.uploader)
    ├── ThreadMisuseError, RuntimeError      a client used from another thread      (ldp.client.runtime)
    ├── AggregateFormatError, ValueError     bytes that are not an aggregate        (ldp.decoders.aggregate_file)
    ├── CandidateLimitError, ValueError      too many SFP candidate words           (ldp.decoders.sfp)
    ├── InputError, ValueError               an unreadable input file               (ldp.jobs.readers)
    ├── JobError, ValueError                 an unusable output folder              (ldp.jobs.manifest)
    │   └── InputChangedError                an input changed                       (ldp.jobs.job)
    ├── ConfigError, ValueError              an unusable ingest service configuration    (ldp.ingest.config)
    ├── IngestError                          a refused ingest service request            (ldp.ingest.upload)
    ├── QueueFull                            the ingest service's write queue is full    (ldp.ingest.segments)
    ├── WriterClosed                         the ingest service's writer is closed       (ldp.ingest.segments)
    ├── StorageError, OSError                the collection's store failed          (ldp.storage)
    │   ├── LeaseLostError                   a lease holder lost its lease          (ldp.storage.lease)
    │   └── ConditionalWriteError            a store that is not exclusive          (ldp.storage.lease)
    ├── LeaseHeldError, RuntimeError         another process holds the lease        (ldp.storage.lease)
    ├── FoldBusyError, RuntimeError          another process folds this app         (ldp.ingest.watch)
    ├── DataFolderBusyError, RuntimeError    another ldp serve uses the data folder (ldp.ingest.datafolder)
    ├── NoThresholdError, ValueError         a shuffler run without a threshold     (ldp.shuffler.stage)
    ├── PrioError, ValueError                a refused Prio3 input, share or proof  (ldp.prio)
    ├── AggregatorError                      a refused two-aggregator request       (ldp.aggregators)
    ├── AggregatorMessageError, ValueError   an aggregators' message not decoding   (ldp.aggregators)
    └── MissingExtraError, ImportError       an optional extra is not installed     (ldp.extras)
    LdpWarning (UserWarning)
    ├── SeededRandomnessWarning              a client drawing from a seed           (ldp.randomness)
    ├── PrivacyLeakWarning                   data used without privacy accounting   (ldp.regression.mechanisms)
    ├── ReproductionOnlyWarning              an unverified noise constant           (ldp.regression.mechanisms)
    └── SeededNoiseWarning                   a default release drawn from a seed    (ldp.regression.noise)
"""

from __future__ import annotations

import csv
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # annotations only: this module imports nothing of ldp
    from ldp.client.uploader import UploadResult
    from ldp.privacy.cost import PrivacyCost

__all__ = [
    "LdpError", "LdpWarning", "BudgetExceeded", "LedgerError", "LedgerDamagedError", "ClockError", "StateError",
    "AuditError", "Refusal", "RefusalTypeError", "RefusalValueError", "kind_of", "ProtocolClashError", "ReplayError",
    "ReportError", "EnvelopeError", "SpecError", "UploadError", "UploadProtocolError", "ThreadMisuseError",
    "AggregateFormatError", "CandidateLimitError", "InputError", "JobError", "InputChangedError", "ConfigError",
    "IngestError", "QueueFull", "WriterClosed", "StorageError", "LeaseLostError", "ConditionalWriteError",
    "LeaseHeldError", "FoldBusyError", "DataFolderBusyError", "NoThresholdError", "PrioError", "AggregatorError",
    "AggregatorMessageError", "MissingExtraError", "OutboxFull", "OptedOutError", "SecretChanged",
    "SeededRandomnessWarning", "PrivacyLeakWarning", "ReproductionOnlyWarning", "SeededNoiseWarning", "error_text",
    "REASONS", "ENVELOPE_REASONS", "ALL_METRICS",
]

REASONS = frozenset({
    "too_large", "not_json", "not_object", "duplicate_key", "missing_key", "unknown_key",
    "bad_version", "bad_protocol", "bad_fingerprint", "bad_payload", "bad_field", "bad_value",
    "bad_magic", "truncated", "bad_checksum",
    "wrong_protocol", "wrong_fingerprint", "payload_mismatch", "out_of_range", "bad_length",
})
"""Every reason a report can be rejected with (:class:`ReportError`; exported by :mod:`ldp.reports`)."""

ENVELOPE_REASONS = REASONS | {"bad_spec", "bad_metric", "bad_window", "bad_report", "unknown_spec", "unknown_metric"}
"""Every reason an upload line can be rejected with (:class:`EnvelopeError`; exported by :mod:`ldp.spec.envelope`)."""

ALL_METRICS = "*"
"""The scope of the budget across all metrics (:attr:`ldp.privacy.ledger.BudgetLedger.ALL`)."""


class LdpError(Exception):
    """The base of every exception :mod:`ldp` raises on purpose."""


class LdpWarning(UserWarning):
    """The base of every warning :mod:`ldp` issues."""


# -- privacy: the budget ledger, the client's state file, the audit ---------------------------------------------
class BudgetExceeded(LdpError):
    """A charge would exceed a cap; nothing was charged and no report may be produced."""

    def __init__(self, scope: str, period: str, requested: PrivacyCost, spent: PrivacyCost, cap: PrivacyCost,
                 index: int | None = None):
        """``index``: which charge of a batch (:meth:`BudgetLedger.charge_many`) was refused; ``spent``
        then includes the batch's earlier charges, none of which was kept."""
        self.scope, self.period, self.requested, self.spent, self.cap = scope, period, requested, spent, cap
        self.index = index
        where = "all metrics" if scope == ALL_METRICS else f"metric {scope!r}"
        item = "" if index is None else f" at charge {index} of a batch (nothing of the batch was charged)"
        super().__init__(f"privacy budget exceeded for {where} ({period}){item}: spent {spent}, "
                         f"requested {requested}, cap {cap}")


class OutboxFull(LdpError):
    """A report would take the client's outbox past its cap (``max_outbox_bytes``); nothing was charged or stored.
    Uploading frees room."""

    def __init__(self, pending_bytes: int, needed: int, cap: int, index: int | None = None):
        """``pending_bytes`` wait (including the batch's earlier items), ``needed`` more were asked, ``cap`` is the
        limit; ``index``: which item of a ``record_many`` batch did not fit (nothing of the batch was kept)."""
        self.pending_bytes, self.needed, self.cap, self.index = pending_bytes, needed, cap, index
        item = "" if index is None else f" at item {index} of a batch (nothing of the batch was kept)"
        super().__init__(f"the outbox is full{item}: {pending_bytes:,} bytes of reports wait for upload, this report "
                         f"needs {needed:,} more and the cap is {cap:,} (max_outbox_bytes): upload to make room")


class OptedOutError(LdpError):
    """The device opted out of collection (``opt_out``): nothing is recorded until it opts in again."""


class SecretChanged(LdpError):
    """Another client of a state file opted out or in between this client's view of the device secret and its
    charge's transaction (rolled back): the client reads the secret again and records once more; never raised to
    the caller."""


class LedgerError(LdpError):
    """The ledger file is not an ldp ledger, is corrupted, or was made with other settings."""


class LedgerDamagedError(LedgerError):
    """A value the ledger stored is unreadable (the file was modified or damaged); nothing was changed."""


class ClockError(LedgerError, ValueError):
    """A clock reading that is not a Unix time in ``[0, MAX_CLOCK]``; nothing was charged or written."""


class StateError(LedgerError):
    """The state file is foreign, damaged, or belongs to another collection (nothing was changed)."""


class AuditError(LdpError, RuntimeError):
    """The mechanism cannot be audited as written (too many paths, or a non-enumerable draw)."""


# -- refusals of a protocol's parameters and values ---------------------------------------------------------------
def kind_of(value: object) -> str:
    """The JSON-neutral kind of ``value``, what a refusal's ``got`` says was given instead of what it ``expected``:
    ``"null"``, ``"bool"``, ``"int"``, ``"float"``, ``"string"``, ``"list"`` (a list or tuple), ``"object"`` (a
    mapping), ``"bytes"`` (bytes or bytearray: Python only) or ``"other"`` (any other Python object)."""
    if value is None:
        return "null"
    for kind, types in _KINDS:
        if isinstance(value, types):
            return kind
    return "other"


_KINDS: tuple[tuple[str, type | tuple[type, ...]], ...] = (
    ("bool", bool), ("int", int), ("float", float), ("string", str), ("bytes", (bytes, bytearray)),
    ("list", (list, tuple)), ("object", Mapping))


class Refusal(LdpError):
    """A parameter or value a protocol refuses, by meaning: a stable machine ``code`` (``"param_range"``,
    ``"value_type"``, …) and its structured ``fields`` (``{"param": "epsilon", "got": -1, "min": 0, …}``), beside
    the Python message (``str(exc)``, unchanged). The codes and their fields are listed in docs/conformance.md
    (:mod:`ldp.conformance.refusals` checks them). Raised as :class:`RefusalTypeError` or
    :class:`RefusalValueError`, so ``except TypeError`` / ``except ValueError`` still catch it."""

    def __init__(self, message: str, code: str, /, **fields: Any) -> None:
        super().__init__(message)
        self.code: str = code
        self.fields: dict[str, Any] = fields

    def restated(self, message: str, **fields: Any) -> Refusal:
        """The same refusal (class, code and fields, ``fields`` added) under another message: what a composite
        protocol raises for one of its parts (``"attribute 'a': …"``)."""
        return type(self)(message, self.code, **{**self.fields, **fields})

    def __reduce__(self) -> tuple[Any, ...]:  # pickling: the code and fields are not in ``args``
        return _rebuild_refusal, (type(self), str(self), self.code, self.fields)


def _rebuild_refusal(cls: type[Refusal], message: str, code: str, fields: dict[str, Any]) -> Refusal:
    return cls(message, code, **fields)


class RefusalTypeError(Refusal, TypeError):
    """A refused parameter or value of the wrong type (a :class:`Refusal`, and a ``TypeError``)."""


class RefusalValueError(Refusal, ValueError):
    """A refused parameter or value of the right type but out of range, unknown, or breaking a rule (a
    :class:`Refusal`, and a ``ValueError``)."""


class ProtocolClashError(LdpError, RuntimeError):
    """Two sources (built-in modules, installed distributions' entry points) define the same protocol name."""


class ReplayError(LdpError, AssertionError):
    """A replayed random stream (:class:`ldp.randomness.ReplaySource`) was drawn from in another order (another
    number of bits) or beyond its end: the code under test does not draw as the recording did."""


# -- reports, upload envelopes, collection specs, uploads ---------------------------------------------------------
class ReportError(LdpError, ValueError):
    """A malformed or mismatched report; ``reason`` is one of :data:`REASONS`.

    For a malformed binary frame, ``records`` is the number of reports it declared (1 when its
    header is unreadable) and ``resume`` the offset where reading may safely go on, if known.
    """

    def __init__(self, reason: str, detail: str = "", records: int = 1, resume: int | None = None) -> None:
        assert reason in REASONS, reason
        self.reason, self.detail, self.records, self.resume = reason, detail, records, resume
        super().__init__(f"{reason}: {detail}" if detail else reason)


class EnvelopeError(ReportError):
    """A rejected upload line; ``reason`` is one of :data:`ENVELOPE_REASONS`.

    A :class:`~ldp.reports.ReportError`, so one ``except ReportError`` counts both kinds."""

    def __init__(self, reason: str, detail: str = "") -> None:
        if reason not in ENVELOPE_REASONS:
            raise ValueError(f"unknown envelope rejection reason {reason!r}")
        self.reason, self.detail, self.records, self.resume = reason, detail, 1, None
        ValueError.__init__(self, f"{reason}: {detail}" if detail else reason)


class SpecError(LdpError, ValueError):
    """An invalid spec; ``errors`` lists every problem as ``"json.path: message"``."""

    def __init__(self, errors: list[str], source: str = "spec") -> None:
        self.errors, self.source = list(errors), source
        super().__init__(f"{source}: {len(errors)} error(s):\n  " + "\n  ".join(errors))


class UploadError(LdpError):
    """An upload stopped: the server refused the batch, or it could not be delivered in ``max_attempts``.

    Nothing was acknowledged for the batch part that failed: its items stay in the outbox and its pin
    (batch id) is kept, so the next ``upload`` resends exactly the same lines under the same id.
    ``status`` is the last HTTP status (``None``: no answer), ``reason`` the server's ``error``
    field or a short description, and ``result`` what was done before the failure."""

    def __init__(self, message: str, *, status: int | None, reason: str, result: UploadResult) -> None:
        super().__init__(message)
        self.status = status
        self.reason = reason
        self.result = result


class UploadProtocolError(UploadError):
    """An ingest service's 2xx answer that is not a sane answer of the upload protocol (not JSON, over the size limit,
    another batch id, counts that are missing, not integers, negative, or do not add up to the lines sent):
    nothing was acknowledged, and ``reason`` says what was wrong."""


class ThreadMisuseError(LdpError, RuntimeError):
    """A :class:`~ldp.client.TelemetryClient` used from a thread other than the one that created it (its
    SQLite connection stays in that thread); raised before the state file is touched."""


# -- the server side: aggregates, decoding, batch jobs ----------------------------------------------------------
class AggregateFormatError(LdpError, ValueError):
    """Bytes that are not a well-formed aggregate: whatever is wrong with them, this is raised."""


class CandidateLimitError(LdpError, ValueError):
    """Reconstruction would form more candidate words than ``max_candidates``."""


class InputError(LdpError, ValueError):
    """An input file that cannot be read as its format at all (e.g. a CSV without the header)."""


class JobError(LdpError, ValueError):
    """The output folder cannot be used for this job (settings differ, damaged, or in use)."""


class InputChangedError(JobError):
    """An input in the manifest changed (or changed while it was read)."""


# -- the ingest service ----------------------------------------------------------------------------------------------
class ConfigError(LdpError, ValueError):
    """A configuration file that cannot be used (the message names the file and the key)."""


class IngestError(LdpError):
    """A refused request: HTTP ``status``, a short ``reason`` (the JSON ``error``) and a ``detail``
    that never quotes a report line."""

    def __init__(self, status: int, reason: str, detail: str = "") -> None:
        super().__init__(f"{status} {reason}: {detail}")
        self.status, self.reason, self.detail = status, reason, detail


class QueueFull(LdpError):
    """The write queue holds ``max_pending_batches``: answer 429."""


class WriterClosed(LdpError):
    """The writer is shutting down or failed: answer 503."""


class StorageError(LdpError, OSError):
    """The collection's store (:mod:`ldp.storage`: a folder or object storage) failed to do what was asked — a disk
    full, an I/O error, a server unreachable or answering an error — as opposed to a key that is not there. The
    ingest service answers 503 and retries; nothing acknowledged depends on it."""


class LeaseLostError(StorageError):
    """A lease holder (the shuffler, an ingest service replica) can no longer be sure it holds its lease in the store —
    not renewed in time (the process paused, the store unreachable) or taken over by another process — so it writes
    nothing more (:mod:`ldp.storage.lease`). A replica answers 503 while it is so."""


class ConditionalWriteError(StorageError):
    """The store does not refuse a second create of one key (an S3-compatible server that ignores
    ``If-None-Match: *``, a folder on a filesystem without ``link(2)``): nothing that needs one writer can run on
    it (:mod:`ldp.storage.lease`)."""


class LeaseHeldError(LdpError, RuntimeError):
    """Another process holds the lease (:mod:`ldp.storage.lease`): ``holder``, ``host``, ``pid`` and ``expires``
    (Unix s) say which and until when, unless it renews it."""

    def __init__(self, message: str, *, holder: str = "", host: str = "", pid: int = 0, expires: float = 0.0) -> None:
        super().__init__(message)
        self.holder, self.host, self.pid, self.expires = holder, host, pid, expires


class FoldBusyError(LdpError, RuntimeError):
    """Another process (or thread) is folding this app right now."""


class DataFolderBusyError(LdpError, RuntimeError):
    """Another process serves from this data folder (:mod:`ldp.ingest.datafolder`): ``pid``, ``host`` and
    ``started`` (ISO 8601 UTC) name it, as it described itself beside its lock (0 and ``""`` when unknown)."""

    def __init__(self, message: str, *, pid: int = 0, host: str = "", started: str = "") -> None:
        super().__init__(message)
        self.pid, self.host, self.started = pid, host, started


class NoThresholdError(LdpError, ValueError):
    """A shuffler run without a release threshold for some metric (:mod:`ldp.shuffler.stage`): refused before
    anything is read or written."""


# -- secure aggregation (Prio3) ------------------------------------------------------------------------------------
class PrioError(LdpError, ValueError):
    """A Prio3 operation refused its input (:mod:`ldp.prio`): parameters out of range, a measurement out of range,
    bytes that are no valid share or message, a proof that does not verify, a joint randomness that does not match,
    shares of another VDAF, DAP reports and HPKE ciphertexts that do not decode or open. ``operation`` names the
    refusing operation (``"shard"``, ``"verify_init"``, ``"verifier_shares_to_message"``, ``"verify_next"``,
    ``"aggregate"``, ``"unshard"``, ``"decode"``, ``"encode"``, ``"seal"``, ``"open"`` or ``"parameters"``; the
    aggregators' batch calls ``"helper_prepare_batch"``, ``"leader_init_batch"``, ``"leader_finish_batch"``, and
    Poplar1's ``"helper_init_batch"``, ``"leader_continue_batch"``, ``"helper_finish_batch"``, for their arguments)."""

    def __init__(self, message: str, operation: str = "") -> None:
        super().__init__(message)
        self.operation: str = operation

    def __reduce__(self) -> tuple[Any, ...]:  # pickling: ``operation`` is not in ``args``
        return type(self), (str(self), self.operation)


class AggregatorError(LdpError):
    """A two-aggregator request refused (:mod:`ldp.aggregators`): ``code`` names why, one of the report errors
    (:class:`ldp.aggregators.messages.ReportError`: ``report_replayed``, ``vdaf_invalid``, ``batch_collected``, ...)
    or a request's (``unrecognized_task``, ``window_open``, ``batch_too_small``, ``budget_exhausted``,
    ``batch_mismatch``, ``job_mismatch``, ``unauthorized``, ``helper_unavailable``); ``status`` the HTTP status it
    answers with."""

    def __init__(self, message: str, code: str, status: int = 400) -> None:
        super().__init__(message)
        self.code: str = code
        self.status: int = status

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), (str(self), self.code, self.status)


class AggregatorMessageError(LdpError, ValueError):
    """A message between the two aggregators that does not decode (:mod:`ldp.aggregators.messages`)."""

# -- installation ------------------------------------------------------------------------------------------------
class MissingExtraError(LdpError, ImportError):
    """A feature needs an optional extra that is not installed (the message says which)."""


# -- warnings ------------------------------------------------------------------------------------------------------
class SeededRandomnessWarning(LdpWarning):
    """A client encoder draws from a seed: every device given that seed reports the same noise."""


class PrivacyLeakWarning(LdpWarning):
    """Something about the data is used without privacy accounting (e.g. bounds taken from it)."""


class ReproductionOnlyWarning(LdpWarning):
    """A noise constant reproduced from a source that is not verified to give its stated guarantee."""


class SeededNoiseWarning(LdpWarning):
    """A central regression with the default ``noise_source="secure"`` given a ``random_state``: its noise comes
    from a seeded (predictable) exact sampler, for simulations only. ``noise_source="seeded"`` says so."""


# -- describing an error -------------------------------------------------------------------------------------------
def error_text(exc: BaseException) -> str:
    """One line describing a bad-input exception (no line breaks or control characters from the input): what the
    command line prints after ``error:`` and the ingest service logs for an aggregate it cannot decode."""
    if isinstance(exc, OSError) and exc.filename is not None and exc.strerror:
        names = [os.fsdecode(n) for n in (exc.filename, exc.filename2) if n is not None]
        text = f"{' -> '.join(names)}: {exc.strerror}"
    elif isinstance(exc, ZeroDivisionError):
        text = f"a value that must not be zero is zero ({type(exc).__name__}: {exc})"
    elif isinstance(exc, ArithmeticError):
        text = f"a value is too large or too small to compute with ({type(exc).__name__}: {exc})"
    elif isinstance(exc, MemoryError):
        text = f"not enough memory: {exc or 'the input declares sizes too large to allocate'}"
    elif isinstance(exc, RecursionError):
        text = "the input is nested too deeply"
    elif isinstance(exc, UnicodeDecodeError):
        text = f"not UTF-8 text ({exc.reason} at byte {exc.start})"
    elif isinstance(exc, (csv.Error, SyntaxError)):
        text = f"malformed input ({type(exc).__name__}: {exc})"
    else:
        text = str(exc) or type(exc).__name__
    text = " ".join(part.strip() for part in text.splitlines() if part.strip())
    return "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in text)
