package io.github.ldptelemetry.client

import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import java.io.File
import java.lang.reflect.Constructor
import java.lang.reflect.Executable
import java.lang.reflect.Method
import kotlin.metadata.ClassKind
import kotlin.metadata.KmClassifier
import kotlin.metadata.KmConstructor
import kotlin.metadata.KmFunction
import kotlin.metadata.KmProperty
import kotlin.metadata.KmType
import kotlin.metadata.KmTypeParameter
import kotlin.metadata.Visibility
import kotlin.metadata.isNullable
import kotlin.metadata.isVar
import kotlin.metadata.jvm.JvmMethodSignature
import kotlin.metadata.jvm.KotlinClassMetadata
import kotlin.metadata.jvm.getterSignature
import kotlin.metadata.jvm.signature
import kotlin.metadata.isData
import kotlin.metadata.kind
import kotlin.metadata.modality
import kotlin.metadata.visibility

/**
 * The library's public surface is deliberate: every class and member an app can reach (Kotlin `public` or
 * `protected`, read from each class's Kotlin metadata, so that `internal` declarations, public in the bytecode, are
 * left out) is listed in `api/ldp-telemetry-client.api`, with the checked exceptions each one declares for Java
 * (`@Throws`). A change to the surface fails here until that file is updated on purpose:
 *
 *     mvn -B test -Dtest=ApiSurfaceTest -Dldp.api.update=true
 */
class ApiSurfaceTest {
    private val classes: File = File(TelemetryClient::class.java.protectionDomain.codeSource.location.toURI())
    private val dump = File("api/ldp-telemetry-client.api")

    private fun short(name: String) = name.replace('/', '.').removePrefix("io.github.ldptelemetry.client.").removePrefix("kotlin.")

    private fun render(t: KmType, params: Map<Int, String>): String {
        val base = when (val c = t.classifier) {
            is KmClassifier.Class -> short(c.name)
            is KmClassifier.TypeParameter -> params[c.id] ?: "T${c.id}"
            is KmClassifier.TypeAlias -> short(c.name)
        }
        val args = if (t.arguments.isEmpty()) "" else t.arguments.joinToString(", ", "<", ">") { a -> a.type?.let { render(it, params) } ?: "*" }
        return base + args + if (t.isNullable) "?" else ""
    }

    private fun typeParams(vararg lists: List<KmTypeParameter>): Map<Int, String> = lists.flatMap { it }.associate { it.id to it.name }

    private fun descriptor(type: Class<*>): String = when {
        type.isArray -> "[" + descriptor(type.componentType)
        type == Void.TYPE -> "V"
        type.isPrimitive -> mapOf<Class<*>?, String>(Int::class.javaPrimitiveType to "I", Long::class.javaPrimitiveType to "J", Double::class.javaPrimitiveType to "D",
            Boolean::class.javaPrimitiveType to "Z", Float::class.javaPrimitiveType to "F", Short::class.javaPrimitiveType to "S",
            Byte::class.javaPrimitiveType to "B", Char::class.javaPrimitiveType to "C").getValue(type)
        else -> "L" + type.name.replace('.', '/') + ";"
    }

    private fun descriptor(e: Executable): String =
        e.parameterTypes.joinToString("", "(", ")") { descriptor(it) } + if (e is Method) descriptor(e.returnType) else "V"

    /** The checked exceptions the JVM method of [sig] declares, as Java sees them. */
    private fun throwsOf(cls: Class<*>, sig: JvmMethodSignature?): String {
        sig ?: return ""
        val all: List<Executable> = if (sig.name == "<init>") cls.declaredConstructors.toList<Constructor<*>>() else cls.declaredMethods.filter { it.name == sig.name }
        val e = all.firstOrNull { descriptor(it) == sig.descriptor } ?: return ""
        val checked = e.exceptionTypes.filter { Exception::class.java.isAssignableFrom(it) && !RuntimeException::class.java.isAssignableFrom(it) }
        return if (checked.isEmpty()) "" else checked.joinToString(", ", " throws ") { short(it.name) }
    }

    private fun visible(v: Visibility) = v == Visibility.PUBLIC || v == Visibility.PROTECTED

    private fun fn(cls: Class<*>, f: KmFunction, outer: Map<Int, String>): String {
        val tp = outer + typeParams(f.typeParameters)
        val receiver = f.receiverParameterType?.let { render(it, tp) + "." } ?: ""
        val generics = if (f.typeParameters.isEmpty()) "" else f.typeParameters.joinToString(", ", "<", "> ") { it.name }
        val params = f.valueParameters.joinToString(", ") { "${it.name}: ${render(it.type, tp)}" }
        return "  ${f.visibility.name.lowercase()} fun $generics$receiver${f.name}($params): ${render(f.returnType, tp)}${throwsOf(cls, f.signature)}"
    }

    private fun prop(cls: Class<*>, p: KmProperty, outer: Map<Int, String>): String {
        val setter = p.setter
        val kind = if (p.isVar && setter != null && visible(setter.visibility)) "var" else "val"
        return "  ${p.visibility.name.lowercase()} $kind ${p.name}: ${render(p.returnType, outer)}${throwsOf(cls, p.getterSignature)}"
    }

    private fun ctor(cls: Class<*>, c: KmConstructor, outer: Map<Int, String>): String =
        "  ${c.visibility.name.lowercase()} constructor(${c.valueParameters.joinToString(", ") { "${it.name}: ${render(it.type, outer)}" }})${throwsOf(cls, c.signature)}"

