//! An aggregator's [`HpkeConfig`] (its key and suite, as DAP-09 encodes it) and DAP-09's [`HpkeConfigList`].

use std::fmt;

use super::dispatch::{dispatch_kem, CheckPublicKey};
use super::HpkeSuite;
use crate::dap::codec::{Reader, Writer};
use crate::error::{Error, Result};

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
