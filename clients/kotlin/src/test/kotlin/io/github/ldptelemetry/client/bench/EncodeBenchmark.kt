package io.github.ldptelemetry.client.bench

import io.github.ldptelemetry.client.internal.Json
import io.github.ldptelemetry.client.protocols.EncoderOptions
import io.github.ldptelemetry.client.protocols.Protocols
import io.github.ldptelemetry.client.random.SecureRandomSource

/**
 * Per-report `encode` time of the Kotlin client (run by `simulations/bench_kotlin.py`, never as a timed test).
 *
 * Argument: a JSON object `{case: {"protocol", "params", "value", "secret"?: bool}}`. For each case, one encoder
 * from the OS CSPRNG ([SecureRandomSource]) encodes the value `calls` times after a warm-up of the same length
 * (the JIT compiles the path); prints one JSON object `{case: {"us_mean", "us_median_of_batches",
 * "us_best_batch", "calls", "batch"}}` on stdout. Each report is turned into its JSON text, as an upload needs.
 */
object EncodeBenchmark {
    @JvmStatic
    fun main(args: Array<String>) {
        @Suppress("UNCHECKED_CAST")
        val cases = Json.parse(args[0]) as Map<String, Map<String, Any?>>
        val calls = args.getOrNull(1)?.toInt() ?: 200_000
        val batch = 1_000
        val out = LinkedHashMap<String, Any?>()
        for ((name, case) in cases) {
            val protocol = Protocols[case["protocol"] as String] ?: error("no protocol ${case["protocol"]}")
            val params = protocol.paramsOf(case["params"])
            val secret = if (protocol.needsSecret) ByteArray(32) { it.toByte() } else null
            val cohort = if (protocol.assignedCohorts(params) > 0) 0 else null
            val encoder = protocol.encoder(params, EncoderOptions(rng = SecureRandomSource(), secret = secret, cohort = cohort))
            val value = case["value"]
            var sink = 0
            repeat(calls) { sink += encoder.encode(value).toJson().length } // warm-up: JIT
            val perBatch = DoubleArray(calls / batch)
            for (b in perBatch.indices) {
                val t0 = System.nanoTime()
                for (i in 0 until batch) sink += encoder.encode(value).toJson().length
                perBatch[b] = (System.nanoTime() - t0) / 1e3 / batch
            }
            val sorted = perBatch.sorted()
            out[name] = linkedMapOf(
                "us_mean" to perBatch.average(), "us_median_of_batches" to sorted[sorted.size / 2],
                "us_best_batch" to sorted.first(), "calls" to (perBatch.size * batch).toLong(), "batch" to batch.toLong(),
                "check" to (sink > 0),
            )
        }
        out["jvm"] = System.getProperty("java.vm.name") + " " + System.getProperty("java.version")
        println(Json.write(out))
    }
}
