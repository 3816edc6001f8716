package io.github.ldptelemetry.client.ledger

import io.github.ldptelemetry.client.BudgetExceededException
import io.github.ldptelemetry.client.Counts
import io.github.ldptelemetry.client.LdpValueException
import io.github.ldptelemetry.client.LedgerException
import io.github.ldptelemetry.client.OptedOutException
import io.github.ldptelemetry.client.OutboxFullException
import io.github.ldptelemetry.client.PrivacyCost
import io.github.ldptelemetry.client.RefusalCode
import io.github.ldptelemetry.client.Remaining
import io.github.ldptelemetry.client.TelemetryClient
import io.github.ldptelemetry.client.internal.Json
import io.github.ldptelemetry.client.spec.CollectionSpec
import io.github.ldptelemetry.client.testing.snapshot
import io.github.ldptelemetry.client.testing.withReadOnly
import io.github.ldptelemetry.client.upload.Stopped
import io.github.ldptelemetry.client.upload.UploadOptions
import io.github.ldptelemetry.client.upload.Uploader
import java.io.File
import java.net.ServerSocket
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertNotEquals
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertThrows
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.io.TempDir

/**
 * The four promises every client keeps on the device (docs/client.md, "On the device"): reads write nothing, a
 * bounded outbox, fail closed, opting out.
 */
class OnDeviceTest {
    @TempDir
    lateinit var dir: File

    private var now = 1_000_000.0

    private fun client(spec: CollectionSpec = TestSpecs.grr(perWindow = 1e6, lifetime = 1e6), maxOutboxBytes: Long = TelemetryClient.DEFAULT_MAX_OUTBOX_BYTES) =
        TelemetryClient(spec, FileStore(dir), clock = { now }, maxOutboxBytes = maxOutboxBytes)

    private fun stateDoc(): Map<*, *> = Json.parse(File(dir, "state.json").readText()) as Map<*, *>

    private fun device(): Map<*, *> = stateDoc()["device"] as Map<*, *>

    private fun logs(): List<String> = dir.list()!!.filter { it.startsWith("outbox.") }.sorted()

    // -- reads write nothing ---------------------------------------------------------------------------------------

    @Test
    fun `opening a store and every query write nothing - same size, modification time and inode, no temporary file`() {
        val spec = TestSpecs.grr(perWindow = 1e6, lifetime = 1e6, minInterval = 3600, maxBatch = 3)
        client(spec).apply {
            repeat(5) { record("color", it % 4) }
            val b = nextBatch()!!
            acknowledgeBatch(b.id, b.reports.map { it.id })
            record("color", 1)
            nextBatch() // not yet: the interval
        }
        val before = snapshot(dir)
        Thread.sleep(20) // a rewrite now would show in the modification time
        val store = FileStore(dir)
        val c = TelemetryClient(spec, store, clock = { now })
        assertEquals(3L, c.pending())
        assertTrue(c.pendingBytes() > 0)
        assertTrue(c.hasPending())
        assertEquals(PrivacyCost(6.0), c.spent())
        assertEquals(PrivacyCost(6.0), c.spent("color", lifetime = true))
        c.currentWindow()
        assertEquals(now + 3600, c.nextUploadAt())
        assertNull(c.nextBatch(), "the upload interval holds the next batch back: nothing pinned, nothing written")
        assertEquals(mapOf("color" to 3L), c.uploaded())
        assertEquals(mapOf("color" to Counts(6, 3, 3, 0)), c.counts())
        assertEquals(Remaining(PrivacyCost(1e6 - 6), PrivacyCost(1e6 - 6)), c.remaining("color"))
        assertEquals(c.remaining("color"), c.remaining())
        assertFalse(c.optedOut)
        assertFalse(c.optIn(), "not opted out: nothing to do")
        store.read { it.head(10) }
        store.transact { tx -> tx.head(10); tx.pendingCount } // a transaction that changes nothing writes nothing
        assertEquals(before, snapshot(dir), "no file rewritten, made or removed")
        assertEquals(0L, store.syncs.get(), "no fsync")
        now += 3600
        val pinned = c.nextBatch()!! // pinning writes
        assertNotEquals(before["state.json"], snapshot(dir)["state.json"])
        val after = snapshot(dir)
        Thread.sleep(20)
        assertTrue(store.syncs.get() > 0, "a write flushes")
        val syncs = store.syncs.get()
        assertEquals(pinned.id, c.nextBatch()!!.id, "the pinned part again: read, not written")
        assertEquals(after, snapshot(dir))
        assertEquals(syncs, store.syncs.get())
    }

