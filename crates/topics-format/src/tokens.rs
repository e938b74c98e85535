//! Token counting with o200k_base, the encoding every budget in the workspace is measured in
//! (the 16 000-token write trigger, the 2 000-token core render).
//!
//! Key decision: text is counted as *ordinary* text, so special-token spellings such as
//! `<|endoftext|>` are split like any other characters instead of raising (the Python
//! implementation raised there; see `docs/format.md#where-we-deliberately-differ`). The encoder is
//! the process-wide tiktoken-rs singleton: it loads once (~135 ms) and is shared by every caller
//! afterwards.
//!
//! ```
//! use scriptorium_topics_format::tokens;
//!
//! assert_eq!(tokens::count(""), 0);
//! assert_eq!(tokens::count("hello"), 1);
//! assert!(tokens::count("<|endoftext|>") > 1);
//! ```

/// The number of o200k_base tokens in `text`, with special-token spellings counted as ordinary
/// text. Never fails and never panics on any input.
pub fn count(text: &str) -> usize {
    if text.is_empty() {
        return 0;
    }
    tiktoken_rs::o200k_base_singleton().count_ordinary(text)
}

#[cfg(test)]
mod tests {
    use super::count;

    #[test]
    fn empty_text_has_no_tokens() {
        assert_eq!(count(""), 0);
    }

    #[test]
    fn common_words_are_single_tokens() {
        assert_eq!(count("hello"), 1);
        assert_eq!(count(" world"), 1);
        assert_eq!(count("hello world"), 2);
    }

    #[test]
    fn special_token_text_is_ordinary_text() {
        let bpe = tiktoken_rs::o200k_base_singleton();
        let text = "before <|endoftext|> after";
        assert_eq!(count(text), bpe.encode_ordinary(text).len());
        // Counted as the special token it would be one token; as text it is several.
        assert!(count("<|endoftext|>") > 1);
        assert_eq!(count("<|endoftext|>"), bpe.encode_ordinary("<|endoftext|>").len());
    }

    #[test]
    fn counts_match_encode_ordinary_on_mixed_scripts() {
        let bpe = tiktoken_rs::o200k_base_singleton();
        for text in ["写入流程", "Grüße, 世界! 🎉", "a\r\nb\n\n  c", "x".repeat(1000).as_str()]
        {
            assert_eq!(count(text), bpe.encode_ordinary(text).len(), "{text:?}");
        }
    }
}
