package io.github.ldptelemetry.client.dap

import io.github.ldptelemetry.client.BudgetExceededException
import io.github.ldptelemetry.client.Counts
import io.github.ldptelemetry.client.LdpValueException
import io.github.ldptelemetry.client.OptedOutException
import io.github.ldptelemetry.client.PrivacyCost
import io.github.ldptelemetry.client.RefusalCode
import io.github.ldptelemetry.client.TelemetryClient
import io.github.ldptelemetry.client.internal.Bytes
import io.github.ldptelemetry.client.internal.Json
import io.github.ldptelemetry.client.ledger.FileStore
import io.github.ldptelemetry.client.ledger.MemoryStore
import io.github.ldptelemetry.client.ledger.StateStore
import io.github.ldptelemetry.client.protocols.EncoderOptions
import io.github.ldptelemetry.client.random.KeyedRandomSource
import org.junit.jupiter.api.AfterEach
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertThrows
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.io.TempDir
import java.io.File

/**
 * A [TelemetryClient] given two-aggregator tasks (Python's `ldp/client/dap.py`): the spec's charge rules (values from
 * Python's `CollectionSpec.report_charge`, `reports_per_window` and `device_window_cap` of [TaskFiles.spec]), the k
 * reports a window held on the device, the task checked against the spec, the measurement (the exact value, or the
 * randomized report's bit that the same draws give), the report's time, the outbox line, opting out, and a report
 * acknowledged behind a waiting one in a crash-safe store.
 */
class TwoAggregatorClientTest {
    private val spec = TaskFiles.spec
    private val window = 20_000L
    private var now = window * 86400.0 + 5000.5
    private val dapTasks = listOf("search_engine", "crashed", "votes").associateWith { DapTask(TaskFiles.of(spec, it)) }
    private val tasks = dapTasks.mapValues { SpyTask(it.value) }
    private val ln3 = Math.log(3.0)

    @TempDir
    lateinit var dir: File

    @AfterEach
    fun close() = dapTasks.values.forEach { it.close() }

    private fun client(store: StateStore = MemoryStore(), t: Map<String, TwoAggregatorTask> = tasks) =
        TelemetryClient(spec, store, clock = { now }, tasks = t)

    @Test
    fun `the charges and caps are Python's`() {
        val want = mapOf(
            "search_engine" to Triple(1.0, 1L, 1.0), "crashed" to Triple(ln3, 2L, 2 * ln3),
            "votes" to Triple(1.5, 4L, 6.0), "color" to Triple(1.0, 6L, null),
        )
        for ((metric, w) in want) {
            assertEquals(w.first, spec.reportCharge(metric).epsilon, 1e-12, metric)
            assertEquals(w.second, spec.reportsPerWindow(metric), metric)
            val cap = spec.deviceWindowCap(metric)
            if (w.third == null) assertNull(cap, metric) else assertEquals(w.third!!, cap!!.epsilon, 1e-12, metric)
        }
    }

    @Test
    fun `each report is charged, and the device holds to k reports a window`() {
        val c = client()
        c.record("search_engine", "c")
        assertEquals(1.0, c.spent("search_engine").epsilon)
        val e = assertThrows(BudgetExceededException::class.java) { c.record("search_engine", "a") }
        assertEquals("search_engine" to "window", e.scope to e.period)
        c.recordMany(listOf("crashed" to true, "crashed" to false))
        assertEquals(2 * ln3, c.spent("crashed").epsilon, 1e-12)
        assertEquals(0.0, c.remaining("crashed").window!!.epsilon, 1e-9)
        assertEquals("crashed", assertThrows(BudgetExceededException::class.java) { c.record("crashed", true) }.scope)
        assertEquals(3, c.pending())
        now += 86400 // the next window: k more
        c.record("search_engine", "other")
        val v = client()
        repeat(4) { v.record("votes", it % 3) }
        assertEquals(6.0, v.spent().epsilon, 1e-12)
        assertEquals("votes", assertThrows(BudgetExceededException::class.java) { v.record("votes", 0) }.scope)
        assertEquals(PrivacyCost(6.0), v.spent("votes", lifetime = true))
    }

