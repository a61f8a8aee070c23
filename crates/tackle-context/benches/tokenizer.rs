//! Token counting throughput on ~4 MB of distinct text (code, prose, JSON, logs, some
//! non-ASCII), first count in a fresh process, against `tiktoken_rs::CoreBPE::encode_ordinary`.
//!
//! `cargo bench -p tackle-context --bench tokenizer`
//!
//! Each figure comes from its own child process (this binary re-run with `--child`), so no
//! cache warmed by an earlier measurement (the piece cache, the content-hash memo) helps it:
//! the "first" figure is an honest first count. Vocabulary loading is timed apart. The "warm"
//! figure counts a second, different corpus in the same process after the first one (so the
//! piece cache holds the frequent pieces, but every text is new to the content-hash memo).

use std::process::Command;
use std::time::Instant;

use tackle_context::{Encoding, TokenCounter};

/// Bytes of text per corpus.
const CORPUS_BYTES: usize = 4 << 20;
/// Processes per figure; the median is reported.
const RUNS: usize = 3;

/// A small deterministic generator (xorshift64*), so every run counts the same text.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        // Squaring the uniform draw skews towards the front: frequent words come first.
        let u = self.below(1 << 16) as f64 / f64::from(1 << 16);
        items[((u * u) * items.len() as f64) as usize]
    }
}

const WORDS: &[&str] = &[
    "the",
    "of",
    "and",
    "to",
    "a",
    "in",
    "is",
    "that",
    "for",
    "it",
    "as",
    "was",
    "with",
    "be",
    "by",
    "on",
    "not",
    "he",
    "this",
    "are",
    "or",
    "his",
    "from",
    "at",
    "which",
    "but",
    "have",
    "an",
    "they",
    "you",
    "were",
    "their",
    "one",
    "all",
    "we",
    "can",
    "her",
    "has",
    "there",
    "been",
    "if",
    "more",
    "when",
    "will",
    "would",
    "who",
    "so",
    "no",
    "context",
    "token",
    "budget",
    "session",
    "request",
    "model",
    "compaction",
    "window",
    "summary",
    "message",
    "result",
    "through",
    "between",
    "however",
    "because",
    "government",
    "development",
    "information",
    "particularly",
    "nevertheless",
    "straightforward",
    "configuration",
    "asynchronous",
    "implementation",
    "responsibility",
    "infrastructure",
];
const IDENTS: &[&str] = &[
    "self",
    "count",
    "text",
    "len",
    "value",
    "result",
    "items",
    "config",
    "buffer",
    "index",
    "state",
    "request",
    "response",
    "handle",
    "token_count",
    "max_tokens",
    "parse_args",
    "HashMap",
    "Vec",
    "String",
    "Option",
    "Result",
    "encode_ordinary",
    "TokenCounter",
    "ctx",
    "tmp",
    "i",
    "j",
    "n",
];
const NON_ASCII: &[&str] = &[
    "Привет",
    "мир",
    "контекст",
    "токены",
    "你好",
    "世界",
    "上下文",
    "令牌",
    "こんにちは",
    "トークン",
    "café",
    "naïve",
    "über",
    "façade",
    "Ελληνικά",
    "مرحبا",
    "שלום",
    "🚀",
    "✅",
    "😀",
    "—",
    "…",
    "“quoted”",
];

/// A made-up word from syllables: many are not tokens, so BPE merges run on them.
fn made_up(rng: &mut Rng) -> String {
    const SYL: &[&str] =
        &["ka", "lo", "mi", "tre", "ven", "dor", "qua", "sil", "nex", "ur", "bra", "tho", "zen", "pli"];
    (0..1 + rng.below(4)).map(|_| SYL[rng.below(SYL.len())]).collect()
}

fn word(rng: &mut Rng) -> String {
    match rng.below(20) {
        0..=1 => made_up(rng),
        2 => rng.pick(NON_ASCII).to_string(),
        3 => rng.below(100_000).to_string(),
        _ => rng.pick(WORDS).to_string(),
    }
}

fn prose(rng: &mut Rng, out: &mut String) {
    for _ in 0..3 + rng.below(6) {
        let mut sentence = String::new();
        for i in 0..5 + rng.below(20) {
            if i > 0 {
                sentence.push(' ');
            }
            let w = word(rng);
            if i == 0 {
                let mut chars = w.chars();
                if let Some(c) = chars.next() {
                    sentence.extend(c.to_uppercase());
                    sentence.push_str(chars.as_str());
                }
            } else {
                sentence.push_str(&w);
            }
            if rng.below(12) == 0 {
                sentence.push_str([",", ";", " -", "'s", "'re", ":"][rng.below(6)]);
            }
        }
        out.push_str(&sentence);
        out.push_str([". ", "! ", "? ", ".\n", ".\n\n"][rng.below(5)]);
    }
    out.push('\n');
}

