//! SSE parsing + tool-argument accumulation throughput.
//!
//! `cargo bench -p tackle-provider --bench sse`; divan prints bytes/s per case. The target is
//! >= 100 MB/s for the full decode (SSE framing, JSON chunks, argument accumulation).

use std::collections::VecDeque;

use divan::counter::BytesCount;
use futures::StreamExt;
use tackle_provider::sse::{SseDecoder, SseEvent};
use tackle_provider::{AnthropicDecoder, OpenAiChatDecoder, WireDecoder};

fn main() {
    divan::main();
}

/// A Chat Completions stream of `calls` tool calls whose arguments arrive in 8-byte fragments,
/// with some text, the finish chunk, usage and `[DONE]`: about 1.5 MB for 100 calls.
fn openai_stream(calls: usize) -> Vec<u8> {
    let mut s = String::new();
    for i in 0..40 {
        s.push_str(&format!(
            "data: {{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-4.1\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"word{i} \"}},\"finish_reason\":null}}]}}\n\n"
        ));
    }
    let args = format!(
        "{{\"path\":\"src/lib.rs\",\"content\":\"{}\"}}",
        "fn main() { println!(\\\"hi\\\"); }\\n".repeat(40)
    );
    for c in 0..calls {
        s.push_str(&format!("data: {{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-4.1\",\"choices\":[{{\"index\":0,\"delta\":{{\"tool_calls\":[{{\"index\":{c},\"id\":\"call_{c}\",\"type\":\"function\",\"function\":{{\"name\":\"write_file\",\"arguments\":\"\"}}}}]}},\"finish_reason\":null}}]}}\n\n"));
        let bytes = args.as_bytes();
        let mut start = 0;
        while start < bytes.len() {
            let mut end = (start + 8).min(bytes.len());
            while end < bytes.len() && bytes[end - 1] == b'\\' {
                end += 1; // never split an escape
            }
            let frag = serde_json::to_string(&args[start..end]).unwrap();
            s.push_str(&format!("data: {{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-4.1\",\"choices\":[{{\"index\":0,\"delta\":{{\"tool_calls\":[{{\"index\":{c},\"function\":{{\"arguments\":{frag}}}}}]}},\"finish_reason\":null}}]}}\n\n"));
            start = end;
        }
    }
    s.push_str("data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-4.1\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n");
    s.push_str("data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-4.1\",\"choices\":[],\"usage\":{\"prompt_tokens\":5000,\"completion_tokens\":900,\"total_tokens\":5900,\"prompt_tokens_details\":{\"cached_tokens\":4096}}}\n\ndata: [DONE]\n\n");
    s.into_bytes()
}

/// The same content as an Anthropic Messages stream.
fn anthropic_stream(calls: usize) -> Vec<u8> {
    let mut s = String::from(
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude\",\"usage\":{\"input_tokens\":5000,\"output_tokens\":1}}}\n\n",
    );
    s.push_str("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n");
    for i in 0..40 {
        s.push_str(&format!("event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"text_delta\",\"text\":\"word{i} \"}}}}\n\n"));
    }
    s.push_str("event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n");
    let args = format!(
        "{{\"path\":\"src/lib.rs\",\"content\":\"{}\"}}",
        "fn main() { println!(\\\"hi\\\"); }\\n".repeat(40)
    );
    for c in 1..=calls {
        s.push_str(&format!("event: content_block_start\ndata: {{\"type\":\"content_block_start\",\"index\":{c},\"content_block\":{{\"type\":\"tool_use\",\"id\":\"toolu_{c}\",\"name\":\"write_file\",\"input\":{{}}}}}}\n\n"));
        let bytes = args.as_bytes();
        let mut start = 0;
        while start < bytes.len() {
            let mut end = (start + 8).min(bytes.len());
            while end < bytes.len() && bytes[end - 1] == b'\\' {
                end += 1;
            }
            let frag = serde_json::to_string(&args[start..end]).unwrap();
            s.push_str(&format!("event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":{c},\"delta\":{{\"type\":\"input_json_delta\",\"partial_json\":{frag}}}}}\n\n"));
            start = end;
        }
        s.push_str(&format!(
            "event: content_block_stop\ndata: {{\"type\":\"content_block_stop\",\"index\":{c}}}\n\n"
        ));
    }
    s.push_str("event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"output_tokens\":900}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n");
    s.into_bytes()
}

/// Feeds `bytes` in 4 KiB network-sized chunks through SSE framing and the wire decoder.
fn decode_all<D: WireDecoder>(bytes: &[u8], mut wire: D) -> usize {
    let mut sse = SseDecoder::default();
    let mut events: Vec<SseEvent> = Vec::new();
    let mut out = VecDeque::new();
    let mut n = 0;
    for chunk in bytes.chunks(4096) {
        sse.push(chunk, &mut events);
        for e in events.drain(..) {
            wire.on_event(&e, &mut out).unwrap();
        }
        n += out.len();
        out.clear();
    }
    assert!(wire.is_done());
    n
}

#[divan::bench]
fn openai_chat(bencher: divan::Bencher) {
    let bytes = openai_stream(100);
    bencher
        .counter(BytesCount::of_slice(&bytes))
        .bench(|| decode_all(divan::black_box(&bytes), OpenAiChatDecoder::default()));
}

#[divan::bench]
fn anthropic_messages(bencher: divan::Bencher) {
    let bytes = anthropic_stream(100);
    bencher
        .counter(BytesCount::of_slice(&bytes))
        .bench(|| decode_all(divan::black_box(&bytes), AnthropicDecoder::default()));
}

/// SSE framing alone with Tackle's decoder.
#[divan::bench]
fn sse_framing_tackle(bencher: divan::Bencher) {
    let bytes = openai_stream(100);
    bencher.counter(BytesCount::of_slice(&bytes)).bench(|| {
        let mut sse = SseDecoder::default();
        let mut events = Vec::new();
        for chunk in divan::black_box(&bytes).chunks(4096) {
            sse.push(chunk, &mut events);
        }
        events.len()
    });
}

/// SSE framing alone with the `eventsource-stream` crate, for comparison.
#[divan::bench]
fn sse_framing_eventsource_stream(bencher: divan::Bencher) {
    use eventsource_stream::Eventsource;
    let bytes = openai_stream(100);
    bencher.counter(BytesCount::of_slice(&bytes)).bench(|| {
        let chunks: Vec<Result<bytes::Bytes, std::io::Error>> =
            bytes.chunks(4096).map(|c| Ok(bytes::Bytes::copy_from_slice(c))).collect();
        futures::executor::block_on(futures::stream::iter(chunks).eventsource().count())
    });
}
