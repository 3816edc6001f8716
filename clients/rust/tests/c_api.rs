//! The C interface as a C program sees it: `tests/c/vectors.c`, compiled with the system C compiler (`$CC`, else
//! `cc`) against `include/ldp_client.h` and linked with the static library `cargo test` built (`libldp_client.a`),
//! replays every conformance vector of a registered protocol through `ldp_spec_parse`, `ldp_random_replay`,
//! `ldp_encoder_new`, `ldp_encoder_prepare`, `ldp_prepared_charge` and `ldp_encoder_randomize`, refuses every
//! refusal value with the vectors' status, type, code and fields (`ldp_last_error_code`, `ldp_last_error_fields`),
//! and checks the contract at the boundary (null pointers, bad UTF-8, oversized inputs) and the client API end to end
//! (`--selftest`).
//!
//! The C program parses no JSON: this test writes each vector file as a line-based case file (`tests/c/vectors.c`
//! describes the records), and compares every printed line with the vector's byte for byte (costs to 4 ulps).

#![cfg(unix)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use common::cc::{self, CProgram};
use common::{close_ulps, f, protocols, same_json, vectors_dir};
use ldp_client::{protocols as registry, CollectionSpec, Value};

/// `LdpStatus` values (include/ldp_client.h).
const LDP_VALUE_ERROR: i32 = 1;
const LDP_TYPE_ERROR: i32 = 2;
const LDP_INVALID_ARGUMENT: i32 = 6;

fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `tests/c/vectors.c`, built into a folder of this test process under cargo's scratch folder.
fn c_program() -> &'static CProgram {
    static PROGRAM: OnceLock<CProgram> = OnceLock::new();
    PROGRAM.get_or_init(|| CProgram { source: "tests/c/vectors.c", flags: &[], dir: cc::scratch_dir("ldp-c-api") })
}

fn work_dir() -> &'static Path {
    &c_program().dir
}

/// `tests/c/vectors.c`, compiled and linked once per test process.
fn program() -> &'static Path {
    static PROGRAM: OnceLock<PathBuf> = OnceLock::new();
    PROGRAM.get_or_init(|| c_program().build("vectors"))
}

/// Runs the C program; its stdout.
fn run(args: &[&Path]) -> String {
    let out = Command::new(program()).args(args).output().expect("the C program runs");
    let stdout = String::from_utf8(out.stdout).expect("the C program prints UTF-8");
    assert!(
        out.status.success(),
        "the C program failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// Undoes the C program's escapes of a message.
fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some(other) => out.push(other),
            None => out.push('\\'),
        }
    }
    out
}

#[path = "c_api/cases.rs"]
mod cases;
#[path = "c_api/surrogates.rs"]
mod surrogates;

use cases::{case_file, mismatch, Want};
use surrogates::load;

#[test]
fn c_program_replays_the_conformance_vectors() {
    let dir = work_dir();
    let mut files = Vec::new();
    let mut want = Vec::new();
    for name in protocols() {
        if registry::get(&name).is_none() {
            continue;
        }
        let path = dir.join(format!("{name}.cases"));
        want.extend(case_file(&name, &load(&name), &path));
        files.push(path);
    }
    assert_eq!(files.len(), registry::names().len(), "a case file per registered protocol");
    let args: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
    let stdout = run(&args);
    let got: Vec<&str> = stdout.lines().collect();

    let mut wrong = Vec::new();
    for (i, w) in want.iter().enumerate() {
        let line = got.get(i).copied().unwrap_or("(no line)");
        if let Some(why) = mismatch(&w.want, line) {
            wrong.push(format!("{}:\n    got  {line:?}\n    {why}", w.what));
        }
    }
    assert!(
        wrong.is_empty() && got.len() == want.len(),
        "{} of {} lines of the C program differ from the vectors ({} printed), the first ones:\n{}",
        wrong.len(),
        want.len(),
        got.len(),
        wrong.iter().take(12).cloned().collect::<Vec<_>>().join("\n")
    );
    let reports = want.iter().filter(|w| matches!(w.want, Want::Charge(_))).count();
    let refusals = want.iter().filter(|w| matches!(w.want, Want::Refused { .. } | Want::RefusedLike { .. })).count();
    assert!(reports > 0 && refusals > 0, "{reports} reports and {refusals} refusals replayed");
    eprintln!("C replayed {reports} reports and {refusals} refusals of {} protocols", files.len());
}

