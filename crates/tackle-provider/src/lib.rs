//! tackle-provider
