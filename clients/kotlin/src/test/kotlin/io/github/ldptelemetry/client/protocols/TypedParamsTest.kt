package io.github.ldptelemetry.client.protocols

import io.github.ldptelemetry.client.LdpTypeException
import io.github.ldptelemetry.client.LdpValueException
import io.github.ldptelemetry.client.RefusalCode
import io.github.ldptelemetry.client.Vectors
import io.github.ldptelemetry.client.obj
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertThrows
import org.junit.jupiter.api.Test

/** Every protocol's typed parameter class built from its properties is the one a spec's `params` object gives (the
 * vectors' first parameter set, same fingerprint), and refuses what the spec path refuses. */
class TypedParamsTest {
    private val edges = listOf(0.0, 1.0, 2.0, 4.0)

    /** One typed construction per protocol: the vectors' first parameter set, written in Kotlin. */
    private val typed: Map<String, () -> ProtocolParams> = mapOf(
        "rr" to { BinaryRRParams(p = 0.25, q = 0.75) },
        "grr" to { GRRParams(epsilon = 1.0, domainSize = 3) },
        "lgrr" to { LGRRParams(epsilonPerm = 2.0, epsilon = 0.5, domainSize = 3) },
        "thresh" to { ThreshParams(epsilon = 1.0, domainSize = 3) },
        "sue" to { SUEParams(epsilon = 1.0, domainSize = 2) },
        "oue" to { OUEParams(epsilon = 0.7, domainSize = 11) },
        "loue" to { LOUEParams(epsilonPerm = 2.0, epsilon = 0.5, domainSize = 3) },
        "olh" to { OLHParams(epsilon = 1.0, domainSize = 4) },
        "blh" to { BLHParams(epsilon = 1.0, domainSize = 4) },
        "hr" to { HRParams(epsilon = 1.0, domainSize = 3) },
        "hr-block" to { HRBlockParams(epsilon = 1.0, domainSize = 3, blocks = 1) },
        "pgr" to { PGRParams(epsilon = 1.0, domainSize = 13, q = 3) },
        "hpg" to { HPGParams(epsilon = 1.0, domainSize = 5, q = 2, blocks = 2) },
        "ss" to { SSParams(epsilon = 1.0, domainSize = 4) },
        "duchi" to { DuchiParams(epsilon = 1.0, low = 0.0, high = 10.0) },
        "piecewise" to { PiecewiseParams(epsilon = 1.0, low = 0.0, high = 10.0) },
        "hybrid" to { HybridParams(epsilon = 1.0, low = 0.0, high = 10.0) },
        "memo-mean" to { MemoMeanParams(epsilon = 1.0, low = 0.0, high = 10.0, buckets = 2, gamma = 0.1) },
        "cms" to { CmsParams(epsilon = 2.0, numHashes = 2, width = 8) },
        "hcms" to { HcmsParams(epsilon = 2.0, numHashes = 2, width = 8) },
        "dbitflip" to { DBitFlipParams(epsilon = 1.0, edges = edges) },
        "bucket-grr" to { BucketGRRParams(epsilon = 1.0, edges = edges) },
        "bucket-oue" to { BucketOUEParams(epsilon = 1.0, edges = edges) },
        "memo-dbitflip" to { MemoDBitFlipParams(epsilon = 2.0, edges = edges, d = 2) },
        "hh" to { HHParams(epsilon = 1.0, low = 0.0, high = 4.0, branching = 2, depth = 2, oracle = "oue") },
        "multi" to {
            MultiParams(
                epsilon = 1.5, mode = "split",
                attributes = listOf(
                    MultiParams.Attribute("a", "grr", mapOf("domain_size" to 3L, "labels" to null)),
                    MultiParams.Attribute("x", "duchi", mapOf("low" to 0.0, "high" to 1.0, "clip" to false)),
                    MultiParams.Attribute("s", "rr"),
                ),
            )
        },
        "pem" to { PEMParams(epsilon = 2.0, maxLength = 1, startBits = 4, stepBits = 4) },
        "rappor" to { RapporParams(numBloombits = 16, numHashes = 2, numCohorts = 1, p = 0.25, q = 0.75, f = 0.5) },
        "rappor-ngrams" to {
            RapporNgramsParams(
                numBloombits = 16, numHashes = 2, numCohorts = 1, p = 0.25, q = 0.75, f = 0.5,
                gramBloombits = 8, gramHashes = 2, gramCohorts = 1, gramP = 0.45, gramQ = 0.55, gramF = 0.75,
                maxLength = 4, alphabet = "abc",
            )
        },
        "sfp" to {
            SfpParams(
                wordEpsilon = 2.0, fragmentEpsilon = 2.0, alphabet = "abc", length = 4, hashBits = 2,
                wordNumHashes = 4, wordWidth = 16, fragmentNumHashes = 4, fragmentWidth = 16,
            )
        },
    )

