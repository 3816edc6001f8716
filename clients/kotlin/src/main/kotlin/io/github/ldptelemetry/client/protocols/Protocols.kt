package io.github.ldptelemetry.client.protocols

/**
 * Every protocol this client implements, by the name a spec gives it: every protocol of `conformance/vectors`. A
 * protocol of the Python client that is not here would be listed in [NOT_YET] (empty today; docs/kotlin-client.md
 * prints it), and a spec naming it refused with a clear error ([io.github.ldptelemetry.client.spec.CollectionSpec]).
 */
public object Protocols {
    private val all: Map<String, Protocol<*>> = listOf<Protocol<*>>(
        BinaryRRParams.PROTOCOL,
        GRRParams.PROTOCOL,
        LGRRParams.PROTOCOL,
        ThreshParams.PROTOCOL,
        SUEParams.PROTOCOL,
        OUEParams.PROTOCOL,
        LOUEParams.PROTOCOL,
        OLHParams.PROTOCOL,
        BLHParams.PROTOCOL,
        HRParams.PROTOCOL,
        SSParams.PROTOCOL,
        DuchiParams.PROTOCOL,
        PiecewiseParams.PROTOCOL,
        HybridParams.PROTOCOL,
        MemoMeanParams.PROTOCOL,
        RapporParams.PROTOCOL,
        CmsParams.PROTOCOL,
        HcmsParams.PROTOCOL,
        DBitFlipParams.PROTOCOL,
        BucketGRRParams.PROTOCOL,
        BucketOUEParams.PROTOCOL,
        MemoDBitFlipParams.PROTOCOL,
        HRBlockParams.PROTOCOL,
        PGRParams.PROTOCOL,
        HPGParams.PROTOCOL,
        HHParams.PROTOCOL,
        MultiParams.PROTOCOL,
        PEMParams.PROTOCOL,
        SfpParams.PROTOCOL,
        RapporNgramsParams.PROTOCOL,
    ).associateBy { it.name }.toSortedMap()

    /** The protocols of the Python client this client does not implement yet (docs/kotlin-client.md prints it). */
    public val NOT_YET: List<String> = emptyList()

    /** The names of every protocol implemented here, sorted. */
    public val names: List<String> get() = all.keys.toList()

    /** The protocol called [name], or `null`. */
    public operator fun get(name: String): Protocol<*>? = all[name]

    /** What a spec's `protocol` [name] names: one of these protocols, or the `poplar1` metric kind ([Poplar1Params]:
     * strings over two aggregators, no local randomizer, so neither listed here nor in the conformance vectors);
     * `null` for another name. */
    internal fun ofSpec(name: String): Protocol<*>? = all[name] ?: Poplar1Params.PROTOCOL.takeIf { name == Poplar1Params.NAME }
}
