package io.github.ldptelemetry.client

import java.io.IOException

/**
 * What a refusal of a parameter or a value is, by meaning: a stable machine code, the same in every client and in
 * the conformance vectors (docs/conformance.md, "Refusals"). [code] is the vectors' spelling (`"param_range"`).
 */
public enum class RefusalCode(public val code: String) {
    /** Required parameters are missing: `params`. */
    MISSING_PARAMS("missing_params"),
    /** Parameters the protocol does not have: `params`, sorted. */
    UNKNOWN_PARAMS("unknown_params"),
    /** Parameter `param` is not of the `expected` kind; `got` is the kind given. */
    PARAM_TYPE("param_type"),
    /** The number `got` given for `param` is out of range: `min`, `max`, `min_exclusive`, `max_exclusive`, `finite`. */
    PARAM_RANGE("param_range"),
    /** `got` is not one of the strings `choices` of `param`. */
    PARAM_CHOICE("param_choice"),
    /** A list or string parameter `param` has `got` entries, not within `min`, `max`. */
    PARAM_LENGTH("param_length"),
    /** The parameters `params` break the rule `rule`. */
    PARAM_RELATION("param_relation"),
    /** A size that follows from the parameters, `got`, is over the limit `limit`, at most `max`. */
    PARAM_LIMIT("param_limit"),
    /** The value is not of the `expected` kind; `got` is the kind given. */
    VALUE_TYPE("value_type"),
    /** The number `got` is outside `[min, max]`. */
    VALUE_RANGE("value_range"),
    /** The string `got` is not one of the declared labels. */
    UNKNOWN_LABEL("unknown_label"),
    /** The string is empty. */
    EMPTY_VALUE("empty_value"),
    /** The string has `got` units (`unit`), over `max`. */
    VALUE_TOO_LONG("value_too_long"),
    /** The string holds `char`, not in the alphabet. */
    NOT_IN_ALPHABET("not_in_alphabet"),
    /** The string has no form in `encoding`. */
    NOT_ENCODABLE("not_encodable"),
    /** A record of several attributes lacks `attributes`. */
    MISSING_ATTRIBUTES("missing_attributes"),
    /** A record has `attributes` the protocol does not have. */
    UNKNOWN_ATTRIBUTES("unknown_attributes"),
    /** The spec sends the values of `metric` to the two-aggregator mode (`trust`: `two-aggregator` or
     * `two-aggregator+local`), whose reports this client does not build: nothing is recorded. */
    TRUST_MODEL("trust_model"),
    ;

    override fun toString(): String = code

    public companion object {
        /** The entry spelled [code] (`"param_range"`), or null. */
        @JvmStatic
        public fun fromCode(code: String): RefusalCode? = entries.firstOrNull { it.code == code }
    }
}

/**
 * A refused parameter set or value: [code] says what was refused, [fields] the details, as JSON values (keys and
 * meaning: docs/kotlin-client.md, "Errors"): a [String], a [Boolean], a [Long] (an integer: [java.math.BigInteger]
 * past 64 bits), a [Double], `null`, a [List] or a [Map] of these. `got` of a range is the number given, as given
 * (an integer stays a [Long]). Every refusal is an [LdpValueException] or an [LdpTypeException].
 */
public interface Refusal {
    public val code: RefusalCode
    public val fields: Map<String, Any?>
}

/** A value or parameter of the right type but a wrong value (out of range, unknown, breaking a rule). */
public open class LdpValueException(
    override val code: RefusalCode,
    fields: Map<String, Any?>,
    message: String,
) : IllegalArgumentException(message), Refusal {
    override val fields: Map<String, Any?> = java.util.Collections.unmodifiableMap(LinkedHashMap(fields))
}

/** A value or parameter of the wrong type. */
public open class LdpTypeException(
    override val code: RefusalCode,
    fields: Map<String, Any?>,
    message: String,
) : IllegalArgumentException(message), Refusal {
    override val fields: Map<String, Any?> = java.util.Collections.unmodifiableMap(LinkedHashMap(fields))
}

