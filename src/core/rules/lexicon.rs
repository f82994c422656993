//! A small, general lexicon: categories of common things people state
//! preferences about, and synonyms for query expansion. It is domain
//! knowledge about software work and everyday life, not tuned to any
//! evaluation set.

/// `(attribute, members)`: a thing named in a sentence tells which
/// attribute the sentence is about. Members are matched as whole words,
/// case-insensitively, so words that are also common English ("go",
/// "rest", "solid", "express", "windows", "tabs") are left out or only
/// listed in an unambiguous form. Attribute names are spelled out
/// ("operating_system", not "os"), since queries find them by name.
pub const CATEGORIES: &[(&str, &[&str])] = &[
    (
        "package_manager",
        &["npm", "pnpm", "yarn", "bun", "pip", "pipenv", "poetry", "cargo", "conda", "uv", "maven", "gradle", "composer", "bundler", "homebrew"],
    ),
    (
        "programming_language",
        &["typescript", "javascript", "python", "rust", "golang", "java", "kotlin", "swift", "ruby", "php", "c#", "c++", "elixir", "scala", "haskell", "zig"],
    ),
    (
        "framework",
        &[
            "react",
            "vue",
            "svelte",
            "sveltekit",
            "angular",
            "nextjs",
            "next.js",
            "nuxt",
            "django",
            "flask",
            "rails",
            "express.js",
            "expressjs",
            "fastapi",
            "astro",
            "solidjs",
            "hono",
            "laravel",
            "spring boot",
        ],
    ),
    ("theme", &["dark mode", "light mode", "dark theme", "light theme"]),
    ("editor", &["vim", "neovim", "emacs", "vscode", "vs code", "zed", "intellij", "sublime text", "cursor ide"]),
    ("database", &["postgres", "postgresql", "mysql", "sqlite", "mongodb", "redis", "dynamodb", "d1", "supabase", "planetscale", "cockroachdb"]),
    ("api_style", &["graphql", "rest api", "restful", "grpc", "trpc"]),
    ("test_framework", &["jest", "vitest", "pytest", "mocha", "playwright", "cypress", "rspec", "junit"]),
    ("bundler", &["vite", "webpack", "esbuild", "rollup", "parcel", "turbopack"]),
    ("styling", &["tailwind", "tailwindcss", "sass", "scss", "css modules", "styled-components"]),
    ("formatter", &["prettier", "black", "rustfmt", "gofmt"]),
    ("linter", &["eslint", "biome", "clippy", "ruff", "pylint"]),
    ("continuous_integration", &["github actions", "gitlab ci", "circleci", "jenkins", "buildkite"]),
    ("cloud", &["aws", "gcp", "azure", "cloudflare", "vercel", "netlify", "heroku", "fly.io"]),
    ("indentation", &["tabs for indentation", "spaces for indentation", "indent with tabs", "indent with spaces", "tab indentation", "space indentation"]),
    ("operating_system", &["linux", "macos", "windows 10", "windows 11", "ubuntu", "debian", "fedora"]),
];

/// Query-side synonym groups: any member expands to the others.
pub const SYNONYMS: &[&[&str]] = &[
    &["prefer", "like", "favorite", "favourite", "love", "enjoy", "use"],
    &["package", "dependency", "library", "module"],
    &["job", "work", "career", "occupation", "profession"],
    &["kid", "child", "children", "son", "daughter"],
    &["wife", "husband", "partner", "spouse"],
    &["home", "house", "apartment"],
    &["car", "vehicle"],
    &["trip", "travel", "vacation", "holiday", "journey"],
    &["dog", "puppy", "pet"],
    &["cat", "kitten", "pet"],
    &["buy", "bought", "purchase", "purchased"],
    &["movie", "film"],
    &["book", "novel", "read"],
    &["music", "song", "band"],
    &["paint", "painting", "art"],
    &["run", "running", "marathon", "race"],
    &["school", "college", "university", "class", "course", "study"],
    &["deploy", "release", "ship", "launch"],
    &["bug", "incident", "outage", "issue"],
    &["limit", "quota", "cap"],
    &["theme", "mode", "appearance"],
    &["mother", "mom", "mum"],
    &["father", "dad"],
    &["grandmother", "grandma"],
    &["grandfather", "grandpa"],
    &["photo", "picture", "pic", "photograph"],
    &["friend", "buddy", "pal"],
    &["shop", "store"],
    &["start", "begin"],
    &["finish", "complete"],
    &["sick", "ill"],
    &["exercise", "workout"],
];

