package io.github.ldptelemetry.client.upload

import io.github.ldptelemetry.client.internal.Json
import io.github.ldptelemetry.client.internal.Refuse
import java.io.ByteArrayOutputStream
import java.io.IOException
import java.net.URL
import java.text.ParsePosition
import java.text.SimpleDateFormat
import java.util.Locale
import java.util.TimeZone
import java.util.concurrent.TimeUnit
import java.util.logging.Level
import java.util.logging.Logger
import java.util.zip.GZIPOutputStream

/** Why an upload call returned: nothing left, the upload interval, the call's deadline, or an error. */
public enum class Stopped { EMPTY, INTERVAL, DEADLINE, ERROR }

/**
 * What one [Uploader.upload] call did (Python's `UploadResult`): [acknowledged] reports deleted from the outbox;
 * [accepted] and [rejected] (by reason) the collector's counts summed over its answers; [duplicates] parts the
 * collector had already stored; why it [stopped]; from when the next batch may go ([nextUploadAt], Unix seconds).
 */
public data class UploadResult(
    val batches: Int,
    val acknowledged: Long,
    val accepted: Long,
    val rejected: Map<String, Long>,
    val duplicates: Int,
    val stopped: Stopped,
    val nextUploadAt: Double,
)

/** An upload that stopped on an error (Python's `UploadError`): the HTTP [status] (null: no answer), a short
 * [reason], and what was done before it ([result]). What was not acknowledged stays in the outbox. */
public open class UploadException(message: String, public val status: Int?, public val reason: String, public val result: UploadResult) :
    IOException(message)

/** The collector answered 2xx with an answer that is not sane for the batch (Python's `UploadProtocolError`):
 * nothing was acknowledged. */
public class UploadProtocolException(message: String, status: Int?, reason: String, result: UploadResult) :
    UploadException(message, status, reason, result)

/**
 * Sends a device's outbox to `ldp serve` (Python's `ldp.client.uploader.upload`): one `POST` per batch part with
 * `Authorization: Bearer`, `Content-Type: application/x-ndjson`, `Ldp-Batch-Id` and `Content-Encoding: gzip`.
 *
 * - The part (its reports and id) is pinned in the outbox before it is first sent, so a retry, a crash or a lost
 *   answer resends the same lines under the same id, to whichever endpoint, and the collector stores them once.
 * - A 2xx whose answer is sane for the part ([checkAnswer]) acknowledges it; any other 2xx is an
 *   [UploadProtocolException], acknowledging nothing. 413 splits the part in two; 429 and 503 wait `Retry-After`
 *   ([parseRetryAfter], capped); no answer by the request's deadline, connection errors, 408 and other 5xx back off
 *   with full jitter; [UploadOptions.maxAttempts] requests per part; any other status is an [UploadException].
 *   Redirects are refused (they would carry the token elsewhere).
 * - The call ends by [UploadOptions.callTimeoutSeconds]: the parts not sent stay in the outbox ([Stopped.DEADLINE]).
 *
 * Several [UploadOptions.endpoints]:
 * - Each call starts with the first endpoint; once an endpoint acknowledged a part, the next parts of the call go to
 *   it (sticky).
 * - A failure that says "this replica cannot take it now" (no answer by the request's deadline, a connection error,
 *   408, 503 or any other 5xx) sends the part's next request to the next endpoint of the list (cyclically) at once,
 *   with no wait, until every endpoint has failed in a row for the part (a full round). Then the uploader waits as
 *   with one endpoint — `Retry-After` if that last answer was a 503 carrying one, else full-jitter back-off whose
 *   exponent counts the part's waits (1 for the first, 2 for the second, ...) — and starts the next round with the
 *   endpoint after the last one tried.
 * - 429 (slow down) waits `Retry-After` or backs off on the same endpoint, and 413 splits on the same endpoint; any
 *   other 4xx, a redirect or an insane 2xx stops the call as with one endpoint (every replica would answer alike).
 * - [UploadOptions.maxAttempts] counts every request of a part, whichever endpoint it went to. The part's batch id
 *   and body are the same on every endpoint, so a part retried on another replica after a lost answer is counted
 *   once (the shuffler stage dedups by batch id).
 * - A switch is logged (`java.util.logging`, INFO) naming both hosts and the status or error.
 *
 * With one endpoint every failure is a full round: the behaviour is that of a single collector URL.
 *
 * Two lanes (Python's `upload_call`): for a [io.github.ldptelemetry.client.TelemetryClient] given two-aggregator
 * tasks, each call first sends its waiting two-aggregator reports one by one to their task's leader ([DapUpload]:
 * `PUT {leader}/tasks/{taskId}/reports`, no token, no upload interval), then, if the options name endpoints and the
 * call has not stopped, the other reports in batches as above. The [UploadResult] sums both lanes (a report a leader
 * acknowledged counts as a batch of one; a refusal for good in `rejected` by its code). With no endpoints
 * (`UploadOptions()`), a call while a report waits for the ingest service is an [IllegalArgumentException], nothing
 * sent.
 *
 * One upload at a time per outbox, enforced: calls on one [Outbox] (one
 * [io.github.ldptelemetry.client.TelemetryClient]), from any thread and through any [Uploader], take turns under a
 * lock kept for that outbox (a fair `ReentrantLock` in a `WeakHashMap` keyed by the outbox, so by `equals`: a
 * `TelemetryClient` is equal only to itself). A call that finds another one running waits for it, at most until its
 * own [UploadOptions.callTimeoutSeconds], and then uploads what is still pending: the parts the other call
 * acknowledged are not sent again (often nothing is left, and it returns [Stopped.EMPTY] or [Stopped.INTERVAL]). A
 * call whose deadline passes while it waits returns [Stopped.DEADLINE] having sent nothing. An interrupt while
 * waiting is an [java.io.InterruptedIOException] (the thread's interrupt flag set again). The lock is this process's:
 * two clients on one store folder (or two processes) are not serialized, and may send a pinned part twice (the
 * collector stores it once).
 *
 * Nothing here logs a report line or the token.
 */
