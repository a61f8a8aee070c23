//! tackle-testkit
