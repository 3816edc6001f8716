package io.github.ldptelemetry.client.dap

import com.sun.jna.Pointer
import com.sun.jna.ptr.LongByReference
import com.sun.jna.ptr.PointerByReference
import io.github.ldptelemetry.client.internal.Bytes
import io.github.ldptelemetry.client.internal.Json
import io.github.ldptelemetry.client.internal.JsonException

/** The `vdaf.type` of a Poplar1 task file. */
private const val VDAF = "Poplar1"

/** Whether [taskFileJson] is the task file of a Poplar1 task (its `vdaf.type`): what [TwoAggregatorTask.open] reads. */
internal fun isPoplar1TaskFile(taskFileJson: String): Boolean = try {
    ((Json.parse(taskFileJson) as? Map<*, *>)?.get("vdaf") as? Map<*, *>)?.get("type") == VDAF
} catch (e: JsonException) {
    false
}

/**
 * A Poplar1 task as a device holds it (the spec's `poplar1` metric kind, issue 89): the task file `ldp collect task`
 * wrote (`vdaf`: `{"type": "Poplar1", "draft": 18, "bits": L, "max_candidates": C[, "levels", "threshold"]}`, both
 * aggregators' HPKE configs inside), read here, and the native client's Poplar1 (the `prio` crate's, VDAF draft 18:
 * the `ldp_poplar1_*` functions of `libldp_client` built with the features `prio,poplar1`), bound with JNA; nothing
 * of the cryptography is written in Kotlin. [report] makes the DAP-09 report of a string: its IDPF keys for the
 * leader and the helper, each input share sealed to its aggregator, the report ID, sharding randomness and
 * ephemeral keys from the OS generator; the VDAF's application context is the task ID (as the aggregators'
 * `Task.prio3()`). A [io.github.ldptelemetry.client.TelemetryClient] given it (`tasks`) records strings into the
 * metric and uploads their reports like Prio3 ones.
 *
 * Needs JNA and the native library with the `poplar1` feature; without either, the constructor throws an
 * [IllegalStateException] saying which. A task file of another VDAF, or malformed, is an [IllegalArgumentException].
 * Thread-safe; [close] frees the native client.
 */
public class Poplar1Task(taskFileJson: String) : TwoAggregatorTask, AutoCloseable {
    private val native: LdpNative = loadNative("prio,poplar1")
    private var handle: Pointer?
    private val taskIdBytes: ByteArray
    private val leaderConfig: ByteArray
    private val helperConfig: ByteArray

    override val taskId: String
    public val app: String
    override val metric: String
    override val leaderUrl: String
    override val trust: String get() = "two-aggregator"
    override val windowSeconds: Long
    override val timePrecision: Long
    override val reportsPerWindow: Long?
    override val localJson: String? get() = null
    override val vdafType: String get() = VDAF
    override val maxMeasurement: Long? get() = null

    /** The strings' length in bits (1 to 256). */
    public val bits: Int
    override val length: Int get() = bits
    override val maxCandidates: Long

    /** The task's bound on the levels a window is collected at, and its threshold (`null` when the file has none). */
    public val levels: Long?
    public val threshold: Long?

    /** Bytes of randomness [reportWithRandom] takes. */
    public val randLength: Int

    init {
        val doc = try {
            Json.parse(taskFileJson) as? Map<*, *>
        } catch (e: JsonException) {
            throw IllegalArgumentException("the task file: a task file is JSON: ${e.message}")
        } ?: fail("a task file is a JSON object")
        if (doc["format"] != FORMAT) fail("not an $FORMAT task file")
        taskIdBytes = base64(text(doc, "task_id"), "task_id")
        if (taskIdBytes.size != TASK_ID_LEN) fail("task_id must be $TASK_ID_LEN bytes")
        taskId = Bytes.base64Url(taskIdBytes)
        app = text(doc, "app")
        metric = text(doc, "metric")
        val vdaf = doc["vdaf"] as? Map<*, *> ?: fail(if ("vdaf" in doc) "vdaf must be an object" else "the task file lacks vdaf")
        if (vdaf["type"] != VDAF) fail("vdaf.type ${Json.write(vdaf["type"])} is not Poplar1")
        if ((vdaf["draft"] ?: 18L) != 18L) fail("vdaf.draft must be 18 for Poplar1")
        vdaf.keys.firstOrNull { it !in VDAF_KEYS }?.let { fail("vdaf: Poplar1 takes no $it") }
        bits = (int(vdaf, "bits", MAX_BITS) ?: fail("the task file lacks vdaf.bits")).toInt()
        maxCandidates = int(vdaf, "max_candidates", Long.MAX_VALUE) ?: fail("the task file lacks vdaf.max_candidates")
        if (maxCandidates < 2) fail("vdaf.max_candidates must be >= 2, got $maxCandidates")
        levels = int(vdaf, "levels", bits.toLong())
        threshold = int(vdaf, "threshold", Long.MAX_VALUE)
        windowSeconds = int(doc, "window_seconds", 366 * 86_400L) ?: fail("the task file lacks window_seconds")
        timePrecision = int(doc, "time_precision", windowSeconds) ?: 1L
        if (windowSeconds % timePrecision != 0L) fail("time_precision must divide window_seconds")
        leaderUrl = text(doc, "leader_url")
        if (!(leaderUrl.startsWith("http://") || leaderUrl.startsWith("https://"))) fail("leader_url must be an http(s) URL, got ${Json.write(leaderUrl)}")
        if (doc["local"] != null) fail("local must be null: Poplar1 devices share the exact string (no local protocol)")
        reportsPerWindow = int(doc, "reports_per_window", 1_000_000_000L)
        val configs = doc["hpke_configs"] as? Map<*, *>
            ?: fail("the task file has no hpke_configs: devices need both aggregators' configs (ldp collect task --leader-config ... --helper-config ...)")
        leaderConfig = base64(configs["leader"] as? String ?: fail("hpke_configs.leader must be text"), "hpke_configs.leader")
        helperConfig = base64(configs["helper"] as? String ?: fail("hpke_configs.helper must be text"), "hpke_configs.helper")
        val out = PointerByReference()
        try {
            native.check(native.ldp_poplar1_new(bits.toLong(), taskIdBytes, taskIdBytes.size.toLong(), out), "the Poplar1 client")
        } catch (e: UnsatisfiedLinkError) {
            throw IllegalStateException("Poplar1 tasks need the native library ${LdpNative.NAME} built with the poplar1 " +
                "feature (clients/rust: cargo build --release --features prio,poplar1): ${e.message}")
        }
        handle = out.value
        val rand = LongByReference()
        try { // the configs are checked here, once, as each report would check them
            native.check(native.ldp_poplar1_dap_report_rand_len(handle!!, leaderConfig, leaderConfig.size.toLong(), helperConfig,
                helperConfig.size.toLong(), rand), "the task's hpke_configs")
        } catch (e: IllegalArgumentException) {
            close()
            throw e
        }
        randLength = Math.toIntExact(rand.value)
    }

