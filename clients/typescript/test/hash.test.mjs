// The hash family (docs/hashing.md): MurmurHash3_x86_32 buckets, value bytes and namespaces, SHA-256/HMAC and MD5
// against node:crypto, Google RAPPOR's MD5 buckets.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, existsSync } from "node:fs";
import { createHash, createHmac } from "node:crypto";

import { bucket, bucketOfBytes, buckets, hash32, hashUint32LE, MAX_SEED } from "../dist/hash/murmur3.js";
import { HmacSha256, Sha256, hmacSha256, sha256 } from "../dist/hash/sha256.js";
import { md5, md5Buckets } from "../dist/hash/md5.js";
import { concatBytes, fromHex, namespaced, toHex, uint32BE, utf8Encode, valueBytes } from "../dist/bytes.js";
import { isDeepStrictEqual } from "node:util";
import { LdpTypeError, LdpValueError } from "../dist/errors.js";

const here = new URL(".", import.meta.url);
const PRIMITIVES = new URL("../../../conformance/vectors/primitives.json", here);

/** A fixed-seed PRNG (xorshift32) for hypothesis-style random inputs. */
function prng(seed) {
  let s = seed >>> 0 || 1;
  const next = () => {
    s ^= s << 13; s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5; s >>>= 0;
    return s;
  };
  return {
    int: (n) => next() % n,
    bytes: (n) => Uint8Array.from({ length: n }, () => next() & 0xff),
  };
}

/** A refusal of class `cls` with `code` and exactly `fields`. */
const refusal = (cls, code, fields) => (e) => e instanceof cls && e.code === code && isDeepStrictEqual({ ...e.fields }, fields);

test("every row of docs/hashing.md §6 (parsed from the page)", () => {
  const page = readFileSync(new URL("../../../docs/hashing.md", here), "utf8");
  const table = page.slice(page.indexOf("## 6. Test vectors"), page.indexOf("The Python values behind the rows"));
  const rows = [...table.matchAll(/^\| ([0-9a-f]+|-) \| (\d+) \| 0x([0-9a-f]{8}) \| (\d+) \|$/gm)];
  assert.equal(rows.length, 14, "the table's 14 rows");
  for (const [, input, seed, hash, mod] of rows) {
    const data = input === "-" ? new Uint8Array(0) : fromHex(input);
    assert.equal(hash32(data, Number(seed)), parseInt(hash, 16), `${input} seed ${seed}`);
    assert.equal(bucket(data, 1024, Number(seed)), Number(mod));
  }
});

test("docs/hashing.md §5 and §7 examples", () => {
  assert.equal(hash32("hello"), 0x248bfa47);
  assert.equal(bucket("hello", 1024), 583);
  assert.deepEqual(buckets("hello", 1000, [0, 1, 2]), [351, 357, 525]);
  assert.equal(toHex(namespaced(3, "foo")), "00000003666f6f");
  assert.equal(bucket(namespaced(3, "foo"), 1024), 528);
  assert.deepEqual(buckets(namespaced(3, "https://example.com/"), 16, [0, 1]), [0, 9]);
  assert.deepEqual(buckets("hello", 1024, [100, 101, 102, 103]), [247, 541, 264, 798]);
  assert.equal(hash32("héllo wörld ✓"), 0x0e375ad8);
  assert.equal(toHex(valueBytes("héllo wörld ✓")), "68c3a96c6c6f2077c3b6726c6420e29c93");
  assert.equal(bucket("x", 2 ** 32, MAX_SEED), hash32("x", MAX_SEED));
  assert.equal(bucketOfBytes(utf8Encode("hello"), 1000, 2), 525);
});

/** MurmurHash3_x86_32 written from docs/hashing.md §2 with BigInt arithmetic mod 2^32 (an independent reference). */
function murmurReference(data, seed) {
  const M = 0xffffffffn;
  const mul = (a, b) => (a * b) & M;
  const rotl = (x, r) => ((x << BigInt(r)) | (x >> BigInt(32 - r))) & M;
  const c1 = 0xcc9e2d51n, c2 = 0x1b873593n;
  let h = BigInt(seed);
  const nblocks = Math.floor(data.length / 4);
  for (let i = 0; i < nblocks; i++) {
    let k = BigInt(data[4 * i]) | (BigInt(data[4 * i + 1]) << 8n) | (BigInt(data[4 * i + 2]) << 16n) | (BigInt(data[4 * i + 3]) << 24n);
    k = mul(rotl(mul(k, c1), 15), c2);
    h = rotl(h ^ k, 13);
    h = (h * 5n + 0xe6546b64n) & M;
  }
  const tail = data.subarray(4 * nblocks);
  if (tail.length) {
    let k = 0n;
    for (let i = tail.length - 1; i >= 0; i--) k ^= BigInt(tail[i]) << BigInt(8 * i);
    h ^= mul(rotl(mul(k, c1), 15), c2);
  }
  h ^= BigInt(data.length);
  h ^= h >> 16n;
  h = mul(h, 0x85ebca6bn);
  h ^= h >> 13n;
  h = mul(h, 0xc2b2ae35n);
  h ^= h >> 16n;
  return Number(h);
}

