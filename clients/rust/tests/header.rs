//! `include/ldp_client.h` is what cbindgen (the version pinned in Cargo.toml) generates from `src/ffi.rs` with
//! `cbindgen.toml`, byte for byte. After changing the C interface, regenerate it in `clients/rust` with
//!
//! ```text
//! LDP_BLESS=1 cargo test --test header
//! ```

use std::path::{Path, PathBuf};

const REGENERATE: &str = "LDP_BLESS=1 cargo test --test header";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The sources of the C interface: `src/ffi.rs`, then the file of each module it declares, in the order it declares
/// them (depth first): the header's order. cbindgen reads each file on its own, so the order of the files is that
/// of the header's items. Every file under `src/ffi/` must be one of them.
fn sources(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    add_module(root.join("src/ffi.rs"), root.join("src/ffi"), &mut out);
    let mut stack = vec![root.join("src/ffi")];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                assert!(out.contains(&p), "{} is no module of src/ffi.rs", p.display());
            }
        }
    }
    out
}

/// Adds `file` and, after it, the files of the modules it declares (`mod name;`, found in `dir`).
fn add_module(file: PathBuf, dir: PathBuf, out: &mut Vec<PathBuf>) {
    let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    out.push(file);
    for line in text.lines() {
        let Some(name) = line.strip_prefix("mod ").or_else(|| line.strip_prefix("pub mod ")) else { continue };
        let Some(name) = name.strip_suffix(';') else { continue };
        add_module(dir.join(format!("{name}.rs")), dir.join(name), out);
    }
}

/// The header as cbindgen generates it now.
fn generate() -> Vec<u8> {
    let root = root();
    let config = cbindgen::Config::from_file(root.join("cbindgen.toml")).expect("cbindgen.toml");
    let mut builder = cbindgen::Builder::new().with_config(config);
    for src in sources(&root) {
        builder = builder.with_src(src);
    }
    let bindings = builder.generate().expect("cbindgen parses src/ffi.rs");
    let mut out = Vec::new();
    bindings.write(&mut out);
    out
}

/// Where two texts first differ: line number and both lines.
fn first_difference(want: &str, have: &str) -> String {
    let (w, h): (Vec<&str>, Vec<&str>) = (want.lines().collect(), have.lines().collect());
    for i in 0..w.len().max(h.len()) {
        let (a, b) = (w.get(i), h.get(i));
        if a != b {
            return format!(
                "first difference at line {}:\n  generated: {}\n  committed: {}",
                i + 1,
                a.map_or("(end of file)".to_string(), |s| format!("{s:?}")),
                b.map_or("(end of file)".to_string(), |s| format!("{s:?}")),
            );
        }
    }
    "the texts differ only in line endings or a final newline".to_string()
}

#[test]
fn header_is_what_cbindgen_generates() {
    let path = root().join("include/ldp_client.h");
    let generated = generate();
    if std::env::var_os("LDP_BLESS").is_some_and(|v| v == "1") {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        if std::fs::read(&path).ok().as_deref() != Some(generated.as_slice()) {
            std::fs::write(&path, &generated).unwrap();
            eprintln!("rewrote {}", path.display());
        }
        return;
    }
    let committed = std::fs::read(&path).unwrap_or_default();
    if committed != generated {
        panic!(
            "include/ldp_client.h is not what cbindgen generates from src/ffi.rs ({} bytes generated, {} committed); {}\n\
             regenerate it in clients/rust with: {REGENERATE}",
            generated.len(),
            committed.len(),
            first_difference(&String::from_utf8_lossy(&generated), &String::from_utf8_lossy(&committed)),
        );
    }
}

