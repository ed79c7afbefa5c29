//! Free-form input of a custom tool (QUIRKS Q28) checked against the tool's
//! regex grammar. OpenAI states that the `regex` syntax of a custom tool's
//! grammar is the Rust `regex` crate's, so the same crate checks it here; the
//! whole input must match (the pattern is anchored at both ends). The
//! compiled program is bounded, so a hostile pattern is a clear error at
//! definition time, never a blow-up at call time.

use std::fmt;

use regex::{Regex, RegexBuilder};

/// Bound on the compiled program of one grammar (bytes).
const MAX_PROGRAM_BYTES: usize = 4 * 1024 * 1024;
/// Bound on a pattern's nesting.
const MAX_NEST: u32 = 100;

/// A custom tool's regex grammar, compiled once.
#[derive(Debug, Clone)]
pub struct RegexGrammar {
    regex: Regex,
}

/// A grammar that does not compile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrammarError(pub String);

impl fmt::Display for GrammarError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the regex grammar does not compile: {}", self.0)
    }
}

impl std::error::Error for GrammarError {}

impl RegexGrammar {
    /// Compiles `pattern`, anchored so that a whole input must match.
    ///
    /// # Errors
    /// [`GrammarError`] for a pattern the `regex` crate refuses or one too large.
    pub fn compile(pattern: &str) -> Result<Self, GrammarError> {
        let anchored = format!(r"\A(?:{pattern})\z");
        let regex = RegexBuilder::new(&anchored)
            .size_limit(MAX_PROGRAM_BYTES)
            .dfa_size_limit(MAX_PROGRAM_BYTES)
            .nest_limit(MAX_NEST)
            .build()
            .map_err(|e| GrammarError(e.to_string()))?;
        Ok(Self { regex })
    }

    /// True when the whole of `input` matches.
    #[must_use]
    pub fn matches(&self, input: &str) -> bool {
        self.regex.is_match(input)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_whole_input_must_match() {
        let g = RegexGrammar::compile(r"SELECT \* FROM \w+( WHERE .*)?")
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(g.matches("SELECT * FROM users WHERE age > 25"));
        assert!(!g.matches("x SELECT * FROM users"));
        assert!(!g.matches("SELECT * FROM users; DROP TABLE users --\n"));
        // Alternation cannot escape the anchors.
        let g = RegexGrammar::compile("a|b").unwrap_or_else(|e| panic!("{e}"));
        assert!(g.matches("a") && !g.matches("ab"));
    }

    #[test]
    fn bad_and_oversized_patterns_are_errors() {
        assert!(RegexGrammar::compile("(").is_err());
        assert!(RegexGrammar::compile(&"(".repeat(200)).is_err());
        assert!(RegexGrammar::compile(r"\w{1000}{1000}").is_err());
    }
}
