//! One way to run a query on either database: a [`Query`] is the SQL text (written once, in SQL
//! both backends accept: `$n` parameters, `ON CONFLICT`, `RETURNING`) and its typed values
//! ([`Param`]), built once; each driver has exactly one binder for it (rusqlite's `ToSql` for
//! [`Param`], [`pg_query`] for sqlx's PostgreSQL) and one row adapter ([`Row`]), so every
//! domain type has one decoder, written against [`Row`].
//!
//! Every statement runs on a [`Conn`], a connection of either driver that `Db` (`db.rs`) lends
//! to a body written once: an async closure, or an `async fn` over `&mut Conn` for statements
//! that run together (a step's commit, a message with its calls). On PostgreSQL it awaits sqlx;
//! on SQLite it runs inside the writer's (or a reader's) closure, where every statement is
//! synchronous and the future is ready at its first poll ([`ready`]).
//!
//! ```ignore
//! let q = Query::new("SELECT seq FROM messages WHERE session_id = $1 AND turn = $2").bind(id).bind(turn);
//! let seqs = conn.fetch_all(&q, |row| row.try_get::<i64>("seq")).await?;
//! ```

use std::borrow::Cow;
use std::collections::HashMap;
use std::future::Future;
use std::pin::pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use rusqlite::ToSql;
use rusqlite::types::{ToSqlOutput, ValueRef};
use sqlx::postgres::{PgArguments, PgRow, Postgres};
use sqlx::{Decode, Row as _, TypeInfo as _, ValueRef as _};

use crate::{Backend, StoreError};

/// A value bound to a `$n` parameter. Typed even when null, because PostgreSQL types its
/// parameters (a `NULL` text is not a `NULL` integer).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Param {
    /// `INTEGER` / `BIGINT`.
    Int(Option<i64>),
    /// `REAL` / `DOUBLE PRECISION`.
    Real(Option<f64>),
    /// `TEXT`.
    Text(Option<String>),
    /// `BLOB` / `BYTEA`.
    Blob(Option<Vec<u8>>),
    /// A boolean expression's operand (SQLite: 0 or 1; PostgreSQL: `BOOLEAN`). Columns that hold
    /// flags are integers on both and take [`Param::Int`].
    Bool(bool),
}

macro_rules! param_from {
    ($($t:ty => |$v:ident| $e:expr;)*) => {
        $(impl From<$t> for Param {
            fn from($v: $t) -> Self {
                $e
            }
        })*
    };
}

param_from! {
    i64 => |v| Param::Int(Some(v));
    Option<i64> => |v| Param::Int(v);
    &i64 => |v| Param::Int(Some(*v));
    &Option<i64> => |v| Param::Int(*v);
    f64 => |v| Param::Real(Some(v));
    Option<f64> => |v| Param::Real(v);
    &str => |v| Param::Text(Some(v.to_owned()));
    String => |v| Param::Text(Some(v));
    &String => |v| Param::Text(Some(v.clone()));
    Option<String> => |v| Param::Text(v);
    &Option<String> => |v| Param::Text(v.clone());
    Option<&str> => |v| Param::Text(v.map(str::to_owned));
    Vec<u8> => |v| Param::Blob(Some(v));
    &[u8] => |v| Param::Blob(Some(v.to_vec()));
    Option<Vec<u8>> => |v| Param::Blob(v);
    bool => |v| Param::Bool(v);
}

/// A statement and its values.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Query {
    sql: Cow<'static, str>,
    params: Vec<Param>,
}

impl Query {
    /// `sql` with no values yet.
    pub(crate) fn new(sql: &'static str) -> Self {
        Self { sql: Cow::Borrowed(sql), params: Vec::new() }
    }

    /// SQL assembled at run time from fixed fragments only (a list of `$n` placeholders, say);
    /// every value must still be bound.
    pub(crate) fn assembled(sql: String) -> Self {
        Self { sql: Cow::Owned(sql), params: Vec::new() }
    }

    /// Binds the next `$n`.
    pub(crate) fn bind(mut self, value: impl Into<Param>) -> Self {
        self.params.push(value.into());
        self
    }

