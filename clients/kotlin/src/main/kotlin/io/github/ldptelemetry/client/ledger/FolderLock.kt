package io.github.ldptelemetry.client.ledger

import io.github.ldptelemetry.client.LedgerException
import java.io.File
import java.io.FileNotFoundException
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

/**
 * The lock of a [FileStore]'s folder: OS file locks ([FileChannel.lock]) on `<folder>/lock`, taken for every
 * transaction and read. The OS releases them when their process dies, however it dies, so a killed process never
 * locks the others out. The lock is handed over fairly: a process that waits holds a turnstile (the lock file's first
 * byte) while it blocks on the lock (its second byte), and a process that just released the lock must pass the
 * turnstile again, behind it. Threads of one process queue on a fair in-process lock first (an OS lock is held per
 * process), one per folder (by its canonical path), shared by every store on it.
 *
 * [timeoutMillis] bounds the wait for both ([LedgerException] after it). [stateFile] tells a read whether there is
 * anything to wait for.
 */
internal class FolderLock(
    private val directory: File,
    private val stateFile: File,
    private val timeoutMillis: Long,
) {
    private val lockFile = File(directory, "lock")
    private val threadLock: ReentrantLock = LOCKS.getOrPut(directory.canonicalPath) { ReentrantLock(true) }

    private fun timeout(): Nothing = throw LedgerException("$directory: another process held the state for over $timeoutMillis ms")

    /**
     * Runs [body] holding the in-process lock and the folder's OS lock. A reader of a folder it may not write (a
     * read-only `lock` file) takes the lock shared, and a reader of a folder without a state writes no lock file.
     * An [IOException] (of the lock or of [body]) is a [LedgerException] naming the folder.
     */
    fun <T> locked(write: Boolean, body: () -> T): T {
        val deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMillis)
        if (!threadLock.tryLock(timeoutMillis, TimeUnit.MILLISECONDS)) {
            throw LedgerException("$directory: another thread held the state for over $timeoutMillis ms")
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

    private companion object {
        const val WAITING = 0
        const val HELD = 1
        const val TIMED_OUT = 2

        /** The in-process lock of each folder, by canonical path. */
        val LOCKS = ConcurrentHashMap<String, ReentrantLock>()

        /** Closes the lock channel of a wait past its deadline. */
        val WATCHDOG: ScheduledExecutorService = Executors.newSingleThreadScheduledExecutor(
            ThreadFactory { r -> Thread(r, "ldp-store-lock-watchdog").apply { isDaemon = true } },
        )
    }
}
