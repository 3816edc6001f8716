//! The C and C++ packaging: `packaging/install.sh` installs the libraries this `cargo test` built (the shared one
//! with its versioned SONAME), the header, `ldp_client.pc` (the shared library), `ldp_client-static.pc` (the static
//! one) and the CMake package under a prefix; a tiny program (`tests/c/consumer/`) is then built against that prefix,
//! shared and static, through `pkg-config` (with and without `--static`) and through CMake (`find_package(LdpClient)`
//! and `pkg_check_modules`). Each shared program needs `libldp_client.so.0` and finds the prefix's (`readelf -d`,
//! `ldd`); no static one needs any `libldp_client`; each runs WITHOUT `LD_LIBRARY_PATH`.
//!
//! With `LDP_INSTALLED_PREFIX` set, the test checks that prefix instead of installing (CI installs the release build
//! with `install.sh` itself). Without `cmake`, `pkg-config`, `readelf` or `ldd` the checks that need them are skipped
//! with a note, unless `LDP_REQUIRE_PACKAGING` is set (CI sets it).

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

/// The shared libraries a program needs (`readelf -d`'s NEEDED entries).
fn needed(exe: &Path) -> Vec<String> {
    dynamic(exe)
        .lines()
        .filter(|l| l.contains("(NEEDED)"))
        .filter_map(|l| Some(l.split_once('[')?.1.split_once(']')?.0.to_string()))
        .collect()
}

/// What `ldd` resolves for a program, without `LD_LIBRARY_PATH`.
fn ldd(exe: &Path) -> String {
    run(Command::new("ldd").arg(exe).env_remove("LD_LIBRARY_PATH").env_remove("LD_PRELOAD"), "ldd")
}

/// The tools the checks of a consumer's linking use.
struct Tools {
    readelf: bool,
    ldd: bool,
}

/// A consumer linked with the shared library: it needs the SONAME, finds it in the prefix's `lib` by its run path
/// (`ldd`), and runs.
fn check_shared(exe: &Path, lib: &Path, tools: &Tools, how: &str) {
    if tools.readelf {
        let needed = needed(exe);
        assert!(
            needed.iter().any(|n| n == "libldp_client.so.0"),
            "{how}: the program does not name the SONAME: {needed:?}"
        );
    }
    if tools.ldd {
        let resolved = ldd(exe);
        let want = format!("libldp_client.so.0 => {}", lib.join("libldp_client.so.0").display());
        assert!(resolved.contains(&want), "{how}: ldd does not find the prefix's library ({want}):\n{resolved}");
    }
    run_consumer(exe);
}

/// A consumer linked with the static library: it needs no `libldp_client` shared library (`readelf -d`, `ldd`), and
/// runs.
fn check_static(exe: &Path, tools: &Tools, how: &str) {
    if tools.readelf {
        let needed = needed(exe);
        assert!(
            needed.iter().all(|n| !n.contains("libldp_client")),
            "{how}: the static program loads the shared library: {needed:?}"
        );
    }
    if tools.ldd {
        let resolved = ldd(exe);
        assert!(!resolved.contains("libldp_client"), "{how}: ldd lists the shared library:\n{resolved}");
    }
    run_consumer(exe);
}

/// `pkg-config ARGS` with the prefix's `.pc` files.
fn pkg_config(lib: &Path, args: &[&str]) -> String {
    run(Command::new("pkg-config").args(args).env("PKG_CONFIG_PATH", lib.join("pkgconfig")), "pkg-config")
}

/// Builds the consumer with a compiler and `flags` (pkg-config's).
fn build_consumer(consumer: &Path, flags: &str, exe: &Path, how: &str) {
    run(
        Command::new(cc::compiler())
            .args(["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic"])
            .arg(consumer.join("consumer.c"))
            .args(flags.split_whitespace())
            .arg("-o")
            .arg(exe),
        how,
    );
}

