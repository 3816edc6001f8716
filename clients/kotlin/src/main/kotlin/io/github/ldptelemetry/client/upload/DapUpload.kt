package io.github.ldptelemetry.client.upload

import io.github.ldptelemetry.client.dap.DapLine
import io.github.ldptelemetry.client.internal.Json
import io.github.ldptelemetry.client.ledger.OutboxRecord
import java.util.Locale
import java.util.logging.Level

/** What [DapUpload] needs of a [io.github.ldptelemetry.client.TelemetryClient] (Python's `DapLane`): its waiting
 * two-aggregator reports ([pending], oldest first, at most the number given), their deletion one by one
 * ([acknowledge]: whether it was waiting), each metric's leader URL ([leaders]: the metrics whose task the client was
 * given), and whether a report waits for the ingest service ([hasIngestPending]). */
internal class DapLane(
    val pending: (Int) -> List<OutboxRecord>,
    val acknowledge: (Long) -> Boolean,
    val leaders: Map<String, String>,
    val hasIngestPending: () -> Boolean,
)

/**
 * One upload call's two-aggregator lane (Python's `ldp/client/dap_upload.py`): each waiting DAP report sent alone to
 * its task's leader, `PUT {leader}/tasks/{taskId}/reports` with `Content-Type: application/dap-report` (DAP-09
 * §4.4.2; no token: a leader takes reports from anyone), oldest first, until none is left or the call's deadline.
 *
 * What each answer does with the report (deleted only once the leader has it, or never will):
 * - 2xx: stored; acknowledged, counted `accepted`. 409 `report_replayed`: stored before (an answer lost on the way
 *   back); acknowledged, counted in `duplicates`.
 * - 400 with a code no retry can change ([GONE]; a leader of another implementation says `reportRejected`,
 *   `outdatedConfig` or `invalidMessage`, taken alike): acknowledged and counted in `rejected` by code, logged.
 * - 400 `report_too_early`: the device's clock is ahead of the leader's; kept for a later call, and the lane goes on.
 * - no answer by the request's deadline, a connection error, 408, 429 or 5xx: tried again after `Retry-After` (429,
 *   503; capped) or a full-jitter back-off, [UploadOptions.maxAttempts] requests a report; then an [UploadException],
 *   the report kept.
 * - anything else (401, 404 `unrecognized_task`, 415, a redirect, …): an [UploadException], the report kept: the task
 *   or the leader's URL is wrong, and every report would fail alike.
 *
 * A waiting report of a metric whose task this client was not given waits for a later call. Nothing logged holds a
 * report's bytes: counts, codes, statuses and the leader's host only.
 */
