package io.github.ldptelemetry.client.random

import io.github.ldptelemetry.client.ReplayException
import io.github.ldptelemetry.client.internal.Bytes
import java.security.SecureRandom
import javax.crypto.Mac

/**
 * A source reading `randbits(k)` from a byte stream, as Python's system and keyed sources do: the next `ceil(k/8)`
 * bytes as a little-endian integer, keeping its low `k` bits.
 */
public abstract class ByteStreamSource : RandomSource() {
    /** Fills `out[off until off + len]` with the stream's next bytes. */
    protected abstract fun nextBytes(out: ByteArray, off: Int, len: Int)

    private val eight = ByteArray(8)

    override fun bits(k: Int): Long {
        if (k == 0) return 0
        require(k in 1..64) { "bits(k) takes 0 <= k <= 64, got $k" }
        val n = (k + 7) ushr 3
        nextBytes(eight, 0, n)
        var v = 0L
        for (i in 0 until n) v = v or ((eight[i].toLong() and 0xff) shl (8 * i))
        java.util.Arrays.fill(eight, 0)
        return if (k == 64) v else v and ((1L shl k) - 1)
    }

    override fun wideBits(k: Int, into: LongArray) {
        if (k == 0) return java.util.Arrays.fill(into, 0L)
        require(k >= 1) { "wideBits(k) takes k >= 0, got $k" }
        val n = (k + 7) ushr 3
        val buf = ByteArray(n)
        nextBytes(buf, 0, n)
        val words = (k + 63) ushr 6
        for (w in 0 until words) {
            var v = 0L
            for (b in 0 until 8) {
                val i = 8 * w + b
                if (i < n) v = v or ((buf[i].toLong() and 0xff) shl (8 * b))
            }
            into[w] = v
        }
        if (words < into.size) java.util.Arrays.fill(into, words, into.size, 0L)
        val rem = k and 63
        if (rem != 0) into[words - 1] = into[words - 1] and ((1L shl rem) - 1)
        java.util.Arrays.fill(buf, 0)
    }
}

/**
 * The platform's CSPRNG ([SecureRandom]: on Android and Linux JVMs, the kernel's generator): every client's default.
 * Bytes come from a pool refilled [POOL] bytes at a time, each byte used by one draw at most and zeroed once used;
 * [tokenBytes] (secrets) reads fresh bytes, never the pool.
 */
public class SecureRandomSource(private val random: SecureRandom = SecureRandom()) : ByteStreamSource() {
    private val pool = ByteArray(POOL)
    private var offset = POOL

    override fun nextBytes(out: ByteArray, off: Int, len: Int) {
        if (len > POOL) {
            val fresh = ByteArray(len)
            random.nextBytes(fresh)
            System.arraycopy(fresh, 0, out, off, len)
            return
        }
        if (offset + len > POOL) {
            random.nextBytes(pool)
            offset = 0
        }
        System.arraycopy(pool, offset, out, off, len)
        java.util.Arrays.fill(pool, offset, offset + len, 0)
        offset += len
    }

    override fun tokenBytes(n: Int): ByteArray = ByteArray(maxOf(n, 0)).also { random.nextBytes(it) }

    override fun toString(): String = "SecureRandomSource()"

    private companion object {
        const val POOL = 4096
    }
}

/**
 * Deterministic randomness from a secret key and a message (Python's `KeyedRandomSource`): the stream
 * `HMAC-SHA256(key, message ‖ uint32_BE(0)) ‖ HMAC-SHA256(key, message ‖ uint32_BE(1)) ‖ …`. The same key and
 * message always give the same draws: what the memoized (permanent) responses are drawn from.
 */
public class KeyedRandomSource(key: ByteArray, message: ByteArray) : ByteStreamSource() {
    private val mac: Mac = Bytes.hmac(key)
    private val message = message.copyOf()
    private var block = 0L
    private var buffer = ByteArray(0)
    private var offset = 0

    override fun nextBytes(out: ByteArray, off: Int, len: Int) {
        var done = 0
        while (done < len) {
            if (offset == buffer.size) {
                mac.update(message)
                mac.update(Bytes.uint32BE(block++))
                buffer = mac.doFinal()
                offset = 0
            }
            val n = minOf(len - done, buffer.size - offset)
            System.arraycopy(buffer, offset, out, off + done, n)
            offset += n
            done += n
        }
    }

    override fun toString(): String = "KeyedRandomSource(<secret>)"
}

/**
 * Replays recorded draws (Python's `ReplaySource`; the conformance vectors' `draws`): each `randbits(k)` returns the
 * next record after checking that its `k` is the one asked for; a different `k`, or a call past the end, is a
 * [ReplayException] naming the position.
 */
public class ReplaySource(draws: List<Pair<Int, String>>) : RandomSource() {
    private val ks = IntArray(draws.size)
    private val values = arrayOfNulls<LongArray>(draws.size)
    private var next = 0

    init {
        for ((i, d) in draws.withIndex()) {
            val (k, hex) = d
            val words = (k + 63) ushr 6
            val big = if (hex.isNotEmpty() && hex.all { it in '0'..'9' || it in 'a'..'f' }) java.math.BigInteger(hex, 16) else null
            if (k < 1 || big == null || big.bitLength() > k) {
                throw IllegalArgumentException("draw $i: expected (k >= 1, value in [0, 2**k)), got ($k, '$hex')")
            }
            ks[i] = k
            values[i] = LongArray(words) { w -> big.shiftRight(64 * w).toLong() }
        }
    }

    private fun take(k: Int): LongArray {
        if (k == 0) return ZERO // randbits(0) draws nothing (a recording never holds it)
        val i = next
        if (i >= ks.size) throw ReplayException("draw $i: randbits($k) asked past the end of the ${ks.size} recorded draws")
        if (ks[i] != k) throw ReplayException("draw $i: randbits($k) asked where the recording has randbits(${ks[i]})")
        next = i + 1
        return values[i]!!
    }

    override fun bits(k: Int): Long = take(k)[0]

    override fun wideBits(k: Int, into: LongArray) {
        val v = take(k)
        System.arraycopy(v, 0, into, 0, v.size)
        if (v.size < into.size) java.util.Arrays.fill(into, v.size, into.size, 0L)
    }

    /** Records not consumed yet. */
    public fun remaining(): Int = ks.size - next

    private companion object {
        val ZERO = LongArray(1)
    }
}

/** Records every `randbits` call of [inner] as `(k, hex)` pairs a [ReplaySource] replays (tests and audits). */
public class RecordingSource(private val inner: RandomSource) : RandomSource() {
    private val recorded = ArrayList<Pair<Int, String>>()
    public val draws: List<Pair<Int, String>> get() = recorded

    override fun bits(k: Int): Long = inner.bits(k).also { recorded.add(k to java.lang.Long.toHexString(it)) }

    override fun wideBits(k: Int, into: LongArray) {
        inner.wideBits(k, into)
        var big = java.math.BigInteger.ZERO
        for (w in ((k + 63) ushr 6) - 1 downTo 0) big = big.shiftLeft(64).or(Bytes.unsigned(into[w]))
        recorded.add(k to big.toString(16))
    }
}
