//! Zero-copy reading of optional strings.
//!
//! `#[serde(borrow)]` makes serde borrow a `Cow<'a, str>` field from the input, but not an
//! `Option<Cow<'a, str>>`: that one is always copied into a new `String`. A stream decoder reads
//! several optional strings per event (ids, the model, every text or argument delta), so
//! optional strings of the types read per event go through [`option`], which borrows what it
//! can (a string with escapes is still copied, as JSON needs it unescaped).

use std::borrow::Cow;

use serde::{Deserialize, Deserializer};

/// A string borrowed from the input when it has no escapes.
#[derive(Deserialize)]
#[serde(transparent)]
struct Borrowed<'a>(#[serde(borrow)] Cow<'a, str>);

/// `deserialize_with` for `Option<Cow<'a, str>>`: borrows where it can. Use with
/// `#[serde(default, borrow, deserialize_with = "crate::borrow::option")]`.
#[inline]
pub(crate) fn option<'de: 'a, 'a, D: Deserializer<'de>>(d: D) -> Result<Option<Cow<'a, str>>, D::Error> {
    Ok(Option::<Borrowed<'a>>::deserialize(d)?.map(|b| b.0))
}