test("hash32 agrees with a BigInt reference of §2 on random inputs and seeds", () => {
  const r = prng(1);
  for (let n = 0; n <= 300; n++) {
    const data = r.bytes(n);
    const seed = [0, 1, MAX_SEED, r.int(2 ** 31) * 2 + r.int(2)][n % 4];
    assert.equal(hash32(data, seed), murmurReference(data, seed), `length ${n} seed ${seed}`);
    const m = 1 + r.int(100000);
    assert.equal(bucket(data, m, seed), murmurReference(data, seed) % m);
  }
});

test("hashing refuses what Python refuses, with its texts", () => {
  assert.throws(() => hash32("x", -1), refusal(LdpValueError, "param_range", { param: "seed", got: -1, min: 0, max: MAX_SEED }));
  assert.throws(() => hash32("x", 2 ** 32), refusal(LdpValueError, "param_range", { param: "seed", got: 2 ** 32, min: 0, max: MAX_SEED }));
  assert.throws(() => hash32("x", 1.5), refusal(LdpTypeError, "param_type", { param: "seed", expected: "int", got: "float" }));
  assert.throws(() => hash32("x", true), refusal(LdpTypeError, "param_type", { param: "seed", expected: "int", got: "bool" }));
  assert.throws(() => bucket("x", 0), refusal(LdpValueError, "param_range", { param: "m", got: 0, min: 1, max: 2 ** 32 }));
  assert.throws(() => bucket("x", 2 ** 32 + 1), LdpValueError);
  assert.throws(() => bucket("x", "3"), refusal(LdpTypeError, "param_type", { param: "m", expected: "int", got: "string" }));
  assert.throws(() => hash32(3), refusal(LdpTypeError, "value_type", { expected: "string_or_bytes", got: "int" }));
  assert.throws(() => hash32(null), refusal(LdpTypeError, "value_type", { expected: "string_or_bytes", got: "null" }));
  assert.throws(() => namespaced(-1, "x"), refusal(LdpValueError, "param_range", { param: "namespace", got: -1, min: 0, max: MAX_SEED }));
  assert.throws(() => namespaced(1.5, "x"), refusal(LdpTypeError, "param_type", { param: "namespace", expected: "int", got: "float" }));
  // Python: 'a\ud800b'.encode() fails: a lone surrogate has no UTF-8 form
  assert.throws(() => valueBytes("a\ud800b"), refusal(LdpValueError, "not_encodable", { encoding: "utf-8" }));
  assert.throws(() => valueBytes("\u{1F600}x\udc00\udbff!"), refusal(LdpValueError, "not_encodable", { encoding: "utf-8" }));
  assert.throws(() => hash32("\udfff"), LdpValueError);
});

test("utf8Encode is UTF-8 (as TextEncoder) on well-formed random strings", () => {
  const r = prng(2);
  const enc = new TextEncoder();
  for (let t = 0; t < 2000; t++) {
    let s = "";
    for (let i = r.int(20); i > 0; i--) {
      let c = [r.int(0x80), r.int(0x800), r.int(0x10000), 0x10000 + r.int(0x100000)][r.int(4)];
      if (c >= 0xd800 && c < 0xe000) c = 0x41;
      s += String.fromCodePoint(c);
    }
    assert.deepEqual(utf8Encode(s), enc.encode(s));
  }
  assert.equal(toHex(utf8Encode("\u{1F600}")), "f09f9880");
});

test("bytes helpers", () => {
  assert.equal(toHex(uint32BE(0x01020304)), "01020304");
  assert.equal(toHex(uint32BE(0xffffffff)), "ffffffff");
  assert.throws(() => uint32BE(2 ** 32), RangeError);
  assert.deepEqual(fromHex("00ffAb"), Uint8Array.of(0, 255, 0xab));
  assert.throws(() => fromHex("abc"), RangeError);
  assert.throws(() => fromHex("zz"), RangeError);
  assert.equal(toHex(concatBytes(Uint8Array.of(1), new Uint8Array(0), Uint8Array.of(2, 3))), "010203");
  const b = Uint8Array.of(9);
  assert.equal(valueBytes(b), b);
});

