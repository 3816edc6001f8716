package io.github.ldptelemetry.client.ledger

import io.github.ldptelemetry.client.spec.CollectionSpec

/** Specs the ledger tests use. */
object TestSpecs {
    /** One GRR metric at ε = 1 per report, [perWindow] ε per window of [windowSeconds], [lifetime] in all. */
    fun grr(perWindow: Double = 5.0, lifetime: Double = 1000.0, windowSeconds: Long = 1, minInterval: Long = 0, maxBatch: Int = 7): CollectionSpec =
        CollectionSpec.parse(
            """
            {"spec_version": 1, "name": "ledger.test", "window_seconds": $windowSeconds,
             "budget": {"per_window": $perWindow, "lifetime": $lifetime},
             "upload": {"min_interval_seconds": $minInterval, "max_batch": $maxBatch},
             "metrics": {"color": {"protocol": "grr", "params": {"epsilon": 1.0, "domain_size": 4},
                                   "budget": {"per_report": 1.0, "per_window": $perWindow, "lifetime": $lifetime}}}}
            """.trimIndent(),
        )
}
