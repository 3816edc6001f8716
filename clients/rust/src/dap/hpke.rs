//! HPKE (RFC 9180) for DAP-09: an aggregator's [`HpkeConfig`] (its key and suite, as DAP-09 encodes it), the
//! [`HpkeKeypair`] an aggregator or collector keeps, and single-shot base-mode [`seal`] and [`open`] into DAP's
//! [`HpkeCiphertext`].
//!
//! The cryptography is the [`hpke`](https://crates.io/crates/hpke) crate's (rust-hpke, pinned); this module only
//! picks the crate's types from the suite's identifiers and moves bytes. Supported suites: every combination of
//! the KEMs DHKEM(X25519, HKDF-SHA256) `0x0020`, DHKEM(P-256, HKDF-SHA256) `0x0010` and DHKEM(P-521, HKDF-SHA512)
//! `0x0012`, the KDFs HKDF-SHA256 `0x0001` and HKDF-SHA512 `0x0003`, and the AEADs AES-128-GCM `0x0001`,
//! AES-256-GCM `0x0002` and ChaCha20Poly1305 `0x0003`: each of these is exercised by RFC 9180's published test
//! vectors (Appendix A; `tests/hpke_vectors.rs`). Other identifiers (P-384, HKDF-SHA384, X448, the export-only
//! AEAD, post-quantum KEMs) are refused by name, never guessed at. [`HpkeSuite::DEFAULT`] is X25519, HKDF-SHA256,
//! AES-128-GCM.
//!
//! The ephemeral key of each seal is derived (RFC 9180's `DeriveKeyPair`) from key material drawn from the OS
//! generator at each call (`getrandom`, no pool in user space: fork-safe); [`seal_with_ikm`] takes that material
//! from the caller, for the RFC's test vectors only.
//!
//! Layout: the suite and its identifiers (`suite`), an aggregator's config and config list (`config`), a key pair
//! (`keypair`), the crate's types picked from a suite's identifiers (`dispatch`); sealing and opening here.

use super::codec::{Reader, Writer};
use crate::error::{Error, Result};

mod config;
mod dispatch;
mod keypair;
mod suite;

pub use config::{HpkeConfig, HpkeConfigList};
use dispatch::{dispatch, Open, Seal};
pub use keypair::HpkeKeypair;
use suite::kem_name;
pub use suite::{
    HpkeSuite, AEAD_AES_128_GCM, AEAD_AES_256_GCM, AEAD_CHACHA20_POLY1305, KDF_HKDF_SHA256, KDF_HKDF_SHA512,
    KEM_P256_HKDF_SHA256, KEM_P521_HKDF_SHA512, KEM_X25519_HKDF_SHA256,
};

/// DAP-09's `HpkeCiphertext`: `config_id u8 ‖ enc opaque<0..2^16-1> ‖ payload opaque<0..2^32-1>` (the identifier
/// of the config it was sealed to, the encapsulated key, the AEAD ciphertext with its tag).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct HpkeCiphertext {
    /// The identifier of the [`HpkeConfig`] it was sealed to.
    pub config_id: u8,
    /// The encapsulated key (the KEM's `enc`).
    pub enc: Vec<u8>,
    /// The ciphertext and its tag.
    pub payload: Vec<u8>,
}

impl HpkeCiphertext {
    /// Reads one encoded ciphertext (all of `bytes`), an [`Error::Value`] saying what is wrong.
    pub fn decode(bytes: &[u8]) -> Result<Self> {
        let mut r = Reader::new(bytes, "an HpkeCiphertext");
        let c = Self::read(&mut r)?;
        r.finish()?;
        Ok(c)
    }

    pub(crate) fn read(r: &mut Reader<'_>) -> Result<Self> {
        let config_id = r.u8()?;
        let enc = r.opaque16("enc")?.to_vec();
        let payload = r.opaque32("payload")?.to_vec();
        Ok(HpkeCiphertext { config_id, enc, payload })
    }

    /// The encoding (an [`Error::Value`] if `enc` or `payload` is too long for its length prefix).
    pub fn encode(&self) -> Result<Vec<u8>> {
        let mut w = Writer::default();
        self.write(&mut w)?;
        Ok(w.into_bytes())
    }

    pub(crate) fn write(&self, w: &mut Writer) -> Result<()> {
        w.u8(self.config_id);
        w.opaque16(&self.enc, "an HpkeCiphertext's enc")?;
        w.opaque32(&self.payload, "an HpkeCiphertext's payload")
    }
}

