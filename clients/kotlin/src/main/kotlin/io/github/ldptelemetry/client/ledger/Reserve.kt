package io.github.ldptelemetry.client.ledger

import java.io.File
import java.io.FileOutputStream
import java.io.IOException

/**
 * Room a [FileStore] keeps for a full disk, so that an app can still open its store, upload and acknowledge
 * (docs/client.md, "On the device": reads write nothing, and on a full disk the store stays usable).
 *
 * Opening a store and reading it need no room, but a transaction that changes the state rewrites `state.json` (a
 * temporary file renamed over it), which does. On a disk that something else filled, acknowledging an upload,
 * which is what frees room, would then fail. So:
 *
 * - after a write transaction that succeeds, [ensure] leaves `state.reserve`, [BYTES] zero bytes in the store's
 *   folder, when it is missing (or short) and the disk has room; when it has none, nothing is kept and the next
 *   write tries again. Reads never call it: they write nothing.
 * - a write transaction that appends no report (acknowledging, pinning or splitting a batch, opting out or in) and
 *   fails because the disk is full ([isDiskFull]) deletes the reserve ([release]) and commits once more.
 * - a record never touches the reserve: on a full disk it fails, nothing charged.
 *
 * The reserve holds no data: it is not a trace of a state (a missing `state.json` beside it opens as a new device),
 * and the sweep of a write removes only the temporary files a killed [ensure] left (`state.reserve.<hex>.tmp`).
 * Like everything in the folder it is used under the store's lock.
 */
internal class Reserve(private val directory: File) {
    /** The reserve: `<folder>/state.reserve`. */
    val file: File = File(directory, NAME)

    /**
     * Makes the reserve when it is missing or short and the disk has room: written to a temporary file, then renamed
     * into place. Failing for lack of room leaves nothing behind (the next write tries again). No `fsync`: a
     * reserve that a crash cut short is made again by the next write.
     */
    fun ensure() {
        if (file.length() >= BYTES) return
        val free = directory.usableSpace // 0 when full, or when the platform cannot tell: then the write decides
        if (free in 1 until BYTES) return // not enough room, known without writing to the brim
        val tmp = File(directory, "$NAME.${java.lang.Long.toHexString(System.nanoTime())}.tmp")
        try {
            FileOutputStream(tmp).use { out ->
                val zeros = ByteArray(CHUNK)
                repeat(BYTES.toInt() / CHUNK) { out.write(zeros) }
            }
            if (!tmp.renameTo(file)) tmp.delete()
        } catch (e: IOException) { // no room now: made after a later write
            tmp.delete()
        }
    }

    /** Deletes the reserve, giving its room to the commit that needs it; whether there was one. */
    fun release(): Boolean = file.delete()

    companion object {
        /** The reserve's name in the store's folder. */
        const val NAME = "state.reserve"

        /** The reserve's size, 256 KiB: many rewrites of `state.json`, and room to spare for the file system. */
        const val BYTES: Long = 256L * 1024

        private const val CHUNK = 64 * 1024

        /** What the OS says when a write found no room: Linux and Android (`ENOSPC`, `EDQUOT`), and Windows. */
        private val FULL = listOf("No space left on device", "ENOSPC", "Disk quota exceeded", "EDQUOT", "not enough space on the disk")

        /** A temporary file a killed [ensure] left: swept by the next write, never a trace of a state. */
        fun isTemporary(name: String): Boolean = name.startsWith("$NAME.") && name.endsWith(".tmp")

        /**
         * Whether [e] (or an exception it wraps) is a write that failed for lack of room: `java.io`'s
         * `IOException`, `java.nio.file.FileSystemException` and Android's `ErrnoException` all name it in their
         * message. An `fsync` names no cause (`SyncFailedException`): it counts when the disk of [directory] has
         * less room left than a reserve.
         */
        fun isDiskFull(e: Throwable, directory: File): Boolean {
            val seen = HashSet<Throwable>()
            var cause: Throwable? = e
            while (cause != null && seen.add(cause)) {
                val message = cause.message
                if (message != null && FULL.any { message.contains(it, ignoreCase = true) }) return true
                if (cause is java.io.SyncFailedException && directory.usableSpace < BYTES) return true
                cause = cause.cause
            }
            return false
        }
    }
}
