//! The core's regex patterns compile in the Wasm build. Cargo.toml gives
//! `regex` only the Unicode features the service needs (`unicode-perl`,
//! `unicode-case`): `\w`, `\d`, `\s` and case folding, but no `\p{..}`
//! classes. Native tests cannot see a pattern that needs more, because a
//! dev-dependency (proptest) turns every `regex-syntax` Unicode feature
//! on for them; in workerd the same pattern panics on first use. So
//! this test reads the sources: no `\p`/`\P` class in `src/`, unless
//! Cargo.toml gives regex the feature that backs it.

use std::path::Path;

/// Every `\p`/`\P` class escape written in a Rust source line (`\\p` in
/// an ordinary string literal, `\p` in a raw one), as `file:line`.
fn unicode_classes(dir: &Path, out: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            unicode_classes(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(&path).unwrap();
            // Whole lines, trailing comments and all (a `//` may be part
            // of a pattern, as in a URL's); only lines that are comments
            // from their start are skipped.
            for (n, line) in text.lines().enumerate() {
                if !line.trim_start().starts_with("//") && has_class(line) {
                    out.push(format!("{}:{}", path.display(), n + 1));
                }
            }
        }
    }
}

fn has_class(code: &str) -> bool {
    code.match_indices('\\').any(|(at, _)| {
        let rest = code[at + 1..].trim_start_matches('\\');
        (rest.starts_with('p') || rest.starts_with('P')) && rest[1..].starts_with(|c: char| c == '{' || c.is_ascii_uppercase())
    })
}

/// The features Cargo.toml gives `regex`.
fn regex_features() -> String {
    let manifest = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml")).unwrap();
    manifest.lines().find(|l| l.trim_start().starts_with("regex =")).expect("Cargo.toml names regex").to_string()
}

#[test]
fn test_no_pattern_needs_a_unicode_class_the_wasm_build_lacks() {
    let features = regex_features();
    // Only the whole `unicode` feature backs every class (general
    // categories, scripts, properties): with it there is nothing to check.
    if features.contains("\"unicode\"") {
        return;
    }
    let mut found = Vec::new();
    unicode_classes(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), &mut found);
    assert!(found.is_empty(), "a `\\p{{..}}` class needs a regex feature Cargo.toml does not give: {found:?}");
}

#[test]
fn test_the_class_finder_finds_a_class() {
    assert!(has_class(r#"re(&ID, r"(?:^|\W)\p{Lu}\w* (\d+)")"#));
    assert!(has_class(r#"Regex::new("\\pL+")"#));
    assert!(has_class(r#"Regex::new("\\P{Greek}")"#));
    assert!(!has_class(r#"Regex::new(r"\w+ \d+ \s \b")"#));
    assert!(!has_class(r#"let path = "C:\\projects";"#));
    assert!(has_class(r#"Regex::new(r"https?://\S+\p{L}")"#), "a class after a URL's slashes");
}
