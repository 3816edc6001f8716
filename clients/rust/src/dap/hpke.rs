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

use std::fmt;

use hpke::aead::{Aead, AesGcm128, AesGcm256, ChaCha20Poly1305};
use hpke::kdf::{HkdfSha256, HkdfSha512, Kdf};
use hpke::kem::{DhP256HkdfSha256, DhP521HkdfSha512, X25519HkdfSha256};
use hpke::rand_core::{Infallible, TryCryptoRng, TryRng};
use hpke::{Deserializable, Kem, OpModeR, OpModeS, Serializable};

use super::codec::{Reader, Writer};
use crate::error::{Error, Result};

/// DHKEM(X25519, HKDF-SHA256).
pub const KEM_X25519_HKDF_SHA256: u16 = 0x0020;
/// DHKEM(P-256, HKDF-SHA256).
pub const KEM_P256_HKDF_SHA256: u16 = 0x0010;
/// DHKEM(P-521, HKDF-SHA512).
pub const KEM_P521_HKDF_SHA512: u16 = 0x0012;
/// HKDF-SHA256.
pub const KDF_HKDF_SHA256: u16 = 0x0001;
/// HKDF-SHA512.
pub const KDF_HKDF_SHA512: u16 = 0x0003;
/// AES-128-GCM.
pub const AEAD_AES_128_GCM: u16 = 0x0001;
/// AES-256-GCM.
pub const AEAD_AES_256_GCM: u16 = 0x0002;
/// ChaCha20Poly1305.
pub const AEAD_CHACHA20_POLY1305: u16 = 0x0003;

/// An HPKE ciphersuite: the KEM, KDF and AEAD identifiers of RFC 9180's registries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct HpkeSuite {
    /// The KEM (`0x0020` for DHKEM(X25519, HKDF-SHA256)).
    pub kem_id: u16,
    /// The KDF of the key schedule (`0x0001` for HKDF-SHA256).
    pub kdf_id: u16,
    /// The AEAD (`0x0001` for AES-128-GCM).
    pub aead_id: u16,
}

impl HpkeSuite {
    /// DHKEM(X25519, HKDF-SHA256), HKDF-SHA256, AES-128-GCM: what [`HpkeKeypair::generate`] uses by default and what
    /// DAP deployments commonly configure.
    pub const DEFAULT: HpkeSuite =
        HpkeSuite { kem_id: KEM_X25519_HKDF_SHA256, kdf_id: KDF_HKDF_SHA256, aead_id: AEAD_AES_128_GCM };

    /// Whether this crate seals and opens with the suite.
    pub fn is_supported(&self) -> bool {
        self.check().is_ok()
    }

    /// `Ok` for a supported suite; else an [`Error::Value`] naming the identifier that is not and the supported ones.
    pub fn check(&self) -> Result<()> {
        let refuse = |what: &str, id: u16, known: &str| {
            Err(Error::value(format!(
                "HPKE {what} 0x{id:04x} is not supported (supported {what}s: {known}); suite: {self}"
            )))
        };
        if kem_name(self.kem_id).is_none() {
            return refuse(
                "KEM",
                self.kem_id,
                "0x0020 DHKEM(X25519, HKDF-SHA256), 0x0010 DHKEM(P-256, HKDF-SHA256), 0x0012 DHKEM(P-521, HKDF-SHA512)",
            );
        }
        if kdf_name(self.kdf_id).is_none() {
            return refuse("KDF", self.kdf_id, "0x0001 HKDF-SHA256, 0x0003 HKDF-SHA512");
        }
        if aead_name(self.aead_id).is_none() {
            return refuse("AEAD", self.aead_id, "0x0001 AES-128-GCM, 0x0002 AES-256-GCM, 0x0003 ChaCha20Poly1305");
        }
        Ok(())
    }