    @Test
    fun `every protocol's typed params are the spec's`() {
        assertEquals(Protocols.names.toSet(), typed.keys, "one typed construction per protocol")
        for ((name, make) in typed) {
            val vector = Vectors.load(name)["params"].let { if (it is List<*>) it.first() else it }.obj()
            val spec = vector["params"].obj()
            val params = make()
            assertEquals(vector["fingerprint"], params.fingerprint, "$name: the typed parameters are the vectors'")
            assertEquals(Protocols[name]!!.paramsOf(spec), params, name)
            assertEquals(params.fields.map { it.name }, params.toDict().keys.toList(), "$name: every field, in order")
        }
    }

    @Test
    fun `typed GRR params are the spec's`() {
        val typed = GRRParams(1.0, 3)
        val read = GRRParams.read(mapOf("epsilon" to 1L, "domain_size" to 3L))
        assertEquals(read.fingerprint, typed.fingerprint)
        assertEquals(read, typed)
        assertEquals(1.0, typed.epsilon)
        assertEquals(3, typed.domainSize)
        assertNull(typed.labels)
        val labeled = GRRParams(2.0, 2, listOf("no", "yes"))
        assertEquals(1, labeled.indexOf("yes"))
        assertEquals(
            Protocols["grr"]!!.paramsOf(mapOf("epsilon" to 2.0, "domain_size" to 2L, "labels" to listOf("no", "yes"))).fingerprint,
            labeled.fingerprint,
        )
        assertEquals(mapOf("epsilon" to 1.0, "domain_size" to 3L, "labels" to null), typed.toDict())
    }

    @Test
    fun `typed params refuse as the spec path does`() {
        val range = assertThrows(LdpValueException::class.java) { GRRParams(-1.0, 3) }
        assertEquals(RefusalCode.PARAM_RANGE, range.code)
        assertEquals(mapOf("param" to "epsilon", "got" to -1.0, "min" to 0L, "min_exclusive" to true, "finite" to true), range.fields)
        val domain = assertThrows(LdpValueException::class.java) { GRRParams(1.0, 1) }
        assertEquals(mapOf("param" to "domain_size", "got" to 1L, "min" to 2L, "max" to (1L shl 32)), domain.fields)
        val large = assertThrows(LdpValueException::class.java) { GRRParams(1e300, 3) }
        assertEquals(RefusalCode.PARAM_RELATION, large.code)
        assertEquals(mapOf("params" to listOf("epsilon", "domain_size"), "rule" to "epsilon_too_large"), large.fields)
        val labels = assertThrows(LdpValueException::class.java) { GRRParams(1.0, 3, listOf("a", "b")) }
        assertEquals(RefusalCode.PARAM_LENGTH, labels.code)
        val type = assertThrows(LdpTypeException::class.java) { GRRParams.read(mapOf("epsilon" to "1", "domain_size" to 3L)) }
        assertEquals(mapOf("param" to "epsilon", "expected" to "float", "got" to "string"), type.fields)
        val unknown = assertThrows(LdpValueException::class.java) { GRRParams.read(mapOf("epsilon" to 1.0, "domain_size" to 3L, "eps" to 1)) }
        assertEquals(RefusalCode.UNKNOWN_PARAMS, unknown.code)

        val gamma = assertThrows(LdpValueException::class.java) { MemoMeanParams(1.0, 0.0, 1.0, gamma = 0.5) }
        assertEquals(mapOf("param" to "gamma", "got" to 0.5, "min" to 0L, "max" to 0.5, "max_exclusive" to true), gamma.fields)
        val d = assertThrows(LdpValueException::class.java) { DBitFlipParams(1.0, edges, d = 4) }
        assertEquals(mapOf("param" to "d", "got" to 4L, "min" to 1L, "max" to 3L), d.fields)
        val oracle = assertThrows(LdpValueException::class.java) { HHParams(1.0, 0.0, 1.0, oracle = "olh") }
        assertEquals(mapOf("param" to "oracle", "choices" to listOf("auto", "oue", "grr"), "got" to "olh"), oracle.fields)
        val relation = assertThrows(LdpValueException::class.java) { LGRRParams(1.0, 2.0, 3) }
        assertEquals("epsilon<epsilon_perm", relation.fields["rule"])
        val seed = assertThrows(LdpValueException::class.java) { CmsParams(2.0, 2, 8, hashSeed = (1L shl 32) - 1) }
        assertEquals(mapOf("param" to "hash_seed", "got" to (1L shl 32) - 1, "min" to 0L, "max" to (1L shl 32) - 2), seed.fields)
        val multi = assertThrows(LdpValueException::class.java) { MultiParams(1.0, "split", listOf(MultiParams.Attribute("a", "grr", mapOf("domain_size" to 3L)))) }
        assertEquals(RefusalCode.PARAM_LENGTH, multi.code)
    }

