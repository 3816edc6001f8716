package io.github.ldptelemetry.client

import io.github.ldptelemetry.client.internal.Json
import java.io.File

/** The shared conformance vectors (`conformance/vectors`, docs/conformance.md), as the JSON reader gives them. */
object Vectors {
    val dir: File = File(System.getProperty("ldp.vectors") ?: "../../conformance/vectors")

    /** The protocol names of every vector file (all but primitives.json). */
    fun protocols(): List<String> =
        (dir.listFiles() ?: error("no vectors at $dir")).map { it.name }.filter { it.endsWith(".json") && it != "primitives.json" }
            .map { it.removeSuffix(".json") }.sorted()

    @Suppress("UNCHECKED_CAST")
    fun load(name: String): Map<String, Any?> = Json.parse(File(dir, "$name.json").readText()) as Map<String, Any?>
}

@Suppress("UNCHECKED_CAST")
fun Any?.obj(): Map<String, Any?> = this as Map<String, Any?>

@Suppress("UNCHECKED_CAST")
fun Any?.list(): List<Any?> = this as List<Any?>

/** Within [ulps] units in the last place (a cost from log/log1p may differ in its last digits between math
 * libraries: docs/conformance.md section 5). */
fun closeUlps(a: Double, b: Double, ulps: Int = 4): Boolean {
    if (a == b) return true
    val scale = maxOf(Math.abs(a), Math.abs(b)) * Math.ulp(1.0)
    return Math.abs(a - b) <= ulps * scale
}
