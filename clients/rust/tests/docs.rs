//! The docs say what the client does: docs/native-client.md's protocol rows and docs/conformance.md's Rust column
//! are the client's own lists (`python conformance/docs_tables.py` writes them).

mod common;

use ldp_client::protocols;

fn docs() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs")
}

fn names(cell: &str) -> Vec<String> {
    let mut out: Vec<String> = cell.split('`').skip(1).step_by(2).map(str::to_string).collect();
    out.sort();
    out
}

fn row(page: &str, key: &str) -> String {
    let text = std::fs::read_to_string(docs().join(page)).unwrap();
    let line =
        text.lines().find(|l| l.starts_with(&format!("| {key} |"))).unwrap_or_else(|| panic!("{page}: no {key} row"));
    line.split('|').nth(2).unwrap().to_string()
}

#[test]
fn the_native_page_lists_the_protocols_and_the_not_yet_list() {
    let mut ours: Vec<String> = protocols::names().into_iter().map(str::to_string).collect();
    ours.sort();
    assert_eq!(ours, names(&row("native-client.md", "protocols")), "run: python conformance/docs_tables.py");
    let not_yet = row("native-client.md", "not yet");
    let mut want: Vec<String> = protocols::NOT_YET.iter().map(|s| s.to_string()).collect();
    want.sort();
    let got = if not_yet.trim() == "none" { Vec::new() } else { names(&not_yet) };
    assert_eq!(want, got, "run: python conformance/docs_tables.py");
}

#[test]
fn the_conformance_pages_rust_column_is_the_clients() {
    let text = std::fs::read_to_string(docs().join("conformance.md")).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let start =
        lines.iter().position(|l| l.starts_with("| protocol | Python | TypeScript | Kotlin | Rust / C |")).unwrap();
    let rows: Vec<Vec<String>> = lines[start + 2..]
        .iter()
        .take_while(|l| l.starts_with('|'))
        .map(|l| l.split('|').map(|c| c.trim().to_string()).collect())
        .collect();
    let mut listed: Vec<String> = rows.iter().map(|r| r[1].trim_matches('`').to_string()).collect();
    listed.sort();
    assert_eq!(common::protocols(), listed, "one row per vector file");
    let mut yes: Vec<String> =
        rows.iter().filter(|r| r[5] == "yes").map(|r| r[1].trim_matches('`').to_string()).collect();
    yes.sort();
    let mut ours: Vec<String> = protocols::names().into_iter().map(str::to_string).collect();
    ours.sort();
    assert_eq!(ours, yes, "run: python conformance/docs_tables.py");
}

/// The fenced block of `lang` that follows `heading` in `page`.
fn block_after(page: &str, heading: &str, lang: &str) -> String {
    let text = std::fs::read_to_string(docs().join(page)).unwrap();
    let from = text.find(heading).unwrap_or_else(|| panic!("{page}: no {heading:?}"));
    let fence = format!("\n```{lang}\n");
    let start = from + text[from..].find(&fence).unwrap_or_else(|| panic!("{page}: no {lang} block after {heading:?}"));
    let body = &text[start + fence.len()..];
    body[..body.find("\n```").unwrap()].to_string() + "\n"
}

/// The whole C program of docs/native-client.md's "C usage", with its spec: built with the system compiler against
/// the static library, run twice on one state folder.
#[cfg(unix)]
#[test]
fn the_c_program_of_the_native_page_builds_and_runs() {
    use std::process::Command;
    let spec = block_after("native-client.md", "## C usage", "json");
    let program = block_after("native-client.md", "## C usage", "c");
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("ldp-docs-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("collection.json"), spec).unwrap();
    std::fs::write(dir.join("telemetry.c"), program).unwrap();
    let out = Command::new(common::cc::compiler())
        .args(["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "-I"])
        .arg(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("include"))
        .arg(dir.join("telemetry.c"))
        .arg(common::cc::static_library())
        .args(common::cc::native_static_libs())
        .arg("-o")
        .arg(dir.join("telemetry"))
        .output()
        .unwrap();
    assert!(out.status.success(), "the page's C program does not build:\n{}", String::from_utf8_lossy(&out.stderr));
    for (run, want) in [(1, "queued report 1\n"), (2, "queued report 3\n")] {
        let out = Command::new(dir.join("telemetry"))
            .arg(dir.join("collection.json"))
            .arg(dir.join("state"))
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "run {run}: {stdout}{}", String::from_utf8_lossy(&out.stderr));
        assert!(stdout.starts_with(want), "run {run}: {stdout}");
        assert!(stdout.contains(&format!("waiting for upload: {} report(s)", 2 * run)), "run {run}: {stdout}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
