package io.github.ldptelemetry.client.protocols

import io.github.ldptelemetry.client.PrivacyCost
import io.github.ldptelemetry.client.internal.Bytes
import io.github.ldptelemetry.client.internal.Refuse
import io.github.ldptelemetry.client.random.BitMask
import io.github.ldptelemetry.client.random.RandomSource
import io.github.ldptelemetry.client.random.SecureRandomSource
import java.math.BigInteger

/**
 * One privatized report (Python's `ldp.reports.Report`): the protocol, its parameters' fingerprint, and the payload
 * fields in the protocol's schema order. A payload value is a [Long] (a `uint`) or a [BitMask] (a `bits` field).
 */
public class Report(public val protocol: String, public val params: String, public val payload: List<Pair<String, Any>>) {
    /** The report's JSON (`Report.to_json`): `{"v":1,"protocol":…,"params":…,"payload":{…}}`, no spaces. */
    public fun toJson(): String = StringBuilder().also { appendJson(it) }.toString()

    internal fun appendJson(out: StringBuilder) {
        out.append("{\"v\":1,\"protocol\":\"").append(protocol).append("\",\"params\":\"").append(params).append("\",\"payload\":{")
        for ((i, field) in payload.withIndex()) {
            if (i > 0) out.append(',')
            out.append('"').append(field.first).append("\":")
            when (val v = field.second) {
                is BitMask -> out.append('"').append(v.toBitString()).append('"')
                else -> out.append(v.toString())
            }
        }
        out.append("}}")
    }

    /** The payload value of field [name]. */
    public operator fun get(name: String): Any? = payload.firstOrNull { it.first == name }?.second

    override fun toString(): String = toJson()
}

/** One upload line (`Envelope.to_json`): spec fingerprint, metric, window, report, in that order; no newline. */
public fun envelopeJson(spec: String, metric: String, window: Long, report: Report): String {
    val out = StringBuilder(96)
    out.append("{\"spec\":\"").append(spec).append("\",\"metric\":\"").append(metric).append("\",\"window\":")
        .append(window).append(",\"report\":")
    report.appendJson(out)
    return out.append('}').toString()
}

/** What the ledger charges for one report (Python's `PrivacyCost`, `MemoizedCharge` and `ChangeCharge`). */
public sealed class Charge {
    /** A plain cost, charged every time. */
    public data class Plain(val cost: PrivacyCost) : Charge()

    /** A memoized response's charge: [first] for the first report of [key], [then] for each later one, never more
     * than [cap] in total for [key] in its metric. */
    public class Memoized(key: ByteArray, public val first: PrivacyCost, public val then: PrivacyCost, public val cap: PrivacyCost) : Charge() {
        private val k = key.copyOf()
        public val key: ByteArray get() = k.copyOf()
        public val keyHex: String get() = Bytes.hex(k)
    }

    /** Charged [cost] when [value] differs from the last value of [stream] (or the stream is new), else nothing; the
     * ledger keeps each stream's epoch (`thresh`). */
    public class Change(stream: ByteArray, value: ByteArray, public val cost: PrivacyCost) : Charge() {
        private val s = stream.copyOf()
        private val v = value.copyOf()
        public val streamHex: String get() = Bytes.hex(s)
        public val valueHex: String get() = Bytes.hex(v)
    }
}

/**
 * What an encoder is made with: [rng], its randomness (default: a [SecureRandomSource]); [secret], the metric
 * secret of a memoizing protocol (its permanent responses are drawn from it); [cohort], a RAPPOR device's cohort.
 * [prrRng] is for audits only: a memoizing encoder then draws its permanent responses from it instead of the keyed
 * stream, so that an exact audit can enumerate them.
 */
public class EncoderOptions(
    public val rng: RandomSource? = null,
    public val secret: ByteArray? = null,
    public val cohort: Int? = null,
    public val prrRng: RandomSource? = null,
)

/** A checked value, ready to be charged and randomized; made by [Encoder.prepare]. */
public class Prepared internal constructor(private val encoder: Encoder<*, *>, internal val value: Any?) {
    /** What the ledger must charge before the report is made. */
    public val charge: Charge get() = encoder.chargeErased(value)

    /** The report (draws randomness). [epoch] is the ledger's epoch for a [Charge.Change] (`thresh`). */
    public fun randomize(epoch: Long? = null): Report = encoder.randomizeErased(value, epoch)
}

/**
 * A client encoder (Python's `ldp.encoders.base.Encoder`): [prepare] checks a value, throwing Python's error type
 * and text, and draws nothing; [Prepared.randomize] draws only through the source's `bernoulli`, `bernoulliBits`,
 * `randbelow` and `tokenBytes`, in the order of docs/conformance.md; [Prepared.charge] says what the ledger charges.
 *
 * Not thread-safe (its random source is not): one encoder per thread, or a lock around it.
 */
