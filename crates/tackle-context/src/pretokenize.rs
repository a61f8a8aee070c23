//! A hand-written pretokenizer: splits text into exactly the pieces that tiktoken's regexes
//! (run by `fancy_regex` inside `tiktoken-rs`) produce, without a regex engine.
//!
//! The regex engine is most of tiktoken's encoding time. Both patterns are alternations tried
//! leftmost-first with backtracking; every character is covered by some alternative and no
//! alternative matches the empty string, so the matches tile the text and the scanner only
//! has to answer "where does the match starting here end". Each alternative is decoded by hand
//! below, with the backtracking it implies spelled out.
//!
//! The Unicode classes (`\p{L}`, `\p{N}`, `\p{M}`, `\p{Lu}`…, `\s`) and the case-insensitive
//! letters of the contractions are taken from `regex-syntax`, the crate that compiles
//! tiktoken's regexes, so the two agree on every code point whatever Unicode version it ships.

use regex_syntax::hir::{Class, HirKind};

/// Which tiktoken pattern to reproduce.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pattern {
    /// `o200k_base` (`tiktoken_rs::O200K_BASE_PAT_STR`).
    O200k,
    /// `cl100k_base`, in the possessive form `tiktoken-rs` 0.12 uses:
    /// `'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s`
    Cl100k,
}

/// `\p{L}`.
const LETTER: u8 = 1;
/// `\p{N}`.
const NUMBER: u8 = 1 << 1;
/// `\p{M}`.
const MARK: u8 = 1 << 2;
/// `[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]`: o200k's "upper" class.
const UPPER: u8 = 1 << 3;
/// `[\p{Ll}\p{Lm}\p{Lo}\p{M}]`: o200k's "lower" class.
const LOWER: u8 = 1 << 4;
/// `\s` (Unicode White_Space).
const SPACE: u8 = 1 << 5;

/// Byte classes (`Classes::bytes`) add to the char classes above: `\r` or `\n`,
const NEWLINE: u16 = 1 << 6;
/// a byte of a non-ASCII char (its class is unknown from this byte alone),
const HIGH: u16 = 1 << 7;
/// and the end of the text.
const END: u16 = 1 << 8;

/// Code points per second-stage block of the class table.
const BLOCK: usize = 128;
/// One past the largest code point.
const CODE_POINTS: usize = 0x11_0000;

/// Per-code-point classes and case folds, built once from `regex-syntax`.
pub(crate) struct Classes {
    /// Classes of ASCII, looked up directly (the hot path for code and English prose).
    ascii: [u8; 128],
    /// Classes of each byte for the ASCII fast paths (`HIGH` for bytes of non-ASCII chars).
    bytes: [u16; 256],
    /// Block index of each 128-code-point block.
    blocks: Vec<u16>,
    /// Deduplicated blocks of class bits, `BLOCK` entries each.
    bits: Vec<u8>,
    /// Non-ASCII characters that match a contraction letter case-insensitively (`ſ` for `s`).
    folds: Vec<(char, u8)>,
}

impl std::fmt::Debug for Classes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Classes").field("blocks", &(self.bits.len() / BLOCK)).finish()
    }
}

/// The ranges of a one-class regex, or `None` if it does not compile to a Unicode class.
fn class_ranges(pattern: &str) -> Option<Vec<(char, char)>> {
    let hir = regex_syntax::parse(pattern).ok()?;
    match hir.kind() {
        HirKind::Class(Class::Unicode(class)) => Some(class.iter().map(|r| (r.start(), r.end())).collect()),
        HirKind::Literal(lit) => {
            let c = std::str::from_utf8(&lit.0).ok()?.chars().next()?;
            Some(vec![(c, c)])
        }
        _ => None,
    }
}

