//! The crate's types from the suite's identifiers: an operation ([`KemOp`], [`SuiteOp`]) is run with the `hpke`
//! crate's KEM, KDF and AEAD types that a suite's identifiers name.

use hpke::aead::{Aead, AesGcm128, AesGcm256, ChaCha20Poly1305};
use hpke::kdf::{HkdfSha256, HkdfSha512, Kdf};
use hpke::kem::{DhP256HkdfSha256, DhP521HkdfSha512, X25519HkdfSha256};
use hpke::rand_core::{Infallible, TryCryptoRng, TryRng};
use hpke::{Deserializable, Kem, OpModeR, OpModeS, Serializable};

use super::suite::{
    kem_name, HpkeSuite, AEAD_AES_128_GCM, AEAD_AES_256_GCM, AEAD_CHACHA20_POLY1305, KDF_HKDF_SHA256, KDF_HKDF_SHA512,
    KEM_P256_HKDF_SHA256, KEM_P521_HKDF_SHA512, KEM_X25519_HKDF_SHA256,
};
use crate::error::{Error, Result};

/// An operation over one KEM (the crate's KEM type picked by [`dispatch_kem`]).
pub(super) trait KemOp {
    type Output;
    fn run<K: Kem>(self) -> Result<Self::Output>;
}

/// An operation over one suite (the crate's KEM, KDF and AEAD types picked by [`dispatch`]).
pub(super) trait SuiteOp {
    type Output;
    fn run<K: Kem, F: Kdf, A: Aead>(self) -> Result<Self::Output>;
}

pub(super) fn dispatch_kem<O: KemOp>(kem_id: u16, op: O) -> Result<O::Output> {
    match kem_id {
        KEM_X25519_HKDF_SHA256 => op.run::<X25519HkdfSha256>(),
        KEM_P256_HKDF_SHA256 => op.run::<DhP256HkdfSha256>(),
        KEM_P521_HKDF_SHA512 => op.run::<DhP521HkdfSha512>(),
        other => Err(Error::value(format!("HPKE KEM 0x{other:04x} is not supported"))),
    }
}

pub(super) fn dispatch<O: SuiteOp>(suite: HpkeSuite, op: O) -> Result<O::Output> {
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

pub(super) struct CheckPublicKey<'a>(pub(super) &'a [u8]);

impl KemOp for CheckPublicKey<'_> {
    type Output = ();
    fn run<K: Kem>(self) -> Result<()> {
        public_key::<K>(self.0).map(|_| ())
    }
}

pub(super) struct PublicKeyOf<'a>(pub(super) &'a [u8]);

impl KemOp for PublicKeyOf<'_> {
    type Output = Vec<u8>;
    fn run<K: Kem>(self) -> Result<Vec<u8>> {
        Ok(K::sk_to_pk(&private_key::<K>(self.0)?).to_bytes().to_vec())
    }
}

pub(super) struct DeriveKeypair<'a>(pub(super) &'a [u8]);

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

pub(super) struct Seal<'a> {
    pub(super) public_key: &'a [u8],
    pub(super) info: &'a [u8],
    pub(super) aad: &'a [u8],
    pub(super) plaintext: &'a [u8],
    pub(super) ikm_e: &'a [u8],
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

pub(super) struct Open<'a> {
    pub(super) private_key: &'a [u8],
    pub(super) enc: &'a [u8],
    pub(super) info: &'a [u8],
    pub(super) aad: &'a [u8],
    pub(super) payload: &'a [u8],
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
