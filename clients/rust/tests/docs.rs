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
