//! Go's RE2 syntax (gitleaks' rules) translated to the `regex` crate's, with Go's meaning.
//!
//! The two syntaxes are nearly one, with three differences that matter here:
//!
//! - Go's `\w`, `\d`, `\s` and `\b` are ASCII (`[0-9A-Za-z_]`, `[0-9]`, `[\t\n\f\r ]`, and the
//!   boundary between them); `regex`'s are Unicode. They are spelled out as ASCII classes and
//!   `(?-u:\b)`, which also keeps the lazy DFA usable on non-ASCII text (a Unicode `\b` makes it
//!   give up on the first non-ASCII byte).
//! - Inside a class, Go reads `[` as a literal and has no set operations; `regex` nests classes
//!   on `[` and reads `&&`, `--` and `~~` as intersection, difference and symmetric difference.
//!   Those characters are escaped.
//! - Go has `\Q…\E` literal quoting; `regex` has not. The quoted text is escaped.
//!
//! Everything else (flags, `(?P<name>…)`, counted repetitions, POSIX classes, `\x60`, `\pL`) is
//! copied as is.

/// Go's `\w` as class items.
const WORD: &str = "0-9A-Za-z_";
/// Go's `\d` as class items.
const DIGIT: &str = "0-9";
/// Go's `\s` as class items (no `\v`: Go's `\s` has none).
const SPACE: &str = r"\t\n\f\r ";

/// Translates a Go regular expression into one the `regex` crate compiles to the same language.
pub(crate) fn translate(go: &str) -> String {
    let chars: Vec<char> = go.chars().collect();
    let mut out = String::with_capacity(go.len() + 16);
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\\' => {
                let Some(&next) = chars.get(i + 1) else {
                    // A trailing backslash: invalid in both syntaxes; let `regex` report it.
                    out.push('\\');
                    break;
                };
                i += 2;
                match next {
                    'w' => push_class(&mut out, WORD, false),
                    'W' => push_class(&mut out, WORD, true),
                    'd' => push_class(&mut out, DIGIT, false),
                    'D' => push_class(&mut out, DIGIT, true),
                    's' => push_class(&mut out, SPACE, false),
                    'S' => push_class(&mut out, SPACE, true),
                    'b' => out.push_str(r"(?-u:\b)"),
                    'B' => out.push_str(r"(?-u:\B)"),
                    'Q' => i = quote(&chars, i, &mut out),
                    other => {
                        out.push('\\');
                        out.push(other);
                    }
                }
            }
            '[' => i = class(&chars, i, &mut out),
            '{' => match repetition_len(&chars[i..]) {
                // `{n}`, `{n,}`, `{n,m}`: a counted repetition.
                Some(len) => {
                    out.extend(&chars[i..i + len]);
                    i += len;
                }
                // Go reads any other `{` as a literal; `regex` wants it escaped.
                None => {
                    out.push_str(r"\{");
                    i += 1;
                }
            },
            '}' => {
                // Not closing a repetition (those are copied whole): a literal.
                out.push_str(r"\}");
                i += 1;
            }
            _ => {
                out.push(c);
                i += 1;
            }
        }
    }
    out
}

/// The length of a counted repetition (`{n}`, `{n,}`, `{n,m}`) at the start of `chars`, if
/// that is what it holds.
fn repetition_len(chars: &[char]) -> Option<usize> {
    let mut i = 1;
    let digits = |i: &mut usize| {
        let from = *i;
        while chars.get(*i).is_some_and(char::is_ascii_digit) {
            *i += 1;
        }
        *i > from
    };
    if !digits(&mut i) {
        return None;
    }
    if chars.get(i) == Some(&',') {
        i += 1;
        digits(&mut i);
    }
    (chars.get(i) == Some(&'}')).then_some(i + 1)
}

fn push_class(out: &mut String, items: &str, negated: bool) {
    out.push('[');
    if negated {
        out.push('^');
    }
    out.push_str(items);
    out.push(']');
}

/// Copies `\Q…\E` (from just after `\Q`) as escaped literal text; returns the index after `\E`
/// (or the end of the pattern).
fn quote(chars: &[char], mut i: usize, out: &mut String) -> usize {
    let mut literal = String::new();
    while i < chars.len() {
        if chars[i] == '\\' && chars.get(i + 1) == Some(&'E') {
            i += 2;
            break;
        }
        literal.push(chars[i]);
        i += 1;
    }
    out.push_str(&regex::escape(&literal));
    i
}

