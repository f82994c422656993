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
    ("package_manager", &["npm", "pnpm", "yarn", "bun", "pip", "pipenv", "poetry", "cargo", "conda", "uv", "maven", "gradle", "composer", "bundler", "homebrew"]),
    ("programming_language", &["typescript", "javascript", "python", "rust", "golang", "java", "kotlin", "swift", "ruby", "php", "c#", "c++", "elixir", "scala", "haskell", "zig"]),
    ("framework", &["react", "vue", "svelte", "sveltekit", "angular", "nextjs", "next.js", "nuxt", "django", "flask", "rails", "express.js", "expressjs", "fastapi", "astro", "solidjs", "hono", "laravel", "spring boot"]),
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

/// The attribute a text is about, from the first category member it names.
pub fn category_of(text: &str) -> Option<&'static str> {
    let lower = format!(" {} ", text.to_lowercase());
    let mut best: Option<(usize, &'static str)> = None;
    for (attr, members) in CATEGORIES {
        for m in members.iter() {
            let needle_ok = |pos: usize| {
                let before = lower[..pos].chars().last().is_none_or(|c| !c.is_alphanumeric());
                let after = lower[pos + m.len()..].chars().next().is_none_or(|c| !c.is_alphanumeric());
                before && after
            };
            if let Some(pos) = lower.match_indices(m).map(|(p, _)| p).find(|&p| needle_ok(p)) {
                if best.is_none_or(|(b, _)| pos < b) {
                    best = Some((pos, attr));
                }
            }
        }
    }
    best.map(|(_, a)| a)
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