    /// Bytes of the KEM's key material for deriving a key pair (its `Nsk`: 32 for X25519 and P-256, 66 for P-521):
    /// what [`seal_with_ikm`] and [`HpkeKeypair::derive`] take. `None` for an unsupported KEM.
    pub fn ikm_len(&self) -> Option<usize> {
        match self.kem_id {
            KEM_X25519_HKDF_SHA256 | KEM_P256_HKDF_SHA256 => Some(32),
            KEM_P521_HKDF_SHA512 => Some(66),
            _ => None,
        }
    }
}

impl Default for HpkeSuite {
    fn default() -> Self {
        HpkeSuite::DEFAULT
    }
}

impl fmt::Display for HpkeSuite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = |n: Option<&'static str>, id: u16| n.map_or_else(|| format!("unknown 0x{id:04x}"), String::from);
        write!(
            f,
            "{}, {}, {}",
            name(kem_name(self.kem_id), self.kem_id),
            name(kdf_name(self.kdf_id), self.kdf_id),
            name(aead_name(self.aead_id), self.aead_id)
        )
    }
}

fn kem_name(id: u16) -> Option<&'static str> {
    match id {
        KEM_X25519_HKDF_SHA256 => Some("DHKEM(X25519, HKDF-SHA256)"),
        KEM_P256_HKDF_SHA256 => Some("DHKEM(P-256, HKDF-SHA256)"),
        KEM_P521_HKDF_SHA512 => Some("DHKEM(P-521, HKDF-SHA512)"),
        _ => None,
    }
}

fn kdf_name(id: u16) -> Option<&'static str> {
    match id {
        KDF_HKDF_SHA256 => Some("HKDF-SHA256"),
        KDF_HKDF_SHA512 => Some("HKDF-SHA512"),
        _ => None,
    }
}

fn aead_name(id: u16) -> Option<&'static str> {
    match id {
        AEAD_AES_128_GCM => Some("AES-128-GCM"),
        AEAD_AES_256_GCM => Some("AES-256-GCM"),
        AEAD_CHACHA20_POLY1305 => Some("ChaCha20Poly1305"),
        _ => None,
    }
}

/// DAP-09's `HpkeConfig` (§4.4.1): an aggregator's (or the collector's) HPKE public key, its suite and the one-byte
/// identifier ciphertexts sealed to it carry.
///
/// Encoded as `id u8 ‖ kem_id u16 ‖ kdf_id u16 ‖ aead_id u16 ‖ public_key opaque<1..2^16-1>` (big-endian). Any
/// identifiers decode (an aggregator may list suites a client does not speak); sealing to a config checks that its
/// suite is supported and its key is a valid key of the KEM ([`HpkeConfig::check`]).
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct HpkeConfig {
    /// The configuration's identifier, which each ciphertext sealed to it carries.
    pub id: u8,
    /// The KEM identifier.
    pub kem_id: u16,
    /// The KDF identifier.
    pub kdf_id: u16,
    /// The AEAD identifier.
    pub aead_id: u16,
    /// The KEM's serialized public key (`SerializePublicKey`: 32 bytes for X25519, the 65-byte uncompressed point
    /// for P-256).
    pub public_key: Vec<u8>,
}

impl HpkeConfig {
    /// The config of `public_key` for `suite`, with identifier `id` (not checked: see [`HpkeConfig::check`]).
    pub fn new(id: u8, suite: HpkeSuite, public_key: Vec<u8>) -> Self {
        HpkeConfig { id, kem_id: suite.kem_id, kdf_id: suite.kdf_id, aead_id: suite.aead_id, public_key }
    }

    /// The suite of the config's identifiers.
    pub fn suite(&self) -> HpkeSuite {
        HpkeSuite { kem_id: self.kem_id, kdf_id: self.kdf_id, aead_id: self.aead_id }
    }

