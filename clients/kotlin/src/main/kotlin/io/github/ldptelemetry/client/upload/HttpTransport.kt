package io.github.ldptelemetry.client.upload

import java.io.ByteArrayOutputStream
import java.io.IOException
import java.io.InputStream
import java.net.HttpURLConnection
import java.net.URL
import java.util.concurrent.ExecutorService
import java.util.concurrent.Executors
import java.util.concurrent.ScheduledExecutorService
import java.util.concurrent.ScheduledFuture
import java.util.concurrent.ThreadFactory
import java.util.concurrent.TimeUnit
import java.util.concurrent.atomic.AtomicBoolean
import java.util.concurrent.atomic.AtomicReference

/** The collector's (or a leader's) answer to one request: its [status] (null: no answer, [error] says why), the body read (at most the
 * bound), whether the body was [over] the bound, and its `Retry-After` header. */
public class Answer internal constructor(
    public val status: Int?,
    public val body: ByteArray,
    public val over: Boolean,
    public val retryAfter: String?,
    public val error: String?,
) {
    /** A short reason for a log line or an exception: the collector's JSON `error`, else the status or the error. */
    public fun reason(): String {
        if (status != null) {
            val text = String(body, Charsets.UTF_8)
            Regex("\"error\"\\s*:\\s*\"([^\"]{1,100})\"").find(text)?.let { return it.groupValues[1] }
            return "HTTP $status"
        }
        return error ?: "no answer"
    }
}

/**
 * One `POST` (or `PUT`) whose connection, request and WHOLE answer end by a deadline set in advance (Python's
 * `ldp.client.transport.post`), on [HttpURLConnection] only (so it runs on Android unchanged).
 *
 * Socket timeouts bound one operation each, so a server sending one byte a second would keep a plain read going
 * forever: here the connect and read timeouts are set to the time left, and a watchdog disconnects the connection
 * when the deadline passes, which ends any read in progress. The answer is read in chunks, at most `limit + 1`
 * bytes in all (a longer one is cut while reading: [Answer.over]). Redirects are not followed.
 *
 * Each request asks for `Connection: close` (one connection per POST, as the Python client's): a kept-alive
 * connection's answer is a stream that `disconnect()` hands to the JDK's keep-alive cleaner instead of closing its
 * socket, and that cleaner drains a trickled answer holding the stream's lock, so a cut could wait on it; a closing
 * connection's `disconnect()` closes the socket at every stage. The watchdog's timer only schedules; each disconnect
 * runs on a thread of its own ([cutter]), so one that blocks never delays the cut of another call, and never the
 * caller: after a cut the caller returns at once, leaving the answer's stream to the disconnect (closing it on the
 * caller's thread could wait on the JDK's stream lock while a trickled answer drains). The disconnects of one call
 * take turns (the JDK's `disconnect` is not safe against itself: two at once may throw), and any exception of one
 * is dropped: it is cleanup.
 */
internal object HttpTransport {
    /** How often the watchdog disconnects again after the deadline, until the call returns. */
    private const val RECUT_MS = 50L

    private val watchdog: ScheduledExecutorService = Executors.newSingleThreadScheduledExecutor(
        ThreadFactory { r -> Thread(r, "ldp-upload-watchdog").apply { isDaemon = true } },
    )

    /** Runs the disconnects: a thread each while one is running, idle threads gone after a minute. */
    private val cutter: ExecutorService = Executors.newCachedThreadPool(
        ThreadFactory { r -> Thread(r, "ldp-upload-cut").apply { isDaemon = true } },
    )

