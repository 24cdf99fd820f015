//! rttlab route-contract app on axum 0.7 + tokio-postgres (see apps/README.md).
//!
//! One crate serves two study rows, chosen at start by RTTLAB_AXUM_MODE:
//!
//! * `cached` (default): every statement is prepared once per connection and
//!   each execution is a single Bind/Execute/Sync round trip.
//! * `raw`: every execution passes the SQL text to `Client::query`, which makes
//!   tokio-postgres prepare a fresh statement first (Parse/Describe/Sync, one
//!   extra round trip) and close it afterwards.
//!
//! Both modes execute exactly the same statements, so pg_stat_statements shows
//! the same call counts; only the protocol work differs.

use std::collections::HashMap;
use std::env;
use std::fmt;
use std::net::{Ipv6Addr, SocketAddr};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde::Serialize;
use serde_json::json;
use tokio::sync::Mutex;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, Config, NoTls, Row, Statement};

/// How long the app waits for the database at start.
const DB_WAIT: Duration = Duration::from_secs(60);
/// Pause between connection attempts at start.
const DB_RETRY: Duration = Duration::from_millis(500);
/// Largest n accepted by /serial.
const SERIAL_MAX: u32 = 1000;
/// The account every feed belongs to.
const READER: &str = "reader";

/// The statements of the route contract.
#[derive(Clone, Copy, Debug)]
enum Sql {
    Account,
    Articles,
    FeedbackGrouped,
    FeedbackOne,
    Serial,
}

impl Sql {
    const ALL: [Sql; 5] = [
        Sql::Account,
        Sql::Articles,
        Sql::FeedbackGrouped,
        Sql::FeedbackOne,
        Sql::Serial,
    ];

    fn text(self) -> &'static str {
        match self {
            Sql::Account => "SELECT id, name FROM accounts WHERE name = $1",
            Sql::Articles => "SELECT id, title FROM articles WHERE account_id = $1 ORDER BY id",
            Sql::FeedbackGrouped => {
                "SELECT article_id, count(*) FROM feedback WHERE article_id = ANY($1) GROUP BY article_id"
            }
            Sql::FeedbackOne => "SELECT count(*) FROM feedback WHERE article_id = $1",
            Sql::Serial => "SELECT 1",
        }
    }
}

/// Statement mode, one per study row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Cached,
    Raw,
}

impl Mode {
    fn parse(s: &str) -> Result<Mode, String> {
        match s.trim() {
            "" | "cached" => Ok(Mode::Cached),
            "raw" => Ok(Mode::Raw),
            other => Err(format!(
                "RTTLAB_AXUM_MODE={other:?} is unknown: use cached or raw"
            )),
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Mode::Cached => "cached",
            Mode::Raw => "raw",
        })
    }
}

/// One database connection and, in cached mode, its prepared statements
/// (indexed like `Sql::ALL`).
struct Conn {
    client: Client,
    prepared: Option<Vec<Statement>>,
}

