//! The test vectors a prio release ships (`src/vdaf/test_vec/<draft>/` of the prio package), read from its source
//! as cargo downloaded it: found with `cargo metadata` for the target the tests were built for (with the feature
//! `prio`; first `--offline`, since what the build downloaded is enough, then letting cargo reach the registry), or
//! taken from an environment variable. Nothing of them is copied into this repository.
//!
//! Only `std` and `serde_json`: `tests/common/prio3.rs` uses it for draft 18 (prio 0.18.1), and the draft 08 unit
//! tests inside the crate (`src/prio3/draft08/tests.rs`, through `#[path]`) for prio 0.16.8.

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use serde_json::Value;

/// `cargo metadata` of this package, once per test process.
fn metadata() -> &'static Value {
    static META: OnceLock<Value> = OnceLock::new();
    META.get_or_init(|| {
        let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml");
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let mut tried = Vec::new();
        for offline in [true, false] {
            let mut cmd = Command::new(&cargo);
            cmd.args(["metadata", "--format-version", "1", "--locked", "--features", "prio", "--filter-platform"])
                .arg(env!("LDP_TARGET"))
                .arg("--manifest-path")
                .arg(&manifest);
            if offline {
                cmd.arg("--offline");
            }
            let out = cmd.output().unwrap_or_else(|e| panic!("cannot run {cargo:?} metadata: {e}"));
            if out.status.success() {
                return serde_json::from_slice(&out.stdout).expect("cargo metadata prints JSON");
            }
            tried.push(format!("{cmd:?}: {}", String::from_utf8_lossy(&out.stderr)));
        }
        panic!("cargo metadata failed (set the vectors' variable to their folder instead):\n{}", tried.join("\n"));
    })
}

/// The folder of draft `draft`'s test vectors in the source of prio `version`, or `$var` when set.
pub fn vectors_dir(version: &str, draft: &str, var: &str) -> PathBuf {
    if let Some(dir) = std::env::var_os(var) {
        return PathBuf::from(dir);
    }
    let prio = metadata()["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .find(|p| p["name"] == "prio" && p["version"] == version)
        .unwrap_or_else(|| panic!("prio {version} is not a package of this crate's graph"));
    let manifest = PathBuf::from(prio["manifest_path"].as_str().expect("manifest_path"));
    let dir = manifest.parent().unwrap().join("src/vdaf/test_vec").join(draft);
    assert!(
        dir.is_dir(),
        "{} is not a folder: prio {version} ships no draft {draft} vectors? (or set {var})",
        dir.display()
    );
    dir
}
