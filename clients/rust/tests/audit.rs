//! The exact privacy audit of every encoder: each audit configuration of the vectors (small enough to enumerate
//! every outcome of every draw) runs through the encoder's real code with an enumerating source; the worst
//! likelihood ratio over the outputs must equal the ε the Python audit attains (`audits[].epsilon`) and never
//! exceed the claimed cost.

mod common;

use common::load;
use ldp_client::audit::audit;
use ldp_client::random::RandomSource;
use ldp_client::{json, protocols, EncoderOptions};

#[test]
fn every_encoder_audits_exactly() {
    for name in protocols::names() {
        let protocol = protocols::get(name).unwrap();
        let doc = load(name);
        let audits = doc["audits"].as_array().unwrap();
        assert!(!audits.is_empty(), "{name}: no audit configuration");
        for item in audits {
            let params = protocol.params(&item["params"]).unwrap();
            let inputs = item["inputs"].as_array().unwrap();
            let result = audit(inputs, 1 << 20, |x, src| {
                let options = if protocol.needs_secret || protocol.assigned_cohorts(params.as_ref()) > 0 {
                    EncoderOptions {
                        rng: Some(Box::new(src.clone())),
                        secret: Some(b"audit".to_vec()),
                        prr_rng: Some(Box::new(src)),
                        cohort: (protocol.assigned_cohorts(params.as_ref()) > 0).then_some(0),
                    }
                } else {
                    EncoderOptions { rng: Some(Box::new(src)), ..Default::default() }
                };
                Ok(protocol.encoder(params.clone(), options)?.encode(x)?.to_json())
            })
            .unwrap_or_else(|e| panic!("{name} {}: {e}", item["params"]));
            let want = item["epsilon"].as_f64().unwrap();
            assert!(
                result.matches(want),
                "{name} {}: audited {}, Python's audit {want}",
                item["params"],
                result.epsilon
            );
            assert!(result.epsilon <= params.privacy_cost().epsilon * (1.0 + 1e-9), "{name}: above the claimed cost");
            assert!(result.outputs >= 2, "{name}: one output");
        }
    }
}

#[test]
fn the_audit_can_fail() {
    let grr = protocols::get("grr").unwrap();
    let params = grr.params(&json!({"epsilon": 1.0, "domain_size": 3})).unwrap();
    let inputs = [json!(0), json!(1), json!(2)];
    // a GRR that leaks its value has infinite ε
    let leaky = audit(&inputs, 1000, |x, mut src| {
        src.randbelow(2)?;
        Ok(format!("index={x}"))
    })
    .unwrap();
    assert_eq!(leaky.epsilon, f64::INFINITY);
    let honest = audit(&inputs, 1000, |x, src| {
        let options = EncoderOptions { rng: Some(Box::new(src)), ..Default::default() };
        Ok(grr.encoder(params.clone(), options)?.encode(x)?.to_json())
    })
    .unwrap();
    assert!(honest.matches(params.privacy_cost().epsilon));
    // a GRR keeping its value a little more often than it claims is caught
    let p = 1.0 / (1.0 + 2.0 * (-1.0f64).exp());
    let greedy = audit(&inputs, 1000, |x, mut src| {
        let x = x.as_u64().unwrap();
        let keep = src.bernoulli(p + 0.01)?;
        Ok(format!("index={}", if keep { x } else { (x + 1 + src.randbelow(2)?) % 3 }))
    })
    .unwrap();
    assert!(greedy.epsilon > params.privacy_cost().epsilon * 1.01);
}
