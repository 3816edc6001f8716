"""The Prio3 binding's names, from ``ldp_prio``: the extension module of the distribution ``ldp-telemetry-prio``
(``bindings/prio``), installed beside ldp-telemetry by ``pip install ./bindings/prio`` (or the ``prio`` extra).

One place says where the compiled module lives: :mod:`ldp.prio` imports these names from here, and their types are
``_native.pyi`` beside this file. An :class:`ImportError` here (no ``ldp_prio``, or one that lacks a name) is what
:func:`ldp.prio.available` reports and :func:`ldp.prio.require` turns into the error that says how to install it."""

from ldp_prio import (
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

__all__ = ["NONCE_SIZE", "PRIO_VERSION", "PRIO_VERSIONS", "VDAF_DRAFT", "VDAF_DRAFTS", "VERIFY_KEY_SIZE",
           "AggregateShare", "DapReport", "HpkeConfig", "HpkeKeypair", "OutputShare", "Prio3Count", "Prio3Histogram",
           "Prio3Sum", "Prio3SumVec", "VerifyState", "decode_hpke_config_list", "encode_hpke_config_list", "hpke_open",
           "hpke_seal", "open_input_share", "seal_report", "batch_threads", "set_batch_threads", "open_input_shares",
           "HttpFront", "FrontRequest", "Poplar1", "Poplar1AggregationParam", "Poplar1VerifyState",
           "Poplar1OutputShare", "Poplar1AggregateShare"]
