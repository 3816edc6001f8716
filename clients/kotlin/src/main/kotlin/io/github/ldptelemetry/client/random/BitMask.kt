package io.github.ldptelemetry.client.random

/**
 * A fixed-width set of bits, bit `i` being lane `i` (as Python's `int` masks and `bitarray`s with little-endian
 * order): what `BB(x, n)` draws and what a `bits` payload field holds. Words are little-endian (bit `i` is bit
 * `i mod 64` of word `i / 64`); bits at and above [size] are always 0.
 */
public class BitMask(public val size: Int, internal val words: LongArray = LongArray(wordsFor(size))) {
    init {
        require(size >= 0) { "a mask has a size >= 0, got $size" }
        require(words.size == wordsFor(size)) { "a mask of $size bits has ${wordsFor(size)} words, got ${words.size}" }
    }

    public operator fun get(i: Int): Boolean = (words[i ushr 6] ushr (i and 63)) and 1L != 0L

    public operator fun set(i: Int, value: Boolean) {
        checkIndex(i)
        val bit = 1L shl (i and 63)
        words[i ushr 6] = if (value) words[i ushr 6] or bit else words[i ushr 6] and bit.inv()
    }

    public fun flip(i: Int) {
        checkIndex(i)
        words[i ushr 6] = words[i ushr 6] xor (1L shl (i and 63))
    }

    private fun checkIndex(i: Int) {
        if (i < 0 || i >= size) throw IndexOutOfBoundsException("bit $i of a $size-bit mask")
    }

    public fun copy(): BitMask = BitMask(size, words.copyOf())

    /** The number of set bits. */
    public fun cardinality(): Int = words.sumOf { java.lang.Long.bitCount(it) }

    public infix fun and(o: BitMask): BitMask = combine(o) { a, b -> a and b }
    public infix fun or(o: BitMask): BitMask = combine(o) { a, b -> a or b }
    public infix fun xor(o: BitMask): BitMask = combine(o) { a, b -> a xor b }

    /** `this AND NOT o`. */
    public infix fun andNot(o: BitMask): BitMask = combine(o) { a, b -> a and b.inv() }

    private inline fun combine(o: BitMask, f: (Long, Long) -> Long): BitMask {
        require(o.size == size) { "masks of $size and ${o.size} bits" }
        return BitMask(size, LongArray(words.size) { f(words[it], o.words[it]) })
    }

    /** The `bits` field text: `size` characters `0`/`1`, character `i` being bit `i`. */
    public fun toBitString(): String {
        val out = CharArray(size)
        for (i in 0 until size) out[i] = if (get(i)) '1' else '0'
        return String(out)
    }

    /** The indices of the set bits, lowest first. */
    public fun setBits(): IntArray {
        val out = IntArray(cardinality())
        var n = 0
        for (w in words.indices) {
            var word = words[w]
            while (word != 0L) {
                out[n++] = (w shl 6) + java.lang.Long.numberOfTrailingZeros(word)
                word = word and (word - 1)
            }
        }
        return out
    }

    override fun equals(other: Any?): Boolean = other is BitMask && other.size == size && other.words.contentEquals(words)
    override fun hashCode(): Int = 31 * size + words.contentHashCode()
    override fun toString(): String = "BitMask(${toBitString()})"

    public companion object {
        internal fun wordsFor(size: Int) = (size + 63) ushr 6

        /** The mask of the `0`/`1` text [bits] (character `i` is bit `i`). */
        public fun parse(bits: String): BitMask {
            val m = BitMask(bits.length)
            for ((i, c) in bits.withIndex()) {
                when (c) {
                    '1' -> m[i] = true
                    '0' -> {}
                    else -> throw IllegalArgumentException("a bits string holds only 0 and 1, got ${c.code} at $i")
                }
            }
            return m
        }

        /** A mask with the single bit [i] set. */
        public fun single(size: Int, i: Int): BitMask = BitMask(size).also { it[i] = true }

        /** The low [size] bits of a 64-bit value. */
        public fun ofLong(size: Int, value: Long): BitMask {
            require(size <= 64)
            val m = BitMask(size)
            if (size > 0) m.words[0] = if (size == 64) value else value and ((1L shl size) - 1)
            return m
        }
    }
}
