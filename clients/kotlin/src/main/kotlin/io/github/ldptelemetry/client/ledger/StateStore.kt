package io.github.ldptelemetry.client.ledger

import io.github.ldptelemetry.client.LedgerException
import java.io.Closeable

/** What a [StateStore] read sees: the committed state and outbox. */
public interface StoreView {
    /** The device's state: `null` before the first commit. */
    public val state: DeviceState?

    /** Reports committed and not yet dropped. */
    public val pendingCount: Long

    /** What the pending reports count against the outbox's cap: each one's line in UTF-8 bytes, plus one. */
    public val pendingBytes: Long

    /** The [count] oldest pending reports (fewer if fewer are waiting). */
    @Throws(LedgerException::class)
    public fun head(count: Int): List<OutboxRecord>
}

/** What a [StateStore] transaction sees and changes. Nothing is written unless the transaction's block returns. */
public interface StoreTransaction : StoreView {
    /** The device's state: `null` before the first commit. Set it to what must be committed. */
    override var state: DeviceState?

    /** Adds a report to the outbox, committed with [state]. */
    public fun append(record: OutboxRecord)

    /** Drops the [count] oldest pending reports (acknowledged, or deleted by an opt-out). */
    @Throws(LedgerException::class)
    public fun dropHead(count: Int)
}

/**
 * Where a device's state and outbox live. [transact] runs a block exclusively (across threads, and for [FileStore]
 * across processes) and commits what it changed atomically: the state and the reports it appended are both kept,
 * or, if the block throws or the process dies first, neither. A charge and the report it pays for are therefore
 * written together or not at all. A transaction that changed nothing writes nothing. [read] runs a block on the
 * committed state and never writes.
 */
public interface StateStore : Closeable {
    @Throws(LedgerException::class)
    public fun <T> transact(block: (StoreTransaction) -> T): T

    @Throws(LedgerException::class)
    public fun <T> read(block: (StoreView) -> T): T

    override fun close() {}
}
