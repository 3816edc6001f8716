package io.github.ldptelemetry.client

import io.github.ldptelemetry.client.internal.PyText
import java.io.IOException

/**
 * The client's exceptions. Texts are the Python client's, word for word (the conformance vectors check them), so a
 * message an app logs reads the same whichever client made it.
 *
 * A bad parameter or value is an [IllegalArgumentException]: [LdpValueException] (Python's `ValueError`: the right
 * type, a wrong value) or [LdpTypeException] (Python's `TypeError`: the wrong type). [pythonType] names the Python
 * class.
 */
public open class LdpValueException(message: String) : IllegalArgumentException(message) {
    /** The Python exception class this stands for. */
    public open val pythonType: String get() = "ValueError"
}

/** A value of the wrong type (Python's `TypeError`). */
public open class LdpTypeException(message: String) : IllegalArgumentException(message) {
    /** The Python exception class this stands for. */
    public open val pythonType: String get() = "TypeError"
}

/** An invalid collection spec: [errors] lists every problem as `json.path: message` (Python's `SpecError`). */
public class SpecException(public val errors: List<String>, source: String = "spec") :
    LdpValueException("$source: ${errors.size} error(s):\n  ${errors.joinToString("\n  ")}")

/** An (ε, δ) privacy cost, as Python's `PrivacyCost`. */
public data class PrivacyCost(val epsilon: Double, val delta: Double = 0.0) {
    /** `str(PrivacyCost)`: `ε=<.6g>`, then `, δ=<.3g>` when δ is not 0. */
    override fun toString(): String =
        "ε=${PyText.formatG(epsilon, 6)}" + if (delta != 0.0) ", δ=${PyText.formatG(delta, 3)}" else ""

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
    "privacy budget exceeded for ${if (scope == ALL_METRICS) "all metrics" else "metric ${PyText.repr(scope)}"} " +
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