    /// Reads one encoded `HpkeConfig` (all of `bytes`: trailing bytes are refused, as a short or empty key is), an
    /// [`Error::Value`] saying what is wrong.
    pub fn decode(bytes: &[u8]) -> Result<Self> {
        let mut r = Reader::new(bytes, "an HpkeConfig");
        let config = Self::read(&mut r)?;
        r.finish()?;
        Ok(config)
    }

    pub(crate) fn read(r: &mut Reader<'_>) -> Result<Self> {
        let (id, kem_id, kdf_id, aead_id) = (r.u8()?, r.u16()?, r.u16()?, r.u16()?);
        let public_key = r.opaque16("public_key")?.to_vec();
        if public_key.is_empty() {
            return Err(r.error("its public_key is empty (DAP-09: HpkePublicKey<1..2^16-1>)"));
        }
        Ok(HpkeConfig { id, kem_id, kdf_id, aead_id, public_key })
    }

    /// The encoding. A public key that is empty or over 65,535 bytes has none (an [`Error::Value`]).
    pub fn encode(&self) -> Result<Vec<u8>> {
        let mut w = Writer::default();
        self.write(&mut w)?;
        Ok(w.into_bytes())
    }

    pub(crate) fn write(&self, w: &mut Writer) -> Result<()> {
        if self.public_key.is_empty() {
            return Err(Error::value("an HpkeConfig's public key is empty (DAP-09: HpkePublicKey<1..2^16-1>)"));
        }
        w.u8(self.id);
        w.u16(self.kem_id);
        w.u16(self.kdf_id);
        w.u16(self.aead_id);
        w.opaque16(&self.public_key, "an HpkeConfig's public key")
    }

    /// `Ok` when this crate can seal to the config: its suite is supported and its public key is a valid key of
    /// the KEM (the right length, a point on the curve); else an [`Error::Value`] saying which.
    pub fn check(&self) -> Result<()> {
        self.suite().check()?;
        dispatch_kem(self.kem_id, CheckPublicKey(&self.public_key))
            .map_err(|e| Error::value(format!("HPKE config {}: {e}", self.id)))
    }
}

/// The public key is public: `Debug` shows it in hex, with the suite's names.
impl fmt::Debug for HpkeConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HpkeConfig")
            .field("id", &self.id)
            .field("suite", &format_args!("{}", self.suite()))
            .field("public_key", &crate::bytes::hex(&self.public_key))
            .finish()
    }
}

/// DAP-09's `HpkeConfigList` (`HpkeConfig HpkeConfigList<1..2^16-1>`): what an aggregator's `/hpke_config` answers,
/// in decreasing order of preference. Empty lists and repeated identifiers are refused (DAP-09: a client aborts on
/// an empty list; an aggregator allocates distinct identifiers).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct HpkeConfigList(pub Vec<HpkeConfig>);

impl HpkeConfigList {
    /// Reads an encoded list (all of `bytes`), an [`Error::Value`] saying what is wrong.
    pub fn decode(bytes: &[u8]) -> Result<Self> {
        let mut r = Reader::new(bytes, "an HpkeConfigList");
        let body = r.opaque16("the list")?;
        r.finish()?;
        let mut items = Reader::new(body, "an HpkeConfigList");
        let mut configs = Vec::new();
        while !items.is_empty() {
            configs.push(HpkeConfig::read(&mut items)?);
        }
        let list = HpkeConfigList(configs);
        list.check()?;
        Ok(list)
    }

    /// The encoding (an [`Error::Value`] for an empty list, a repeated identifier, or a list over 65,535 bytes).
    pub fn encode(&self) -> Result<Vec<u8>> {
        self.check()?;
        let mut body = Writer::default();
        for config in &self.0 {
            config.write(&mut body)?;
        }
        let mut w = Writer::default();
        w.opaque16(&body.into_bytes(), "an HpkeConfigList")?;
        Ok(w.into_bytes())
    }