#[test]
fn c_program_selftest() {
    let state = work_dir().join("state");
    let stdout = run(&[Path::new("--selftest"), &state]);
    let last = stdout.lines().last().unwrap_or("");
    assert!(
        last.starts_with("selftest: ") && last.ends_with(", 0 failed") && !stdout.contains("FAIL"),
        "the C self-test failed:\n{stdout}"
    );
}

/// The self-test again, built with AddressSanitizer and UndefinedBehaviorSanitizer (leaks included): handles of the
/// wrong kind, freed null handles and every other boundary check touch no memory they must not. Skipped with a note
/// where the compiler has no sanitizer runtime, unless `LDP_REQUIRE_ASAN` is set (CI sets it).
#[test]
fn c_program_selftest_under_address_sanitizer() {
    let Some(exe) = c_program().build_sanitized("vectors-asan") else { return };
    let state = work_dir().join("state-asan");
    let run = Command::new(&exe)
        .args([Path::new("--selftest"), &state])
        .env("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=0:exitcode=23")
        .env("UBSAN_OPTIONS", "halt_on_error=1:print_stacktrace=1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        run.status.success() && stdout.lines().last().is_some_and(|l| l.ends_with(", 0 failed")),
        "the self-test under the sanitizers failed ({}):\n{stdout}\n{stderr}",
        run.status
    );
    assert!(!stderr.contains("ERROR: AddressSanitizer") && !stderr.contains("runtime error"), "{stderr}");
}

/// The header compiles as C++ (its `extern "C"` guards), with and without the uploader's and Prio3's functions, and
/// `module.modulemap` makes it the Clang module `LdpClient` (what Swift imports). Each check runs where its compiler
/// is installed (`$CXX` or `c++`; `clang`) and is skipped with a note otherwise.
#[test]
fn header_compiles_as_cpp_and_as_a_clang_module() {
    let root = manifest_dir();
    let dir = work_dir().join("header");
    std::fs::create_dir_all(&dir).unwrap();
    let cxx = cc::cxx_compiler();
    if cc::runs(&cxx) {
        let src = dir.join("header.cpp");
        std::fs::write(
            &src,
            "#include \"ldp_client.h\"\n\
             int main() { LdpStatus s = LDP_OK; LdpReplyAction a = LDP_REPLY_DONE; \
             return static_cast<int>(s) + static_cast<int>(a) + (ldp_version() == nullptr); }\n",
        )
        .unwrap();
        let all = ["-DLDP_CLIENT_UPLOADER", "-DLDP_CLIENT_PRIO", "-DLDP_CLIENT_POPLAR1"];
        for defines in [&[][..], &all[..1], &all[..2], &all[..]] {
            let mut cmd = Command::new(&cxx);
            cmd.args(["-std=c++11", "-Wall", "-Wextra", "-Werror", "-pedantic", "-fsyntax-only", "-I"])
                .arg(root.join("include"))
                .args(defines)
                .arg(&src);
            cc::run(&mut cmd, "compiling the header as C++");
        }
    } else {
        eprintln!("skipped: no C++ compiler ({cxx})");
    }
    if cc::runs("clang") {
        let src = dir.join("module.m");
        std::fs::write(
            &src,
            "@import LdpClient;\nint main(void) { LdpStatus s = LDP_OK; return (int)s + (ldp_version() == 0); }\n",
        )
        .unwrap();
        let mut cmd = Command::new("clang");
        cmd.args(["-x", "objective-c", "-fmodules", "-fsyntax-only", "-Werror"])
            .arg(format!("-fmodules-cache-path={}", dir.join("modules").display()))
            .arg(format!("-fmodule-map-file={}", root.join("module.modulemap").display()))
            .arg(&src);
        cc::run(&mut cmd, "importing the Clang module LdpClient");
    } else {
        eprintln!("skipped: no clang to check module.modulemap");
    }
}
