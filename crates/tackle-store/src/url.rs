//! [`StoreUrl`]: where a store lives, parsed from `[store] url` / `TACKLE_DATABASE_URL`.

use std::path::PathBuf;

use tackle_protocol::mask_url;

use crate::StoreError;

/// Which database a store uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// A SQLite file (or memory): the embedded default.
    Sqlite,
    /// A PostgreSQL server, which several processes may share.
    Postgres,
}

impl Backend {
    /// `sqlite` or `postgres`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Sqlite => "sqlite",
            Self::Postgres => "postgres",
        }
    }
}

/// A parsed store address.
///
/// ```
/// use tackle_store::StoreUrl;
/// assert!(matches!(StoreUrl::parse("postgres://tackle@localhost/tackle"), Ok(StoreUrl::Postgres(_))));
/// assert!(matches!(StoreUrl::parse("sqlite:/var/lib/tackle/tackle.db"), Ok(StoreUrl::Sqlite(_))));
/// let err = StoreUrl::parse("mysql://u:secret@h/db").unwrap_err().to_string();
/// assert!(err.contains("postgres://") && !err.contains("secret"));
/// ```
#[derive(Clone, PartialEq, Eq)]
pub enum StoreUrl {
    /// `postgres://...` or `postgresql://...`, passed to the driver as given.
    Postgres(String),
    /// `sqlite:PATH` or `sqlite://PATH`.
    Sqlite(PathBuf),
}

impl std::fmt::Debug for StoreUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Postgres(url) => f.debug_tuple("Postgres").field(&mask_url(url)).finish(),
            Self::Sqlite(path) => f.debug_tuple("Sqlite").field(path).finish(),
        }
    }
}

impl StoreUrl {
    /// Parses `url`; the error says which forms are accepted (and never repeats a password).
    pub fn parse(url: &str) -> Result<Self, StoreError> {
        let url = url.trim();
        let invalid = |reason: &str| StoreError::InvalidUrl { url: mask_url(url), reason: reason.to_owned() };
        if let Some(rest) = url.strip_prefix("postgres://").or_else(|| url.strip_prefix("postgresql://")) {
            if rest.is_empty() || rest.starts_with('/') && rest.len() == 1 {
                return Err(invalid("it names no host or database"));
            }
            return Ok(Self::Postgres(url.to_owned()));
        }
        if let Some(rest) = url.strip_prefix("sqlite:") {
            let path = rest.strip_prefix("//").unwrap_or(rest);
            let path = path.split('?').next().unwrap_or_default();
            if path.is_empty() {
                return Err(invalid("it names no file"));
            }
            return Ok(Self::Sqlite(PathBuf::from(path)));
        }
        Err(invalid("the scheme is not supported"))
    }

    /// The backend this address selects.
    pub fn backend(&self) -> Backend {
        match self {
            Self::Postgres(_) => Backend::Postgres,
            Self::Sqlite(_) => Backend::Sqlite,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_never_show() {
        assert!(!mask_url("postgres://u:hunter2@h:5432/db").contains("hunter2"));
        assert!(!mask_url("postgres://u@h/db?sslmode=require&password=hunter2").contains("hunter2"));
        let err = StoreUrl::parse("mysql://h/db?password=hunter2").unwrap_err().to_string();
        assert!(!err.contains("hunter2"), "{err}");
        let parsed = StoreUrl::parse("postgresql://u:hunter2@h/db").unwrap();
        assert!(!format!("{parsed:?}").contains("hunter2"));
        let err = StoreUrl::parse("postgres://").unwrap_err().to_string();
        assert!(err.contains("no host"), "{err}");
        assert_eq!(StoreUrl::parse("sqlite:///tmp/x.db").unwrap(), StoreUrl::Sqlite("/tmp/x.db".into()));
        assert_eq!(StoreUrl::parse("sqlite:rel/x.db").unwrap(), StoreUrl::Sqlite("rel/x.db".into()));
    }
}
