//! tackle-mcp
