package io.github.ldptelemetry.client.ledger

import io.github.ldptelemetry.client.LedgerException
import io.github.ldptelemetry.client.internal.Json

/** A running total of one scope (a metric, or `*` for the collection): the current [window]'s (ε, δ) and the
 * lifetime's. */
public class ScopeTotal(public var window: Long, public var windowEpsilon: Double, public var windowDelta: Double,
                        public var lifetimeEpsilon: Double, public var lifetimeDelta: Double)

/** A pinned upload part: its batch [id] and the outbox ids `first..last` it holds (contiguous, oldest first). */
public class PinnedPart(public val id: String, public val first: Long, public val last: Long)

/**
 * Everything one device keeps for one collection, in one document changed only inside a store transaction
 * ([StateStore.transact]): the device secret (each memoizing metric's secret derives from it; never sent) and the
 * upload salt, the ledger's clock and totals, the memoized and charge-on-change records (keyed hashes, never the
 * values), the metrics' cohorts, the pinned upload parts, and the outbox's bookkeeping. The report lines
 * themselves are kept by the store (an append-only log in [FileStore]), so recording one costs the same however
 * many wait. The Python client keeps the same things in its SQLite state file.
 */
public class DeviceState internal constructor(
    public val collection: String,
    secretHex: String?,
    internal val saltHex: String,
) {
    /** The device secret, hex; null once the device opted out ([optedOut]) until it opts in with a fresh one. */
    internal var secretHex: String? = secretHex
        private set

    /** Whether the device opted out of collection: no secret, no cohorts, no memoized records, nothing pending. */
    public val optedOut: Boolean get() = secretHex == null

    /** The latest clock reading seen (Unix seconds): the ledger's clock never goes back. */
    public var clock: Double = Double.NEGATIVE_INFINITY
    internal val totals = LinkedHashMap<String, ScopeTotal>()
    internal val memo = LinkedHashMap<String, DoubleArray>() // keyed hash -> [reports, ε, δ]
    internal val changes = LinkedHashMap<String, Pair<String, Long>>() // keyed stream -> (keyed last value, epoch)
    internal val cohorts = LinkedHashMap<String, Int>() // "metric\u0000fingerprint" -> cohort
    internal val parts = ArrayList<PinnedPart>()
    public var nextId: Long = 1
        internal set
    public var lastUpload: Double? = null
        internal set
    internal val uploaded = LinkedHashMap<String, Long>()
    internal val discarded = LinkedHashMap<String, Long>() // metric -> reports deleted unsent by opt-outs

    /** Outbox ids acknowledged while a report ahead of them still waits (the two upload lanes leave out of order):
     * no longer pending, dropped from the store once they reach its head ([OutboxLanes]). */
    internal val acked = java.util.TreeSet<Long>()

    /** What the [acked] reports count against the outbox's cap (their [OutboxRecord.size]s). */
    internal var ackedBytes: Long = 0

    /**
     * Opts out: forgets the device secret, the cohorts, the memoized and charge-on-change records and the pinned
     * parts (the caller drops the pending reports in the same transaction). The budget totals stay: spent stays
     * spent.
     */
    internal fun forget() {
        secretHex = null
        cohorts.clear()
        memo.clear()
        changes.clear()
        parts.clear()
        acked.clear()
        ackedBytes = 0
    }

    /** Opts in with a fresh device secret [hex] (the caller draws it from the CSPRNG). */
    internal fun renew(hex: String) {
        check(secretHex == null) { "the device has a secret already" }
        secretHex = hex
    }

    /** The state's JSON document: format 1 without [acked] ids (as before them), else format 2, which a client of
     * before the two lanes refuses instead of sending those reports again. */
    internal fun toJson(): Map<String, Any?> = linkedMapOf(
        "format" to (if (acked.isEmpty()) FORMAT else FORMAT_ACKED).toLong(),
        "collection" to collection,
        "secret" to secretHex,
        "opted_out" to optedOut,
        "salt" to saltHex,
        "clock" to (if (clock.isInfinite()) null else clock),
        "totals" to totals.mapValues { (_, t) ->
            listOf(t.window, t.windowEpsilon, t.windowDelta, t.lifetimeEpsilon, t.lifetimeDelta)
        },
        "memo" to memo.mapValues { (_, v) -> listOf(v[0].toLong(), v[1], v[2]) },
        "changes" to changes.mapValues { (_, v) -> listOf(v.first, v.second) },
        "cohorts" to cohorts.mapValues { (_, v) -> v.toLong() },
        "parts" to parts.map { listOf(it.id, it.first, it.last) },
        "next_id" to nextId,
        "last_upload" to lastUpload,
        "uploaded" to uploaded,
        "discarded" to discarded,
    ).apply {
        if (acked.isNotEmpty()) {
            put("acked", acked.toList())
            put("acked_bytes", ackedBytes)
        }
    }

    internal companion object {
        const val FORMAT = 1

        /** The format of a state holding [acked] ids. */
        const val FORMAT_ACKED = 2

        private fun damaged(what: String): Nothing = throw LedgerException("the client's state is damaged: $what")

        private fun num(v: Any?, what: String): Double = (v as? Number)?.toDouble()?.takeIf { !it.isNaN() } ?: damaged("$what is not a number")

        private fun long(v: Any?, what: String): Long = when (v) {
            is Long -> v
            else -> damaged("$what is not an integer")
        }

        @Suppress("UNCHECKED_CAST")
        private fun obj(v: Any?, what: String): Map<String, Any?> = v as? Map<String, Any?> ?: damaged("$what is not an object")

        private fun list(v: Any?, what: String, size: Int): List<Any?> =
            (v as? List<Any?>)?.takeIf { it.size == size } ?: damaged("$what is not a list of $size")

        /** The state from its JSON document; [LedgerException] if anything is missing or malformed. */
        fun fromJson(doc: Any?): DeviceState {
            val d = obj(doc, "the document")
            val format = d["format"]
            if (format != FORMAT.toLong() && format != FORMAT_ACKED.toLong()) {
                damaged("format $format (this client reads formats $FORMAT and $FORMAT_ACKED)")
            }
            val hex = Regex("^[0-9a-f]{64}$")
            val optedOut = d["opted_out"] ?: false
            if (optedOut !is Boolean) damaged("opted_out is not a boolean")
            val secret = if (optedOut) {
                if (d["secret"] != null) damaged("an opted-out state keeps a secret")
                null
            } else {
                (d["secret"] as? String)?.takeIf { hex.matches(it) } ?: damaged("secret")
            }
            val salt = (d["salt"] as? String)?.takeIf { hex.matches(it) } ?: damaged("salt")
            val s = DeviceState(d["collection"] as? String ?: damaged("collection"), secret, salt)
            s.clock = d["clock"]?.let { num(it, "clock") } ?: Double.NEGATIVE_INFINITY
            for ((k, v) in obj(d["totals"], "totals")) {
                val t = list(v, "totals[$k]", 5)
                s.totals[k] = ScopeTotal(long(t[0], "window"), num(t[1], "ε"), num(t[2], "δ"), num(t[3], "ε"), num(t[4], "δ"))
            }
            for ((k, v) in obj(d["memo"], "memo")) {
                val m = list(v, "memo", 3)
                s.memo[k] = doubleArrayOf(long(m[0], "reports").toDouble(), num(m[1], "ε"), num(m[2], "δ"))
            }
            for ((k, v) in obj(d["changes"], "changes")) {
                val c = list(v, "changes", 2)
                val epoch = long(c[1], "epoch")
                if (epoch < 0) damaged("an epoch is negative")
                s.changes[k] = (c[0] as? String ?: damaged("changes")) to epoch
            }
            for ((k, v) in obj(d["cohorts"], "cohorts")) s.cohorts[k] = long(v, "cohort").toInt()
            for (p in d["parts"] as? List<*> ?: damaged("parts")) {
                val q = list(p, "part", 3)
                s.parts.add(PinnedPart(q[0] as? String ?: damaged("part id"), long(q[1], "part"), long(q[2], "part")))
            }
            s.nextId = long(d["next_id"], "next_id")
            s.lastUpload = d["last_upload"]?.let { num(it, "last_upload") }
            for ((k, v) in obj(d["uploaded"], "uploaded")) s.uploaded[k] = long(v, "uploaded")
            for ((k, v) in obj(d["discarded"] ?: emptyMap<String, Any?>(), "discarded")) s.discarded[k] = long(v, "discarded")
            for (id in d["acked"] as? List<*> ?: emptyList<Any?>()) s.acked.add(long(id, "an acknowledged id"))
            s.ackedBytes = d["acked_bytes"]?.let { long(it, "acked_bytes") } ?: 0L
            if ((format == FORMAT_ACKED.toLong()) != s.acked.isNotEmpty() || s.ackedBytes < 0) damaged("acked")
            return s
        }

        fun parse(text: String): DeviceState = try {
            fromJson(Json.parse(text))
        } catch (e: IllegalArgumentException) {
            damaged(e.message ?: "not JSON")
        }
    }
}
