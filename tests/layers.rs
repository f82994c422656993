//! The core's layers point down: no file of `src/core` reaches, through
//! the paths it names (`crate::core::…`, `super::…`, `self::…` in a
//! `mod.rs`), a file that reaches it back. Test modules and comments are
//! left out: a test may reach anywhere, and a doc link is no import.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

type Module = Vec<String>;

/// Every file of `src/core` as its module path (`recall/mod.rs` is
/// `recall`), with its code before any `#[cfg(test)]`, comments removed.
fn modules() -> BTreeMap<Module, String> {
    fn walk(dir: &Path, base: &Path, out: &mut BTreeMap<Module, String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, base, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let rel = path.strip_prefix(base).unwrap().with_extension("");
                let mut module: Module = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
                if module.last().is_some_and(|l| l == "mod") {
                    module.pop();
                }
                let text = std::fs::read_to_string(&path).unwrap();
                let code = text.split("#[cfg(test)]").next().unwrap_or("");
                let code: String = code.lines().map(|l| l.split("//").next().unwrap_or("")).collect::<Vec<_>>().join("\n");
                out.insert(module, code);
            }
        }
    }
    let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/core");
    let mut out = BTreeMap::new();
    walk(&base, &base, &mut out);
    out
}

/// The longest known module that `parts` starts with.
fn resolve(known: &BTreeMap<Module, String>, parts: &[String]) -> Option<Module> {
    (1..=parts.len()).rev().map(|n| parts[..n].to_vec()).find(|m| known.contains_key(m))
}

/// The module paths named after each occurrence of `prefix` in `code`
/// (their lowercase segments), groups (`{a::B, c}`) expanded.
fn paths_after(code: &str, prefix: &str) -> Vec<Vec<String>> {
    let segments =
        |s: &str| -> Vec<String> { s.split("::").map(str::trim).filter(|s| s.starts_with(|c: char| c.is_lowercase())).map(str::to_string).collect() };
    let mut out = Vec::new();
    for (at, _) in code.match_indices(prefix) {
        if code[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let rest = &code[at + prefix.len()..];
        let head: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':').collect();
        let after = &rest[head.len()..];
        match (head.ends_with("::") || head.is_empty(), after.strip_prefix('{')) {
            (true, Some(group)) => {
                for item in group[..group.find('}').unwrap_or(group.len())].split(',') {
                    out.push(segments(&head).into_iter().chain(segments(item)).collect());
                }
            }
            _ => out.push(segments(&head)),
        }
    }
    out
}

fn graph() -> BTreeMap<Module, BTreeSet<Module>> {
    let known = modules();
    let mut edges: BTreeMap<Module, BTreeSet<Module>> = known.keys().map(|m| (m.clone(), BTreeSet::new())).collect();
    for (module, code) in &known {
        let is_dir_module = known.keys().any(|k| k.len() > module.len() && k.starts_with(module));
        let parent: Module = module[..module.len().saturating_sub(1)].to_vec();
        let mut targets = paths_after(code, "crate::core::");
        // `super::x` is a sibling of this file's module (in a mod.rs too:
        // its super is the parent of the folder); `self::x` in a mod.rs is
        // inside the folder.
        for p in paths_after(code, "super::") {
            targets.push(parent.iter().cloned().chain(p).collect());
        }
        if is_dir_module {
            for p in paths_after(code, "self::") {
                targets.push(module.iter().cloned().chain(p).collect());
            }
        }
        for t in targets {
            let Some(target) = resolve(&known, &t) else { continue };
            // A module and the files inside it are one unit.
            if target.starts_with(module) || module.starts_with(&target) {
                continue;
            }
            edges.get_mut(module).unwrap().insert(target);
        }
    }
    edges
}

/// The groups of modules that reach each other (Tarjan's strongly
/// connected components of more than one module).
fn cycles(edges: &BTreeMap<Module, BTreeSet<Module>>) -> Vec<Vec<Module>> {
    struct State<'a> {
        edges: &'a BTreeMap<Module, BTreeSet<Module>>,
        index: BTreeMap<&'a Module, usize>,
        low: BTreeMap<&'a Module, usize>,
        stack: Vec<&'a Module>,
        next: usize,
        out: Vec<Vec<Module>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a Module) {
        s.index.insert(v, s.next);
        s.low.insert(v, s.next);
        s.next += 1;
        s.stack.push(v);
        for w in &s.edges[v] {
            if !s.index.contains_key(w) {
                visit(s, w);
                let lw = s.low[w];
                s.low.entry(v).and_modify(|l| *l = (*l).min(lw));
            } else if s.stack.contains(&w) {
                let iw = s.index[w];
                s.low.entry(v).and_modify(|l| *l = (*l).min(iw));
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                component.push(w.clone());
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                s.out.push(component);
            }
        }
    }
    let mut s = State { edges, index: BTreeMap::new(), low: BTreeMap::new(), stack: Vec::new(), next: 0, out: Vec::new() };
    for v in edges.keys() {
        if !s.index.contains_key(v) {
            visit(&mut s, v);
        }
    }
    s.out
}

