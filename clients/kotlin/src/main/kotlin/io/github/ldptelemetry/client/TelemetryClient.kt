package io.github.ldptelemetry.client

import io.github.ldptelemetry.client.internal.Bytes
import io.github.ldptelemetry.client.internal.Refuse
import io.github.ldptelemetry.client.ledger.BudgetLedger
import io.github.ldptelemetry.client.ledger.DeviceState
import io.github.ldptelemetry.client.ledger.OutboxRecord
import io.github.ldptelemetry.client.ledger.PinnedPart
import io.github.ldptelemetry.client.ledger.StateStore
import io.github.ldptelemetry.client.ledger.StoreTransaction
import io.github.ldptelemetry.client.ledger.StoreView
import io.github.ldptelemetry.client.protocols.Encoder
import io.github.ldptelemetry.client.protocols.EncoderOptions
import io.github.ldptelemetry.client.protocols.envelopeJson
import io.github.ldptelemetry.client.random.RandomSource
import io.github.ldptelemetry.client.random.SecureRandomSource
import io.github.ldptelemetry.client.spec.Budget
import io.github.ldptelemetry.client.spec.CollectionSpec
import io.github.ldptelemetry.client.upload.Batch
import io.github.ldptelemetry.client.upload.Outbox
import io.github.ldptelemetry.client.upload.PendingReport
import java.util.logging.Level
import java.util.logging.Logger

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
 * The outbox holds at most [maxOutboxBytes] of reports waiting for upload (each counts its envelope line's UTF-8
 * bytes plus one, pinned batches included; default [DEFAULT_MAX_OUTBOX_BYTES], 1 MiB): a report that would go past
 * it is refused with [OutboxFullException], nothing charged. [optOut] stops collection on the device.
 *
 * Queries ([pending], [spent], [hasPending], [nextUploadAt], [optedOut], ...) and opening an existing store write
 * nothing. The device secret (32 bytes of the OS CSPRNG, made on first use, never sent) and the state live in
 * [store] (a [io.github.ldptelemetry.client.ledger.FileStore] in an app). Thread-safe: every call runs under the
 * store's lock, and any number of clients, in threads or processes, may share one store folder.
 *
 * [clock] gives Unix seconds (the ledger never lets it go back); [rng] the randomness of the reports (default: a
 * [SecureRandomSource]; another source is for tests and simulations only, and the device secret comes from it too).
 */
