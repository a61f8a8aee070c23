//! SSE parsing + tool-argument accumulation throughput.
//!
//! `cargo bench -p tackle-provider --bench sse`; divan prints bytes/s per case. The target is
//! >= 100 MB/s for the full decode (SSE framing, JSON chunks, argument accumulation).

use std::collections::VecDeque;

use divan::counter::BytesCount;
use futures::StreamExt;
use tackle_provider::sse::{SseDecoder, SseEvent};
use tackle_provider::{AnthropicDecoder, OpenAiChatDecoder, ResponsesDecoder, WireDecoder};

fn main() {
    divan::main();
}

/// `args` in 8-byte fragments (an escape never split), each as a JSON string.
fn fragments(args: &str) -> Vec<String> {
    let bytes = args.as_bytes();
    let (mut start, mut out) = (0, Vec::new());
    while start < bytes.len() {
        let mut end = (start + 8).min(bytes.len());
        while end < bytes.len() && bytes[end - 1] == b'\\' {
            end += 1; // never split an escape
        }
        out.push(serde_json::to_string(&args[start..end]).unwrap());
        start = end;
    }
    out
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
        for frag in fragments(&args) {
            s.push_str(&format!("data: {{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-4.1\",\"choices\":[{{\"index\":0,\"delta\":{{\"tool_calls\":[{{\"index\":{c},\"function\":{{\"arguments\":{frag}}}}}]}},\"finish_reason\":null}}]}}\n\n"));
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
        for frag in fragments(&args) {
            s.push_str(&format!("event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":{c},\"delta\":{{\"type\":\"input_json_delta\",\"partial_json\":{frag}}}}}\n\n"));
        }
        s.push_str(&format!(
            "event: content_block_stop\ndata: {{\"type\":\"content_block_stop\",\"index\":{c}}}\n\n"
        ));
    }
    s.push_str("event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"output_tokens\":900}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n");
    s.into_bytes()
}

/// The same content as an OpenAI Responses stream, in the API's event order: the message's
/// text deltas, then per call its item, argument deltas, arguments done and item done, then
/// `response.completed` with the whole output (as the API repeats it).
fn responses_stream(calls: usize) -> Vec<u8> {
    let mut s = String::new();
    let mut seq = 0;
    let mut event = |s: &mut String, kind: &str, body: String| {
        s.push_str(&format!(
            "event: {kind}\ndata: {{\"type\":\"{kind}\",{body},\"sequence_number\":{seq}}}\n\n"
        ));
        seq += 1;
    };
    let created = "\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"created_at\":1,\"status\":\"in_progress\",\"error\":null,\"incomplete_details\":null,\"model\":\"gpt-4.1\",\"output\":[],\"usage\":null}";
    event(&mut s, "response.created", created.to_owned());
    event(&mut s, "response.output_item.added", "\"output_index\":0,\"item\":{\"id\":\"msg_1\",\"type\":\"message\",\"status\":\"in_progress\",\"content\":[],\"role\":\"assistant\"}".to_owned());
    let mut text = String::new();
    for i in 0..40 {
        text.push_str(&format!("word{i} "));
        event(
            &mut s,
            "response.output_text.delta",
            format!(
                "\"item_id\":\"msg_1\",\"output_index\":0,\"content_index\":0,\"delta\":\"word{i} \",\"logprobs\":[]"
            ),
        );
    }
    let message = format!(
        "{{\"id\":\"msg_1\",\"type\":\"message\",\"status\":\"completed\",\"content\":[{{\"type\":\"output_text\",\"annotations\":[],\"logprobs\":[],\"text\":\"{text}\"}}],\"role\":\"assistant\"}}"
    );
    event(&mut s, "response.output_item.done", format!("\"output_index\":0,\"item\":{message}"));
    let args = format!(
        "{{\"path\":\"src/lib.rs\",\"content\":\"{}\"}}",
        "fn main() { println!(\\\"hi\\\"); }\\n".repeat(40)
    );
    let args_json = serde_json::to_string(&args).unwrap();
    let mut output = vec![message];
    for c in 1..=calls {
        let item = |arguments: &str, status: &str| {
            format!(
                "{{\"id\":\"fc_{c}\",\"type\":\"function_call\",\"status\":\"{status}\",\"arguments\":{arguments},\"call_id\":\"call_{c}\",\"name\":\"write_file\"}}"
            )
        };
        event(
            &mut s,
            "response.output_item.added",
            format!("\"output_index\":{c},\"item\":{}", item("\"\"", "in_progress")),
        );
        for frag in fragments(&args) {
            event(
                &mut s,
                "response.function_call_arguments.delta",
                format!("\"item_id\":\"fc_{c}\",\"output_index\":{c},\"delta\":{frag}"),
            );
        }
        event(
            &mut s,
            "response.function_call_arguments.done",
            format!(
                "\"item_id\":\"fc_{c}\",\"output_index\":{c},\"name\":\"write_file\",\"arguments\":{args_json}"
            ),
        );
        let done = item(&args_json, "completed");
        event(&mut s, "response.output_item.done", format!("\"output_index\":{c},\"item\":{done}"));
        output.push(done);
    }
    event(
        &mut s,
        "response.completed",
        format!(
            "\"response\":{{\"id\":\"resp_1\",\"object\":\"response\",\"created_at\":1,\"status\":\"completed\",\"error\":null,\"incomplete_details\":null,\"model\":\"gpt-4.1\",\"output\":[{}],\"usage\":{{\"input_tokens\":5000,\"input_tokens_details\":{{\"cached_tokens\":4096}},\"output_tokens\":900,\"output_tokens_details\":{{\"reasoning_tokens\":0}},\"total_tokens\":5900}}}}",
            output.join(",")
        ),
    );
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
fn openai_responses(bencher: divan::Bencher) {
    let bytes = responses_stream(100);
    bencher
        .counter(BytesCount::of_slice(&bytes))
        .bench(|| decode_all(divan::black_box(&bytes), ResponsesDecoder::default()));
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