    @Test
    fun `the measurement, its time and the outbox line`() {
        val c = client()
        val ids = c.recordMany(listOf("search_engine" to "c", "votes" to 1L, "crashed" to true))
        val time = window * 86400 + 3600 // 5000.5 s into the window, rounded down to the hour
        assertEquals(listOf(listOf(2L) to time), tasks.getValue("search_engine").made)
        assertEquals(listOf(listOf(0L, 1L, 0L) to time), tasks.getValue("votes").made)
        assertEquals(1, tasks.getValue("crashed").made.size)
        val lines = c.dapLane().pending(10)
        assertEquals(ids, lines.map { it.id })
        for (r in lines) {
            val doc = Json.parse(r.line) as Map<*, *>
            assertEquals(listOf("task_id", "report"), doc.keys.toList())
            val (taskId, report) = DapLine.parse(r.line)!!
            assertEquals(Bytes.base64Url(ByteArray(32) { 0xa5.toByte() }), taskId)
            assertTrue(report.size > 100, "a sealed report")
            assertEquals(r.line, DapLine.write(taskId, report))
        }
        val metric = DapMetric(spec, "search_engine", tasks.getValue("search_engine"))
        assertEquals(window * 86400, metric.reportTime(window * 86400 - 99.0, window), "clamped into the window")
        assertEquals(window * 86400 + 82800, metric.reportTime(window * 86400 + 999_999.0, window))
    }

    @Test
    fun `with local noise the measurement is the randomized report's bit`() {
        val seed = Bytes.ascii("dap-local-test")
        val c = TelemetryClient(spec, MemoryStore(), clock = { now }, rng = KeyedRandomSource(seed, Bytes.ascii("d")), tasks = tasks)
        val twin = KeyedRandomSource(seed, Bytes.ascii("d"))
        repeat(2) { twin.tokenBytes(32) } // the client's secret and salt
        val encoder = spec.metric("crashed").protocol.encoder(spec.params("crashed"), EncoderOptions(rng = twin))
        val values = listOf(true, false, true, true, false, false, true, false, true, true)
        val want = values.map { v -> listOf(encoder.encode(v)["bit"] as Long) }
        for ((i, v) in values.withIndex()) {
            now = (window + i) * 86400.0 + 10 // one window each: under the cap
            c.record("crashed", v)
        }
        assertEquals(want, tasks.getValue("crashed").made.map { it.first })
        assertTrue(want.toSet().size == 2, "both bits drawn: the noise is in the measurement")
    }

    private fun refused(metric: String, text: String): String = DapTask(text).use { task ->
        assertThrows(IllegalArgumentException::class.java) { client(t = mapOf(metric to task)) }.message!!
    }

    @Test
    fun `a task that is not the metric's under this spec is refused, naming the first difference`() {
        val hist = mapOf("type" to "Prio3Histogram", "length" to 4L)
        val count = mapOf("type" to "Prio3Count")
        val rr = mapOf("protocol" to "rr", "params" to mapOf("p" to 0.25, "q" to 0.75))
        val cases = mapOf(
            ("search_engine" to TaskFiles.of(spec, "votes")) to "its metric is \"votes\", the spec's \"search_engine\"",
            ("search_engine" to TaskFiles.text("search_engine", hist, windowSeconds = 3600)) to "its window_seconds is 3600, the spec's 86400",
            ("crashed" to TaskFiles.text("crashed", count, reportsPerWindow = 2)) to "its trust is \"two-aggregator\", the spec's \"two-aggregator+local\"",
            ("search_engine" to TaskFiles.text("search_engine", count)) to "its vdaf is \"Prio3Count\", the spec's \"Prio3Histogram\"",
            ("search_engine" to TaskFiles.text("search_engine", hist, reportsPerWindow = 2)) to "its reports_per_window is 2, the spec's 1",
            ("crashed" to TaskFiles.text("crashed", count, local = rr + ("params" to mapOf("p" to 0.3, "q" to 0.75)), reportsPerWindow = 2))
                to "its local is {\"protocol\":\"rr\",\"params\":{\"p\":0.3,\"q\":0.75}}",
            ("search_engine" to TaskFiles.text("search_engine", hist + ("length" to 5L))) to "has Prio3 parameters (length 5, max_measurement null)",
            ("votes" to TaskFiles.text("votes", mapOf("type" to "Prio3SumVec", "length" to 3L, "max_measurement" to 2L), reportsPerWindow = 4))
                to "max_measurement 2), the spec's metric (length 3, max_measurement 1)",
            ("color" to TaskFiles.of(spec, "search_engine")) to "tasks: \"color\" is no two-aggregator metric of collection \"dap.test\"",
        )
        for ((given, want) in cases) assertTrue(refused(given.first, given.second).contains(want), "${given.first}: ${refused(given.first, given.second)}")
        val reordered = TaskFiles.text("crashed", count, local = mapOf("params" to mapOf("q" to 0.75, "p" to 0.25), "protocol" to "rr"), reportsPerWindow = 2)
        DapTask(reordered).use { client(t = mapOf("crashed" to it)).record("crashed", true) } // the same params, other order
    }

