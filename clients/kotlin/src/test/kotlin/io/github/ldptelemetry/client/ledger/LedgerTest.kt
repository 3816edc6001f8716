package io.github.ldptelemetry.client.ledger

import io.github.ldptelemetry.client.BudgetExceededException
import io.github.ldptelemetry.client.LedgerException
import io.github.ldptelemetry.client.PrivacyCost
import io.github.ldptelemetry.client.TelemetryClient
import io.github.ldptelemetry.client.internal.Bytes
import io.github.ldptelemetry.client.internal.Json
import io.github.ldptelemetry.client.protocols.Charge
import io.github.ldptelemetry.client.spec.CollectionSpec
import java.io.File
import java.util.concurrent.CountDownLatch
import java.util.concurrent.Executors
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertThrows
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.io.TempDir

class LedgerTest {
    @TempDir
    lateinit var dir: File

    private var now = 1_000_000.0

    @Test
    fun `window and lifetime caps, the clock never going back`() {
        val spec = TestSpecs.grr(perWindow = 3.0, lifetime = 5.0, windowSeconds = 100)
        val client = TelemetryClient(spec, FileStore(dir), clock = { now })
        repeat(3) { client.record("color", 1) }
        val e = assertThrows(BudgetExceededException::class.java) { client.record("color", 1) }
        assertEquals("privacy budget exceeded for metric \"color\" (window): spent ε=3.0, requested ε=1.0, cap ε=3.0", e.message)
        assertEquals(3L, client.pending())
        now -= 1000.0 // a clock moved back does not reopen an earlier window
        assertThrows(BudgetExceededException::class.java) { client.record("color", 1) }
        now += 1100.0
        client.record("color", 2)
        client.record("color", 3)
        val life = assertThrows(BudgetExceededException::class.java) { client.record("color", 0) }
        assertEquals("lifetime", life.period)
        assertEquals(PrivacyCost(5.0), client.spent(lifetime = true))
        assertEquals(PrivacyCost(2.0), client.spent("color"))
        assertEquals(5L, client.pending())
    }

    @Test
    fun `the state survives a reopen and a bad value writes nothing`() {
        val spec = TestSpecs.grr()
        TelemetryClient(spec, FileStore(dir), clock = { now }).apply {
            record("color", 0)
            assertThrows(IllegalArgumentException::class.java) { record("color", 9) }
            assertThrows(IllegalArgumentException::class.java) { record("nope", 0) }
        }
        val again = TelemetryClient(spec, FileStore(dir), clock = { now })
        assertEquals(1L, again.pending())
        assertEquals(PrivacyCost(1.0), again.spent(lifetime = true))
    }

    @Test
    fun `a state of another collection is refused, never reset`() {
        TelemetryClient(TestSpecs.grr(), FileStore(dir), clock = { now }).record("color", 0)
        val other = CollectionSpec.parse(
            """{"spec_version":1,"name":"other","budget":{"per_window":1,"lifetime":1},
               "metrics":{"m":{"protocol":"grr","params":{"epsilon":1.0,"domain_size":2},"budget":{"per_report":1}}}}""",
        )
        val e = assertThrows(LedgerException::class.java) { TelemetryClient(other, FileStore(dir), clock = { now }) }
        assertTrue("belongs to collection \"ledger.test\"" in e.message!!, e.message)
    }

    @Test
    fun `a damaged state file is refused`() {
        TelemetryClient(TestSpecs.grr(), FileStore(dir), clock = { now }).record("color", 0)
        File(dir, "state.json").writeText("{\"device\": 3")
        assertThrows(LedgerException::class.java) { TelemetryClient(TestSpecs.grr(), FileStore(dir), clock = { now }) }
    }

    @Test
    fun `memoized charges are cut at their cap and change charges open epochs`() {
        val spec = TestSpecs.grr(perWindow = 100.0, lifetime = 100.0)
        val store = MemoryStore()
        TelemetryClient(spec, store, clock = { now })
        val key = ByteArray(32) { 7 }
        store.transact { tx ->
            val s = tx.state!!
            val memo = Charge.Memoized(key, PrivacyCost(2.0), PrivacyCost(1.0), PrivacyCost(3.5))
            val got = (0 until 4).map { BudgetLedger.charge(s, spec, "color", memo, 0).increment.epsilon }
            assertEquals(listOf(2.0, 1.0, 0.5, 0.0), got)
            val a = Charge.Change(ByteArray(32), Bytes.sha256(byteArrayOf(1)), PrivacyCost(1.0))
            val b = Charge.Change(ByteArray(32), Bytes.sha256(byteArrayOf(2)), PrivacyCost(1.0))
            val epochs = listOf(a, a, b, b, a).map { BudgetLedger.charge(s, spec, "color", it, 0) }
            assertEquals(listOf(0L, 0L, 1L, 1L, 2L), epochs.map { it.epoch })
            assertEquals(listOf(1.0, 0.0, 1.0, 0.0, 1.0), epochs.map { it.increment.epsilon })
            assertTrue(s.memo.keys.none { Bytes.hex(key) in it }, "memo keys are stored as keyed hashes")
            tx.state = s
        }
    }

