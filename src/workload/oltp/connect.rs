//! Where the tables live (`Target`, from `--db-driver` and its options) and
//! the one place a concrete driver is chosen: `Target::connect` opens a
//! SQLite, PostgreSQL or MySQL connection behind the `Conn` trait, which is
//! all the rest of the workload talks to.

use std::path::PathBuf;

use anyhow::Result;

use super::driver::{Conn, Dialect};
use super::{mysql, pgsql, sqlite};

/// Where the tables live.
#[derive(Debug, Clone)]
pub enum Target {
    Sqlite {
        path: PathBuf,
    },
    Pgsql {
        host: String,
        port: u16,
        user: String,
        password: String,
        db: String,
        auth: pgsql::Auth,
    },
    Mysql {
        host: String,
        port: u16,
        socket: String,
        user: String,
        password: String,
        db: String,
    },
}

impl Target {
    pub fn dialect(&self) -> Dialect {
        match self {
            Target::Sqlite { .. } => Dialect::Sqlite,
            Target::Pgsql { .. } => Dialect::Pgsql,
            Target::Mysql { .. } => Dialect::Mysql,
        }
    }

    /// Opens one connection; `create`: SQLite may create the file.
    /// `prepared`: `--db-ps-mode=auto` (server-side prepared statements).
    pub fn connect(&self, prepared: bool, create: bool) -> Result<Box<dyn Conn>> {
        Ok(match self {
            Target::Sqlite { path } => Box::new(sqlite::Sqlite::open(path, prepared, create)?),
            Target::Pgsql {
                host,
                port,
                user,
                password,
                db,
                auth,
            } => Box::new(pgsql::Pg::connect(
                host, *port, user, password, db, prepared, *auth,
            )?),
            Target::Mysql {
                host,
                port,
                socket,
                user,
                password,
                db,
            } => Box::new(mysql::My::connect(
                host, *port, socket, user, password, db, prepared,
            )?),
        })
    }

    /// For messages: where the tables are.
    pub fn describe(&self) -> String {
        match self {
            Target::Sqlite { path } => format!("SQLite database {}", path.display()),
            Target::Pgsql { host, port, db, .. } => {
                format!("PostgreSQL database '{db}' at {host}:{port}")
            }
            Target::Mysql {
                host,
                port,
                socket,
                db,
                ..
            } if socket.is_empty() => format!("MySQL database '{db}' at {host}:{port}"),
            Target::Mysql { socket, db, .. } => format!("MySQL database '{db}' at {socket}"),
        }
    }
}