public class Uploader(public val options: UploadOptions) {
    private val hosts: List<String> = options.endpoints.map { hostOf(it) }

    /**
     * Uploads [outbox] until it is empty, the upload interval holds it back, or the call's deadline passes; returns
     * what was done. Throws [UploadException] (the part stays pinned and pending) when the collector refuses a part
     * or it is not delivered in [UploadOptions.maxAttempts] requests, [UploadProtocolException] for an insane 2xx,
     * and the outbox's own [IOException] (a [io.github.ldptelemetry.client.LedgerException]) when its state cannot
     * be read or written. While another call uploads the same outbox, this one waits its turn (see [Uploader]).
     */
    @Throws(UploadException::class, IOException::class)
    public fun upload(outbox: Outbox): UploadResult {
        val callEnd = options.callTimeoutSeconds?.let { System.nanoTime() + (it * 1e9).toLong() } ?: Long.MAX_VALUE
        val lock = lockOf(outbox)
        try {
            if (callEnd == Long.MAX_VALUE) {
                lock.lockInterruptibly()
            } else if (!lock.tryLock(maxOf(0L, callEnd - System.nanoTime()), TimeUnit.NANOSECONDS)) {
                info { "upload: another upload of this outbox ran past this call's deadline; nothing sent" }
                return Tally().result(Stopped.DEADLINE, outbox.nextUploadAt())
            }
        } catch (e: InterruptedException) {
            Thread.currentThread().interrupt()
            throw java.io.InterruptedIOException("interrupted while waiting for another upload of this outbox")
        }
        try {
            return uploadLocked(outbox, callEnd)
        } finally {
            lock.unlock()
        }
    }

    /** [upload]'s loop, run under the outbox's lock: the two-aggregator lane ([DapUpload]) of a
     * [io.github.ldptelemetry.client.TelemetryClient] first, then, when the options name endpoints, the batches. */
    private fun uploadLocked(outbox: Outbox, callEnd: Long): UploadResult {
        val lane = (outbox as? io.github.ldptelemetry.client.TelemetryClient)?.dapLane()
        if (options.endpoints.isEmpty() && (lane?.hasIngestPending?.invoke() ?: outbox.hasPending())) {
            throw IllegalArgumentException("the outbox holds reports for the ingest service: UploadOptions(endpoints, token) sends them")
        }
        val call = Call(outbox, callEnd)
        var stopped: Stopped? = lane?.let { DapUpload(options, it, call.tally, callEnd, outbox::nextUploadAt).run() }
        while (stopped == null && options.endpoints.isNotEmpty()) {
            if (System.nanoTime() >= callEnd) {
                stopped = Stopped.DEADLINE
                break
            }
            val part = outbox.nextBatch(call.limit) ?: break
            stopped = send(call, part)
        }
        val nextAt = outbox.nextUploadAt()
        return call.tally.result(stopped ?: if (outbox.hasPending()) Stopped.INTERVAL else Stopped.EMPTY, nextAt)
    }

