//! The languages the map parses: which files are which, and each language's grammar and tags
//! query, compiled once per process on first use.
//!
//! A tags query names definitions (`@definition.function`, ...) and references
//! (`@reference.call`, ...) with the defined or used name in `@name`. Each language runs its
//! grammar crate's own query where it ships one, preceded by pai's additions from
//! `src/map/queries/` (on the same name the first pattern wins, so an addition can refine a
//! kind); C and C++ run pai's own query instead of their grammars' weak ones.

use std::fmt;
use std::path::Path;
use std::sync::OnceLock;

use tree_sitter::Language;
use tree_sitter_tags::TagsConfiguration;

/// A language the map extracts symbols from. Any other text file still takes part in the map
/// through its path and words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Lang {
    /// `.py`, `.pyi`.
    Python,
    /// `.rs`.
    Rust,
    /// `.js`, `.mjs`, `.cjs`, `.jsx` (the grammar includes JSX).
    JavaScript,
    /// `.ts`, `.mts`, `.cts`.
    TypeScript,
    /// `.tsx`.
    Tsx,
    /// `.go`.
    Go,
    /// `.java`.
    Java,
    /// `.c`, `.h`.
    C,
    /// `.cc`, `.cpp`, `.cxx`, `.c++`, `.hpp`, `.hh`, `.hxx`, `.h++`, `.ipp`, `.tpp`, `.inl`.
    Cpp,
    /// `.rb`, `.rake`, `.gemspec`, and `Rakefile`, `Gemfile`.
    Ruby,
}

impl Lang {
    /// Every language, in declaration order.
    pub const ALL: [Lang; 10] = [
        Lang::Python,
        Lang::Rust,
        Lang::JavaScript,
        Lang::TypeScript,
        Lang::Tsx,
        Lang::Go,
        Lang::Java,
        Lang::C,
        Lang::Cpp,
        Lang::Ruby,
    ];

    /// The language of a project-relative path by its extension (or, for Ruby's build files,
    /// its name); `.h` is C. `None` for anything else, dot-files without an extension included.
    pub fn from_path(path: &str) -> Option<Lang> {
        let path = Path::new(path);
        let name = path.file_name()?.to_str()?;
        if matches!(name, "Rakefile" | "Gemfile") {
            return Some(Lang::Ruby);
        }
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        Some(match ext.as_str() {
            "py" | "pyi" => Lang::Python,
            "rs" => Lang::Rust,
            "js" | "mjs" | "cjs" | "jsx" => Lang::JavaScript,
            "ts" | "mts" | "cts" => Lang::TypeScript,
            "tsx" => Lang::Tsx,
            "go" => Lang::Go,
            "java" => Lang::Java,
            "c" | "h" => Lang::C,
            "cc" | "cpp" | "cxx" | "c++" | "hpp" | "hh" | "hxx" | "h++" | "ipp" | "tpp" | "inl" => {
                Lang::Cpp
            }
            "rb" | "rake" | "gemspec" => Lang::Ruby,
            _ => return None,
        })
    }

    /// Whether a definition's header ends at the end of its line (Python, Ruby) rather than at
    /// its opening brace or semicolon.
    pub(super) fn line_headers(self) -> bool {
        matches!(self, Lang::Python | Lang::Ruby)
    }

    /// The compiled tags configuration, built on first use and shared by every thread.
    pub(super) fn config(self) -> Result<&'static TagsConfiguration, String> {
        static CONFIGS: [OnceLock<Result<TagsConfiguration, String>>; 10] =
            [const { OnceLock::new() }; 10];
        CONFIGS[self as usize]
            .get_or_init(|| self.build())
            .as_ref()
            .map_err(Clone::clone)
    }

    /// Compile this language's tags configuration now (on the calling thread), so that a
    /// later parse finds it ready.
    pub fn prepare(self) {
        let _ = self.config();
    }

    fn build(self) -> Result<TagsConfiguration, String> {
        let (language, locals, parts) = self.sources();
        TagsConfiguration::new(language, &parts.join("\n"), &locals.join("\n"))
            .map_err(|e| e.to_string())
    }

    /// The grammar, its locals queries (scopes, so that a use of a local variable is not taken
    /// for a reference to a definition elsewhere) and its tags queries in priority order.
    fn sources(self) -> (Language, Vec<&'static str>, Vec<&'static str>) {
        use tree_sitter_javascript as js;
        use tree_sitter_typescript as ts;
        match self {
            Lang::Python => (
                tree_sitter_python::LANGUAGE.into(),
                vec![],
                vec![PYTHON, tree_sitter_python::TAGS_QUERY],
            ),
            Lang::Rust => (
                tree_sitter_rust::LANGUAGE.into(),
                vec![],
                vec![RUST, tree_sitter_rust::TAGS_QUERY],
            ),
            Lang::JavaScript => (
                js::LANGUAGE.into(),
                vec![js::LOCALS_QUERY],
                vec![JAVASCRIPT, JSX, js::TAGS_QUERY],
            ),
            Lang::TypeScript => (
                ts::LANGUAGE_TYPESCRIPT.into(),
                vec![js::LOCALS_QUERY, ts::LOCALS_QUERY],
                vec![TYPESCRIPT, JAVASCRIPT, ts::TAGS_QUERY, js::TAGS_QUERY],
            ),
            Lang::Tsx => (
                ts::LANGUAGE_TSX.into(),
                vec![js::LOCALS_QUERY, ts::LOCALS_QUERY],
                vec![TYPESCRIPT, JAVASCRIPT, JSX, ts::TAGS_QUERY, js::TAGS_QUERY],
            ),
            Lang::Go => (
                tree_sitter_go::LANGUAGE.into(),
                vec![],
                vec![GO, tree_sitter_go::TAGS_QUERY],
            ),
            Lang::Java => (
                tree_sitter_java::LANGUAGE.into(),
                vec![],
                vec![JAVA, tree_sitter_java::TAGS_QUERY],
            ),
            Lang::C => (tree_sitter_c::LANGUAGE.into(), vec![], vec![C]),
            Lang::Cpp => (tree_sitter_cpp::LANGUAGE.into(), vec![], vec![CPP]),
            Lang::Ruby => (
                tree_sitter_ruby::LANGUAGE.into(),
                vec![tree_sitter_ruby::LOCALS_QUERY],
                vec![RUBY, tree_sitter_ruby::TAGS_QUERY],
            ),
        }
    }
}

impl fmt::Display for Lang {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Lang::Python => "Python",
            Lang::Rust => "Rust",
            Lang::JavaScript => "JavaScript",
            Lang::TypeScript => "TypeScript",
            Lang::Tsx => "TSX",
            Lang::Go => "Go",
            Lang::Java => "Java",
            Lang::C => "C",
            Lang::Cpp => "C++",
            Lang::Ruby => "Ruby",
        })
    }
}

const PYTHON: &str = include_str!("../queries/python.scm");
const RUST: &str = include_str!("../queries/rust.scm");
const JAVASCRIPT: &str = include_str!("../queries/javascript.scm");
const JSX: &str = include_str!("../queries/jsx.scm");
const TYPESCRIPT: &str = include_str!("../queries/typescript.scm");
const GO: &str = include_str!("../queries/go.scm");
const JAVA: &str = include_str!("../queries/java.scm");
const C: &str = include_str!("../queries/c.scm");
const CPP: &str = include_str!("../queries/cpp.scm");
const RUBY: &str = include_str!("../queries/ruby.scm");
