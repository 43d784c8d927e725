//! The PostgreSQL driver (`--db-driver=pgsql`): the pure-Rust `postgres`
//! client without TLS, statements prepared once per connection, or sent as
//! text with `--db-ps-mode=disable`.

use std::collections::HashMap;
use std::error::Error as _;
use std::time::Duration;

use anyhow::Result;
use postgres::error::SqlState;
use postgres::types::{to_sql_checked, IsNull, ToSql, Type};
use postgres::{Client, NoTls, SimpleQueryMessage, Statement};

use super::driver::{inline, numbered, Conn, DbError, ErrorClass, Param};
use crate::core::options::CliError;

/// How long to wait for a server that does not answer.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

pub struct Pg {
    client: Client,
    prepared: bool,
    statements: HashMap<String, Statement>,
}

impl Pg {
    pub fn connect(
        host: &str,
        port: u16,
        user: &str,
        password: &str,
        db: &str,
        prepared: bool,
    ) -> Result<Pg> {
        let mut config = postgres::Config::new();
        config
            .host(host)
            .port(port)
            .user(user)
            .password(password)
            .dbname(db)
            .application_name("virtperf")
            .connect_timeout(CONNECT_TIMEOUT);
        let client = config.connect(NoTls).map_err(|e| {
            let why = match e.as_db_error() {
                Some(db_err) => format!(
                    "the server refused user '{user}' on database '{db}': {} (SQLSTATE {}); check --pgsql-user, --pgsql-password and --pgsql-db",
                    db_err.message(),
                    db_err.code().code()
                ),
                None => format!(
                    "{}; start the server or point --pgsql-host and --pgsql-port at it",
                    e.source().map(|s| s.to_string()).unwrap_or_else(|| e.to_string())
                ),
            };
            CliError::Usage(format!(
                "cannot connect to PostgreSQL at {host}:{port} (--pgsql-host={host} --pgsql-port={port}): {why}"
            ))
        })?;
        Ok(Pg {
            client,
            prepared,
            statements: HashMap::new(),
        })
    }
}

impl ToSql for Param {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut postgres::types::private::BytesMut,
    ) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match self {
            Param::Int(n) if *ty == Type::INT8 => n.to_sql(ty, out),
            Param::Int(n) => (*n as i32).to_sql(ty, out),
            Param::Text(s) => s.as_str().to_sql(ty, out),
        }
    }

    fn accepts(ty: &Type) -> bool {
        i32::accepts(ty) || i64::accepts(ty) || <&str>::accepts(ty)
    }

    to_sql_checked!();
}

fn classify(e: postgres::Error) -> DbError {
    let code = e.code().map(|c| c.code().to_string()).unwrap_or_default();
    // sysbench's pgsql driver restarts on deadlocks, serialization failures
    // and duplicate keys (a concurrent delete/insert of the same id).
    let retry = [
        SqlState::T_R_DEADLOCK_DETECTED,
        SqlState::T_R_SERIALIZATION_FAILURE,
        SqlState::UNIQUE_VIOLATION,
    ];
    let class = if e.code().is_some_and(|c| retry.contains(c)) {
        ErrorClass::Retry
    } else if e.is_closed() {
        ErrorClass::Lost
    } else {
        ErrorClass::Fatal
    };
    let message = match e.as_db_error() {
        Some(db) => db.message().to_string(),
        None => e.to_string(),
    };
    DbError {
        class,
        code,
        message,
    }
}

impl Conn for Pg {
    fn exec(&mut self, sql: &str, params: &[Param]) -> Result<u64, DbError> {
        if !self.prepared {
            let messages = self
                .client
                .simple_query(&inline(sql, params))
                .map_err(classify)?;
            let mut n = 0;
            for m in messages {
                match m {
                    SimpleQueryMessage::Row(_) => n += 1,
                    SimpleQueryMessage::CommandComplete(c) if n == 0 => n = c,
                    _ => {}
                }
            }
            return Ok(n);
        }
        let stmt = match self.statements.get(sql) {
            Some(s) => s.clone(),
            None => {
                let s = self.client.prepare(&numbered(sql)).map_err(classify)?;
                self.statements.insert(sql.to_string(), s.clone());
                s
            }
        };
        let refs: Vec<&(dyn ToSql + Sync)> =
            params.iter().map(|p| p as &(dyn ToSql + Sync)).collect();
        if stmt.columns().is_empty() {
            self.client.execute(&stmt, &refs).map_err(classify)
        } else {
            let rows = self.client.query(&stmt, &refs).map_err(classify)?;
            Ok(rows.len() as u64)
        }
    }

    fn batch(&mut self, sql: &str) -> Result<(), DbError> {
        self.client.batch_execute(sql).map_err(classify)
    }

    fn table_exists(&mut self, name: &str) -> Result<bool, DbError> {
        let row = self
            .client
            .query_one(
                "SELECT count(*) FROM information_schema.tables \
                 WHERE table_schema = current_schema() AND table_name = $1",
                &[&name],
            )
            .map_err(classify)?;
        Ok(row.get::<_, i64>(0) > 0)
    }
}
