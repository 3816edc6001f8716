package io.github.ldptelemetry.client.spec

import io.github.ldptelemetry.client.SpecException
import io.github.ldptelemetry.client.Vectors
import io.github.ldptelemetry.client.protocols.EncoderOptions
import java.io.File
import java.util.Random
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertThrows
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test

/** A spec the client cannot serve is refused when it is loaded, with every problem named by its JSON path. */
class SpecTest {
    private fun spec(metric: String) = """{"spec_version": 1, "name": "app", "budget": {"per_window": 4, "lifetime": 40},
        "metrics": {"m": $metric}}"""

    private fun errors(text: String): List<String> = assertThrows(SpecException::class.java) { CollectionSpec.parse(text) }.errors

    @Test
    fun `unknown protocol, bad epsilon, labels that do not match, budgets`() {
        assertTrue(errors(spec("""{"protocol": "nope", "params": {}, "budget": {"per_report": 1}}"""))[0].startsWith("metrics.m.protocol: unknown protocol \"nope\" (known: blh, bucket-grr,"))
        assertEquals(
            listOf("metrics.m.params.epsilon: must be finite and > 0, got -1"),
            errors(spec("""{"protocol": "grr", "params": {"epsilon": -1, "domain_size": 3}, "budget": {"per_report": 1}}""")),
        )
        assertEquals(
            listOf("metrics.m.params.labels: must have domain_size=3 entries, got 2"),
            errors(spec("""{"protocol": "grr", "params": {"epsilon": 1, "domain_size": 3, "labels": ["a", "b"]}, "budget": {"per_report": 1}}""")),
        )
        assertEquals(
            listOf("metrics.m.budget.per_report: ε=1.0 is less than what one grr report costs with these params (ε=2.0)"),
            errors(spec("""{"protocol": "grr", "params": {"epsilon": 2, "domain_size": 3}, "budget": {"per_report": 1}}""")),
        )
        assertEquals(listOf("$: not valid JSON: key \"m\" repeated in one object (at offset 109)"), errors(spec("{}").replace("\"m\": {}", "\"m\": {}, \"m\": {}")))
    }

    @Test
    fun `release central target is accepted, and refused with the client's texts`() {
        val ok = """{"spec_version": 1, "name": "app", "budget": {"per_window": 4, "lifetime": 40},
            "release": {"central": {"epsilon": 2.5, "delta": 1e-9, "windows": 365}},
            "metrics": {"m": {"protocol": "grr", "params": {"epsilon": 1, "domain_size": 3}, "budget": {"per_report": 1},
            "release": {"min_z": 2, "central": {"epsilon": 1, "delta": 0.5}}}}}"""
        assertEquals("1e330e9e1ad92b95", CollectionSpec.parse(ok).fingerprint)
        val bad = """{"spec_version": 1, "name": "app", "budget": {"per_window": 4, "lifetime": 40},
            "release": {"central": {"epsilon": 0, "delta": 1, "windows": 0, "x": 1}},
            "metrics": {"m": {"protocol": "grr", "params": {"epsilon": 1, "domain_size": 3}, "budget": {"per_report": 1},
            "release": {"central": {"epsilon": "1", "windows": 1000001}}}}}"""
        assertEquals(
            listOf(
                "release.central.x: unknown key (expected one of delta, epsilon, windows)",
                "release.central.epsilon: must be > 0, got 0",
                "release.central.delta: must be in (0, 1), got 1",
                "release.central.windows: must be >= 1, got 0",
                "metrics.m.release.central.delta: required",
                "metrics.m.release.central.epsilon: must be a finite number > 0, got a string",
                "metrics.m.release.central.windows: must be <= 1000000 (a horizon the accountant composes), got 1000001",
            ),
            errors(bad),
        )
    }

    @Test
    fun `mangled specs are refused with a SpecException, never another exception`() {
        val texts = Vectors.protocols().map { name -> io.github.ldptelemetry.client.internal.Json.write(Vectors.load(name)["spec"]) } +
            File(Vectors.dir, "../../examples").listFiles { f -> f.name.endsWith(".json") }.orEmpty().map { it.readText() }
        val random = Random(45)
        val alphabet = "{}[]\":,0123456789.-eE truefalsnl\\u\u00e9"
        var refused = 0
        repeat(20_000) { i ->
            val base = texts[i % texts.size]
            val chars = StringBuilder(base)
            repeat(1 + random.nextInt(3)) {
                val at = random.nextInt(chars.length)
                when (random.nextInt(3)) {
                    0 -> chars.deleteCharAt(at)
                    1 -> chars.insert(at, alphabet[random.nextInt(alphabet.length)])
                    else -> chars.setCharAt(at, alphabet[random.nextInt(alphabet.length)])
                }
            }
            try {
                val spec = CollectionSpec.parse(chars.toString())
                for (m in spec.metrics.values) {
                    val options = EncoderOptions(secret = byteArrayOf(1), cohort = if (m.protocol.assignedCohorts(m.params) > 0) 0 else null)
                    m.protocol.encoder(m.params, options)
                }
            } catch (e: SpecException) {
                refused++
            }
        }
        assertTrue(refused > 10_000, "most mutations are refused ($refused)")
    }
}
