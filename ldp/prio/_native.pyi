"""Types of the optional compiled Prio3 binding (``bindings/prio``, the ``prio`` crates 0.18.1 and 0.16.8 through
pyo3: VDAF drafts 18 and 08)."""

from collections.abc import Iterable, Sequence
from typing import Any, Final

PRIO_VERSION: Final[str]
"""The default draft's (18) crate version: ``PRIO_VERSIONS[VDAF_DRAFT]``."""
VDAF_DRAFT: Final[int]
"""The default draft, 18."""
VDAF_DRAFTS: Final[tuple[int, ...]]
"""The drafts every class takes as ``draft=``: ``(8, 18)``."""
PRIO_VERSIONS: Final[dict[int, str]]
"""The ``prio`` crate's version that implements each draft: ``{8: "0.16.8", 18: "0.18.1"}``."""
VERIFY_KEY_SIZE: Final[int]
"""The default draft's verify key size (32); each VDAF object's own is its ``verify_key_size`` (16 in draft 08)."""
NONCE_SIZE: Final[int]

class VerifyState:
    """One aggregator's state between ``verify_init`` and ``verify_next`` (consumed by ``verify_next``)."""

    @property
    def agg_id(self) -> int: ...
    @property
    def used(self) -> bool: ...
    def to_bytes(self) -> bytes: ...

class OutputShare:
    """One aggregator's output share of one report."""

    def to_bytes(self) -> bytes: ...
    def field_elements(self) -> list[int]: ...
    def __len__(self) -> int: ...

class AggregateShare:
    """An aggregator's share of the aggregate: mergeable, encodable, its field elements as ints."""

    def accumulate(self, output_share: OutputShare) -> None: ...
    def merge(self, other: AggregateShare) -> None: ...
    def to_bytes(self) -> bytes: ...
    def field_elements(self) -> list[int]: ...
    @property
    def modulus(self) -> int: ...
    def add_integers(self, values: Iterable[int]) -> None: ...
    def copy(self) -> AggregateShare: ...
    def __copy__(self) -> AggregateShare: ...
    def __len__(self) -> int: ...

