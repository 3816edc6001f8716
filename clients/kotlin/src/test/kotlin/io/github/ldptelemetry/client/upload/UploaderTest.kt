package io.github.ldptelemetry.client.upload

import com.sun.net.httpserver.HttpExchange
import com.sun.net.httpserver.HttpServer
import io.github.ldptelemetry.client.TelemetryClient
import io.github.ldptelemetry.client.internal.Json
import io.github.ldptelemetry.client.ledger.MemoryStore
import io.github.ldptelemetry.client.ledger.TestSpecs
import org.junit.jupiter.api.AfterEach
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertNotNull
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertThrows
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import java.net.InetSocketAddress
import java.net.ServerSocket
import java.util.Collections
import java.util.zip.GZIPInputStream
import kotlin.concurrent.thread

/** The uploader against real local servers, well-behaved and not. */
class UploaderTest {
    private val servers = ArrayList<AutoCloseable>()

    @AfterEach
    fun stop() = servers.forEach { it.close() }

    /** A collector whose answer to each request is [reply] (status, body, extra headers); records what it got. */
    private class Collector(val reply: (Int, List<String>, HttpExchange) -> Triple<Int, String, Map<String, String>>) : AutoCloseable {
        val server: HttpServer = HttpServer.create(InetSocketAddress("127.0.0.1", 0), 0)
        val received: MutableList<Pair<Map<String, String>, List<String>>> = Collections.synchronizedList(ArrayList())

        init {
            server.createContext("/v1/reports") { ex ->
                val raw = ex.requestBody.readBytes()
                val text = if (ex.requestHeaders.getFirst("Content-Encoding") == "gzip") GZIPInputStream(raw.inputStream()).readBytes() else raw
                val lines = String(text, Charsets.UTF_8).trimEnd('\n').split("\n")
                val headers = ex.requestHeaders.entries.associate { (k, v) -> k.lowercase() to v.first() }
                received.add(headers to lines)
                val (status, body, extra) = reply(received.size, lines, ex)
                extra.forEach { (k, v) -> ex.responseHeaders.add(k, v) }
                val bytes = body.toByteArray()
                ex.sendResponseHeaders(status, if (bytes.isEmpty()) -1 else bytes.size.toLong())
                if (bytes.isNotEmpty()) ex.responseBody.use { it.write(bytes) }
                ex.close()
            }
            server.start()
        }

        val url get() = "http://127.0.0.1:${server.address.port}/v1/reports"
        override fun close() = server.stop(0)
    }

    private fun ok(lines: List<String>, ex: HttpExchange, duplicate: Boolean = false) = Triple(
        200,
        """{"batch_id":"${ex.requestHeaders.getFirst("Ldp-Batch-Id")}","lines":${lines.size},"accepted":${lines.size},"rejected":{},"duplicate":$duplicate}""",
        emptyMap<String, String>(),
    )

    private fun collector(reply: (Int, List<String>, HttpExchange) -> Triple<Int, String, Map<String, String>>) = Collector(reply).also { servers.add(it) }

    private fun client(reports: Int, maxBatch: Int = 7): TelemetryClient {
        val c = TelemetryClient(TestSpecs.grr(perWindow = 1e6, lifetime = 1e6, maxBatch = maxBatch), MemoryStore(), clock = { 1e6 })
        repeat(reports) { c.record("color", it % 4) }
        return c
    }

    private val sleeps = Collections.synchronizedList(ArrayList<Double>())

    private fun options(vararg urls: String, timeout: Double = 2.0, call: Double? = null, attempts: Int = 4) =
        UploadOptions(urls.toList(), "tok-en_1", timeoutSeconds = timeout, callTimeoutSeconds = call, maxAttempts = attempts, maxDelaySeconds = 5.0, sleep = { sleeps.add(it) }, random = { 0.5 })

