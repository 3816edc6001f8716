package io.github.ldptelemetry.client.upload

import com.sun.net.httpserver.HttpServer
import io.github.ldptelemetry.client.TelemetryClient
import io.github.ldptelemetry.client.dap.DapTask
import io.github.ldptelemetry.client.dap.TaskFiles
import io.github.ldptelemetry.client.internal.Bytes
import io.github.ldptelemetry.client.internal.Json
import io.github.ldptelemetry.client.ledger.MemoryStore
import io.github.ldptelemetry.client.ledger.StateStore
import java.net.InetSocketAddress
import java.util.Collections
import org.junit.jupiter.api.AfterEach
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertThrows
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test

/**
 * The two-aggregator lane of an upload call (Python's `ldp/client/dap_upload.py` and `upload_call.py`) against a
 * fake leader on loopback that answers each `PUT` as told: what each answer does with the report and the call's
 * counts, the refusal code read from `code` or DAP's problem `type`, the two lanes in one call, and uploading without
 * an ingest service.
 */
class DapUploadTest {
    private val spec = TaskFiles.spec
    private var now = 20_000 * 86400.0 + 100
    private val closing = ArrayList<AutoCloseable>()

    @AfterEach
    fun close() = closing.forEach { it.close() }

    /** A server answering its [n]th request on any path with [reply]`(n)` (status, body, headers); what it got. */
    private inner class Server(val reply: (Int, String) -> Triple<Int, String, Map<String, String>>) : AutoCloseable {
        val server: HttpServer = HttpServer.create(InetSocketAddress("127.0.0.1", 0), 0)
        val got: MutableList<Map<String, String?>> = Collections.synchronizedList(ArrayList())
        val url get() = "http://127.0.0.1:${server.address.port}"

        init {
            server.createContext("/") { ex ->
                val body = ex.requestBody.readBytes()
                got.add(mapOf("method" to ex.requestMethod, "path" to ex.requestURI.path, "type" to ex.requestHeaders.getFirst("Content-Type"),
                    "auth" to ex.requestHeaders.getFirst("Authorization"), "size" to body.size.toString(),
                    "batch" to ex.requestHeaders.getFirst("Ldp-Batch-Id")))
                val (status, text, headers) = reply(got.size, String(body, Charsets.UTF_8))
                headers.forEach { (k, v) -> ex.responseHeaders.add(k, v) }
                val bytes = text.toByteArray()
                ex.sendResponseHeaders(status, if (bytes.isEmpty()) -1 else bytes.size.toLong())
                if (bytes.isNotEmpty()) ex.responseBody.use { it.write(bytes) }
                ex.close()
            }
            server.start()
            closing.add(this)
        }

        override fun close() = server.stop(0)
    }

    private fun problem(status: Int, code: String? = null, type: String? = null, headers: Map<String, String> = emptyMap()) =
        Triple(status, Json.write(listOfNotNull(code?.let { "code" to it }, type?.let { "type" to "urn:ietf:params:ppm:dap:error:$it" }).toMap()), headers)

    /** A client whose two-aggregator metrics' tasks name [leader] ([only]: these metrics' tasks alone). */
    private fun client(leader: String, only: Set<String>? = null, store: StateStore = MemoryStore()): TelemetryClient {
        val tasks = listOf("search_engine", "crashed", "votes").filter { only == null || it in only }
            .associateWith { DapTask(TaskFiles.of(spec, it, leaderUrl = "$leader/")).also { t -> closing.add(t) } }
        return TelemetryClient(spec, store, clock = { now }, tasks = tasks)
    }

    private fun options(call: Double? = 30.0, attempts: Int = 3, endpoints: List<String> = emptyList(), token: String? = null) =
        UploadOptions(endpoints, token, timeoutSeconds = 5.0, callTimeoutSeconds = call, maxAttempts = attempts, maxDelaySeconds = 300.0,
            gzip = false, sleep = {}, random = { 0.0 })

    /** Records [n] reports, each in a window of its own (under every cap). */
    private fun record(c: TelemetryClient, n: Int, metric: String = "search_engine") = repeat(n) {
        now += 86400
        c.record(metric, "a")
    }

    @Test
    fun `every answer of the leader does what Python's does`() {
        val replies = listOf(
            Triple(201, "", emptyMap()), problem(409, "report_replayed"), problem(400, "batch_collected"),
            problem(400, type = "reportRejected"), problem(400, type = "reportTooEarly"),
            problem(503, headers = mapOf("Retry-After" to "0")), Triple(201, "", emptyMap()), Triple(500, "", emptyMap()), Triple(201, "", emptyMap()),
        )
        val leader = Server { n, _ -> replies.getOrElse(n - 1) { Triple(201, "", emptyMap()) } }
        val c = client(leader.url)
        record(c, 7)
        val first = Uploader(options()).upload(c)
        assertEquals(UploadResult(6, 6, 3, mapOf("batch_collected" to 1L, "report_rejected" to 1L), 1, Stopped.INTERVAL, Double.NEGATIVE_INFINITY), first)
        assertEquals(1L, c.pending(), "the report the leader found too early waits")
        val taskId = Bytes.base64Url(ByteArray(32) { 0xa5.toByte() })
        for (r in leader.got) {
            assertEquals(listOf("PUT", "/tasks/$taskId/reports", "application/dap-report", null), listOf(r["method"], r["path"], r["type"], r["auth"]))
            assertTrue(r.getValue("size")!!.toInt() > 100)
        }
        val second = Uploader(options()).upload(c)
        assertEquals(listOf(1L, 1L, Stopped.EMPTY), listOf(second.acknowledged, second.accepted, second.stopped))
        assertEquals(mapOf("search_engine" to 7L), c.uploaded())
        assertEquals(10, leader.got.size)
    }