class _Prio3:
    """The operations every Prio3 type has (not a runtime class: each type defines them)."""

    def shard(self, measurement: Any, *, nonce: bytes | None = None,
              rand: bytes | None = None) -> tuple[bytes, bytes, list[bytes]]:
        """``(nonce, public_share, input_shares)``; ``nonce`` and ``rand`` (``rand_size`` bytes) drawn from the OS
        unless given. Draft 08 refuses ``rand`` (:class:`~ldp.errors.PrioError`, ``operation="shard"``): its crate
        (0.16.8) has no public sharding with given randomness."""
    def verify_init(self, verify_key: bytes, agg_id: int, nonce: bytes, public_share: bytes,
                    input_share: bytes) -> tuple[VerifyState, bytes]: ...
    def verifier_shares_to_message(self, verifier_shares: Iterable[bytes]) -> bytes: ...
    def verify_next(self, state: VerifyState, verifier_message: bytes) -> OutputShare: ...
    def aggregate_init(self) -> AggregateShare: ...
    def aggregate(self, output_shares: Iterable[OutputShare]) -> AggregateShare: ...
    def unshard(self, aggregate_shares: Iterable[AggregateShare], num_measurements: int) -> Any: ...
    def aggregate_share_from_bytes(self, data: bytes) -> AggregateShare: ...
    def aggregate_share_from_field_elements(self, values: Iterable[int]) -> AggregateShare: ...
    def verify_state_from_bytes(self, agg_id: int, data: bytes) -> VerifyState: ...
    def input_share_len(self, agg_id: int) -> int:
        """The bytes of aggregator ``agg_id``'s input share (0: the leader's, its measurement and proof shares; a
        helper's, seeds), exactly as :meth:`shard` makes it and the crate decodes it (learnt once, by sharding the
        all-zero measurement). :class:`~ldp.errors.PrioError` (``operation="decode"``) for an ``agg_id`` that is not
        below ``num_aggregators``."""
    @property
    def public_share_len(self) -> int:
        """The bytes of the public share, exactly as :meth:`shard` makes it: one joint randomness part per
        aggregator, or 0 for a type without joint randomness (Prio3Count, Prio3Sum)."""
    def check_input_share(self, agg_id: int, data: bytes) -> None:
        """Refuse bytes that are not exactly one input share of aggregator ``agg_id`` of this VDAF (the crate's
        ``Prio3InputShare`` decoding with that aggregator ID, every byte consumed, each field element below the
        modulus): :class:`~ldp.errors.PrioError` (``operation="decode"``), its message naming both lengths."""
    def check_public_share(self, data: bytes) -> None:
        """Refuse bytes that are not exactly one public share of this VDAF (the crate's ``Prio3PublicShare``
        decoding, every byte consumed): :class:`~ldp.errors.PrioError` (``operation="decode"``)."""
    def helper_prepare_batch(self, keypair: HpkeKeypair, verify_key: bytes, task_id: bytes,
                             reports: Iterable[tuple[bytes, int, bytes, bytes, bytes]]
                             ) -> tuple[list[bytes | str], AggregateShare]:
        """The helper's side of one aggregation job in one call, the GIL released while it runs. ``reports``: per
        report ``(report_id, time, public_share, helper_ciphertext, leader_verifier_share)``. For each, in order,
        its verifier message (bytes, for the leader), or its refusal code (str): ``"hpke_unknown_config_id"`` (the
        ciphertext is empty or sealed to another config id than ``keypair``'s), ``"hpke_decrypt_error"`` (it does
        not open as the helper's share under ``task_id`` and the report's ID, time and public share),
        ``"vdaf_invalid"`` (``verify_init`` as aggregator 1 refuses it; its public share's joint randomness part for
        the helper is not the helper's own, as ``joint_rand_part_matches`` of ``tests/prio/prepare_reference.py``
        checks;
        ``verifier_shares_to_message([leader_verifier_share, helper's])`` or ``verify_next`` refuses it). And the
        aggregate share of the reports that got a message. The nonce is the report ID; the VDAF's ``ctx`` binds it.
        A ``TypeError`` for an argument of another type, a :class:`~ldp.errors.PrioError`
        (``operation="helper_prepare_batch"``) for a VDAF of other than two aggregators, a verify key or task ID of
        another length, or a malformed report (its index named: not 5 items, a report ID of other than 16 bytes, a
        time outside ``[0, 2**64)``); nothing is prepared then."""
    def leader_init_batch(self, keypair: HpkeKeypair, verify_key: bytes, task_id: bytes,
                          reports: Iterable[tuple[bytes, int, bytes, bytes, bytes | None]]
                          ) -> list[tuple[VerifyState, bytes] | str]:
        """The leader's first step on one aggregation job in one call, the GIL released while it runs. ``reports``:
        per report ``(report_id, time, public_share, leader_ciphertext, input_share)``; with ``input_share`` given
        (the leader opened it at its door) the ciphertext is not opened again, else it is opened as the leader's
        share (refusal codes ``"hpke_unknown_config_id"`` and ``"hpke_decrypt_error"`` as in
        :meth:`helper_prepare_batch`). Then ``verify_init`` as aggregator 0: for each report, in order,
        ``(state, verifier_share)``, or ``"vdaf_invalid"``. Argument errors as :meth:`helper_prepare_batch`'s
        (``operation="leader_init_batch"``)."""
    def leader_finish_batch(self, states: Iterable[VerifyState], messages: Iterable[bytes]
                            ) -> tuple[list[bool], AggregateShare]:
        """The leader's last step on one aggregation job in one call, the GIL released while it runs: ``verify_next``
        of each state with its message (the states are used), ``True`` where it gave an output share (accumulated
        into the aggregate share returned), ``False`` where it refused (a message that does not decode or whose joint
        randomness does not match, a state already used). A ``TypeError`` for a state that is no
        :class:`VerifyState` or a message that is not bytes, a :class:`~ldp.errors.PrioError`
        (``operation="leader_finish_batch"``) for a state of another VDAF (its index named) or lists of other lengths;
        no state is used then."""
    @property
    def ctx(self) -> bytes:
        """The context string (empty in draft 08, which has none)."""
    @property
    def draft(self) -> int:
        """The VDAF draft: 18 or 8."""
    @property
    def num_aggregators(self) -> int: ...
    @property
    def modulus(self) -> int: ...
    @property
    def output_len(self) -> int: ...
    @property
    def rand_size(self) -> int | None:
        """The bytes of randomness ``shard`` takes given; ``None`` in draft 08 (its crate draws it)."""
    @property
    def verify_key_size(self) -> int:
        """32 in draft 18, 16 in draft 08."""
    @property
    def nonce_size(self) -> int: ...