    /// The SQL text.
    pub(crate) fn sql(&self) -> &str {
        &self.sql
    }
}

// ---------------------------------------------------------------------------------------------
// rusqlite: the binder and the row adapter.

impl ToSql for Param {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::Borrowed(match self {
            Param::Int(Some(v)) => ValueRef::Integer(*v),
            Param::Real(Some(v)) => ValueRef::Real(*v),
            Param::Text(Some(v)) => ValueRef::Text(v.as_bytes()),
            Param::Blob(Some(v)) => ValueRef::Blob(v),
            Param::Bool(v) => ValueRef::Integer(i64::from(*v)),
            Param::Int(None) | Param::Real(None) | Param::Text(None) | Param::Blob(None) => ValueRef::Null,
        }))
    }
}

/// A SQL text of the program by its address and length (`&'static str` never moves).
type TextKey = (usize, usize);

/// The `$n` of each parameter of a statement, in SQLite's order.
type Numbers = Rc<[usize]>;

thread_local! {
    /// For each SQL text of the program (`Query::new`'s `&'static str`, known by its address) bound
    /// on this thread: the `$n` each of its parameters takes, in SQLite's order. Reading the
    /// parameters' names back and parsing them cost more than binding the values (about a tenth of
    /// a warm step commit's instructions); a text's parameters never change, so they are read once.
    static NUMBERS: std::cell::RefCell<HashMap<TextKey, Numbers>> = Default::default();
}

/// Binds `query`'s values to the numbered parameters `$1`, `$2`, ... of `statement`, wherever
/// and however often each appears. Every parameter must be bound, every value used.
fn bind_sqlite(statement: &mut rusqlite::Statement<'_>, query: &Query) -> Result<(), StoreError> {
    let params = &query.params;
    let count = statement.parameter_count();
    if count != params.len() {
        return Err(mismatch(format!("{count} parameters, {} values", params.len())));
    }
    let numbers = match &query.sql {
        Cow::Borrowed(sql) => {
            let key = (sql.as_ptr() as usize, sql.len());
            match NUMBERS.with_borrow(|known| known.get(&key).cloned()) {
                Some(numbers) => numbers,
                None => {
                    let numbers: Numbers = parameter_numbers(statement, count)?.into();
                    NUMBERS.with_borrow_mut(|known| known.insert(key, Rc::clone(&numbers)));
                    numbers
                }
            }
        }
        Cow::Owned(_) => parameter_numbers(statement, count)?.into(),
    };
    for (index, number) in (1..).zip(numbers.iter()) {
        statement.raw_bind_parameter(index, &params[number - 1])?;
    }
    Ok(())
}

fn mismatch(detail: String) -> StoreError {
    StoreError::Corrupt { what: "SQL statement", detail }
}

/// The `$n` each of `statement`'s `count` parameters takes: SQLite numbers each distinct `$n` in
/// order of first appearance; `$n` itself says which value it takes.
fn parameter_numbers(statement: &rusqlite::Statement<'_>, count: usize) -> Result<Vec<usize>, StoreError> {
    (1..=count)
        .map(|index| {
            statement
                .parameter_name(index)
                .and_then(|name| name.strip_prefix('$'))
                .and_then(|n| n.parse::<usize>().ok())
                .filter(|n| (1..=count).contains(n))
                .ok_or_else(|| mismatch(format!("parameter {index} is not one of $1..${count}")))
        })
        .collect()
}

impl Row for rusqlite::Row<'_> {
    fn value(&self, column: &str) -> Result<Value<'_>, StoreError> {
        let index = self.as_ref().column_index(column)?;
        Ok(match self.get_ref(index)? {
            ValueRef::Null => Value::Null,
            ValueRef::Integer(v) => Value::Int(v),
            ValueRef::Real(v) => Value::Real(v),
            ValueRef::Text(v) => Value::Text(std::str::from_utf8(v).map_err(|e| StoreError::Corrupt {
                what: "text column",
                detail: format!("{column}: {e}"),
            })?),
            ValueRef::Blob(v) => Value::Blob(v),
        })
    }
}

