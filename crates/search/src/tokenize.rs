//! The analyzer shared by indexing and querying: words lower-cased and reduced to their English
//! stem (Snowball), CJK runs as unigrams plus bigrams (Lucene `CJKAnalyzer` style), and the
//! stopword list of the relevance floor.
//!
//! A word is a run of Unicode letters or digits (Python's `[^\W_]+`: the underscore splits). Inside
//! a word, each maximal run of "unsegmented" characters (Han, kana, hangul) emits every character
//! and every adjacent pair; the rest of the word is one lower-cased token, stemmed with the
//! Snowball English stemmer (`painted`, `painting` and `paints` are all `paint`). So
//! `写入流程` yields `写 入 流 程 写入 入流 流程`, and a mixed word such as `ab成本` yields `ab`,
//! `成`, `本`, `成本` (the reference keeps a mixed word whole; splitting it finds more).
//!
//! Stopwords are recognised before stemming (`does` is a stopword; its stem `doe` is not looked
//! up), and a query keeps only its non-stopword terms: the index holds every word.

use std::borrow::Cow;

use frostem::{Algorithm, Stemmer};
use tantivy::tokenizer::{Token, TokenStream, Tokenizer};

/// The name the tokenizer is registered under in the index.
pub(crate) const TOKENIZER_NAME: &str = "scriptorium";

/// English stopwords and CJK function characters: a result must match at least one query term
/// outside this list (the relevance floor: see `docs/format.md#where-we-deliberately-differ`), and
/// these terms never count towards a match.
const STOPWORDS: &[&str] = &[
    "a", "about", "above", "after", "again", "all", "also", "am", "an", "and", "any", "are", "as",
    "at", "be", "been", "before", "being", "both", "but", "by", "can", "could", "did", "do",
    "does", "doing", "done", "during", "each", "else", "ever", "for", "from", "further", "had",
    "has", "have", "having", "he", "her", "here", "hers", "herself", "him", "himself", "his",
    "how", "i", "if", "in", "into", "is", "it", "its", "itself", "just", "kind", "me", "might",
    "many", "more", "most", "much", "my", "myself", "no", "nor", "not", "now", "of", "off", "on",
    "once", "only", "or", "other", "our", "ours", "out", "over", "own", "s", "same", "she",
    "should", "so", "some", "such", "t", "than", "that", "the", "their", "them", "then", "there",
    "these", "they", "this", "those", "through", "to", "too", "under", "until", "up", "us", "very",
    "was", "we", "were", "what", "when", "where", "which", "while", "who", "whom", "whose", "why",
    "will", "with", "would", "you", "your", "yours", "yourself", "ll", "re", "ve", "d", "m", "的",
    "了", "是", "在", "和", "与", "及", "或", "也", "就", "都", "而", "之", "其", "吗", "呢", "吧",
    "啊", "呀", "嗎", "着", "过", "个", "這", "这", "那", "么", "什", "我", "你", "他", "她", "它",
    "们", "們", "有", "把", "被", "从", "对", "为", "為", "于", "於", "上", "下", "中", "里", "不",
    "没", "很", "の", "は", "が", "を", "に", "で", "と", "も", "か", "な", "た", "て", "し", "い",
    "す", "ま", "だ", "이", "가", "은", "는", "을", "를", "의",
];

/// Whether `term` (already tokenized: lower-case) is a stopword.
pub(crate) fn is_stopword(term: &str) -> bool {
    STOPWORDS.contains(&term)
}

/// Han, kana and hangul: scripts written without spaces between words.
pub(crate) fn is_unsegmented(c: char) -> bool {
    matches!(
        u32::from(c),
        0x3400..=0x4DBF
            | 0x4E00..=0x9FFF
            | 0xF900..=0xFAFF
            | 0x2_0000..=0x2_A6DF
            | 0x3040..=0x30FF
            | 0xAC00..=0xD7AF
    )
}

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric()
}

/// Calls `emit(term, byte_from, byte_to)` for every term of `text`, in order: the analyzed
/// (stemmed) form of [`for_each_word`]'s tokens.
pub(crate) fn for_each_token(text: &str, mut emit: impl FnMut(&str, usize, usize)) {
    let stemmer = Stemmer::new(Algorithm::English);
    for_each_word(text, |word, from, to, cjk| {
        if cjk {
            emit(word, from, to);
        } else {
            emit(&stem(&stemmer, word), from, to);
        }
    });
}

/// The byte offset of the first token of `text` whose analyzed form is `term`. Only words that
/// begin with the term's first character are stemmed: a Snowball English stem keeps its word's
/// first character (words are split at apostrophes, the one prefix it removes).
pub(crate) fn find_term(text: &str, term: &str) -> Option<usize> {
    let stemmer = Stemmer::new(Algorithm::English);
    let first = term.chars().next()?;
    let mut found = None;
    for_each_word(text, |word, from, _, cjk| {
        if found.is_some() || !word.starts_with(first) {
            return;
        }
        if (cjk && word == term) || (!cjk && stem(&stemmer, word) == term) {
            found = Some(from);
        }
    });
    found
}