test("SHA-256: FIPS 180 vectors", () => {
  const hex = (s) => toHex(sha256(utf8Encode(s)));
  assert.equal(hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  assert.equal(hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  assert.equal(hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
               "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  assert.equal(hex("a".repeat(1000000)), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
});

test("SHA-256 and HMAC-SHA256 agree with node:crypto on random inputs", () => {
  const r = prng(3);
  for (let n = 0; n <= 300; n++) {
    const data = r.bytes(n);
    assert.equal(toHex(sha256(data)), createHash("sha256").update(data).digest("hex"), `length ${n}`);
    // the same bytes fed in random pieces
    const h = new Sha256();
    for (let off = 0; off < n;) {
      const take = 1 + r.int(80);
      h.update(data.subarray(off, off + take));
      off += take;
    }
    assert.equal(toHex(h.digest()), createHash("sha256").update(data).digest("hex"));
  }
  for (let klen = 0; klen <= 200; klen++) {
    const key = r.bytes(klen);
    const msg = r.bytes(r.int(301));
    assert.equal(toHex(hmacSha256(key, msg)), createHmac("sha256", key).update(msg).digest("hex"), `key ${klen}`);
    const mac = new HmacSha256(key);
    const cut = r.int(msg.length + 1);
    assert.equal(toHex(mac.mac(msg.subarray(0, cut), msg.subarray(cut))), createHmac("sha256", key).update(msg).digest("hex"));
  }
});

test("HMAC-SHA256: RFC 4231 test cases 1-4, 6, 7", () => {
  const cases = [
    ["0b".repeat(20), toHex(utf8Encode("Hi There")), "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"],
    [toHex(utf8Encode("Jefe")), toHex(utf8Encode("what do ya want for nothing?")),
     "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"],
    ["aa".repeat(20), "dd".repeat(50), "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe"],
    ["0102030405060708090a0b0c0d0e0f10111213141516171819", "cd".repeat(50),
     "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b"],
    ["aa".repeat(131), toHex(utf8Encode("Test Using Larger Than Block-Size Key - Hash Key First")),
     "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"],
    ["aa".repeat(131), toHex(utf8Encode("This is a test using a larger than block-size key and a larger than block-size data. " +
                                        "The key needs to be hashed before being used by the HMAC algorithm.")),
     "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2"],
  ];
  for (const [key, data, mac] of cases) assert.equal(toHex(hmacSha256(fromHex(key), fromHex(data))), mac);
});

test("MD5: RFC 1321 vectors and node:crypto on random inputs", () => {
  const hex = (s) => toHex(md5(utf8Encode(s)));
  assert.equal(hex(""), "d41d8cd98f00b204e9800998ecf8427e");
  assert.equal(hex("a"), "0cc175b9c0f1b6a831c399e269772661");
  assert.equal(hex("abc"), "900150983cd24fb0d6963f7d28e17f72");
  assert.equal(hex("message digest"), "f96b697d7cb7938d525a2f31aaf161d0");
  assert.equal(hex("12345678901234567890123456789012345678901234567890123456789012345678901234567890"),
               "57edf4a22be3c955ac49da2e2107b67a");
  const r = prng(4);
  for (let n = 0; n <= 300; n++) {
    const data = r.bytes(n);
    assert.equal(toHex(md5(data)), createHash("md5").update(data).digest("hex"), `length ${n}`);
  }
});

test("md5Buckets: Google RAPPOR's family (docs/hashing.md)", () => {
  assert.deepEqual(md5Buckets(namespaced(0, "foo"), 16, 2), [6, 6]);
  assert.deepEqual(md5Buckets(namespaced(3, "https://example.com/"), 128, 4), [29, 66, 50, 28]);
  assert.equal(toHex(md5(namespaced(0, "foo"))).slice(0, 4), "66f6");
  assert.throws(() => md5Buckets(new Uint8Array(0), 16, 17), refusal(LdpValueError, "param_range", { param: "count", got: 17, min: 1, max: 16 }));
  assert.throws(() => md5Buckets(new Uint8Array(0), 16, 0), LdpValueError);
  assert.throws(() => md5Buckets(new Uint8Array(0), 0, 2), refusal(LdpValueError, "param_range", { param: "m", got: 0, min: 1, max: 2 ** 32 }));
});

test("conformance vectors: hashes (primitives.json)", { skip: !existsSync(PRIMITIVES) }, () => {
  const { hashes } = JSON.parse(readFileSync(PRIMITIVES, "utf8"));
  for (const { data, seed, hash32: h } of hashes.murmur3_x86_32) assert.equal(hash32(fromHex(data), seed), h);
  for (const { data, k, h, buckets: b } of hashes.md5_buckets) assert.deepEqual(md5Buckets(fromHex(data), k, h), b);
  for (const { value, bytes } of hashes.value_bytes) assert.equal(toHex(valueBytes(value)), bytes);
  // the metric secret: HMAC-SHA256(device secret, b"ldp/client/metric-secret/v1\0" + metric) (ldp/client/state.py)
  for (const { device_secret, metric, secret } of hashes.metric_secret) {
    const msg = concatBytes(utf8Encode("ldp/client/metric-secret/v1\0"), utf8Encode(metric));
    assert.equal(toHex(hmacSha256(fromHex(device_secret), msg)), secret);
  }
});

test("hashUint32LE is hash32 of the four little-endian bytes (local hashing's index hash)", () => {
  const r = prng(61);
  for (let i = 0; i < 3000; i++) {
    const x = i < 4 ? [0, 1, 0xffffffff, 0x80000000][i] : r.int(2 ** 31) * 2 + r.int(2);
    const seed = i % 3 === 0 ? MAX_SEED - r.int(5) : r.int(2 ** 31) * 2 + r.int(2);
    const bytes = Uint8Array.of(x & 0xff, (x >>> 8) & 0xff, (x >>> 16) & 0xff, x >>> 24);
    assert.equal(hashUint32LE(x, seed), hash32(bytes, seed), `x = ${x}, seed = ${seed}`);
  }
});