impl Classes {
    /// Builds the tables, or `None` if `regex-syntax` cannot provide a class (never expected).
    pub(crate) fn build() -> Option<Self> {
        let classes = [
            (r"\p{L}", LETTER),
            (r"\p{N}", NUMBER),
            (r"\p{M}", MARK),
            (r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]", UPPER),
            (r"[\p{Ll}\p{Lm}\p{Lo}\p{M}]", LOWER),
            (r"\s", SPACE),
        ];
        let mut all = vec![0u8; CODE_POINTS];
        for (pattern, bit) in classes {
            for (start, end) in class_ranges(pattern)? {
                for cp in start as usize..=end as usize {
                    *all.get_mut(cp)? |= bit;
                }
            }
        }
        let mut ascii = [0u8; 128];
        ascii.copy_from_slice(all.get(..128)?);
        let mut blocks = Vec::with_capacity(CODE_POINTS / BLOCK);
        let mut bits: Vec<u8> = Vec::new();
        let mut seen: std::collections::HashMap<&[u8], u16> = std::collections::HashMap::new();
        for block in all.chunks(BLOCK) {
            let index = match seen.get(block) {
                Some(&i) => i,
                None => {
                    let i = u16::try_from(bits.len() / BLOCK).ok()?;
                    bits.extend_from_slice(block);
                    seen.insert(block, i);
                    i
                }
            };
            blocks.push(index);
        }
        let mut folds = Vec::new();
        for letter in *b"stmdrevl" {
            let pattern = format!("(?i:{})", letter as char);
            for (start, end) in class_ranges(&pattern)? {
                folds.extend((start..=end).filter(|c| !c.is_ascii()).map(|c| (c, letter)));
            }
        }
        let mut bytes = [HIGH; 256];
        for (slot, class) in bytes.iter_mut().zip(ascii) {
            *slot = u16::from(class);
        }
        bytes[usize::from(b'\r')] |= NEWLINE;
        bytes[usize::from(b'\n')] |= NEWLINE;
        Some(Self { ascii, bytes, blocks, bits, folds })
    }

    #[inline]
    fn of(&self, c: u32) -> u8 {
        if c < 128 {
            return self.ascii[c as usize];
        }
        let block = self.blocks.get(c as usize / BLOCK).copied().unwrap_or(0) as usize;
        self.bits.get(block * BLOCK + c as usize % BLOCK).copied().unwrap_or(0)
    }

    /// Whether `c` matches the ASCII lowercase `letter` case-insensitively, as regex's `(?i)`.
    #[inline]
    fn folds_to(&self, c: u32, letter: u8) -> bool {
        if c < 128 {
            return c as u8 | 0x20 == letter;
        }
        self.folds.iter().any(|&(f, l)| f as u32 == c && l == letter)
    }

    /// Calls `f` with each piece of `text`, in order; the pieces concatenate to `text`.
    pub(crate) fn for_each_piece<'t>(&self, pattern: Pattern, text: &'t str, mut f: impl FnMut(&'t str)) {
        let b = text.as_bytes();
        let mut p = 0;
        while p < b.len() {
            let end = match pattern {
                Pattern::O200k => self.o200k_end(b, p),
                Pattern::Cl100k => self.cl100k_end(b, p),
            };
            // Both ends are char boundaries by construction; `get` keeps a bug from panicking.
            match text.get(p..end) {
                Some(piece) if end > p => f(piece),
                _ => {
                    f(text.get(p..).unwrap_or_default());
                    return;
                }
            }
            p = end;
        }
    }

