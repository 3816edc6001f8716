package io.github.ldptelemetry.client.upload

import com.sun.net.httpserver.HttpServer
import io.github.ldptelemetry.client.TelemetryClient
import io.github.ldptelemetry.client.ledger.FileStore
import io.github.ldptelemetry.client.ledger.MemoryStore
import io.github.ldptelemetry.client.ledger.StateStore
import io.github.ldptelemetry.client.ledger.TestSpecs
import java.io.File
import java.net.InetSocketAddress
import java.util.Collections
import java.util.concurrent.CountDownLatch
import java.util.concurrent.CyclicBarrier
import java.util.concurrent.TimeUnit
import java.util.concurrent.atomic.AtomicInteger
import java.util.logging.Level
import java.util.logging.Logger
import java.util.zip.GZIPInputStream
import kotlin.concurrent.thread
import org.junit.jupiter.api.AfterEach
import org.junit.jupiter.api.BeforeEach
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.io.TempDir

/** Issue 73, item 3: one upload at a time per outbox, enforced. Concurrent [Uploader.upload] calls on one client
 * send each batch once: POSTs = batches + retries, and every report is acknowledged in exactly one POST. */
class ConcurrentUploadTest {
    @TempDir
    lateinit var dir: File

    /** A collector counting POSTs; [answer] (the POST's number from 1, its batch id) says 200 or another status. */
    private class Collector(val answer: (Int, String) -> Int) : AutoCloseable {
        val server: HttpServer = HttpServer.create(InetSocketAddress("127.0.0.1", 0), 0)
        val posts = AtomicInteger()
        val refused = AtomicInteger()

        /** Per batch id: the lines of each POST answered 2xx. */
        val acknowledged: MutableList<Pair<String, List<String>>> = Collections.synchronizedList(ArrayList())
        val sent: MutableList<Pair<String, List<String>>> = Collections.synchronizedList(ArrayList())

        init {
            server.executor = java.util.concurrent.Executors.newFixedThreadPool(8)
            server.createContext("/v1/reports") { ex ->
                val raw = ex.requestBody.readBytes()
                val text = if (ex.requestHeaders.getFirst("Content-Encoding") == "gzip") GZIPInputStream(raw.inputStream()).readBytes() else raw
                val lines = String(text, Charsets.UTF_8).trimEnd('\n').split("\n")
                val id = ex.requestHeaders.getFirst("Ldp-Batch-Id")
                sent.add(id to lines)
                val status = answer(posts.incrementAndGet(), id)
                val body = if (status == 200) {
                    acknowledged.add(id to lines)
                    """{"batch_id":"$id","lines":${lines.size},"accepted":${lines.size},"rejected":{},"duplicate":false}"""
                } else {
                    refused.incrementAndGet()
                    """{"error":"busy"}"""
                }
                val bytes = body.toByteArray()
                ex.sendResponseHeaders(status, bytes.size.toLong())
                ex.responseBody.use { it.write(bytes) }
                ex.close()
            }
            server.start()
        }

        val url get() = "http://127.0.0.1:${server.address.port}/v1/reports"

        override fun close() {
            server.stop(0)
            (server.executor as java.util.concurrent.ExecutorService).shutdownNow()
        }
    }

    private val closing = ArrayList<AutoCloseable>()
    private val log: Logger = Logger.getLogger(Uploader::class.java.name)
    private var level: Level? = null

    @BeforeEach
    fun quiet() {
        level = log.level
        log.level = Level.WARNING // the retries' INFO lines
    }

    @AfterEach
    fun close() {
        log.level = level
        closing.forEach { it.close() }
    }

    private fun collector(answer: (Int, String) -> Int) = Collector(answer).also { closing.add(it) }

    private fun options(url: String, call: Double? = 60.0) =
        UploadOptions(listOf(url), "tok", timeoutSeconds = 10.0, callTimeoutSeconds = call, maxAttempts = 8, maxDelaySeconds = 0.0, sleep = {}, random = { 0.0 })

