//! `primitives.json`: the laws below every protocol (draws, the keyed stream, hashes, number and text forms).

mod common;

use common::{has_lone, load};
use ldp_client::bytes::{from_hex, hex, md5, metric_secret, murmur3};
use ldp_client::pytext::{canonical_json, float_repr};
use ldp_client::random::{threshold, KeyedRandomSource, RandomSource, ReplaySource};
use ldp_client::Value;
use num_bigint::BigUint;

fn doc() -> Value {
    load("primitives")
}

fn replay(item: &Value) -> ReplaySource {
    let draws: Vec<(u32, String)> = item["draws"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| (d[0].as_u64().unwrap() as u32, d[1].as_str().unwrap().to_string()))
        .collect();
    ReplaySource::new(&draws).unwrap()
}

fn mask_hex(ones: &[usize]) -> String {
    let mut big = BigUint::default();
    for &i in ones {
        big.set_bit(i as u64, true);
    }
    big.to_str_radix(16)
}

#[test]
fn float_repr_of_400_doubles() {
    for f in doc()["floats"].as_array().unwrap() {
        let bits = u64::from_str_radix(f["bits"].as_str().unwrap(), 16).unwrap();
        assert_eq!(f["repr"].as_str().unwrap(), float_repr(f64::from_bits(bits)), "{bits:016x}");
    }
}

#[test]
fn canonical_json_of_values() {
    for t in doc()["texts"]["canonical_json"].as_array().unwrap() {
        if has_lone(&t["value"]) {
            continue;
        }
        assert_eq!(t["canonical"].as_str().unwrap(), canonical_json(&t["value"]).unwrap());
    }
}

#[test]
fn thresholds() {
    for t in doc()["draws"]["thresholds"].as_array().unwrap() {
        let p = t["p"].as_f64().unwrap();
        let got = match threshold(p).unwrap() {
            None => BigUint::from(1u8) << 64usize,
            Some(v) => BigUint::from(v),
        };
        assert_eq!(t["threshold"].as_str().unwrap(), got.to_str_radix(16), "p={p}");
    }
}

#[test]
fn bernoulli() {
    for t in doc()["draws"]["bernoulli"].as_array().unwrap() {
        let mut rng = replay(t);
        assert_eq!(t["result"].as_bool().unwrap(), rng.bernoulli(t["p"].as_f64().unwrap()).unwrap(), "p={}", t["p"]);
        assert_eq!(rng.remaining(), 0);
    }
}

#[test]
fn bernoulli_bits() {
    for t in doc()["draws"]["bernoulli_bits"].as_array().unwrap() {
        let mut rng = replay(t);
        let k = t["k"].as_u64().unwrap() as usize;
        let mask = rng.bernoulli_bits(t["p"].as_f64().unwrap(), k).unwrap();
        assert_eq!(t["result"].as_str().unwrap(), mask_hex(&mask.ones()), "p={} k={k}", t["p"]);
        assert_eq!(rng.remaining(), 0);
    }
}

#[test]
fn randbelow() {
    for t in doc()["draws"]["randbelow"].as_array().unwrap() {
        let mut rng = replay(t);
        assert_eq!(t["result"].as_u64().unwrap(), rng.randbelow(t["n"].as_u64().unwrap()).unwrap(), "n={}", t["n"]);
        assert_eq!(rng.remaining(), 0);
    }
}

#[test]
fn token_bytes() {
    for t in doc()["draws"]["token_bytes"].as_array().unwrap() {
        let mut rng = replay(t);
        assert_eq!(t["result"].as_str().unwrap(), hex(&rng.token_bytes(t["n"].as_u64().unwrap() as usize).unwrap()));
        assert_eq!(rng.remaining(), 0);
    }
}

#[test]
fn keyed_stream() {
    for t in doc()["keyed"].as_array().unwrap() {
        let key = from_hex(t["key"].as_str().unwrap()).unwrap();
        let mut src = KeyedRandomSource::new(&key, &from_hex(t["message"].as_str().unwrap()).unwrap()).unwrap();
        for call in t.get("randbits").and_then(Value::as_array).into_iter().flatten() {
            let k = call[0].as_u64().unwrap() as u32;
            let mut words = vec![0u64; k.div_ceil(64) as usize];
            src.wide_bits(k, &mut words).unwrap();
            let digits: Vec<u32> = words.iter().flat_map(|w| [*w as u32, (*w >> 32) as u32]).collect();
            assert_eq!(call[1].as_str().unwrap(), BigUint::from_slice(&digits).to_str_radix(16), "randbits({k})");
        }
        for call in t.get("bernoulli_bits").and_then(Value::as_array).into_iter().flatten() {
            let mask = src.bernoulli_bits(call[0].as_f64().unwrap(), call[1].as_u64().unwrap() as usize).unwrap();
            assert_eq!(call[2].as_str().unwrap(), mask_hex(&mask.ones()));
        }
    }
}

#[test]
fn murmur3_hashes() {
    for t in doc()["hashes"]["murmur3_x86_32"].as_array().unwrap() {
        let data = from_hex(t["data"].as_str().unwrap()).unwrap();
        assert_eq!(t["hash32"].as_u64().unwrap(), murmur3(&data, t["seed"].as_u64().unwrap() as u32) as u64);
    }
}

#[test]
fn md5_buckets() {
    for t in doc()["hashes"]["md5_buckets"].as_array().unwrap() {
        let digest = md5(&from_hex(t["data"].as_str().unwrap()).unwrap());
        let k = t["k"].as_u64().unwrap();
        let got: Vec<u64> = (0..t["h"].as_u64().unwrap() as usize).map(|i| digest[i] as u64 % k).collect();
        let want: Vec<u64> = t["buckets"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).collect();
        assert_eq!(want, got);
    }
}

#[test]
fn value_bytes_and_metric_secrets() {
    for t in doc()["hashes"]["value_bytes"].as_array().unwrap() {
        if let Some(s) = t["value"].as_str() {
            if !has_lone(&t["value"]) {
                assert_eq!(t["bytes"].as_str().unwrap(), hex(s.as_bytes()));
            }
        }
    }
    for t in doc()["hashes"]["metric_secret"].as_array().unwrap() {
        let dev = from_hex(t["device_secret"].as_str().unwrap()).unwrap();
        assert_eq!(t["secret"].as_str().unwrap(), hex(&metric_secret(&dev, t["metric"].as_str().unwrap()).unwrap()));
    }
}
