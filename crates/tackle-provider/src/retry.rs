//! When and how long to wait before retrying a failed request, as the official SDKs do.

use std::time::{Duration, SystemTime};

use http::HeaderMap;
use serde::{Deserialize, Serialize};

use crate::config::millis;

/// Retry behaviour for requests that fail before the response body starts.
///
/// Retried: connection failures, timeouts, and HTTP 408, 409, 429 and 5xx (including 529), unless
/// the response says `x-should-retry: false`; `x-should-retry: true` forces a retry. The wait is
/// the server's `retry-after-ms` or `retry-after` (seconds or an HTTP date) when present and at
/// most `max_retry_after`, else exponential backoff from `initial_delay` capped at `max_delay`,
/// minus up to 25% jitter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RetryPolicy {
    /// Retries after the first attempt (the SDKs' default is 2).
    pub max_retries: u32,
    /// Backoff before the first retry.
    #[serde(with = "millis")]
    pub initial_delay: Duration,
    /// Upper bound of the computed backoff.
    #[serde(with = "millis")]
    pub max_delay: Duration,
    /// Longest server-requested wait that is honoured; longer requests fall back to backoff.
    #[serde(with = "millis")]
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_retries: 2,
            initial_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(8),
            max_retry_after: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// A policy that never retries.
    pub fn none() -> Self {
        Self { max_retries: 0, ..Self::default() }
    }

    /// Whether an HTTP failure should be retried, given the attempt that just failed (0-based).
    pub fn should_retry_status(&self, attempt: u32, status: u16, headers: &HeaderMap) -> bool {
        if attempt >= self.max_retries {
            return false;
        }
        match header_str(headers, "x-should-retry") {
            Some("true") => return true,
            Some("false") => return false,
            _ => {}
        }
        matches!(status, 408 | 409 | 429) || status >= 500
    }

    /// Whether a transport failure (connect error, timeout) should be retried.
    pub fn should_retry_transport(&self, attempt: u32) -> bool {
        attempt < self.max_retries
    }

    /// How long to wait before retry number `attempt + 1`.
    pub fn delay(&self, attempt: u32, headers: Option<&HeaderMap>) -> Duration {
        if let Some(wait) = headers.and_then(server_requested_wait)
            && wait <= self.max_retry_after
        {
            return wait;
        }
        self.backoff(attempt, fastrand::f64())
    }

    /// Exponential backoff for `attempt` with `jitter` in `[0, 1)` removing up to 25%.
    pub fn backoff(&self, attempt: u32, jitter: f64) -> Duration {
        let base = self.initial_delay.as_secs_f64() * 2f64.powi(attempt.min(30) as i32);
        let capped = base.min(self.max_delay.as_secs_f64());
        Duration::from_secs_f64(capped * (1.0 - 0.25 * jitter.clamp(0.0, 1.0)))
    }
}

/// The wait a response asks for through `retry-after-ms` or `retry-after`.
pub fn server_requested_wait(headers: &HeaderMap) -> Option<Duration> {
    if let Some(ms) = header_str(headers, "retry-after-ms").and_then(|v| v.trim().parse::<f64>().ok())
        && ms.is_finite()
        && ms >= 0.0
    {
        return Some(Duration::from_secs_f64(ms / 1000.0));
    }
    let value = header_str(headers, "retry-after")?.trim();
    if let Ok(secs) = value.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs));
    }
    let date = httpdate_parse(value)?;
    Some(date.duration_since(SystemTime::now()).unwrap_or(Duration::ZERO))
}

fn header_str<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// Parses an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the only form servers send today.
fn httpdate_parse(s: &str) -> Option<SystemTime> {
    let parts: Vec<&str> = s.split_whitespace().collect();
    let [_, day, month, year, time, "GMT"] = parts.as_slice() else { return None };
    let day: u64 = day.parse().ok()?;
    let month = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        .iter()
        .position(|m| m == month)? as u64
        + 1;
    let year: u64 = year.parse().ok()?;
    let mut hms = time.split(':').map(|p| p.parse::<u64>().ok());
    let (h, m, sec) = (hms.next()??, hms.next()??, hms.next()??);
    if !(1..=31).contains(&day) || year < 1970 || h > 23 || m > 59 || sec > 60 {
        return None;
    }
    // Days from the civil date (Howard Hinnant's algorithm).
    let (y, mo) = if month <= 2 { (year - 1, month + 9) } else { (year, month - 3) };
    let era = y / 400;
    let yoe = y - era * 400;
    let doy = (153 * mo + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(SystemTime::UNIX_EPOCH + Duration::from_secs(days * 86_400 + h * 3600 + m * 60 + sec))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, v.parse().unwrap());
        }
        h
    }

    #[test]
    fn retryable_statuses_match_the_sdks() {
        let p = RetryPolicy::default();
        let none = HeaderMap::new();
        for s in [408, 409, 429, 500, 502, 503, 529] {
            assert!(p.should_retry_status(0, s, &none), "{s}");
        }
        for s in [400, 401, 403, 404, 413, 422] {
            assert!(!p.should_retry_status(0, s, &none), "{s}");
        }
        assert!(!p.should_retry_status(2, 500, &none), "retries are bounded");
    }

    #[test]
    fn x_should_retry_overrides_the_status() {
        let p = RetryPolicy::default();
        assert!(p.should_retry_status(0, 400, &headers(&[("x-should-retry", "true")])));
        assert!(!p.should_retry_status(0, 503, &headers(&[("x-should-retry", "false")])));
    }

    #[test]
    fn server_waits_are_honoured_in_order() {
        let p = RetryPolicy::default();
        let h = headers(&[("retry-after-ms", "1500"), ("retry-after", "9")]);
        assert_eq!(p.delay(0, Some(&h)), Duration::from_millis(1500));
        let h = headers(&[("retry-after", "2")]);
        assert_eq!(p.delay(0, Some(&h)), Duration::from_secs(2));
        let h = headers(&[("retry-after", "3600")]);
        assert!(p.delay(0, Some(&h)) <= p.max_delay, "absurd waits fall back to backoff");
        let h = headers(&[("retry-after", "Thu, 01 Jan 1970 00:00:00 GMT")]);
        assert_eq!(p.delay(0, Some(&h)), Duration::ZERO, "a date in the past means now");
    }

    #[test]
    fn backoff_grows_and_is_capped() {
        let p = RetryPolicy::default();
        assert_eq!(p.backoff(0, 0.0), Duration::from_millis(500));
        assert_eq!(p.backoff(1, 0.0), Duration::from_secs(1));
        assert_eq!(p.backoff(10, 0.0), Duration::from_secs(8));
        assert_eq!(p.backoff(0, 0.999_999).as_millis(), 375);
    }

    #[test]
    fn http_dates_parse() {
        let t = httpdate_parse("Sun, 06 Nov 1994 08:49:37 GMT").unwrap();
        assert_eq!(t.duration_since(SystemTime::UNIX_EPOCH).unwrap().as_secs(), 784_111_777);
        assert!(httpdate_parse("yesterday").is_none());
        assert!(httpdate_parse("Sun, 99 Nov 1994 08:49:37 GMT").is_none());
    }
}
