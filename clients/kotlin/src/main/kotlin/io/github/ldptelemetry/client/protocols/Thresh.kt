package io.github.ldptelemetry.client.protocols

import io.github.ldptelemetry.client.PrivacyCost
import io.github.ldptelemetry.client.internal.Bytes
import io.github.ldptelemetry.client.random.KeyedRandomSource

/**
 * Charge on change (`thresh`; after Joseph, Roth, Ullman & Waggoner, NeurIPS 2018, `ldp/encoders/thresh.py`): a
 * device's reports form a stream cut into epochs, a new one at each change of value; an epoch's response is one GRR
 * at `epsilon` drawn from `(secret, epoch, value)` and replayed by every report of the epoch. The ledger charges ε
 * for a report that opens an epoch ([Charge.Change]), nothing for a replay: `c` changes cost `(c + 1)·ε`.
 */
public class ThreshParams internal constructor(values: Map<String, Any?>) : ProtocolParams(values) {
    /** ε of one epoch's response, the number of values `d` and their names (null: values are indices). */
    @JvmOverloads
    public constructor(epsilon: Double, domainSize: Long, labels: List<String>? = null) :
        this(linkedMapOf("epsilon" to epsilon, "domain_size" to domainSize, "labels" to labels))

    override val protocol: String get() = "thresh"
    public val epsilon: Double = reader.double("epsilon")
    private val d: Long = reader.long("domain_size")

    /** An epoch's response: GRR at `epsilon` (also the labels' index). */
    public val grr: GRRParams = GRRParams.read(linkedMapOf("epsilon" to epsilon, "domain_size" to d, "labels" to values["labels"]))

    /** The values' names, or null. */
    public val labels: List<String>? get() = grr.labels

    init {
        Checks.collectable(protocol, schema, d)
    }

    override val domainSize: Int get() = d.toInt()
    override val privacyCost: PrivacyCost get() = grr.privacyCost
    override val schema: List<PayloadField> get() = listOf(PayloadField.uint("index", d))

    public companion object {
        public val PROTOCOL: Protocol<ThreshParams> =
            Protocol("thresh", "ThreshParams", ::ThreshParams, { p, o -> ThreshEncoder(p, o) }, needsSecret = true)

        /** The parameters of a spec's `params` object (Python's `from_dict`, with its checks and refusals). */
        @JvmStatic
        public fun read(values: Map<String, Any?>): ThreshParams = PROTOCOL.params(values)
    }
}

/** The `thresh` encoder. With a ledger the epoch is the ledger's (given to [Prepared.randomize]); without one it
 * is tracked in memory from this encoder's first report. */
public class ThreshEncoder(params: ThreshParams, options: EncoderOptions) : Encoder<ThreshParams, Int>(params, options) {
    private val secret: ByteArray = (options.secret ?: options.prrRng?.let { "audit".toByteArray() }
        ?: throw IllegalArgumentException("thresh needs the metric secret (EncoderOptions.secret): its responses derive from it")).copyOf()
    private val prrRng = options.prrRng
    private val fp = Bytes.ascii(params.fingerprint)
    private val stream = Bytes.hmacSha256(secret, STREAM_DOMAIN, fp)
    private var last: Int? = null

    /** The epoch of the last report (-1 before the first). */
    public var epoch: Long = -1
        private set
    private val responses = HashMap<Pair<Long, Int>, Int>()

    /** Epoch [epoch]'s response to value [index]: GRR drawn from (secret, epoch, value). */
    public fun response(epoch: Long, index: Int): Int {
        responses[epoch to index]?.let { return it }
        val src = prrRng ?: KeyedRandomSource(secret, Bytes.concat(EPOCH_DOMAIN, fp, Bytes.uint64BE(epoch), Bytes.uint32BE(index.toLong())))
        val r = GRRParams.draw(src, params.grr.p, params.domainSize, index)
        if (prrRng == null) responses.clear()
        responses[epoch to index] = r
        return r
    }

    override fun check(value: Any?): Int = params.grr.indexOf(value)

    override fun draw(value: Int): Report = draw(value, null)

    override fun draw(value: Int, epoch: Long?): Report {
        val e = epoch ?: (this.epoch + if (value != last) 1 else 0)
        last = value
        this.epoch = e
        return report("index" to response(e, value).toLong())
    }

    override fun charge(value: Int): Charge =
        Charge.Change(stream, Bytes.hmacSha256(secret, VALUE_DOMAIN, fp, Bytes.uint32BE(value.toLong())), params.privacyCost)

    private companion object {
        val EPOCH_DOMAIN = Bytes.ascii("ldp/thresh/epoch/v1\u0000")
        val STREAM_DOMAIN = Bytes.ascii("ldp/thresh/stream/v1\u0000")
        val VALUE_DOMAIN = Bytes.ascii("ldp/thresh/value/v1\u0000")
    }
}
