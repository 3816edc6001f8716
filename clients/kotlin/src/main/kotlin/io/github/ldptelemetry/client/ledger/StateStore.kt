package io.github.ldptelemetry.client.ledger

import io.github.ldptelemetry.client.LedgerException
import io.github.ldptelemetry.client.internal.Json
import java.io.ByteArrayOutputStream
import java.io.Closeable
import java.io.File
import java.io.FileNotFoundException
import java.io.FileOutputStream
import java.io.IOException
import java.io.RandomAccessFile
import java.nio.channels.ClosedChannelException
import java.nio.channels.FileChannel
import java.nio.channels.FileLock
import java.nio.channels.OverlappingFileLockException
import java.util.concurrent.ConcurrentHashMap
import java.util.concurrent.Executors
import java.util.concurrent.ScheduledExecutorService
import java.util.concurrent.ThreadFactory
import java.util.concurrent.TimeUnit
import java.util.concurrent.atomic.AtomicInteger
import java.util.concurrent.locks.ReentrantLock
import kotlin.concurrent.withLock

/** One report in the outbox: its local [id], its [metric] and its upload [line] (an envelope). */
public class OutboxRecord(public val id: Long, public val metric: String, public val line: String) {
    /** What the report counts against the outbox's cap: its line's UTF-8 bytes and a newline (counted, not encoded). */
    public val size: Long get() = utf8Length(line) + 1L

    internal companion object {
        fun utf8Length(s: String): Long {
            var n = 0L
            var i = 0
            while (i < s.length) {
                val c = s[i]
                n += when {
                    c.code < 0x80 -> 1
                    c.code < 0x800 -> 2
                    Character.isHighSurrogate(c) && i + 1 < s.length && Character.isLowSurrogate(s[i + 1]) -> { i++; 4 }
                    Character.isSurrogate(c) -> 1 // a lone surrogate: written as '?', as the log's encoder writes it
                    else -> 3
                }
                i++
            }
            return n
        }
    }
}

/** What a [StateStore] read sees: the committed state and outbox. */
public interface StoreView {
    /** The device's state: `null` before the first commit. */
    public val state: DeviceState?

    /** Reports committed and not yet dropped. */
    public val pendingCount: Long

    /** What the pending reports count against the outbox's cap: each one's line in UTF-8 bytes, plus one. */
    public val pendingBytes: Long

    /** The [count] oldest pending reports (fewer if fewer are waiting). */
    @Throws(LedgerException::class)
    public fun head(count: Int): List<OutboxRecord>
}

/** What a [StateStore] transaction sees and changes. Nothing is written unless the transaction's block returns. */
public interface StoreTransaction : StoreView {
    /** The device's state: `null` before the first commit. Set it to what must be committed. */
    override var state: DeviceState?

    /** Adds a report to the outbox, committed with [state]. */
    public fun append(record: OutboxRecord)

    /** Drops the [count] oldest pending reports (acknowledged, or deleted by an opt-out). */
    @Throws(LedgerException::class)
    public fun dropHead(count: Int)
}

/**
 * Where a device's state and outbox live. [transact] runs a block exclusively (across threads, and for [FileStore]
 * across processes) and commits what it changed atomically: the state and the reports it appended are both kept,
 * or, if the block throws or the process dies first, neither. A charge and the report it pays for are therefore
 * written together or not at all. A transaction that changed nothing writes nothing. [read] runs a block on the
 * committed state and never writes.
 */
public interface StateStore : Closeable {
    @Throws(LedgerException::class)
    public fun <T> transact(block: (StoreTransaction) -> T): T

    @Throws(LedgerException::class)
    public fun <T> read(block: (StoreView) -> T): T

    override fun close() {}
}

/** The state in memory (simulations, tests, an app that keeps nothing across restarts). */
public class MemoryStore : StateStore {
    private val lock = ReentrantLock()
    private var stateText: String? = null
    private val outbox = ArrayDeque<OutboxRecord>()
    private var outboxBytes = 0L

    /** A transaction on the committed state (a copy: nothing changes until [commit]). */
    private inner class Tx : StoreTransaction {
        override var state: DeviceState? = stateText?.let { DeviceState.parse(it) }
        val appended = ArrayList<OutboxRecord>()
        var dropped = 0
        var droppedBytes = 0L
        override val pendingCount: Long get() = (outbox.size - dropped + appended.size).toLong()
        override val pendingBytes: Long get() = outboxBytes - droppedBytes + appended.sumOf { it.size }
        override fun append(record: OutboxRecord) {
            appended.add(record)
        }
        override fun head(count: Int): List<OutboxRecord> = outbox.drop(dropped).take(count)
        override fun dropHead(count: Int) {
            val n = minOf(count, outbox.size - dropped)
            for (i in dropped until dropped + n) droppedBytes += outbox[i].size
            dropped += n
        }

        fun commit() {
            stateText = state?.let { Json.write(it.toJson()) }
            repeat(dropped) { outbox.removeFirst() }
            outbox.addAll(appended)
            outboxBytes += appended.sumOf { it.size } - droppedBytes
        }
    }