    /** One upload call's progress: the endpoint in use, the size limit of the next part, and what was done. */
    private class Call(val outbox: Outbox, val callEnd: Long) {
        val tally = Tally()
        var current = 0 // the endpoint in use: the first, then the last one that acknowledged a part
        var limit: Int? = null
    }

    /** A part's waits and failovers so far, across its requests. */
    private class Round {
        var failed = 0 // endpoints that failed in a row for this part since its last wait
        var waits = 0 // this part's waits so far: the back-off exponent
    }

    /**
     * Sends [part] until it is acknowledged or split ([Call.limit] then the size of its first half): null, and the
     * call goes on; [Stopped.DEADLINE] when the call's deadline passes first. Throws [UploadException] as [upload].
     */
    private fun send(call: Call, part: Batch): Stopped? {
        val o = options
        val lines = part.reports.map { it.line }
        var body = (lines.joinToString("\n") + "\n").toByteArray(Charsets.UTF_8)
        val headers = linkedMapOf(
            "Authorization" to "Bearer ${requireNotNull(o.token)}", "Content-Type" to "application/x-ndjson",
            "Accept" to "application/json", "Ldp-Batch-Id" to part.id,
        )
        if (o.gzip) {
            body = gzip(body)
            headers["Content-Encoding"] = "gzip"
        }
        val round = Round()
        for (attempt in 1..o.maxAttempts) {
            val deadline = minOf(System.nanoTime() + (o.timeoutSeconds * 1e9).toLong(), call.callEnd)
            val answer = HttpTransport.post(o.endpoints[call.current], headers, body, deadline, MAX_ANSWER)
            val status = answer.status
            if (status != null && status in 200..299) {
                acknowledge(call, part, answer, status)
                return null
            }
            if (status == 413) {
                if (part.reports.size == 1) fail("the collector refused a single report as too large (${answer.reason()})", answer, call)
                call.limit = call.outbox.splitBatch(part.id)
                return null
            }
            if (status != null && status in 300..399) fail("the collector redirected batch ${part.id} (HTTP $status): refused, a redirect would carry the token elsewhere", answer, call)
            if (!retryable(status)) fail("the collector refused batch ${part.id} with HTTP $status: ${answer.reason()}", answer, call)
            if (System.nanoTime() >= call.callEnd) return Stopped.DEADLINE
            val what = if (status != null) "HTTP $status" else answer.error ?: "no answer"
            if (attempt == o.maxAttempts) fail("batch ${part.id} not delivered after ${o.maxAttempts} attempt(s) (last: $what)", answer, call)
            if (!failOverOrWait(call, answer, what, round)) return Stopped.DEADLINE
        }
        return null
    }

    /** Acknowledges [part] on the collector's 2xx [answer] if it is sane, else [UploadProtocolException]. */
    private fun acknowledge(call: Call, part: Batch, answer: Answer, status: Int) {
        val data = try {
            if (answer.over) throw IllegalArgumentException("the answer is over $MAX_ANSWER bytes")
            checkAnswer(answer.body, part.id, part.reports.size)
        } catch (e: IllegalArgumentException) {
            throw UploadProtocolException(
                "the collector's answer to batch ${part.id} is not sane: ${e.message}; nothing acknowledged",
                status, e.message ?: "bad answer", call.tally.result(Stopped.ERROR, call.outbox.nextUploadAt()),
            )
        }
        call.tally.add(data, call.outbox.acknowledgeBatch(part.id, part.reports.map { it.id }))
    }