class Prio3Count(_Prio3):
    def __init__(self, *, ctx: bytes | None = None, num_aggregators: int = 2, draft: int = 18) -> None:
        """``ctx`` is required in draft 18 (a ``TypeError`` without it) and must be empty in draft 08."""
    def shard(self, measurement: int | bool, *, nonce: bytes | None = None,
              rand: bytes | None = None) -> tuple[bytes, bytes, list[bytes]]: ...
    def unshard(self, aggregate_shares: Iterable[AggregateShare], num_measurements: int) -> int: ...

class Prio3Sum(_Prio3):
    def __init__(self, *, max_measurement: int | None = None, bits: int | None = None, ctx: bytes | None = None,
                 num_aggregators: int = 2, draft: int = 18) -> None:
        """Draft 18: ``max_measurement``. Draft 08: ``bits``, or a ``max_measurement`` of ``2**bits - 1``."""
    @property
    def max_measurement(self) -> int:
        """The largest measurement (draft 08: ``2**bits - 1``)."""
    @property
    def bits(self) -> int | None:
        """Draft 08's bit length of a measurement; ``None`` in draft 18."""
    def shard(self, measurement: int, *, nonce: bytes | None = None,
              rand: bytes | None = None) -> tuple[bytes, bytes, list[bytes]]: ...
    def unshard(self, aggregate_shares: Iterable[AggregateShare], num_measurements: int) -> int: ...

class Prio3SumVec(_Prio3):
    def __init__(self, *, length: int, max_measurement: int | None = None, bits: int | None = None,
                 chunk_length: int | None = None, ctx: bytes | None = None, num_aggregators: int = 2,
                 draft: int = 18) -> None:
        """Draft 18: ``max_measurement``. Draft 08: ``bits``, or a ``max_measurement`` of ``2**bits - 1``."""
    @property
    def length(self) -> int: ...
    @property
    def max_measurement(self) -> int:
        """The largest element (draft 08: ``2**bits - 1``)."""
    @property
    def bits(self) -> int | None:
        """Draft 08's bit length of an element; ``None`` in draft 18."""
    @property
    def chunk_length(self) -> int: ...
    def shard(self, measurement: Sequence[int], *, nonce: bytes | None = None,
              rand: bytes | None = None) -> tuple[bytes, bytes, list[bytes]]: ...
    def unshard(self, aggregate_shares: Iterable[AggregateShare], num_measurements: int) -> list[int]: ...

class Prio3Histogram(_Prio3):
    def __init__(self, *, length: int, chunk_length: int | None = None, ctx: bytes | None = None,
                 num_aggregators: int = 2, draft: int = 18) -> None: ...
    @property
    def length(self) -> int: ...
    @property
    def chunk_length(self) -> int: ...
    def shard(self, measurement: int, *, nonce: bytes | None = None,
              rand: bytes | None = None) -> tuple[bytes, bytes, list[bytes]]: ...
    def unshard(self, aggregate_shares: Iterable[AggregateShare], num_measurements: int) -> list[int]: ...

class HpkeConfig:
    """DAP-09's ``HpkeConfig``: an aggregator's (or the collector's) HPKE public key, its suite and its one-byte id.
    Equal configs compare and hash equal; pickles as its encoding."""

    @staticmethod
    def from_bytes(data: bytes) -> HpkeConfig:
        """The config encoded in ``data``; :class:`~ldp.errors.PrioError` (``operation="decode"``) for malformed or
        trailing bytes. Any suite ids decode; sealing to an unsupported suite is refused."""
    def to_bytes(self) -> bytes:
        """DAP-09's encoding."""
    @property
    def id(self) -> int:
        """The config id (0 to 255), which each ciphertext sealed to it carries."""
    @property
    def kem_id(self) -> int:
        """The KEM (0x0020: DHKEM(X25519, HKDF-SHA256))."""
    @property
    def kdf_id(self) -> int:
        """The KDF (0x0001: HKDF-SHA256)."""
    @property
    def aead_id(self) -> int:
        """The AEAD (0x0001: AES-128-GCM)."""
    @property
    def public_key(self) -> bytes:
        """The serialized public key."""

