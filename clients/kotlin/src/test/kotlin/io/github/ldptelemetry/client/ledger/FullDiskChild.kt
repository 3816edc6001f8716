package io.github.ldptelemetry.client.ledger

import io.github.ldptelemetry.client.LedgerException
import io.github.ldptelemetry.client.TelemetryClient
import io.github.ldptelemetry.client.internal.Json
import java.io.File
import java.io.FileOutputStream
import java.io.IOException

/**
 * The child process of [FullDiskTest], run on a 1 MiB tmpfs mounted at `args[0]` (its own mount namespace): records
 * two reports in `args[0]/store`, fills the tmpfs to the last byte with another file, opens the store again, reads
 * what waits, uploads it (pins and acknowledges every batch, as the uploader would after the collector's reply),
 * then deletes the fill file and records again. Prints one JSON line of what it saw; the parent asserts on it.
 */
object FullDiskChild {
    private val spec = TestSpecs.grr(perWindow = 1e6, lifetime = 1e6, maxBatch = 1)

    @JvmStatic
    fun main(args: Array<String>) {
        val root = File(args[0])
        val dir = File(root, "store")
        val out = linkedMapOf<String, Any?>()
        val reserve = File(dir, Reserve.NAME)

        TelemetryClient(spec, FileStore(dir), clock = { 1_000_000.0 }).apply { repeat(2) { record("color", it) } }
        out["reserveMade"] = reserve.length()

        val fill = fill(root, out)
        out["freeSpace"] = dir.freeSpace
        out["usableSpace"] = dir.usableSpace

        // a record on the full disk fails, and does not spend the reserve
        out["recordError"] = try {
            TelemetryClient(spec, FileStore(dir), clock = { 1_000_000.0 }).record("color", 3)
            null
        } catch (e: LedgerException) {
            e.message
        }
        out["reserveAfterRecord"] = reserve.length()

        // open again, read, upload and acknowledge everything
        val store = FileStore(dir)
        val c = TelemetryClient(spec, store, clock = { 1_000_000.0 })
        acknowledgeAll(c, out)
        out["reserveReleases"] = store.reserveReleases.get()

        // room again: the next record makes the reserve anew
        out["fillDeleted"] = fill.delete()
        c.record("color", 2)
        out["pendingAtEnd"] = c.pending()
        out["spentAtEnd"] = c.spent(lifetime = true).epsilon
        out["reserveAtEnd"] = reserve.length()
        out["files"] = dir.list()!!.sorted()
        println(Json.write(out))
    }

    /** Fills the tmpfs at [root] with the file it returns: 4 KiB blocks until a write fails, then single bytes until one fails. */
    private fun fill(root: File, out: MutableMap<String, Any?>): File {
        val fill = File(root, "fill")
        FileOutputStream(fill).use { stream ->
            val block = ByteArray(4096) { 1 }
            try {
                while (true) stream.write(block)
            } catch (e: IOException) {
                out["fillError"] = e.message
            }
            try {
                while (true) stream.write(1)
            } catch (e: IOException) {
                // the last byte is taken
            }
        }
        out["filled"] = fill.length()
        return fill
    }

    /** Reads what waits in [c], then pins and acknowledges every batch (as the uploader would after the collector's reply). */
    private fun acknowledgeAll(c: TelemetryClient, out: MutableMap<String, Any?>) {
        out["pending"] = c.pending()
        out["spent"] = c.spent(lifetime = true).epsilon
        var acknowledged = 0L
        out["ackError"] = try {
            while (true) {
                val batch = c.nextBatch() ?: break
                acknowledged += c.acknowledgeBatch(batch.id, batch.reports.map { it.id })
            }
            null
        } catch (e: LedgerException) {
            e.message
        }
        out["acknowledged"] = acknowledged
        out["pendingAfterAck"] = c.pending()
        out["uploaded"] = c.uploaded()["color"]
    }
}
