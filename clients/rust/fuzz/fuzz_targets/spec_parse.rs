//! Spec parsing: any bytes, as text, must parse to a spec or a spec error, never panic; a spec that parses
//! re-parses from its canonical form to the same fingerprint.
#![no_main]

use ldp_client::CollectionSpec;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(spec) = CollectionSpec::parse(text) {
        let again = CollectionSpec::parse(&spec.canonical()).expect("a spec's canonical form parses");
        assert_eq!(spec.fingerprint(), again.fingerprint());
    }
});