    fn check(&self) -> Result<()> {
        if self.0.is_empty() {
            return Err(Error::value("an HpkeConfigList is empty (DAP-09: HpkeConfigList<1..2^16-1>)"));
        }
        for (i, c) in self.0.iter().enumerate() {
            if self.0[..i].iter().any(|d| d.id == c.id) {
                return Err(Error::value(format!(
                    "an HpkeConfigList repeats the config id {} (DAP-09: each config has its own id)",
                    c.id
                )));
            }
        }
        Ok(())
    }

    /// The most preferred config this crate can seal to ([`HpkeConfig::check`]), as DAP-09 has a client choose.
    pub fn first_supported(&self) -> Option<&HpkeConfig> {
        self.0.iter().find(|c| c.check().is_ok())
    }
}

/// An HPKE key pair: the [`HpkeConfig`] to publish and its private key (the aggregator's or collector's secret).
/// The private key is wiped when the pair is dropped; `Debug` hides it.
#[derive(Clone)]
pub struct HpkeKeypair {
    config: HpkeConfig,
    private_key: Vec<u8>,
}

impl HpkeKeypair {
    /// A fresh key pair of `suite` with config identifier `id`, from the OS generator (an [`Error::Value`] for an
    /// unsupported suite, [`Error::Internal`] if the generator fails).
    pub fn generate(id: u8, suite: HpkeSuite) -> Result<Self> {
        suite.check()?;
        let mut ikm = vec![0u8; suite.ikm_len().unwrap_or_default()];
        os_random(&mut ikm)?;
        let pair = Self::derive(id, suite, &ikm);
        crate::prio3::wipe(&mut ikm);
        pair
    }

    /// The key pair RFC 9180's `DeriveKeyPair(ikm)` gives ([`HpkeSuite::ikm_len`] bytes or more of key material):
    /// deterministic, for test vectors and keys derived from a secret of the caller's.
    pub fn derive(id: u8, suite: HpkeSuite, ikm: &[u8]) -> Result<Self> {
        suite.check()?;
        let (private_key, public_key) = dispatch_kem(suite.kem_id, DeriveKeypair(ikm))?;
        Ok(HpkeKeypair { config: HpkeConfig::new(id, suite, public_key), private_key })
    }

    /// The pair of `config` and its `private_key` (`SerializePrivateKey`'s bytes), checked: the suite must be
    /// supported and the private key's public key must be the config's (else an [`Error::Value`]).
    pub fn from_parts(config: HpkeConfig, private_key: &[u8]) -> Result<Self> {
        config.suite().check()?;
        let public_key = dispatch_kem(config.kem_id, PublicKeyOf(private_key))?;
        if public_key != config.public_key {
            return Err(Error::value(format!(
                "the private key is not the key of HPKE config {} (its public key differs from the config's)",
                config.id
            )));
        }
        Ok(HpkeKeypair { config, private_key: private_key.to_vec() })
    }

    /// The public half, to publish.
    pub fn config(&self) -> &HpkeConfig {
        &self.config
    }

    /// The private key's bytes: a secret.
    pub fn private_key(&self) -> &[u8] {
        &self.private_key
    }
}

impl Drop for HpkeKeypair {
    fn drop(&mut self) {
        crate::prio3::wipe(&mut self.private_key);
    }
}

/// The private key is a secret: `Debug` shows the config only.
impl fmt::Debug for HpkeKeypair {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HpkeKeypair").field("config", &self.config).finish_non_exhaustive()
    }
}

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

// -- the crate's types from the suite's identifiers ------------------------------------------------------------------

/// An operation over one KEM (the crate's KEM type picked by [`dispatch_kem`]).
trait KemOp {
    type Output;
    fn run<K: Kem>(self) -> Result<Self::Output>;
}

/// An operation over one suite (the crate's KEM, KDF and AEAD types picked by [`dispatch`]).
trait SuiteOp {
    type Output;
    fn run<K: Kem, F: Kdf, A: Aead>(self) -> Result<Self::Output>;
}

