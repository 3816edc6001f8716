//! The C and C++ packaging: `packaging/install.sh` installs the libraries this `cargo test` built (the shared one
//! with its versioned SONAME), the header, `ldp_client.pc` and the CMake package under a prefix; a tiny program
//! (`tests/c/consumer/`) is then built against that prefix through `pkg-config` and through CMake's
//! `find_package(LdpClient)` (shared and static), and runs WITHOUT `LD_LIBRARY_PATH`.
//!
//! With `LDP_INSTALLED_PREFIX` set, the test checks that prefix instead of installing (CI installs the release build
//! with `install.sh` itself). Without `cmake`, `pkg-config` or `readelf` the checks that need them are skipped with
//! a note, unless `LDP_REQUIRE_PACKAGING` is set (CI sets it).

#![cfg(target_os = "linux")]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::cc::{self, run};

fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Whether `tool` runs; if not, a note that its checks are skipped (or a failure under `LDP_REQUIRE_PACKAGING`).
fn have(tool: &str) -> bool {
    let ok = cc::runs(tool);
    if !ok {
        assert!(
            std::env::var_os("LDP_REQUIRE_PACKAGING").is_none(),
            "{tool} is missing and LDP_REQUIRE_PACKAGING is set"
        );
        eprintln!("skipped: no {tool}");
    }
    ok
}

/// Runs a consumer program with no `LD_LIBRARY_PATH` (nor `LD_PRELOAD`): it must find the library by itself.
fn run_consumer(exe: &Path) {
    let stdout = run(Command::new(exe).env_remove("LD_LIBRARY_PATH").env_remove("LD_PRELOAD"), "the consumer");
    assert_eq!(stdout.trim(), format!("consumer ok {}", env!("CARGO_PKG_VERSION")));
}

/// The `readelf -d` lines of a file.
fn dynamic(file: &Path) -> String {
    run(Command::new("readelf").arg("-d").arg(file), "readelf -d")
}

#[test]
fn installed_library_builds_and_runs_a_consumer_through_pkg_config_and_cmake() {
    let work = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("ldp-install-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).unwrap();
    let prefix = match std::env::var_os("LDP_INSTALLED_PREFIX") {
        Some(p) => PathBuf::from(p),
        None => {
            let prefix = work.join("prefix");
            run(
                Command::new("sh")
                    .arg(manifest_dir().join("packaging/install.sh"))
                    .args(["--no-build", "--from"])
                    .arg(cc::deps_dir())
                    .arg("--prefix")
                    .arg(&prefix),
                "install.sh",
            );
            prefix
        }
    };
    let lib = prefix.join("lib");
    let version = env!("CARGO_PKG_VERSION");
    for f in [
        "include/ldp_client.h".to_string(),
        format!("lib/libldp_client.so.{version}"),
        "lib/libldp_client.so.0".into(),
        "lib/libldp_client.so".into(),
        "lib/libldp_client.a".into(),
        "lib/pkgconfig/ldp_client.pc".into(),
        "lib/cmake/LdpClient/LdpClientConfig.cmake".into(),
        "lib/cmake/LdpClient/LdpClientConfigVersion.cmake".into(),
    ] {
        assert!(prefix.join(&f).exists(), "{f} is not installed");
    }
    assert_eq!(
        std::fs::read_link(lib.join("libldp_client.so.0")).unwrap(),
        PathBuf::from(format!("libldp_client.so.{version}"))
    );
    assert_eq!(std::fs::read_link(lib.join("libldp_client.so")).unwrap(), PathBuf::from("libldp_client.so.0"));
    let readelf = have("readelf");
    if readelf {
        let d = dynamic(&lib.join(format!("libldp_client.so.{version}")));
        assert!(d.contains("Library soname: [libldp_client.so.0]"), "no versioned SONAME:\n{d}");
    }
    let consumer = manifest_dir().join("tests/c/consumer");

    if have("pkg-config") {
        let flags = run(
            Command::new("pkg-config")
                .args(["--cflags", "--libs", "ldp_client"])
                .env("PKG_CONFIG_PATH", lib.join("pkgconfig")),
            "pkg-config",
        );
        assert!(flags.contains("-Wl,-rpath,"), "the .pc file sets no rpath: {flags}");
        let exe = work.join("consumer-pkg-config");
        run(
            Command::new(cc::compiler())
                .args(["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic"])
                .arg(consumer.join("consumer.c"))
                .args(flags.split_whitespace())
                .arg("-o")
                .arg(&exe),
            "cc with pkg-config's flags",
        );
        if readelf {
            let d = dynamic(&exe);
            assert!(d.contains("Shared library: [libldp_client.so.0]"), "the program does not name the SONAME:\n{d}");
        }
        run_consumer(&exe);
    }

    if have("cmake") {
        let build = work.join("cmake-build");
        run(
            Command::new("cmake")
                .arg("-S")
                .arg(&consumer)
                .arg("-B")
                .arg(&build)
                .arg(format!("-DCMAKE_PREFIX_PATH={}", prefix.display()))
                .arg("-DCMAKE_BUILD_TYPE=Release"),
            "cmake (configure)",
        );
        run(Command::new("cmake").arg("--build").arg(&build), "cmake --build");
        run_consumer(&build.join("consumer"));
        run_consumer(&build.join("consumer_static"));
        if readelf {
            let d = dynamic(&build.join("consumer_static"));
            assert!(!d.contains("libldp_client"), "the static consumer loads the shared library:\n{d}");
        }
    }
    let _ = std::fs::remove_dir_all(&work);
}