    @Test
    fun `a refusal every report would meet, or no delivery, stops the call with the report kept`() {
        val wrong = Server { _, _ -> problem(404, "unrecognized_task") }
        val c = client(wrong.url)
        record(c, 2)
        val e = assertThrows(UploadException::class.java) { Uploader(options()).upload(c) }
        assertEquals(404 to "unrecognized_task", e.status to e.reason)
        assertEquals(Stopped.ERROR, e.result.stopped)
        assertEquals(2L, c.pending())
        assertEquals(1, wrong.got.size, "no retry, and not the next report")
        val down = Server { _, _ -> Triple(500, "", emptyMap()) }
        val d = client(down.url)
        record(d, 1)
        val f = assertThrows(UploadException::class.java) { Uploader(options(attempts = 3)).upload(d) }
        assertTrue(f.message!!.contains("not delivered to the leader 127.0.0.1:${down.server.address.port} after 3 attempt(s) (last: 500)"), f.message)
        assertEquals(3, down.got.size)
        assertEquals(1L, d.pending())
        val late = Server { _, _ -> problem(503, headers = mapOf("Retry-After" to "3600")) }
        val l = client(late.url)
        record(l, 1)
        assertEquals(Stopped.DEADLINE, Uploader(options(call = 5.0)).upload(l).stopped, "a wait past the call's end ends it")
        assertEquals(1L, l.pending())
    }

    @Test
    fun `one call sends the two-aggregator lane, then the ingest lane`() {
        val leader = Server { _, _ -> Triple(201, "", emptyMap()) }
        lateinit var collector: Server
        collector = Server { _, body ->
            val lines = body.trimEnd('\n').split("\n").size
            val batch = collector.got.last()["batch"]
            Triple(200, """{"batch_id": "$batch", "accepted": $lines, "rejected": {}, "lines": $lines}""", emptyMap())
        }
        val store = MemoryStore()
        client(leader.url, store = store).recordMany(listOf("color" to 1L, "search_engine" to "b", "color" to 2L, "crashed" to true))
        val c = client(leader.url, only = setOf("search_engine"), store = store) // crashed's task not given now
        val e = assertThrows(IllegalArgumentException::class.java) { Uploader(options()).upload(c) }
        assertEquals("the outbox holds reports for the ingest service: UploadOptions(endpoints, token) sends them", e.message)
        assertEquals(0, leader.got.size + collector.got.size, "nothing sent")
        val result = Uploader(options(endpoints = listOf("${collector.url}/v1/reports"), token = "tok")).upload(c)
        assertEquals(listOf(2, 3L, 3L, Stopped.INTERVAL), listOf(result.batches, result.acknowledged, result.accepted, result.stopped))
        assertEquals(listOf("PUT", "POST"), (leader.got + collector.got).map { it["method"] })
        assertEquals("Bearer tok", collector.got[0]["auth"])
        assertEquals(1L, c.pending(), "crashed waits: no task was given for it")
        assertEquals(Stopped.INTERVAL, Uploader(options()).upload(c).stopped, "leaders only: allowed once no ingest report waits")
        val d = client(leader.url)
        record(d, 2)
        assertEquals(listOf(2L, Stopped.EMPTY), Uploader(UploadOptions()).upload(d).let { listOf(it.accepted, it.stopped) })
    }

    @Test
    fun `refusal codes and options as Python reads them`() {
        fun code(text: String) = DapUpload.refusalCode(text.toByteArray())
        assertEquals("report_too_early", code("""{"code": "report_too_early"}"""))
        assertEquals("report_too_early", code("""{"type": "urn:ietf:params:ppm:dap:error:reportTooEarly"}"""))
        assertEquals("outdated_config", code("""{"code": "Not-A-Code", "type": "urn:ietf:params:ppm:dap:error:outdatedConfig"}"""))
        for (bad in listOf("", "[]", "{}", "not json", """{"type": "about:blank"}""", """{"type": "urn:ietf:params:ppm:dap:error:bad-type"}""")) {
            assertNull(code(bad), bad)
        }
        assertNull(DapUpload.refusalCode(byteArrayOf(0x7b, 0xff.toByte(), 0x7d)), "not UTF-8")
        assertTrue(DapUpload.GONE.containsAll(listOf("report_rejected", "outdated_config", "invalid_message", "batch_collected")))
        assertEquals("upload token: give the ingest service's token with its endpoints",
            assertThrows(IllegalArgumentException::class.java) { UploadOptions(listOf("http://a/v1/reports")) }.message)
        assertEquals("endpoints: give at least one collector URL, got an empty list",
            assertThrows(IllegalArgumentException::class.java) { UploadOptions(emptyList(), "t") }.message)
        assertEquals(emptyList<String>(), UploadOptions().endpoints)
    }
}
