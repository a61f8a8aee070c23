//! A simulated prompt cache, so benchmarks measure cache reads that follow from the requests
//! a client actually sends rather than from scripted numbers.

use serde_json::Value;
use tackle_protocol::Usage;

use crate::WireFormat;

/// Bytes per token of the simulation (a usual average for English and code).
const BYTES_PER_TOKEN: u64 = 4;

/// OpenAI caches prompts of at least 1024 tokens, in 128-token increments.
const OPENAI_MIN_TOKENS: u64 = 1024;
const OPENAI_INCREMENT: u64 = 128;

/// Remembers the previous request per wire format and reports how much of a new request would
/// be read from a provider's prompt cache: the byte-identical prefix of the cache-relevant
/// request parts (tools, system, messages; Anthropic's `tool_choice` too), without
/// `cache_control` markers. Tokens are bytes / 4.
#[derive(Debug, Default)]
pub struct SimulatedCache {
    previous: Vec<(WireFormat, Vec<u8>)>,
}

fn strip(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.remove("cache_control");
            m.values_mut().for_each(strip);
        }
        Value::Array(a) => a.iter_mut().for_each(strip),
        _ => {}
    }
}

fn view(wire: WireFormat, body: &Value) -> Vec<u8> {
    let keys: &[&str] = match wire {
        WireFormat::AnthropicMessages => &["tools", "system", "tool_choice", "messages"],
        WireFormat::OpenAiChat => &["tools", "messages"],
        WireFormat::OpenAiResponses => &["tools", "instructions", "input"],
    };
    let mut parts: Vec<Value> = keys.iter().map(|k| body.get(*k).cloned().unwrap_or(Value::Null)).collect();
    parts.iter_mut().for_each(strip);
    serde_json::to_vec(&parts).unwrap_or_default()
}

impl SimulatedCache {
    /// Usage of a request: `output_tokens` from the script, the rest simulated.
    pub fn usage(&mut self, wire: WireFormat, body: &Value, output_tokens: u64) -> Usage {
        let bytes = view(wire, body);
        let input = (bytes.len() as u64).div_ceil(BYTES_PER_TOKEN);
        let shared = self
            .previous
            .iter()
            .filter(|(w, _)| *w == wire)
            .map(|(_, prev)| prev.iter().zip(&bytes).take_while(|(a, b)| a == b).count() as u64)
            .max()
            .unwrap_or(0)
            / BYTES_PER_TOKEN;
        self.previous.retain(|(w, _)| *w != wire);
        self.previous.push((wire, bytes));
        match wire {
            WireFormat::AnthropicMessages => Usage {
                input_tokens: input,
                output_tokens,
                cache_read_tokens: shared,
                cache_write_tokens: input - shared.min(input),
                reasoning_tokens: 0,
            },
            _ => {
                let cached = if shared >= OPENAI_MIN_TOKENS {
                    shared / OPENAI_INCREMENT * OPENAI_INCREMENT
                } else {
                    0
                };
                Usage {
                    input_tokens: input,
                    output_tokens,
                    cache_read_tokens: cached.min(input),
                    cache_write_tokens: 0,
                    reasoning_tokens: 0,
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn body(messages: usize) -> Value {
        let m: Vec<Value> = (0..messages)
            .map(|i| json!({"role": "user", "content": format!("{i} {}", "x".repeat(400))}))
            .collect();
        json!({"tools": [{"name": "t"}], "messages": m, "tool_choice": "auto"})
    }

    #[test]
    fn appended_requests_read_their_prefix() {
        let mut c = SimulatedCache::default();
        let first = c.usage(WireFormat::AnthropicMessages, &body(20), 5);
        assert_eq!((first.cache_read_tokens, first.cache_write_tokens), (0, first.input_tokens));
        let second = c.usage(WireFormat::AnthropicMessages, &body(21), 5);
        assert!(second.cache_read_tokens >= first.input_tokens - 2, "{second:?}");
        assert_eq!(second.cache_read_tokens + second.cache_write_tokens, second.input_tokens);
    }

    #[test]
    fn openai_caches_in_128_token_steps_from_1024() {
        let mut c = SimulatedCache::default();
        c.usage(WireFormat::OpenAiChat, &body(2), 1);
        assert_eq!(c.usage(WireFormat::OpenAiChat, &body(3), 1).cache_read_tokens, 0, "under 1024 tokens");
        c.usage(WireFormat::OpenAiChat, &body(20), 1);
        let u = c.usage(WireFormat::OpenAiChat, &body(21), 1);
        assert!(u.cache_read_tokens >= 1024 && u.cache_read_tokens % 128 == 0, "{u:?}");
        // tool_choice is not part of OpenAI's cached prefix.
        let mut changed = body(21);
        changed["tool_choice"] = json!("none");
        assert_eq!(
            c.usage(WireFormat::OpenAiChat, &changed, 1).cache_read_tokens,
            u.input_tokens / 128 * 128
        );
    }
}