#[test]
fn test_the_core_has_no_import_cycles() {
    let edges = graph();
    assert!(edges.len() > 40, "read {} modules of src/core", edges.len());
    assert!(edges[&vec!["ops".to_string()]].contains(&vec!["ingest".to_string()]), "the graph sees ops -> ingest");
    let found: Vec<String> = cycles(&edges).iter().map(|c| c.iter().map(|m| m.join("::")).collect::<Vec<_>>().join(" <-> ")).collect();
    assert!(found.is_empty(), "import cycles in src/core:\n{}", found.join("\n"));
}

#[test]
fn test_the_cycle_finder_finds_a_cycle() {
    let m = |s: &str| vec![s.to_string()];
    let edges: BTreeMap<Module, BTreeSet<Module>> =
        [(m("a"), [m("b")].into()), (m("b"), [m("c")].into()), (m("c"), [m("a")].into()), (m("d"), [m("a")].into())].into();
    let found = cycles(&edges);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].len(), 3);
}

/// The core's layers, lowest first: a module may import its own layer and
/// the layers below, never one above. A module is placed by the longest
/// path listed that it starts with; every module must be placed.
const LAYERS: &[(&str, &[&str])] = &[
    // What everything speaks: errors, records, requests and their
    // validation, the ports, the operation and job lists, text and time.
    (
        "foundation",
        &["error", "json", "filter", "ids", "time", "text", "dates", "wire", "model", "api", "ports", "op", "jobs", "schema", "resident", "turns", "running"],
    ),
    // Rows in and out of SQLite.
    ("storage", &["store"]),
    // Judging and embedding: the two reasoners and what they share, the
    // local embedder and vector index.
    ("providers", &["provider", "synthesis", "llm", "rules", "local::embed", "local::vector", "local"]),
    // What recall reads beside the store: the turn directory and its
    // indexes, and the pure scoring pieces.
    (
        "indexes",
        &[
            "recall::directory",
            "recall::text_index",
            "recall::porter",
            "recall::unicode61",
            "recall::parts",
            "recall::places",
            "recall::query",
            "recall::score",
            "recall::fuse",
            "recall::crowding",
            "recall::scope",
            "recall::temporal",
        ],
    ),
    // What one call borrows.
    ("context", &["context"]),
    // The pipelines.
    ("pipelines", &["ingest", "recall", "remember", "summary", "portable", "consolidate", "background"]),
    // The operations and their one dispatch.
    ("operations", &["ops", "catalog"]),
    // The ways in, and the benchmark's hooks (which drive operations).
    ("surfaces", &["rest", "mcp", "contract", "local::bench"]),
];

/// The layer of `module`: its index in [`LAYERS`] and name, by the longest
/// listed path it starts with.
fn layer_of(module: &Module) -> Option<(usize, &'static str)> {
    let mut best: Option<(usize, usize, &'static str)> = None;
    for (i, (name, paths)) in LAYERS.iter().enumerate() {
        for p in *paths {
            let path: Vec<&str> = p.split("::").collect();
            let matches = module.len() >= path.len() && module.iter().zip(&path).all(|(a, b)| a == b);
            if matches && best.is_none_or(|(len, _, _)| path.len() > len) {
                best = Some((path.len(), i, name));
            }
        }
    }
    best.map(|(_, i, name)| (i, name))
}

/// The edges that point up a layer, as text.
fn upward(edges: &BTreeMap<Module, BTreeSet<Module>>) -> Vec<String> {
    let mut out = Vec::new();
    for (from, targets) in edges {
        let Some((lf, nf)) = layer_of(from) else { continue };
        for to in targets {
            if let Some((lt, nt)) = layer_of(to) {
                if lt > lf {
                    out.push(format!("{} ({nf}) imports {} ({nt})", from.join("::"), to.join("::")));
                }
            }
        }
    }
    out
}

#[test]
fn test_no_core_module_imports_one_above_it() {
    let edges = graph();
    let unplaced: Vec<String> = edges.keys().filter(|m| !m.is_empty() && layer_of(m).is_none()).map(|m| m.join("::")).collect();
    assert!(unplaced.is_empty(), "modules of src/core in no layer (place them in LAYERS): {unplaced:?}");
    let up = upward(&edges);
    assert!(up.is_empty(), "imports that point up a layer:\n{}", up.join("\n"));
}

#[test]
fn test_the_layer_check_finds_an_upward_import() {
    let m = |s: &str| s.split("::").map(str::to_string).collect::<Module>();
    let edges: BTreeMap<Module, BTreeSet<Module>> =
        [(m("store::memories"), [m("recall::channels")].into()), (m("recall::channels"), [m("store")].into())].into();
    assert_eq!(upward(&edges), vec!["store::memories (storage) imports recall::channels (pipelines)".to_string()]);
    assert_eq!(layer_of(&m("recall::directory")).map(|l| l.1), Some("indexes"));
    assert_eq!(layer_of(&m("recall")).map(|l| l.1), Some("pipelines"));
}
