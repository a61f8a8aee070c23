//! tackle-builtins