/// Runs `query` on a rusqlite connection; returns the rows it changed.
pub(crate) fn sqlite_execute(conn: &rusqlite::Connection, query: &Query) -> Result<u64, StoreError> {
    let mut statement = conn.prepare_cached(query.sql())?;
    bind_sqlite(&mut statement, query)?;
    Ok(u64::try_from(statement.raw_execute()?).unwrap_or(u64::MAX))
}

/// Runs `query` on a rusqlite connection and decodes every row with `decode`.
pub(crate) fn sqlite_fetch_all<T>(
    conn: &rusqlite::Connection,
    query: &Query,
    mut decode: impl FnMut(&dyn Row) -> Result<T, StoreError>,
) -> Result<Vec<T>, StoreError> {
    let mut statement = conn.prepare_cached(query.sql())?;
    bind_sqlite(&mut statement, query)?;
    let mut rows = statement.raw_query();
    let mut out = Vec::new();
    while let Some(row) = rows.next()? {
        out.push(decode(row)?);
    }
    Ok(out)
}

/// Like [`sqlite_fetch_all`], for at most one row (the first).
pub(crate) fn sqlite_fetch_optional<T>(
    conn: &rusqlite::Connection,
    query: &Query,
    decode: impl FnOnce(&dyn Row) -> Result<T, StoreError>,
) -> Result<Option<T>, StoreError> {
    let mut statement = conn.prepare_cached(query.sql())?;
    bind_sqlite(&mut statement, query)?;
    let mut rows = statement.raw_query();
    match rows.next()? {
        Some(row) => Ok(Some(decode(row)?)),
        None => Ok(None),
    }
}

// ---------------------------------------------------------------------------------------------
// sqlx (PostgreSQL): the binder and the row adapter.

/// `query` bound for sqlx's PostgreSQL driver.
pub(crate) fn pg_query(query: &Query) -> sqlx::query::Query<'_, Postgres, PgArguments> {
    let mut q = match &query.sql {
        Cow::Borrowed(sql) => sqlx::query(*sql),
        // Assembled from fixed fragments only ([`Query::assembled`]); every value is bound.
        Cow::Owned(sql) => sqlx::query(sqlx::AssertSqlSafe(sql.clone())),
    };
    for param in &query.params {
        q = match param {
            Param::Int(v) => q.bind(*v),
            Param::Real(v) => q.bind(*v),
            Param::Text(v) => q.bind(v.as_deref()),
            Param::Blob(v) => q.bind(v.as_deref()),
            Param::Bool(v) => q.bind(*v),
        };
    }
    q
}

fn pg_decode<'r, T: Decode<'r, Postgres>>(
    value: sqlx::postgres::PgValueRef<'r>,
    column: &str,
) -> Result<T, StoreError> {
    T::decode(value).map_err(|source| {
        StoreError::Database(sqlx::Error::ColumnDecode { index: column.to_owned(), source })
    })
}

impl Row for PgRow {
    fn value(&self, column: &str) -> Result<Value<'_>, StoreError> {
        let raw = self.try_get_raw(column)?;
        if raw.is_null() {
            return Ok(Value::Null);
        }
        let type_name = raw.type_info().name().to_owned();
        Ok(match type_name.as_str() {
            "INT8" => Value::Int(pg_decode::<i64>(raw, column)?),
            "INT4" => Value::Int(i64::from(pg_decode::<i32>(raw, column)?)),
            "INT2" => Value::Int(i64::from(pg_decode::<i16>(raw, column)?)),
            "BOOL" => Value::Int(i64::from(pg_decode::<bool>(raw, column)?)),
            "FLOAT8" => Value::Real(pg_decode::<f64>(raw, column)?),
            "FLOAT4" => Value::Real(f64::from(pg_decode::<f32>(raw, column)?)),
            "TEXT" | "VARCHAR" | "BPCHAR" | "NAME" => Value::Text(pg_decode::<&str>(raw, column)?),
            "BYTEA" => Value::Blob(pg_decode::<&[u8]>(raw, column)?),
            other => {
                return Err(StoreError::Corrupt {
                    what: "column type",
                    detail: format!("{column} is {other}, which the store does not read"),
                });
            }
        })
    }
}