class HpkeKeypair:
    """An HPKE key pair: the config to publish and its private key (a secret, never in its repr)."""

    @staticmethod
    def generate(config_id: int) -> HpkeKeypair:
        """A fresh key pair of DHKEM(X25519, HKDF-SHA256), HKDF-SHA256, AES-128-GCM with id ``config_id`` (0 to 255),
        from the OS generator."""
    @staticmethod
    def from_bytes(config: bytes, private_key: bytes) -> HpkeKeypair:
        """The key pair of an encoded config and its private key; :class:`~ldp.errors.PrioError`
        (``operation="decode"``) unless the private key's public key is the config's (and its suite supported)."""
    @property
    def config(self) -> HpkeConfig:
        """The public half."""
    @property
    def private_key(self) -> bytes:
        """The private key's bytes: a secret."""

class DapReport:
    """DAP-09's ``Report``: the report ID (the VDAF nonce), the time, the public share and each aggregator's sealed
    input share."""

    @staticmethod
    def from_bytes(data: bytes) -> DapReport:
        """The report encoded in ``data``; :class:`~ldp.errors.PrioError` (``operation="decode"``) for malformed or
        trailing bytes. The ciphertexts are not opened."""
    def to_bytes(self) -> bytes:
        """DAP-09's encoding."""
    @property
    def report_id(self) -> bytes:
        """16 bytes: the VDAF nonce too."""
    @property
    def time(self) -> int:
        """Seconds since the Unix epoch, rounded down to the task's time precision."""
    @property
    def public_share(self) -> bytes: ...
    @property
    def leader_ciphertext(self) -> bytes:
        """The leader's sealed input share, in DAP's ``HpkeCiphertext`` encoding."""
    @property
    def helper_ciphertext(self) -> bytes:
        """The helper's sealed input share, in DAP's ``HpkeCiphertext`` encoding."""

def encode_hpke_config_list(configs: Sequence[HpkeConfig]) -> bytes:
    """DAP-09's ``HpkeConfigList`` (an aggregator's ``/hpke_config`` answer), most preferred first;
    :class:`~ldp.errors.PrioError` (``operation="encode"``) for an empty list or a repeated id."""

def decode_hpke_config_list(data: bytes) -> list[HpkeConfig]:
    """The configs of an encoded ``HpkeConfigList``; :class:`~ldp.errors.PrioError` (``operation="decode"``) for
    malformed or trailing bytes, an empty list or a repeated id."""

def seal_report(vdaf: Prio3Count | Prio3Sum | Prio3SumVec | Prio3Histogram | Poplar1, measurement: Any, *,
                task_id: bytes, time: int, leader: HpkeConfig, helper: HpkeConfig, time_precision: int = 1,
                report_id: bytes | None = None, rand: bytes | None = None) -> bytes:
    """A DAP-09 report of ``measurement`` (a simulated device's upload): sharded by ``vdaf`` (two aggregators) with
    the report ID as the nonce, ``time`` rounded down to ``time_precision``, each input share sealed to its
    aggregator's config (ephemeral keys from the OS generator). ``report_id`` (16 bytes) and ``rand`` (the VDAF's
    ``rand_size`` bytes) are drawn from the OS unless given (a draft 08 VDAF takes no ``rand``: its crate draws it).
    :class:`~ldp.errors.PrioError`: ``operation="shard"`` for a measurement out of range or ``rand`` given to a draft
    08 VDAF, ``"seal"`` for a bad task ID, time, report ID, VDAF or config."""

