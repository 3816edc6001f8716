package io.github.ldptelemetry.client

import io.github.ldptelemetry.client.dap.DapMetric
import io.github.ldptelemetry.client.dap.TwoAggregatorTask
import io.github.ldptelemetry.client.internal.Bytes
import io.github.ldptelemetry.client.internal.Refuse
import io.github.ldptelemetry.client.ledger.BudgetLedger
import io.github.ldptelemetry.client.ledger.DeviceState
import io.github.ldptelemetry.client.ledger.OutboxLanes
import io.github.ldptelemetry.client.ledger.OutboxRecord
import io.github.ldptelemetry.client.ledger.StateStore
import io.github.ldptelemetry.client.protocols.Charge
import io.github.ldptelemetry.client.protocols.Encoder
import io.github.ldptelemetry.client.protocols.EncoderOptions
import io.github.ldptelemetry.client.protocols.envelopeJson
import io.github.ldptelemetry.client.random.RandomSource
import io.github.ldptelemetry.client.random.SecureRandomSource
import io.github.ldptelemetry.client.spec.CollectionSpec
import io.github.ldptelemetry.client.upload.Batch
import io.github.ldptelemetry.client.upload.DapLane
import io.github.ldptelemetry.client.upload.Outbox
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
 *
 * A two-aggregator metric (the spec's `trust` `two-aggregator` or `two-aggregator+local`) is recorded with its task
 * ([tasks], metric name to a [io.github.ldptelemetry.client.dap.DapTask] of the task file `ldp collect task` wrote,
 * or a [io.github.ldptelemetry.client.dap.Poplar1Task] for a `poplar1` metric, whose strings are shared exactly; each
 * checked against the spec here: an [IllegalArgumentException] naming the first difference): each report a
 * DAP-09 report sealed to the task's two aggregators, charged [CollectionSpec.reportCharge] and held to the task's k
 * reports a window ([CollectionSpec.deviceWindowCap]), kept in the same outbox, and sent to the task's leader by the
 * [io.github.ldptelemetry.client.upload.Uploader] (docs/kotlin-client.md, "Two-aggregator reports"). Without its
 * task, [record] refuses such a metric ([RefusalCode.TRUST_MODEL]), nothing charged.
 */
public class TelemetryClient @JvmOverloads @Throws(LedgerException::class) constructor(
    public val spec: CollectionSpec,
    private val store: StateStore,
    private val clock: () -> Double = { System.currentTimeMillis() / 1000.0 },
    private val rng: RandomSource = SecureRandomSource(),
    /** The most bytes of reports the outbox keeps waiting for upload (a positive number). */
    public val maxOutboxBytes: Long = DEFAULT_MAX_OUTBOX_BYTES,
    /** Per two-aggregator metric, its task (the map is copied; the tasks stay the app's, to close). */
    tasks: Map<String, TwoAggregatorTask> = emptyMap(),
) : Outbox {
    private val encoders = HashMap<String, Encoder<*, *>>()
    private val outbox = ClientOutbox(spec, store, clock)
    private val dap: Map<String, DapMetric>

    /** The device secret the cached [encoders] were made with (another client of the store may opt out or in). */
    private var encodersSecret: String? = null

    init {
        require(maxOutboxBytes > 0) { "maxOutboxBytes must be a positive number of bytes, got $maxOutboxBytes" }
        val dapMetrics = spec.metrics.filterValues { it.trust.twoAggregator }.keys
        val unknown = tasks.keys.filter { it !in dapMetrics }.sorted()
        require(unknown.isEmpty()) {
            "tasks: ${unknown.joinToString(", ") { Refuse.quote(it) }} is no two-aggregator metric of collection " +
                "${Refuse.quote(spec.name)} (its two-aggregator metrics: ${dapMetrics.sorted().joinToString(", ").ifEmpty { "none" }})"
        }
        dap = tasks.mapValues { (metric, task) -> DapMetric(spec, metric, task) }
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
                // A value the spec sends to two aggregators, secret-shared, is never randomized to one collector: without
                // its task, refused before the value is looked at (Python's client does the same).
                if (m.trust.twoAggregator && m.name !in dap) throw Refuse.trustModel(m.name, m.trust.value)
            }
        }
        if (items.isEmpty()) return emptyList()
        val reading = clock()
        return store.transact { tx ->
            val state = stateOf(tx)
            if (state.optedOut) throw optedOutError()
            val window = BudgetLedger.advance(state, reading, spec.windowSeconds)
            val prepared = items.mapIndexed { i, (metric, value) -> itemError(batch, i, metric) { encoder(metric, state).prepare(value) } }
            var room = OutboxLanes.pendingBytes(tx, state)
            val ids = items.indices.map { i ->
                val metric = items[i].first
                val task = dap[metric]
                val reservation = try {
                    BudgetLedger.charge(state, spec, metric, task?.let { Charge.Plain(it.charge) } ?: prepared[i].charge, window)
                } catch (e: BudgetExceededException) {
                    if (!batch) throw e
                    throw BudgetExceededException(e.scope, e.period, e.requested, e.spent, e.cap, i)
                }
                val line = task?.line(prepared[i], state.clock, window)
                    ?: envelopeJson(spec.fingerprint, metric, window, prepared[i].randomize(reservation.epoch))
                val record = OutboxRecord(state.nextId, metric, line)
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
            val state = stateOf(view)
            val window = Math.floor(maxOf(state.clock, BudgetLedger.checkClock(reading)) / spec.windowSeconds).toLong()
            BudgetLedger.spent(state, metric ?: BudgetExceededException.ALL_METRICS, if (lifetime) null else window)
        }
    }

    /** The index of the current window (`floor(clock / window_seconds)`, never going back). */
    @Throws(LedgerException::class)
    public fun currentWindow(): Long {
        val reading = clock()
        return store.read { view -> Math.floor(maxOf(stateOf(view).clock, BudgetLedger.checkClock(reading)) / spec.windowSeconds).toLong() }
    }

    /** Reports waiting for upload, in either lane (none once opted out). */
    @Throws(LedgerException::class)
    public fun pending(): Long = outbox.pending()

    /** Bytes of reports waiting for upload, as [maxOutboxBytes] counts them. */
    @Throws(LedgerException::class)
    public fun pendingBytes(): Long = outbox.pendingBytes()

    /** Reports acknowledged so far, per metric: by the ingest service, or by a two-aggregator metric's leader (which
     * has it, or refused it for good). */
    @Throws(LedgerException::class)
    public fun uploaded(): Map<String, Long> = store.read { HashMap(stateOf(it).uploaded) }

    /**
     * What may still be spent on [metric] (null: the whole collection) in the current window and over the lifetime:
     * the least that its own caps and the collection's leave; a period without a cap is null.
     */
    @JvmOverloads
    @Throws(LedgerException::class)
    public fun remaining(metric: String? = null): Remaining {
        // (scope, its window cap, its lifetime cap): a metric's window cap is its cap on the device
        val scopes = listOfNotNull(
            metric?.let { Triple(it, spec.deviceWindowCap(it), spec.metric(it).budget.lifetime) },
            Triple(BudgetExceededException.ALL_METRICS, spec.budget.perWindow, spec.budget.lifetime),
        )
        val reading = clock()
        return store.read { view ->
            val state = stateOf(view)
            val window = Math.floor(maxOf(state.clock, BudgetLedger.checkClock(reading)) / spec.windowSeconds).toLong()
            fun left(window: Long?, cap: (Triple<String, PrivacyCost?, PrivacyCost?>) -> PrivacyCost?): PrivacyCost? =
                scopes.mapNotNull { caps ->
                    val scope = caps.first
                    val c = cap(caps) ?: return@mapNotNull null
                    val s = BudgetLedger.spent(state, scope, window)
                    PrivacyCost(maxOf(0.0, c.epsilon - s.epsilon), maxOf(0.0, c.delta - s.delta))
                }.reduceOrNull { a, b -> PrivacyCost(minOf(a.epsilon, b.epsilon), minOf(a.delta, b.delta)) }
            Remaining(left(window) { it.second }, left(null) { it.third })
        }
    }

    /**
     * Per metric: reports recorded, pending in the outbox, uploaded (acknowledged) and discarded (deleted unsent by
     * [optOut]); `reports == pending + uploaded + discarded`. Reads the outbox.
     */
    @Throws(LedgerException::class)
    public fun counts(): Map<String, Counts> = store.read { view ->
        val state = stateOf(view)
        val pending = outbox.waiting(view).groupingBy { it.metric }.eachCount()
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
    public val optedOut: Boolean get() = store.read { stateOf(it).optedOut }

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
            val state = stateOf(tx)
            if (state.optedOut) return@transact 0L
            val waiting = OutboxLanes.removeAll(tx, state)
            for (r in waiting) state.discarded[r.metric] = (state.discarded[r.metric] ?: 0L) + 1
            state.forget()
            tx.state = state
            waiting.size.toLong()
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
            val state = stateOf(tx)
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

    // -- the Outbox the uploader works against: the ingest lane's batches (ClientOutbox) ---------------------------

    /** Whether a report waits, in either lane. */
    @Throws(LedgerException::class)
    override fun hasPending(): Boolean = outbox.hasPending()

    @Throws(LedgerException::class)
    override fun nextUploadAt(): Double = outbox.nextUploadAt()

    @Throws(LedgerException::class)
    override fun nextBatch(limit: Int?): Batch? = outbox.nextBatch(limit)

    @Throws(LedgerException::class)
    override fun splitBatch(batch: String): Int = outbox.splitBatch(batch)

    @Throws(LedgerException::class)
    override fun acknowledgeBatch(batch: String, ids: List<Long>): Int = outbox.acknowledgeBatch(batch, ids)

    /** The two-aggregator lane the [io.github.ldptelemetry.client.upload.Uploader] sends first: each waiting DAP report
     * to its metric's leader (the tasks given to this client). */
    internal fun dapLane(): DapLane = DapLane(
        outbox::dapPending, outbox::acknowledgeDap, dap.mapValues { it.value.task.leaderUrl }, { outbox.hasPending(dap = false) },
    )

    public companion object {
        /** The default cap of the outbox: 1 MiB of reports waiting for upload (about 7,000 GRR reports). */
        public const val DEFAULT_MAX_OUTBOX_BYTES: Long = 1L shl 20

        private val BATCH_TAG = Bytes.ascii("ldp/client/batch-id/v1\u0000")

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