impl Conn {
    async fn query(
        &self,
        sql: Sql,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Row>, AppError> {
        let res = match &self.prepared {
            Some(stmts) => self.client.query(&stmts[sql as usize], params).await,
            None => self.client.query(sql.text(), params).await,
        };
        res.map_err(|e| AppError::db(sql, e))
    }
}

/// Opens one connection and, in cached mode, prepares every statement on it.
async fn connect(cfg: &Config, mode: Mode) -> Result<Conn, String> {
    let (client, connection) = cfg
        .connect(NoTls)
        .await
        .map_err(|e| format!("connect: {e}"))?;
    tokio::spawn(async move {
        if let Err(e) = connection.await {
            eprintln!("rttlab-axum: database connection ended: {e}");
        }
    });
    let prepared = match mode {
        Mode::Raw => None,
        Mode::Cached => {
            let mut stmts = Vec::with_capacity(Sql::ALL.len());
            for sql in Sql::ALL {
                let st = client
                    .prepare(sql.text())
                    .await
                    .map_err(|e| format!("prepare {sql:?} ({}): {e}", sql.text()))?;
                stmts.push(st);
            }
            Some(stmts)
        }
    };
    Ok(Conn { client, prepared })
}

/// Connects, retrying while the database starts.
async fn connect_with_retry(cfg: &Config, mode: Mode, wait: Duration) -> Result<Conn, String> {
    let start = Instant::now();
    let mut attempts = 0u32;
    loop {
        attempts += 1;
        match connect(cfg, mode).await {
            Ok(c) => return Ok(c),
            Err(e) if start.elapsed() < wait => {
                if attempts == 1 || attempts % 10 == 0 {
                    eprintln!("rttlab-axum: database not ready (attempt {attempts}): {e}");
                }
                tokio::time::sleep(DB_RETRY).await;
            }
            Err(e) => {
                return Err(format!(
                    "database not reachable after {attempts} attempts in {:?}: {e}",
                    start.elapsed()
                ))
            }
        }
    }
}

struct AppState {
    mode: Mode,
    cfg: Config,
    conn: RwLock<Arc<Conn>>,
    reconnect: Mutex<()>,
}

impl AppState {
    /// Returns the live connection, reconnecting once if it was lost.
    async fn conn(&self) -> Result<Arc<Conn>, AppError> {
        let cur = self.current();
        if !cur.client.is_closed() {
            return Ok(cur);
        }
        let _guard = self.reconnect.lock().await;
        let cur = self.current();
        if !cur.client.is_closed() {
            return Ok(cur);
        }
        let fresh = Arc::new(connect(&self.cfg, self.mode).await.map_err(|e| AppError {
            status: StatusCode::SERVICE_UNAVAILABLE,
            msg: format!("reconnect to database: {e}"),
        })?);
        *self.conn.write().unwrap_or_else(|p| p.into_inner()) = fresh.clone();
        eprintln!("rttlab-axum: reconnected to the database");
        Ok(fresh)
    }