#[test]
fn header_names_the_c_conventions() {
    let text = String::from_utf8(generate()).unwrap();
    for want in [
        "#ifndef LDP_CLIENT_H",
        "#define LDP_CLIENT_H",
        "#include <stddef.h>",
        "#include <stdint.h>",
        "extern \"C\" {",
        "typedef struct LdpClient LdpClient;",
        "typedef struct LdpSpec LdpSpec;",
        "typedef enum LdpStatus {",
        "LDP_OK = 0,",
        "LDP_VALUE_ERROR = 1,",
        "LDP_INTERNAL = 10,",
        "LDP_REPLY_DONE = 0,",
        "LDP_REPLY_RETRY_AFTER = 2,",
        "#define LDP_MAX_INPUT",
        REGENERATE,
    ] {
        assert!(text.contains(want), "the generated header lacks {want:?}");
    }
}

/// The files of the C interface's feature `prio`: each one's function prefix and its least number of functions.
const PRIO_FILES: [(&str, &str, usize); 3] = [
    ("src/ffi/sharding.rs", "ldp_prio3_", 10),
    ("src/ffi/sharding_drafts.rs", "ldp_prio3_", 6),
    ("src/ffi/dap_report.rs", "ldp_dap_", 7),
];

/// The Prio3 functions of `src/ffi/sharding.rs` and `src/ffi/sharding_drafts.rs` and the DAP report functions of
/// `src/ffi/dap_report.rs` (feature `prio`) are all in the header, each declared only under `LDP_CLIENT_PRIO`
/// (cbindgen.toml's `[defines]`), and no item of the Rust API (`src/prio3.rs`, `src/dap.rs`) leaks into it.
#[test]
fn header_declares_the_prio3_functions_under_their_define() {
    let text = String::from_utf8(generate()).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    for (file, prefix, at_least) in PRIO_FILES {
        let source = std::fs::read_to_string(root().join(file)).unwrap();
        let mut functions: Vec<&str> = source
            .lines()
            .filter_map(|l| {
                l.strip_prefix("pub unsafe extern \"C\" fn ").or_else(|| l.strip_prefix("pub extern \"C\" fn "))
            })
            .map(|l| &l[..l.find('(').unwrap()])
            .collect();
        functions.sort();
        assert!(functions.len() >= at_least, "{file}: {functions:?}");
        assert!(functions.iter().all(|f| f.starts_with(prefix)), "{file}: {functions:?}");
        let mut declared = Vec::new();
        for (i, line) in
            lines.iter().enumerate().filter(|(_, l)| functions.iter().any(|f| l.contains(&format!("{f}("))))
        {
            let Some(at) = line.find(prefix) else { continue };
            if line.trim_start().starts_with('*') || !line.contains('(') {
                continue; // documentation
            }
            let name = &line[at..at + line[at..].find('(').unwrap()];
            let guard = lines[..i].iter().rev().find(|l| l.starts_with("#if") || l.starts_with("#endif"));
            assert_eq!(guard, Some(&"#if defined(LDP_CLIENT_PRIO)"), "{name} is not under LDP_CLIENT_PRIO");
            declared.push(name);
        }
        declared.sort();
        assert_eq!(declared, functions, "the header's {prefix} functions");
    }
    for want in [
        "typedef struct LdpPrio3 LdpPrio3;",
        "typedef struct LdpPrio3Shares LdpPrio3Shares;",
        "typedef struct LdpDapReport LdpDapReport;",
        "#define LDP_PRIO3_NONCE_LEN 16",
        "#define LDP_DAP_REPORT_ID_LEN 16",
        "#define LDP_DAP_TASK_ID_LEN 32",
        "#define LDP_VDAF_DRAFT_08 8",
        "#define LDP_VDAF_DRAFT_18 18",
    ] {
        assert!(text.contains(want), "the header lacks {want:?}");
    }
    for leak in [
        "NONCE_LEN",
        "SEED_LEN",
        "MAX_CTX_LEN",
        "MAX_ENCODED_LEN",
        "AGGREGATORS",
        "REPORT_ID_LEN",
        "TASK_ID_LEN",
        "DRAFT",
        "KEM_X25519_HKDF_SHA256",
    ] {
        assert!(!text.contains(&format!("#define {leak} ")), "the Rust API's {leak} is in the header");
    }
}
