//! tackle-context
