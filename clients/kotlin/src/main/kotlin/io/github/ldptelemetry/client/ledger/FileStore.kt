package io.github.ldptelemetry.client.ledger

import io.github.ldptelemetry.client.LedgerException
import io.github.ldptelemetry.client.internal.Json
import java.io.ByteArrayOutputStream
import java.io.File
import java.io.FileOutputStream
import java.io.IOException
import java.util.concurrent.atomic.AtomicLong

/**
 * The state in a folder of files, safe against crashes and shared by the processes of one app:
 *
 * - `state.json`: the [DeviceState] and the outbox's bookkeeping, replaced atomically: written to a temporary
 *   file, flushed to the disk (`fsync`), renamed over the old one, and the folder flushed.
 * - `outbox.<n>.log`: the reports, appended (one line each) and flushed before the state that counts them is
 *   committed. Bytes past the committed end (a crash between the two) are ignored and cut by the next commit, so a
 *   report exists only once its charge does. Acknowledged reports are dropped by moving the committed start; the
 *   log is rewritten into `outbox.<n+1>.log` once its dropped head is over 1 MiB and half the file.
 * - `lock`: OS file locks ([java.nio.channels.FileChannel.lock]) taken for every transaction and read. The OS releases them when
 *   their process dies, however it dies, so a killed process never locks the others out. The lock is handed over
 *   fairly: a process that waits holds a turnstile (the lock file's first byte) while it blocks on the lock (its
 *   second byte), and a process that just released the lock must pass the turnstile again, behind it. Threads of
 *   one process queue on a fair in-process lock first (an OS lock is held per process).
 *
 * - `state.reserve`: 256 KiB of zeros, room kept for a full disk (below).
 *
 * Reads write nothing: opening a store and reading it (a [read], or a [transact] whose block changed nothing)
 * leaves every file as it was, so a full disk or a read-only folder can still be read. Only a transaction that
 * changes something writes, and only such a transaction removes what a killed process left (temporary files,
 * unreferenced logs, a torn log tail).
 *
 * A full disk: after a transaction that wrote, the store keeps `state.reserve` when the disk has room for it. A
 * transaction that appends no report (acknowledging, pinning or splitting a batch, opting out or in) and fails for
 * lack of room deletes the reserve and commits once more, so an app can still upload and acknowledge what waits,
 * which frees room. A transaction that appends reports (a record) never uses the reserve: on a full disk it throws
 * [LedgerException], nothing committed.
 *
 * Fail closed: a state file that cannot be read raises [LedgerException], and so does a missing `state.json` while
 * traces of a state remain in the folder (an `outbox.<n>.log`, a temporary state file; not `lock` nor
 * `state.reserve`, which hold no data): the store never starts over as a new device beside reports charged to an
 * old one. To start over deliberately, delete the whole folder.
 *
 * [lockTimeoutMillis] bounds the wait for the lock ([LedgerException] after it).
 */