/// Every category member in one automaton, and the attribute of each
/// (by pattern index, in [`CATEGORIES`] order). `None` if the automaton
/// could not be built (it is built from the constant lexicon, so never).
fn members() -> Option<&'static (aho_corasick::AhoCorasick, Vec<&'static str>)> {
    type Members = Option<(aho_corasick::AhoCorasick, Vec<&'static str>)>;
    static MEMBERS: std::sync::OnceLock<Members> = std::sync::OnceLock::new();
    MEMBERS
        .get_or_init(|| {
            let (patterns, attrs): (Vec<&str>, Vec<&str>) = CATEGORIES.iter().flat_map(|(attr, members)| members.iter().map(move |m| (*m, *attr))).unzip();
            Some((aho_corasick::AhoCorasick::new(patterns).ok()?, attrs))
        })
        .as_ref()
}

/// The attribute a text is about, from the first category member it names
/// as a whole word (the earliest in the text; at one place, the first in
/// [`CATEGORIES`]). One pass over the text for every member.
pub fn category_of(text: &str) -> Option<&'static str> {
    let lower = format!(" {} ", text.to_lowercase());
    let (_, attrs) = members()?;
    whole_words(&lower).min_by_key(|m| (m.start(), m.pattern().as_usize())).and_then(|m| attrs.get(m.pattern().as_usize()).copied())
}

/// Every category member `lower` names as a whole word, overlapping
/// matches included.
fn whole_words(lower: &str) -> impl Iterator<Item = aho_corasick::Match> + '_ {
    members().into_iter().flat_map(move |(automaton, _)| automaton.find_overlapping_iter(lower)).filter(move |m| whole_word(lower, m.start(), m.end()))
}

/// Whether `lower[start..end]` is a whole word: no letter or digit
/// right before or after it.
fn whole_word(lower: &str, start: usize, end: usize) -> bool {
    lower.get(..start).is_some_and(|before| before.chars().next_back().is_none_or(|c| !c.is_alphanumeric()))
        && lower.get(end..).is_some_and(|after| after.chars().next().is_none_or(|c| !c.is_alphanumeric()))
}

/// `text` (lowercased) without the category members it names as whole
/// words, each with the version written right after it ("PostgreSQL 16",
/// "Python 3.8"): what the text says besides which thing it names.
pub fn without_members(text: &str) -> String {
    let lower = format!(" {} ", text.to_lowercase());
    // The longest match first at each place ("postgresql", not the
    // "postgres" in it).
    let mut found: Vec<(usize, usize)> = whole_words(&lower).map(|m| (m.start(), m.end())).collect();
    found.sort_by_key(|&(start, end)| (start, std::cmp::Reverse(end)));
    let mut out = String::with_capacity(lower.len());
    let mut at = 0;
    for (start, end) in found {
        if start < at {
            continue;
        }
        out.push_str(lower.get(at..start).unwrap_or(""));
        out.push(' ');
        at = end.saturating_add(version_after(lower.get(end..).unwrap_or("")));
    }
    out.push_str(lower.get(at..).unwrap_or(""));
    out
}

/// The length of the version opening `rest` (" 16", " v2.3", " 3.8"),
/// with its space; 0 when there is none.
fn version_after(rest: &str) -> usize {
    let Some(r) = rest.strip_prefix(' ') else { return 0 };
    let v = r.strip_prefix('v').unwrap_or(r);
    let digits = v.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(v.len());
    let number = v.get(..digits).unwrap_or("").trim_end_matches('.');
    match number.is_empty() {
        true => 0,
        false => rest.len().saturating_sub(v.len()).saturating_add(number.len()),
    }
}