def open_input_share(keypair: HpkeKeypair, *, role: str, task_id: bytes, report_id: bytes, time: int,
                     public_share: bytes, ciphertext: bytes) -> bytes:
    """An aggregator's input share (``role`` ``"leader"`` or ``"helper"``) of a report, opened under its task ID,
    report ID, time and public share: the ``PlaintextInputShare``'s payload, the VDAF input share for
    ``verify_init``. :class:`~ldp.errors.PrioError` (``operation="open"``) for a ciphertext sealed to another config
    id, one that does not open (another key, role, task, report ID, time or public share, tampered bytes), a
    malformed plaintext, and a plaintext with extensions (this deployment defines none; DAP-09 rejects unrecognized
    ones)."""

def hpke_seal(config: HpkeConfig, info: bytes, aad: bytes, plaintext: bytes) -> bytes:
    """``plaintext`` sealed to ``config`` (RFC 9180 single-shot base mode, an ephemeral key from the OS generator), in
    DAP's ``HpkeCiphertext`` encoding; :class:`~ldp.errors.PrioError` (``operation="seal"``) for an unsupported suite
    or an invalid public key."""

def hpke_open(keypair: HpkeKeypair, info: bytes, aad: bytes, ciphertext: bytes) -> bytes:
    """A ciphertext in DAP's ``HpkeCiphertext`` encoding opened with ``keypair``; :class:`~ldp.errors.PrioError`
    (``operation="open"``) for another config id, another key, ``info`` or ``aad``, or tampered bytes."""


def batch_threads() -> int:
    """The threads each batch call (Prio3's and Poplar1's: ``helper_prepare_batch``, ``leader_init_batch``, ...) uses at
    most: :func:`set_batch_threads`'s setting, by default the CPUs this process may run on (its affinity honoured).
    A job's reports are cut into contiguous parts, one per thread, with the GIL released (never fewer than 32
    reports a part); the results are the same in any number of threads."""

def set_batch_threads(threads: int | None) -> None:
    """Set the threads each batch call may use: a positive count, or ``None`` for the CPUs this process may run on
    (the default); ``ValueError`` for 0."""

def open_input_shares(keypair: HpkeKeypair, *, role: str, task_id: bytes,
                      reports: Iterable[tuple[bytes, int, bytes, bytes]]) -> list[bytes | None]:
    """Each report's input share (``(report_id, time, public_share, ciphertext)``, the ciphertext an encoded
    ``HpkeCiphertext``) opened as :func:`open_input_share` opens one, the reports spread over the cores with the GIL
    released (:func:`set_batch_threads`): the payloads in order, ``None`` for a share that does not decode or open.
    Arguments of the wrong type or size are refused whole (``TypeError``, or ``PrioError`` naming the item)."""


class FrontRequest:
    """One request read by :class:`HttpFront`, waiting for its answer (:meth:`respond`, exactly once)."""

    method: str
    path: str
    """The path as sent (percent-encoded), without the query."""
    query: str
    """The query string as sent, without its ``?``."""
    body_error: str | None
    """``None``, or why :attr:`body` is empty: ``"too_large"`` (over the front's ``max_body``, declared or found while
    reading), ``"timeout"`` (not all there within 30 s) or ``"broken"`` (the client went away)."""
    answered: bool

    @property
    def body(self) -> bytes: ...
    @property
    def headers(self) -> list[tuple[bytes, bytes]]:
        """The headers as sent, names in lower case (ASGI's form)."""
    @property
    def peer(self) -> tuple[str, int]: ...
    def header(self, name: str) -> str | None:
        """The first value of header ``name`` (any case), or ``None``."""
    def respond(self, status: int, headers: list[tuple[str, bytes]], body: bytes) -> None:
        """Answer; ``RuntimeError`` when answered already, ``ValueError`` for a status or header HTTP cannot carry."""


class HttpFront:
    """hyper's HTTP/1.1 server on threads of its own (the GIL released), handing requests to Python in batches
    (:mod:`ldp.web.front` serves an ASGI app through it; issue 86, item 3). ``OSError`` when the address cannot be
    listened on."""

    def __init__(self, host: str, port: int, *, max_body: int, threads: int | None = None,
                 reuse_port: bool = False) -> None: ...
    @property
    def address(self) -> tuple[str, int]: ...
    def next_requests(self, max: int, timeout: float) -> list[FrontRequest]:
        """The requests queued (at most ``max``), waiting up to ``timeout`` s for the first, the GIL released."""
    def stop_accepting(self) -> None: ...
    def close(self, grace: float = 5.0) -> None:
        """Close: requests unanswered after ``grace`` seconds get a 503. Idempotent."""
    def queued(self) -> int: ...