    @Test
    fun `without its task a two-aggregator metric is refused before its value is looked at`() {
        val c = client(t = mapOf("search_engine" to tasks.getValue("search_engine")))
        val e = assertThrows(LdpValueException::class.java) { c.record("crashed", "not even a bool") }
        assertEquals(RefusalCode.TRUST_MODEL, e.code)
        assertEquals(mapOf("metric" to "crashed", "trust" to "two-aggregator+local"), e.fields)
        assertTrue(e.message!!.contains("tasks = mapOf(\"crashed\" to DapTask(taskFileText))"), e.message)
        c.record("search_engine", "a")
        assertEquals(0.0, c.spent("crashed").epsilon)
        assertEquals(1L, c.pending())
    }

    @Test
    fun `opting out deletes the waiting two-aggregator reports`() {
        val c = client()
        c.record("search_engine", "b")
        c.record("color", 1L)
        assertEquals(2L, c.optOut())
        assertEquals(0L, c.pending())
        assertEquals(Counts(1, 0, 0, 1), c.counts()["search_engine"])
        assertTrue(c.dapLane().pending(10).isEmpty())
        assertThrows(OptedOutException::class.java) { c.record("votes", 0L) }
        assertEquals(2.0, c.spent().epsilon, "spent stays spent")
        c.optIn()
        c.record("votes", 0L)
        assertEquals(1, c.dapLane().pending(10).size)
    }

    @Test
    fun `a report acknowledged behind a waiting one leaves the outbox, in a reopened store too`() {
        val c = client(FileStore(dir))
        val ids = c.recordMany(listOf("color" to 0L, "search_engine" to "a", "color" to 1L, "votes" to 2L))
        val sizes = c.dapLane().pending(10).associate { it.id to it.line.length + 1L }
        val before = c.pendingBytes()
        assertTrue(c.dapLane().acknowledge(ids[1]))
        assertTrue(!c.dapLane().acknowledge(ids[1]), "acknowledged once")
        assertEquals(3L, c.pending())
        assertEquals(before - sizes.getValue(ids[1]), c.pendingBytes())
        val doc = Json.parse(File(dir, "state.json").readText()) as Map<*, *>
        assertEquals(2L, (doc["device"] as Map<*, *>)["format"], "a state holding acknowledged ids is format 2")
        val again = client(FileStore(dir))
        assertEquals(mapOf("color" to Counts(2, 2, 0, 0), "search_engine" to Counts(1, 0, 1, 0), "votes" to Counts(1, 1, 0, 0)), again.counts())
        val batch = again.nextBatch(null)!!
        assertEquals(listOf(ids[0], ids[2]), batch.reports.map { it.id }, "the ingest lane's reports only")
        assertEquals(2, again.acknowledgeBatch(batch.id, batch.reports.map { it.id }))
        assertEquals(listOf(ids[3]), again.dapLane().pending(10).map { it.id })
        assertNull(again.nextBatch(null))
        val after = Json.parse(File(dir, "state.json").readText()) as Map<*, *>
        assertEquals(1L, (after["device"] as Map<*, *>)["format"], "the head's run dropped: nothing acknowledged is left behind")
        assertEquals(sizes.getValue(ids[3]), again.pendingBytes())
    }
}
