package io.github.ldptelemetry.client.ledger

import java.io.File
import java.io.IOException
import java.nio.channels.FileChannel

/**
 * Flushes a folder's entries (a rename) to the disk where the platform allows it: a folder can be opened for
 * `fsync` only through `java.nio.file` (Android API 26 and later, every JVM); on Android 24 and 25 the rename is
 * durable once the file system commits its journal (seconds), and a crash before that leaves the old state whole.
 */
internal object DirectorySync {
    private val available: Boolean = try {
        Class.forName("java.nio.file.Files")
        true
    } catch (e: Throwable) {
        false
    }

    fun sync(dir: File) {
        if (!available) return
        try {
            NioSync.sync(dir)
        } catch (e: IOException) {
            // some file systems refuse to open a folder for reading; the rename stands, its durability is the FS's
        } catch (e: LinkageError) {
            // no java.nio.file after all
        }
    }
}

/** Loaded only where `java.nio.file` exists (see [DirectorySync]). */
internal object NioSync {
    fun sync(dir: File) {
        FileChannel.open(java.nio.file.Paths.get(dir.path), java.nio.file.StandardOpenOption.READ).use { it.force(true) }
    }
}