    /**
     * After a failed request ([what] went wrong): the next endpoint at once while [round] is not full (not for a
     * 429), else a wait (`Retry-After` of a 429 or 503, capped, else full-jitter back-off) before the next request.
     * False, without waiting, when the wait would pass the call's deadline.
     */
    private fun failOverOrWait(call: Call, answer: Answer, what: String, round: Round): Boolean {
        val o = options
        val urls = o.endpoints
        val status = answer.status
        val from = call.current
        if (status != 429 && urls.size > 1) { // this replica cannot take it now: the next one
            call.current = (call.current + 1) % urls.size
            round.failed++
            if (round.failed < urls.size) {
                info { "upload to ${hosts[from]}: $what; failing over to ${hosts[call.current]}" }
                return true
            }
        }
        round.failed = 0 // a full round (or a 429): wait
        round.waits++
        val wait = if (status == 429 || status == 503) parseRetryAfter(answer.retryAfter, o.clock()) else null
        val delay = if (wait != null) minOf(o.maxDelaySeconds, wait) else backoffDelay(round.waits)
        if (System.nanoTime() + (delay * 1e9).toLong() >= call.callEnd) return false
        info { "upload to ${hosts[from]}: $what; retrying in ${String.format(Locale.ROOT, "%.3g", delay)} s on ${hosts[call.current]}" }
        o.sleep(delay)
        return true
    }

    private fun backoffDelay(n: Int): Double = backoffDelay(options, n)

    private fun fail(message: String, answer: Answer, call: Call): Nothing =
        throw UploadException(message, answer.status, answer.reason(), call.tally.result(Stopped.ERROR, call.outbox.nextUploadAt()))

    /** What one call did so far, both lanes ([DapUpload] counts each report it delivers as a batch of one). */
    internal class Tally {
        var batches = 0
        var acknowledged = 0L
        var accepted = 0L
        val rejected = sortedMapOf<String, Long>()
        var duplicates = 0

        fun add(answer: Map<String, Any?>, done: Int) {
            batches++
            acknowledged += done
            accepted += (answer["accepted"] as? Long) ?: 0L
            (answer["rejected"] as? Map<*, *>)?.forEach { (k, v) -> rejected[k as String] = (rejected[k] ?: 0L) + (v as Long) }
            if (answer["duplicate"] == true) duplicates++
        }

        fun result(stopped: Stopped, nextAt: Double) = UploadResult(batches, acknowledged, accepted, LinkedHashMap(rejected), duplicates, stopped, nextAt)
    }

