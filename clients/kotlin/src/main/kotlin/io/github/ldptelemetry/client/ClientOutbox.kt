package io.github.ldptelemetry.client

import io.github.ldptelemetry.client.dap.DapLine
import io.github.ldptelemetry.client.internal.Bytes
import io.github.ldptelemetry.client.ledger.BudgetLedger
import io.github.ldptelemetry.client.ledger.DeviceState
import io.github.ldptelemetry.client.ledger.OutboxLanes
import io.github.ldptelemetry.client.ledger.OutboxRecord
import io.github.ldptelemetry.client.ledger.PinnedPart
import io.github.ldptelemetry.client.ledger.StateStore
import io.github.ldptelemetry.client.ledger.StoreView
import io.github.ldptelemetry.client.spec.CollectionSpec
import io.github.ldptelemetry.client.upload.Batch
import io.github.ldptelemetry.client.upload.PendingReport

/** The device's state in [view]; a [LedgerException] when a store lost it. */
internal fun stateOf(view: StoreView): DeviceState = view.state ?: throw LedgerException("the client's state is gone")

/**
 * The outbox of a [TelemetryClient] (Python's `ldp.client.outbox.ClientOutbox`), in two lanes ([OutboxLanes]): the
 * ingest lane's batches, pinned in the state until the ingest service acknowledges them, with the upload interval
 * between them; and the two-aggregator lane's reports ([DapLine]: a DAP report's line), each acknowledged alone once
 * its leader has it, with no interval. Every method is one store transaction, or one read that writes nothing.
 */
internal class ClientOutbox(private val spec: CollectionSpec, private val store: StateStore, private val clock: () -> Double) {
    /** Reports waiting for upload, in either lane. */
    fun pending(): Long = store.read { OutboxLanes.pendingCount(it, stateOf(it)) }

    fun pendingBytes(): Long = store.read { OutboxLanes.pendingBytes(it, stateOf(it)) }

    /** Whether a report of the ingest lane (`false`), of the two-aggregator lane (`true`), or of either (`null`)
     * waits. */
    fun hasPending(dap: Boolean? = null): Boolean = store.read { view ->
        OutboxLanes.live(view, stateOf(view), 1) { dap == null || DapLine.isDap(it.line) == dap }.isNotEmpty()
    }

    /** Every waiting report, oldest first. */
    fun waiting(view: StoreView): List<OutboxRecord> =
        OutboxLanes.live(view, stateOf(view), minOf(view.pendingCount, Int.MAX_VALUE.toLong()).toInt()) { true }

    fun nextUploadAt(): Double = store.read { view ->
        val state = stateOf(view)
        when {
            state.optedOut -> Double.POSITIVE_INFINITY
            else -> state.lastUpload?.let { it + spec.minIntervalSeconds } ?: Double.NEGATIVE_INFINITY
        }
    }

    private val ingest: (OutboxRecord) -> Boolean = { !DapLine.isDap(it.line) }

    /** The reports of pinned part [p]: the ingest lane's waiting ones from its first id to its last. */
    private fun part(view: StoreView, p: PinnedPart): Batch {
        val records = OutboxLanes.through(view, stateOf(view), p.last, ingest).filter { it.id >= p.first }
        if (records.isEmpty() || records.first().id != p.first || records.last().id != p.last) {
            throw LedgerException("the client's state is damaged: pinned batch ${p.id} is not in the outbox")
        }
        return Batch(p.id, records.map { PendingReport(it.id, it.line) })
    }

    private fun pin(state: DeviceState, reports: List<PendingReport>): PinnedPart = PinnedPart(
        TelemetryClient.batchId(Bytes.fromHex(state.saltHex), reports.map { it.id }, reports.map { it.line }),
        reports.first().id, reports.last().id,
    )