    @Test
    fun `a good upload - headers, gzip, every report once`() {
        val c = collector { _, lines, ex -> ok(lines, ex) }
        val client = client(10)
        val result = Uploader(options(c.url)).upload(client)
        assertEquals(UploadResult(2, 10, 10, emptyMap(), 0, Stopped.EMPTY, Double.NEGATIVE_INFINITY).copy(nextUploadAt = result.nextUploadAt), result)
        assertEquals(0L, client.pending())
        val (headers, lines) = c.received[0]
        assertEquals("Bearer tok-en_1", headers["authorization"])
        assertEquals("application/x-ndjson", headers["content-type"])
        assertEquals(32, headers["ldp-batch-id"]!!.length)
        assertEquals(7, lines.size)
        assertTrue(lines.all { (Json.parse(it) as Map<*, *>)["metric"] == "color" })
    }

    @Test
    fun `a duplicate answer acknowledges, 413 splits, 429 waits Retry-After, 503 retries`() {
        val c = collector { n, lines, ex ->
            when (n) {
                1 -> Triple(413, "", emptyMap())
                2 -> Triple(429, "", mapOf("Retry-After" to "3"))
                3 -> Triple(503, "", emptyMap())
                4 -> ok(lines, ex, duplicate = true)
                else -> ok(lines, ex)
            }
        }
        val client = client(7)
        val result = Uploader(options(c.url)).upload(client)
        assertEquals(7L, result.acknowledged)
        assertEquals(1, result.duplicates)
        assertEquals(listOf(7, 4, 4, 4, 3), c.received.map { it.second.size })
        assertEquals(3.0, sleeps[0])
        assertEquals(c.received[1].first["ldp-batch-id"], c.received[3].first["ldp-batch-id"], "a retry keeps its batch id")
    }

    @Test
    fun `500 until the attempts run out - the batch stays pinned`() {
        val c = collector { _, _, _ -> Triple(500, "{\"error\":\"boom\"}", emptyMap()) }
        val client = client(3)
        val e = assertThrows(UploadException::class.java) { Uploader(options(c.url, attempts = 3)).upload(client) }
        assertEquals(500, e.status)
        assertEquals(3, c.received.size)
        assertEquals(listOf(0.5, 1.0), sleeps, "full jitter: random 0.5 of 1 s, then of 2 s")
        assertEquals(3L, client.pending())
        assertNotNull(client.nextBatch())
    }

    @Test
    fun `400 fails at once, a redirect is refused, an insane 2xx acknowledges nothing`() {
        val bad = collector { _, _, _ -> Triple(400, "{\"error\":\"bad spec\"}", emptyMap()) }
        val e = assertThrows(UploadException::class.java) { Uploader(options(bad.url)).upload(client(2)) }
        assertEquals("bad spec", e.reason)
        val moved = collector { _, _, _ -> Triple(302, "", mapOf("Location" to "http://elsewhere.example/")) }
        assertThrows(UploadException::class.java) { Uploader(options(moved.url)).upload(client(2)) }
        assertEquals(1, moved.received.size)
        val liar = collector { _, lines, ex -> Triple(200, """{"batch_id":"${ex.requestHeaders.getFirst("Ldp-Batch-Id")}","lines":${lines.size + 1},"accepted":${lines.size + 1},"rejected":{}}""", emptyMap()) }
        val client = client(2)
        assertThrows(UploadProtocolException::class.java) { Uploader(options(liar.url)).upload(client) }
        assertEquals(2L, client.pending())
    }

    /** A raw server: accepts, then runs [behave] on the socket. */
    private fun raw(behave: (java.net.Socket) -> Unit): String {
        val ss = ServerSocket(0, 50, java.net.InetAddress.getByName("127.0.0.1"))
        servers.add(ss)
        thread(isDaemon = true) {
            while (!ss.isClosed) {
                val s = try { ss.accept() } catch (e: Exception) { break }
                thread(isDaemon = true) { try { behave(s) } catch (e: Exception) { } finally { s.close() } }
            }
        }
        return "http://127.0.0.1:${ss.localPort}/v1/reports"
    }