    public companion object {
        /** Bytes of a collector's answer read at most: a longer 2xx is a protocol error (a sane one is under 1 KiB). */
        public const val MAX_ANSWER: Int = 1 shl 16

        /** The most lines a batch may have (the spec's `max_batch` limit). */
        public const val MAX_BATCH: Long = 1L shl 20

        /** Where the uploader's lines go (an Android app sees them in logcat): hosts, statuses, errors, never a report
         * line or the token. */
        internal val log: Logger = Logger.getLogger(Uploader::class.java.name)

        /** One lock per outbox (a [io.github.ldptelemetry.client.TelemetryClient] is equal only to itself), dropped
         * with the outbox: one upload at a time per outbox. */
        private val locks = java.util.WeakHashMap<Outbox, java.util.concurrent.locks.ReentrantLock>()

        private fun lockOf(outbox: Outbox): java.util.concurrent.locks.ReentrantLock = synchronized(locks) {
            locks.getOrPut(outbox) { java.util.concurrent.locks.ReentrantLock(true) }
        }

        internal inline fun info(message: () -> String) {
            if (log.isLoggable(Level.INFO)) log.info(message())
        }

        /** `host[:port]` of an endpoint, for log lines (never its user-info or path). */
        internal fun hostOf(url: String): String = URL(url).let { if (it.port >= 0) "${it.host}:${it.port}" else it.host }

        /** Full jitter: uniform in `[0, min(maxDelay, 2^(n − 1))]` seconds for the [n]th wait of a part (or of a DAP
         * report). */
        internal fun backoffDelay(o: UploadOptions, n: Int): Double =
            o.random() * minOf(o.maxDelaySeconds, Math.pow(2.0, minOf(n - 1, 1023).toDouble()))

        internal fun retryable(status: Int?): Boolean = status == null || status == 408 || status == 429 || status >= 500

        private fun gzip(data: ByteArray): ByteArray {
            val out = ByteArrayOutputStream()
            GZIPOutputStream(out).use { it.write(data) } // Java writes mtime 0: the body carries no timestamp
            return out.toByteArray()
        }

        private fun show(v: Any?): String {
            val text = if (v is String) Refuse.quote(v) else Refuse.show(v)
            val cut = if (text.length <= 40) text else text.substring(0, 37) + "..."
            return cut.map { if (it.code in 0x20..0x7e) it else '?' }.joinToString("")
        }

        private fun count(answer: Map<*, *>, key: String): Long {
            val v = answer[key]
            if (v !is Long || v < 0) throw IllegalArgumentException("$key is ${show(v)}, not an integer >= 0")
            return v
        }

        /**
         * The collector's 2xx answer to part [batch] of [sent] lines if it is sane (Python's `check_answer`), else an
         * [IllegalArgumentException] saying what is wrong: one JSON object (no repeated key) naming [batch];
         * `accepted`, `lines` and each count of `rejected` integers >= 0; `accepted + sum(rejected) == lines`;
         * `lines == sent`, or for a duplicate `sent <= lines <= MAX_BATCH` (its counts may be absent).
         */
        @JvmStatic
        public fun checkAnswer(body: ByteArray, batch: String, sent: Int): Map<String, Any?> {
            val text = try {
                Charsets.UTF_8.newDecoder().decode(java.nio.ByteBuffer.wrap(body)).toString()
            } catch (e: java.nio.charset.CharacterCodingException) {
                throw IllegalArgumentException("the answer is not UTF-8")
            }
            val answer = try {
                Json.parse(text)
            } catch (e: IllegalArgumentException) {
                throw IllegalArgumentException("the answer is not JSON (${(e.message ?: "").take(80)})")
            }
            if (answer !is Map<*, *>) throw IllegalArgumentException("the answer is ${Refuse.kind(answer)}, not a JSON object")
            if ("batch_id" in answer && answer["batch_id"] != batch) throw IllegalArgumentException("the answer names batch ${show(answer["batch_id"])}, not $batch")
            val duplicate = answer["duplicate"] ?: false
            if (duplicate !is Boolean) throw IllegalArgumentException("duplicate is ${show(duplicate)}, not a boolean")
            val counted = !(duplicate && "accepted" !in answer && "rejected" !in answer)
            val needed = if (counted) listOf("batch_id", "accepted", "rejected", "lines") else listOf("batch_id", "lines")
            val missing = needed.filter { it !in answer }
            if (missing.isNotEmpty()) throw IllegalArgumentException("the answer lacks ${missing.joinToString(", ")}")
            val lines = count(answer, "lines")
            if (counted) {
                val accepted = count(answer, "accepted")
                val rejected = answer["rejected"] as? Map<*, *> ?: throw IllegalArgumentException("rejected is ${show(answer["rejected"])}, not an object of counts by reason")
                var total = 0L
                for (reason in rejected.keys) {
                    val r = reason as String
                    if (!(r.isNotEmpty() && r.length <= 100 && r.all { !Character.isISOControl(it) })) throw IllegalArgumentException("rejected names reason ${show(r)}")
                    total += count(rejected, r)
                }
                if (accepted + total != lines) throw IllegalArgumentException("accepted ($accepted) + rejected ($total) != lines ($lines)")
            }
            val ok = if (duplicate) sent <= lines && lines <= MAX_BATCH else lines == sent.toLong()
            if (!ok) throw IllegalArgumentException("the answer counts $lines line(s); $sent were sent")
            @Suppress("UNCHECKED_CAST")
            return answer as Map<String, Any?>
        }

        /** Seconds to wait from a `Retry-After` value: delta-seconds, or an HTTP date (a past one gives 0); null when
         * absent or unusable (Python's `parse_retry_after`). */
        @JvmStatic
        public fun parseRetryAfter(value: String?, now: Double): Double? {
            val v = value?.trim() ?: return null
            if (v.isNotEmpty() && v.all { it in '0'..'9' }) return v.toBigDecimal().toDouble()
            for (pattern in listOf("EEE, dd MMM yyyy HH:mm:ss zzz", "EEEE, dd-MMM-yy HH:mm:ss zzz", "EEE MMM d HH:mm:ss yyyy")) {
                val f = SimpleDateFormat(pattern, Locale.US).apply { timeZone = TimeZone.getTimeZone("GMT"); isLenient = false }
                val pos = ParsePosition(0)
                val date = f.parse(v, pos) ?: continue
                if (pos.index != v.length) continue
                return maxOf(0.0, date.time / 1000.0 - now)
            }
            return null
        }

    }
}