    @Test
    fun `defaults are the table's`() {
        val olh = OLHParams(1.0, 4)
        assertEquals(LocalHashingParams.SEED_RANGE, olh.seedRange)
        assertEquals(OLHParams.read(mapOf("epsilon" to 1.0, "domain_size" to 4L)), olh)
        val block = HRBlockParams(1.0, 100)
        assertEquals(HRBlockParams.read(mapOf("epsilon" to 1.0, "domain_size" to 100L)), block)
        assertEquals(HRBlockParams.bestBlocks(1.0, 100), block.blocks)
        val pgr = PGRParams(2.0, 1024)
        assertEquals(PGRParams.read(mapOf("epsilon" to 2.0, "domain_size" to 1024L)), pgr)
        assertEquals(PGRParams.bestField(2.0, 1024), pgr.q)
        val hpg = HPGParams(2.0, 1024)
        assertEquals(HPGParams.read(mapOf("epsilon" to 2.0, "domain_size" to 1024L)), hpg)
        assertEquals(HPGParams.bestLayout(2.0, 1024), HPGParams.Layout(hpg.q, hpg.blocks))
        val hh = HHParams(1.0, 0.0, 1.0)
        assertEquals(listOf(4, 5, "auto", false), listOf(hh.branching, hh.depth, hh.oracle, hh.clip))
    }

    @Test
    fun `the docs' example`() { // docs/kotlin-client.md, "Parameters from code"
        val grr = GRRParams(epsilon = 1.0, domainSize = 3, labels = listOf("a", "b", "c"))
        val oue = OUEParams(epsilon = 1.0, domainSize = 4)
        val hh = HHParams(epsilon = 1.0, low = 0.0, high = 100.0, depth = 3)
        val multi = MultiParams(
            epsilon = 2.0, mode = "split",
            attributes = listOf(
                MultiParams.Attribute("os", "grr", mapOf("domain_size" to 3L)),
                MultiParams.Attribute("crashed", "rr"),
            ),
        )
        assertEquals(OUEParams.read(mapOf("epsilon" to 1, "domain_size" to 4)), oue)
        val e = assertThrows(LdpValueException::class.java) { OUEParams(epsilon = 1.0, domainSize = 1) }
        assertEquals(mapOf("param" to "domain_size", "got" to 1L, "min" to 2L, "max" to 4294967296L), e.fields)
        assertEquals(listOf(3, 64, 2), listOf(grr.domainSize, hh.numBuckets, multi.d))
    }
}
