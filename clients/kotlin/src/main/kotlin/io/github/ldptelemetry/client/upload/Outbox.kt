package io.github.ldptelemetry.client.upload

import java.io.IOException

/** A report waiting in the outbox: its local [id] (never reused, never sent) and its upload [line] (an envelope). */
public class PendingReport(public val id: Long, public val line: String) {
    override fun toString(): String = "PendingReport(id=$id)"
}

/** A batch part pinned for upload: its [id] (the `Ldp-Batch-Id` header) and its reports, oldest first. */
public class Batch(public val id: String, public val reports: List<PendingReport>)

/**
 * What the [Uploader] needs of a device's state (Python's `ldp.client.uploader.Outbox`): batches pinned in the
 * state until the collector acknowledged them, so that a retry, a crash or a lost reply resends the same lines under
 * the same batch id and the collector stores them once. Every call may throw the state's [IOException] (a
 * [io.github.ldptelemetry.client.LedgerException] for a [io.github.ldptelemetry.client.TelemetryClient]).
 */
public interface Outbox {
    /** The first pinned part, else a new batch of at most [limit] (and the spec's `max_batch`) of the oldest reports,
     * pinned now; `null` when nothing is to be sent now (empty, or the upload interval has not passed). */
    @Throws(IOException::class)
    public fun nextBatch(limit: Int? = null): Batch?

    /** Pins the reports of part [batch] as two new parts; returns the size of the first. */
    @Throws(IOException::class)
    public fun splitBatch(batch: String): Int

    /** Deletes the reports [ids] of part [batch] and unpins it, in one transaction; returns how many were there. */
    @Throws(IOException::class)
    public fun acknowledgeBatch(batch: String, ids: List<Long>): Int

    /** Whether a report is waiting (for a [io.github.ldptelemetry.client.TelemetryClient]: in either lane). */
    @Throws(IOException::class)
    public fun hasPending(): Boolean

    /** Unix seconds from which [nextBatch] pins a new batch (negative infinity: at once; positive infinity: never,
     * e.g. after an opt-out). */
    @Throws(IOException::class)
    public fun nextUploadAt(): Double
}
