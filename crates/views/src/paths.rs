//! POSIX path arithmetic as Python's `os.path.normpath` and `os.path.relpath` do it, on
//! workspace-relative paths (no IO, no current directory).

/// Python's `str.isspace` (and `\s` in a `str` regex): Rust's whitespace plus `\x1c`–`\x1f`.
pub(crate) fn is_py_space(c: char) -> bool {
    c.is_whitespace() || ('\x1c'..='\x1f').contains(&c)
}

/// `os.path.normpath` of a relative POSIX path, as components: `.` and empty components
/// dropped, `a/..` collapsed, leading `..` kept.
pub(crate) fn normalize(path: &str) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if out.last().is_some_and(|last| *last != "..") {
                    out.pop();
                } else {
                    out.push("..");
                }
            }
            other => out.push(other),
        }
    }
    out
}

/// `os.path.relpath(target, start)` for two normalized relative paths given as components.
pub(crate) fn relative(target: &[&str], start: &[&str]) -> String {
    let common = target.iter().zip(start).take_while(|(a, b)| a == b).count();
    let mut parts: Vec<&str> = Vec::with_capacity(start.len() - common + target.len() - common);
    parts.extend(std::iter::repeat_n("..", start.len() - common));
    parts.extend(&target[common..]);
    if parts.is_empty() { ".".to_owned() } else { parts.join("/") }
}

/// The directory components of `topics/<topic_path>`.
pub(crate) fn topic_dir(topic_path: &str) -> Vec<&str> {
    let mut parts = normalize(topic_path);
    parts.pop();
    parts.insert(0, "topics");
    parts
}

#[cfg(test)]
mod tests {
    use super::{normalize, relative};

    #[test]
    fn normalize_collapses_like_python() {
        assert_eq!(normalize("topics/a/../../sources/x.md"), ["sources", "x.md"]);
        assert_eq!(normalize("topics/../../x"), ["..", "x"]);
        assert_eq!(normalize("./a//b/."), ["a", "b"]);
    }

    #[test]
    fn relative_walks_up_then_down() {
        assert_eq!(
            relative(&["topics", "p", "x.md"], &["timeline", "2024", "01"]),
            "../../../topics/p/x.md"
        );
        assert_eq!(relative(&["sources", "x.md"], &[]), "sources/x.md");
        assert_eq!(relative(&["topics"], &["topics"]), ".");
        assert_eq!(relative(&["..", "x"], &["topics"]), "../../x");
    }
}
