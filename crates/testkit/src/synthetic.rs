//! A deterministic synthetic vocabulary for benchmarks: xorshift words drawn Zipf-like from
//! 8 000 three-syllable words, so term frequencies look like text (a few words everywhere, most
//! words rare) and no benchmark measures a corpus where every document shares its words.

/// A deterministic word generator (xorshift64) over the synthetic vocabulary.
#[derive(Clone, Debug)]
pub struct Words(pub u64);

impl Words {
    /// The next raw random number.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// One word: small vocabulary indexes are much more frequent (Zipf-like).
    pub fn word(&mut self) -> String {
        let r = self.next_u64() % 1_000_000;
        let index = (r * r / 1_000_000) % 8_000;
        word(index)
    }

    /// `n` words separated by spaces.
    pub fn sentence(&mut self, n: usize) -> String {
        (0..n).map(|_| self.word()).collect::<Vec<_>>().join(" ")
    }
}

/// The word with vocabulary index `index`.
pub fn word(index: u64) -> String {
    const SYLLABLES: [&str; 20] = [
        "ka", "lo", "mi", "ten", "ra", "su", "vo", "pel", "dan", "qui", "zor", "bel", "fi", "gu",
        "hal", "jo", "nu", "pra", "sel", "tor",
    ];
    let a = SYLLABLES[(index % 20) as usize];
    let b = SYLLABLES[((index / 20) % 20) as usize];
    let c = SYLLABLES[((index / 400) % 20) as usize];
    format!("{a}{b}{c}")
}
