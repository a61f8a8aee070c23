use super::*;

/// One row of every kind of value the store binds, read back through the row adapter.
const ROUND_TRIP: &str = "SELECT $1 AS i, $2 AS r, $3 AS t, $4 AS b, $5 AS n, $6 AS nt, $1 + 1 AS again";

fn round_trip_query() -> Query {
    Query::new(ROUND_TRIP)
        .bind(-7i64)
        .bind(0.25f64)
        .bind("naïve ✓")
        .bind(vec![0u8, 255, 1])
        .bind(None::<i64>)
        .bind(None::<String>)
}

/// Every kind of value, as decoded.
type Decoded = (i64, f64, String, Vec<u8>, Option<i64>, Option<String>, i64);

fn decode(row: &dyn Row) -> Result<Decoded, StoreError> {
    Ok((
        row.try_get("i")?,
        row.try_get("r")?,
        row.try_get("t")?,
        row.try_get("b")?,
        row.try_get("n")?,
        row.try_get("nt")?,
        row.try_get("again")?,
    ))
}

fn expected() -> Decoded {
    (-7, 0.25, "naïve ✓".to_owned(), vec![0, 255, 1], None, None, -6)
}

#[test]
fn every_value_binds_and_decodes_on_sqlite() {
    let conn = rusqlite::Connection::open_in_memory().unwrap();
    let row = sqlite_fetch_optional(&conn, &round_trip_query(), decode).unwrap();
    assert_eq!(row, Some(expected()));
}

#[tokio::test]
async fn every_value_binds_and_decodes_on_postgres() {
    let Some(url) = tackle_testkit::peers::or_skip(tackle_testkit::postgres::fresh_database().await) else {
        return;
    };
    let pool = sqlx::PgPool::connect(&url).await.unwrap();
    // PostgreSQL types a parameter from its use: the casts say what a bare `SELECT $n` is.
    let query = Query::new(
        "SELECT $1::BIGINT AS i, $2::DOUBLE PRECISION AS r, $3::TEXT AS t, $4::BYTEA AS b, $5::BIGINT AS n,
                $6::TEXT AS nt, $1::BIGINT + 1 AS again",
    );
    let query = round_trip_query().params.into_iter().fold(query, Query::bind);
    let row = pg_fetch_optional(&pool, &query, decode).await.unwrap();
    assert_eq!(row, Some(expected()));
    pool.close().await;
}

#[test]
fn numbered_parameters_bind_by_number_wherever_they_appear() {
    let conn = rusqlite::Connection::open_in_memory().unwrap();
    // Twice: the second time from the numbers read the first time (`NUMBERS`), and once more
    // as an assembled text, which is read every time.
    let sql: &'static str = "SELECT $2 || $1 || $1 || $2 AS s";
    for query in [Query::new(sql), Query::new(sql), Query::assembled(sql.to_owned())] {
        let query = query.bind("a").bind("b");
        let got = sqlite_fetch_optional(&conn, &query, |r| r.try_get::<String>("s")).unwrap();
        assert_eq!(got.as_deref(), Some("baab"));
    }
    // A value the statement has no parameter for is an error, not a silent shift.
    let err = sqlite_execute(&conn, &Query::new("SELECT $1").bind(1i64).bind(2i64)).unwrap_err();
    assert!(err.to_string().contains("1 parameters, 2 values"), "{err}");
}

#[test]
fn a_column_of_another_type_is_an_error_that_names_it() {
    let conn = rusqlite::Connection::open_in_memory().unwrap();
    let err = sqlite_fetch_optional(&conn, &Query::new("SELECT 'x' AS word"), |r| r.try_get::<i64>("word"))
        .unwrap_err();
    assert!(matches!(err, StoreError::Corrupt { .. }), "{err}");
    assert!(err.to_string().contains("word"), "{err}");
    let err = sqlite_fetch_optional(&conn, &Query::new("SELECT 1 AS one"), |r| r.try_get::<i64>("two"))
        .unwrap_err();
    assert!(err.to_string().contains("two"), "{err}");
}

#[test]
fn a_body_that_would_wait_fails_instead_of_hanging() {
    let err = ready(async {
        std::future::pending::<()>().await;
        Ok(())
    })
    .unwrap_err();
    assert!(matches!(err, StoreError::Internal(_)), "{err}");
    assert_eq!(ready(async { Ok(3) }).unwrap(), 3);
}

#[test]
fn a_body_over_sqlite_runs_in_place() {
    let mut conn = rusqlite::Connection::open_in_memory().unwrap();
    sqlite_execute(&conn, &Query::new("CREATE TABLE t (x INTEGER)")).unwrap();
    let sum = ready(async {
        let c = &mut Conn::Sqlite(&mut conn);
        for x in 1..=3i64 {
            c.execute(&Query::new("INSERT INTO t (x) VALUES ($1)").bind(x)).await?;
        }
        c.fetch_optional(&Query::new("SELECT SUM(x) AS s FROM t"), |r| r.try_get::<i64>("s")).await
    })
    .unwrap();
    assert_eq!(sum, Some(6));
}