    /// The pieces of `text` (for tests and diagnostics).
    #[cfg(test)]
    pub(crate) fn pieces<'t>(&self, pattern: Pattern, text: &'t str) -> Vec<&'t str> {
        let mut out = Vec::new();
        self.for_each_piece(pattern, text, |piece| out.push(piece));
        out
    }

    /// The class bits of the char at `i` and its length, or `(0, 0)` at the end.
    #[inline]
    fn at(&self, b: &[u8], i: usize) -> (u32, u8, usize) {
        match decode(b, i) {
            Some((c, len)) => (c, self.of(c), len),
            None => (u32::MAX, 0, 0),
        }
    }

    /// End of the maximal run, from `i`, of chars having any of `mask`.
    #[inline]
    fn run(&self, b: &[u8], mut i: usize, mask: u8) -> usize {
        while let Some((c, len)) = decode(b, i) {
            if self.of(c) & mask == 0 {
                break;
            }
            i += len;
        }
        i
    }

    /// End of the last char in `b[from..to]` having any of `mask`.
    fn last_with(&self, b: &[u8], from: usize, to: usize, mask: u8) -> Option<usize> {
        let mut end = to;
        while end > from {
            let mut start = end - 1;
            while start > from && b.get(start).is_some_and(|&x| x & 0xC0 == 0x80) {
                start -= 1;
            }
            let (_, bits, _) = self.at(b, start);
            if bits & mask != 0 {
                return Some(end);
            }
            end = start;
        }
        None
    }

    /// `(?i:'s|'t|'re|'ve|'m|'ll|'d)` at `i` (and cl100k's `'(?i:[sdmt]|ll|ve|re)`, the same
    /// language): the end of the contraction, if one starts at `i`.
    #[inline]
    fn contraction(&self, b: &[u8], i: usize) -> Option<usize> {
        if b.get(i) != Some(&b'\'') {
            return None;
        }
        let (c1, len1) = decode(b, i + 1)?;
        let after1 = i + 1 + len1;
        if [b's', b't', b'm', b'd'].iter().any(|&l| self.folds_to(c1, l)) {
            return Some(after1);
        }
        let (c2, len2) = decode(b, after1)?;
        let two = [(b'r', b'e'), (b'v', b'e'), (b'l', b'l')];
        two.iter().any(|&(x, y)| self.folds_to(c1, x) && self.folds_to(c2, y)).then_some(after1 + len2)
    }

    /// Whether a char with these bits is in `[^\r\n\p{L}\p{N}]`.
    #[inline]
    fn is_prefix(c: u32, bits: u8) -> bool {
        bits & (LETTER | NUMBER) == 0 && c != u32::from(b'\r') && c != u32::from(b'\n')
    }

    /// Whether a char with these bits is in `[^\s\p{L}\p{N}]`.
    #[inline]
    fn is_punct(bits: u8) -> bool {
        bits & (SPACE | LETTER | NUMBER) == 0
    }

    /// The byte class at `i`: `END` past the end.
    #[inline]
    fn byte(&self, b: &[u8], i: usize) -> u16 {
        b.get(i).map_or(END, |&x| self.bytes[usize::from(x)])
    }

    /// End of the run of bytes of class `mask` from `i`, or `None` if it stops on a non-ASCII
    /// char (which may or may not continue it: the general path decides).
    #[inline]
    fn ascii_run(&self, b: &[u8], mut i: usize, mask: u16) -> Option<usize> {
        loop {
            let class = self.byte(b, i);
            if class & mask == 0 {
                return (class & HIGH == 0).then_some(i);
            }
            i += 1;
        }
    }

    /// End of the run of `[^\s\p{L}\p{N}]` ASCII bytes from `i` (`None` as `ascii_run`).
    #[inline]
    fn ascii_punct_run(&self, b: &[u8], mut i: usize) -> Option<usize> {
        loop {
            let class = self.byte(b, i);
            if class & HIGH != 0 {
                return None;
            }
            if class & u16::from(SPACE | LETTER | NUMBER) != 0 || class & END != 0 {
                return Some(i);
            }
            i += 1;
        }
    }

    /// The end of a contraction at `i` (`'s`, `'RE`…), `Some(i)` if there is none, `None` if
    /// a non-ASCII char makes it undecidable here (`'ſ` is a contraction).
    #[inline]
    fn ascii_contraction(&self, b: &[u8], i: usize) -> Option<usize> {
        if b.get(i) != Some(&b'\'') {
            return Some(i);
        }
        let c1 = b.get(i + 1).map_or(0, |x| x | 0x20);
        if self.byte(b, i + 1) & HIGH != 0 {
            return None;
        }
        if matches!(c1, b's' | b't' | b'm' | b'd') {
            return Some(i + 2);
        }
        if matches!(c1, b'r' | b'v' | b'l') {
            if self.byte(b, i + 2) & HIGH != 0 {
                return None;
            }
            let c2 = b.get(i + 2).map_or(0, |x| x | 0x20);
            if matches!((c1, c2), (b'r', b'e') | (b'v', b'e') | (b'l', b'l')) {
                return Some(i + 3);
            }
        }
        Some(i)
    }

    /// `\p{N}{1,3}` over ASCII digits from `p` (a digit).
    #[inline]
    fn ascii_numbers(&self, b: &[u8], p: usize) -> Option<usize> {
        let mut e = p + 1;
        for _ in 0..2 {
            let class = self.byte(b, e);
            if class & HIGH != 0 {
                return None;
            }
            if class & u16::from(NUMBER) == 0 {
                break;
            }
            e += 1;
        }
        Some(e)
    }

    /// The whitespace alternatives over an ASCII run from `p` (a space): `newline_wins` is
    /// o200k's order (`\s*[\r\n]+` first), else cl100k's (`\s++$` first).
    #[inline]
    fn ascii_spaces(&self, b: &[u8], p: usize, newline_wins: bool) -> Option<usize> {
        let mut e = p;
        let mut newline_end = None;
        loop {
            let class = self.byte(b, e);
            if class & HIGH != 0 {
                return None;
            }
            if class & u16::from(SPACE) == 0 {
                break;
            }
            e += 1;
            if class & NEWLINE != 0 {
                newline_end = Some(e);
            }
        }
        let run = SpaceRun { end: e, last_start: e - 1, chars: e - p, newline_end };
        if !newline_wins && e == b.len() {
            return Some(e);
        }
        Some(run.newline_end.unwrap_or_else(|| run.lookahead_end(b.len())))
    }

    /// The o200k match at `p` when ASCII bytes alone decide it (most of code and English),
    /// `None` to take the general path. The same alternatives as `o200k_end`, where upper is
    /// `A-Z`, lower `a-z`, and no mark can occur.
    #[inline]
    fn o200k_ascii(&self, b: &[u8], p: usize) -> Option<usize> {
        let f0 = self.byte(b, p);
        if f0 & HIGH != 0 {
            return None;
        }
        let letter = u16::from(LETTER);
        // The letter alternatives: an optional prefix, `[A-Z]*[a-z]+` or `[A-Z]+[a-z]*`.
        let q = if f0 & letter != 0 {
            Some(p)
        } else if f0 & (letter | u16::from(NUMBER) | NEWLINE) == 0 {
            let f1 = self.byte(b, p + 1);
            if f1 & HIGH != 0 {
                return None;
            }
            (f1 & letter != 0).then_some(p + 1)
        } else {
            None
        };
        if let Some(q) = q {
            let r = self.ascii_run(b, q, u16::from(UPPER))?;
            let end = self.ascii_run(b, r, u16::from(LOWER))?;
            return self.ascii_contraction(b, end);
        }
        if f0 & u16::from(NUMBER) != 0 {
            return self.ascii_numbers(b, p);
        }
        // ` ?[^\s\p{L}\p{N}]+[\r\n/]*`
        let start = if b.get(p) == Some(&b' ') { p + 1 } else { p };
        let fs = self.byte(b, start);
        if fs & HIGH != 0 {
            return None;
        }
        if fs & (u16::from(SPACE | LETTER | NUMBER) | END) == 0 {
            let mut e = self.ascii_punct_run(b, start)?;
            while matches!(b.get(e), Some(b'\r' | b'\n' | b'/')) {
                e += 1;
            }
            return Some(e);
        }
        self.ascii_spaces(b, p, true)
    }

    /// The cl100k match at `p` when ASCII bytes alone decide it, else `None` (see
    /// `o200k_ascii`).
    #[inline]
    fn cl100k_ascii(&self, b: &[u8], p: usize) -> Option<usize> {
        let f0 = self.byte(b, p);
        if f0 & HIGH != 0 {
            return None;
        }
        let letter = u16::from(LETTER);
        if b.get(p) == Some(&b'\'') {
            let end = self.ascii_contraction(b, p)?;
            if end > p {
                return Some(end);
            }
        }
        if f0 & letter != 0 {
            return self.ascii_run(b, p, letter);
        }
        if f0 & (letter | u16::from(NUMBER) | NEWLINE) == 0 {
            let f1 = self.byte(b, p + 1);
            if f1 & HIGH != 0 {
                return None;
            }
            if f1 & letter != 0 {
                return self.ascii_run(b, p + 1, letter);
            }
        }
        if f0 & u16::from(NUMBER) != 0 {
            return self.ascii_numbers(b, p);
        }
        // ` ?[^\s\p{L}\p{N}]++[\r\n]*+`
        let start = if b.get(p) == Some(&b' ') { p + 1 } else { p };
        let fs = self.byte(b, start);
        if fs & HIGH != 0 {
            return None;
        }
        if fs & (u16::from(SPACE | LETTER | NUMBER) | END) == 0 {
            let mut e = self.ascii_punct_run(b, start)?;
            while matches!(b.get(e), Some(b'\r' | b'\n')) {
                e += 1;
            }
            return Some(e);
        }
        self.ascii_spaces(b, p, false)
    }

    /// End of the o200k match starting at `p` (`p < b.len()`).
    fn o200k_end(&self, b: &[u8], p: usize) -> usize {
        if let Some(end) = self.o200k_ascii(b, p) {
            return end;
        }
        let (c0, f0, l0) = self.at(b, p);
        if let Some(end) = self.o200k_word(b, p, c0, f0, l0) {
            return end;
        }
        // \p{N}{1,3}
        if f0 & NUMBER != 0 {
            return self.numbers(b, p + l0);
        }
        // ` ?[^\s\p{L}\p{N}]+[\r\n/]*`
        if let Some(start) = self.punct_start(b, p, c0, f0, l0) {
            let mut e = self.run_punct(b, start);
            while matches!(b.get(e), Some(b'\r' | b'\n' | b'/')) {
                e += 1;
            }
            return e;
        }
        // Only whitespace is left: `\s*[\r\n]+|\s+(?!\S)|\s+`.
        let run = self.space_run(b, p);
        if let Some(end) = run.newline_end {
            // `\s*` backtracks to the last newline of the run, `[\r\n]+` takes it.
            return end;
        }
        run.lookahead_end(b.len())
    }

    /// o200k's two letter alternatives:
    /// `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:…)?` then
    /// `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:…)?`.
    #[inline]
    fn o200k_word(&self, b: &[u8], p: usize, c0: u32, f0: u8, l0: usize) -> Option<usize> {
        let prefix = Self::is_prefix(c0, f0);
        if !prefix && f0 & (UPPER | LOWER) == 0 {
            return None;
        }
        // Backtracking order of the first alternative: the optional prefix is the outermost
        // choice (taken first, given back last); for each, `U*` is given back one char at a
        // time until `L+` (greedy) can match at least one char.
        let starts = [prefix.then_some(p + l0), Some(p)];
        for q in starts.into_iter().flatten() {
            let r = self.run(b, q, UPPER);
            let (_, fr, _) = self.at(b, r);
            let end =
                if fr & LOWER != 0 { Some(self.run(b, r, LOWER)) } else { self.last_with(b, q, r, LOWER) };
            if let Some(end) = end {
                return Some(self.contraction(b, end).unwrap_or(end));
            }
        }
        // The second alternative: `U+` then `L*` (which cannot fail).
        for q in starts.into_iter().flatten() {
            let (_, fq, _) = self.at(b, q);
            if fq & UPPER != 0 {
                let end = self.run(b, self.run(b, q, UPPER), LOWER);
                return Some(self.contraction(b, end).unwrap_or(end));
            }
        }
        None
    }

    /// End of `\p{N}{1,3}` whose first char ends at `i`.
    #[inline]
    fn numbers(&self, b: &[u8], mut i: usize) -> usize {
        for _ in 0..2 {
            let (_, bits, len) = self.at(b, i);
            if bits & NUMBER == 0 {
                break;
            }
            i += len;
        }
        i
    }

    /// Where `[^\s\p{L}\p{N}]+` starts for ` ?[^\s\p{L}\p{N}]+…` at `p`, if it matches.
    #[inline]
    fn punct_start(&self, b: &[u8], p: usize, c0: u32, f0: u8, l0: usize) -> Option<usize> {
        if c0 == u32::from(b' ') {
            let (_, f1, l1) = self.at(b, p + 1);
            return (l1 > 0 && Self::is_punct(f1)).then_some(p + 1);
        }
        (l0 > 0 && Self::is_punct(f0)).then_some(p)
    }

    /// End of the maximal run of `[^\s\p{L}\p{N}]` from `i`.
    #[inline]
    fn run_punct(&self, b: &[u8], mut i: usize) -> usize {
        loop {
            let (_, bits, len) = self.at(b, i);
            if len == 0 || !Self::is_punct(bits) {
                return i;
            }
            i += len;
        }
    }

    /// The maximal whitespace run from `p`.
    fn space_run(&self, b: &[u8], p: usize) -> SpaceRun {
        let mut run = SpaceRun { end: p, last_start: p, chars: 0, newline_end: None };
        loop {
            let (c, bits, len) = self.at(b, run.end);
            if len == 0 || bits & SPACE == 0 {
                return run;
            }
            run.last_start = run.end;
            run.end += len;
            run.chars += 1;
            if c == u32::from(b'\r') || c == u32::from(b'\n') {
                run.newline_end = Some(run.end);
            }
        }
    }

    /// End of the cl100k match starting at `p` (`p < b.len()`).
    fn cl100k_end(&self, b: &[u8], p: usize) -> usize {
        if let Some(end) = self.cl100k_ascii(b, p) {
            return end;
        }
        let (c0, f0, l0) = self.at(b, p);
        // '(?i:[sdmt]|ll|ve|re)
        if let Some(end) = self.contraction(b, p) {
            return end;
        }
        // [^\r\n\p{L}\p{N}]?+\p{L}++ (possessive, but giving the prefix back could not help:
        // a prefix char is never a letter).
        if f0 & LETTER != 0 {
            return self.run(b, p, LETTER);
        }
        if Self::is_prefix(c0, f0) {
            let (_, f1, _) = self.at(b, p + l0);
            if f1 & LETTER != 0 {
                return self.run(b, p + l0, LETTER);
            }
        }
        // \p{N}{1,3}+
        if f0 & NUMBER != 0 {
            return self.numbers(b, p + l0);
        }
        // ` ?[^\s\p{L}\p{N}]++[\r\n]*+`
        if let Some(start) = self.punct_start(b, p, c0, f0, l0) {
            let mut e = self.run_punct(b, start);
            while matches!(b.get(e), Some(b'\r' | b'\n')) {
                e += 1;
            }
            return e;
        }
        // Only whitespace is left: `\s++$|\s*[\r\n]|\s+(?!\S)|\s`.
        let run = self.space_run(b, p);
        if run.end == b.len() {
            return run.end;
        }
        if let Some(end) = run.newline_end {
            return end;
        }
        run.lookahead_end(b.len())
    }
}

