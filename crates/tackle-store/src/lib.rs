//! tackle-store