    @Test
    fun `a read leaves what a killed process left, and the next write repairs it`() {
        client().apply { repeat(3) { record("color", it) } }
        val committed = File(dir, "outbox.0.log").length()
        File(dir, "outbox.0.log").appendText("9\tcolor\t{\"torn\"") // a report whose state was never committed
        File(dir, "state.json.5eed.tmp").writeText("{") // a commit killed before its rename
        File(dir, "outbox.7.log").writeText("stale\n") // a log no state refers to
        val before = snapshot(dir)
        val c = client()
        assertEquals(3L, c.pending())
        assertEquals(before, snapshot(dir), "reads repair nothing")
        c.record("color", 0)
        assertEquals(listOf("outbox.0.log"), logs())
        assertFalse(File(dir, "state.json.5eed.tmp").exists())
        assertEquals(4L, c.pending())
        assertEquals(4, c.nextBatch()!!.reports.size)
        assertTrue(File(dir, "outbox.0.log").length() > committed)
    }

    @Test
    fun `a read-only folder can be opened and queried`() {
        val spec = TestSpecs.grr(perWindow = 1e6, lifetime = 1e6, minInterval = 3600)
        client(spec).apply {
            repeat(4) { record("color", it) }
            nextBatch()
        }
        val before = snapshot(dir)
        val done = withReadOnly(dir) {
            val c = TelemetryClient(spec, FileStore(dir), clock = { now })
            assertEquals(4L, c.pending())
            assertEquals(PrivacyCost(4.0), c.spent())
            assertEquals(4, c.nextBatch()!!.reports.size, "the pinned batch, read")
            assertFalse(c.optedOut)
            assertThrows(LedgerException::class.java) { c.record("color", 1) } // a write: refused by the OS
        }
        if (!done) println("OnDeviceTest: no way to make a read-only folder here (root without chattr): skipped")
        assertEquals(before, snapshot(dir))
    }

    // -- a bounded outbox ------------------------------------------------------------------------------------------

    @Test
    fun `the outbox is capped - a report that does not fit is refused before anything is charged`() {
        assertThrows(IllegalArgumentException::class.java) { client(maxOutboxBytes = 0) }
        for (line in listOf("{\"a\":1}", "é€😀", "x\uD800y")) { // counted as the log's encoder writes it
            assertEquals(line.toByteArray(Charsets.UTF_8).size + 1L, OutboxRecord(1, "m", line).size, line)
        }
        val probe = TelemetryClient(TestSpecs.grr(perWindow = 1e6, lifetime = 1e6), MemoryStore(), clock = { now })
        probe.record("color", 1)
        val size = probe.pendingBytes() // one GRR line and its newline (every GRR line of this spec is as long)
        assertEquals(probe.nextBatch()!!.reports.single().line.toByteArray().size + 1L, size)
        val c = client(maxOutboxBytes = 3 * size)
        repeat(3) { c.record("color", it) }
        assertEquals(3 * size, c.pendingBytes(), "three fit exactly")
        val spent = c.spent(lifetime = true)
        val e = assertThrows(OutboxFullException::class.java) { c.record("color", 3) }
        assertEquals(3 * size, e.pendingBytes)
        assertEquals(size, e.neededBytes)
        assertEquals(3 * size, e.capBytes)
        assertNull(e.index)
        assertTrue("outbox is full" in e.message!! && "${3 * size}" in e.message!!, e.message)
        assertEquals(spent, c.spent(lifetime = true), "nothing charged")
        assertEquals(3L, c.pending())
        val b = c.nextBatch(2)!!
        assertThrows(OutboxFullException::class.java) { c.record("color", 3) } // a pinned batch still counts
        c.acknowledgeBatch(b.id, b.reports.map { it.id })
        assertEquals(size, c.pendingBytes())
        val ids = c.recordMany(listOf("color" to 0, "color" to 1))
        assertEquals(2, ids.size)
        assertEquals(3 * size, client(maxOutboxBytes = 3 * size).pendingBytes(), "kept in the state, across a reopen")
    }

