//! Definitions and references of one source file, by tree-sitter and the grammars' tags
//! queries: the raw material of the repository map (which file defines what, which file uses
//! what, and the one-line signature the map shows for a definition).
//!
//! An [`Extractor`] belongs to one thread (tree-sitter's parser and query cursor are not
//! shareable); the compiled queries are shared by the whole process and built once per
//! language on first use. Every extraction has a time budget, so one pathological file can
//! cost the map at most that.

mod lang;
mod signature;
mod watchdog;

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::time::Duration;

use tree_sitter_tags::{Tag, TagsConfiguration, TagsContext};

pub use lang::Lang;
pub use signature::MAX_SIGNATURE_CHARS;

use watchdog::Watchdog;

/// How long one extraction may take before it is cut off.
pub const TIME_BUDGET: Duration = Duration::from_millis(200);

/// The longest name taken for a symbol, in bytes; a longer "name" is an expression a broad
/// query pattern caught, not an identifier.
const MAX_NAME_BYTES: usize = 200;

/// What a definition defines, from the tags query's capture (`@definition.<kind>`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum DefKind {
    /// A free function (or a function-valued binding).
    Function,
    /// A function in a class, impl, trait or interface.
    Method,
    /// A class (Python, JavaScript, Java, Ruby, C++).
    Class,
    /// A struct or union (Rust, Go, C, C++).
    Struct,
    /// An enum.
    Enum,
    /// A Rust trait.
    Trait,
    /// An interface (TypeScript, Java, Go).
    Interface,
    /// A module, namespace or Rust `mod`.
    Module,
    /// A constant or module-level binding.
    Constant,
    /// A type alias or other named type.
    Type,
    /// A macro (`macro_rules!`, `#define`).
    Macro,
    /// Anything else a query calls a definition.
    Other,
}

impl DefKind {
    /// The kind of a tags syntax type name (`function`, `class`, ...).
    fn from_syntax_type(name: &str) -> DefKind {
        match name {
            "function" => DefKind::Function,
            "method" => DefKind::Method,
            "class" => DefKind::Class,
            "struct" => DefKind::Struct,
            "enum" => DefKind::Enum,
            "trait" => DefKind::Trait,
            "interface" => DefKind::Interface,
            "module" => DefKind::Module,
            "constant" => DefKind::Constant,
            "type" => DefKind::Type,
            "macro" => DefKind::Macro,
            _ => DefKind::Other,
        }
    }
}

/// One definition in a file.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Def {
    /// The defined name.
    pub name: String,
    /// What it defines.
    pub kind: DefKind,
    /// 1-based line of the name.
    pub line: u32,
    /// 1-based last line of the whole definition (for the region around a symbol).
    pub end_line: u32,
    /// The definition's header up to its body, on one line, at most [`MAX_SIGNATURE_CHARS`]
    /// characters: `def add(a, b):`, `pub fn parse(input: &str) -> Result<Plan, Error>` (an
    /// opening `{` or a closing `;` is left out).
    pub signature: String,
}

/// One use of a name (a call, a type, an import, a base class) in a file.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Ref {
    /// The used name.
    pub name: String,
    /// 1-based line of the use.
    pub line: u32,
}

/// The symbols of one file: definitions sorted by line, references sorted by line with one
/// entry per name and line, names shorter than 2 characters left out.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FileSymbols {
    /// The definitions.
    pub defs: Vec<Def>,
    /// The references.
    pub refs: Vec<Ref>,
}

/// Why a file's symbols could not be extracted. The map then treats the file like any other
/// text file (its path and words still count).
#[derive(Debug, thiserror::Error)]
pub enum SymbolError {
    /// The file took longer than the budget to parse; it was cut off.
    #[error(
        "the {lang} symbols of this file took longer than {} ms to extract and were cut off",
        budget.as_millis()
    )]
    TimedOut {
        /// The file's language.
        lang: Lang,
        /// The budget it exceeded.
        budget: Duration,
    },
    /// The grammar or its tags query cannot be used (a fault of this build of pai).
    #[error("the {lang} grammar or its tags query cannot be used ({message}); please report it")]
    Grammar {
        /// The language.
        lang: Lang,
        /// What tree-sitter said.
        message: String,
    },
    /// The timer thread that enforces the budget could not be started.
    #[error("cannot start the symbol extractor's timer thread: {0}")]
    Timer(#[source] std::io::Error),
}

/// Extracts symbols; one per thread.
pub struct Extractor {
    context: TagsContext,
    watchdog: Option<Watchdog>,
    budget: Duration,
}

