package io.github.ldptelemetry.client.ledger

import io.github.ldptelemetry.client.LedgerException
import io.github.ldptelemetry.client.internal.Json
import java.io.ByteArrayOutputStream
import java.io.Closeable
import java.io.File
import java.io.FileOutputStream
import java.io.IOException
import java.io.RandomAccessFile
import java.nio.channels.FileChannel
import java.nio.channels.FileLock
import java.nio.channels.OverlappingFileLockException
import java.util.concurrent.ConcurrentHashMap
import java.util.concurrent.TimeUnit
import java.util.concurrent.locks.ReentrantLock

/** One report in the outbox: its local [id], its [metric] and its upload [line] (an envelope). */
public class OutboxRecord(public val id: Long, public val metric: String, public val line: String)

/** What a [StateStore] transaction sees and changes. Nothing is written unless the transaction's block returns. */
public interface StoreTransaction {
    /** The device's state: `null` before the first commit. Set it to what must be committed. */
    public var state: DeviceState?

    /** Reports committed and not yet dropped. */
    public val pendingCount: Long

    /** Adds a report to the outbox, committed with [state]. */
    public fun append(record: OutboxRecord)

    /** The [count] oldest committed reports (fewer if fewer are waiting). */
    public fun head(count: Int): List<OutboxRecord>

    /** Drops the [count] oldest committed reports (they were acknowledged). */
    public fun dropHead(count: Int)
}

/**
 * Where a device's state and outbox live. [transact] runs a block exclusively (across threads, and for [FileStore]
 * across processes) and commits what it changed atomically: the state and the reports it appended are both kept,
 * or, if the block throws or the process dies first, neither. A charge and the report it pays for are therefore
 * written together or not at all.
 */
public interface StateStore : Closeable {
    public fun <T> transact(block: (StoreTransaction) -> T): T

    override fun close() {}
}

/** The state in memory (simulations, tests, an app that keeps nothing across restarts). */
public class MemoryStore : StateStore {
    private val lock = ReentrantLock()
    private var stateText: String? = null
    private val outbox = ArrayDeque<OutboxRecord>()

