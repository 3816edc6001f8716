package io.github.ldptelemetry.client.ledger

import io.github.ldptelemetry.client.LedgerException
import io.github.ldptelemetry.client.PrivacyCost
import io.github.ldptelemetry.client.TelemetryClient
import io.github.ldptelemetry.client.internal.Json
import io.github.ldptelemetry.client.testing.snapshot
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertNotNull
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertThrows
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Assumptions.assumeTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.io.TempDir
import java.io.File
import java.io.IOException
import java.io.SyncFailedException
import java.util.concurrent.TimeUnit

/**
 * On a full disk an app can still open its store, read what waits, and upload and acknowledge it, which frees room
 * (docs/client.md, "On the device"): the store's reserve ([Reserve]), made after writes and never by reads, and not
 * a trace of a state.
 */
class FullDiskTest {
    @TempDir
    lateinit var dir: File

    private val spec = TestSpecs.grr(perWindow = 1e6, lifetime = 1e6, minInterval = 3600)

    private fun client(store: FileStore = FileStore(dir)) = TelemetryClient(spec, store, clock = { 1_000_000.0 })

    private val reserve get() = File(dir, Reserve.NAME)

    // -- a real full disk --------------------------------------------------------------------------------------------

    /** Whether this machine lets an unprivileged process make a user and mount namespace (for a tmpfs of its own). */
    private fun canUnshare(): Boolean = try {
        val p = ProcessBuilder("unshare", "-rm", "true").redirectErrorStream(true).start()
        p.inputStream.readBytes()
        p.waitFor(30, TimeUnit.SECONDS) && p.exitValue() == 0
    } catch (e: IOException) {
        false
    }

    @Test
    fun `on a tmpfs filled to the last byte the store opens, reads and acknowledges, and a record fails cleanly`() {
        assumeTrue(canUnshare(), "`unshare -rm true` fails here (no unprivileged user namespaces): no private tmpfs to fill")
        val mount = File(dir, "tmpfs").apply { mkdirs() }
        val jvmTmp = File(dir, "jvm-tmp").apply { mkdirs() } // the child JVM writes nothing into the tmpfs itself
        val java = File(System.getProperty("java.home"), "bin/java").path
        val cp = System.getProperty("surefire.test.class.path") ?: System.getProperty("java.class.path")
        val script = "mount -t tmpfs -o size=1m tmpfs \"\$1\" && exec \"\$2\" -XX:-UsePerfData -XX:TieredStopAtLevel=1 " +
            "-XX:+UseSerialGC -Xshare:auto \"-Djava.io.tmpdir=\$3\" -cp \"\$4\" ${FullDiskChild::class.java.name} \"\$1\""
        val errors = File(dir, "child.err")
        val child = ProcessBuilder("unshare", "-rm", "sh", "-c", script, "sh", mount.path, java, jvmTmp.path, cp)
            .redirectError(errors).start()
        val output = child.inputStream.bufferedReader().readText()
        assertTrue(child.waitFor(120, TimeUnit.SECONDS), "the child finished")
        assertEquals(0, child.exitValue(), "the child failed:\n$output\n${errors.readText()}")
        val r = Json.parse(output.trim().lines().last()) as Map<*, *>

        assertEquals(Reserve.BYTES, r["reserveMade"], "a record leaves the reserve")
        assertTrue("No space left on device" in r["fillError"] as String, "the tmpfs filled: ${r["fillError"]}")
        assertEquals(0L, r["freeSpace"], "filled to the last byte: $r")
        assertEquals(0L, r["usableSpace"])

        val recordError = r["recordError"] as String?
        assertNotNull(recordError, "a record on a full disk fails")
        assertTrue("disk is full" in recordError!! && "nothing was recorded or charged" in recordError, recordError)
        assertEquals(Reserve.BYTES, r["reserveAfterRecord"], "a record does not spend the reserve")

        assertEquals(2L, r["pending"], "the store opens and reads on the full disk")
        assertEquals(2.0, r["spent"], "the failed record charged nothing")
        assertNull(r["ackError"], "uploading and acknowledging work on the full disk")
        assertEquals(2L, r["acknowledged"])
        assertEquals(0L, r["pendingAfterAck"])
        assertEquals(2L, r["uploaded"])
        assertTrue((r["reserveReleases"] as Long) >= 1, "the reserve's room was needed: $r")

        assertEquals(true, r["fillDeleted"])
        assertEquals(1L, r["pendingAtEnd"], "records again once there is room")
        assertEquals(3.0, r["spentAtEnd"])
        assertEquals(Reserve.BYTES, r["reserveAtEnd"], "the reserve is made again after a write")
        val files = (r["files"] as List<*>).map { it as String }
        assertEquals(emptyList<String>(), files.filter { it.endsWith(".tmp") }, "nothing temporary left: $files")
    }