    /** Whether [cls] and every class around it are public (or protected) in Kotlin. */
    private fun reachable(cls: Class<*>): Boolean {
        var c: Class<*>? = cls
        while (c != null) {
            val md = c.getAnnotation(Metadata::class.java)?.let { KotlinClassMetadata.readLenient(it) } as? KotlinClassMetadata.Class ?: return false
            if (!visible(md.kmClass.visibility)) return false
            c = c.enclosingClass
        }
        return true
    }

    /** The public surface, one line per class or member, sorted. */
    private fun surface(): List<String> {
        val loader = TelemetryClient::class.java.classLoader
        val out = ArrayList<String>()
        val files = classes.walkTopDown().filter { it.isFile && it.name.endsWith(".class") }.sortedBy { it.path }
        for (f in files) {
            val name = f.relativeTo(classes).path.removeSuffix(".class").replace(File.separatorChar, '.')
            val cls = Class.forName(name, false, loader)
            val meta = cls.getAnnotation(Metadata::class.java) ?: continue
            when (val md = KotlinClassMetadata.readLenient(meta)) {
                is KotlinClassMetadata.Class -> {
                    if (!reachable(cls)) continue
                    val k = md.kmClass
                    val tp = typeParams(k.typeParameters)
                    val supers = k.supertypes.map { render(it, tp) }.filter { it != "Any" }
                    val generics = if (k.typeParameters.isEmpty()) "" else k.typeParameters.joinToString(", ", "<", ">") { it.name }
                    val kind = k.kind.name.lowercase().replace('_', ' ').let { kind ->
                        if (k.kind == ClassKind.CLASS) "${k.modality.name.lowercase()} ${if (k.isData) "data " else ""}$kind" else kind
                    }
                    out.add("${k.visibility.name.lowercase()} $kind ${short(k.name)}$generics${if (supers.isEmpty()) "" else " : " + supers.joinToString(", ")}")
                    if (k.kind != ClassKind.ENUM_CLASS) {
                        k.constructors.filter { visible(it.visibility) }.mapTo(out) { ctor(cls, it, tp) }
                    } else {
                        k.kmEnumEntries.mapTo(out) { "  entry ${it.name}" }
                    }
                    k.properties.filter { visible(it.visibility) }.sortedBy { it.name }.mapTo(out) { prop(cls, it, tp) }
                    k.functions.filter { visible(it.visibility) }.map { fn(cls, it, tp) }.sorted().let { out.addAll(it) }
                }
                is KotlinClassMetadata.FileFacade -> {
                    val p = md.kmPackage
                    val members = p.properties.filter { visible(it.visibility) }.map { prop(cls, it, emptyMap()) } +
                        p.functions.filter { visible(it.visibility) }.map { fn(cls, it, emptyMap()) }.sorted()
                    if (members.isNotEmpty()) {
                        out.add("file ${short(cls.name)}")
                        out.addAll(members)
                    }
                }
                else -> {} // lambdas, WhenMappings and other synthetic classes
            }
        }
        return out
    }

    @Test
    fun `the public surface is the checked-in one`() {
        val now = surface()
        assertTrue(now.none { ".internal." in it || it.contains(" internal.") }, "nothing of the internal package is public")
        for (helper in listOf("Json", "Bytes", "PyText", "PyMath", "PyFloat", "JsonException")) {
            assertTrue(now.none { Regex("\\binternal\\.$helper\\b").containsMatchIn(it) }, "$helper is internal")
        }
        val text = now.joinToString("\n", postfix = "\n")
        if (System.getProperty("ldp.api.update") == "true") {
            dump.parentFile.mkdirs()
            dump.writeText(text)
        }
        val was = if (dump.exists()) dump.readText() else ""
        if (was != text) {
            val old = was.lines().toSet()
            val new = now.toSet()
            val diff = (now.filter { it !in old }.map { "+ $it" } + was.lines().filter { it.isNotEmpty() && it !in new }.map { "- $it" }).take(60)
            assertEquals(was, text, "the public surface changed (update ${dump.path} on purpose: -Dldp.api.update=true):\n${diff.joinToString("\n")}")
        }
    }

    @Test
    fun `every call that reads or writes the state declares its checked exception for Java`() {
        val lines = surface()
        fun member(cls: String, m: String): List<String> {
            val head = Regex("^(public|protected) [a-z ]+ ${Regex.escape(cls)}(<[^>]*>)?( : .*)?$")
            return lines.dropWhile { !head.matches(it) }.drop(1).takeWhile { it.startsWith("  ") }
                .filter { Regex("\\b$m\\b[(:]").containsMatchIn(it) }
        }
        val touching = mapOf(
            "TelemetryClient" to listOf("record", "recordMany", "spent", "currentWindow", "pending", "pendingBytes", "uploaded", "remaining", "counts", "optedOut", "optOut", "optIn", "hasPending", "nextUploadAt", "nextBatch", "splitBatch", "acknowledgeBatch"),
            "ledger.StateStore" to listOf("transact", "read"),
            "ledger.FileStore" to listOf("transact", "read"),
            "ledger.MemoryStore" to listOf("transact", "read"),
            "upload.Outbox" to listOf("nextBatch", "splitBatch", "acknowledgeBatch", "hasPending", "nextUploadAt"),
            "upload.Uploader" to listOf("upload"),
        )
        for ((cls, members) in touching) {
            for (m in members) {
                val found = member(cls, m)
                assertTrue(found.isNotEmpty(), "$cls.$m is in the surface")
                found.forEach { assertTrue(" throws " in it, "$cls.$m declares its checked exception: $it") }
            }
        }
        assertTrue(lines.any { it.startsWith("  public constructor(spec: spec.CollectionSpec, store: ledger.StateStore") && "throws LedgerException" in it })
    }
}