    /** 8 threads × 25 × (record + upload) on one client, each call through its own [Uploader]; the results. */
    private fun hammer(client: TelemetryClient, url: String): List<UploadResult> {
        val results = Collections.synchronizedList(ArrayList<UploadResult>())
        val errors = Collections.synchronizedList(ArrayList<Throwable>())
        val start = CyclicBarrier(8)
        val threads = (0 until 8).map { t ->
            thread(name = "uploader-$t") {
                try {
                    start.await()
                    repeat(25) { i ->
                        client.record("color", (t + i) % 4)
                        results.add(Uploader(options(url)).upload(client))
                    }
                } catch (e: Throwable) {
                    errors.add(e)
                }
            }
        }
        threads.forEach { it.join(120_000) }
        assertTrue(threads.none { it.isAlive }, "a thread is still uploading")
        assertEquals(emptyList<Throwable>(), errors.toList())
        return results.toList()
    }

    private fun check(client: TelemetryClient, c: Collector, results: List<UploadResult>) {
        val batches = c.sent.map { it.first }.toSet()
        // every POST is a batch's first send or a retry of one the collector refused: no batch went twice on its own
        assertEquals(c.posts.get(), batches.size + c.refused.get(), "POSTs ${c.posts.get()}, batches ${batches.size}, retries ${c.refused.get()}")
        // each batch acknowledged once, and the acknowledged lines are the 200 reports, each once
        assertEquals(batches.size, c.acknowledged.map { it.first }.toSet().size)
        assertEquals(c.acknowledged.size, c.acknowledged.map { it.first }.toSet().size, "a batch was acknowledged twice")
        assertEquals(200, c.acknowledged.sumOf { it.second.size })
        // what the collector stored for a batch is what every POST of it carried
        for ((id, lines) in c.sent) assertEquals(c.acknowledged.single { it.first == id }.second, lines)
        assertEquals(200L, results.sumOf { it.acknowledged })
        assertEquals(batches.size, results.sumOf { it.batches })
        assertEquals(0L, client.pending())
        assertEquals(200L, client.uploaded()["color"])
    }

    private fun client(store: StateStore) =
        TelemetryClient(TestSpecs.grr(perWindow = 1e6, lifetime = 1e6, maxBatch = 7), store, clock = { 1e6 })

    @Test
    fun `8 threads x 25 x (record + upload) - each report sent once, POSTs = batches`() {
        val c = collector { _, _ -> 200 }
        val client = client(FileStore(dir))
        val results = hammer(client, c.url)
        check(client, c, results)
        assertEquals(0, c.refused.get())
        assertEquals(200, c.sent.sumOf { it.second.size }, "lines sent")
    }

    @Test
    fun `with a collector refusing every 5th POST (503) - POSTs = batches + retries, each report acknowledged once`() {
        val c = collector { n, _ -> if (n % 5 == 0) 503 else 200 }
        val client = client(MemoryStore())
        val results = hammer(client, c.url)
        check(client, c, results)
        assertTrue(c.refused.get() > 0)
    }

    @Test
    fun `a call waiting for another upload stops at its own deadline having sent nothing`() {
        val entered = CountDownLatch(1)
        val release = CountDownLatch(1)
        val c = collector { _, _ ->
            entered.countDown()
            release.await(30, TimeUnit.SECONDS)
            200
        }
        val client = client(MemoryStore())
        repeat(3) { client.record("color", it) }
        var first: UploadResult? = null
        val t = thread { first = Uploader(options(c.url)).upload(client) }
        assertTrue(entered.await(30, TimeUnit.SECONDS))
        val second = Uploader(options(c.url, call = 0.2)).upload(client)
        assertEquals(Stopped.DEADLINE, second.stopped)
        assertEquals(0, second.batches)
        assertEquals(0L, second.acknowledged)
        assertEquals(1, c.posts.get())
        release.countDown()
        t.join(30_000)
        assertEquals(Stopped.EMPTY, first!!.stopped)
        assertEquals(3L, first!!.acknowledged)
        // the waiter's turn comes after: nothing left to send
        assertEquals(Stopped.EMPTY, Uploader(options(c.url)).upload(client).stopped)
        assertEquals(1, c.posts.get())
    }
}
