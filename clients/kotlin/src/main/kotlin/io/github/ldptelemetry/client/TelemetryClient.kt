package io.github.ldptelemetry.client

import io.github.ldptelemetry.client.internal.Bytes
import io.github.ldptelemetry.client.internal.PyText
import io.github.ldptelemetry.client.ledger.BudgetLedger
import io.github.ldptelemetry.client.ledger.DeviceState
import io.github.ldptelemetry.client.ledger.OutboxRecord
import io.github.ldptelemetry.client.ledger.PinnedPart
import io.github.ldptelemetry.client.ledger.StateStore
import io.github.ldptelemetry.client.ledger.StoreTransaction
import io.github.ldptelemetry.client.protocols.Encoder
import io.github.ldptelemetry.client.protocols.EncoderOptions
import io.github.ldptelemetry.client.protocols.envelopeJson
import io.github.ldptelemetry.client.random.RandomSource
import io.github.ldptelemetry.client.random.SecureRandomSource
import io.github.ldptelemetry.client.spec.CollectionSpec
import io.github.ldptelemetry.client.upload.Batch
import io.github.ldptelemetry.client.upload.Outbox
import io.github.ldptelemetry.client.upload.PendingReport

/**
 * One device's client of one collection (Python's `ldp.client.TelemetryClient`): [record] privatizes a value and
 * puts its envelope in the outbox; an [io.github.ldptelemetry.client.upload.Uploader] sends the outbox to
 * `ldp serve` (this client is its [Outbox]).
 *
 * [record] checks the value (Python's error type and text, nothing written), then in ONE store transaction checks
 * every cap, charges, randomizes and stores the envelope: the charge and the report are kept together or not at
 * all, so a crash never leaves a report without its charge. Budgets are the spec's, per window and over the
 * lifetime, for each metric and for the collection; a spent budget throws [BudgetExceededException].
 *
 * The device secret (32 bytes of the OS CSPRNG, made on first use, never sent) and the state live in [store] (a
 * [io.github.ldptelemetry.client.ledger.FileStore] in an app). Thread-safe: every call runs under the store's lock,
 * and any number of clients, in threads or processes, may share one store folder.
 *
 * [clock] gives Unix seconds (the ledger never lets it go back); [rng] the randomness of the reports (default: a
 * [SecureRandomSource]; another source is for tests and simulations only).
 */
