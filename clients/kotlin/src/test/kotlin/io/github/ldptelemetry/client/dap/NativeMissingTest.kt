package io.github.ldptelemetry.client.dap

import io.github.ldptelemetry.client.TelemetryClient
import io.github.ldptelemetry.client.ledger.MemoryStore
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.io.TempDir
import java.io.File
import java.util.concurrent.TimeUnit

/**
 * An app without JNA, or without the native library, records its other metrics as before, and a [DapTask] made there
 * throws an [IllegalStateException] saying what to add: each case in a child JVM of its own (a JVM loads a library
 * once), [NativeMissingChild].
 */
class NativeMissingTest {
    @TempDir
    lateinit var empty: File

    private fun child(classpath: List<String>): List<String> {
        val java = File(System.getProperty("java.home"), "bin/java").path
        val p = ProcessBuilder(java, "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Djna.library.path=${empty.path}",
            "-Dldp.dap.fixture=${System.getProperty("ldp.dap.fixture")}",
            "-cp", classpath.joinToString(File.pathSeparator), NativeMissingChild::class.java.name).redirectErrorStream(true).start()
        val out = p.inputStream.bufferedReader().readLines()
        assertTrue(p.waitFor(60, TimeUnit.SECONDS))
        assertEquals(0, p.exitValue(), out.joinToString("\n"))
        return out
    }

    @Test
    fun `without JNA or the native library, a DapTask says what to add`() {
        val cp = (System.getProperty("surefire.test.class.path") ?: System.getProperty("java.class.path")).split(File.pathSeparator)
        val noJna = cp.filter { !File(it).name.startsWith("jna-") }
        assertTrue(noJna.size < cp.size, "JNA is on the test classpath: $cp")
        val (recorded, error) = child(noJna)
        assertEquals("recorded 1", recorded)
        assertEquals("java.lang.IllegalStateException: two-aggregator metrics need JNA: add net.java.dev.jna:jna (5.19.1) to the app", error)
        val withJna = child(cp)
        assertEquals("recorded 1", withJna[0])
        assertTrue(withJna[1].startsWith("java.lang.IllegalStateException: two-aggregator metrics need the native library ldp_client for this platform"), withJna[1])
    }
}

/** The child of [NativeMissingTest]: records a local metric with no tasks, then makes a [DapTask]; prints both. */
object NativeMissingChild {
    @JvmStatic
    fun main(args: Array<String>) {
        val client = TelemetryClient(TaskFiles.spec, MemoryStore())
        client.record("color", 1L)
        println("recorded ${client.pending()}")
        try {
            DapTask(TaskFiles.of(TaskFiles.spec, "votes")).close()
            println("made a task")
        } catch (e: IllegalStateException) {
            println("${e.javaClass.name}: ${e.message}")
        }
    }
}
