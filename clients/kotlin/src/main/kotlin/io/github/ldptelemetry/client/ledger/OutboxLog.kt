package io.github.ldptelemetry.client.ledger

import io.github.ldptelemetry.client.LedgerException
import java.io.BufferedInputStream
import java.io.ByteArrayOutputStream
import java.io.File
import java.io.FileInputStream
import java.io.FileNotFoundException
import java.io.FileOutputStream
import java.io.RandomAccessFile
import java.util.concurrent.atomic.AtomicLong

/** Where the committed reports are: log generation, byte range, id of the first, count, and their size as the
 * outbox cap counts it (null in a state written before the cap existed: counted when first needed). */
internal class OutboxCursor(var gen: Long, var start: Long, var end: Long, var first: Long, var count: Long, var bytes: Long?) {
    fun copy() = OutboxCursor(gen, start, end, first, count, bytes)
}

/**
 * The outbox logs of a [FileStore]'s folder, `outbox.<n>.log`: the reports, one line each (`id`, tab, metric, tab,
 * line), appended and flushed before the state that counts them is committed. Only the range an [OutboxCursor] of
 * the committed state names is read; bytes past its end (a crash between the two) are cut by the next append. A log
 * whose reports are all dropped, or whose dropped head is large, is replaced by the next generation.
 *
 * [stateFile] is named in the error of a missing log; every flush counts in [syncs].
 */
internal class OutboxLog(private val directory: File, private val stateFile: File, private val syncs: AtomicLong) {
    /** The log of generation [gen]. */
    fun file(gen: Long) = File(directory, "outbox.$gen.log")

    /** Up to [n] records from byte [from] (below [end]) of log [gen], each with its length in bytes. */
    fun read(gen: Long, from: Long, end: Long, n: Long): List<Pair<OutboxRecord, Long>> {
        if (n <= 0) return emptyList()
        val out = ArrayList<Pair<OutboxRecord, Long>>(minOf(n, 1L shl 16).toInt())
        try {
            RandomAccessFile(file(gen), "r").use { raf ->
                raf.seek(from)
                val input = BufferedInputStream(FileInputStream(raf.fd), 64 * 1024)
                var pos = from
                val line = ByteArrayOutputStream()
                while (out.size < n && pos < end) {
                    line.reset()
                    pos += readLine(input, line, gen)
                    out.add(parse(line, gen) to (line.size() + 1L))
                }
            }
        } catch (e: FileNotFoundException) {
            throw LedgerException("${file(gen)} is missing: its reports are committed in $stateFile", e)
        }
        return out
    }

    /** One line of log [gen] from [input] into [line], without its newline; the bytes read, newline included. */
    private fun readLine(input: BufferedInputStream, line: ByteArrayOutputStream, gen: Long): Long {
        var read = 0L
        while (true) {
            val b = input.read()
            if (b < 0) throw LedgerException("${file(gen)} is damaged: a record is cut short")
            read++
            if (b == '\n'.code) return read
            line.write(b)
        }
    }

    private fun parse(line: ByteArrayOutputStream, gen: Long): OutboxRecord {
        val text = line.toString("UTF-8")
        val parts = text.split('\t', limit = 3)
        val id = parts.getOrNull(0)?.toLongOrNull()
        if (parts.size != 3 || id == null) throw LedgerException("${file(gen)} is damaged: a record is malformed")
        return OutboxRecord(id, parts[1], parts[2])
    }

    /**
     * Writes [bytes], [count] records, at the committed end of [cursor]'s log (cutting first a torn tail a killed
     * process left), flushes them, and moves [cursor]'s end and count past them.
     */
    fun append(cursor: OutboxCursor, bytes: ByteArray, count: Long) {
        RandomAccessFile(file(cursor.gen), "rw").use { raf ->
            if (raf.length() != cursor.end) raf.setLength(cursor.end) // a torn tail a killed process left
            raf.seek(cursor.end)
            raf.write(bytes)
            raf.fd.sync()
            syncs.incrementAndGet()
        }
        cursor.end += bytes.size
        cursor.count += count
    }

    /**
     * Moves [cursor] to the next generation when its log holds no report, or, when [compact] and its dropped head is
     * over [compactBytes] and half the file, when the live reports are copied (and flushed) there. The log retired,
     * to delete once a state with [cursor] is committed; null when the log stays.
     */
    fun rotate(cursor: OutboxCursor, compact: Boolean, compactBytes: Long): File? {
        if (cursor.count == 0L && cursor.end > 0) {
            val retired = file(cursor.gen)
            cursor.gen++
            cursor.start = 0
            cursor.end = 0
            return retired
        }
        if (compact && cursor.start > compactBytes && cursor.start >= cursor.end - cursor.start) {
            val retired = file(cursor.gen)
            copyLive(retired, file(cursor.gen + 1), cursor)
            cursor.gen++
            cursor.end -= cursor.start
            cursor.start = 0
            return retired
        }
        return null
    }

    /** Copies [cursor]'s committed range of [from] into [to], flushed. */
    private fun copyLive(from: File, to: File, cursor: OutboxCursor) {
        RandomAccessFile(from, "r").use { src ->
            FileOutputStream(to).use { dst ->
                src.seek(cursor.start)
                val buf = ByteArray(64 * 1024)
                var left = cursor.end - cursor.start
                while (left > 0) {
                    val n = src.read(buf, 0, minOf(buf.size.toLong(), left).toInt())
                    if (n < 0) throw LedgerException("$from ended early")
                    dst.write(buf, 0, n)
                    left -= n
                }
                dst.fd.sync()
                syncs.incrementAndGet()
            }
        }
    }

    companion object {
        private val NAME = Regex("outbox\\.[0-9]+\\.log")

        /** Whether [name] is an outbox log's file name. */
        fun isLog(name: String): Boolean = NAME.matches(name)
    }
}
