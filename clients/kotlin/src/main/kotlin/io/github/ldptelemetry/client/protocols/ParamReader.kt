package io.github.ldptelemetry.client.protocols

import io.github.ldptelemetry.client.internal.Refuse
import java.math.BigDecimal
import java.math.BigInteger

/**
 * A protocol's parameter values read against its generated table ([ParamTables], from the Python declarations): each
 * getter checks one parameter's type, then its table ranges in the table's order (a `param_range` refusal carrying
 * exactly that range's bounds), or its choices (`param_choice`), and returns it typed. A protocol reads its
 * parameters in Python's order, its relations between them in between, so that the first refusal is Python's; the
 * names (unknown, missing, defaults) are [fromDict]'s, from the same table.
 */
internal class ParamReader(protocol: String, private val values: Map<String, Any?>) {
    private val rows: Map<String, ParamRow> = ParamTables.BY_PROTOCOL.getValue(protocol).associateBy { it.name }

    private fun row(name: String): ParamRow = rows[name] ?: error("no parameter $name in the table")

    /** A float parameter: a real (not a bool), in its ranges. [typeIsValueError]: where Python's check raises a
     * `ValueError` for a non-number (an [io.github.ldptelemetry.client.LdpValueException]). */
    fun double(name: String, typeIsValueError: Boolean = false): Double {
        val v = values[name]
        if (!isReal(v)) throw Refuse.paramType(name, "float", v, valueError = typeIsValueError)
        checkRanges(row(name), v, null)
        return asDouble(v)
    }

    /** An int parameter (not a bool), in its ranges; [dynamicMax]: the bound of a range the table says follows from
     * other parameters. */
    fun long(name: String, dynamicMax: Long? = null): Long {
        val v = values[name]
        if (!isInt(v)) throw Refuse.paramType(name, "int", v)
        checkRanges(row(name), v, dynamicMax)
        return bigOf(v).toLong()
    }

    /** An int parameter that fits an [Int] once in its ranges. */
    fun int(name: String, dynamicMax: Long? = null): Int = long(name, dynamicMax).toInt()

    /** A `bool` parameter. */
    fun bool(name: String): Boolean = Checks.bool(values[name], name)

    /** A parameter that is one of the table's choices (anything else, a string or not: `param_choice`). */
    fun choice(name: String): String {
        val v = values[name]
        val choices = row(name).choices
        if (v !is String || v !in choices) throw Refuse.paramChoice(name, choices, v)
        return v
    }

    /** The `labels` of a domain of [domainSize] values: `null`, or that many distinct strings. */
    fun labels(domainSize: Long, name: String = "labels"): List<String>? = Checks.labels(values[name], domainSize)

    private fun checkRanges(row: ParamRow, v: Any?, dynamicMax: Long?) {
        for (r in row.ranges) {
            val max: Number? = if (r.dynamic != null) dynamicMax ?: error("${row.name}: the dynamic bound (${r.dynamic}) is not given") else r.max
            if (!holds(r, max, v, row.type == "float")) {
                throw Refuse.range(row.name, v, min = r.min, max = max, minExclusive = r.minExclusive, maxExclusive = r.maxExclusive, finite = r.finite)
            }
        }
    }

    companion object {
        /** Whether the number [v] passes range [r] with upper bound [max]: an int exactly, a float parameter's value
         * as a double (a NaN fails every bound). */
        internal fun holds(r: ParamRange, max: Number?, v: Any?, float: Boolean): Boolean {
            if (!float) {
                val x = BigDecimal(bigOf(v))
                if (r.min != null && x.compareTo(exact(r.min)).let { if (r.minExclusive) it <= 0 else it < 0 }) return false
                return max == null || x.compareTo(exact(max)).let { if (r.maxExclusive) it < 0 else it <= 0 }
            }
            val x = asDouble(v)
            if (r.finite && !x.isFinite()) return false
            if (r.min != null && !(if (r.minExclusive) x > r.min.toDouble() else x >= r.min.toDouble())) return false
            return max == null || (if (r.maxExclusive) x < max.toDouble() else x <= max.toDouble())
        }

        private fun exact(n: Number): BigDecimal = when (n) {
            is BigInteger -> BigDecimal(n)
            is Double, is Float -> BigDecimal(n.toDouble())
            else -> BigDecimal.valueOf(n.toLong())
        }
    }
}