    /** What [nextBatch] returns without pinning anything: the pinned part, or null when there is nothing to send now
     * (or [PIN] when a new batch must be pinned, in a transaction). */
    private fun unpinned(view: StoreView, reading: Double): Batch? {
        val state = stateOf(view)
        state.parts.firstOrNull()?.let { return part(view, it) }
        if (state.optedOut || OutboxLanes.live(view, state, 1, pick = ingest).isEmpty()) return null
        val last = state.lastUpload
        if (last != null && maxOf(state.clock, BudgetLedger.checkClock(reading)) < last + spec.minIntervalSeconds) return null
        return PIN
    }

    fun nextBatch(limit: Int?): Batch? {
        require(limit == null || limit >= 1) { "limit must be null or >= 1, got $limit" }
        val reading = clock()
        val seen = store.read { unpinned(it, reading) } // nothing to pin: nothing written
        if (seen !== PIN) return seen
        return store.transact { tx ->
            val now = unpinned(tx, reading)
            if (now !== PIN) return@transact now
            val state = stateOf(tx)
            val reports = OutboxLanes.live(tx, state, minOf(limit ?: spec.maxBatch, spec.maxBatch), pick = ingest)
                .map { PendingReport(it.id, it.line) }
            val p = pin(state, reports)
            state.parts.add(p)
            tx.state = state
            Batch(p.id, reports)
        }
    }

    fun splitBatch(batch: String): Int = store.transact { tx ->
        val state = stateOf(tx)
        val i = state.parts.indexOfFirst { it.id == batch }
        if (i < 0) return@transact 0
        val records = part(tx, state.parts[i]).reports
        val half = (records.size + 1) / 2
        if (records.size >= 2) {
            state.parts.removeAt(i)
            state.parts.add(i, pin(state, records.subList(half, records.size)))
            state.parts.add(i, pin(state, records.subList(0, half)))
            tx.state = state
        }
        half
    }

    fun acknowledgeBatch(batch: String, ids: List<Long>): Int {
        val reading = clock()
        return store.transact { tx ->
            val state = stateOf(tx)
            val p = state.parts.firstOrNull() ?: return@transact 0
            if (p.id != batch) {
                if (state.parts.none { it.id == batch }) return@transact 0 // acknowledged already (another process)
                throw LedgerException("batch $batch acknowledged before the part pinned ahead of it (${p.id})")
            }
            val wanted = ids.toHashSet()
            val records = OutboxLanes.through(tx, state, p.last, ingest).filter { it.id >= p.first }
            if (records.any { it.id !in wanted }) throw LedgerException("acknowledgement of batch $batch does not cover its reports")
            uploaded(state, records)
            OutboxLanes.remove(tx, state, records)
            state.parts.removeAt(0)
            state.lastUpload = maxOf(state.clock, BudgetLedger.checkClock(reading))
            tx.state = state
            records.size
        }
    }

    /** The oldest [limit] waiting reports of the two-aggregator lane (read only; no upload interval: a device sends
     * at most its cap of them a window). */
    fun dapPending(limit: Int): List<OutboxRecord> = store.read { view ->
        val state = stateOf(view)
        if (state.optedOut) emptyList() else OutboxLanes.live(view, state, limit) { DapLine.isDap(it.line) }
    }

    /** Deletes the two-aggregator report [id] (its leader has it, or never will) and counts it uploaded; the ingest
     * lane's upload interval does not start. Whether it was waiting. */
    fun acknowledgeDap(id: Long): Boolean = store.transact { tx ->
        val state = stateOf(tx)
        val records = OutboxLanes.through(tx, state, id) { it.id == id && DapLine.isDap(it.line) }
        if (records.isEmpty()) return@transact false
        uploaded(state, records)
        OutboxLanes.remove(tx, state, records)
        tx.state = state
        true
    }

    private fun uploaded(state: DeviceState, records: List<OutboxRecord>) {
        for (r in records) state.uploaded[r.metric] = (state.uploaded[r.metric] ?: 0L) + 1
    }

    private companion object {
        /** [nextBatch]'s "a new batch must be pinned" (never returned). */
        val PIN = Batch("", emptyList())
    }
}