#[test]
fn installed_library_builds_and_runs_a_consumer_through_pkg_config_and_cmake() {
    let work = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("ldp-install-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).unwrap();
    let prefix = installed_prefix(&work);
    let lib = prefix.join("lib");
    check_installed_files(&prefix);
    let tools = Tools { readelf: have("readelf"), ldd: have("ldd") };
    if tools.readelf {
        let d = dynamic(&lib.join(format!("libldp_client.so.{}", env!("CARGO_PKG_VERSION"))));
        assert!(d.contains("Library soname: [libldp_client.so.0]"), "no versioned SONAME:\n{d}");
    }
    let consumer = manifest_dir().join("tests/c/consumer");
    let pkg_config_found = have("pkg-config");
    if pkg_config_found {
        consumers_with_pkg_config(&lib, &consumer, &work, &tools);
    }
    if have("cmake") {
        consumers_with_cmake(&prefix, &consumer, &work, &tools, pkg_config_found);
    }
    let _ = std::fs::remove_dir_all(&work);
}

/// The prefix installed by CI (`LDP_INSTALLED_PREFIX`), else one `packaging/install.sh` installs under `work` from
/// this build.
fn installed_prefix(work: &Path) -> PathBuf {
    match std::env::var_os("LDP_INSTALLED_PREFIX") {
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
    }
}

/// Every file of the install, and the shared library's links.
fn check_installed_files(prefix: &Path) {
    let lib = prefix.join("lib");
    let version = env!("CARGO_PKG_VERSION");
    for f in [
        "include/ldp_client.h".to_string(),
        format!("lib/libldp_client.so.{version}"),
        "lib/libldp_client.so.0".into(),
        "lib/libldp_client.so".into(),
        "lib/libldp_client.a".into(),
        "lib/libldp_client_static.a".into(),
        "lib/pkgconfig/ldp_client.pc".into(),
        "lib/pkgconfig/ldp_client-static.pc".into(),
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
    assert_eq!(std::fs::read_link(lib.join("libldp_client_static.a")).unwrap(), PathBuf::from("libldp_client.a"));
}

/// Consumers built with the flags of both `.pc` files, with and without `--static`: the shared library, or the
/// static one.
fn consumers_with_pkg_config(lib: &Path, consumer: &Path, work: &Path, tools: &Tools) {
    // ldp_client: the shared library, with or without --static (the linker takes libldp_client.so for
    // -lldp_client wherever both are installed).
    for (args, name) in [
        (&["--cflags", "--libs", "ldp_client"][..], "consumer-pkg-config"),
        (&["--static", "--cflags", "--libs", "ldp_client"][..], "consumer-pkg-config-static-flag"),
    ] {
        let flags = pkg_config(lib, args);
        assert!(flags.contains("-Wl,-rpath,"), "the .pc file sets no rpath: {flags}");
        let exe = work.join(name);
        build_consumer(consumer, &flags, &exe, &format!("cc with pkg-config {args:?}"));
        check_shared(&exe, lib, tools, &format!("pkg-config {args:?}"));
    }
    // ldp_client-static: the static library, with or without --static.
    for (args, name) in [
        (&["--cflags", "--libs", "ldp_client-static"][..], "consumer-pkg-config-static"),
        (&["--static", "--cflags", "--libs", "ldp_client-static"][..], "consumer-pkg-config-static-static"),
    ] {
        let flags = pkg_config(lib, args);
        assert!(flags.contains("-lldp_client_static"), "{args:?}: {flags}");
        let exe = work.join(name);
        build_consumer(consumer, &flags, &exe, &format!("cc with pkg-config {args:?}"));
        check_static(&exe, tools, &format!("pkg-config {args:?}"));
    }
}

/// Consumers built by CMake: `find_package(LdpClient)`'s two targets, and (with pkg-config) CMake's
/// `pkg_check_modules` of both `.pc` files.
fn consumers_with_cmake(prefix: &Path, consumer: &Path, work: &Path, tools: &Tools, pkg_config_found: bool) {
    let lib = prefix.join("lib");
    let build = work.join("cmake-build");
    let mut configure = Command::new("cmake");
    configure
        .arg("-S")
        .arg(consumer)
        .arg("-B")
        .arg(&build)
        .arg(format!("-DCMAKE_PREFIX_PATH={}", prefix.display()))
        .arg(format!("-DLDP_PKG_CONFIG={}", if pkg_config_found { "ON" } else { "OFF" }))
        .arg("-DCMAKE_BUILD_TYPE=Release")
        .env("PKG_CONFIG_PATH", lib.join("pkgconfig"));
    run(&mut configure, "cmake (configure)");
    run(Command::new("cmake").arg("--build").arg(&build), "cmake --build");
    check_shared(&build.join("consumer"), &lib, tools, "CMake LdpClient::ldp_client");
    check_static(&build.join("consumer_static"), tools, "CMake LdpClient::ldp_client_static");
    if pkg_config_found {
        check_shared(&build.join("consumer_pc"), &lib, tools, "CMake pkg_check_modules(ldp_client)");
        check_static(&build.join("consumer_pc_static"), tools, "CMake pkg_check_modules(ldp_client-static)");
    }
}