/// Runs `query` on a PostgreSQL connection or pool; returns the rows it changed.
pub(crate) async fn pg_execute<'c>(
    conn: impl sqlx::Executor<'c, Database = Postgres>,
    query: &Query,
) -> Result<u64, StoreError> {
    Ok(pg_query(query).execute(conn).await?.rows_affected())
}

/// Runs `query` on a PostgreSQL connection or pool and decodes every row with `decode`.
pub(crate) async fn pg_fetch_all<'c, T>(
    conn: impl sqlx::Executor<'c, Database = Postgres>,
    query: &Query,
    decode: impl FnMut(&dyn Row) -> Result<T, StoreError>,
) -> Result<Vec<T>, StoreError> {
    let rows = pg_query(query).fetch_all(conn).await?;
    rows.iter().map(|row| row as &dyn Row).map(decode).collect()
}

/// Like [`pg_fetch_all`], for at most one row (the first).
pub(crate) async fn pg_fetch_optional<'c, T>(
    conn: impl sqlx::Executor<'c, Database = Postgres>,
    query: &Query,
    decode: impl FnOnce(&dyn Row) -> Result<T, StoreError>,
) -> Result<Option<T>, StoreError> {
    let row = pg_query(query).fetch_optional(conn).await?;
    row.as_ref().map(|row| decode(row)).transpose()
}

// ---------------------------------------------------------------------------------------------
// Rows.

/// A column's value as either driver read it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Value<'r> {
    /// `NULL`.
    Null,
    /// An integer (booleans are read as 0 or 1).
    Int(i64),
    /// A float.
    Real(f64),
    /// Text.
    Text(&'r str),
    /// Bytes.
    Blob(&'r [u8]),
}

/// A row of either driver; decoders take `&dyn Row` and read columns by name with
/// [`RowExt::try_get`].
pub(crate) trait Row {
    /// The value of `column`.
    fn value(&self, column: &str) -> Result<Value<'_>, StoreError>;
}

/// A Rust type a column decodes to.
pub(crate) trait FromValue<'r>: Sized {
    /// The value as `Self`; `None` when the column holds another type.
    fn from_value(value: Value<'r>) -> Option<Self>;
}

impl FromValue<'_> for i64 {
    fn from_value(value: Value<'_>) -> Option<Self> {
        match value {
            Value::Int(v) => Some(v),
            _ => None,
        }
    }
}

impl FromValue<'_> for f64 {
    fn from_value(value: Value<'_>) -> Option<Self> {
        match value {
            Value::Real(v) => Some(v),
            Value::Int(v) => Some(v as f64),
            _ => None,
        }
    }
}

impl FromValue<'_> for bool {
    fn from_value(value: Value<'_>) -> Option<Self> {
        match value {
            Value::Int(v) => Some(v != 0),
            _ => None,
        }
    }
}

impl<'r> FromValue<'r> for &'r str {
    fn from_value(value: Value<'r>) -> Option<Self> {
        match value {
            Value::Text(v) => Some(v),
            _ => None,
        }
    }
}

impl FromValue<'_> for String {
    fn from_value(value: Value<'_>) -> Option<Self> {
        <&str>::from_value(value).map(str::to_owned)
    }
}

impl<'r> FromValue<'r> for &'r [u8] {
    fn from_value(value: Value<'r>) -> Option<Self> {
        match value {
            Value::Blob(v) => Some(v),
            _ => None,
        }
    }
}

impl FromValue<'_> for Vec<u8> {
    fn from_value(value: Value<'_>) -> Option<Self> {
        <&[u8]>::from_value(value).map(<[u8]>::to_vec)
    }
}

impl<'r, T: FromValue<'r>> FromValue<'r> for Option<T> {
    fn from_value(value: Value<'r>) -> Option<Self> {
        match value {
            Value::Null => Some(None),
            other => T::from_value(other).map(Some),
        }
    }
}

