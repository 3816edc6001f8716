//! Bytes, hex and the hashes the protocols use: MurmurHash3 (the `murmur3` crate), MD5, SHA-256 and HMAC-SHA256
//! (RustCrypto's `md-5`, `sha2`, `hmac`).

use hmac::{Hmac, KeyInit, Mac};
use md5::Md5;
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};

/// HMAC-SHA256, keyed.
pub(crate) type HmacSha256 = Hmac<Sha256>;

/// Lower-case hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(2 * bytes.len());
    for b in bytes {
        out.push(DIGITS[(b >> 4) as usize] as char);
        out.push(DIGITS[(b & 15) as usize] as char);
    }
    out
}

/// The bytes of a hex string (either case), or a `ValueError` text.
pub fn from_hex(text: &str) -> Result<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return Err(Error::value(format!("hex text of odd length {}", text.len())));
    }
    let nibble = |c: u8| -> Result<u8> {
        match c {
            b'0'..=b'9' => Ok(c - b'0'),
            b'a'..=b'f' => Ok(c - b'a' + 10),
            b'A'..=b'F' => Ok(c - b'A' + 10),
            _ => Err(Error::value(format!("non-hexadecimal number found in fromhex() arg: {:?}", c as char))),
        }
    };
    text.as_bytes().chunks(2).map(|p| Ok((nibble(p[0])? << 4) | nibble(p[1])?)).collect()
}

/// `n` as 4 big-endian bytes.
pub(crate) fn uint32_be(n: u32) -> [u8; 4] {
    n.to_be_bytes()
}

/// MurmurHash3_x86_32 of `data` with `seed`.
pub fn murmur3(data: &[u8], seed: u32) -> u32 {
    // Reading from a slice cannot fail.
    murmur3::murmur3_32(&mut std::io::Cursor::new(data), seed).unwrap_or(0)
}

/// MD5 of `data`.
pub fn md5(data: &[u8]) -> [u8; 16] {
    Md5::digest(data).into()
}

/// SHA-256 of the concatenation of `parts`.
pub fn sha256(parts: &[&[u8]]) -> [u8; 32] {
    let mut h = Sha256::new();
    for p in parts {
        h.update(p);
    }
    h.finalize().into()
}

/// A fresh HMAC-SHA256 keyed with `key`, which must be non-empty.
pub(crate) fn hmac(key: &[u8]) -> Result<HmacSha256> {
    if key.is_empty() {
        return Err(Error::value("the key must be non-empty bytes"));
    }
    <HmacSha256 as KeyInit>::new_from_slice(key).map_err(|_| Error::value("the key must be non-empty bytes"))
}

/// HMAC-SHA256 of the concatenation of `parts` under `key` (non-empty).
pub fn hmac_sha256(key: &[u8], parts: &[&[u8]]) -> Result<[u8; 32]> {
    let mut mac = hmac(key)?;
    for p in parts {
        mac.update(p);
    }
    Ok(mac.finalize().into_bytes().into())
}

/// The metric secret a device gives a memoizing encoder:
/// `HMAC-SHA256(device_secret, "ldp/client/metric-secret/v1\0" ‖ UTF-8(metric))`.
pub fn metric_secret(device_secret: &[u8], metric: &str) -> Result<[u8; 32]> {
    hmac_sha256(device_secret, &[b"ldp/client/metric-secret/v1\0", metric.as_bytes()])
}
