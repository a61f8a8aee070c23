//! [`EnvLookup`]: how a channel reads the environment.

/// Reads an environment variable (a function, so tests need not touch the process environment);
/// only secrets are read this way (`TACKLE_TELEGRAM_TOKEN`): `tackle-cli` applies the settings'
/// own `TACKLE_CHANNELS_*` variables.
pub type EnvLookup<'a> = &'a dyn Fn(&str) -> Option<String>;
