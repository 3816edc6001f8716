//! HPKE interoperability (feature `prio`): RFC 9180's published test vectors (Appendix A, base mode, every suite the
//! client seals with: `tests/data/rfc9180_base.json`, copied from the RFC's source by `tests/data/rfc9180_extract.py`)
//! through `ldp_client::dap`'s HPKE calls, byte for byte: the recipient's and the ephemeral key pairs derived from
//! `ikmR` and `ikmE`, a seal with the vector's ephemeral key material giving its `enc` and its first ciphertext, and
//! that ciphertext opened with `skRm`.

#![cfg(feature = "prio")]

use ldp_client::dap::{open, seal, seal_with_ikm, HpkeCiphertext, HpkeConfig, HpkeKeypair, HpkeSuite};
use ldp_client::Value;

fn unhex(s: &str) -> Vec<u8> {
    assert!(s.len().is_multiple_of(2), "odd hex {s}");
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

fn vectors() -> Vec<Value> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/rfc9180_base.json");
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    assert!(doc["source"].as_str().unwrap().contains("RFC 9180"));
    doc["vectors"].as_array().unwrap().clone()
}

fn suite(v: &Value) -> HpkeSuite {
    let id = |k: &str| u16::try_from(v[k].as_u64().unwrap()).unwrap();
    HpkeSuite { kem_id: id("kem_id"), kdf_id: id("kdf_id"), aead_id: id("aead_id") }
}

/// `skRm` as `SerializePrivateKey` gives it: RFC 9180 §7.1.2 has an X25519 private key clamped on serialization
/// (RFC 7748 §5), and the appendix lists the unclamped bytes; the same key either way.
fn serialized_private_key(suite: HpkeSuite, mut sk: Vec<u8>) -> Vec<u8> {
    if suite.kem_id == 0x0020 {
        sk[0] &= 248;
        sk[31] &= 127;
        sk[31] |= 64;
    }
    sk
}

#[test]
fn every_base_mode_vector_seals_and_opens_byte_for_byte() {
    let vectors = vectors();
    let mut suites: Vec<HpkeSuite> = Vec::new();
    for v in &vectors {
        let name = v["suite"].as_str().unwrap();
        let h = |k: &str| unhex(v[k].as_str().unwrap());
        assert_eq!(v["mode"], 0, "{name}: base mode only");
        let suite = suite(v);
        assert!(suite.is_supported(), "{name}");
        suites.push(suite);
        // DeriveKeyPair(ikmR) and DeriveKeyPair(ikmE).
        let recipient = HpkeKeypair::derive(3, suite, &h("ikmR")).unwrap();
        assert_eq!(recipient.config().public_key, h("pkRm"), "{name}: pkRm");
        assert_eq!(recipient.private_key(), serialized_private_key(suite, h("skRm")), "{name}: skRm");
        let ephemeral = HpkeKeypair::derive(0, suite, &h("ikmE")).unwrap();
        assert_eq!(ephemeral.config().public_key, h("pkEm"), "{name}: pkEm");
        // The key pair from its published parts.
        let config = HpkeConfig::new(3, suite, h("pkRm"));
        config.check().unwrap();
        let keypair = HpkeKeypair::from_parts(config.clone(), &h("skRm")).unwrap();
        // Sequence number 0 is the single-shot seal's encryption.
        let first = &v["encryptions"][0];
        assert_eq!(first["sequence_number"], 0, "{name}");
        let e = |k: &str| unhex(first[k].as_str().unwrap());
        let sealed = seal_with_ikm(&config, &h("info"), &e("aad"), &e("pt"), &h("ikmE")).unwrap();
        assert_eq!(sealed.enc, h("enc"), "{name}: enc");
        assert_eq!(sealed.payload, e("ct"), "{name}: ct");
        assert_eq!(sealed.config_id, 3);
        let published = HpkeCiphertext { config_id: 3, enc: h("enc"), payload: e("ct") };
        assert_eq!(open(&keypair, &h("info"), &e("aad"), &published).unwrap(), e("pt"), "{name}: open");
        // The same ciphertext with the aad of another encryption, or another info, does not open.
        let other_aad = unhex(v["encryptions"][1]["aad"].as_str().unwrap());
        assert!(open(&keypair, &h("info"), &other_aad, &published).is_err(), "{name}");
        assert!(open(&keypair, b"another info", &e("aad"), &published).is_err(), "{name}");
        // A fresh seal (OS randomness) opens too, and differs from the vector's.
        let fresh = seal(&config, &h("info"), &e("aad"), &e("pt")).unwrap();
        assert_ne!(fresh.enc, sealed.enc, "{name}");
        assert_eq!(open(&keypair, &h("info"), &e("aad"), &fresh).unwrap(), e("pt"), "{name}");
        // The ephemeral key material must be exactly the KEM's Nsk.
        let mut long = h("ikmE");
        long.push(0);
        assert!(seal_with_ikm(&config, &h("info"), &e("aad"), &e("pt"), &long).is_err(), "{name}");
    }
    // Every KEM, KDF and AEAD the client supports is in at least one vector.
    for (what, ids, got) in [
        ("KEM", vec![0x0020, 0x0010, 0x0012], suites.iter().map(|s| s.kem_id).collect::<Vec<_>>()),
        ("KDF", vec![0x0001, 0x0003], suites.iter().map(|s| s.kdf_id).collect()),
        ("AEAD", vec![0x0001, 0x0002, 0x0003], suites.iter().map(|s| s.aead_id).collect()),
    ] {
        for id in ids {
            assert!(got.contains(&id), "no vector of {what} 0x{id:04x}");
        }
    }
    assert_eq!(vectors.len(), 6);
}
