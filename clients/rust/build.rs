//! Gives the shared library a versioned name of its own: the SONAME `libldp_client.so.0` on Linux (and other ELF
//! systems but Android), the install name `@rpath/libldp_client.0.dylib` on Apple platforms. A program linked with
//! it records that name, so a later library with an incompatible C interface (`libldp_client.so.1`) can be
//! installed beside it without breaking it. `packaging/install.sh` installs the file under that name, with the usual links.
//!
//! The number is the C interface's ABI version (`LDP_ABI` in packaging/install.sh), not the crate's version: it
//! moves only when a change of `include/ldp_client.h` would break a program built against the old one.

/// The C interface's ABI version.
const ABI: u32 = 0;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    // The target triple, for tests/prio3_vectors.rs: `cargo metadata --filter-platform` finds the prio crate's
    // source (its test vectors) among the packages this target's build downloaded, with no download.
    if let Ok(target) = std::env::var("TARGET") {
        println!("cargo:rustc-env=LDP_TARGET={target}");
    }
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let family = std::env::var("CARGO_CFG_TARGET_FAMILY").unwrap_or_default();
    match os.as_str() {
        "macos" | "ios" | "tvos" | "watchos" | "visionos" => {
            println!("cargo:rustc-cdylib-link-arg=-Wl,-install_name,@rpath/libldp_client.{ABI}.dylib")
        }
        // Android packages and loads `lib<name>.so` only; Windows DLLs carry no such name.
        "windows" | "android" => {}
        _ if family == "unix" => println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libldp_client.so.{ABI}"),
        _ => {}
    }
}
