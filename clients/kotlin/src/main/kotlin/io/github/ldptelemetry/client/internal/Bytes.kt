package io.github.ldptelemetry.client.internal

import java.security.MessageDigest
import javax.crypto.Mac
import javax.crypto.spec.SecretKeySpec

/** Bytes, hex and the hashes every protocol uses (docs/hashing.md): MurmurHash3_x86_32, MD5, SHA-256, HMAC-SHA256
 * (the last three from the platform's `java.security`/`javax.crypto` providers, present on every JVM and Android). */
internal object Bytes {
    private val HEX = "0123456789abcdef".toCharArray()

    /** Lowercase hex of [bytes]. */
    fun hex(bytes: ByteArray): String {
        val out = CharArray(bytes.size * 2)
        for ((i, b) in bytes.withIndex()) {
            out[2 * i] = HEX[(b.toInt() shr 4) and 0xf]
            out[2 * i + 1] = HEX[b.toInt() and 0xf]
        }
        return String(out)
    }

    /** The bytes of an even-length hex string. */
    fun fromHex(hex: String): ByteArray {
        require(hex.length % 2 == 0) { "hex string of odd length ${hex.length}" }
        return ByteArray(hex.length / 2) { i ->
            val hi = Character.digit(hex[2 * i], 16)
            val lo = Character.digit(hex[2 * i + 1], 16)
            require(hi >= 0 && lo >= 0) { "not a hex string" }
            ((hi shl 4) or lo).toByte()
        }
    }

    fun concat(vararg parts: ByteArray): ByteArray {
        val out = ByteArray(parts.sumOf { it.size })
        var off = 0
        for (p in parts) {
            System.arraycopy(p, 0, out, off, p.size)
            off += p.size
        }
        return out
    }

    /** `n.to_bytes(4, "big")` for `0 <= n < 2^32`. */
    fun uint32BE(n: Long): ByteArray {
        if (n < 0 || n > 0xffffffffL) throw IllegalArgumentException("a uint32 must be in [0, 2^32), got $n")
        return byteArrayOf((n ushr 24).toByte(), (n ushr 16).toByte(), (n ushr 8).toByte(), n.toByte())
    }

    /** `n.to_bytes(8, "big")`. */
    fun uint64BE(n: Long): ByteArray = ByteArray(8) { (n ushr (56 - 8 * it)).toByte() }

    /** `n.to_bytes(4, "little")` for `0 <= n < 2^32`. */
    fun uint32LE(n: Long): ByteArray = byteArrayOf(n.toByte(), (n ushr 8).toByte(), (n ushr 16).toByte(), (n ushr 24).toByte())

    /** The unsigned value of a 64-bit word (without `Long.toUnsignedString`, which Android 24 lacks). */
    fun unsigned(v: Long): java.math.BigInteger =
        java.math.BigInteger.valueOf(v ushr 1).shiftLeft(1).add(java.math.BigInteger.valueOf(v and 1L))

    private const val B64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

    /** Unpadded base64url of [bytes] (RFC 4648 §5; DAP's encoding of IDs in URLs and JSON). Written here: Android 24
     * lacks `java.util.Base64`. */
    fun base64Url(bytes: ByteArray): String {
        val out = StringBuilder((bytes.size * 4 + 2) / 3)
        var i = 0
        while (i < bytes.size) {
            val n = minOf(3, bytes.size - i)
            var word = 0
            for (j in 0 until 3) word = (word shl 8) or (if (j < n) bytes[i + j].toInt() and 0xff else 0)
            for (j in 0..n) out.append(B64URL[(word ushr (18 - 6 * j)) and 0x3f])
            i += 3
        }
        return out.toString()
    }

    /** The bytes of unpadded (or padded) base64url [text]; null when it is not (empty, another character, a length
     * no encoding has, or bits set past the last byte). */
    fun fromBase64Url(text: String): ByteArray? {
        val body = text.trimEnd('=')
        if (body.isEmpty() || body.length % 4 == 1 || text.length - body.length > 2) return null
        val out = java.io.ByteArrayOutputStream(body.length * 3 / 4)
        var word = 0
        var bits = 0
        for (c in body) {
            val v = B64URL.indexOf(c)
            if (v < 0) return null
            word = (word shl 6) or v
            bits += 6
            if (bits >= 8) {
                bits -= 8
                out.write((word ushr bits) and 0xff)
            }
        }
        if (word and ((1 shl bits) - 1) != 0) return null
        return out.toByteArray()
    }