/// Copies a bracketed class starting at `chars[start] == '['`; returns the index after its `]`.
fn class(chars: &[char], start: usize, out: &mut String) -> usize {
    out.push('[');
    let mut i = start + 1;
    if chars.get(i) == Some(&'^') {
        out.push('^');
        i += 1;
    }
    // A `]` first in the class is a literal, in both syntaxes; escaping it is clearer.
    if chars.get(i) == Some(&']') {
        out.push_str(r"\]");
        i += 1;
    }
    let mut previous_dash = false;
    // After a Perl class, Go reads `-` as a literal; spelled out as a range's end it would start
    // a range in `regex`.
    let mut after_perl = false;
    while i < chars.len() {
        let c = chars[i];
        let mut dash = false;
        let mut perl = false;
        match c {
            ']' => {
                out.push(']');
                return i + 1;
            }
            '\\' => {
                let Some(&next) = chars.get(i + 1) else {
                    out.push('\\');
                    return chars.len();
                };
                i += 1;
                perl = matches!(next, 'w' | 'd' | 's' | 'W' | 'D' | 'S');
                match next {
                    'w' => out.push_str(WORD),
                    'd' => out.push_str(DIGIT),
                    's' => out.push_str(SPACE),
                    'W' => push_class(out, WORD, true),
                    'D' => push_class(out, DIGIT, true),
                    'S' => push_class(out, SPACE, true),
                    other => {
                        out.push('\\');
                        out.push(other);
                    }
                }
            }
            '[' if chars.get(i + 1) == Some(&':') => {
                // A POSIX class `[:alnum:]`: same in both syntaxes.
                let end = (i + 2..chars.len().saturating_sub(1))
                    .find(|&j| chars[j] == ':' && chars[j + 1] == ']');
                match end {
                    Some(j) => {
                        out.extend(&chars[i..j + 2]);
                        i = j + 1;
                    }
                    None => out.push_str(r"\["),
                }
            }
            '[' => out.push_str(r"\["),
            '&' | '~' => {
                out.push('\\');
                out.push(c);
            }
            '-' if previous_dash || after_perl => out.push_str(r"\-"),
            '-' => {
                out.push('-');
                dash = true;
            }
            _ => out.push(c),
        }
        previous_dash = dash;
        after_perl = perl;
        i += 1;
    }
    chars.len()
}

#[cfg(test)]
mod tests {
    use super::translate;

    #[test]
    fn perl_classes_become_ascii() {
        assert_eq!(translate(r"\w+\d\s"), r"[0-9A-Za-z_]+[0-9][\t\n\f\r ]");
        assert_eq!(translate(r"[\w.-]{0,50}"), r"[0-9A-Za-z_.-]{0,50}");
        assert_eq!(translate(r"[\s\S-]"), r"[\t\n\f\r [^\t\n\f\r ]\-]");
        assert_eq!(translate(r"\bkey\B"), r"(?-u:\b)key(?-u:\B)");
        let re = regex::Regex::new(&translate(r"^\w+$")).expect("compiles");
        assert!(re.is_match("abc_09"));
        assert!(!re.is_match("café"));
    }

    #[test]
    fn go_class_literals_are_escaped() {
        assert_eq!(translate(r"[]a]"), r"[\]a]");
        assert_eq!(translate(r"[^]a]"), r"[^\]a]");
        assert_eq!(translate(r"[a[b]"), r"[a\[b]");
        assert_eq!(translate(r"[a&&b]"), r"[a\&\&b]");
        assert_eq!(translate(r"[+--]"), r"[+-\-]");
        assert_eq!(translate(r"[\w-.]"), r"[0-9A-Za-z_\-.]");
        assert_eq!(translate(r"[[:alnum:]_]"), r"[[:alnum:]_]");
        assert_eq!(translate(r"\[[^]]+]"), r"\[[^\]]+]");
        for go in [r"[]a]", r"[a[b]", r"[a&&b]", r"[~~]", r"[[:alnum:]_]", r"\[[^]]+]"] {
            regex::Regex::new(&translate(go)).expect(go);
        }
        let re = regex::Regex::new(&translate(r"^[a[&~-]+$")).expect("compiles");
        assert!(re.is_match("a[&~-"));
    }

    #[test]
    fn braces_that_are_no_repetition_are_literals() {
        assert_eq!(translate(r"a{2}b{1,}c{1,3}"), r"a{2}b{1,}c{1,3}");
        assert_eq!(translate(r"\${{[^}]+}}"), r"\$\{\{[^}]+\}\}");
        assert_eq!(translate(r"^\{\d{0,2}}$"), r"^\{[0-9]{0,2}\}$");
        assert_eq!(translate(r"a{,5}"), r"a\{,5\}");
        let re = regex::Regex::new(&translate(r"^import[ \t]+{[ \w,]+}$")).expect("compiles");
        assert!(re.is_match("import {a, b}"));
    }

    #[test]
    fn quoted_text_is_literal() {
        assert_eq!(translate(r"a\Q.*\Eb"), r"a\.\*b");
        assert_eq!(translate(r"\Q(x"), r"\(x");
    }

    #[test]
    fn other_escapes_are_copied() {
        assert_eq!(translate(r#"\x60\\\.\""#), r#"\x60\\\.\""#);
        assert_eq!(translate(r"[\x60'\s;]"), r"[\x60'\t\n\f\r ;]");
    }
}