internal class DapUpload(
    private val options: UploadOptions,
    private val lane: DapLane,
    private val tally: Uploader.Tally,
    private val callEnd: Long,
    private val nextUploadAt: () -> Double,
) {
    /** What one report's requests came to. */
    private sealed class Outcome {
        object Stored : Outcome()
        object Replayed : Outcome()
        object Later : Outcome()
        object Deadline : Outcome()
        class Gone(val code: String) : Outcome()
    }

    /** Sends the lane's reports; [Stopped.DEADLINE] when the call's time ran out, else null. Throws
     * [UploadException] as the class says. */
    fun run(): Stopped? {
        val skip = HashSet<Long>() // reports kept for a later call (too early, or a metric without its task now)
        while (true) {
            val batch = lane.pending(skip.size + 64).filter { it.id !in skip }
            if (batch.isEmpty()) return null
            for (record in batch) {
                if (System.nanoTime() >= callEnd) return Stopped.DEADLINE
                val leader = lane.leaders[record.metric]
                val parsed = DapLine.parse(record.line)
                if (leader == null || parsed == null) {
                    val why = if (leader == null) "no task was given for it" else "its line is no DAP report's"
                    info { "a pending report of \"${record.metric}\" waits: $why" }
                    skip.add(record.id)
                    continue
                }
                val url = "${leader.trimEnd('/')}/tasks/${parsed.first}/reports"
                when (val done = send(url, parsed.second)) {
                    Outcome.Deadline -> return Stopped.DEADLINE
                    Outcome.Later -> skip.add(record.id)
                    else -> count(done, lane.acknowledge(record.id))
                }
            }
        }
    }

    private fun count(done: Outcome, acknowledged: Boolean) {
        tally.batches++
        if (acknowledged) tally.acknowledged++
        when (done) {
            Outcome.Stored -> tally.accepted++
            Outcome.Replayed -> tally.duplicates++
            is Outcome.Gone -> tally.rejected[done.code] = (tally.rejected[done.code] ?: 0L) + 1
            else -> {}
        }
    }

    /** One report to its leader, tried until an answer decides it (the class's rules). */
    private fun send(url: String, report: ByteArray): Outcome {
        val host = Uploader.hostOf(url)
        val headers = mapOf("Content-Type" to MEDIA_TYPE, "Accept" to "application/problem+json, application/json")
        for (attempt in 1..options.maxAttempts) {
            val deadline = minOf(System.nanoTime() + (options.timeoutSeconds * 1e9).toLong(), callEnd)
            val answer = HttpTransport.post(url, headers, report, deadline, MAX_ANSWER, method = "PUT")
            val status = answer.status
            val code = if (status == null) null else refusalCode(answer.body)
            when {
                status != null && status in 200..299 -> return Outcome.Stored
                status == 409 && code == "report_replayed" -> return Outcome.Replayed
                status == 400 && code in GONE -> {
                    if (Uploader.log.isLoggable(Level.WARNING)) {
                        Uploader.log.warning("the leader $host refused a report for good ($code): deleted")
                    }
                    return Outcome.Gone(code!!)
                }
                status == 400 && code in LATER -> {
                    info { "the leader $host refused a report as $code: kept for a later upload" }
                    return Outcome.Later
                }
                !Uploader.retryable(status) -> fail("the leader $host refused a report with HTTP $status (${code ?: answer.reason()})", status, code ?: answer.reason())
                attempt == options.maxAttempts -> fail(
                    "a report was not delivered to the leader $host after ${options.maxAttempts} attempt(s) (last: ${status ?: answer.error})",
                    status, answer.reason(),
                )
            }
            val wait = if (status == 429 || status == 503) Uploader.parseRetryAfter(answer.retryAfter, options.clock()) else null
            val delay = if (wait != null) minOf(options.maxDelaySeconds, wait) else Uploader.backoffDelay(options, attempt)
            if (System.nanoTime() + (delay * 1e9).toLong() >= callEnd) return Outcome.Deadline
            info { "DAP upload to $host: ${status ?: answer.error}; retrying in ${String.format(Locale.ROOT, "%.3g", delay)} s" }
            options.sleep(delay)
        }
        return Outcome.Deadline // not reached: the last attempt returns or fails
    }

    private fun fail(message: String, status: Int?, reason: String): Nothing {
        if (Uploader.log.isLoggable(Level.WARNING)) Uploader.log.warning("upload stopped: $message")
        throw UploadException(message, status, reason, tally.result(Stopped.ERROR, nextUploadAt()))
    }

    private inline fun info(message: () -> String) = Uploader.info(message)

    companion object {
        /** The media type of a DAP report upload. */
        const val MEDIA_TYPE = "application/dap-report"

        /** Refusal codes after which no retry can make the leader store the report: it is deleted and counted. */
        val GONE = setOf(
            "invalid_message", "report_too_late", "batch_collected", "hpke_unknown_config_id", "hpke_decrypt_error",
            "report_rejected", "outdated_config", "vdaf_invalid",
        )

        /** Refusal codes after which the report waits for a later call. */
        val LATER = setOf("report_too_early")

        private const val MAX_ANSWER = 1 shl 14
        private const val DAP_TYPE = "urn:ietf:params:ppm:dap:error:"
        private val CODE = Regex("[a-z_]{1,40}")
        private val TYPE = Regex("[A-Za-z]{1,40}")

        /** The refusal code of a leader's problem document: `ldp`'s `code`, else DAP's problem `type` in snake case
         * (`reportTooEarly`: `report_too_early`); null when the body says neither. */
        fun refusalCode(body: ByteArray): String? {
            val doc = try {
                Json.parse(Charsets.UTF_8.newDecoder().decode(java.nio.ByteBuffer.wrap(body)).toString()) as? Map<*, *>
            } catch (e: IllegalArgumentException) {
                null
            } catch (e: java.nio.charset.CharacterCodingException) {
                null
            } ?: return null
            (doc["code"] as? String)?.let { if (CODE.matches(it)) return it }
            val type = (doc["type"] as? String)?.takeIf { it.startsWith(DAP_TYPE) }?.substring(DAP_TYPE.length) ?: return null
            if (!TYPE.matches(type)) return null
            return type.replace(Regex("(?<!^)([A-Z])"), "_$1").lowercase(Locale.ROOT)
        }
    }
}