    @Test
    fun `batches are pinned, split and acknowledged in order, exactly once`() {
        val spec = TestSpecs.grr(perWindow = 100.0, maxBatch = 7)
        val client = TelemetryClient(spec, FileStore(dir), clock = { now })
        val ids = (0 until 10).map { client.record("color", it % 4) }
        val b1 = client.nextBatch()!!
        assertEquals(ids.take(7), b1.reports.map { it.id })
        assertEquals(b1.id, client.nextBatch()!!.id, "a pinned batch is resent under the same id")
        val reopened = TelemetryClient(spec, FileStore(dir), clock = { now })
        assertEquals(b1.id, reopened.nextBatch()!!.id, "and across a restart")
        assertEquals(4, client.splitBatch(b1.id))
        val p1 = client.nextBatch()!!
        assertEquals(ids.take(4), p1.reports.map { it.id })
        assertEquals(4, client.acknowledgeBatch(p1.id, p1.reports.map { it.id }))
        assertEquals(0, client.acknowledgeBatch(p1.id, p1.reports.map { it.id }), "a second acknowledgement counts nothing")
        val p2 = client.nextBatch()!!
        assertEquals(ids.subList(4, 7), p2.reports.map { it.id })
        assertEquals(3, client.acknowledgeBatch(p2.id, p2.reports.map { it.id }))
        val b3 = client.nextBatch()!!
        assertEquals(ids.drop(7), b3.reports.map { it.id })
        assertEquals(3, client.acknowledgeBatch(b3.id, b3.reports.map { it.id }))
        assertNull(client.nextBatch())
        assertEquals(mapOf("color" to 10L), client.uploaded())
        assertEquals(0L, client.pending())
    }

    @Test
    fun `the upload interval holds new batches back`() {
        val spec = TestSpecs.grr(perWindow = 100.0, minInterval = 3600)
        val client = TelemetryClient(spec, FileStore(dir), clock = { now })
        client.record("color", 1)
        val b = client.nextBatch()!!
        client.acknowledgeBatch(b.id, b.reports.map { it.id })
        client.record("color", 2)
        assertNull(client.nextBatch())
        assertEquals(now + 3600, client.nextUploadAt())
        now += 3600
        assertEquals(1, client.nextBatch()!!.reports.size)
    }

    @Test
    fun `the outbox log is compacted and record cost does not grow with the queue`() {
        val spec = TestSpecs.grr(perWindow = 1e9, lifetime = 1e9, maxBatch = 1000)
        val client = TelemetryClient(spec, FileStore(dir).apply { compactBytes = 64 * 1024 }, clock = { now })
        repeat(3_000) { client.record("color", it % 4) }
        repeat(2) {
            val b = client.nextBatch()!!
            client.acknowledgeBatch(b.id, b.reports.map { r -> r.id })
        }
        val logs = dir.listFiles()!!.filter { it.name.startsWith("outbox.") }
        assertEquals(1, logs.size, "one log after compaction: ${logs.map { it.name }}")
        assertTrue(logs[0].length() < 1000 * 170, "only the 1,000 waiting reports are left (${logs[0].length()} bytes)")
        assertEquals(1000L, client.pending())
        val rest = client.nextBatch()!!
        assertEquals((2_001L..3_000L).toList(), rest.reports.map { it.id })
    }

    @Test
    fun `threads sharing one folder never spend more than the cap`() {
        val spec = TestSpecs.grr(perWindow = 40.0, lifetime = 40.0, windowSeconds = 1_000_000)
        val pool = Executors.newFixedThreadPool(8)
        val start = CountDownLatch(1)
        val results = (0 until 8).map {
            pool.submit<Int> {
                val c = TelemetryClient(spec, FileStore(dir), clock = { now })
                start.await()
                var ok = 0
                repeat(10) { try { c.record("color", 1); ok++ } catch (e: BudgetExceededException) { } }
                ok
            }
        }
        start.countDown()
        assertEquals(40, results.sumOf { it.get() })
        pool.shutdown()
        assertEquals(40L, TelemetryClient(spec, FileStore(dir), clock = { now }).pending())
    }

    @Test
    fun `a RAPPOR device keeps its cohort across reports and restarts, and its memoized charge is capped`() {
        val spec = CollectionSpec.parse(
            """{"spec_version":1,"name":"cohorts","budget":{"per_window":100,"lifetime":100},
               "metrics":{"site":{"protocol":"rappor","params":{"num_bloombits":16,"num_hashes":2,"num_cohorts":64,
               "p":0.25,"q":0.75,"f":0.5},"budget":{"per_report":2.1}}}}""",
        )
        fun cohorts(c: TelemetryClient) = c.nextBatch()!!.reports.map { ((Json.parse(it.line) as Map<*, *>)["report"] as Map<*, *>)["payload"].let { p -> (p as Map<*, *>)["cohort"] } }
        val first = TelemetryClient(spec, FileStore(dir), clock = { now })
        repeat(3) { first.record("site", "https://a.example/") }
        val again = TelemetryClient(spec, FileStore(dir), clock = { now })
        again.record("site", "https://a.example/")
        assertEquals(1, cohorts(again).toSet().size, "one cohort for the device")
        val params = spec.params("site") as io.github.ldptelemetry.client.protocols.RapporParams
        assertTrue(again.spent(lifetime = true).epsilon <= params.epsilonInf + 1e-9, "four reports of one value: at most ε∞")
    }

    @Test
    fun `batch ids are Python's`() {
        // python3 -c 'from ldp.client.uploader import batch_id; print(batch_id(bytes(range(32)), [1, 2, 10], ["a", "{\"b\":1}"]))'
        val id = TelemetryClient.batchId(ByteArray(32) { it.toByte() }, listOf(1L, 2L, 10L), listOf("a", "{\"b\":1}"))
        assertEquals(PYTHON_BATCH_ID, id)
    }

    private companion object {
        const val PYTHON_BATCH_ID = "dd37c5889bf1571cfe48475e2991571c"
    }
}
