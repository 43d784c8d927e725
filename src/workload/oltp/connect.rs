//! Where the tables live (`Target`, from `--db-driver` and its options) and
//! the one place a concrete driver is chosen: `Target::connect` opens a
//! SQLite, PostgreSQL or MySQL connection behind the `Conn` trait, and
//! `Target::dialect` gives that driver's `Dialect`: the rest of the
//! workload talks to these two traits only.

use std::path::{Path, PathBuf};

use anyhow::Result;

use super::driver::{Conn, Dialect};
use super::mysql_auth::ServerKey;
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
        /// Where the RSA key for a full authentication comes from.
        key: ServerKey,
        /// `--mysql-dry-run`: no server; every call succeeds unrun.
        dry_run: bool,
    },
}

impl Target {
    /// The database file, where the target is SQLite's; a server's files
    /// are the server's business.
    pub fn sqlite_path(&self) -> Option<&Path> {
        match self {
            Target::Sqlite { path } => Some(path),
            _ => None,
        }
    }

    /// After the tables are dropped: SQLite's file (with its WAL and
    /// shared-memory files) goes when nothing but sysbench's tables was in
    /// it. Nothing to do on a server.
    pub fn remove_if_empty(&self) -> Result<()> {
        if let Some(path) = self.sqlite_path() {
            if sqlite::table_count(path)? == 0 {
                for suffix in ["", "-wal", "-shm"] {
                    let mut p = path.as_os_str().to_owned();
                    p.push(suffix);
                    let _ = std::fs::remove_file(PathBuf::from(p));
                }
            }
        }
        Ok(())
    }

    /// The driver's differences in SQL and in how it is loaded.
    pub fn dialect(&self) -> &'static dyn Dialect {
        match self {
            Target::Sqlite { .. } => &sqlite::SqliteDialect,
            Target::Pgsql { .. } => &pgsql::PgDialect,
            Target::Mysql { .. } => &mysql::MyDialect,
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
            Target::Mysql { dry_run: true, .. } => Box::new(DryRun),
            Target::Mysql {
                host,
                port,
                socket,
                user,
                password,
                db,
                key,
                ..
            } => Box::new(mysql::My::connect(
                &mysql::Login {
                    host,
                    port: *port,
                    socket,
                    user,
                    password,
                    db,
                    key,
                },
                prepared,
            )?),
        })
    }

    /// For messages: where the tables are.
    pub fn describe(&self) -> String {
        match self {
            Target::Mysql { dry_run: true, .. } => "no MySQL server (--mysql-dry-run)".into(),
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

/// sysbench's `--mysql-dry-run`: a connection that pretends every call
/// succeeded without a server, answering no rows and changing none (so
/// every query counts as "other", as in sysbench's dry run).
struct DryRun;

impl Conn for DryRun {
    fn exec(
        &mut self,
        _sql: &str,
        _params: &[super::driver::Param],
    ) -> Result<u64, super::driver::DbError> {
        Ok(0)
    }
    fn batch(&mut self, _sql: &str) -> Result<(), super::driver::DbError> {
        Ok(())
    }
    fn table_exists(&mut self, _name: &str) -> Result<bool, super::driver::DbError> {
        Ok(false)
    }
    fn query(
        &mut self,
        _sql: &str,
        _params: Option<&[super::driver::Param]>,
    ) -> Result<super::driver::Rows, super::driver::DbError> {
        Ok(super::driver::Rows::default())
    }
    fn in_transaction(&mut self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn targets() -> [Target; 3] {
        let (host, user, password, db) = (
            "h".to_string(),
            "u".to_string(),
            String::new(),
            "d".to_string(),
        );
        [
            Target::Sqlite {
                path: PathBuf::from("x.sqlite"),
            },
            Target::Pgsql {
                host: host.clone(),
                port: 5432,
                user: user.clone(),
                password: password.clone(),
                db: db.clone(),
                auth: pgsql::Auth::Md5,
            },
            Target::Mysql {
                host,
                port: 3306,
                socket: String::new(),
                user,
                password,
                db,
                key: ServerKey::Refuse,
                dry_run: false,
            },
        ]
    }

    /// oltp_insert's statement with a generated id, and how each database
    /// is loaded: MySQL sends id 0, the others leave id out; only SQLite
    /// sends its own ids, loads in one transaction and one table at a time.
    #[test]
    fn each_target_has_its_drivers_dialect() {
        let expected = [
            (
                "sqlite",
                "INSERT INTO sbtest7 (k, c, pad) VALUES (5, 'c', 'p')",
                true,
            ),
            (
                "pgsql",
                "INSERT INTO sbtest7 (k, c, pad) VALUES (5, 'c', 'p')",
                false,
            ),
            (
                "mysql",
                "INSERT INTO sbtest7 (id, k, c, pad) VALUES (0, 5, 'c', 'p')",
                false,
            ),
        ];
        for (target, (name, insert, sqlite)) in targets().iter().zip(expected) {
            let d = target.dialect();
            assert_eq!(d.name(), name);
            assert_eq!(d.insert_generated_id(7, 5, "c", "p"), insert, "{name}");
            assert_eq!(d.load_sends_ids(), sqlite, "{name}");
            assert_eq!(d.load_in_one_transaction(), sqlite, "{name}");
            assert_eq!(d.one_writer(), sqlite, "{name}");
        }
    }
}