    fn current(&self) -> Arc<Conn> {
        self.conn.read().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// An error answered as `{"error": "..."}`.
#[derive(Debug)]
struct AppError {
    status: StatusCode,
    msg: String,
}

impl AppError {
    fn db(sql: Sql, e: tokio_postgres::Error) -> AppError {
        AppError {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            msg: format!("query {sql:?}: {e}"),
        }
    }

    fn internal(msg: String) -> AppError {
        AppError {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            msg,
        }
    }
}

impl IntoResponse for AppError {
    fn into_response(self) -> Response {
        (self.status, Json(json!({ "error": self.msg }))).into_response()
    }
}

#[derive(Serialize)]
struct Account {
    id: i32,
    name: String,
}

#[derive(Serialize)]
struct Article {
    id: i32,
    title: String,
    feedback: i64,
}

#[derive(Serialize)]
struct Feed {
    account: Account,
    articles: Vec<Article>,
}

fn col<'a, T: tokio_postgres::types::FromSql<'a>>(
    row: &'a Row,
    idx: usize,
    what: &str,
) -> Result<T, AppError> {
    row.try_get(idx)
        .map_err(|e| AppError::internal(format!("read {what}: {e}")))
}

/// Statements 1 and 2 of both feeds: the reader account, then its articles
/// (feedback counts still zero).
async fn account_and_articles(c: &Conn) -> Result<(Account, Vec<Article>), AppError> {
    let rows = c.query(Sql::Account, &[&READER]).await?;
    let row = rows
        .first()
        .ok_or_else(|| AppError::internal(format!("account {READER:?} is missing: seed the database")))?;
    let account = Account {
        id: col(row, 0, "accounts.id")?,
        name: col(row, 1, "accounts.name")?,
    };
    let rows = c.query(Sql::Articles, &[&account.id]).await?;
    let mut articles = Vec::with_capacity(rows.len());
    for row in &rows {
        articles.push(Article {
            id: col(row, 0, "articles.id")?,
            title: col(row, 1, "articles.title")?,
            feedback: 0,
        });
    }
    Ok((account, articles))
}

/// GET /feed: account, articles, one grouped feedback count (3 statements).
async fn feed(State(st): State<Arc<AppState>>) -> Result<Json<Feed>, AppError> {
    let c = st.conn().await?;
    let (account, mut articles) = account_and_articles(&c).await?;
    let ids: Vec<i32> = articles.iter().map(|a| a.id).collect();
    let rows = c.query(Sql::FeedbackGrouped, &[&ids]).await?;
    let mut counts = HashMap::with_capacity(rows.len());
    for row in &rows {
        let id: i32 = col(row, 0, "feedback.article_id")?;
        let n: i64 = col(row, 1, "count")?;
        counts.insert(id, n);
    }
    for a in &mut articles {
        a.feedback = counts.get(&a.id).copied().unwrap_or(0);
    }
    Ok(Json(Feed { account, articles }))
}

/// GET /feed-naive: account, articles, one feedback count per article
/// (2 + articles statements; 12 with the seeded 10 articles).
async fn feed_naive(State(st): State<Arc<AppState>>) -> Result<Json<Feed>, AppError> {
    let c = st.conn().await?;
    let (account, mut articles) = account_and_articles(&c).await?;
    for a in &mut articles {
        let rows = c.query(Sql::FeedbackOne, &[&a.id]).await?;
        let row = rows
            .first()
            .ok_or_else(|| AppError::internal("count returned no row".to_string()))?;
        a.feedback = col(row, 0, "count")?;
    }
    Ok(Json(Feed { account, articles }))
}

/// The query string of /serial as decoded pairs, or why it could not be read.
type SerialQuery = Result<Query<Vec<(String, String)>>, QueryRejection>;

/// Parses the n of /serial: exactly one value, an integer 0..=SERIAL_MAX.
fn parse_n(q: SerialQuery) -> Result<u32, AppError> {
    let bad = |msg: String| AppError {
        status: StatusCode::BAD_REQUEST,
        msg,
    };
    let Query(pairs) = q.map_err(|e| bad(format!("bad query string: {e}")))?;
    let values: Vec<&str> = pairs
        .iter()
        .filter(|(k, _)| k == "n")
        .map(|(_, v)| v.as_str())
        .collect();
    let raw = match values.as_slice() {
        [v] => *v,
        [] => {
            return Err(bad(format!(
                "query parameter n is required: /serial?n=N with 0 <= N <= {SERIAL_MAX}"
            )))
        }
        _ => return Err(bad("query parameter n is given more than once".to_string())),
    };
    match raw.parse::<u32>() {
        Ok(n) if n <= SERIAL_MAX => Ok(n),
        _ => Err(bad(format!(
            "n={raw:?} is invalid: want an integer 0 <= n <= {SERIAL_MAX}"
        ))),
    }
}

/// GET /serial?n=N: N sequential `SELECT 1`.
async fn serial(
    State(st): State<Arc<AppState>>,
    q: SerialQuery,
) -> Result<Json<serde_json::Value>, AppError> {
    let n = parse_n(q)?;
    if n == 0 {
        return Ok(Json(json!({ "n": 0 })));
    }
    let c = st.conn().await?;
    for _ in 0..n {
        c.query(Sql::Serial, &[]).await?;
    }
    Ok(Json(json!({ "n": n })))
}

async fn health() -> Json<serde_json::Value> {
    Json(json!({ "status": "ok" }))
}

async fn not_found() -> AppError {
    AppError {
        status: StatusCode::NOT_FOUND,
        msg: "not found".to_string(),
    }
}

async fn method_not_allowed() -> AppError {
    AppError {
        status: StatusCode::METHOD_NOT_ALLOWED,
        msg: "method not allowed: use GET".to_string(),
    }
}

fn router(state: Arc<AppState>) -> Router {
    Router::new()
        .route("/health", get(health))
        .route("/feed", get(feed))
        .route("/feed-naive", get(feed_naive))
        .route("/serial", get(serial))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .with_state(state)
}

/// Builds the connection settings from the libpq environment variables.
fn pg_config() -> Result<Config, String> {
    let var = |k: &str, def: &str| env::var(k).ok().filter(|v| !v.is_empty()).unwrap_or_else(|| def.to_string());
    let user = var("PGUSER", "postgres");
    let port = var("PGPORT", "5432");
    let port: u16 = port
        .parse()
        .map_err(|_| format!("PGPORT={port:?} is not a port number"))?;
    let mut cfg = Config::new();
    cfg.host(&var("PGHOST", "localhost"))
        .port(port)
        .dbname(&var("PGDATABASE", &user))
        .user(&user)
        .application_name("rttlab-axum")
        .connect_timeout(Duration::from_secs(5))
        .keepalives(true);
    if let Ok(pw) = env::var("PGPASSWORD") {
        cfg.password(pw);
    }
    Ok(cfg)
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(e) => {
                eprintln!("rttlab-axum: cannot watch SIGTERM: {e}");
                std::future::pending::<()>().await
            }
        }
    };
    tokio::select! {
        _ = ctrl_c => {},
        _ = term => {},
    }
}

async fn run() -> Result<(), String> {
    let mode = Mode::parse(&env::var("RTTLAB_AXUM_MODE").unwrap_or_default())?;
    let port = env::var("PORT").ok().filter(|v| !v.is_empty()).unwrap_or_else(|| "8080".to_string());
    let port: u16 = port
        .parse()
        .map_err(|_| format!("PORT={port:?} is not a port number"))?;
    let cfg = pg_config()?;
    let conn = connect_with_retry(&cfg, mode, DB_WAIT).await?;
    let state = Arc::new(AppState {
        mode,
        cfg,
        conn: RwLock::new(Arc::new(conn)),
        reconnect: Mutex::new(()),
    });
    let addr = SocketAddr::from((Ipv6Addr::UNSPECIFIED, port));
    let listener = match tokio::net::TcpListener::bind(addr).await {
        Ok(l) => l,
        // Hosts without IPv6 still get an IPv4 listener.
        Err(_) => tokio::net::TcpListener::bind(SocketAddr::from(([0, 0, 0, 0], port)))
            .await
            .map_err(|e| format!("listen on port {port}: {e}"))?,
    };
    eprintln!("rttlab-axum: mode={mode} listening on :{port}");
    axum::serve(listener, router(state))
        .with_graceful_shutdown(shutdown_signal())
        .await
        .map_err(|e| format!("serve: {e}"))
}

#[tokio::main]
async fn main() {
    if let Err(e) = run().await {
        eprintln!("rttlab-axum: {e}");
        std::process::exit(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mode_parse() {
        assert_eq!(Mode::parse("").unwrap(), Mode::Cached);
        assert_eq!(Mode::parse("cached").unwrap(), Mode::Cached);
        assert_eq!(Mode::parse(" raw ").unwrap(), Mode::Raw);
        assert!(Mode::parse("prepared").is_err());
    }

    fn q(s: &str) -> SerialQuery {
        let uri: axum::http::Uri = format!("/serial?{s}").parse().unwrap();
        Query::try_from_uri(&uri)
    }

    #[test]
    fn serial_n() {
        assert_eq!(parse_n(q("n=0")).unwrap(), 0);
        assert_eq!(parse_n(q("n=1000")).unwrap(), 1000);
        for bad in ["n=1001", "n=-1", "n=abc", "n=", "m=3", "n=1.5", "n=1&n=2", "n=%20"] {
            let err = parse_n(q(bad)).unwrap_err();
            assert_eq!(err.status, StatusCode::BAD_REQUEST, "{bad}");
        }
    }

    #[test]
    fn statement_indexes_match() {
        for (i, s) in Sql::ALL.iter().enumerate() {
            assert_eq!(*s as usize, i);
        }
    }
}