    @Test
    fun `a server that never answers, or trickles its answer, is cut at the deadline`() {
        val silent = raw { s -> s.getInputStream().read(ByteArray(65536)); Thread.sleep(10_000) }
        val t0 = System.nanoTime()
        assertThrows(UploadException::class.java) { Uploader(options(silent, timeout = 0.5, attempts = 2)).upload(client(1)) }
        assertTrue((System.nanoTime() - t0) / 1e9 < 2 * 0.5 + 1.0, "two attempts of 0.5 s")
        val trickle = raw { s ->
            s.getInputStream().read(ByteArray(65536))
            val out = s.getOutputStream()
            out.write("HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n".toByteArray())
            repeat(1000) { out.write('x'.code); out.flush(); Thread.sleep(100) }
        }
        val t1 = System.nanoTime()
        val client = client(1)
        assertThrows(UploadException::class.java) { Uploader(options(trickle, timeout = 0.6, attempts = 2)).upload(client) }
        assertTrue((System.nanoTime() - t1) / 1e9 < 2 * 0.6 + 1.0, "the trickled answer is cut at each request's deadline")
        assertEquals(1L, client.pending())
    }

    @Test
    fun `a 10 MiB answer is cut while reading and is a protocol error`() {
        val huge = raw { s ->
            s.getInputStream().read(ByteArray(65536))
            val out = s.getOutputStream()
            out.write("HTTP/1.1 200 OK\r\nContent-Length: ${10 shl 20}\r\n\r\n".toByteArray())
            val chunk = ByteArray(65536) { ' '.code.toByte() }
            repeat(160) { out.write(chunk) }
        }
        val client = client(1)
        val e = assertThrows(UploadProtocolException::class.java) { Uploader(options(huge)).upload(client) }
        assertTrue("over 65536 bytes" in e.message!!, e.message)
        assertEquals(1L, client.pending())
    }

    @Test
    fun `fails over to the next endpoint, and the call timeout stops it with the batch pinned`() {
        val dead = ServerSocket(0).let { val p = it.localPort; it.close(); "http://127.0.0.1:$p/v1/reports" }
        val good = collector { _, lines, ex -> ok(lines, ex) }
        val client = client(3)
        assertEquals(3L, Uploader(options(dead, good.url)).upload(client).acknowledged)
        val silent = raw { s -> s.getInputStream().read(ByteArray(65536)); Thread.sleep(10_000) }
        val other = client(2)
        val t0 = System.nanoTime()
        val result = Uploader(options(silent, timeout = 5.0, call = 0.7)).upload(other)
        assertEquals(Stopped.DEADLINE, result.stopped)
        assertTrue((System.nanoTime() - t0) / 1e9 < 2.0)
        assertEquals(2L, other.pending())
    }

    @Test
    fun `answers and Retry-After are checked as Python checks them`() {
        val id = "0".repeat(32)
        fun bad(json: String, sent: Int = 1) = assertThrows(IllegalArgumentException::class.java) { Uploader.checkAnswer(json.toByteArray(), id, sent) }.message
        assertEquals("the answer lacks accepted, rejected", bad("""{"batch_id":"$id","lines":1}"""))
        assertEquals("accepted (1) + rejected (1) != lines (1)", bad("""{"batch_id":"$id","lines":1,"accepted":1,"rejected":{"x":1}}"""))
        assertTrue(bad("""{"batch_id":"$id","lines":1,"lines":1}""")!!.startsWith("the answer is not JSON"))
        assertEquals("accepted is True, not an integer >= 0", bad("""{"batch_id":"$id","lines":1,"accepted":true,"rejected":{}}"""))
        Uploader.checkAnswer("""{"batch_id":"$id","lines":3,"duplicate":true}""".toByteArray(), id, 2)
        assertEquals(120.0, Uploader.parseRetryAfter(" 120 ", 0.0))
        assertEquals(10.0, Uploader.parseRetryAfter("Thu, 01 Jan 1970 00:00:20 GMT", 10.0))
        assertEquals(0.0, Uploader.parseRetryAfter("Thu, 01 Jan 1970 00:00:20 GMT", 100.0))
        assertNull(Uploader.parseRetryAfter("soon", 0.0))
        assertThrows(IllegalArgumentException::class.java) { UploadOptions(listOf("ftp://x/"), "t") }
        assertThrows(IllegalArgumentException::class.java) { UploadOptions(listOf("http://x/"), "a b") }
    }
}
