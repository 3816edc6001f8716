package io.github.ldptelemetry.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.github.ldptelemetry.client.ledger.FileStore;
import io.github.ldptelemetry.client.ledger.MemoryStore;
import io.github.ldptelemetry.client.ledger.StateStore;
import io.github.ldptelemetry.client.protocols.DBitFlipParams;
import io.github.ldptelemetry.client.protocols.GRRParams;
import io.github.ldptelemetry.client.protocols.HHParams;
import io.github.ldptelemetry.client.protocols.LOUEParams;
import io.github.ldptelemetry.client.protocols.MultiParams;
import io.github.ldptelemetry.client.protocols.OUEParams;
import io.github.ldptelemetry.client.protocols.Protocols;
import io.github.ldptelemetry.client.spec.CollectionSpec;
import io.github.ldptelemetry.client.upload.Batch;
import io.github.ldptelemetry.client.upload.Outbox;
import io.github.ldptelemetry.client.upload.UploadException;
import io.github.ldptelemetry.client.upload.UploadOptions;
import io.github.ldptelemetry.client.upload.UploadResult;
import io.github.ldptelemetry.client.upload.Uploader;
import java.io.File;
import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import kotlin.Pair;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The client as a Java app calls it. This file compiling is the test of the checked exceptions: javac refuses a
 * {@code catch (LedgerException e)} around a call that does not declare it ({@code @Throws} in Kotlin), so every call
 * below that the Kotlin side forgot to declare fails the build.
 */
class JavaInteropTest {
    @TempDir
    File dir;

    private static final String SPEC = "{\"spec_version\": 1, \"name\": \"java.interop\", \"window_seconds\": 86400,"
        + " \"budget\": {\"per_window\": 100, \"lifetime\": 1000},"
        + " \"metrics\": {\"color\": {\"protocol\": \"grr\", \"params\": {\"epsilon\": 1.0, \"domain_size\": 4},"
        + " \"budget\": {\"per_report\": 1.0}}}}";

    /** A call that declares it throws LedgerException failed. */
    private static <T> T failed(LedgerException e) {
        return fail(e);
    }

    @Test
    void everyCallThatTouchesTheStateDeclaresLedgerException() throws IOException {
        // each call alone in its try: javac checks each one declares LedgerException (a try whose body cannot throw
        // the checked exception it catches does not compile)
        CollectionSpec spec = CollectionSpec.parse(SPEC);
        StateStore store;
        try { store = new FileStore(dir); } catch (LedgerException e) { store = failed(e); }
        TelemetryClient client;
        try { client = new TelemetryClient(spec, store); } catch (LedgerException e) { client = failed(e); }
        long id;
        try { id = client.record("color", 2); } catch (LedgerException e) { id = failed(e); }
        List<Long> ids;
        try {
            ids = client.recordMany(Arrays.asList(new Pair<String, Object>("color", 0), new Pair<String, Object>("color", 1)));
        } catch (LedgerException e) {
            ids = failed(e);
        }
        assertEquals(Arrays.asList(id + 1, id + 2), ids);
        try { assertEquals(3L, client.pending()); } catch (LedgerException e) { failed(e); }
        try { assertTrue(client.pendingBytes() > 0); } catch (LedgerException e) { failed(e); }
        try { assertTrue(client.hasPending()); } catch (LedgerException e) { failed(e); }
        try { assertEquals(3.0, client.spent().getEpsilon(), 1e-9); } catch (LedgerException e) { failed(e); }
        try { assertEquals(3.0, client.spent("color", true).getEpsilon(), 1e-9); } catch (LedgerException e) { failed(e); }
        try { assertTrue(client.currentWindow() > 0); } catch (LedgerException e) { failed(e); }
        try { assertEquals(997.0, client.remaining().getLifetime().getEpsilon(), 1e-9); } catch (LedgerException e) { failed(e); }
        try { assertEquals(3L, client.counts().get("color").getPending()); } catch (LedgerException e) { failed(e); }
        try { assertEquals(Double.NEGATIVE_INFINITY, client.nextUploadAt()); } catch (LedgerException e) { failed(e); }
        Batch batch;
        try { batch = client.nextBatch(null); } catch (LedgerException e) { batch = failed(e); }
        assertEquals(3, batch.getReports().size());
        try { assertEquals(2, client.splitBatch(batch.getId())); } catch (LedgerException e) { failed(e); }
        Batch first;
        try { first = client.nextBatch(null); } catch (LedgerException e) { first = failed(e); }
        try { assertEquals(2, client.acknowledgeBatch(first.getId(), Arrays.asList(id, id + 1))); } catch (LedgerException e) { failed(e); }
        try { assertEquals(Collections.singletonMap("color", 2L), client.uploaded()); } catch (LedgerException e) { failed(e); }
        try { assertFalse(client.getOptedOut()); } catch (LedgerException e) { failed(e); }
        try { assertEquals(1L, client.optOut()); } catch (LedgerException e) { failed(e); }
        try { assertTrue(client.getOptedOut()); } catch (LedgerException e) { failed(e); }
        try { assertEquals(Double.POSITIVE_INFINITY, client.nextUploadAt()); } catch (LedgerException e) { failed(e); }
        try {
            client.record("color", 1);
            fail("an opted-out device records nothing");
        } catch (OptedOutException e) {
            assertTrue(e.getMessage().contains("opted out"), e.getMessage());
        } catch (LedgerException e) {
            failed(e);
        }
        try { assertTrue(client.optIn()); } catch (LedgerException e) { failed(e); }
        try { client.record("color", 3); } catch (LedgerException e) { failed(e); }
        try { assertEquals(1L, (long) store.read(view -> view.getPendingCount())); } catch (LedgerException e) { failed(e); }
        try { store.transact(tx -> tx.getPendingBytes()); } catch (LedgerException e) { failed(e); }
        FileStore files;
        try { files = new FileStore(dir, 1_000); } catch (LedgerException e) { files = failed(e); }
        try { assertEquals(1L, (long) files.read(view -> view.getPendingCount())); } catch (LedgerException e) { failed(e); }
        try { files.transact(tx -> tx.getPendingCount()); } catch (LedgerException e) { failed(e); }
        MemoryStore memory = new MemoryStore();
        try { memory.read(view -> view.getState()); } catch (LedgerException e) { failed(e); }
        store.close(); // Closeable: IOException
    }