impl Default for Extractor {
    fn default() -> Self {
        Self::new()
    }
}

impl Extractor {
    /// An extractor with the default [`TIME_BUDGET`] per file.
    pub fn new() -> Self {
        Self::with_budget(TIME_BUDGET)
    }

    /// An extractor that cuts off each extraction after `budget`.
    pub fn with_budget(budget: Duration) -> Self {
        Self {
            context: TagsContext::new(),
            watchdog: None,
            budget,
        }
    }

    /// Definitions and references of `text` in `lang`. Never panics on any input; an
    /// extraction that takes longer than the budget is cut off and returns
    /// [`SymbolError::TimedOut`].
    pub fn extract(&mut self, lang: Lang, text: &str) -> Result<FileSymbols, SymbolError> {
        let config = lang
            .config()
            .map_err(|message| SymbolError::Grammar { lang, message })?;
        let watchdog = match self.watchdog.take() {
            Some(watchdog) => watchdog,
            None => Watchdog::start().map_err(SymbolError::Timer)?,
        };
        let watchdog = self.watchdog.insert(watchdog);
        let flag = Arc::new(AtomicUsize::new(0));
        let _armed = watchdog.arm(Arc::clone(&flag), self.budget);
        let failed = |e| match e {
            tree_sitter_tags::Error::Cancelled => SymbolError::TimedOut {
                lang,
                budget: self.budget,
            },
            e => SymbolError::Grammar {
                lang,
                message: e.to_string(),
            },
        };
        let (tags, _has_error) = self
            .context
            .generate_tags(config, text.as_bytes(), Some(&flag))
            .map_err(failed)?;
        let mut out = Collector::new(lang, config, text);
        for tag in tags {
            out.add(&tag.map_err(failed)?);
        }
        Ok(out.finish())
    }
}

/// Turns tags into definitions and references.
struct Collector<'a> {
    lang: Lang,
    config: &'a TagsConfiguration,
    text: &'a str,
    lines: LineIndex,
    symbols: FileSymbols,
    seen_refs: HashSet<(String, u32)>,
}

impl<'a> Collector<'a> {
    fn new(lang: Lang, config: &'a TagsConfiguration, text: &'a str) -> Self {
        Self {
            lang,
            config,
            text,
            lines: LineIndex::new(text),
            symbols: FileSymbols::default(),
            seen_refs: HashSet::new(),
        }
    }

    fn add(&mut self, tag: &Tag) {
        let Some(name) = self.text.get(tag.name_range.clone()) else {
            return;
        };
        if name.is_empty() || name.len() > MAX_NAME_BYTES || name.contains(char::is_whitespace) {
            return;
        }
        let line = to_line(tag.span.start.row);
        if !tag.is_definition {
            if name.chars().count() >= 2 && self.seen_refs.insert((name.to_string(), line)) {
                let name = name.to_string();
                self.symbols.refs.push(Ref { name, line });
            }
            return;
        }
        let kind = DefKind::from_syntax_type(self.config.syntax_type_name(tag.syntax_type_id));
        let line_start = tag.name_range.start.saturating_sub(tag.span.start.column);
        let end = tag.range.end.max(tag.name_range.end);
        let signature = signature::header(self.text, line_start, end, self.lang.line_headers());
        self.symbols.defs.push(Def {
            name: name.to_string(),
            kind,
            line,
            end_line: self.lines.last_line(tag.name_range.start, end).max(line),
            signature,
        });
    }

    fn finish(mut self) -> FileSymbols {
        // Stable sorts: symbols on one line keep the order of the source.
        self.symbols.defs.sort_by_key(|d| d.line);
        self.symbols.refs.sort_by_key(|r| r.line);
        self.symbols
    }
}

/// A 0-based tree-sitter row as a 1-based line.
fn to_line(row: usize) -> u32 {
    u32::try_from(row.saturating_add(1)).unwrap_or(u32::MAX)
}

/// The byte offsets of a text's newlines, to turn byte offsets into lines.
struct LineIndex {
    newlines: Vec<usize>,
}

impl LineIndex {
    fn new(text: &str) -> Self {
        Self {
            newlines: memchr::memchr_iter(b'\n', text.as_bytes()).collect(),
        }
    }

    /// The 1-based line of the last character of `start..end` (a trailing newline, which
    /// some nodes include, does not count as a line of its own).
    fn last_line(&self, start: usize, end: usize) -> u32 {
        let mut last = end.saturating_sub(1).max(start);
        if last > start && self.newlines.binary_search(&last).is_ok() {
            last -= 1;
        }
        to_line(self.newlines.partition_point(|&n| n < last))
    }
}