class Poplar1AggregationParam:
    """Poplar1's aggregation parameter (VDAF draft 18 §8.2.6.6): a level and its sorted, unique candidate prefixes of
    ``level + 1`` bits; equal parameters compare and hash equal."""

    def __init__(self, level: int, prefixes: Iterable[Sequence[bool | int]]) -> None:
        """:class:`~ldp.errors.PrioError` (``operation="parameters"``) naming the first prefix of another length, out
        of order or repeated; a ``TypeError`` for a prefix that is no sequence of bools."""
    @staticmethod
    def from_bytes(data: bytes) -> Poplar1AggregationParam:
        """The crate's decoding (``operation="decode"`` when refused)."""
    def to_bytes(self) -> bytes: ...
    @property
    def level(self) -> int: ...
    @property
    def prefixes(self) -> list[tuple[bool, ...]]: ...
    def __len__(self) -> int: ...


class Poplar1VerifyState:
    """One aggregator's state of one report: round 0 after ``verify_init``, 1 after the first ``verify_next``;
    each ``verify_next`` consumes it."""

    @property
    def agg_id(self) -> int: ...
    @property
    def round(self) -> int: ...
    @property
    def used(self) -> bool: ...
    def to_bytes(self) -> bytes: ...


class Poplar1OutputShare:
    """One aggregator's share of each candidate prefix's count, of one report."""

    def to_bytes(self) -> bytes: ...
    def field_elements(self) -> list[int]: ...
    @property
    def modulus(self) -> int: ...
    @property
    def level(self) -> int: ...
    def __len__(self) -> int: ...


class Poplar1AggregateShare(Poplar1OutputShare):
    """An aggregator's share of each candidate prefix's count over a batch (not a subclass at run time)."""

    def accumulate(self, output_share: Poplar1OutputShare) -> None: ...
    def merge(self, other: Poplar1AggregateShare) -> None: ...
    def add_integers(self, noise: Iterable[int]) -> None:
        """Add one signed int per prefix, modulo the field's prime (``operation="aggregate"`` for another count)."""