    @Throws(LedgerException::class)
    override fun <T> read(block: (StoreView) -> T): T = lock.withLock { block(Tx()) }

    @Throws(LedgerException::class)
    override fun <T> transact(block: (StoreTransaction) -> T): T = lock.withLock {
        val tx = Tx()
        block(tx).also { tx.commit() }
    }
}

/**
 * The state in a folder of files, safe against crashes and shared by the processes of one app:
 *
 * - `state.json`: the [DeviceState] and the outbox's bookkeeping, replaced atomically: written to a temporary
 *   file, flushed to the disk (`fsync`), renamed over the old one, and the folder flushed.
 * - `outbox.<n>.log`: the reports, appended (one line each) and flushed before the state that counts them is
 *   committed. Bytes past the committed end (a crash between the two) are ignored and cut by the next commit, so a
 *   report exists only once its charge does. Acknowledged reports are dropped by moving the committed start; the
 *   log is rewritten into `outbox.<n+1>.log` once its dropped head is over 1 MiB and half the file.
 * - `lock`: OS file locks ([FileChannel.lock]) taken for every transaction and read. The OS releases them when
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
    private val lockFile = File(directory, "lock")
    private val reserve = Reserve(directory)
    private val threadLock: ReentrantLock

    /** The dropped head of the log beyond which it is rewritten (when also half the file). */
    internal var compactBytes: Long = 1L shl 20

    /** Flushes (`fsync`) this store has made: the tests check that reads make none. */
    internal val syncs = java.util.concurrent.atomic.AtomicLong()

    /** Commits this store retried on a full disk with the reserve's room: the tests check that one was needed. */
    internal val reserveReleases = java.util.concurrent.atomic.AtomicLong()

    init {
        require(lockTimeoutMillis >= 0) { "lockTimeoutMillis must be >= 0, got $lockTimeoutMillis" }
        if (!directory.isDirectory && !directory.mkdirs() && !directory.isDirectory) {
            throw LedgerException("cannot create the state folder $directory")
        }
        threadLock = LOCKS.getOrPut(directory.canonicalPath) { ReentrantLock(true) }
    }

    @Throws(LedgerException::class)
    override fun <T> transact(block: (StoreTransaction) -> T): T = locked(write = true) {
        val snapshot = load()
        val tx = Tx(snapshot)
        val out = block(tx)
        if (commitOrRelease(snapshot, tx)) reserve.ensure()
        out
    }

    @Throws(LedgerException::class)
    override fun <T> read(block: (StoreView) -> T): T = locked(write = false) { block(Tx(load())) }

    // -- the lock ---------------------------------------------------------------------------------------------------

    private fun timeout(): Nothing = throw LedgerException("$directory: another process held the state for over $lockTimeoutMillis ms")

    /**
     * Runs [body] holding the in-process lock and the folder's OS lock. A reader of a folder it may not write (a
     * read-only `lock` file) takes the lock shared, and a reader of a folder without a state writes no lock file.
     */
    private fun <T> locked(write: Boolean, body: () -> T): T {
        val deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(lockTimeoutMillis)
        if (!threadLock.tryLock(lockTimeoutMillis, TimeUnit.MILLISECONDS)) {
            throw LedgerException("$directory: another thread held the state for over $lockTimeoutMillis ms")
        }
        try {
            var shared = false
            val raf = when {
                write -> RandomAccessFile(lockFile, "rw")
                !lockFile.exists() && !stateFile.exists() -> null // nothing to read, nobody to wait for
                else -> try {
                    RandomAccessFile(lockFile, "rw") // opened, not written (made only for a state that has none)
                } catch (e: FileNotFoundException) { // a read-only folder
                    shared = true
                    if (lockFile.exists()) RandomAccessFile(lockFile, "r") else null
                }
            }
            if (raf == null) return body()
            return raf.use { withOsLock(raf.channel, shared, deadline, body) }
        } catch (e: LedgerException) {
            throw e
        } catch (e: IOException) {
            throw LedgerException("$directory: ${e.javaClass.simpleName}: ${e.message}", e)
        } finally {
            threadLock.unlock()
        }
    }

    /**
     * [body] under the OS lock (the lock file's second byte), reached through the turnstile (its first byte, held
     * while waiting): whoever waits is next, and the process that released the lock queues behind it. A read of a
     * lock file it cannot write takes the lock shared, without the turnstile (a shared lock needs no write access).
     */
    private fun <T> withOsLock(channel: FileChannel, shared: Boolean, deadline: Long, body: () -> T): T {
        val lock = if (shared) {
            acquire(channel, 1, true, deadline)
        } else {
            val gate = acquire(channel, 0, false, deadline)
            try {
                acquire(channel, 1, false, deadline)
            } finally {
                if (channel.isOpen) gate.release()
            }
        }
        try {
            return body()
        } finally {
            if (channel.isOpen) lock.release()
        }
    }

    /** One byte of the lock file, waiting (blocked in the OS, woken when it is released) until [deadline]. */
    private fun acquire(channel: FileChannel, position: Long, shared: Boolean, deadline: Long): FileLock {
        val now = try {
            channel.tryLock(position, 1, shared)
        } catch (e: OverlappingFileLockException) {
            null
        }
        if (now != null) return now
        val left = deadline - System.nanoTime()
        if (left <= 0) timeout()
        // FileChannel.lock has no timeout: a watchdog closes the channel at the deadline, which ends the wait
        val phase = AtomicInteger(WAITING)
        val timer = WATCHDOG.schedule({ if (phase.compareAndSet(WAITING, TIMED_OUT)) channel.close() }, left, TimeUnit.NANOSECONDS)
        try {
            val lock = channel.lock(position, 1, shared)
            if (phase.compareAndSet(WAITING, HELD)) return lock
            timeout()
        } catch (e: ClosedChannelException) {
            if (phase.get() == TIMED_OUT) timeout()
            throw e
        } catch (e: OverlappingFileLockException) {
            throw LedgerException("$directory: this process locks the state folder elsewhere (two FileStores on one folder through different paths?)")
        } finally {
            timer.cancel(false)
        }
    }

    // -- reading --------------------------------------------------------------------------------------------------

    /** Where the committed reports are: log generation, byte range, id of the first, count, and their size as the
     * outbox cap counts it (null in a state written before the cap existed: counted when first needed). */
    private class Cursor(var gen: Long, var start: Long, var end: Long, var first: Long, var count: Long, var bytes: Long?) {
        fun copy() = Cursor(gen, start, end, first, count, bytes)
    }

    /** The committed state: its document's text as it would be written again, and the outbox cursor. */
    private class Snapshot(val device: DeviceState?, val deviceText: String?, val cursor: Cursor)

    private fun log(gen: Long) = File(directory, "outbox.$gen.log")

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
            return Snapshot(null, null, Cursor(0, 0, 0, 1, 0, 0))
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
        val c = Cursor(o[0] as Long, o[1] as Long, o[2] as Long, o[3] as Long, o[4] as Long, o.getOrNull(5) as Long?)
        if (c.count > 0 && log(c.gen).length() < c.end) {
            throw LedgerException("${log(c.gen)} is damaged: shorter than its committed ${c.end} bytes")
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
                val committed = cursor.bytes ?: readRecords(cursor.gen, cursor.start, cursor.end, cursor.count).sumOf { it.first.size }.also { cursor.bytes = it }
                return committed - droppedSize + appendedBytes
            }

        override fun append(record: OutboxRecord) {
            require('\n' !in record.line && '\t' !in record.metric && '\n' !in record.metric) { "a report line is one line" }
            appended.write("${record.id}\t${record.metric}\t${record.line}\n".toByteArray(Charsets.UTF_8))
            appendedCount++
            appendedBytes += record.size
        }

        override fun head(count: Int): List<OutboxRecord> =
            readRecords(cursor.gen, cursor.start + droppedBytes, cursor.end, minOf(count.toLong(), cursor.count - droppedCount)).map { it.first }

        override fun dropHead(count: Int) {
            val n = minOf(count.toLong(), cursor.count - droppedCount)
            val recs = readRecords(cursor.gen, cursor.start + droppedBytes, cursor.end, n)
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
        if (tx.appendedCount > 0) {
            RandomAccessFile(log(cursor.gen), "rw").use { raf ->
                if (raf.length() != cursor.end) raf.setLength(cursor.end) // a torn tail a killed process left
                raf.seek(cursor.end)
                raf.write(tx.appended.toByteArray())
                raf.fd.sync()
                syncs.incrementAndGet()
            }
            cursor.end += tx.appended.size()
            cursor.count += tx.appendedCount
        }
        var retired: File? = null
        if (cursor.count == 0L && cursor.end > 0) {
            retired = log(cursor.gen)
            cursor.gen++
            cursor.start = 0
            cursor.end = 0
        } else if (compact && cursor.start > compactBytes && cursor.start >= cursor.end - cursor.start) {
            retired = log(cursor.gen)
            val fresh = log(cursor.gen + 1)
            RandomAccessFile(retired, "r").use { src ->
                FileOutputStream(fresh).use { dst ->
                    src.seek(cursor.start)
                    val buf = ByteArray(64 * 1024)
                    var left = cursor.end - cursor.start
                    while (left > 0) {
                        val n = src.read(buf, 0, minOf(buf.size.toLong(), left).toInt())
                        if (n < 0) throw LedgerException("$retired ended early")
                        dst.write(buf, 0, n)
                        left -= n
                    }
                    dst.fd.sync()
                    syncs.incrementAndGet()
                }
            }
            cursor.gen++
            cursor.end -= cursor.start
            cursor.start = 0
        }
        val doc = linkedMapOf(
            "device" to next.toJson(),
            "outbox" to listOf(cursor.gen, cursor.start, cursor.end, cursor.first, cursor.count, cursor.bytes),
        )
        writeAtomically(stateFile, Json.write(doc).toByteArray(Charsets.UTF_8))
        retired?.delete()
        return true
    }

    /** Up to [n] records from byte [from] (below [end]) of log [gen], each with its length in bytes. */
    private fun readRecords(gen: Long, from: Long, end: Long, n: Long): List<Pair<OutboxRecord, Long>> {
        if (n <= 0) return emptyList()
        val out = ArrayList<Pair<OutboxRecord, Long>>(minOf(n, 1L shl 16).toInt())
        try {
            RandomAccessFile(log(gen), "r").use { raf ->
                raf.seek(from)
                val input = java.io.BufferedInputStream(java.io.FileInputStream(raf.fd), 64 * 1024)
                var pos = from
                val line = ByteArrayOutputStream()
                while (out.size < n && pos < end) {
                    line.reset()
                    while (true) {
                        val b = input.read()
                        if (b < 0) throw LedgerException("${log(gen)} is damaged: a record is cut short")
                        pos++
                        if (b == '\n'.code) break
                        line.write(b)
                    }
                    val text = line.toString("UTF-8")
                    val parts = text.split('\t', limit = 3)
                    val id = parts.getOrNull(0)?.toLongOrNull()
                    if (parts.size != 3 || id == null) throw LedgerException("${log(gen)} is damaged: a record is malformed")
                    out.add(OutboxRecord(id, parts[1], parts[2]) to (line.size() + 1L))
                }
            }
        } catch (e: FileNotFoundException) {
            throw LedgerException("${log(gen)} is missing: its reports are committed in $stateFile", e)
        }
        return out
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
        val current = if (snapshot.device != null) "outbox.${snapshot.cursor.gen}.log" else null
        for (name in directory.list() ?: emptyArray()) {
            val stray = (isTrace(name) && name != current) || Reserve.isTemporary(name)
            if (stray) File(directory, name).delete()
        }
    }

    private companion object {
        const val STATE = "state.json"
        val LOG = Regex("outbox\\.[0-9]+\\.log")
        const val WAITING = 0
        const val HELD = 1
        const val TIMED_OUT = 2

        val LOCKS = ConcurrentHashMap<String, ReentrantLock>()

        /** Closes the lock channel of a wait past its deadline. */
        val WATCHDOG: ScheduledExecutorService = Executors.newSingleThreadScheduledExecutor(
            ThreadFactory { r -> Thread(r, "ldp-store-lock-watchdog").apply { isDaemon = true } },
        )

        /** A file a state leaves (an outbox log, a temporary state file); not `lock`, nor the reserve and its
         * temporary files, which hold no data. */
        fun isTrace(name: String): Boolean = LOG.matches(name) || (name.startsWith("$STATE.") && name.endsWith(".tmp"))
    }
}

/**
 * Flushes a folder's entries (a rename) to the disk where the platform allows it: a folder can be opened for
 * `fsync` only through `java.nio.file` (Android API 26 and later, every JVM); on Android 24 and 25 the rename is
 * durable once the file system commits its journal (seconds), and a crash before that leaves the old state whole.
 */
internal object DirectorySync {
    private val available: Boolean = try {
        Class.forName("java.nio.file.Files")
        true
    } catch (e: Throwable) {
        false
    }

    fun sync(dir: File) {
        if (!available) return
        try {
            NioSync.sync(dir)
        } catch (e: IOException) {
            // some file systems refuse to open a folder for reading; the rename stands, its durability is the FS's
        } catch (e: LinkageError) {
            // no java.nio.file after all
        }
    }
}

/** Loaded only where `java.nio.file` exists (see [DirectorySync]). */
internal object NioSync {
    fun sync(dir: File) {
        FileChannel.open(java.nio.file.Paths.get(dir.path), java.nio.file.StandardOpenOption.READ).use { it.force(true) }
    }
}
