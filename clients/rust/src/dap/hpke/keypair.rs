//! An HPKE key pair ([`HpkeKeypair`]): the config an aggregator or collector publishes and its private key.

use std::fmt;

use super::dispatch::{dispatch_kem, DeriveKeypair, PublicKeyOf};
use super::{os_random, HpkeConfig, HpkeSuite};
use crate::error::{Error, Result};

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