class Poplar1:
    """Poplar1 (VDAF draft 18 §8) of ``bits``-bit strings (1 to 256) and the context ``ctx``: the prio crate
    0.18.1's, for the leader (0) and the helper (1)."""

    max_bits: int
    def __init__(self, bits: int, *, ctx: bytes) -> None: ...
    @property
    def bits(self) -> int: ...
    @property
    def ctx(self) -> bytes: ...
    @property
    def verify_key_size(self) -> int: ...
    @property
    def rand_size(self) -> int: ...
    @property
    def public_share_len(self) -> int: ...
    def input_share_len(self, agg_id: int) -> int: ...
    def shard(self, measurement: Sequence[bool | int], *, nonce: bytes | None = None,
              rand: bytes | None = None) -> tuple[bytes, bytes, list[bytes]]:
        """``(nonce, public_share, [leader_share, helper_share])``; the nonce and the randomness (``rand_size``
        bytes) from the OS unless given."""
    def check_public_share(self, data: bytes) -> None: ...
    def check_input_share(self, agg_id: int, data: bytes) -> None: ...
    def verify_init(self, verify_key: bytes, agg_id: int, agg_param: Poplar1AggregationParam, nonce: bytes,
                    public_share: bytes, input_share: bytes) -> tuple[Poplar1VerifyState, bytes]: ...
    def verifier_shares_to_message(self, state: Poplar1VerifyState, verifier_shares: Sequence[bytes]) -> bytes:
        """Both aggregators' shares of ``state``'s round (the leader's first), decoded as that round has them."""
    def verify_next(self, state: Poplar1VerifyState, verifier_message: bytes
                    ) -> tuple[Poplar1VerifyState, bytes] | Poplar1OutputShare: ...
    def verify_state_from_bytes(self, agg_id: int, agg_param: Poplar1AggregationParam,
                                data: bytes) -> Poplar1VerifyState: ...
    def aggregate_init(self, agg_param: Poplar1AggregationParam) -> Poplar1AggregateShare: ...
    def aggregate(self, agg_param: Poplar1AggregationParam,
                  output_shares: Iterable[Poplar1OutputShare]) -> Poplar1AggregateShare: ...
    def output_share_from_bytes(self, agg_param: Poplar1AggregationParam, data: bytes) -> Poplar1OutputShare: ...
    def aggregate_share_from_bytes(self, agg_param: Poplar1AggregationParam,
                                   data: bytes) -> Poplar1AggregateShare: ...
    def unshard(self, agg_param: Poplar1AggregationParam, agg_shares: Sequence[Poplar1AggregateShare],
                num_measurements: int) -> list[int]: ...
    @staticmethod
    def is_agg_param_valid(agg_param: Poplar1AggregationParam,
                           previous: Sequence[Poplar1AggregationParam]) -> bool: ...
    def leader_init_batch(self, keypair: HpkeKeypair, verify_key: bytes, task_id: bytes,
                          agg_param: Poplar1AggregationParam,
                          reports: Iterable[tuple[bytes, int, bytes, bytes, bytes | None]]
                          ) -> list[tuple[Poplar1VerifyState, bytes] | str]:
        """The leader's round 0 of one job in one call (the GIL released, the reports over threads). ``reports``:
        ``(report_id, time, public_share, leader_ciphertext, input_share)``, the ciphertext opened unless the share is
        given. Per report its round-0 state and verifier share, or its code: ``"hpke_unknown_config_id"``,
        ``"hpke_decrypt_error"``, ``"vdaf_invalid"`` (``verify_init`` refuses it). Argument errors as Prio3's batch
        calls' (``operation="leader_init_batch"``; a level past the bit length too); nothing is done then."""
    def helper_init_batch(self, keypair: HpkeKeypair, verify_key: bytes, task_id: bytes,
                          agg_param: Poplar1AggregationParam,
                          reports: Iterable[tuple[bytes, int, bytes, bytes, bytes]]
                          ) -> list[tuple[bytes, bytes, bytes] | str]:
        """The helper's round 0 of one job in one call. ``reports``: ``(report_id, time, public_share,
        helper_ciphertext, leader_verifier_share)``. Per report ``(round-1 state's to_bytes(), round 0's message,
        round-1 verifier share)``, or its code: as :meth:`leader_init_batch`'s, and ``"invalid_message"`` for a
        share that opens but is no helper's input share; ``"vdaf_invalid"`` when ``verify_init``, the message of
        both round-0 shares or ``verify_next`` refuses it (``operation="helper_init_batch"``)."""
    def leader_continue_batch(self, states: Iterable[Poplar1VerifyState], messages: Iterable[bytes],
                              verifier_shares: Iterable[bytes]) -> list[tuple[Poplar1VerifyState, bytes] | str]:
        """The leader's round 1 of one job in one call: per round-0 state (used), ``verify_next`` with round 0's
        message, then round 1's message of its share and the helper's: ``(round-1 state, message)``, or
        ``"vdaf_invalid"`` (a state used or of round 1, left unused then). A ``TypeError`` for an item of another
        type, a ``PrioError`` (``operation="leader_continue_batch"``) for lists of other lengths; no state is used."""
    def leader_finish_batch(self, agg_param: Poplar1AggregationParam, states: Iterable[Poplar1VerifyState],
                            messages: Iterable[bytes]) -> tuple[list[bool], Poplar1AggregateShare]:
        """The leader's last step of one job in one call: per round-1 state (used), ``verify_next`` with round 1's
        message; whether it gave an output share, and the aggregate share of those. ``PrioError``
        (``operation="leader_finish_batch"``) for a state of another parameter or lists of other lengths."""
    def helper_finish_batch(self, agg_param: Poplar1AggregationParam, states: Iterable[bytes],
                            messages: Iterable[bytes]) -> tuple[list[bool], Poplar1AggregateShare]:
        """:meth:`leader_finish_batch` on the helper's round-1 states as ``to_bytes()`` gave them (``False`` for
        bytes that are no helper's round-1 state) (``operation="helper_finish_batch"``)."""