public class TelemetryClient @JvmOverloads constructor(
    public val spec: CollectionSpec,
    private val store: StateStore,
    private val clock: () -> Double = { System.currentTimeMillis() / 1000.0 },
    private val rng: RandomSource = SecureRandomSource(),
) : Outbox {
    private val encoders = HashMap<String, Encoder<*, *>>()
    private val deviceSecret: ByteArray

    init {
        deviceSecret = store.transact { tx ->
            val s = tx.state
            if (s == null) {
                tx.state = DeviceState(spec.name, Bytes.hex(rng.tokenBytes(32)), Bytes.hex(rng.tokenBytes(32)))
            } else if (s.collection != spec.name) {
                throw LedgerException(
                    "this state belongs to collection ${PyText.repr(s.collection)}, not ${PyText.repr(spec.name)}: " +
                        "use another store (a budget is never reset)",
                )
            }
            Bytes.fromHex(tx.state!!.secretHex)
        }
    }

    private fun state(tx: StoreTransaction): DeviceState = tx.state ?: throw LedgerException("the client's state is gone")

    private fun encoder(metric: String, state: DeviceState): Encoder<*, *> {
        encoders[metric]?.let { return it }
        val m = spec.metric(metric)
        val protocol = m.protocol
        val cohorts = protocol.assignedCohorts(m.params)
        var cohort: Int? = null
        var committed = true // a cohort drawn now is committed with this transaction, or not at all
        if (cohorts > 0) {
            val key = "$metric\u0000${m.params.fingerprint}"
            committed = key in state.cohorts
            cohort = state.cohorts.getOrPut(key) { rng.randbelow(cohorts) }
        }
        val secret = if (protocol.needsSecret) Bytes.metricSecret(deviceSecret, metric) else null
        val encoder = protocol.encoder(m.params, EncoderOptions(rng = rng, secret = secret, cohort = cohort))
        if (committed) encoders[metric] = encoder
        return encoder
    }

    /**
     * Privatizes [value] for [metric] and stores its envelope in the outbox; returns its outbox id. A bad value
     * throws [LdpValueException]/[LdpTypeException], a spent budget [BudgetExceededException]: both with nothing
     * written.
     */
    public fun record(metric: String, value: Any?): Long {
        spec.metric(metric)
        val reading = clock()
        return store.transact { tx ->
            val state = state(tx)
            val window = BudgetLedger.advance(state, reading, spec.windowSeconds)
            val encoder = encoder(metric, state)
            val prepared = encoder.prepare(value)
            val reservation = BudgetLedger.charge(state, spec, metric, prepared.charge, window)
            val line = envelopeJson(spec.fingerprint, metric, window, prepared.randomize(reservation.epoch))
            val id = state.nextId
            state.nextId = id + 1
            tx.append(OutboxRecord(id, metric, line))
            tx.state = state
            id
        }
    }

    /** The (ε, δ) spent on [metric] (null: the whole collection) in the current window, or over the lifetime. */
    @JvmOverloads
    public fun spent(metric: String? = null, lifetime: Boolean = false): PrivacyCost {
        metric?.let { spec.metric(it) }
        val reading = clock()
        return store.transact { tx ->
            val state = state(tx)
            val window = Math.floor(maxOf(state.clock, BudgetLedger.checkClock(reading)) / spec.windowSeconds).toLong()
            BudgetLedger.spent(state, metric ?: BudgetExceededException.ALL_METRICS, if (lifetime) null else window)
        }
    }

    /** The index of the current window (`floor(clock / window_seconds)`, never going back). */
    public fun currentWindow(): Long {
        val reading = clock()
        return store.transact { tx -> Math.floor(maxOf(state(tx).clock, BudgetLedger.checkClock(reading)) / spec.windowSeconds).toLong() }
    }

    /** Reports waiting for upload. */
    public fun pending(): Long = store.transact { it.pendingCount }

    /** Reports acknowledged by the collector so far, per metric. */
    public fun uploaded(): Map<String, Long> = store.transact { HashMap(state(it).uploaded) }

    // -- the Outbox the uploader works against -------------------------------------------------------------------

    override fun hasPending(): Boolean = pending() > 0

    override fun nextUploadAt(): Double = store.transact { tx ->
        val last = state(tx).lastUpload ?: return@transact Double.NEGATIVE_INFINITY
        last + spec.minIntervalSeconds
    }

    private fun part(tx: StoreTransaction, state: DeviceState, p: PinnedPart): Batch {
        val records = tx.head((p.last - p.first + 1).toInt())
        if (records.isEmpty() || records.first().id != p.first || records.last().id != p.last) {
            throw LedgerException("the client's state is damaged: pinned batch ${p.id} is not at the head of the outbox")
        }
        return Batch(p.id, records.map { PendingReport(it.id, it.line) })
    }

    private fun pin(state: DeviceState, records: List<OutboxRecord>): PinnedPart =
        PinnedPart(batchId(Bytes.fromHex(state.saltHex), records.map { it.id }, records.map { it.line }), records.first().id, records.last().id)

    override fun nextBatch(limit: Int?): Batch? {
        require(limit == null || limit >= 1) { "limit must be null or >= 1, got $limit" }
        val reading = clock()
        return store.transact { tx ->
            val state = state(tx)
            state.parts.firstOrNull()?.let { return@transact part(tx, state, it) }
            val now = maxOf(state.clock, BudgetLedger.checkClock(reading))
            val last = state.lastUpload
            if (last != null && now < last + spec.minIntervalSeconds) return@transact null
            val records = tx.head(minOf(limit ?: spec.maxBatch, spec.maxBatch))
            if (records.isEmpty()) return@transact null
            val p = pin(state, records)
            state.parts.add(p)
            tx.state = state
            Batch(p.id, records.map { PendingReport(it.id, it.line) })
        }
    }

    override fun splitBatch(batch: String): Int = store.transact { tx ->
        val state = state(tx)
        val i = state.parts.indexOfFirst { it.id == batch }
        if (i < 0) return@transact 0
        // parts are contiguous from the head: read through this one
        val through = tx.head((state.parts[i].last - state.parts[0].first + 1).toInt())
        val records = through.filter { it.id >= state.parts[i].first }
        val half = (records.size + 1) / 2
        if (records.size >= 2) {
            state.parts.removeAt(i)
            state.parts.add(i, pin(state, records.subList(half, records.size)))
            state.parts.add(i, pin(state, records.subList(0, half)))
            tx.state = state
        }
        half
    }

    override fun acknowledgeBatch(batch: String, ids: List<Long>): Int {
        val reading = clock()
        return store.transact { tx ->
            val state = state(tx)
            val p = state.parts.firstOrNull() ?: return@transact 0
            if (p.id != batch) {
                if (state.parts.none { it.id == batch }) return@transact 0 // acknowledged already (another process)
                throw LedgerException("batch $batch acknowledged before the part pinned ahead of it (${p.id})")
            }
            val records = tx.head((p.last - p.first + 1).toInt())
            val wanted = ids.toHashSet()
            if (records.any { it.id !in wanted }) throw LedgerException("acknowledgement of batch $batch does not cover its reports")
            tx.dropHead(records.size)
            for (r in records) state.uploaded[r.metric] = (state.uploaded[r.metric] ?: 0L) + 1
            state.parts.removeAt(0)
            state.lastUpload = maxOf(state.clock, BudgetLedger.checkClock(reading))
            tx.state = state
            records.size
        }
    }

    public companion object {
        private val BATCH_TAG = Bytes.ascii("ldp/client/batch-id/v1\u0000")

        /** `batch_id`: `HMAC-SHA256(salt, "ldp/client/batch-id/v1\0" ‖ ids joined by "," ‖ 0x00 ‖ lines joined by
         * "\n")`, its first 32 hex digits (Python's `ldp.client.uploader.batch_id`). */
        @JvmStatic
        public fun batchId(salt: ByteArray, ids: List<Long>, lines: List<String>): String = Bytes.hex(
            Bytes.hmacSha256(salt, BATCH_TAG, Bytes.ascii(ids.joinToString(",")), byteArrayOf(0), lines.joinToString("\n").toByteArray(Charsets.UTF_8)),
        ).substring(0, 32)
    }
}
