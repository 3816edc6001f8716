package io.github.ldptelemetry.client.dap

import io.github.ldptelemetry.client.internal.Bytes
import io.github.ldptelemetry.client.upload.DapUpload
import org.junit.jupiter.api.Assertions.assertArrayEquals
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import java.util.Base64
import java.util.Random

/**
 * The parsers of the two-aggregator lane, fuzzed: base64url (written here for Android 24) against the JDK's codec,
 * the outbox line of a DAP report and a leader's problem document, mutated at random; each either reads its input
 * or says it cannot (null), never throws.
 */
class DapParsersTest {
    private val random = Random(87)
    private val alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_=+/ {}\":,\\é"

    private fun mutate(base: String): String {
        val chars = StringBuilder(base)
        repeat(1 + random.nextInt(3)) {
            val at = random.nextInt(chars.length + 1)
            when (random.nextInt(3)) {
                0 -> if (at < chars.length) chars.deleteCharAt(at)
                1 -> chars.insert(at, alphabet[random.nextInt(alphabet.length)])
                else -> if (at < chars.length) chars.setCharAt(at, alphabet[random.nextInt(alphabet.length)])
            }
        }
        return chars.toString()
    }

    @Test
    fun `base64url is the JDK's, both ways`() {
        val jdk = Base64.getUrlEncoder().withoutPadding()
        repeat(2_000) {
            val bytes = ByteArray(random.nextInt(80)) { random.nextInt(256).toByte() }
            val text = Bytes.base64Url(bytes)
            assertEquals(jdk.encodeToString(bytes), text)
            if (bytes.isNotEmpty()) assertArrayEquals(bytes, Bytes.fromBase64Url(text))
            if (bytes.isNotEmpty()) assertArrayEquals(bytes, Bytes.fromBase64Url(Base64.getUrlEncoder().encodeToString(bytes)), "padded")
            val mutated = mutate(text)
            val ours = Bytes.fromBase64Url(mutated) ?: return@repeat
            assertArrayEquals(Base64.getUrlDecoder().decode(mutated.trimEnd('=')), ours, mutated)
        }
        assertNull(Bytes.fromBase64Url(""))
        assertNull(Bytes.fromBase64Url("QR"), "bits set past the last byte")
        assertNull(Bytes.fromBase64Url("Q"), "no encoding is one character long")
    }

    @Test
    fun `a mutated outbox line is read or refused, never thrown`() {
        val line = DapLine.write(Bytes.base64Url(ByteArray(32) { 7 }), ByteArray(60) { it.toByte() })
        assertEquals(Bytes.base64Url(ByteArray(32) { 7 }), DapLine.parse(line)!!.first)
        assertTrue(DapLine.isDap(line))
        var read = 0
        repeat(5_000) { if (DapLine.parse(mutate(line)) != null) read++ }
        assertTrue(read in 1 until 5_000, "some mutations still read ($read)")
        assertNull(DapLine.parse("""{"task_id": "AAAA", "report": "AAAA"}"""), "a task ID is 32 bytes")
        assertNull(DapLine.parse("""{"spec": "x", "metric": "m"}"""))
    }

    @Test
    fun `a mutated problem document gives a code or null, never throws`() {
        val docs = listOf("""{"code": "report_too_early"}""", """{"type": "urn:ietf:params:ppm:dap:error:reportRejected"}""")
        repeat(5_000) { i ->
            val code = DapUpload.refusalCode(mutate(docs[i % 2]).toByteArray())
            assertTrue(code == null || Regex("[a-z_]+").matches(code), code)
        }
    }
}