/// Seals `plaintext` to `config` (RFC 9180 `SealBase(pk, info, aad, pt)`, single shot) with an ephemeral key from
/// the OS generator. Refused (an [`Error::Value`]): a config [`HpkeConfig::check`] refuses.
pub fn seal(config: &HpkeConfig, info: &[u8], aad: &[u8], plaintext: &[u8]) -> Result<HpkeCiphertext> {
    config.check()?;
    let mut ikm = vec![0u8; config.suite().ikm_len().unwrap_or_default()];
    os_random(&mut ikm)?;
    let sealed = seal_with_ikm(config, info, aad, plaintext, &ikm);
    crate::prio3::wipe(&mut ikm);
    sealed
}

/// [`seal`] with the ephemeral key derived from the caller's key material (`ikmE`, exactly
/// [`HpkeSuite::ikm_len`] bytes): the same inputs give the same ciphertext. **For RFC 9180's test vectors and tests
/// only**: an ephemeral key used twice exposes both plaintexts' key.
pub fn seal_with_ikm(
    config: &HpkeConfig,
    info: &[u8],
    aad: &[u8],
    plaintext: &[u8],
    ikm_e: &[u8],
) -> Result<HpkeCiphertext> {
    config.check()?;
    let want = config.suite().ikm_len().unwrap_or_default();
    if ikm_e.len() != want {
        return Err(Error::value(format!(
            "the ephemeral key material of {} is {want} bytes, got {}",
            kem_name(config.kem_id).unwrap_or("the KEM"),
            ikm_e.len()
        )));
    }
    let (enc, payload) =
        dispatch(config.suite(), Seal { public_key: &config.public_key, info, aad, plaintext, ikm_e })?;
    Ok(HpkeCiphertext { config_id: config.id, enc, payload })
}

/// Opens `ciphertext` with `keypair` (RFC 9180 `OpenBase(enc, skR, info, aad, ct)`): the plaintext. Refused (an
/// [`Error::Value`]): a ciphertext sealed to another config id, and one that does not open (another key, another
/// `info` or `aad`, tampered bytes).
pub fn open(keypair: &HpkeKeypair, info: &[u8], aad: &[u8], ciphertext: &HpkeCiphertext) -> Result<Vec<u8>> {
    let config = keypair.config();
    if ciphertext.config_id != config.id {
        return Err(Error::value(format!(
            "the ciphertext was sealed to HPKE config {}, not to this key's config {}",
            ciphertext.config_id, config.id
        )));
    }
    dispatch(
        config.suite(),
        Open { private_key: keypair.private_key(), enc: &ciphertext.enc, info, aad, payload: &ciphertext.payload },
    )
}

fn os_random(bytes: &mut [u8]) -> Result<()> {
    getrandom::fill(bytes).map_err(|e| Error::Internal(format!("the OS random generator failed: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suites_are_named_and_refused_by_name() {
        assert!(HpkeSuite::DEFAULT.is_supported());
        assert_eq!(HpkeSuite::DEFAULT.to_string(), "DHKEM(X25519, HKDF-SHA256), HKDF-SHA256, AES-128-GCM");
        let p384 = HpkeSuite { kem_id: 0x0011, ..HpkeSuite::DEFAULT };
        let e = p384.check().unwrap_err().to_string();
        assert!(e.contains("KEM 0x0011 is not supported") && e.contains("0x0020"), "{e}");
        let export_only = HpkeSuite { aead_id: 0xffff, ..HpkeSuite::DEFAULT };
        assert!(export_only.check().unwrap_err().to_string().contains("AEAD 0xffff"));
    }

    #[test]
    fn keys_round_trip_and_mismatches_are_refused() {
        for kem_id in [KEM_X25519_HKDF_SHA256, KEM_P256_HKDF_SHA256, KEM_P521_HKDF_SHA512] {
            let suite = HpkeSuite { kem_id, ..HpkeSuite::DEFAULT };
            let pair = HpkeKeypair::generate(7, suite).unwrap();
            pair.config().check().unwrap();
            let again = HpkeKeypair::from_parts(pair.config().clone(), pair.private_key()).unwrap();
            assert_eq!(again.config(), pair.config());
            let other = HpkeKeypair::generate(7, suite).unwrap();
            assert!(HpkeKeypair::from_parts(pair.config().clone(), other.private_key()).is_err());
            let sealed = seal(pair.config(), b"info", b"aad", b"secret").unwrap();
            assert_eq!(open(&pair, b"info", b"aad", &sealed).unwrap(), b"secret");
            assert!(open(&other, b"info", b"aad", &sealed).is_err());
            assert!(open(&pair, b"info", b"aad2", &sealed).is_err());
        }
        assert!(!format!("{:?}", HpkeKeypair::generate(1, HpkeSuite::DEFAULT).unwrap()).contains("private"));
    }
}
