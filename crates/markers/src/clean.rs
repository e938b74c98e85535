//! What counts as a conversational record, and the text it is recorded with.
//!
//! Agent transcripts hold much that nobody said to anybody: the wrappers Claude Code writes for
//! a slash command and its local output, the context blocks Codex and Claude Code prepend to a
//! prompt, interrupt notices, terminal colour codes, and one-word acknowledgements. None of it
//! is worth remembering, and all of it would be archived and handed to the memory writer as if
//! the owner had said it. The rules, applied to a user or assistant message:
//!
//! 1. **Wrapper blocks are removed**, tag and content, in a user message: `<command-name>`,
//!    `<command-message>`, `<command-args>`, `<command-contents>`, `<local-command-stdout>`,
//!    `<local-command-stderr>`, `<local-command-caveat>`, `<bash-input>`, `<bash-stdout>`,
//!    `<bash-stderr>`, `<system-reminder>`, `<user-prompt-submit-hook>`, `<environment_context>`,
//!    `<user_instructions>`, `<collaboration_mode>`, `<skills_instructions>`,
//!    `<plugins_instructions>`, and `<memory-context>` (Scriptorium's own recall, never
//!    recorded back). `<system-reminder>` and `<memory-context>` blocks are removed from
//!    assistant messages too; an assistant's other text is left as written (it may quote a tag).
//!    A block is an opening tag and the nearest closing tag after it; an opening tag that is
//!    never closed is left as written.
//! 2. **Interrupt notices are removed**: `[Request interrupted by user]` and
//!    `[Request interrupted by user for tool use]`.
//! 3. **ANSI escape sequences are removed**: CSI (`ESC [` … a final byte), OSC (`ESC ]` … BEL
//!    or `ESC \`) and two-byte escapes.
//! 4. What is left is trimmed; **blank text is not a record**.
//! 5. **Content-free text is not a record**: a lone slash command (`/model`, `/exit`), or text
//!    that, lower-cased and stripped of everything but letters and digits, is empty (`👍`, `...`)
//!    or one of [`ACKNOWLEDGEMENTS`] (`ok`, `thanks`, `continue`, `ls`).
//!
//! Tool calls, tool results, runtime turns and system messages are never records (see
//! [`crate::is_record`]).

use std::borrow::Cow;

use scriptorium_session_dag::Role;

/// Tags whose blocks are removed from user messages (rule 1).
const USER_WRAPPERS: &[&str] = &[
    "command-name",
    "command-message",
    "command-args",
    "command-contents",
    "local-command-stdout",
    "local-command-stderr",
    "local-command-caveat",
    "bash-input",
    "bash-stdout",
    "bash-stderr",
    "system-reminder",
    "user-prompt-submit-hook",
    "environment_context",
    "user_instructions",
    "collaboration_mode",
    "skills_instructions",
    "plugins_instructions",
    "memory-context",
];

/// Tags whose blocks are removed from assistant messages too (rule 1).
const EVERY_WRAPPER: &[&str] = &["system-reminder", "memory-context"];

/// Interrupt notices (rule 2).
const INTERRUPTS: &[&str] =
    &["[Request interrupted by user for tool use]", "[Request interrupted by user]"];

/// Acknowledgements and one-word commands that carry nothing to remember (rule 5), as
/// compared: lower-case letters and digits only.
pub const ACKNOWLEDGEMENTS: &[&str] = &[
    "ok", "okay", "k", "kk", "yes", "y", "yep", "yeah", "yup", "no", "n", "nope", "thanks",
    "thankyou", "thx", "ty", "continue", "goon", "goahead", "proceed", "sure", "cool", "nice",
    "great", "perfect", "done", "next", "hi", "hello", "hey", "yo", "wow", "lgtm", "ls", "pwd",
    "clear", "exit", "quit",
];

