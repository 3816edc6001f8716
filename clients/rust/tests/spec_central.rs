//! The spec's server-side central target (`release.central`): accepted, and refused with their paths and texts.

use ldp_client::{CollectionSpec, Error};

const OK: &str = r#"{"spec_version": 1, "name": "app", "budget": {"per_window": 4, "lifetime": 40},
  "release": {"central": {"epsilon": 2.5, "delta": 1e-9, "windows": 365}},
  "metrics": {"m": {"protocol": "grr", "params": {"epsilon": 1, "domain_size": 3}, "budget": {"per_report": 1},
                    "release": {"min_z": 2, "central": {"epsilon": 1, "delta": 0.5}}}}}"#;

const BAD: &str = r#"{"spec_version": 1, "name": "app", "budget": {"per_window": 4, "lifetime": 40},
  "release": {"central": {"epsilon": 0, "delta": 1, "windows": 0, "x": 1}},
  "metrics": {"m": {"protocol": "grr", "params": {"epsilon": 1, "domain_size": 3}, "budget": {"per_report": 1},
                    "release": {"central": {"epsilon": "1", "windows": 1000001}}}}}"#;

#[test]
fn a_valid_central_target_is_accepted_and_moves_no_fingerprint() {
    assert_eq!(CollectionSpec::parse(OK).unwrap().fingerprint(), "1e330e9e1ad92b95");
}

#[test]
fn bad_central_targets_are_refused_with_their_paths() {
    let Err(Error::Spec { errors, .. }) = CollectionSpec::parse(BAD) else { panic!("accepted") };
    assert_eq!(
        errors,
        vec![
            "release.central.x: unknown key (expected one of delta, epsilon, windows)",
            "release.central.epsilon: must be > 0, got 0",
            "release.central.delta: must be in (0, 1), got 1",
            "release.central.windows: must be >= 1, got 0",
            "metrics.m.release.central.delta: required",
            "metrics.m.release.central.epsilon: must be a finite number > 0, got a string",
            "metrics.m.release.central.windows: must be <= 1000000 (a horizon the accountant composes), got 1000001",
        ]
    );
}
