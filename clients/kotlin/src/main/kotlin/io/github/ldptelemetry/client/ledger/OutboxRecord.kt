package io.github.ldptelemetry.client.ledger

/** One report in the outbox: its local [id], its [metric] and its upload [line] (an envelope). */
public class OutboxRecord(public val id: Long, public val metric: String, public val line: String) {
    /** What the report counts against the outbox's cap: its line's UTF-8 bytes and a newline (counted, not encoded). */
    public val size: Long get() = utf8Length(line) + 1L

    internal companion object {
        fun utf8Length(s: String): Long {
            var n = 0L
            var i = 0
            while (i < s.length) {
                val c = s[i]
                n += when {
                    c.code < 0x80 -> 1
                    c.code < 0x800 -> 2
                    Character.isHighSurrogate(c) && i + 1 < s.length && Character.isLowSurrogate(s[i + 1]) -> { i++; 4 }
                    Character.isSurrogate(c) -> 1 // a lone surrogate: written as '?', as the log's encoder writes it
                    else -> 3
                }
                i++
            }
            return n
        }
    }
}
