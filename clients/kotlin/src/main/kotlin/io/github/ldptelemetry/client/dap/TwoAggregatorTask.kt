package io.github.ldptelemetry.client.dap

/**
 * A two-aggregator task as a [io.github.ldptelemetry.client.TelemetryClient] uses it (its `tasks`): the members of the
 * task file a device checks against the spec, and [report], which makes the DAP-09 report of a measurement. [DapTask]
 * is the implementation (the native client's Prio3 and HPKE, through JNA); the interface lets a test watch the
 * measurements a client makes (a delegate around a [DapTask]) without the client knowing.
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

    /** `Prio3Count`, `Prio3Sum`, `Prio3SumVec` or `Prio3Histogram`. */
    public val vdafType: String

    /** Entries of the aggregate: the buckets or the vector's length, 1 for Count and Sum. */
    public val length: Int

    /** The largest value of one entry of a Prio3Sum or Prio3SumVec measurement (`null` for Count and Histogram). */
    public val maxMeasurement: Long?

    /** The DAP-09 report of [measurement] made at [time] (Unix seconds, a multiple of [timePrecision]): the body of
     * `PUT {leaderUrl}/tasks/{taskId}/reports`. A measurement the task's type refuses is an
     * [IllegalArgumentException]. */
    public fun report(measurement: LongArray, time: Long): ByteArray
}
