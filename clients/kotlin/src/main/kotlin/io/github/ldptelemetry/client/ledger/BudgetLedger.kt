package io.github.ldptelemetry.client.ledger

import io.github.ldptelemetry.client.BudgetExceededException
import io.github.ldptelemetry.client.PrivacyCost
import io.github.ldptelemetry.client.internal.Bytes
import io.github.ldptelemetry.client.protocols.Charge
import io.github.ldptelemetry.client.spec.CollectionSpec

/** A clock reading that is not a Unix time in `[0, MAX_CLOCK]` (Python's `ClockError`): nothing was charged. */
public class ClockException(message: String) : IllegalArgumentException(message)

/**
 * The budget rules of the Python ledger (`ldp/privacy/ledger.py`, docs/client.md "Budgets"), applied to a
 * [DeviceState] inside a store transaction: per window (`floor(clock / window_seconds)`, the clock never going back)
 * and over the lifetime, for the metric and for the collection (`*`), each cap with Python's relative slack of 1e-9
 * (a metric's window cap is [CollectionSpec.deviceWindowCap]: a two-aggregator metric's k reports);
 * a memoized charge cut so that one key's total never exceeds its cap; a charge-on-change charged only when the
 * stream's value changes, its epoch kept. Memo keys and change values are stored as keyed hashes under the device's
 * salt, never as they are.
 */
public object BudgetLedger {
    /** The last second of 9999-12-31 UTC: the latest clock reading a ledger accepts. */
    public const val MAX_CLOCK: Double = 253402300799.0
    private const val DELTA_MAX = 1.0 - 1.0 / (1L shl 53)

    /** What a charge did: the increment charged, its window, and the epoch of a [Charge.Change]. */
    public class Reservation(public val increment: PrivacyCost, public val window: Long, public val epoch: Long?)

    /** [reading] if it is a Unix time in `[0, MAX_CLOCK]`, else [ClockException]. */
    public fun checkClock(reading: Double): Double {
        if (!(reading >= 0.0 && reading <= MAX_CLOCK)) {
            throw ClockException("clock reading $reading is not a Unix time in [0, 253402300799] (year 9999); nothing was charged")
        }
        return reading
    }

    /** Moves the state's clock to [reading] if later; the current window. */
    internal fun advance(state: DeviceState, reading: Double, windowSeconds: Long): Long {
        state.clock = maxOf(state.clock, checkClock(reading))
        return Math.floor(state.clock / windowSeconds).toLong()
    }

    private fun keyed(state: DeviceState, vararg parts: ByteArray): String =
        Bytes.hex(Bytes.hmacSha256(Bytes.fromHex(state.saltHex), *parts))

    /**
     * Checks every cap for [charge] on [metric] and records it in [state] (or throws [BudgetExceededException] with
     * nothing changed). The caps are checked in Python's order: the metric's window, its lifetime, the
     * collection's window, its lifetime.
     */
    public fun charge(state: DeviceState, spec: CollectionSpec, metric: String, charge: Charge, window: Long): Reservation {
        val priced = price(state, metric, charge)
        val m = spec.metric(metric)
        val scopes = listOf(
            Scope(metric, spec.deviceWindowCap(metric), m.budget.lifetime),
            Scope(BudgetExceededException.ALL_METRICS, spec.budget.perWindow, spec.budget.lifetime),
        )
        for (scope in scopes) checkCaps(state, scope, window, priced.increment)
        record(state, scopes, window, priced)
        return Reservation(priced.increment, window, priced.change?.third)
    }