public class FileStore @JvmOverloads @Throws(LedgerException::class) constructor(
    public val directory: File,
    private val lockTimeoutMillis: Long = 30_000,
) : StateStore {
    private val stateFile = File(directory, STATE)
    private val reserve = Reserve(directory)
    private val lock: FolderLock

    /** The dropped head of the log beyond which it is rewritten (when also half the file). */
    internal var compactBytes: Long = 1L shl 20

    /** Flushes (`fsync`) this store has made: the tests check that reads make none. */
    internal val syncs = AtomicLong()

    /** Commits this store retried on a full disk with the reserve's room: the tests check that one was needed. */
    internal val reserveReleases = AtomicLong()

    private val outbox = OutboxLog(directory, stateFile, syncs)

    init {
        require(lockTimeoutMillis >= 0) { "lockTimeoutMillis must be >= 0, got $lockTimeoutMillis" }
        if (!directory.isDirectory && !directory.mkdirs() && !directory.isDirectory) {
            throw LedgerException("cannot create the state folder $directory")
        }
        lock = FolderLock(directory, stateFile, lockTimeoutMillis)
    }

    @Throws(LedgerException::class)
    override fun <T> transact(block: (StoreTransaction) -> T): T = lock.locked(write = true) {
        val snapshot = load()
        val tx = Tx(snapshot)
        val out = block(tx)
        if (commitOrRelease(snapshot, tx)) reserve.ensure()
        out
    }

    @Throws(LedgerException::class)
    override fun <T> read(block: (StoreView) -> T): T = lock.locked(write = false) { block(Tx(load())) }

    // -- reading --------------------------------------------------------------------------------------------------

    /** The committed state: its document's text as it would be written again, and the outbox cursor. */
    private class Snapshot(val device: DeviceState?, val deviceText: String?, val cursor: OutboxCursor)

    /** Files that a state leaves: a state that is missing while they remain is refused (fail closed). */
    private fun traces(): List<String> = (directory.list() ?: emptyArray()).filter { isTrace(it) }.sorted()

    private fun load(): Snapshot {
        if (!stateFile.exists()) {
            val found = traces()
            if (found.isNotEmpty()) {
                throw LedgerException(
                    "$directory has no $STATE but holds ${found.joinToString(", ")}, left by a state that is gone (deleted, " +
                        "or not restored from a backup): refusing to start over as a new device beside reports charged to " +
                        "the old one. To start over deliberately, delete the whole folder",
                )
            }
            return Snapshot(null, null, OutboxCursor(0, 0, 0, 1, 0, 0))
        }
        val text = try {
            stateFile.readText(Charsets.UTF_8)
        } catch (e: IOException) {
            throw LedgerException(
                "$stateFile cannot be read (${e.message}): refusing to guess the budget spent. To start over " +
                    "deliberately as a new device, delete the whole folder",
                e,
            )
        }
        val doc = try {
            Json.parse(text)
        } catch (e: IllegalArgumentException) {
            throw LedgerException("$stateFile is damaged: ${e.message}")
        }
        val d = doc as? Map<*, *> ?: throw LedgerException("$stateFile is damaged: not an object")
        val device = DeviceState.fromJson(d["device"])
        val o = d["outbox"] as? List<*>
        if (o == null || o.size !in 5..6 || o.any { it !is Long }) throw LedgerException("$stateFile is damaged: outbox cursor")
        val c = OutboxCursor(o[0] as Long, o[1] as Long, o[2] as Long, o[3] as Long, o[4] as Long, o.getOrNull(5) as Long?)
        if (c.count > 0 && outbox.file(c.gen).length() < c.end) {
            throw LedgerException("${outbox.file(c.gen)} is damaged: shorter than its committed ${c.end} bytes")
        }
        return Snapshot(device, Json.write(device.toJson()), c)
    }

    /** A transaction (or, through [StoreView], a read) on [snapshot]: appends and drops are kept in memory. */
    private inner class Tx(val snapshot: Snapshot) : StoreTransaction {
        val cursor = snapshot.cursor
        override var state: DeviceState? = snapshot.device
        val appended = ByteArrayOutputStream()
        var appendedCount = 0L
        var appendedBytes = 0L
        var droppedBytes = 0L // of the log
        var droppedSize = 0L // as the outbox cap counts them
        var droppedCount = 0L

        override val pendingCount: Long get() = cursor.count - droppedCount + appendedCount

        override val pendingBytes: Long
            get() {
                val committed = cursor.bytes ?: outbox.read(cursor.gen, cursor.start, cursor.end, cursor.count).sumOf { it.first.size }.also { cursor.bytes = it }
                return committed - droppedSize + appendedBytes
            }

        override fun append(record: OutboxRecord) {
            require('\n' !in record.line && '\t' !in record.metric && '\n' !in record.metric) { "a report line is one line" }
            appended.write("${record.id}\t${record.metric}\t${record.line}\n".toByteArray(Charsets.UTF_8))
            appendedCount++
            appendedBytes += record.size
        }

        override fun head(count: Int): List<OutboxRecord> =
            outbox.read(cursor.gen, cursor.start + droppedBytes, cursor.end, minOf(count.toLong(), cursor.count - droppedCount)).map { it.first }

        override fun dropHead(count: Int) {
            val n = minOf(count.toLong(), cursor.count - droppedCount)
            val recs = outbox.read(cursor.gen, cursor.start + droppedBytes, cursor.end, n)
            droppedBytes += recs.sumOf { it.second }
            droppedSize += recs.sumOf { it.first.size }
            droppedCount += n
        }
    }

    // -- writing --------------------------------------------------------------------------------------------------

    /**
     * [commit], and when that fails for lack of room in a transaction that appends no report, the reserve's room
     * given to a second attempt, which leaves the log's compaction to a later write (the live reports it copies may
     * be larger than the reserve). A record never spends the reserve: the room is kept for what frees room.
     * Whether it wrote.
     */
    private fun commitOrRelease(snapshot: Snapshot, tx: Tx): Boolean {
        try {
            return commit(snapshot, tx)
        } catch (e: IOException) {
            if (!Reserve.isDiskFull(e, directory)) throw e
            if (tx.appendedCount > 0) {
                val then = if (reserve.file.exists()) {
                    "uploading what waits still works and frees room (the store keeps a reserve for it)"
                } else {
                    "free some room on the device and try again"
                }
                throw LedgerException("$directory: the disk is full (${e.message}): nothing was recorded or charged; $then", e)
            }
            if (!reserve.release()) throw diskFull(e)
            reserveReleases.incrementAndGet()
        }
        try {
            return commit(snapshot, tx, compact = false)
        } catch (e: IOException) {
            if (Reserve.isDiskFull(e, directory)) throw diskFull(e)
            throw e
        }
    }

    private fun diskFull(e: IOException) = LedgerException(
        "$directory: the disk is full (${e.message}) and the store's reserve is spent: nothing was written; free " +
            "some room on the device and try again",
        e,
    )

    /**
     * Commits what [tx] changed, if anything: the appended reports first, flushed; then the state counting them;
     * the log is rewritten when its dropped head is large and [compact]. Whether it wrote. It changes neither
     * [snapshot] nor [tx], so a failed commit of a transaction without reports may run again (what the failed
     * attempt left, a temporary file or a half-written log, was never committed, and the next sweep removes it).
     */
    private fun commit(snapshot: Snapshot, tx: Tx, compact: Boolean = true): Boolean {
        val next = tx.state
        val changed = tx.appendedCount > 0 || tx.droppedCount > 0 ||
            (next == null) != (snapshot.device == null) || (next != null && Json.write(next.toJson()) != snapshot.deviceText)
        if (!changed || next == null) return false // nothing to write (a state is never deleted)
        sweep(snapshot)
        val bytes = tx.pendingBytes
        val cursor = tx.cursor.copy()
        cursor.start += tx.droppedBytes
        cursor.count -= tx.droppedCount
        cursor.first += tx.droppedCount
        cursor.bytes = bytes
        if (tx.appendedCount > 0) outbox.append(cursor, tx.appended.toByteArray(), tx.appendedCount)
        val retired = outbox.rotate(cursor, compact, compactBytes)
        val doc = linkedMapOf(
            "device" to next.toJson(),
            "outbox" to listOf(cursor.gen, cursor.start, cursor.end, cursor.first, cursor.count, cursor.bytes),
        )
        writeAtomically(stateFile, Json.write(doc).toByteArray(Charsets.UTF_8))
        retired?.delete()
        return true
    }

    private fun writeAtomically(target: File, bytes: ByteArray) {
        val tmp = File(directory, "${target.name}.${java.lang.Long.toHexString(System.nanoTime())}.tmp")
        try {
            FileOutputStream(tmp).use { out ->
                out.write(bytes)
                out.fd.sync()
                syncs.incrementAndGet()
            }
            if (!tmp.renameTo(target)) throw LedgerException("cannot replace $target")
        } catch (e: IOException) {
            tmp.delete()
            throw e
        }
        DirectorySync.sync(directory)
        syncs.incrementAndGet()
    }

    /** Removes what a killed process left (temporary files, logs no state refers to), before a commit. The reserve
     * stays; a temporary reserve file is the one stray that is not a trace. */
    private fun sweep(snapshot: Snapshot) {
        val current = if (snapshot.device != null) outbox.file(snapshot.cursor.gen).name else null
        for (name in directory.list() ?: emptyArray()) {
            val stray = (isTrace(name) && name != current) || Reserve.isTemporary(name)
            if (stray) File(directory, name).delete()
        }
    }

    private companion object {
        const val STATE = "state.json"

        /** A file a state leaves (an outbox log, a temporary state file); not `lock`, nor the reserve and its
         * temporary files, which hold no data. */
        fun isTrace(name: String): Boolean = OutboxLog.isLog(name) || (name.startsWith("$STATE.") && name.endsWith(".tmp"))
    }
}
