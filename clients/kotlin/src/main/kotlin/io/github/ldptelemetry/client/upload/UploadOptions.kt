package io.github.ldptelemetry.client.upload

import io.github.ldptelemetry.client.internal.Refuse
import java.net.URL
import java.security.SecureRandom

/**
 * How to upload: the collector [endpoints] (the ingest service), the app's bearer [token] for it, seconds per request
 * from connecting to the end of the answer ([timeoutSeconds]), for the whole call ([callTimeoutSeconds], default [DEFAULT_CALL_TIMEOUT_SECONDS];
 * null: none), requests per batch part ([maxAttempts]), the longest wait between two requests ([maxDelaySeconds]:
 * the back-off's cap, and the cap of a collector's `Retry-After`) and [gzip]. [sleep], [clock] (Unix seconds) and
 * [random] (uniform in [0, 1)) are for tests.
 *
 * The call ends by [callTimeoutSeconds] whatever the collector says: a wait that would pass it (a `Retry-After` of a
 * day, say) ends the call at once with [Stopped.DEADLINE], the reports still in the outbox. The default, 5 minutes,
 * fits Android's WorkManager, which stops a worker after 10 minutes: the call returns, and the worker can report
 * `Result.retry()`, well before that.
 *
 * [endpoints] is one collector URL (`listOf("https://host/v1/reports")`) or several: `ldp serve` replicas over shared
 * storage, or balancers, in the order to try them (see [Uploader] for how a part fails over). Each must be an
 * `http(s)://host/...` URL and appear once; an empty list with a token, a URL that is not one or a URL given twice
 * is an [IllegalArgumentException] here, before anything is sent. The list is copied. The library does not spread load:
 * to do so, shuffle the list once per device (e.g. `urls.shuffled(Random(installId))`) and keep that order.
 *
 * A two-aggregator metric's reports go to its task's leader, which takes them without a token: [endpoints] and
 * [token] may both be left out (`UploadOptions()`) while no report waits for the ingest service (the upload call
 * refuses otherwise, before sending anything); one without the other is an [IllegalArgumentException].
 */
public class UploadOptions @JvmOverloads constructor(
    endpoints: List<String> = emptyList(),
    public val token: String? = null,
    public val timeoutSeconds: Double = 30.0,
    public val callTimeoutSeconds: Double? = DEFAULT_CALL_TIMEOUT_SECONDS,
    public val maxAttempts: Int = 8,
    public val maxDelaySeconds: Double = 300.0,
    public val gzip: Boolean = true,
    public val sleep: (Double) -> Unit = { Thread.sleep((it * 1000).toLong()) },
    public val clock: () -> Double = { System.currentTimeMillis() / 1000.0 },
    public val random: () -> Double = SecureRandom().let { r -> { r.nextDouble() } },
) {
    /** The collector URLs, in the order each upload call tries them (a copy of the list given; empty: only
     * two-aggregator reports are sent). */
    public val endpoints: List<String> = endpoints.toList()

    init {
        require(this.endpoints.isNotEmpty() || token == null) { "endpoints: give at least one collector URL, got an empty list" }
        for (e in this.endpoints) {
            val u = try {
                URL(e)
            } catch (x: java.net.MalformedURLException) {
                throw IllegalArgumentException("upload url must be http(s)://host/..., got ${Refuse.quote(e)}")
            }
            require(u.protocol in setOf("http", "https") && !u.host.isNullOrEmpty()) { "upload url must be http(s)://host/..., got scheme ${Refuse.quote(u.protocol)}" }
        }
        val first = HashMap<String, Int>()
        for ((i, e) in this.endpoints.withIndex()) {
            val j = first.put(e, i)
            require(j == null) { "endpoints name the same URL twice (entries $j and $i)" }
        }
        require(token != null || this.endpoints.isEmpty()) { "upload token: give the ingest service's token with its endpoints" }
        require(token == null || (token.isNotEmpty() && token.all { it.code in 0x21..0x7e })) {
            "upload token must be a non-empty printable ASCII string without spaces"
        }
        require(timeoutSeconds > 0 && !timeoutSeconds.isInfinite()) { "timeout (seconds for one request) must be a finite number > 0, got $timeoutSeconds" }
        require(callTimeoutSeconds == null || (callTimeoutSeconds > 0 && !callTimeoutSeconds.isInfinite())) {
            "callTimeout (seconds for the whole call) must be null or a finite number > 0, got $callTimeoutSeconds"
        }
        require(maxAttempts >= 1) { "maxAttempts must be >= 1, got $maxAttempts" }
        require(maxDelaySeconds >= 0 && maxDelaySeconds.isFinite()) { "maxDelay must be a finite number >= 0, got $maxDelaySeconds" }
    }

    public companion object {
        /** The default bound of one upload call: 5 minutes, half of WorkManager's 10-minute window for a worker. */
        public const val DEFAULT_CALL_TIMEOUT_SECONDS: Double = 300.0
    }
}