/// The English stem of a lower-cased word; words with digits stay whole (`3d`, `2024`).
fn stem<'a>(stemmer: &Stemmer, word: &'a str) -> Cow<'a, str> {
    if word.bytes().any(|b| b.is_ascii_digit()) { Cow::Borrowed(word) } else { stemmer.stem(word) }
}

/// Calls `emit(token, byte_from, byte_to, cjk)` for every lower-cased token of `text`, in
/// order, before stemming; `cjk` marks the unigrams and bigrams of unsegmented runs.
fn for_each_word(text: &str, mut emit: impl FnMut(&str, usize, usize, bool)) {
    let mut chars = text.char_indices().peekable();
    let mut lowered = String::new();
    while let Some(&(start, c)) = chars.peek() {
        if !is_word_char(c) {
            chars.next();
            continue;
        }
        if is_unsegmented(c) {
            // A CJK run: unigrams and bigrams.
            let mut prev: Option<(usize, char)> = None;
            while let Some(&(at, ch)) = chars.peek() {
                if !is_unsegmented(ch) {
                    break;
                }
                chars.next();
                let end = at + ch.len_utf8();
                emit(&text[at..end], at, end, true);
                if let Some((prev_at, _)) = prev {
                    emit(&text[prev_at..end], prev_at, end, true);
                }
                prev = Some((at, ch));
            }
            continue;
        }
        let mut end = start;
        while let Some(&(at, ch)) = chars.peek() {
            if !is_word_char(ch) || is_unsegmented(ch) {
                break;
            }
            chars.next();
            end = at + ch.len_utf8();
        }
        let word = &text[start..end];
        if word.chars().any(char::is_uppercase) {
            lowered.clear();
            lowered.extend(word.chars().flat_map(char::to_lowercase));
            emit(&lowered, start, end, false);
        } else {
            emit(word, start, end, false);
        }
    }
}

/// The distinct analyzed terms of a query's non-stopword words, in first-seen order.
pub(crate) fn query_terms(text: &str) -> Vec<String> {
    let stemmer = Stemmer::new(Algorithm::English);
    let mut terms: Vec<String> = Vec::new();
    for_each_word(text, |word, _, _, cjk| {
        if is_stopword(word) {
            return;
        }
        let term = if cjk { Cow::Borrowed(word) } else { stem(&stemmer, word) };
        if !terms.iter().any(|t| *t == term) {
            terms.push(term.into_owned());
        }
    });
    terms
}

/// The tantivy side of the tokenizer.
#[derive(Clone, Debug, Default)]
pub(crate) struct ScriptoriumTokenizer;

/// The tokens of one text, produced eagerly.
pub(crate) struct VecTokenStream {
    tokens: Vec<Token>,
    next: usize,
    /// Returned by `token()` before the first `advance()` or on an empty text.
    placeholder: Token,
}

impl Tokenizer for ScriptoriumTokenizer {
    type TokenStream<'a> = VecTokenStream;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> VecTokenStream {
        let mut tokens = Vec::new();
        for_each_token(text, |token, from, to| {
            let position = tokens.len();
            tokens.push(Token {
                offset_from: from,
                offset_to: to,
                position,
                text: token.to_owned(),
                position_length: 1,
            });
        });
        VecTokenStream { tokens, next: 0, placeholder: Token::default() }
    }
}

impl TokenStream for VecTokenStream {
    fn advance(&mut self) -> bool {
        if self.next < self.tokens.len() {
            self.next += 1;
            true
        } else {
            false
        }
    }

    fn token(&self) -> &Token {
        self.next.checked_sub(1).and_then(|at| self.tokens.get(at)).unwrap_or(&self.placeholder)
    }

    fn token_mut(&mut self) -> &mut Token {
        match self.next.checked_sub(1).and_then(|at| self.tokens.get_mut(at)) {
            Some(token) => token,
            None => &mut self.placeholder,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(text: &str) -> Vec<String> {
        let mut out = Vec::new();
        for_each_token(text, |t, _, _| out.push(t.to_owned()));
        out
    }

    #[test]
    fn latin_and_cjk() {
        assert_eq!(
            tokens("成本是 Hello_World café-2024"),
            ["成", "本", "成本", "是", "本是", "hello", "world", "café", "2024"]
        );
        assert_eq!(tokens("Painted paintings, PAINTS 3D"), ["paint", "paint", "paint", "3d"]);
        assert_eq!(tokens("ab成本"), ["ab", "成", "本", "成本"]);
        assert_eq!(tokens("写入流程"), ["写", "入", "写入", "流", "入流", "程", "流程"]);
    }

    #[test]
    fn terms_are_found_by_their_analyzed_form() {
        assert_eq!(find_term("We went Running daily", "run"), Some(8));
        assert_eq!(find_term("写入流程", "流程"), Some(6));
        assert_eq!(find_term("nothing here", "run"), None);
    }

    #[test]
    fn query_terms_drop_stopwords() {
        assert_eq!(query_terms("What is the Flask tracker? the flask"), ["flask", "tracker"]);
        assert!(query_terms("what is it").is_empty());
        // Stopwords are matched before stemming: `does` goes, `doe` (a deer) stays.
        assert_eq!(query_terms("does the doe run? running"), ["doe", "run"]);
    }
}