/** An invalid collection spec: [errors] lists every problem as `json.path: message`. */
public class SpecException(public val errors: List<String>, source: String = "spec") :
    IllegalArgumentException("$source: ${errors.size} error(s):\n  ${errors.joinToString("\n  ")}")

/** An (ε, δ) privacy cost, as Python's `PrivacyCost`. */
public data class PrivacyCost(val epsilon: Double, val delta: Double = 0.0) {
    /** `ε=<epsilon>`, then `, δ=<delta>` when δ is not 0. */
    override fun toString(): String = "ε=$epsilon" + if (delta != 0.0) ", δ=$delta" else ""

    /** Both parts at most [cap]'s, with Python's relative slack of 1e-9 (`PrivacyCost.fits_within`). */
    public fun fitsWithin(cap: PrivacyCost): Boolean {
        fun fits(a: Double, b: Double) = a <= b * (1 + 1e-9) + 1e-15
        return fits(epsilon, cap.epsilon) && fits(delta, cap.delta)
    }

    public operator fun plus(other: PrivacyCost): PrivacyCost = PrivacyCost(epsilon + other.epsilon, delta + other.delta)

    public companion object {
        public val ZERO: PrivacyCost = PrivacyCost(0.0, 0.0)
    }
}

/**
 * A charge would exceed a cap: nothing was charged and no report was made (Python's `BudgetExceeded`). [scope] is
 * the metric, or [ALL_METRICS] for the collection's total; [period] is `"window"` or `"lifetime"`.
 */
public class BudgetExceededException @JvmOverloads constructor(
    public val scope: String,
    public val period: String,
    public val requested: PrivacyCost,
    public val spent: PrivacyCost,
    public val cap: PrivacyCost,
    /** Which item of a [TelemetryClient.recordMany] batch was refused (null for a single report); [spent] then
     * includes the batch's earlier items, none of which was kept. */
    public val index: Int? = null,
) : IllegalStateException(
    "privacy budget exceeded for ${if (scope == ALL_METRICS) "all metrics" else "metric \"$scope\""} " +
        "($period)${if (index == null) "" else " at item $index of a batch (nothing of the batch was kept)"}: " +
        "spent $spent, requested $requested, cap $cap",
) {
    public companion object {
        /** The scope of the collection's total budget. */
        public const val ALL_METRICS: String = "*"
    }
}

/** The ledger's state cannot be read or written safely (damaged or missing file, lock not obtained in time). */
public open class LedgerException @JvmOverloads constructor(message: String, cause: Throwable? = null) : IOException(message, cause)

/**
 * A report would take the outbox past its cap ([TelemetryClient.maxOutboxBytes]): nothing was charged or stored.
 * [pendingBytes] wait for upload (for [TelemetryClient.recordMany], with the batch's earlier items), the report
 * needs [neededBytes] more (its envelope line's UTF-8 bytes and a newline), and [index] is the item of a batch that
 * did not fit (null for a single report). An upload makes room.
 */
public class OutboxFullException(
    public val pendingBytes: Long,
    public val neededBytes: Long,
    public val capBytes: Long,
    public val index: Int? = null,
) : IllegalStateException(
    "the outbox is full${if (index == null) "" else " at item $index of a batch (nothing of the batch was kept)"}: " +
        "$pendingBytes bytes of reports wait for upload, the report needs $neededBytes more, and the cap " +
        "(maxOutboxBytes) is $capBytes; nothing was charged: upload to make room",
)

/** The device opted out of collection ([TelemetryClient.optOut]): nothing is recorded until it opts in again. */
public class OptedOutException(message: String) : IllegalStateException(message)

/** A replayed random source was asked for a draw it does not hold (tests of byte-for-byte conformance). */
public class ReplayException(message: String) : IllegalStateException(message)

/** An upload the collector refused for good (a 4xx reply other than 408 and 429): retrying would not help. */
public class UploadRejectedException(public val status: Int, message: String) : IOException(message)