    override fun <T> transact(block: (StoreTransaction) -> T): T {
        lock.lock()
        try {
            val appended = ArrayList<OutboxRecord>()
            var dropped = 0
            val tx = object : StoreTransaction {
                override var state: DeviceState? = stateText?.let { DeviceState.parse(it) }
                override val pendingCount: Long get() = (outbox.size - dropped).toLong()
                override fun append(record: OutboxRecord) {
                    appended.add(record)
                }
                override fun head(count: Int): List<OutboxRecord> = outbox.drop(dropped).take(count)
                override fun dropHead(count: Int) {
                    dropped = minOf(outbox.size, dropped + count)
                }
            }
            val out = block(tx)
            stateText = tx.state?.let { Json.write(it.toJson()) }
            repeat(dropped) { outbox.removeFirst() }
            outbox.addAll(appended)
            return out
        } finally {
            lock.unlock()
        }
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
 * - `lock`: an OS file lock ([FileChannel.lock]) taken for every transaction. The OS releases it when its process
 *   dies, however it dies, so a killed process never locks the others out; threads of one process wait on an
 *   in-process lock first (an OS lock is held per process).
 *
 * Temporary files and unreferenced logs a killed process left are removed by the next transaction. A state file
 * that cannot be read raises [LedgerException]: the budget is never silently reset.
 *
 * [lockTimeoutMillis] bounds the wait for the lock ([LedgerException] after it).
 */
public class FileStore @JvmOverloads constructor(
    public val directory: File,
    private val lockTimeoutMillis: Long = 30_000,
) : StateStore {
    private val stateFile = File(directory, "state.json")
    private val lockFile = File(directory, "lock")
    private val threadLock: ReentrantLock
    @Volatile private var swept = false

    /** The dropped head of the log beyond which it is rewritten (when also half the file). */
    internal var compactBytes: Long = 1L shl 20

    init {
        if (!directory.isDirectory && !directory.mkdirs() && !directory.isDirectory) {
            throw LedgerException("cannot create the state folder $directory")
        }
        threadLock = LOCKS.getOrPut(directory.canonicalPath) { ReentrantLock() }
    }

    override fun <T> transact(block: (StoreTransaction) -> T): T {
        val deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(lockTimeoutMillis)
        if (!threadLock.tryLock(lockTimeoutMillis, TimeUnit.MILLISECONDS)) {
            throw LedgerException("$directory: another thread held the state for over $lockTimeoutMillis ms")
        }
        try {
            RandomAccessFile(lockFile, "rw").use { raf ->
                val osLock = osLock(raf.channel, deadline)
                try {
                    if (!swept) sweep()
                    return runLocked(block)
                } finally {
                    osLock.release()
                }
            }
        } finally {
            threadLock.unlock()
        }
    }

    private fun osLock(channel: FileChannel, deadline: Long): FileLock {
        var pause = 1L
        while (true) {
            val lock = try {
                channel.tryLock()
            } catch (e: OverlappingFileLockException) {
                null
            }
            if (lock != null) return lock
            if (System.nanoTime() > deadline) throw LedgerException("$directory: another process held the state for over $lockTimeoutMillis ms")
            Thread.sleep(pause)
            pause = minOf(pause * 2, 50)
        }
    }

    /** Where the committed reports are: log generation, byte range, id of the first, count. */
    private class Cursor(var gen: Long, var start: Long, var end: Long, var first: Long, var count: Long)

    private fun log(gen: Long) = File(directory, "outbox.$gen.log")

    private fun <T> runLocked(block: (StoreTransaction) -> T): T {
        var device: DeviceState? = null
        val cursor = Cursor(0, 0, 0, 1, 0)
        if (stateFile.exists()) {
            val doc = try {
                Json.parse(stateFile.readText(Charsets.UTF_8))
            } catch (e: IllegalArgumentException) {
                throw LedgerException("$stateFile is damaged: ${e.message}")
            }
            val d = doc as? Map<*, *> ?: throw LedgerException("$stateFile is damaged: not an object")
            device = DeviceState.fromJson(d["device"])
            val o = d["outbox"] as? List<*>
            if (o == null || o.size != 5 || o.any { it !is Long }) throw LedgerException("$stateFile is damaged: outbox cursor")
            cursor.gen = o[0] as Long
            cursor.start = o[1] as Long
            cursor.end = o[2] as Long
            cursor.first = o[3] as Long
            cursor.count = o[4] as Long
            if (cursor.count > 0 && log(cursor.gen).length() < cursor.end) {
                throw LedgerException("${log(cursor.gen)} is damaged: shorter than its committed ${cursor.end} bytes")
            }
        }
        val appended = ByteArrayOutputStream()
        var appendedCount = 0L
        var droppedBytes = 0L
        var droppedCount = 0L
        val tx = object : StoreTransaction {
            override var state: DeviceState? = device
            override val pendingCount: Long get() = cursor.count - droppedCount + appendedCount

            override fun append(record: OutboxRecord) {
                require('\n' !in record.line && '\t' !in record.metric) { "a report line is one line" }
                appended.write("${record.id}\t${record.metric}\t${record.line}\n".toByteArray(Charsets.UTF_8))
                appendedCount++
            }

            override fun head(count: Int): List<OutboxRecord> =
                readRecords(cursor.gen, cursor.start + droppedBytes, cursor.end, minOf(count.toLong(), cursor.count - droppedCount).toInt()).map { it.first }

            override fun dropHead(count: Int) {
                val n = minOf(count.toLong(), cursor.count - droppedCount).toInt()
                val recs = readRecords(cursor.gen, cursor.start + droppedBytes, cursor.end, n)
                droppedBytes += recs.sumOf { it.second }
                droppedCount += n
            }
        }
        val out = block(tx)
        val next = tx.state ?: return out
        // the reports first, flushed; then the state that counts them
        cursor.start += droppedBytes
        cursor.count -= droppedCount
        cursor.first += droppedCount
        if (appendedCount > 0) {
            RandomAccessFile(log(cursor.gen), "rw").use { raf ->
                if (raf.length() != cursor.end) raf.setLength(cursor.end)
                raf.seek(cursor.end)
                raf.write(appended.toByteArray())
                raf.fd.sync()
            }
            cursor.end += appended.size()
            cursor.count += appendedCount
        }
        var retired: File? = null
        if (cursor.count == 0L && cursor.end > 0) {
            retired = log(cursor.gen)
            cursor.gen++
            cursor.start = 0
            cursor.end = 0
        } else if (cursor.start > compactBytes && cursor.start >= cursor.end - cursor.start) {
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
                }
            }
            cursor.gen++
            cursor.end -= cursor.start
            cursor.start = 0
        }
        val doc = linkedMapOf("device" to next.toJson(), "outbox" to listOf(cursor.gen, cursor.start, cursor.end, cursor.first, cursor.count))
        writeAtomically(stateFile, Json.write(doc).toByteArray(Charsets.UTF_8))
        retired?.delete()
        return out
    }

    /** Up to [n] records from byte [from] (below [end]) of log [gen], each with its length in bytes. */
    private fun readRecords(gen: Long, from: Long, end: Long, n: Int): List<Pair<OutboxRecord, Long>> {
        if (n <= 0) return emptyList()
        val out = ArrayList<Pair<OutboxRecord, Long>>(n)
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
        return out
    }

    private fun writeAtomically(target: File, bytes: ByteArray) {
        val tmp = File(directory, "${target.name}.${java.lang.Long.toHexString(System.nanoTime())}.tmp")
        try {
            FileOutputStream(tmp).use { out ->
                out.write(bytes)
                out.fd.sync()
            }
            if (!tmp.renameTo(target)) throw LedgerException("cannot replace $target")
        } catch (e: IOException) {
            tmp.delete()
            throw e
        }
        DirectorySync.sync(directory)
    }

    /** Removes what a killed process left: temporary files and logs no state refers to (under the lock). */
    private fun sweep() {
        val readable = !stateFile.exists() || try {
            Json.parse(stateFile.readText(Charsets.UTF_8)) is Map<*, *>
        } catch (e: IllegalArgumentException) {
            false // damaged: the transaction says so; keep every log for whoever repairs it
        }
        val current = if (readable && stateFile.exists()) {
            ((Json.parse(stateFile.readText(Charsets.UTF_8)) as Map<*, *>)["outbox"] as? List<*>)?.getOrNull(0) as? Long
        } else {
            null
        }
        for (f in directory.listFiles() ?: emptyArray()) {
            val name = f.name
            val stray = name.endsWith(".tmp") ||
                (readable && name.startsWith("outbox.") && name.endsWith(".log") && name != "outbox.$current.log")
            if (stray) f.delete()
        }
        swept = true
    }

    private companion object {
        val LOCKS = ConcurrentHashMap<String, ReentrantLock>()
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
