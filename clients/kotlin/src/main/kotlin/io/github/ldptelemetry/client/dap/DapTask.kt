package io.github.ldptelemetry.client.dap

import com.sun.jna.ptr.LongByReference
import com.sun.jna.ptr.PointerByReference
import io.github.ldptelemetry.client.internal.Json

/**
 * A two-aggregator task as a device holds it: the task file `ldp collect task --leader-config … --helper-config …`
 * wrote, read by the native client (`libldp_client`, the `ldp_dap_task_*` functions: the `prio` crate's Prio3 of
 * VDAF draft 18 or 08, the `hpke` crate's sealing; nothing of the cryptography is written in Kotlin), bound with JNA.
 * [report] makes the DAP-09 report of a measurement, its report ID, sharding randomness and ephemeral keys from the
 * OS generator: the body of `PUT {leaderUrl}/tasks/{taskId}/reports`. A
 * [io.github.ldptelemetry.client.TelemetryClient] given it (`tasks`) records and uploads the metric's reports.
 *
 * Needs JNA (`net.java.dev.jna:jna`, an optional dependency of this library: add it to the app) and the native
 * library for the platform (docs/kotlin-client.md, "Two-aggregator reports"); without either, the constructor
 * throws an [IllegalStateException] saying which. Thread-safe; [close] frees the native task.
 */
public class DapTask(taskFileJson: String) : TwoAggregatorTask, AutoCloseable {
    private val native: LdpNative = loadNative("prio")
    private var handle: com.sun.jna.Pointer?

    override val taskId: String
    public val app: String
    override val metric: String
    override val leaderUrl: String
    override val trust: String
    override val windowSeconds: Long
    override val timePrecision: Long
    override val reportsPerWindow: Long?
    override val localJson: String?
    override val vdafType: String
    override val length: Int
    override val maxMeasurement: Long?
    /** The VDAF draft: 8 or 18. */
    public val draft: Int
    /** Bytes of randomness [reportWithRandom] takes. */
    public val randLength: Int

    init {
        val bytes = taskFileJson.toByteArray(Charsets.UTF_8)
        val out = PointerByReference()
        native.check(native.ldp_dap_task_new(bytes, bytes.size.toLong(), out), "the task file")
        handle = out.value
        val json = PointerByReference()
        val len = LongByReference()
        native.check(native.ldp_dap_task_description(handle!!, json, len), "the task's description")
        @Suppress("UNCHECKED_CAST")
        val d = Json.parse(String(json.value.bytes(len.value), Charsets.UTF_8)) as Map<String, Any?>
        taskId = d["task_id"] as String
        app = d["app"] as String
        metric = d["metric"] as String
        leaderUrl = d["leader_url"] as String
        trust = d["trust"] as String
        windowSeconds = (d["window_seconds"] as Number).toLong()
        timePrecision = (d["time_precision"] as Number).toLong()
        reportsPerWindow = (d["reports_per_window"] as Number?)?.toLong()
        localJson = d["local"]?.let { Json.write(it) }
        vdafType = d["vdaf"] as String
        length = (d["length"] as Number).toInt()
        draft = (d["draft"] as Number).toInt()
        randLength = (d["rand_len"] as Number).toInt()
        // the one member the native description leaves out, read from the file the library accepted
        maxMeasurement = ((Json.parse(taskFileJson) as? Map<*, *>)?.get("vdaf") as? Map<*, *>)?.get("max_measurement") as? Long
    }

    /** The DAP-09 report of [measurement] (the bucket index for a histogram, 0 or 1 for a count, the value of a sum,
     * the entries of a vector) made at [time] (Unix seconds, rounded down to the task's precision). A measurement the
     * task's type refuses is an [IllegalArgumentException]. */
    override fun report(measurement: LongArray, time: Long): ByteArray = synchronized(this) {
        val out = PointerByReference()
        native.check(native.ldp_dap_task_report(live(), measurement, measurement.size.toLong(), time, out), "the report")
        native.reportBytes(out)
    }

    /** [report] with the caller's 16-byte report ID and [randLength] bytes of randomness: the same inputs give the
     * same bytes. **For test vectors only** (VDAF draft 18): randomness used twice breaks the measurement's privacy. */
    public fun reportWithRandom(measurement: LongArray, time: Long, reportId: ByteArray, rand: ByteArray): ByteArray =
        synchronized(this) {
            val out = PointerByReference()
            native.check(native.ldp_dap_task_report_with_random(live(), measurement, measurement.size.toLong(), time, reportId,
                reportId.size.toLong(), rand, rand.size.toLong(), out), "the report")
            native.reportBytes(out)
        }

    public override fun close(): Unit = synchronized(this) {
        native.ldp_dap_task_free(handle)
        handle = null
    }

    private fun live() = handle ?: throw IllegalStateException("this DapTask is closed")
}