public abstract class Encoder<P : ProtocolParams, V>(public val params: P, options: EncoderOptions) {
    protected val rng: RandomSource = options.rng ?: SecureRandomSource()

    /** The checked form of [value] (a `ValueError`/`TypeError` text of Python's otherwise). */
    protected abstract fun check(value: Any?): V

    /** The report of a checked value. */
    protected abstract fun draw(value: V): Report

    /** The report of a checked value in the ledger's [epoch] (only `thresh` uses it). */
    protected open fun draw(value: V, epoch: Long?): Report = draw(value)

    /** What one report of a checked value costs (memoizing protocols override). */
    protected open fun charge(value: V): Charge = Charge.Plain(params.privacyCost)

    /** Checks [value]: the prepared value, or Python's exception. Draws and charges nothing. */
    public fun prepare(value: Any?): Prepared = Prepared(this, check(normalize(value)))

    /** One report of [value], with no ledger (a [io.github.ldptelemetry.client.TelemetryClient] charges first). */
    public fun encode(value: Any?): Report = prepare(value).randomize()

    @Suppress("UNCHECKED_CAST")
    internal fun chargeErased(value: Any?): Charge = charge(value as V)

    @Suppress("UNCHECKED_CAST")
    internal fun randomizeErased(value: Any?, epoch: Long?): Report = draw(value as V, epoch)

    /** A report of these parameters with [payload] (fields in schema order). */
    protected fun report(vararg payload: Pair<String, Any>): Report = Report(params.protocol, params.fingerprint, payload.toList())

    protected fun report(payload: List<Pair<String, Any>>): Report = Report(params.protocol, params.fingerprint, payload)
}

/** `LabeledDomain.index_of`: the index of a label, or of an int index in `[0, domainSize)`, refusing as Python's does. */
internal fun domainIndexOf(protocol: String, domainSize: Int, labels: List<String>?, value: Any?): Int {
    if (value is String && labels != null) {
        val i = labels.indexOf(value)
        if (i < 0) throw Refuse.unknownLabel(value, "value ${Refuse.quote(value)} is not one of the $domainSize declared labels")
        return i
    }
    if (isInt(value)) {
        val big = if (value is BigInteger) value else BigInteger.valueOf((value as Number).toLong())
        if (big.signum() < 0 || big >= BigInteger.valueOf(domainSize.toLong())) {
            throw Refuse.range(null, value, min = 0L, max = domainSize.toLong(), maxExclusive = true, message = "value index must be in [0, $domainSize), got $value")
        }
        return big.toInt()
    }
    val kind = if (labels != null) "a label or an int index" else "an int index in [0, domain_size)"
    throw Refuse.valueType(if (labels != null) "label_or_index" else "index", value, "$protocol values must be $kind, got ${Refuse.kind(value)}")
}

/**
 * A protocol as the spec, the client runtime and the tests see it: its name, its params class (name and a checking
 * constructor from the values), how to make its encoder, whether it needs a metric secret, and how many cohorts a
 * device is assigned to (RAPPOR; 0 for the others). Its fields are the generated table's.
 */
public class Protocol<P : ProtocolParams> internal constructor(
    public val name: String,
    public val className: String,
    private val create: (Map<String, Any?>) -> P,
    private val makeEncoder: (P, EncoderOptions) -> Encoder<P, *>,
    public val needsSecret: Boolean = false,
    private val cohorts: (P) -> Int = { 0 },
) {
    /** The parameter fields, in Python's declaration order (the generated table's). */
    public val fields: List<ParamField> get() = ParamField.of(name)

    /** Parameters from their `to_dict()` form (Python's `from_dict`, with its checks and refusals). */
    public fun params(d: Map<String, Any?>): P = fromDict(className, fields, d, create)

    /** Parameters from an untyped JSON value. */
    public fun paramsOf(d: Any?): P = fromDict(className, fields, d, create)

    @Suppress("UNCHECKED_CAST")
    public fun encoder(params: ProtocolParams, options: EncoderOptions = EncoderOptions()): Encoder<P, *> {
        require(params.protocol == name) { "$name encoder given ${params.protocol} parameters" }
        return makeEncoder(params as P, options)
    }

    /** The number of cohorts a device of these parameters is assigned to (0: none). */
    @Suppress("UNCHECKED_CAST")
    public fun assignedCohorts(params: ProtocolParams): Int = cohorts(params as P)
}