public class TelemetryClient @JvmOverloads @Throws(LedgerException::class) constructor(
    public val spec: CollectionSpec,
    private val store: StateStore,
    private val clock: () -> Double = { System.currentTimeMillis() / 1000.0 },
    private val rng: RandomSource = SecureRandomSource(),
    /** The most bytes of reports the outbox keeps waiting for upload (a positive number). */
    public val maxOutboxBytes: Long = DEFAULT_MAX_OUTBOX_BYTES,
) : Outbox {
    private val encoders = HashMap<String, Encoder<*, *>>()

    /** The device secret the cached [encoders] were made with (another client of the store may opt out or in). */
    private var encodersSecret: String? = null

    init {
        require(maxOutboxBytes > 0) { "maxOutboxBytes must be a positive number of bytes, got $maxOutboxBytes" }
        val existing = store.read { it.state } // opening an existing store writes nothing
        if (existing == null) {
            store.transact { tx ->
                if (tx.state == null) tx.state = DeviceState(spec.name, newSecret(), newSecret()) else checkCollection(tx.state!!)
            }
        } else {
            checkCollection(existing)
        }
    }

    /** 32 bytes from [rng], hex: a device secret or salt (the OS CSPRNG unless a simulation gave its own source). */
    private fun newSecret(): String = Bytes.hex(rng.tokenBytes(32))

    private fun checkCollection(s: DeviceState) {
        if (s.collection != spec.name) {
            throw LedgerException(
                "this state belongs to collection ${Refuse.quote(s.collection)}, not ${Refuse.quote(spec.name)}: " +
                    "use another store (a budget is never reset)",
            )
        }
    }

    private fun state(view: StoreView): DeviceState = view.state ?: throw LedgerException("the client's state is gone")

    private fun encoder(metric: String, state: DeviceState): Encoder<*, *> {
        val deviceSecret = state.secretHex ?: throw optedOutError()
        if (deviceSecret != encodersSecret) { // opted out and in since: new secret, new cohorts
            encoders.clear()
            encodersSecret = deviceSecret
        }
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
        val secret = if (protocol.needsSecret) Bytes.metricSecret(Bytes.fromHex(deviceSecret), metric) else null
        val encoder = protocol.encoder(m.params, EncoderOptions(rng = rng, secret = secret, cohort = cohort))
        if (committed) encoders[metric] = encoder
        return encoder
    }

    /**
     * Privatizes [value] for [metric] and stores its envelope in the outbox; returns its outbox id. Nothing is
     * written when it throws: [LdpValueException]/[LdpTypeException] for a bad value, [BudgetExceededException] for
     * a spent budget, [OutboxFullException] when the outbox has no room, [OptedOutException] after [optOut].
     */
    @Throws(LedgerException::class)
    public fun record(metric: String, value: Any?): Long = store(listOf(metric to value), batch = false)[0]

    /**
     * Records several `(metric, value)` pairs in ONE transaction (one flush for all); returns their outbox ids, in
     * order. All or nothing: every value is checked first (a bad one throws naming its item); then the items are
     * charged and stored in order, each seeing the ones before it, and if one would break a cap
     * ([BudgetExceededException]) or not fit in the outbox ([OutboxFullException]), the exception's `index` names
     * it and none of the batch is charged or stored.
     */
    @Throws(LedgerException::class)
    public fun recordMany(items: List<Pair<String, Any?>>): List<Long> = store(items, batch = true)

    private fun store(items: List<Pair<String, Any?>>, batch: Boolean): List<Long> {
        for ((i, item) in items.withIndex()) {
            itemError(batch, i, item.first) {
                val m = spec.metric(item.first)
                // A value the spec sends to two aggregators, secret-shared, is never randomized to one collector:
                // refused before the value is looked at (Python's client does the same).
                if (m.trust.twoAggregator) throw Refuse.trustModel(m.name, m.trust.value)
            }
        }
        if (items.isEmpty()) return emptyList()
        val reading = clock()
        return store.transact { tx ->
            val state = state(tx)
            if (state.optedOut) throw optedOutError()
            val window = BudgetLedger.advance(state, reading, spec.windowSeconds)
            val prepared = items.mapIndexed { i, (metric, value) -> itemError(batch, i, metric) { encoder(metric, state).prepare(value) } }
            var room = tx.pendingBytes
            val ids = items.indices.map { i ->
                val metric = items[i].first
                val reservation = try {
                    BudgetLedger.charge(state, spec, metric, prepared[i].charge, window)
                } catch (e: BudgetExceededException) {
                    if (!batch) throw e
                    throw BudgetExceededException(e.scope, e.period, e.requested, e.spent, e.cap, i)
                }
                val record = OutboxRecord(state.nextId, metric, envelopeJson(spec.fingerprint, metric, window, prepared[i].randomize(reservation.epoch)))
                if (room + record.size > maxOutboxBytes) throw OutboxFullException(room, record.size, maxOutboxBytes, if (batch) i else null)
                room += record.size
                state.nextId = record.id + 1
                tx.append(record)
                record.id
            }
            tx.state = state
            ids
        }
    }

    /** [block], its bad value or metric named as item [i] of a batch ([batch]) in the exception it throws. */
    private inline fun <T> itemError(batch: Boolean, i: Int, metric: String, block: () -> T): T = try {
        block()
    } catch (e: IllegalArgumentException) {
        if (!batch) throw e
        val prefix = "recordMany item $i (${Refuse.quote(metric)}): "
        throw if (e is Refusal) Refuse.restated(e, prefix) else IllegalArgumentException(prefix + e.message, e)
    }

    /** The (ε, δ) spent on [metric] (null: the whole collection) in the current window, or over the lifetime. */
    @JvmOverloads
    @Throws(LedgerException::class)
    public fun spent(metric: String? = null, lifetime: Boolean = false): PrivacyCost {
        metric?.let { spec.metric(it) }
        val reading = clock()
        return store.read { view ->
            val state = state(view)
            val window = Math.floor(maxOf(state.clock, BudgetLedger.checkClock(reading)) / spec.windowSeconds).toLong()
            BudgetLedger.spent(state, metric ?: BudgetExceededException.ALL_METRICS, if (lifetime) null else window)
        }
    }

    /** The index of the current window (`floor(clock / window_seconds)`, never going back). */
    @Throws(LedgerException::class)
    public fun currentWindow(): Long {
        val reading = clock()
        return store.read { view -> Math.floor(maxOf(state(view).clock, BudgetLedger.checkClock(reading)) / spec.windowSeconds).toLong() }
    }

    /** Reports waiting for upload (none once opted out). */
    @Throws(LedgerException::class)
    public fun pending(): Long = store.read { it.pendingCount }

    /** Bytes of reports waiting for upload, as [maxOutboxBytes] counts them. */
    @Throws(LedgerException::class)
    public fun pendingBytes(): Long = store.read { it.pendingBytes }

    /** Reports acknowledged by the collector so far, per metric. */
    @Throws(LedgerException::class)
    public fun uploaded(): Map<String, Long> = store.read { HashMap(state(it).uploaded) }

    /**
     * What may still be spent on [metric] (null: the whole collection) in the current window and over the lifetime:
     * the least that its own caps and the collection's leave; a period without a cap is null.
     */
    @JvmOverloads
    @Throws(LedgerException::class)
    public fun remaining(metric: String? = null): Remaining {
        val scopes = listOfNotNull(metric?.let { it to spec.metric(it).budget }, BudgetExceededException.ALL_METRICS to spec.budget)
        val reading = clock()
        return store.read { view ->
            val state = state(view)
            val window = Math.floor(maxOf(state.clock, BudgetLedger.checkClock(reading)) / spec.windowSeconds).toLong()
            fun left(window: Long?, cap: (Budget) -> PrivacyCost?): PrivacyCost? =
                scopes.mapNotNull { (scope, budget) ->
                    val c = cap(budget) ?: return@mapNotNull null
                    val s = BudgetLedger.spent(state, scope, window)
                    PrivacyCost(maxOf(0.0, c.epsilon - s.epsilon), maxOf(0.0, c.delta - s.delta))
                }.reduceOrNull { a, b -> PrivacyCost(minOf(a.epsilon, b.epsilon), minOf(a.delta, b.delta)) }
            Remaining(left(window) { it.perWindow }, left(null) { it.lifetime })
        }
    }

    /**
     * Per metric: reports recorded, pending in the outbox, uploaded (acknowledged) and discarded (deleted unsent by
     * [optOut]); `reports == pending + uploaded + discarded`. Reads the outbox.
     */
    @Throws(LedgerException::class)
    public fun counts(): Map<String, Counts> = store.read { view ->
        val state = state(view)
        val pending = view.head(minOf(view.pendingCount, Int.MAX_VALUE.toLong()).toInt()).groupingBy { it.metric }.eachCount()
        (pending.keys + state.uploaded.keys + state.discarded.keys).sorted().associateWith { metric ->
            val p = (pending[metric] ?: 0).toLong()
            val u = state.uploaded[metric] ?: 0L
            val d = state.discarded[metric] ?: 0L
            Counts(p + u + d, p, u, d)
        }
    }

    // -- opting out ------------------------------------------------------------------------------------------------

    /** Whether the device opted out of collection ([optOut]), as the store says now. */
    @get:Throws(LedgerException::class)
    public val optedOut: Boolean get() = store.read { state(it).optedOut }

    /**
     * Stops collection on this device (what an app's privacy setting calls), in one crash-safe transaction: deletes
     * every pending report and pinned batch, the device secret, the cohorts, and the memoized and charge-on-change
     * records, and marks the state opted out. The budget already spent stays spent. Until [optIn], [record] throws
     * [OptedOutException] before charging anything, nothing is pending, an upload sends nothing and [nextUploadAt]
     * is +∞. Idempotent; returns how many pending reports it deleted.
     */
    @Throws(LedgerException::class)
    public fun optOut(): Long {
        val deleted = store.transact { tx ->
            val state = state(tx)
            if (state.optedOut) return@transact 0L
            val n = tx.pendingCount
            for (r in tx.head(n.toInt())) state.discarded[r.metric] = (state.discarded[r.metric] ?: 0L) + 1
            tx.dropHead(n.toInt())
            state.forget()
            tx.state = state
            n
        }
        if (log.isLoggable(Level.INFO)) log.info("opted out of collection: $deleted pending report(s) deleted")
        return deleted
    }

    /**
     * Resumes collection after [optOut] with a fresh device secret from the OS CSPRNG: new cohorts, and new memoized
     * responses, each charged afresh when first used. Idempotent: a device that did not opt out keeps its secret.
     * Returns whether the device had opted out.
     */
    @Throws(LedgerException::class)
    public fun optIn(): Boolean {
        if (!optedOut) return false // nothing to write
        val done = store.transact { tx ->
            val state = state(tx)
            if (!state.optedOut) return@transact false
            state.renew(newSecret())
            tx.state = state
            true
        }
        if (done && log.isLoggable(Level.INFO)) log.info("opted in to collection with a fresh device secret")
        return done
    }

    private fun optedOutError() = OptedOutException(
        "this device opted out of collection (optOut): nothing is recorded until it opts in again (optIn)",
    )

    // -- the Outbox the uploader works against -------------------------------------------------------------------

    @Throws(LedgerException::class)
    override fun hasPending(): Boolean = pending() > 0

    @Throws(LedgerException::class)
    override fun nextUploadAt(): Double = store.read { view ->
        val state = state(view)
        when {
            state.optedOut -> Double.POSITIVE_INFINITY
            else -> state.lastUpload?.let { it + spec.minIntervalSeconds } ?: Double.NEGATIVE_INFINITY
        }
    }

    private fun part(view: StoreView, p: PinnedPart): Batch {
        val records = view.head((p.last - p.first + 1).toInt())
        if (records.isEmpty() || records.first().id != p.first || records.last().id != p.last) {
            throw LedgerException("the client's state is damaged: pinned batch ${p.id} is not at the head of the outbox")
        }
        return Batch(p.id, records.map { PendingReport(it.id, it.line) })
    }

    private fun pin(state: DeviceState, records: List<OutboxRecord>): PinnedPart =
        PinnedPart(batchId(Bytes.fromHex(state.saltHex), records.map { it.id }, records.map { it.line }), records.first().id, records.last().id)

    /** What [nextBatch] returns without pinning anything: the pinned part, or null when there is nothing to send now
     * (or [PIN] when a new batch must be pinned, in a transaction). */
    private fun unpinned(view: StoreView, reading: Double): Batch? {
        val state = state(view)
        state.parts.firstOrNull()?.let { return part(view, it) }
        if (state.optedOut || view.pendingCount == 0L) return null
        val last = state.lastUpload
        if (last != null && maxOf(state.clock, BudgetLedger.checkClock(reading)) < last + spec.minIntervalSeconds) return null
        return PIN
    }

    @Throws(LedgerException::class)
    override fun nextBatch(limit: Int?): Batch? {
        require(limit == null || limit >= 1) { "limit must be null or >= 1, got $limit" }
        val reading = clock()
        val seen = store.read { unpinned(it, reading) } // nothing to pin: nothing written
        if (seen !== PIN) return seen
        return store.transact { tx ->
            val now = unpinned(tx, reading)
            if (now !== PIN) return@transact now
            val state = state(tx)
            val records = tx.head(minOf(limit ?: spec.maxBatch, spec.maxBatch))
            val p = pin(state, records)
            state.parts.add(p)
            tx.state = state
            Batch(p.id, records.map { PendingReport(it.id, it.line) })
        }
    }

    @Throws(LedgerException::class)
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

    @Throws(LedgerException::class)
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
        /** The default cap of the outbox: 1 MiB of reports waiting for upload (about 7,000 GRR reports). */
        public const val DEFAULT_MAX_OUTBOX_BYTES: Long = 1L shl 20

        private val BATCH_TAG = Bytes.ascii("ldp/client/batch-id/v1\u0000")

        /** [nextBatch]'s "a new batch must be pinned" (never returned). */
        private val PIN = Batch("", emptyList())

        private val log: Logger = Logger.getLogger(TelemetryClient::class.java.name)

        /** `batch_id`: `HMAC-SHA256(salt, "ldp/client/batch-id/v1\0" ‖ ids joined by "," ‖ 0x00 ‖ lines joined by
         * "\n")`, its first 32 hex digits (Python's `ldp.client.uploader.batch_id`). */
        @JvmStatic
        public fun batchId(salt: ByteArray, ids: List<Long>, lines: List<String>): String = Bytes.hex(
            Bytes.hmacSha256(salt, BATCH_TAG, Bytes.ascii(ids.joinToString(",")), byteArrayOf(0), lines.joinToString("\n").toByteArray(Charsets.UTF_8)),
        ).substring(0, 32)
    }
}

/** What may still be spent ([TelemetryClient.remaining]) in the current [window] and over the [lifetime] (null: no
 * cap). */
public data class Remaining(val window: PrivacyCost?, val lifetime: PrivacyCost?)

/** One metric's reports ([TelemetryClient.counts]): [reports] recorded, and of them [pending], [uploaded] and
 * [discarded] (deleted unsent by an opt-out). */
public data class Counts(val reports: Long, val pending: Long, val uploaded: Long, val discarded: Long)