fn ident(rng: &mut Rng) -> String {
    match rng.below(4) {
        0 => format!("{}_{}", rng.pick(IDENTS), made_up(rng)),
        1 => format!("{}{}", rng.pick(IDENTS), rng.below(100)),
        _ => rng.pick(IDENTS).to_string(),
    }
}

fn code(rng: &mut Rng, out: &mut String) {
    let name = ident(rng);
    if rng.below(2) == 0 {
        out.push_str(&format!(
            "/// Computes the {} of {}.\npub fn {name}(",
            rng.pick(WORDS),
            rng.pick(WORDS)
        ));
        out.push_str(&format!(
            "{}: &{}, {}: usize) -> Result<{}, Error> {{\n",
            ident(rng),
            ident(rng),
            ident(rng),
            ident(rng)
        ));
        for _ in 0..2 + rng.below(10) {
            let indent = "    ".repeat(1 + rng.below(3));
            match rng.below(5) {
                0 => {
                    out.push_str(&format!("{indent}let {} = {}.{}()?;\n", ident(rng), ident(rng), ident(rng)))
                }
                1 => out.push_str(&format!(
                    "{indent}if {} > {} {{ return Ok({}); }}\n",
                    ident(rng),
                    rng.below(1000),
                    ident(rng)
                )),
                2 => out.push_str(&format!(
                    "{indent}// {} {} {}\n",
                    rng.pick(WORDS),
                    rng.pick(WORDS),
                    made_up(rng)
                )),
                3 => out.push_str(&format!(
                    "{indent}{}.insert(\"{}\".to_string(), {});\n",
                    ident(rng),
                    made_up(rng),
                    rng.below(1 << 20)
                )),
                _ => out.push_str(&format!(
                    "{indent}for {} in 0..{} {{ {} += {}[{}]; }}\n",
                    ident(rng),
                    rng.below(64),
                    ident(rng),
                    ident(rng),
                    ident(rng)
                )),
            }
        }
        out.push_str("    Ok(())\n}\n\n");
    } else {
        out.push_str(&format!("def {name}({}, {}={}):\n", ident(rng), ident(rng), rng.below(10)));
        out.push_str(&format!(
            "    \"\"\"{} {} {}.\"\"\"\n",
            rng.pick(WORDS),
            rng.pick(WORDS),
            rng.pick(WORDS)
        ));
        for _ in 0..2 + rng.below(8) {
            let indent = "    ".repeat(1 + rng.below(3));
            match rng.below(4) {
                0 => out.push_str(&format!(
                    "{indent}{} = [{} for {} in range({})]\n",
                    ident(rng),
                    ident(rng),
                    ident(rng),
                    rng.below(500)
                )),
                1 => out.push_str(&format!(
                    "{indent}if not {}:\n{indent}    raise ValueError(f\"bad {{{}}}\")\n",
                    ident(rng),
                    ident(rng)
                )),
                2 => out.push_str(&format!(
                    "{indent}return {}.get('{}', {})\n",
                    ident(rng),
                    made_up(rng),
                    rng.below(99)
                )),
                _ => out.push_str(&format!("{indent}# {} {}\n", rng.pick(WORDS), made_up(rng))),
            }
        }
        out.push('\n');
    }
}

fn json(rng: &mut Rng, out: &mut String) {
    out.push_str("{\n");
    for i in 0..3 + rng.below(10) {
        if i > 0 {
            out.push_str(",\n");
        }
        let key = ident(rng);
        match rng.below(5) {
            0 => out.push_str(&format!("  \"{key}\": {}", rng.below(1 << 30))),
            1 => out.push_str(&format!("  \"{key}\": {}.{}", rng.below(1000), rng.below(100_000))),
            2 => out.push_str(&format!("  \"{key}\": \"{:016x}-{:08x}\"", rng.next(), rng.next() as u32)),
            3 => out.push_str(&format!("  \"{key}\": [\"{}\", \"{}\", null, true]", word(rng), word(rng))),
            _ => out.push_str(&format!("  \"{key}\": \"{} {} {}\"", word(rng), word(rng), word(rng))),
        }
    }
    out.push_str("\n}\n");
}

fn log(rng: &mut Rng, out: &mut String) {
    for _ in 0..3 + rng.below(10) {
        out.push_str(&format!(
            "2025-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z {} {}::{}: {} {} id={:08x} elapsed={}ms\n",
            1 + rng.below(12),
            1 + rng.below(28),
            rng.below(24),
            rng.below(60),
            rng.below(60),
            rng.below(1000),
            ["INFO", "WARN", "DEBUG", "ERROR"][rng.below(4)],
            ident(rng),
            ident(rng),
            rng.pick(WORDS),
            made_up(rng),
            rng.next() as u32,
            rng.below(5000),
        ));
    }
    if rng.below(8) == 0 {
        out.push_str(&" ".repeat(rng.below(200)));
        out.push_str(&"0123456789".repeat(rng.below(20)));
        out.push('\n');
    }
}

