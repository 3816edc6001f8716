package io.github.ldptelemetry.client.ledger

import io.github.ldptelemetry.client.LedgerException
import io.github.ldptelemetry.client.internal.Json
import java.util.concurrent.locks.ReentrantLock
import kotlin.concurrent.withLock

/** The state in memory (simulations, tests, an app that keeps nothing across restarts). */
public class MemoryStore : StateStore {
    private val lock = ReentrantLock()
    private var stateText: String? = null
    private val outbox = ArrayDeque<OutboxRecord>()
    private var outboxBytes = 0L

    /** A transaction on the committed state (a copy: nothing changes until [commit]). */
    private inner class Tx : StoreTransaction {
        override var state: DeviceState? = stateText?.let { DeviceState.parse(it) }
        val appended = ArrayList<OutboxRecord>()
        var dropped = 0
        var droppedBytes = 0L
        override val pendingCount: Long get() = (outbox.size - dropped + appended.size).toLong()
        override val pendingBytes: Long get() = outboxBytes - droppedBytes + appended.sumOf { it.size }
        override fun append(record: OutboxRecord) {
            appended.add(record)
        }
        override fun head(count: Int): List<OutboxRecord> = outbox.drop(dropped).take(count)
        override fun dropHead(count: Int) {
            val n = minOf(count, outbox.size - dropped)
            for (i in dropped until dropped + n) droppedBytes += outbox[i].size
            dropped += n
        }

        fun commit() {
            stateText = state?.let { Json.write(it.toJson()) }
            repeat(dropped) { outbox.removeFirst() }
            outbox.addAll(appended)
            outboxBytes += appended.sumOf { it.size } - droppedBytes
        }
    }

    @Throws(LedgerException::class)
    override fun <T> read(block: (StoreView) -> T): T = lock.withLock { block(Tx()) }

    @Throws(LedgerException::class)
    override fun <T> transact(block: (StoreTransaction) -> T): T = lock.withLock {
        val tx = Tx()
        block(tx).also { tx.commit() }
    }
}
