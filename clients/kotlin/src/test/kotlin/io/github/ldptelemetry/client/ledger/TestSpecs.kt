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

    /** [grr]'s spec (one-second windows, 5 ε a window) with a two-aggregator metric beside `color`: `crashed`, RR
     * randomized on the device first (`two-aggregator+local`), ln 3 a report, k = 2 reports a window. */
    val withDap: CollectionSpec by lazy {
        CollectionSpec.parse(
            """
            {"spec_version": 1, "name": "ledger.test", "window_seconds": 1,
             "budget": {"per_window": 5.0, "lifetime": 1e9}, "upload": {"min_interval_seconds": 0, "max_batch": 7},
             "metrics": {"color": {"protocol": "grr", "params": {"epsilon": 1.0, "domain_size": 4},
                                   "budget": {"per_report": 1.0, "per_window": 5.0, "lifetime": 1e9}},
                         "crashed": {"protocol": "rr", "params": {"p": 0.25, "q": 0.75}, "trust": "two-aggregator+local",
                                     "budget": {"per_report": 1.1, "per_window": 2.2, "lifetime": 1e9}}}}
            """.trimIndent(),
        )
    }
}