    /** The request ([method]: `POST`, or `PUT` for a DAP report) of [body] to [url]; its [Answer], read up to
     * [limit] bytes, by [deadlineNanos] (`System.nanoTime`). */
    fun post(url: String, headers: Map<String, String>, body: ByteArray, deadlineNanos: Long, limit: Int, method: String = "POST"): Answer {
        val leftMs = { TimeUnit.NANOSECONDS.toMillis(deadlineNanos - System.nanoTime()) }
        if (leftMs() <= 0) return Answer(null, ByteArray(0), false, null, "the request's deadline passed")
        val conn = AtomicReference<HttpURLConnection?>(null)
        val cut = AtomicBoolean(false)
        val turns = Any() // the disconnects of this call take turns
        val timer = watch(conn, cut, turns, leftMs())
        try {
            val c = URL(url).openConnection() as HttpURLConnection
            conn.set(c)
            if (cut.get()) throw IOException("the request's deadline passed while connecting")
            send(c, method, headers, body, leftMs)
            if (cut.get()) throw IOException("the request's deadline passed while sending it")
            val status = c.responseCode
            val retryAfter = c.getHeaderField("Retry-After")
            val stream: InputStream? = if (status >= 400) c.errorStream else try {
                c.inputStream
            } catch (e: IOException) {
                c.errorStream
            }
            val out = ByteArrayOutputStream()
            val over = stream != null && read(stream, out, limit) { cut.get() || leftMs() <= 0 }
            if (cut.get()) return Answer(null, ByteArray(0), false, null, "the request's deadline passed")
            return Answer(status, out.toByteArray(), over, retryAfter, null)
        } catch (e: IOException) {
            // the socket's timeouts are the time left: when one fires first (before the watchdog, on a busy machine),
            // it is the deadline too
            val late = cut.get() || e is java.net.SocketTimeoutException || System.nanoTime() >= deadlineNanos
            val why = if (late) "the request's deadline passed" else "${e.javaClass.simpleName}: ${e.message}"
            return Answer(null, ByteArray(0), false, null, why)
        } finally {
            timer.cancel(false)
            conn.get()?.let { c -> cutter.execute { quietly(c, turns) } }
        }
    }

    /**
     * The call's watchdog: from [delayMs] on, and every [RECUT_MS] until cancelled, sets [cut] and disconnects the
     * call's connection ([conn], once it has one) on a [cutter] thread, after any other disconnect of the call
     * ([turns]). A disconnect that comes before the connection has its socket (the watchdog firing while a busy
     * machine is still opening it) does nothing, so the watchdog tries again until one lands on the socket and ends
     * the read in progress.
     */
    private fun watch(conn: AtomicReference<HttpURLConnection?>, cut: AtomicBoolean, turns: Any, delayMs: Long): ScheduledFuture<*> {
        val cutting = AtomicBoolean(false) // a disconnect of this call is running: the next tick does not add one
        return watchdog.scheduleAtFixedRate({
            cut.set(true)
            val c = conn.get()
            if (c != null && cutting.compareAndSet(false, true)) {
                cutter.execute {
                    try {
                        quietly(c, turns)
                    } finally {
                        cutting.set(false)
                    }
                }
            }
        }, delayMs.coerceAtLeast(0), RECUT_MS, TimeUnit.MILLISECONDS)
    }

    /** Sends the [method] request of [body] on [c]: no redirect, no cache, `Connection: close`, timeouts the time
     * left. */
    private fun send(c: HttpURLConnection, method: String, headers: Map<String, String>, body: ByteArray, leftMs: () -> Long) {
        c.instanceFollowRedirects = false
        c.useCaches = false
        c.requestMethod = method
        c.doOutput = true
        // A POST streams its body. A PUT (one DAP report, a few KiB) is buffered by the JDK: an answer without a body
        // hands its connection to the JDK's keep-alive cache at once, which the next PUT takes unchecked (a POST's
        // streaming request checks it); a buffered request is sent again, once, on a fresh connection when that one
        // was closed meanwhile. Sending a DAP report twice is harmless: the leader stores it once, by its report ID.
        if (method == "POST") c.setFixedLengthStreamingMode(body.size)
        for ((k, v) in headers) c.setRequestProperty(k, v)
        c.setRequestProperty("Connection", "close") // no keep-alive stream: a disconnect closes the socket
        c.connectTimeout = leftMs().coerceIn(1, Int.MAX_VALUE.toLong()).toInt()
        c.readTimeout = leftMs().coerceIn(1, Int.MAX_VALUE.toLong()).toInt()
        c.outputStream.use { it.write(body) }
    }

    /**
     * Reads the answer's [stream] into [out] in chunks, to its end (the stream then closed: nothing left to drain) or
     * past [limit] bytes: then true, the rest left to the disconnect, never read here. An [IOException] once [late].
     */
    private fun read(stream: InputStream, out: ByteArrayOutputStream, limit: Int, late: () -> Boolean): Boolean {
        val buf = ByteArray(8192)
        while (true) {
            if (late()) throw IOException("the request's deadline passed while reading the answer")
            val n = stream.read(buf)
            if (n < 0) {
                stream.close() // the whole answer is read: nothing left to drain
                return false
            }
            out.write(buf, 0, n)
            if (out.size() > limit) return true // the rest is left to the disconnect, never read here
        }
    }

    /** Disconnect [c], after any other disconnect of its call ([turns]); an exception of the JDK's is dropped. */
    private fun quietly(c: HttpURLConnection, turns: Any) {
        synchronized(turns) {
            try {
                c.disconnect()
            } catch (e: RuntimeException) {
                // a disconnect racing the JDK's own cleanup: the socket is closed or closing either way
            }
        }
    }
}
