//! tackle-server