    @Test
    fun `recordMany is all or nothing and names the first item that did not fit`() {
        val probe = TelemetryClient(TestSpecs.grr(), MemoryStore(), clock = { now }).apply { record("color", 1) }
        val size = probe.pendingBytes()
        val c = client(maxOutboxBytes = 4 * size)
        c.record("color", 0)
        val spent = c.spent(lifetime = true)
        val full = assertThrows(OutboxFullException::class.java) { c.recordMany(List(4) { "color" to it }) }
        assertEquals(3, full.index)
        assertEquals(4 * size, full.pendingBytes, "the batch's earlier items count")
        assertTrue("at item 3 of a batch" in full.message!!, full.message)
        assertEquals(1L, c.pending())
        assertEquals(spent, c.spent(lifetime = true))
        val bad = assertThrows(LdpValueException::class.java) { c.recordMany(listOf("color" to 1, "color" to 9)) }
        assertTrue(bad.message!!.startsWith("recordMany item 1 (\"color\"): "), bad.message)
        assertEquals(RefusalCode.VALUE_RANGE, bad.code)
        assertEquals(mapOf("got" to 9L, "min" to 0L, "max" to 4L, "max_exclusive" to true), bad.fields)
        val unknown = assertThrows(IllegalArgumentException::class.java) { c.recordMany(listOf("color" to 1, "nope" to 1)) }
        assertTrue(unknown.message!!.startsWith("recordMany item 1 (\"nope\"): "), unknown.message)
        val capped = TelemetryClient(TestSpecs.grr(perWindow = 2.0, lifetime = 100.0), MemoryStore(), clock = { now })
        val over = assertThrows(BudgetExceededException::class.java) { capped.recordMany(List(3) { "color" to it }) }
        assertEquals(2, over.index)
        assertTrue("at item 2 of a batch" in over.message!!, over.message)
        assertEquals(PrivacyCost.ZERO, capped.spent(lifetime = true))
        assertEquals(listOf(1L, 2L), capped.recordMany(List(2) { "color" to it }))
        assertEquals(3L, c.recordMany(List(3) { "color" to it }).size.toLong())
        assertEquals(4L, c.pending())
        assertEquals(emptyList<Long>(), c.recordMany(emptyList()))
    }

    @Test
    fun `a state written before the cap existed counts its outbox when read, and writes only when changed`() {
        client().apply { repeat(3) { record("color", it) } }
        val size = client().pendingBytes()
        val doc = stateDoc()
        val legacy = linkedMapOf("device" to doc["device"], "outbox" to (doc["outbox"] as List<*>).take(5))
        File(dir, "state.json").writeText(Json.write(legacy))
        val before = snapshot(dir)
        assertEquals(size, client().pendingBytes())
        assertEquals(before, snapshot(dir))
        client().record("color", 0)
        assertEquals(6, (stateDoc()["outbox"] as List<*>).size)
    }

    // -- fail closed -----------------------------------------------------------------------------------------------

    @Test
    fun `a missing state beside an outbox is refused, never a new device that sweeps the reports`() {
        client().apply { repeat(3) { record("color", it) } }
        val log = File(dir, "outbox.0.log")
        val bytes = log.readBytes()
        File(dir, "state.json").delete()
        val e = assertThrows(LedgerException::class.java) { client() }
        assertTrue("outbox.0.log" in e.message!!, e.message)
        assertTrue("delete the whole folder" in e.message!!, e.message)
        assertThrows(LedgerException::class.java) { FileStore(dir).read { it.pendingCount } }
        assertThrows(LedgerException::class.java) { FileStore(dir).transact { it.pendingCount } }
        assertTrue(bytes.contentEquals(log.readBytes()), "the reports are kept")
        assertFalse(File(dir, "state.json").exists())
        // a temporary state file is a trace too; the lock file alone is not
        log.delete()
        File(dir, "state.json.00ff.tmp").writeText("{")
        val tmp = assertThrows(LedgerException::class.java) { client() }
        assertTrue("state.json.00ff.tmp" in tmp.message!!, tmp.message)
        File(dir, "state.json.00ff.tmp").delete()
        assertTrue(File(dir, "lock").exists())
        assertEquals(0L, client().pending(), "a folder with only its lock file opens as a new device")
    }

    @Test
    fun `an unreadable state is refused, and a deleted folder starts over`() {
        client().record("color", 1)
        File(dir, "state.json").delete()
        File(dir, "state.json").mkdir() // unreadable as a file
        val e = assertThrows(LedgerException::class.java) { client() }
        assertTrue("cannot be read" in e.message!! && "delete the whole folder" in e.message!!, e.message)
        File(dir, "state.json").delete()
        dir.listFiles()!!.forEach { it.delete() }
        assertEquals(0L, client().pending())
    }

    // -- opting out ------------------------------------------------------------------------------------------------

