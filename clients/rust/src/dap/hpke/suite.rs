//! An HPKE ciphersuite ([`HpkeSuite`]) and the identifiers of RFC 9180's registries this crate seals with.

use std::fmt;

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
    /// DHKEM(X25519, HKDF-SHA256), HKDF-SHA256, AES-128-GCM: what
    /// [`HpkeKeypair::generate`](super::HpkeKeypair::generate) uses by default and what DAP deployments commonly
    /// configure.
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
    /// what [`seal_with_ikm`](super::seal_with_ikm) and [`HpkeKeypair::derive`](super::HpkeKeypair::derive) take.
    /// `None` for an unsupported KEM.
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

pub(super) fn kem_name(id: u16) -> Option<&'static str> {
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
