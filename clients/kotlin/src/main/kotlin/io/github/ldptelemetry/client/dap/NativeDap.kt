package io.github.ldptelemetry.client.dap

import com.sun.jna.Library
import com.sun.jna.Memory
import com.sun.jna.Native
import com.sun.jna.Pointer
import com.sun.jna.ptr.LongByReference
import com.sun.jna.ptr.PointerByReference

/**
 * The native client's C functions for two-aggregator tasks (`libldp_client`, built from `clients/rust` with the `prio`
 * feature, and `poplar1` for [Poplar1Task]; `include/ldp_client.h`), bound with JNA. `size_t` is taken as a 64-bit `long`: the library is built for
 * 64-bit ABIs (x86-64, arm64-v8a).
 */
internal interface LdpNative : Library {
    fun ldp_dap_task_new(json: ByteArray, len: Long, out: PointerByReference): Int
    fun ldp_dap_task_description(task: Pointer, json: PointerByReference, len: LongByReference): Int
    fun ldp_dap_task_report(task: Pointer, measurement: LongArray?, len: Long, time: Long, out: PointerByReference): Int
    fun ldp_dap_task_report_with_random(
        task: Pointer, measurement: LongArray?, len: Long, time: Long,
        reportId: ByteArray, reportIdLen: Long, rand: ByteArray, randLen: Long, out: PointerByReference,
    ): Int
    fun ldp_dap_task_free(task: Pointer?)
    fun ldp_dap_report_bytes(report: Pointer, bytes: PointerByReference, len: LongByReference): Int
    fun ldp_dap_report_free(report: Pointer?)
    fun ldp_last_error_message(): String
    fun ldp_last_error_type(): String

    // Poplar1 (the feature `poplar1`; absent from a library built without it: JNA looks each function up on its
    // first call, and [Poplar1Task] says which build is needed)
    fun ldp_poplar1_new(bits: Long, ctx: ByteArray, ctxLen: Long, out: PointerByReference): Int
    fun ldp_poplar1_dap_report(
        poplar1: Pointer, measurement: ByteArray, len: Long, taskId: ByteArray, taskIdLen: Long, time: Long,
        timePrecision: Long, leaderConfig: ByteArray, leaderConfigLen: Long, helperConfig: ByteArray, helperConfigLen: Long,
        out: PointerByReference,
    ): Int
    fun ldp_poplar1_dap_report_rand_len(
        poplar1: Pointer, leaderConfig: ByteArray, leaderConfigLen: Long, helperConfig: ByteArray, helperConfigLen: Long,
        out: LongByReference,
    ): Int
    fun ldp_poplar1_dap_report_with_random(
        poplar1: Pointer, measurement: ByteArray, len: Long, taskId: ByteArray, taskIdLen: Long, time: Long,
        timePrecision: Long, leaderConfig: ByteArray, leaderConfigLen: Long, helperConfig: ByteArray, helperConfigLen: Long,
        reportId: ByteArray, reportIdLen: Long, rand: ByteArray, randLen: Long, out: PointerByReference,
    ): Int
    fun ldp_poplar1_free(poplar1: Pointer?)

    companion object {
        /** The library's name: `libldp_client.so` (`ldp_client.dll`, `libldp_client.dylib`), found by JNA on
         * `jna.library.path`, the system's library path, or the classpath under its platform folder
         * (`linux-x86-64/`, `android-aarch64/`, …). */
        const val NAME = "ldp_client"

        val library: LdpNative by lazy { Native.load(NAME, LdpNative::class.java) }
    }
}

/** Bytes `[p, p + len)` of the library's memory, copied. */
internal fun Pointer.bytes(len: Long): ByteArray = getByteArray(0, Math.toIntExact(len))

/** A JNA buffer holding `bytes` (for arguments the library reads only). */
internal fun memoryOf(bytes: ByteArray): Memory = Memory(maxOf(1, bytes.size).toLong()).also { it.write(0, bytes, 0, bytes.size) }

/** The native library, or an [IllegalStateException] saying what the app lacks: JNA, or the library built with
 * [features] (`prio`; `prio,poplar1` for Poplar1 tasks). */
internal fun loadNative(features: String): LdpNative = try {
    LdpNative.library
} catch (e: NoClassDefFoundError) {
    throw IllegalStateException("two-aggregator metrics need JNA: add net.java.dev.jna:jna (5.19.1) to the app")
} catch (e: UnsatisfiedLinkError) {
    throw IllegalStateException("two-aggregator metrics need the native library ${LdpNative.NAME} for this " +
        "platform (clients/rust: cargo build --release --features $features; docs/kotlin-client.md): ${e.message}")
}

/** A native status other than 0 as an exception: the library's value and type errors (1, 2) as
 * [IllegalArgumentException], anything else as [IllegalStateException], with [what] and the library's message. */
internal fun LdpNative.check(status: Int, what: String) {
    if (status == 0) return
    val message = "$what: ${ldp_last_error_message()}"
    throw if (status == 1 || status == 2) IllegalArgumentException(message) else IllegalStateException(message)
}

/** The bytes of a native DAP report ([out] of a `*_dap_report*` call), the report freed. */
internal fun LdpNative.reportBytes(out: PointerByReference): ByteArray {
    val report = out.value
    try {
        val bytes = PointerByReference()
        val len = LongByReference()
        check(ldp_dap_report_bytes(report, bytes, len), "the report's bytes")
        return bytes.value.bytes(len.value)
    } finally {
        ldp_dap_report_free(report)
    }
}