    private val everyKind = CollectionSpec.parse(
        """{"spec_version":1,"name":"optout","budget":{"per_window":1000,"lifetime":1000},
           "metrics":{"color":{"protocol":"grr","params":{"epsilon":1.0,"domain_size":4},"budget":{"per_report":1}},
           "site":{"protocol":"rappor","params":{"num_bloombits":16,"num_hashes":2,"num_cohorts":64,"p":0.25,"q":0.75,"f":0.5},"budget":{"per_report":2.1}},
           "mood":{"protocol":"thresh","params":{"epsilon":1.0,"domain_size":3,"labels":null},"budget":{"per_report":1}}}}""",
    )

    @Test
    fun `opting out deletes what links reports to the device and keeps the budget spent`() {
        val c = client(everyKind)
        val other = client(everyKind) // another client of the folder (a second process, say)
        c.record("color", 1)
        repeat(2) { c.record("site", "https://a.example/") }
        other.record("mood", 2)
        c.nextBatch(2) // a pinned part
        val secret = device()["secret"]
        assertTrue((device()["cohorts"] as Map<*, *>).isNotEmpty() && (device()["memo"] as Map<*, *>).isNotEmpty() && (device()["changes"] as Map<*, *>).isNotEmpty())
        val spent = c.spent(lifetime = true)
        assertEquals(4L, c.optOut())
        assertEquals(mapOf("color" to Counts(1, 0, 0, 1), "mood" to Counts(1, 0, 0, 1), "site" to Counts(2, 0, 0, 2)), c.counts())
        for (client in listOf(c, other)) {
            assertTrue(client.optedOut)
            assertEquals(0L, client.pending())
            assertEquals(0L, client.pendingBytes())
            assertFalse(client.hasPending())
            assertNull(client.nextBatch())
            assertEquals(Double.POSITIVE_INFINITY, client.nextUploadAt())
            val e = assertThrows(OptedOutException::class.java) { client.record("site", "https://a.example/") }
            assertTrue("opted out" in e.message!!, e.message)
            assertThrows(OptedOutException::class.java) { client.recordMany(listOf("color" to 1)) }
            assertEquals(spent, client.spent(lifetime = true), "spent stays spent")
        }
        val d = device()
        assertEquals(true, d["opted_out"])
        assertNull(d["secret"])
        for (key in listOf("cohorts", "memo", "changes")) assertEquals(emptyMap<String, Any>(), d[key], key)
        assertEquals(emptyList<Any>(), d["parts"])
        assertEquals(emptyList<String>(), logs().filter { File(dir, it).length() > 0 }, "the reports are gone from the disk")
        assertFalse(secret.toString() in File(dir, "state.json").readText())
        val dead = ServerSocket(0).use { "http://127.0.0.1:${it.localPort}/v1/reports" }
        val result = Uploader(UploadOptions(listOf(dead), "token")).upload(c)
        assertEquals(0, result.batches, "nothing to send: no request made")
        assertEquals(Stopped.EMPTY, result.stopped)
        // idempotent: a second opt-out deletes and writes nothing
        val before = snapshot(dir)
        Thread.sleep(20)
        assertEquals(0L, other.optOut())
        assertEquals(before, snapshot(dir))
    }

    @Test
    fun `opting in draws a fresh secret and charges memoized responses afresh`() {
        val c = client(everyKind)
        c.record("site", "https://a.example/")
        c.record("site", "https://a.example/")
        val memoized = c.spent("site", lifetime = true)
        val secret = device()["secret"]
        assertFalse(c.optIn(), "a device that did not opt out keeps its secret")
        assertEquals(secret, device()["secret"])
        c.optOut()
        assertTrue(c.optIn())
        assertFalse(c.optIn())
        assertFalse(c.optedOut)
        val fresh = device()["secret"] as String
        assertNotEquals(secret, fresh)
        assertEquals(64, fresh.length)
        c.record("site", "https://a.example/") // a new permanent response: its first report's charge again
        val again = c.spent("site", lifetime = true).epsilon - memoized.epsilon
        assertTrue(again > 0 && again >= memoized.epsilon / 2 - 1e-9, "charged afresh: $again after $memoized for two reports")
        assertEquals(1, (device()["memo"] as Map<*, *>).size)
        assertEquals(1, (device()["cohorts"] as Map<*, *>).size)
        assertEquals(1L, c.pending())
    }

    @Test
    fun `opting out works on a memory store too`() {
        val c = TelemetryClient(everyKind, MemoryStore(), clock = { now })
        c.record("color", 1)
        assertEquals(1L, c.optOut())
        assertTrue(c.optedOut)
        assertThrows(OptedOutException::class.java) { c.record("color", 1) }
        assertTrue(c.optIn())
        c.record("color", 2)
        assertEquals(1L, c.pending())
    }
}
