package io.github.ldptelemetry.client.dap

/**
 * A two-aggregator task as a [io.github.ldptelemetry.client.TelemetryClient] uses it (its `tasks`): the members of the
 * task file a device checks against the spec, and [report], which makes the DAP-09 report of a measurement. [DapTask]
 * (Prio3) and [Poplar1Task] (strings: the spec's `poplar1` metric kind) are the implementations (the native client's
 * VDAFs and HPKE, through JNA; [open] makes the one a task file names); the interface lets a test watch the
 * measurements a client makes (a delegate around a task) without the client knowing.
 */
public interface TwoAggregatorTask {
    /** The task ID, unpadded base64url (as in the leader's URL). */
    public val taskId: String
    public val metric: String
    public val leaderUrl: String

    /** `two-aggregator`, or `two-aggregator+local` when devices randomize first. */
    public val trust: String
    public val windowSeconds: Long
    public val timePrecision: Long

    /** The most reports a device sends a window (`null`: the spec caps none, one assumed). */
    public val reportsPerWindow: Long?

    /** The local protocol, `{"protocol": …, "params": {…}}` as JSON (`null` without local noise). */
    public val localJson: String?

    /** `Prio3Count`, `Prio3Sum`, `Prio3SumVec`, `Prio3Histogram` or `Poplar1`. */
    public val vdafType: String

    /** Entries of the measurement: the buckets or the vector's length, 1 for Count and Sum, the string's bits for
     * Poplar1. */
    public val length: Int

    /** The largest value of one entry of a Prio3Sum or Prio3SumVec measurement (`null` for Count and Histogram). */
    public val maxMeasurement: Long?

    /** A Poplar1 task's most candidate prefixes a level (`null` for Prio3). */
    public val maxCandidates: Long? get() = null

    /** The DAP-09 report of [measurement] made at [time] (Unix seconds, a multiple of [timePrecision]): the body of
     * `PUT {leaderUrl}/tasks/{taskId}/reports`. A Poplar1 measurement is its [length] bits, each 0 or 1, the first
     * bit first. A measurement the task's type refuses is an [IllegalArgumentException]. */
    public fun report(measurement: LongArray, time: Long): ByteArray

    public companion object {
        /** The task of a task file (the text `ldp collect task` wrote): a [Poplar1Task] when its `vdaf.type` is
         * `Poplar1`, else a [DapTask]; refused as they refuse it. Close it ([AutoCloseable]) when done. */
        @JvmStatic
        public fun open(taskFileJson: String): TwoAggregatorTask =
            if (isPoplar1TaskFile(taskFileJson)) Poplar1Task(taskFileJson) else DapTask(taskFileJson)
    }
}
