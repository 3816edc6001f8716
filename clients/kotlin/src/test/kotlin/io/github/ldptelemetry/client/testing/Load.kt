package io.github.ldptelemetry.client.testing

import java.io.File
import java.nio.file.Files
import java.nio.file.LinkOption
import kotlin.concurrent.thread

/**
 * Busy threads, one per core unless told: a test that runs beside them runs as on a loaded machine (CI's 2 cores are
 * shared with other jobs). Stops when closed.
 */
class CpuHog(threads: Int = Runtime.getRuntime().availableProcessors()) : AutoCloseable {
    @Volatile private var running = true

    @Volatile var sink = 0L

    private val workers = (0 until threads).map { i ->
        thread(isDaemon = true, name = "cpu-hog-$i") {
            var x = i.toLong()
            while (running) {
                repeat(10_000) { x = x * 6364136223846793005L + 1442695040888963407L }
            }
            sink = x
        }
    }

    override fun close() {
        running = false
        workers.forEach { it.join() }
    }
}

/** Percentile [p] (0..100) of [values] (nearest rank). */
fun percentile(values: List<Double>, p: Double): Double {
    val sorted = values.sorted()
    val rank = Math.ceil(p / 100.0 * sorted.size).toInt().coerceIn(1, sorted.size)
    return sorted[rank - 1]
}

/** What a folder's files are: name to (size, modification time in ns, inode where the file system has one). */
fun snapshot(dir: File): Map<String, Triple<Long, Long, Any?>> = (dir.listFiles() ?: emptyArray()).associate { f ->
    val path = f.toPath()
    val inode = try {
        Files.getAttribute(path, "unix:ino", LinkOption.NOFOLLOW_LINKS)
    } catch (e: UnsupportedOperationException) {
        null
    }
    f.name to Triple(f.length(), Files.getLastModifiedTime(path).to(java.util.concurrent.TimeUnit.NANOSECONDS), inode)
}.toSortedMap()

/**
 * Runs [block] with [dir] and its files unwritable: immutable (`chattr +i`) when running as root (who ignores
 * permissions) and `chattr` works here, else read-only permissions. Returns false, running nothing, when neither
 * can be had.
 */
fun withReadOnly(dir: File, block: () -> Unit): Boolean {
    val files = listOf(dir) + (dir.listFiles() ?: emptyArray()).toList()
    val root = System.getProperty("user.name") == "root"
    if (root) {
        val set = try {
            ProcessBuilder(listOf("chattr", "+i") + files.map { it.path }).redirectErrorStream(true).start().waitFor() == 0
        } catch (e: java.io.IOException) {
            false
        }
        if (!set) return false
        try {
            block()
        } finally {
            ProcessBuilder(listOf("chattr", "-i") + files.map { it.path }).redirectErrorStream(true).start().waitFor()
        }
        return true
    }
    files.forEach { it.setWritable(false, false) }
    try {
        block()
    } finally {
        files.forEach { it.setWritable(true, true) }
    }
    return true
}