    /**
     * What [charge] on [metric] costs in [state], and what it leaves to record: a memoized charge cut so that its
     * key's total stays within its cap ([Priced.memoKey]); a charge-on-change free when the stream's value is
     * unchanged, its epoch kept, else charged and the epoch moved on ([Priced.change]). Changes nothing.
     */
    private fun price(state: DeviceState, metric: String, charge: Charge): Priced {
        val prefix = Bytes.concat(Bytes.utf8(metric), byteArrayOf(0))
        return when (charge) {
            is Charge.Plain -> Priced(charge.cost, null, null)
            is Charge.Memoized -> {
                val key = keyed(state, prefix, charge.key)
                val m = state.memo[key]
                val step = if (m == null || m[0] == 0.0) charge.first else charge.then
                val inc = PrivacyCost(
                    maxOf(0.0, minOf(step.epsilon, charge.cap.epsilon - (m?.get(1) ?: 0.0))),
                    maxOf(0.0, minOf(step.delta, charge.cap.delta - (m?.get(2) ?: 0.0))),
                )
                Priced(inc, key, null)
            }
            is Charge.Change -> {
                val stream = keyed(state, Bytes.ascii("stream\u0000"), prefix, Bytes.fromHex(charge.streamHex))
                val value = keyed(state, Bytes.ascii("value\u0000"), prefix, Bytes.fromHex(charge.valueHex))
                val last = state.changes[stream]
                if (last != null && last.first == value) {
                    Priced(PrivacyCost.ZERO, null, Triple(stream, value, last.second))
                } else {
                    Priced(charge.cost, null, Triple(stream, value, if (last == null) 0L else last.second + 1))
                }
            }
        }
    }

    /** Throws [BudgetExceededException] if [inc] would pass [scope]'s cap in [window], then its lifetime cap. */
    private fun checkCaps(state: DeviceState, scope: Scope, window: Long, inc: PrivacyCost) {
        val t = state.totals[scope.name]
        val spentE = if (t != null && t.window == window) t.windowEpsilon else 0.0
        val spentD = if (t != null && t.window == window) t.windowDelta else 0.0
        for ((cap, period, e, d) in listOf(Quad(scope.perWindow, "window", spentE, spentD), Quad(scope.lifetime, "lifetime", t?.lifetimeEpsilon ?: 0.0, t?.lifetimeDelta ?: 0.0))) {
            if (cap == null) continue
            val le = cap.epsilon * (1.0 + 1e-9) + 1e-15
            val ld = cap.delta * (1.0 + 1e-9) + 1e-15
            if (e + inc.epsilon > le || minOf(d + inc.delta, DELTA_MAX) > ld) {
                throw BudgetExceededException(scope.name, period, inc, PrivacyCost(e, d), cap)
            }
        }
    }

    /** Adds [priced] to the totals of [scopes] in [window], to its memo key's total and to its stream's last value. */
    private fun record(state: DeviceState, scopes: List<Scope>, window: Long, priced: Priced) {
        val inc = priced.increment
        for (scope in scopes) {
            val t = state.totals.getOrPut(scope.name) { ScopeTotal(window, 0.0, 0.0, 0.0, 0.0) }
            if (t.window != window) {
                t.window = window
                t.windowEpsilon = 0.0
                t.windowDelta = 0.0
            }
            t.windowEpsilon += inc.epsilon
            t.windowDelta = minOf(t.windowDelta + inc.delta, DELTA_MAX)
            t.lifetimeEpsilon += inc.epsilon
            t.lifetimeDelta = minOf(t.lifetimeDelta + inc.delta, DELTA_MAX)
        }
        priced.memoKey?.let { k ->
            val v = state.memo.getOrPut(k) { doubleArrayOf(0.0, 0.0, 0.0) }
            v[0] += 1.0
            v[1] += inc.epsilon
            v[2] += inc.delta
        }
        priced.change?.let { (stream, value, epoch) -> state.changes[stream] = value to epoch }
    }

    /** The (ε, δ) spent on [scope] in [window], or over the lifetime when [window] is null. */
    public fun spent(state: DeviceState, scope: String, window: Long?): PrivacyCost {
        val t = state.totals[scope] ?: return PrivacyCost.ZERO
        return when {
            window == null -> PrivacyCost(t.lifetimeEpsilon, t.lifetimeDelta)
            t.window == window -> PrivacyCost(t.windowEpsilon, t.windowDelta)
            else -> PrivacyCost.ZERO
        }
    }

    private data class Quad(val cap: PrivacyCost?, val period: String, val e: Double, val d: Double)

    /** A budget scope ([BudgetExceededException.ALL_METRICS] for the collection) and its caps. */
    private class Scope(val name: String, val perWindow: PrivacyCost?, val lifetime: PrivacyCost?)

    /** A charge's [increment], the memo key it counts under and the stream's (key, value, epoch) it sets, if any. */
    private class Priced(val increment: PrivacyCost, val memoKey: String?, val change: Triple<String, String, Long>?)
}
