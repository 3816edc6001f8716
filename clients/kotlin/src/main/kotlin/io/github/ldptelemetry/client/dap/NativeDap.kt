package io.github.ldptelemetry.client.dap

import com.sun.jna.Library
import com.sun.jna.Memory
import com.sun.jna.Native
import com.sun.jna.Pointer
import com.sun.jna.ptr.LongByReference
import com.sun.jna.ptr.PointerByReference

/**
 * The native client's C functions for two-aggregator tasks (`libldp_client`, built from `clients/rust` with the `prio`
 * feature; `include/ldp_client.h`), bound with JNA. `size_t` is taken as a 64-bit `long`: the library is built for
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