/// The attribute a word names directly ("package manager" names
/// `package_manager`).
pub fn attribute_named(text: &str) -> Option<&'static str> {
    let lower = text.to_lowercase().replace(['-', '_'], " ");
    CATEGORIES.iter().map(|(a, _)| *a).find(|a| lower.contains(&a.replace('_', " ")))
}

/// Synonyms of a word (not including the word).
pub fn synonyms(word: &str) -> Vec<&'static str> {
    let mut out = Vec::new();
    for group in SYNONYMS {
        if group.contains(&word) {
            out.extend(group.iter().filter(|w| **w != word));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The member-by-member scan `category_of` replaces: the reference.
    fn category_by_scan(text: &str) -> Option<&'static str> {
        let lower = format!(" {} ", text.to_lowercase());
        let mut best: Option<(usize, &'static str)> = None;
        for (attr, members) in CATEGORIES {
            for m in members.iter() {
                let whole = |pos: usize| {
                    lower[..pos].chars().last().is_none_or(|c| !c.is_alphanumeric())
                        && lower[pos + m.len()..].chars().next().is_none_or(|c| !c.is_alphanumeric())
                };
                if let Some(pos) = lower.match_indices(m).map(|(p, _)| p).find(|&p| whole(p)) {
                    if best.is_none_or(|(b, _)| pos < b) {
                        best = Some((pos, attr));
                    }
                }
            }
        }
        best.map(|(_, a)| a)
    }

    #[test]
    fn test_members_and_their_versions_are_taken_out() {
        assert_eq!(without_members("Moved to PostgreSQL 16 on port 6432.").split_whitespace().collect::<Vec<_>>(), ["moved", "to", "on", "port", "6432."]);
        assert_eq!(without_members("Python v3.11, not python.").split_whitespace().collect::<Vec<_>>(), [",", "not", "."]);
        assert_eq!(without_members("pythonic npmjs").split_whitespace().collect::<Vec<_>>(), ["pythonic", "npmjs"]);
    }

    #[test]
    fn test_taking_members_out_of_any_text_keeps_the_rest() {
        for t in ["Üpostgres 16", "postgresÜ 16", "İstanbul runs Postgres ١٦", "postgres v", "postgres 1.", "postgres .", "npm", "", " ", "c++ 17 and c# 12"]
        {
            let rest = without_members(t);
            assert!(rest.len() <= t.to_lowercase().len() + 2, "{t:?} -> {rest:?}");
        }
        assert!(!without_members("postgres v").contains("postgres"));
        assert!(without_members("Üpostgres 16").contains("16"), "not a whole word: kept");
        assert!(!without_members("c++ 17 and c# 12").contains("17"));
    }

    #[test]
    fn test_one_pass_finds_the_category_the_member_scan_finds() {
        let mut texts: Vec<String> = vec![
            "I switched from npm to pnpm last week".into(),
            "We use Postgres with Redis in front, deployed on AWS".into(),
            "The vscode theme is dark mode; vim keys on".into(),
            "Spring Boot services with React front ends".into(),
            "I like going to the gym and reading novels".into(),
            "Über-fast cargo builds, C++ and c# too".into(),
            "npmjs is not npm; rusty is not rust; pythonic is not python".into(),
            "".into(),
        ];
        // Every member alone, inside words, at both ends, and next to others.
        for (_, members) in CATEGORIES {
            for m in members.iter() {
                texts.push(m.to_string());
                texts.push(format!("x{m}y and {m}."));
                texts.push(format!("{}: we moved to {m} after {}", m.to_uppercase(), members[0]));
            }
        }
        for t in &texts {
            assert_eq!(category_of(t), category_by_scan(t), "{t:?}");
        }
    }
}