/// A maximal run of whitespace.
struct SpaceRun {
    /// End of the run.
    end: usize,
    /// Start of its last char.
    last_start: usize,
    /// Chars in the run.
    chars: usize,
    /// End of its last `\r` or `\n`.
    newline_end: Option<usize>,
}

impl SpaceRun {
    /// `\s+(?!\S)` then `\s+` (or `\s`): the whole run at the end of the text; else, when it
    /// has two chars or more, all but the last one (which is followed by a non-space); else
    /// the single char.
    fn lookahead_end(&self, len: usize) -> usize {
        if self.end == len || self.chars < 2 { self.end } else { self.last_start }
    }
}

/// The char at `i` of valid UTF-8 `b`, and its length; `None` at the end.
#[inline]
fn decode(b: &[u8], i: usize) -> Option<(u32, usize)> {
    let b0 = *b.get(i)?;
    if b0 < 0x80 {
        return Some((u32::from(b0), 1));
    }
    let cont = |k: usize| u32::from(b.get(i + k).copied().unwrap_or(0) & 0x3F);
    Some(if b0 < 0xE0 {
        ((u32::from(b0 & 0x1F) << 6) | cont(1), 2)
    } else if b0 < 0xF0 {
        ((u32::from(b0 & 0x0F) << 12) | (cont(1) << 6) | cont(2), 3)
    } else {
        ((u32::from(b0 & 0x07) << 18) | (cont(1) << 12) | (cont(2) << 6) | cont(3), 4)
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use std::sync::OnceLock;

    use fancy_regex::Regex;
    use proptest::prelude::*;

    use super::*;

    /// `cl100k_base`'s pattern as `tiktoken-rs` 0.12 compiles it (`tiktoken_ext/openai_public.rs`).
    const CL100K_PAT: &str = r"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s";

    pub(crate) fn classes() -> &'static Classes {
        static CLASSES: OnceLock<Classes> = OnceLock::new();
        CLASSES.get_or_init(|| Classes::build().expect("classes"))
    }

    fn reference(pattern: Pattern) -> &'static Regex {
        static O200K: OnceLock<Regex> = OnceLock::new();
        static CL100K: OnceLock<Regex> = OnceLock::new();
        match pattern {
            Pattern::O200k => {
                O200K.get_or_init(|| Regex::new(tiktoken_rs::O200K_BASE_PAT_STR).expect("o200k"))
            }
            Pattern::Cl100k => CL100K.get_or_init(|| Regex::new(CL100K_PAT).expect("cl100k")),
        }
    }

    /// The pieces tiktoken's regex gives (what `encode_ordinary` iterates over).
    fn regex_pieces(pattern: Pattern, text: &str) -> Vec<&str> {
        reference(pattern).find_iter(text).map(|m| m.expect("regex").as_str()).collect()
    }

    /// Asserts the scanner splits `text` exactly as the regex does, for both patterns
    /// (showing the first differing piece and its neighbours, not the whole of a long text).
    pub(crate) fn assert_same_pieces(text: &str) {
        for pattern in [Pattern::O200k, Pattern::Cl100k] {
            let expected = regex_pieces(pattern, text);
            let got = classes().pieces(pattern, text);
            if got != expected {
                let i = got.iter().zip(&expected).take_while(|(g, e)| g == e).count();
                let from = i.saturating_sub(3);
                panic!(
                    "{pattern:?} pieces differ at piece {i} of {text:?}\n  scanner: {:?}\n    regex: {:?}",
                    &got[from..got.len().min(i + 3)],
                    &expected[from..expected.len().min(i + 3)],
                );
            }
        }
    }

    /// One or more chars of each class the patterns distinguish, and the contraction letters.
    const ALPHABET: &[char] = &[
        'a', 'z', 'A', 'Z', 's', 'S', 't', 'T', 'l', 'L', 'r', 'R', 'e', 'E', 'v', 'd', 'm', 'M', '\'', 'ſ',
        '\u{212A}', 'ǅ', 'ʰ', '中', 'é', 'É', '\u{301}', '\u{903}', '\u{20DD}', '1', '٣', 'Ⅻ', '½', ' ',
        '\t', '\n', '\r', '\u{a0}', '\u{2028}', '\u{3000}', '\u{85}', '\u{b}', '\u{c}', '.', '/', '"', '😀',
        '\u{200b}', '_', '\u{ad}',
    ];

    #[test]
    fn every_string_of_up_to_three_chars_splits_like_the_regex() {
        let mut text = String::new();
        for &a in ALPHABET {
            for &b in ALPHABET {
                text.clear();
                text.extend([a, b]);
                assert_same_pieces(&text);
                for &c in ALPHABET {
                    text.clear();
                    text.extend([a, b, c]);
                    assert_same_pieces(&text);
                }
            }
        }
    }

    #[test]
    fn every_string_of_four_chars_from_the_tricky_classes_splits_like_the_regex() {
        // Upper, lower, title, modifier, other letter, marks, prefix chars, spaces, newlines.
        const TRICKY: &[char] =
            &['a', 'A', 'ǅ', 'ʰ', '中', '\u{301}', '\'', 's', '1', ' ', '\t', '\n', '\r', '.', '/', '\u{a0}'];
        let mut text = String::new();
        for &a in TRICKY {
            for &b in TRICKY {
                for &c in TRICKY {
                    for &d in TRICKY {
                        text.clear();
                        text.extend([a, b, c, d]);
                        assert_same_pieces(&text);
                    }
                }
            }
        }
    }

    #[test]
    fn the_empty_text_has_no_pieces() {
        assert!(classes().pieces(Pattern::O200k, "").is_empty());
        assert!(classes().pieces(Pattern::Cl100k, "").is_empty());
    }

    #[test]
    fn known_tricky_splits() {
        for text in [
            "\u{301}AB",
            "\u{301}.",
            "ABc's",
            "ǅemal'S",
            "don'ſ",
            "X'LL'd're",
            "  \n  x",
            "a \n\n \t",
            "x   \n",
            "\r\n\r\n",
            " ./\n/\n//x",
            "12345 ١٢٣٤٥",
            "a\u{3000}b\u{a0}c\u{2028}d",
            "\u{85}\u{85}x",
        ] {
            assert_same_pieces(text);
        }
    }

    /// Every code point gets the classes the regex engine gives it: a run of `\p{L}` (or …) in
    /// the text of all code points ends exactly where the table says.
    #[test]
    fn class_tables_agree_with_the_regex_engine_on_every_code_point() {
        let all: String = (0..=0x10FFFFu32).filter_map(char::from_u32).collect();
        let cases = [
            (r"\p{L}+", LETTER),
            (r"\p{N}+", NUMBER),
            (r"\p{M}+", MARK),
            (r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+", UPPER),
            (r"[\p{Ll}\p{Lm}\p{Lo}\p{M}]+", LOWER),
            (r"\s+", SPACE),
        ];
        let c = classes();
        for (pattern, bit) in cases {
            let re = Regex::new(pattern).expect("pattern");
            let mut expected = vec![false; 0x110000];
            for m in re.find_iter(&all) {
                for ch in m.expect("match").as_str().chars() {
                    expected[ch as usize] = true;
                }
            }
            for ch in all.chars() {
                assert_eq!(
                    c.of(ch as u32) & bit != 0,
                    expected[ch as usize],
                    "{pattern} on U+{:04X}",
                    ch as u32
                );
            }
        }
        for letter in "stmdrevl".chars() {
            let re = Regex::new(&format!("(?i){letter}")).expect("pattern");
            let matched: Vec<char> =
                re.find_iter(&all).flat_map(|m| m.expect("match").as_str().chars()).collect();
            for ch in all.chars() {
                let expected = matched.contains(&ch);
                assert_eq!(
                    c.folds_to(ch as u32, letter as u8),
                    expected,
                    "(?i){letter} on U+{:04X}",
                    ch as u32
                );
            }
        }
    }

    /// Fragments that meet at interesting boundaries: contractions in any case, runs of each
    /// kind of space, marks, titlecase and modifier letters, numbers of every kind.
    const FRAGMENTS: &[&str] = &[
        "a",
        "Z",
        "hello",
        "World",
        "HELLO",
        "camelCase",
        "snake_case",
        "'s",
        "'S",
        "'t",
        "'re",
        "'RE",
        "'Ve",
        "'m",
        "'ll",
        "'LL",
        "'d",
        "'",
        "''",
        "don't",
        "I'M",
        "ſ",
        "ǅ",
        "ǅemal",
        "ʰ",
        "ʰa",
        "中文",
        "日本語",
        "é",
        "e\u{301}",
        "\u{301}",
        "\u{903}",
        "A\u{301}B",
        "Привет",
        "МИР",
        "🚀",
        "😀😀",
        "👨\u{200d}👩\u{200d}👧",
        " ",
        "  ",
        "   ",
        "\t",
        "\n",
        "\r",
        "\r\n",
        "\n\n",
        " \n ",
        "\u{a0}",
        "\u{3000}",
        "\u{2028}",
        "\u{85}",
        "\u{b}",
        "\u{c}",
        "1",
        "12",
        "123",
        "1234567",
        "٣",
        "Ⅻ",
        "½",
        "3.14",
        ".",
        ",",
        "!",
        "?",
        "/",
        "//",
        "\\",
        "(",
        ")",
        "{",
        "}",
        "[",
        "]",
        "<",
        ">",
        "=",
        "==",
        "->",
        "::",
        "\"",
        "#",
        "$",
        "%",
        "&",
        "*",
        "+",
        "-",
        "_",
        "@",
        "~",
        "`",
        "|",
        "\u{200b}",
        "\u{ad}",
        "\u{feff}",
    ];

    fn fragment_text() -> impl Strategy<Value = String> {
        prop::collection::vec(prop::sample::select(FRAGMENTS), 0..40).prop_map(|v| v.concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn random_fragment_text_splits_like_the_regex(text in fragment_text()) {
            assert_same_pieces(&text);
        }

        #[test]
        fn random_unicode_text_splits_like_the_regex(text in "\\PC{0,40}|[\\s\\S]{0,40}") {
            assert_same_pieces(&text);
        }
    }

    #[test]
    fn corpora_split_like_the_regex() {
        for text in crate::bpe::tests::corpora() {
            assert_same_pieces(&text);
        }
    }
}