/// The text a message of `role` is recorded with, or `None` when it is not a record (see the
/// module docs). Borrows `content` when no rule changed it.
pub fn record_text(role: Role, content: &str) -> Option<Cow<'_, str>> {
    let wrappers = match role {
        Role::User => USER_WRAPPERS,
        Role::Assistant => EVERY_WRAPPER,
        Role::System | Role::Tool => return None,
    };
    let mut text = Cow::Borrowed(content);
    // Every rule but the last looks for `<`, `[` or ESC: text without them (most of what people
    // write) is only trimmed and checked, without a search per tag.
    if text.contains('<') {
        for tag in wrappers {
            if let Some(stripped) = strip_blocks(&text, tag) {
                text = Cow::Owned(stripped);
            }
        }
    }
    if text.contains("[Request interrupted by user") {
        for notice in INTERRUPTS {
            if text.contains(notice) {
                text = Cow::Owned(text.replace(notice, ""));
            }
        }
    }
    if text.contains('\u{1b}') {
        text = Cow::Owned(strip_ansi(&text));
    }
    let trimmed = text.trim();
    if trimmed.is_empty() || content_free(trimmed) {
        return None;
    }
    Some(match text {
        Cow::Borrowed(b) => Cow::Borrowed(b.trim()),
        Cow::Owned(o) if o.trim().len() == o.len() => Cow::Owned(o),
        Cow::Owned(o) => Cow::Owned(o.trim().to_owned()),
    })
}

/// Rule 5.
fn content_free(text: &str) -> bool {
    let lone_command = text.starts_with('/')
        && text.len() > 1
        && !text[1..].contains(['/', ' ', '\n', '\t'])
        && text[1..].chars().all(|c| c.is_alphanumeric() || c == '-' || c == '_' || c == ':');
    if lone_command {
        return true;
    }
    // Folded, the text is compared with short words only: folding stops past the longest.
    let mut folded = String::new();
    for c in text.chars().flat_map(char::to_lowercase).filter(|c| c.is_alphanumeric()) {
        if folded.len() >= LONGEST_ACKNOWLEDGEMENT {
            return false;
        }
        folded.push(c);
    }
    folded.is_empty() || ACKNOWLEDGEMENTS.contains(&folded.as_str())
}

/// The length in bytes of the longest of [`ACKNOWLEDGEMENTS`].
const LONGEST_ACKNOWLEDGEMENT: usize = {
    let mut longest = 0;
    let mut i = 0;
    while i < ACKNOWLEDGEMENTS.len() {
        if ACKNOWLEDGEMENTS[i].len() > longest {
            longest = ACKNOWLEDGEMENTS[i].len();
        }
        i += 1;
    }
    longest
};

/// `text` without its `<tag>…</tag>` blocks; `None` when it has none.
fn strip_blocks(text: &str, tag: &str) -> Option<String> {
    let first = find_tag(text, tag, false)?;
    let open_len = tag.len() + 2;
    let close_len = tag.len() + 3;
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    let mut at = Some(first);
    let mut changed = false;
    while let Some(start) = at {
        let Some(len) = find_tag(&rest[start + open_len..], tag, true) else {
            break;
        };
        out.push_str(&rest[..start]);
        rest = &rest[start + open_len + len + close_len..];
        changed = true;
        at = find_tag(rest, tag, false);
    }
    out.push_str(rest);
    changed.then_some(out)
}

/// Where `<tag>` (or `</tag>` when `closing`) first starts in `text`: each `<` is looked at,
/// without building the tag's text.
fn find_tag(text: &str, tag: &str, closing: bool) -> Option<usize> {
    let mut from = 0;
    while let Some(found) = text[from..].find('<') {
        let at = from + found;
        let mut name = &text[at + 1..];
        if closing {
            name = name.strip_prefix('/').unwrap_or("");
        }
        if name.strip_prefix(tag).is_some_and(|after| after.starts_with('>')) {
            return Some(at);
        }
        from = at + 1;
    }
    None
}

/// `text` without terminal control sequences: ANSI escapes (CSI, OSC, two-byte escapes, as in
/// rule 3) and every other control character but tab and line feed (BEL, backspace, a carriage
/// return, C1 controls), which a terminal printing the text would obey. For text a person
/// types into memory (an owner's note).
pub fn strip_controls(text: &str) -> String {
    strip_ansi(text).chars().filter(|c| !c.is_control() || matches!(c, '\t' | '\n')).collect()
}