/// Prose in other scripts (Cyrillic, CJK, Greek…): the scanner's non-ASCII path, and the long
/// letter runs of scripts written without spaces.
fn foreign(rng: &mut Rng, out: &mut String) {
    for i in 0..10 + rng.below(40) {
        if i > 0 && rng.below(3) > 0 {
            out.push(' ');
        }
        out.push_str(if rng.below(4) == 0 { rng.pick(WORDS) } else { rng.pick(NON_ASCII) });
        if rng.below(8) == 0 {
            out.push_str(["，", "。", ", ", ". ", "!\n"][rng.below(5)]);
        }
    }
    out.push('\n');
}

/// Documents (a few hundred bytes to a few KB each) adding up to `CORPUS_BYTES`.
fn corpus(seed: u64) -> Vec<String> {
    let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let mut docs = Vec::new();
    let mut total = 0;
    while total < CORPUS_BYTES {
        let mut doc = String::new();
        for _ in 0..1 + rng.below(8) {
            match rng.below(13) {
                0..=2 => prose(&mut rng, &mut doc),
                3..=5 => code(&mut rng, &mut doc),
                6..=8 => json(&mut rng, &mut doc),
                9..=11 => log(&mut rng, &mut doc),
                _ => foreign(&mut rng, &mut doc),
            }
        }
        total += doc.len();
        docs.push(doc);
    }
    docs
}

fn encoding(name: &str) -> Encoding {
    if name == "cl100k" { Encoding::Cl100kBase } else { Encoding::O200kBase }
}

/// One measurement in this (fresh) process; prints `load_ms first_mb_s warm_mb_s tokens`.
fn child(vocab: &str, engine: &str) {
    let docs = corpus(1);
    let warm_docs = corpus(2);
    let bytes: usize = docs.iter().map(String::len).sum();
    let warm_bytes: usize = warm_docs.iter().map(String::len).sum();
    let mb = |b: usize, secs: f64| b as f64 / 1e6 / secs;
    let (load, first, warm, tokens) = if engine == "tackle" {
        let counter = TokenCounter::new(encoding(vocab));
        let t = Instant::now();
        counter.count_text("load"); // loads the vocabulary and builds the fast counter
        let load = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let tokens: u64 = docs.iter().map(|d| counter.count_text(d)).sum();
        let first = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let warm_tokens: u64 = warm_docs.iter().map(|d| counter.count_text(d)).sum();
        let warm = t.elapsed().as_secs_f64();
        std::hint::black_box(warm_tokens);
        (load, first, warm, tokens)
    } else {
        let t = Instant::now();
        let bpe = match vocab {
            "cl100k" => tiktoken_rs::cl100k_base(),
            _ => tiktoken_rs::o200k_base(),
        }
        .expect("vocabulary");
        let load = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let tokens: usize = docs.iter().map(|d| bpe.encode_ordinary(d).len()).sum();
        let first = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let warm_tokens: usize = warm_docs.iter().map(|d| bpe.encode_ordinary(d).len()).sum();
        let warm = t.elapsed().as_secs_f64();
        std::hint::black_box(warm_tokens);
        (load, first, warm, tokens as u64)
    };
    println!("{:.1} {:.2} {:.2} {tokens}", load * 1e3, mb(bytes, first), mb(warm_bytes, warm));
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--child") {
        child(&args[i + 1], &args[i + 2]);
        return;
    }
    let exe = std::env::current_exe().expect("current exe");
    let docs = corpus(1);
    let bytes: usize = docs.iter().map(String::len).sum();
    let non_ascii = docs.iter().flat_map(|d| d.chars()).filter(|c| !c.is_ascii()).count();
    println!(
        "corpus: {} documents, {:.2} MB, {non_ascii} non-ASCII chars; median of {RUNS} processes",
        docs.len(),
        bytes as f64 / 1e6
    );
    for vocab in ["o200k", "cl100k"] {
        let mut tokens = Vec::new();
        for engine in ["tiktoken", "tackle"] {
            let mut load = Vec::new();
            let mut first = Vec::new();
            let mut warm = Vec::new();
            for _ in 0..RUNS {
                let out = Command::new(&exe).args(["--child", vocab, engine]).output().expect("child");
                let line = String::from_utf8_lossy(&out.stdout);
                let f: Vec<&str> = line.split_whitespace().collect();
                load.push(f[0].parse().expect("load"));
                first.push(f[1].parse().expect("first"));
                warm.push(f[2].parse().expect("warm"));
                tokens.push(f[3].parse::<u64>().expect("tokens"));
            }
            println!(
                "{vocab:>6} {engine:>8}: first count {:>6.2} MB/s, warm {:>6.2} MB/s, load {:>6.1} ms, {} tokens",
                median(first),
                median(warm),
                median(load),
                tokens[tokens.len() - 1],
            );
        }
        assert!(tokens.windows(2).all(|w| w[0] == w[1]), "{vocab}: token totals differ: {tokens:?}");
    }
}