fn dispatch_kem<O: KemOp>(kem_id: u16, op: O) -> Result<O::Output> {
    match kem_id {
        KEM_X25519_HKDF_SHA256 => op.run::<X25519HkdfSha256>(),
        KEM_P256_HKDF_SHA256 => op.run::<DhP256HkdfSha256>(),
        KEM_P521_HKDF_SHA512 => op.run::<DhP521HkdfSha512>(),
        other => Err(Error::value(format!("HPKE KEM 0x{other:04x} is not supported"))),
    }
}

fn dispatch<O: SuiteOp>(suite: HpkeSuite, op: O) -> Result<O::Output> {
    suite.check()?;
    match suite.kem_id {
        KEM_X25519_HKDF_SHA256 => dispatch_kdf::<X25519HkdfSha256, O>(suite, op),
        KEM_P256_HKDF_SHA256 => dispatch_kdf::<DhP256HkdfSha256, O>(suite, op),
        KEM_P521_HKDF_SHA512 => dispatch_kdf::<DhP521HkdfSha512, O>(suite, op),
        _ => Err(Error::Internal("a checked suite's KEM has no type".into())),
    }
}

fn dispatch_kdf<K: Kem, O: SuiteOp>(suite: HpkeSuite, op: O) -> Result<O::Output> {
    match suite.kdf_id {
        KDF_HKDF_SHA256 => dispatch_aead::<K, HkdfSha256, O>(suite, op),
        KDF_HKDF_SHA512 => dispatch_aead::<K, HkdfSha512, O>(suite, op),
        _ => Err(Error::Internal("a checked suite's KDF has no type".into())),
    }
}

fn dispatch_aead<K: Kem, F: Kdf, O: SuiteOp>(suite: HpkeSuite, op: O) -> Result<O::Output> {
    match suite.aead_id {
        AEAD_AES_128_GCM => op.run::<K, F, AesGcm128>(),
        AEAD_AES_256_GCM => op.run::<K, F, AesGcm256>(),
        AEAD_CHACHA20_POLY1305 => op.run::<K, F, ChaCha20Poly1305>(),
        _ => Err(Error::Internal("a checked suite's AEAD has no type".into())),
    }
}

fn public_key<K: Kem>(bytes: &[u8]) -> Result<K::PublicKey> {
    K::PublicKey::from_bytes(bytes).map_err(|e| {
        Error::value(format!(
            "the public key ({} bytes) is no valid {} key ({e})",
            bytes.len(),
            kem_name(K::KEM_ID).unwrap_or("KEM")
        ))
    })
}

fn private_key<K: Kem>(bytes: &[u8]) -> Result<K::PrivateKey> {
    K::PrivateKey::from_bytes(bytes).map_err(|e| {
        Error::value(format!(
            "the private key ({} bytes) is no valid {} key ({e})",
            bytes.len(),
            kem_name(K::KEM_ID).unwrap_or("KEM")
        ))
    })
}

struct CheckPublicKey<'a>(&'a [u8]);

impl KemOp for CheckPublicKey<'_> {
    type Output = ();
    fn run<K: Kem>(self) -> Result<()> {
        public_key::<K>(self.0).map(|_| ())
    }
}

struct PublicKeyOf<'a>(&'a [u8]);

impl KemOp for PublicKeyOf<'_> {
    type Output = Vec<u8>;
    fn run<K: Kem>(self) -> Result<Vec<u8>> {
        Ok(K::sk_to_pk(&private_key::<K>(self.0)?).to_bytes().to_vec())
    }
}

struct DeriveKeypair<'a>(&'a [u8]);