/// Typed access to a row's columns.
pub(crate) trait RowExt {
    /// The value of `column`, decoded as `T`.
    fn try_get<'r, T: FromValue<'r>>(&'r self, column: &str) -> Result<T, StoreError>;
}

impl<R: Row + ?Sized> RowExt for R {
    fn try_get<'r, T: FromValue<'r>>(&'r self, column: &str) -> Result<T, StoreError> {
        let value = self.value(column)?;
        T::from_value(value).ok_or_else(|| StoreError::Corrupt {
            what: "column",
            detail: format!("{column} holds {value:?}, not a {}", std::any::type_name::<T>()),
        })
    }
}

// ---------------------------------------------------------------------------------------------
// Connections.

/// A connection of either driver: what every statement runs on, and what a body of several
/// statements is written against, once. `Db` (`db.rs`) lends one: the SQLite writer's
/// connection or open transaction, a SQLite read connection, or a PostgreSQL connection or
/// transaction. On SQLite every call is synchronous: a body's future is ready at its first poll
/// ([`ready`]).
pub(crate) enum Conn<'c> {
    /// A rusqlite connection (in a transaction or not). Held by `&mut`, so a [`Conn`] is
    /// `Send` (a rusqlite connection is `Send`, not `Sync`).
    Sqlite(&'c mut rusqlite::Connection),
    /// A sqlx PostgreSQL connection (or its open transaction).
    Postgres(&'c mut sqlx::PgConnection),
}

impl Conn<'_> {
    /// Which database this is (for what its SQL dialect says differently, such as row locks).
    pub(crate) fn backend(&self) -> Backend {
        match self {
            Conn::Sqlite(_) => Backend::Sqlite,
            Conn::Postgres(_) => Backend::Postgres,
        }
    }

    /// Runs `query`; returns the rows it changed.
    pub(crate) async fn execute(&mut self, query: &Query) -> Result<u64, StoreError> {
        match self {
            Conn::Sqlite(conn) => sqlite_execute(conn, query),
            Conn::Postgres(conn) => pg_execute(&mut **conn, query).await,
        }
    }

    /// Runs `query` and decodes every row with `decode`.
    pub(crate) async fn fetch_all<T>(
        &mut self,
        query: &Query,
        decode: impl FnMut(&dyn Row) -> Result<T, StoreError>,
    ) -> Result<Vec<T>, StoreError> {
        match self {
            Conn::Sqlite(conn) => sqlite_fetch_all(conn, query, decode),
            Conn::Postgres(conn) => pg_fetch_all(&mut **conn, query, decode).await,
        }
    }

    /// Runs `query` and decodes its first row, if any.
    pub(crate) async fn fetch_optional<T>(
        &mut self,
        query: &Query,
        decode: impl FnOnce(&dyn Row) -> Result<T, StoreError>,
    ) -> Result<Option<T>, StoreError> {
        match self {
            Conn::Sqlite(conn) => sqlite_fetch_optional(conn, query, decode),
            Conn::Postgres(conn) => pg_fetch_optional(&mut **conn, query, decode).await,
        }
    }
}

/// The output of `body`, a future over a [`Conn::Sqlite`] that never waits: SQLite's statements are
/// synchronous, so it is ready at its first poll. Used inside the writer's closures.
pub(crate) fn ready<T>(body: impl Future<Output = Result<T, StoreError>>) -> Result<T, StoreError> {
    let mut body = pin!(body);
    match body.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(done) => done,
        Poll::Pending => Err(StoreError::Internal("a SQLite statement awaited something")),
    }
}

/// A foreign key violation (a row for a session that does not exist) read as the session not
/// being found, from either driver; any other error as it is.
pub(crate) fn no_session(error: StoreError, session_id: &str) -> StoreError {
    let fk = match &error {
        StoreError::Sqlite(rusqlite::Error::SqliteFailure(e, _)) => {
            e.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_FOREIGNKEY
        }
        StoreError::Database(sqlx::Error::Database(d)) => d.is_foreign_key_violation(),
        _ => false,
    };
    if fk { StoreError::not_found("session", session_id) } else { error }
}

#[cfg(test)]
#[path = "sql_tests.rs"]
mod tests;