    // -- the reserve, made by writes only ------------------------------------------------------------------------------

    @Test
    fun `a write makes the reserve, reads never do`() {
        val c = client()
        c.record("color", 1)
        assertEquals(Reserve.BYTES, reserve.length())
        assertTrue(reserve.readBytes().all { it == 0.toByte() }, "zeros")

        reserve.delete()
        val before = snapshot(dir)
        Thread.sleep(20)
        val store = FileStore(dir)
        val reader = client(store)
        assertEquals(1L, reader.pending())
        assertEquals(PrivacyCost(1.0), reader.spent(lifetime = true))
        reader.counts()
        reader.remaining("color")
        assertFalse(reader.optedOut)
        assertFalse(reader.optIn())
        store.read { it.head(10) }
        store.transact { tx -> tx.head(10); tx.pendingCount } // a transaction that changes nothing
        assertEquals(before, snapshot(dir), "reads write nothing, not even the reserve")
        assertFalse(reserve.exists())
        assertEquals(0L, store.syncs.get())

        reader.optOut() // a write that appends nothing makes it too
        assertEquals(Reserve.BYTES, reserve.length())
        reserve.writeBytes(ByteArray(10)) // cut short (a crash before the file system wrote it): made whole again
        reader.optIn()
        assertEquals(Reserve.BYTES, reserve.length())
    }

    @Test
    fun `the reserve is not a trace of a state and is never swept, its temporary files are`() {
        client().apply { repeat(3) { record("color", it) } }
        val kept = snapshot(dir)[Reserve.NAME]
        File(dir, "${Reserve.NAME}.5eed.tmp").writeBytes(ByteArray(4096)) // an ensure killed before its rename
        val reader = client()
        assertEquals(3L, reader.pending())
        assertTrue(File(dir, "${Reserve.NAME}.5eed.tmp").exists(), "reads remove nothing")
        reader.record("color", 0)
        assertFalse(File(dir, "${Reserve.NAME}.5eed.tmp").exists(), "a write sweeps it")
        assertEquals(kept, snapshot(dir)[Reserve.NAME], "the reserve is the same file, untouched")

        // a missing state beside its log is refused, naming the log and not the reserve
        File(dir, "state.json").delete()
        File(dir, "${Reserve.NAME}.5eed.tmp").writeBytes(ByteArray(16))
        val e = assertThrows(LedgerException::class.java) { client() }
        assertTrue("outbox.0.log" in e.message!!, e.message)
        assertFalse(Reserve.NAME in e.message!!, e.message)

        // without the log, the reserve (and its temporary file) are no trace: a new device
        dir.listFiles()!!.filter { it.name.startsWith("outbox.") }.forEach { it.delete() }
        assertEquals(setOf("lock", Reserve.NAME, "${Reserve.NAME}.5eed.tmp"), dir.list()!!.toSet())
        val fresh = client()
        assertEquals(0L, fresh.pending())
        assertEquals(PrivacyCost.ZERO, fresh.spent(lifetime = true))
        assertEquals(setOf("lock", Reserve.NAME, "state.json"), dir.list()!!.toSet(), "the new state's write swept the temporary file")
    }

    @Test
    fun `a full disk is told by the error's text, wrapped or not`() {
        val full = listOf(
            IOException("No space left on device"),
            IOException("write failed: ENOSPC (No space left on device)"), // Android's libcore
            LedgerException("cannot commit", IOException("Disk quota exceeded")),
            java.nio.file.FileSystemException("/data/state.json.tmp", null, "No space left on device"),
        )
        for (e in full) assertTrue(Reserve.isDiskFull(e, dir), e.toString())
        val other = listOf(IOException("Permission denied"), IOException(null as String?), LedgerException("cannot replace state.json"))
        for (e in other) assertFalse(Reserve.isDiskFull(e, dir), e.toString())
        // an fsync says no more than "sync failed": a disk with room to spare is not full
        assertFalse(Reserve.isDiskFull(SyncFailedException("sync failed"), dir))
    }
}