    @Test
    void aStoreThatCannotBeOpenedIsALedgerException() throws IOException {
        CollectionSpec spec = CollectionSpec.parse(SPEC);
        Files.write(new File(dir, "outbox.3.log").toPath(), new byte[] {'x', '\n'});
        try {
            new TelemetryClient(spec, new FileStore(dir));
            fail("a folder with an outbox and no state is refused");
        } catch (LedgerException e) {
            assertTrue(e.getMessage().contains("outbox.3.log"), e.getMessage());
            assertTrue(e.getMessage().contains("delete the whole folder"), e.getMessage());
        }
    }

    @Test
    void anUploadThatFailsIsAnUploadException() throws Exception {
        CollectionSpec spec = CollectionSpec.parse(SPEC);
        TelemetryClient client = new TelemetryClient(spec, new MemoryStore());
        client.record("color", 1);
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        UploadOptions options = new UploadOptions(Collections.singletonList("http://127.0.0.1:" + port + "/v1/reports"), "token",
            2.0, 10.0, 1);
        assertEquals(10.0, options.getCallTimeoutSeconds());
        assertEquals(300.0, UploadOptions.DEFAULT_CALL_TIMEOUT_SECONDS);
        Outbox outbox = client;
        try {
            UploadResult result = new Uploader(options).upload(outbox);
            fail("nothing listens there: " + result);
        } catch (UploadException e) {
            assertNull(e.getStatus());
            assertEquals(1L, client.pending());
        } catch (LedgerException e) {
            fail(e);
        }
    }

    @Test
    void aRefusalCarriesItsCodeAndFieldsForJava() {
        Map<String, Object> params = new LinkedHashMap<>();
        params.put("epsilon", -1);
        params.put("domain_size", 3);
        try {
            Protocols.INSTANCE.get("grr").paramsOf(params);
            fail("epsilon -1 is refused");
        } catch (LdpValueException e) {
            assertEquals(RefusalCode.PARAM_RANGE, e.getCode());
            assertEquals("param_range", e.getCode().getCode());
            assertEquals(RefusalCode.PARAM_RANGE, RefusalCode.fromCode("param_range"));
            assertEquals("epsilon", e.getFields().get("param"));
            assertEquals(-1L, e.getFields().get("got"));
            assertEquals(0L, e.getFields().get("min"));
            assertEquals(Boolean.TRUE, e.getFields().get("min_exclusive"));
            Refusal refusal = e;
            assertEquals(e.getFields(), refusal.getFields());
        }
        params.put("epsilon", "1");
        try {
            Protocols.INSTANCE.get("grr").paramsOf(params);
            fail("a string epsilon is refused");
        } catch (LdpTypeException e) {
            assertEquals(RefusalCode.PARAM_TYPE, e.getCode());
            assertEquals("float", e.getFields().get("expected"));
            assertEquals("string", e.getFields().get("got"));
        }
        GRRParams typed = new GRRParams(1.0, 3L);
        assertEquals(3, typed.getDomainSize());
        params.put("epsilon", 1.0);
        assertEquals(Protocols.INSTANCE.get("grr").paramsOf(params).getFingerprint(), typed.getFingerprint());
    }

    @Test
    void typedParamsAreBuiltFromJavaWithTheTablesDefaults() {
        OUEParams oue = new OUEParams(1.0, 4L);
        Map<String, Object> spec = new LinkedHashMap<>();
        spec.put("epsilon", 1);
        spec.put("domain_size", 4);
        assertEquals(OUEParams.read(spec), oue);
        assertEquals(Arrays.asList("epsilon", "domain_size", "labels"), new java.util.ArrayList<>(oue.toDict().keySet()));
        HHParams hh = new HHParams(1.0, 0.0, 1.0);
        assertEquals(4, hh.getBranching());
        assertEquals("auto", hh.getOracle());
        assertEquals("sue", new LOUEParams(2.0, 0.5, 3L, null, "sue").getPermanent());
        assertEquals(2, new DBitFlipParams(1.0, Arrays.asList(0.0, 1.0, 2.0, 4.0), 2L).getD());
        MultiParams multi = new MultiParams(1.0, "sample", Arrays.asList(
            new MultiParams.Attribute("a", "grr", Collections.singletonMap("domain_size", 3L)),
            new MultiParams.Attribute("s", "rr")));
        assertEquals(Arrays.asList("a", "s"), multi.getNames());
        try {
            new OUEParams(1.0, 1L);
            fail("a domain of one value is refused");
        } catch (LdpValueException e) {
            assertEquals(RefusalCode.PARAM_RANGE, e.getCode());
            assertEquals("domain_size", e.getFields().get("param"));
            assertEquals(2L, e.getFields().get("min"));
        }
    }
}