    /** ASCII bytes of a tag or fingerprint. */
    fun ascii(s: String): ByteArray = s.toByteArray(Charsets.US_ASCII)

    /** Strict UTF-8 of [s]: a lone surrogate is refused (`not_encodable`, as `value_bytes`). */
    fun utf8(s: String): ByteArray {
        var i = 0
        while (i < s.length) {
            val c = s[i]
            if (Character.isHighSurrogate(c) && i + 1 < s.length && Character.isLowSurrogate(s[i + 1])) {
                i += 2
            } else if (Character.isSurrogate(c)) {
                throw Refuse.notEncodable("utf-8", "the value has no UTF-8 form: it holds a lone surrogate ${Refuse.quote(c.toString())} at index $i")
            } else {
                i++
            }
        }
        return s.toByteArray(Charsets.UTF_8)
    }

    /** The bytes hashed for a value (`value_bytes`): a string's strict UTF-8, a [ByteArray] itself. */
    fun valueBytes(value: Any?): ByteArray = when (value) {
        is String -> utf8(value)
        is ByteArray -> value
        else -> throw Refuse.valueType("string_or_bytes", value, "values to hash must be strings or bytes, got ${Refuse.kind(value)}")
    }

    // --------------------------------------------------------------------------------------------------------
    // Hashes

    /** MurmurHash3_x86_32 of [data] with [seed] (an unsigned 32-bit value), as an unsigned value in [0, 2^32). */
    fun murmur3(data: ByteArray, seed: Long): Long {
        val c1 = -0x3361d2af // 0xcc9e2d51
        val c2 = 0x1b873593
        val n = data.size
        val blocks = n and 3.inv()
        var h = seed.toInt()
        var i = 0
        while (i < blocks) {
            var k = (data[i].toInt() and 0xff) or ((data[i + 1].toInt() and 0xff) shl 8) or
                ((data[i + 2].toInt() and 0xff) shl 16) or ((data[i + 3].toInt() and 0xff) shl 24)
            k *= c1
            k = Integer.rotateLeft(k, 15)
            k *= c2
            h = h xor k
            h = Integer.rotateLeft(h, 13)
            h = h * 5 + -0x19ab949c // 0xe6546b64
            i += 4
        }
        val tail = n and 3
        if (tail != 0) {
            var k = 0
            if (tail == 3) k = k xor ((data[blocks + 2].toInt() and 0xff) shl 16)
            if (tail >= 2) k = k xor ((data[blocks + 1].toInt() and 0xff) shl 8)
            k = k xor (data[blocks].toInt() and 0xff)
            k *= c1
            k = Integer.rotateLeft(k, 15)
            k *= c2
            h = h xor k
        }
        h = h xor n
        h = h xor (h ushr 16)
        h *= -0x7a143595 // 0x85ebca6b
        h = h xor (h ushr 13)
        h *= -0x3d4d51cb // 0xc2b2ae35
        h = h xor (h ushr 16)
        return h.toLong() and 0xffffffffL
    }

    fun md5(data: ByteArray): ByteArray = MessageDigest.getInstance("MD5").digest(data)

    fun sha256(vararg parts: ByteArray): ByteArray {
        val md = MessageDigest.getInstance("SHA-256")
        for (p in parts) md.update(p)
        return md.digest()
    }

    /** HMAC-SHA256 of the concatenation of [parts] under [key]. */
    fun hmacSha256(key: ByteArray, vararg parts: ByteArray): ByteArray {
        val mac = hmac(key)
        for (p in parts) mac.update(p)
        return mac.doFinal()
    }

    /** A fresh HMAC-SHA256 instance keyed with [key] (must be non-empty). */
    fun hmac(key: ByteArray): Mac {
        if (key.isEmpty()) throw IllegalArgumentException("the key must be non-empty bytes")
        return Mac.getInstance("HmacSHA256").apply { init(SecretKeySpec(key, "HmacSHA256")) }
    }

    /** The metric secret a device gives a memoizing encoder: `HMAC-SHA256(device_secret,
     * "ldp/client/metric-secret/v1\0" ‖ metric)`. */
    fun metricSecret(deviceSecret: ByteArray, metric: String): ByteArray =
        hmacSha256(deviceSecret, ascii("ldp/client/metric-secret/v1\u0000"), utf8(metric))
}
