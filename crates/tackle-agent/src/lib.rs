//! tackle-agent
