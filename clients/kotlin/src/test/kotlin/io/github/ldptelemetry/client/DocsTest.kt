package io.github.ldptelemetry.client

import io.github.ldptelemetry.client.protocols.Protocols
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Test
import java.io.File

/** The docs say what the client does: docs/kotlin-client.md's protocol rows and docs/conformance.md's Kotlin column
 * are the client's own lists. */
class DocsTest {
    private val docs = File(Vectors.dir, "../../docs")

    private fun names(cell: String): List<String> = Regex("`([^`]+)`").findAll(cell).map { it.groupValues[1] }.toList().sorted()

    private fun row(page: String, key: String): String =
        File(docs, page).readLines().first { it.startsWith("| $key |") }.split("|")[2]

    @Test
    fun `the Kotlin page lists the protocols and the not-yet list`() {
        assertEquals(Protocols.names.sorted(), names(row("kotlin-client.md", "protocols")))
        val notYet = row("kotlin-client.md", "not yet")
        assertEquals(Protocols.NOT_YET.sorted(), if (notYet.trim() == "none") emptyList() else names(notYet))
    }

    @Test
    fun `the conformance page's Kotlin column is the client's`() {
        val lines = File(docs, "conformance.md").readLines()
        val start = lines.indexOfFirst { it.startsWith("| protocol | Python | TypeScript | Kotlin |") }
        val rows = lines.drop(start + 2).takeWhile { it.startsWith("|") }.map { it.split("|").map(String::trim) }
        assertEquals(Vectors.protocols(), rows.map { it[1].trim('`') }.sorted(), "one row per vector file")
        assertEquals(Protocols.names.sorted(), rows.filter { it[4] == "yes" }.map { it[1].trim('`') }.sorted())
    }
}