/// `text` without ANSI escape sequences (rule 3).
fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\u{1b}' {
            out.push(c);
            continue;
        }
        match chars.next() {
            // CSI: parameters and intermediates, then one final byte in `@`..=`~`.
            Some('[') => {
                for c in chars.by_ref() {
                    if ('@'..='~').contains(&c) {
                        break;
                    }
                }
            }
            // OSC: up to BEL or ST (`ESC \`).
            Some(']') => {
                while let Some(c) = chars.next() {
                    if c == '\u{7}' {
                        break;
                    }
                    if c == '\u{1b}' && chars.peek() == Some(&'\\') {
                        chars.next();
                        break;
                    }
                }
            }
            // A two-byte escape (or a lone ESC at the end).
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(text: &str) -> Option<String> {
        record_text(Role::User, text).map(Cow::into_owned)
    }

    #[test]
    fn claude_code_command_wrappers_are_not_records() {
        let clear = "<command-name>/clear</command-name>\n          <command-message>clear</command-message>\n          <command-args></command-args>";
        assert_eq!(user(clear), None);
        assert_eq!(user("<local-command-stdout></local-command-stdout>"), None);
        let caveat = "<local-command-caveat>Caveat: The messages below were generated by the user while running local commands.</local-command-caveat>";
        assert_eq!(user(caveat), None);
        assert_eq!(user("<bash-input>uv run ty check</bash-input>"), None);
    }

    #[test]
    fn context_blocks_are_stripped_and_the_prompt_kept() {
        let codex = "<environment_context>\n  <cwd>/srv/app</cwd>\n  <shell>zsh</shell>\n</environment_context>\nFix the login bug.";
        assert_eq!(user(codex).as_deref(), Some("Fix the login bug."));
        let reminder = "Use tabs.<system-reminder>The file was modified.</system-reminder>";
        assert_eq!(user(reminder).as_deref(), Some("Use tabs."));
        assert_eq!(
            record_text(Role::Assistant, "Tests pass. <system-reminder>x</system-reminder>")
                .as_deref(),
            Some("Tests pass.")
        );
        // An assistant may quote a tag: only the two tags above are removed from its text.
        let quoted = "Claude Code writes `<command-name>/x</command-name>` for a command.";
        assert_eq!(record_text(Role::Assistant, quoted).as_deref(), Some(quoted));
        // An unclosed tag is text.
        assert_eq!(
            user("I typed <command-name> by hand").as_deref(),
            Some("I typed <command-name> by hand")
        );
    }

    #[test]
    fn interrupts_ansi_and_acknowledgements() {
        assert_eq!(user("[Request interrupted by user for tool use]"), None);
        assert_eq!(user("[Request interrupted by user]"), None);
        assert_eq!(
            user("\u{1b}[1mContext Usage\u{1b}[22m \u{1b}[38;5;244m12k\u{1b}[39m").as_deref(),
            Some("Context Usage 12k")
        );
        assert_eq!(
            user("\u{1b}]8;;https://x.y\u{7}link\u{1b}]8;;\u{1b}\\").as_deref(),
            Some("link")
        );
        for ack in
            ["ok", "OK!", "Thanks.", "thank you", "continue", "ls", "👍", "...", "/model", "/exit"]
        {
            assert_eq!(user(ack), None, "{ack:?}");
        }
        for kept in ["ok, use Postgres", "no, the other file", "/srv/app is the root", "what else?"]
        {
            assert_eq!(user(kept).as_deref(), Some(kept), "{kept:?}");
        }
        assert_eq!(record_text(Role::Assistant, "Perfect"), None);
        assert_eq!(record_text(Role::Tool, "done"), None);
        assert!(matches!(
            record_text(Role::User, "  Plain text. "),
            Some(Cow::Borrowed("Plain text."))
        ));
    }
}
