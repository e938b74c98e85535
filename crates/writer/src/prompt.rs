//! Temporary prompt rendering (replaced by the prompts work).

/// One turn as the writer sees it.
pub struct Turn<'a> {
    /// The source ID.
    pub source_ref: &'a str,
    /// The speaker label.
    pub speaker: &'a str,
    /// The body.
    pub content: &'a str,
}

/// One compact JSON object per line.
pub fn turns_jsonl(turns: &[Turn<'_>]) -> String {
    turns
        .iter()
        .map(|t| {
            serde_json::json!({"ref": t.source_ref, "speaker": t.speaker, "content": t.content})
                .to_string()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The structure listing.
pub fn structure(files: &[(String, String)]) -> String {
    files.iter().map(|(p, _)| p.clone()).collect::<Vec<_>>().join("\n")
}

/// The system prompt.
pub fn system_prompt() -> &'static str {
    "You maintain a memory workspace."
}

/// The write task.
pub fn write_task(observed: &str, turns: &[Turn<'_>], structure: &str) -> String {
    format!(
        "Write.\n\n## Observed {observed}\n\n{}\n\nCurrent workspace structure:\n{structure}",
        turns_jsonl(turns)
    )
}

/// The organize task.
pub fn organize_task(topic_paths: &[String], structure: &str) -> String {
    format!("Organize {}\n\n{structure}", topic_paths.join(", "))
}

/// The repair task.
pub fn repair_task(error: &str, hint: Option<&str>, original_task: &str) -> String {
    format!("Rejected: {error} {}\n\n{original_task}", hint.unwrap_or_default())
}

/// The fix hint.
pub fn repair_hint(violations: &[(&str, &str)]) -> Option<String> {
    violations.first().map(|(code, _)| format!("Fix {code}."))
}
