package io.github.ldptelemetry.client.ledger

/**
 * The two lanes of one outbox (Python's `ClientOutbox`, "Two lanes"): the reports of two-aggregator metrics go to
 * their task's leader one by one, the others to the ingest service in batches, each lane oldest first; so a report
 * may be acknowledged while an older one of the other lane (or one its leader refused as too early) still waits.
 *
 * A store drops reports from its head only ([StoreTransaction.dropHead]): a report acknowledged behind the head is
 * marked in the state ([DeviceState.acked], with its size in [DeviceState.ackedBytes]), in the same transaction,
 * and dropped once every report ahead of it has left. Every count of pending reports leaves the marked ones out.
 * The outbox's ids are consecutive from its head (each report gets the state's next id, and only the head is ever
 * dropped), which [through] relies on.
 */
internal object OutboxLanes {
    /** Reports waiting, the acknowledged ones left out. */
    fun pendingCount(view: StoreView, state: DeviceState): Long = view.pendingCount - state.acked.size

    /** What the waiting reports count against the outbox's cap. */
    fun pendingBytes(view: StoreView, state: DeviceState): Long = view.pendingBytes - state.ackedBytes

    /**
     * Up to [want] waiting reports that [pick] takes, oldest first, of those with an id up to [through]: read from the
     * head in growing runs (the acknowledged ones and the other lane's are passed over).
     */
    fun live(view: StoreView, state: DeviceState, want: Int, through: Long = Long.MAX_VALUE, pick: (OutboxRecord) -> Boolean): List<OutboxRecord> {
        if (want <= 0) return emptyList()
        var n = minOf(Int.MAX_VALUE.toLong(), want.toLong() + state.acked.size).toInt()
        while (true) {
            val records = view.head(n)
            val out = records.asSequence().takeWhile { it.id <= through }.filter { it.id !in state.acked && pick(it) }.take(want).toList()
            val done = records.size < n || out.size >= want || records.last().id >= through || n == Int.MAX_VALUE
            if (done) return out
            n = minOf(Int.MAX_VALUE.toLong(), 2L * n).toInt()
        }
    }

    /** Every waiting report up to id [last], oldest first (what a pinned part is taken from). */
    fun through(view: StoreView, state: DeviceState, last: Long, pick: (OutboxRecord) -> Boolean): List<OutboxRecord> {
        val first = view.head(1).firstOrNull()?.id ?: return emptyList()
        if (last < first) return emptyList()
        val n = minOf(Int.MAX_VALUE.toLong(), last - first + 1).toInt()
        return view.head(n).filter { it.id <= last && it.id !in state.acked && pick(it) }
    }

    /**
     * Removes [records] (waiting reports, just acknowledged or deleted) from the outbox in [tx]: each marked as
     * acknowledged, then the marked run at the head dropped and unmarked. Counts nothing.
     */
    fun remove(tx: StoreTransaction, state: DeviceState, records: List<OutboxRecord>) {
        for (r in records) {
            if (state.acked.add(r.id)) state.ackedBytes += r.size
        }
        val first = tx.head(1).firstOrNull() ?: return
        if (first.id !in state.acked) return // the head still waits: nothing to drop
        val head = tx.head(minOf(Int.MAX_VALUE.toLong(), state.acked.size.toLong()).toInt())
        var k = 0
        while (k < head.size && state.acked.remove(head[k].id)) {
            state.ackedBytes -= head[k].size
            k++
        }
        tx.dropHead(k)
    }

    /** Drops every report (an opt-out) in [tx]; the waiting ones, which the caller counts as discarded. */
    fun removeAll(tx: StoreTransaction, state: DeviceState): List<OutboxRecord> {
        val n = minOf(tx.pendingCount, Int.MAX_VALUE.toLong()).toInt()
        val all = tx.head(n)
        tx.dropHead(n)
        val waiting = all.filter { it.id !in state.acked }
        state.acked.clear()
        state.ackedBytes = 0
        return waiting
    }
}