impl KemOp for DeriveKeypair<'_> {
    type Output = (Vec<u8>, Vec<u8>);
    fn run<K: Kem>(self) -> Result<(Vec<u8>, Vec<u8>)> {
        let want = <K::PrivateKey as Serializable>::size();
        if self.0.len() < want {
            return Err(Error::value(format!(
                "the key material of {} is at least {want} bytes, got {}",
                kem_name(K::KEM_ID).unwrap_or("the KEM"),
                self.0.len()
            )));
        }
        let (sk, pk) = K::derive_keypair(self.0);
        Ok((sk.to_bytes().to_vec(), pk.to_bytes().to_vec()))
    }
}

struct Seal<'a> {
    public_key: &'a [u8],
    info: &'a [u8],
    aad: &'a [u8],
    plaintext: &'a [u8],
    ikm_e: &'a [u8],
}

impl SuiteOp for Seal<'_> {
    type Output = (Vec<u8>, Vec<u8>);
    fn run<K: Kem, F: Kdf, A: Aead>(self) -> Result<(Vec<u8>, Vec<u8>)> {
        let pk = public_key::<K>(self.public_key)?;
        // The crate derives the ephemeral key pair from `Nsk` bytes it draws from the generator it is given
        // (`Kem::gen_keypair_with_rng`, RFC 9180's DeriveKeyPair): a generator that yields exactly `ikmE`.
        let mut rng = FixedBytes { bytes: self.ikm_e, overdrawn: false };
        let sealed = hpke::single_shot_seal_with_rng::<A, F, K>(
            &OpModeS::Base,
            &pk,
            self.info,
            self.plaintext,
            self.aad,
            &mut rng,
        );
        if rng.overdrawn || !rng.bytes.is_empty() {
            return Err(Error::Internal("the HPKE crate drew other than the ephemeral key material".into()));
        }
        let (enc, payload) = sealed.map_err(|e| Error::value(format!("HPKE sealing failed ({e})")))?;
        Ok((enc.to_bytes().to_vec(), payload))
    }
}

struct Open<'a> {
    private_key: &'a [u8],
    enc: &'a [u8],
    info: &'a [u8],
    aad: &'a [u8],
    payload: &'a [u8],
}

impl SuiteOp for Open<'_> {
    type Output = Vec<u8>;
    fn run<K: Kem, F: Kdf, A: Aead>(self) -> Result<Vec<u8>> {
        let sk = private_key::<K>(self.private_key)?;
        let enc = K::EncappedKey::from_bytes(self.enc).map_err(|e| {
            Error::value(format!("the ciphertext's encapsulated key ({} bytes) is not valid ({e})", self.enc.len()))
        })?;
        hpke::single_shot_open::<A, F, K>(&OpModeR::Base, &sk, &enc, self.info, self.payload, self.aad).map_err(|e| {
            Error::value(format!(
                "the ciphertext does not open ({e}): sealed to another key, or its info, aad or bytes differ"
            ))
        })
    }
}

/// A "generator" that yields given bytes once: the HPKE crate's only way to take the ephemeral key material. Asked
/// for more than it holds, it yields zeros and says so (`overdrawn`): the seal is then discarded.
struct FixedBytes<'a> {
    bytes: &'a [u8],
    overdrawn: bool,
}

impl TryRng for FixedBytes<'_> {
    type Error = Infallible;

    fn try_next_u32(&mut self) -> std::result::Result<u32, Infallible> {
        let mut b = [0u8; 4];
        self.try_fill_bytes(&mut b)?;
        Ok(u32::from_le_bytes(b))
    }

    fn try_next_u64(&mut self) -> std::result::Result<u64, Infallible> {
        let mut b = [0u8; 8];
        self.try_fill_bytes(&mut b)?;
        Ok(u64::from_le_bytes(b))
    }

    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> std::result::Result<(), Infallible> {
        if dst.len() > self.bytes.len() {
            self.overdrawn = true;
            dst.fill(0);
            return Ok(());
        }
        let (head, rest) = self.bytes.split_at(dst.len());
        dst.copy_from_slice(head);
        self.bytes = rest;
        Ok(())
    }
}

impl TryCryptoRng for FixedBytes<'_> {}

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