    /** The DAP-09 report of the [bits]-bit string [measurement] (each entry 0 or 1, the first bit first) made at
     * [time] (Unix seconds, rounded down to the task's precision). Another length or entry is an
     * [IllegalArgumentException]. */
    override fun report(measurement: LongArray, time: Long): ByteArray = reportOf(pack(measurement), time)

    /** [report] of a string given packed: `ceil(bits / 8)` bytes, the first bit the most significant of the first
     * byte, the spare low bits of the last byte 0. */
    public fun reportOf(packed: ByteArray, time: Long): ByteArray = synchronized(this) {
        val out = PointerByReference()
        native.check(native.ldp_poplar1_dap_report(live(), packed, packed.size.toLong(), taskIdBytes, taskIdBytes.size.toLong(),
            time, timePrecision, leaderConfig, leaderConfig.size.toLong(), helperConfig, helperConfig.size.toLong(), out), "the report")
        native.reportBytes(out)
    }

    /** [report] with the caller's 16-byte report ID and [randLength] bytes of randomness: the same inputs give the
     * same bytes. **For tests only**: randomness used twice breaks the string's privacy. */
    public fun reportWithRandom(measurement: LongArray, time: Long, reportId: ByteArray, rand: ByteArray): ByteArray = synchronized(this) {
        val packed = pack(measurement)
        val out = PointerByReference()
        native.check(native.ldp_poplar1_dap_report_with_random(live(), packed, packed.size.toLong(), taskIdBytes,
            taskIdBytes.size.toLong(), time, timePrecision, leaderConfig, leaderConfig.size.toLong(), helperConfig,
            helperConfig.size.toLong(), reportId, reportId.size.toLong(), rand, rand.size.toLong(), out), "the report")
        native.reportBytes(out)
    }

    public override fun close(): Unit = synchronized(this) {
        native.ldp_poplar1_free(handle)
        handle = null
    }

    private fun live() = handle ?: throw IllegalStateException("this Poplar1Task is closed")

    /** The packed form of [bits] bits (each 0 or 1): bit i is bit `7 - i % 8` of byte `i / 8`. */
    private fun pack(measurement: LongArray): ByteArray {
        require(measurement.size == bits) { "the report: a Poplar1 measurement of this task is $bits bits, got ${measurement.size}" }
        val out = ByteArray((bits + 7) / 8)
        for ((i, b) in measurement.withIndex()) {
            require(b == 0L || b == 1L) { "the report: a Poplar1 measurement's bits are 0 or 1, got $b at $i" }
            if (b == 1L) out[i / 8] = (out[i / 8].toInt() or (0x80 ushr (i % 8))).toByte()
        }
        return out
    }

    private companion object {
        private const val FORMAT = "ldp-task/1"
        private const val TASK_ID_LEN = 32
        private const val MAX_BITS = 256L
        private val VDAF_KEYS = setOf("type", "draft", "bits", "max_candidates", "levels", "threshold")

        private fun fail(message: String): Nothing = throw IllegalArgumentException("the task file: $message")

        private fun text(doc: Map<*, *>, name: String): String =
            doc[name] as? String ?: fail(if (name in doc) "$name must be text" else "the task file lacks $name")

        /** `doc[name]` as an integer in `[1, top]`; null when absent or null. */
        private fun int(doc: Map<*, *>, name: String, top: Long): Long? {
            val v = doc[name] ?: return null
            if (v !is Long || v < 1 || v > top) fail("$name must be an integer in [1, $top], got ${Json.write(v)}")
            return v
        }

        private fun base64(text: String, what: String): ByteArray = Bytes.fromBase64Url(text) ?: fail("$what is not base64url")
    }
}
