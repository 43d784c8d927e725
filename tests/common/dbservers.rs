//! Private database servers for the tests: PostgreSQL and MariaDB from
//! Debian's packages, each started on a temporary data directory and a free
//! loopback port and stopped by its guard's `Drop` (also when a test fails).

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use super::{is_root, wait_until};

/// A loopback port free at the time of asking.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .expect("bind a loopback port")
        .local_addr()
        .unwrap()
        .port()
}

/// Runs `cmd`, panicking with its output if it fails.
pub fn run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A PostgreSQL cluster in a temporary directory, stopped and removed on drop.
pub struct Postgres {
    bin: PathBuf,
    dir: tempfile::TempDir,
    port: u16,
}

impl Postgres {
    fn bin_dir() -> Option<PathBuf> {
        let mut dirs: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
            .ok()?
            .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
            .filter(|p| p.join("initdb").exists())
            .collect();
        dirs.sort();
        dirs.pop()
    }

    /// As the `postgres` user when root: the server refuses to run as root.
    fn cmd(&self, tool: &str) -> Command {
        let path = self.bin.join(tool);
        if is_root() {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(path);
            c
        } else {
            Command::new(path)
        }
    }

    /// A fresh cluster with user `sbtest` (password `password`) owning
    /// database `sbtest`; None when PostgreSQL is not installed.
    pub fn start() -> Option<Postgres> {
        Self::start_on(None)
    }

    /// The same, also listening on `also.0` and letting clients of the
    /// network `also.1` (a CIDR) log in by password: a fleet's hosts in
    /// their network namespaces reach this machine only at its address on
    /// their link.
    pub fn start_on(also: Option<(&str, &str)>) -> Option<Postgres> {
        let bin = Self::bin_dir()?;
        let dir = tempfile::Builder::new()
            .prefix("virtperf-pg")
            .tempdir()
            .unwrap();
        if is_root() {
            run(Command::new("chown")
                .args(["-R", "postgres:"])
                .arg(dir.path()));
        }
        let pg = Postgres {
            bin,
            dir,
            port: free_port(),
        };
        let data = pg.data();
        run(pg
            .cmd("initdb")
            .args([
                "-U",
                "postgres",
                "--auth-local=trust",
                "--auth-host=scram-sha-256",
                "-D",
            ])
            .arg(&data)
            .stdout(Stdio::null()));
        let mut listen = "127.0.0.1".to_string();
        if let Some((addr, net)) = also {
            listen = format!("127.0.0.1,{addr}");
            let hba = data.join("pg_hba.conf");
            let mut rules = std::fs::read_to_string(&hba).unwrap();
            rules.push_str(&format!("host all all {net} scram-sha-256\n"));
            std::fs::write(&hba, rules).unwrap();
        }
        let opts = format!(
            // Deadlocks found in 10 ms, not the default 1 s: each would
            // otherwise stall the conflict test's threads for a second.
            "-p {} -k {} -c listen_addresses={listen} -c deadlock_timeout=10ms",
            pg.port,
            pg.dir.path().display()
        );
        run(pg
            .cmd("pg_ctl")
            .args(["-w", "-t", "60", "-D"])
            .arg(&data)
            .args(["-l"])
            .arg(pg.dir.path().join("log"))
            .args(["-o", &opts, "start"])
            .stdout(Stdio::null()));
        pg.psql("postgres", "CREATE USER sbtest PASSWORD 'password'");
        pg.psql("postgres", "CREATE DATABASE sbtest OWNER sbtest");
        Some(pg)
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// Runs SQL as the superuser over the Unix socket; returns the rows.
    pub fn psql(&self, db: &str, sql: &str) -> String {
        run(self
            .cmd("psql")
            .args(["-X", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h"])
            .arg(self.dir.path())
            .args([
                "-p",
                &self.port.to_string(),
                "-U",
                "postgres",
                "-d",
                db,
                "-c",
                sql,
            ]))
    }

    /// The port it listens on (127.0.0.1).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The driver options that reach it as `sbtest`.
    pub fn args(&self) -> Vec<String> {
        vec![
            "--db-driver=pgsql".into(),
            "--pgsql-host=127.0.0.1".into(),
            format!("--pgsql-port={}", self.port),
            "--pgsql-password=password".into(),
        ]
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        let _ = self
            .cmd("pg_ctl")
            .args(["-w", "-m", "immediate", "-D"])
            .arg(self.data())
            .arg("stop")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

/// A MariaDB server in a temporary directory, killed and removed on drop.
pub struct Mariadb {
    dir: tempfile::TempDir,
    port: u16,
    server: Child,
}

impl Mariadb {
    /// A fresh server with user `sbtest` (password `sbpass`) granted
    /// database `sbtest`; None when MariaDB is not installed.
    pub fn start() -> Option<Mariadb> {
        if Command::new("mariadbd").arg("--version").output().is_err()
            && !Path::new("/usr/sbin/mariadbd").exists()
        {
            return None;
        }
        let dir = tempfile::Builder::new()
            .prefix("virtperf-maria")
            .tempdir()
            .unwrap();
        let data = dir.path().join("data");
        // Its temporary tables in a directory of its own, not the shared
        // /tmp: a bootstrap once failed in CI with "Could not remove
        // temporary table: '/tmp/#sql-temptable-...'" beside the other lane.
        let tmp = dir.path().join("tmp");
        std::fs::create_dir(&tmp).unwrap();
        let tmpdir = format!("--tmpdir={}", tmp.display());
        // mariadbd refuses root unless told to run as root.
        let user: &[&str] = if is_root() { &["--user=root"] } else { &[] };
        run(Command::new("mariadb-install-db")
            .args([
                "--no-defaults",
                "--auth-root-authentication-method=normal",
                "--skip-test-db",
            ])
            .args(user)
            .arg(format!("--datadir={}", data.display()))
            .arg(&tmpdir)
            .stdout(Stdio::null()));
        let port = free_port();
        let server = Command::new("/usr/sbin/mariadbd")
            .args([
                "--no-defaults",
                "--bind-address=127.0.0.1",
                "--skip-name-resolve",
            ])
            .args(user)
            .arg(format!("--datadir={}", data.display()))
            .arg(format!("--port={port}"))
            .arg(&tmpdir)
            .arg(format!("--socket={}", dir.path().join("sock").display()))
            .arg(format!("--pid-file={}", dir.path().join("pid").display()))
            .arg(format!(
                "--log-error={}",
                dir.path().join("err.log").display()
            ))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start mariadbd");
        let mut m = Mariadb { dir, port, server };
        let up = wait_until(Duration::from_secs(60), || {
            m.client()
                .arg("-e")
                .arg("SELECT 1")
                .output()
                .is_ok_and(|o| o.status.success())
        });
        if !up {
            let log = std::fs::read_to_string(m.dir.path().join("err.log")).unwrap_or_default();
            let _ = m.server.kill();
            panic!("mariadbd did not come up within 60 s:\n{log}");
        }
        m.sql("CREATE DATABASE sbtest");
        m.sql("CREATE USER sbtest@'%' IDENTIFIED BY 'sbpass'");
        m.sql("GRANT ALL ON sbtest.* TO sbtest@'%'");
        Some(m)
    }

    /// The `mariadb` client, as root over the Unix socket.
    pub fn client(&self) -> Command {
        let mut c = Command::new("mariadb");
        c.args(["--no-defaults", "-uroot", "-N", "-B"]).arg(format!(
            "--socket={}",
            self.dir.path().join("sock").display()
        ));
        c
    }

    /// Runs SQL as root over the Unix socket; returns the rows.
    pub fn sql(&self, sql: &str) -> String {
        run(self.client().args(["-e", sql]))
    }

    /// The driver options that reach it as `sbtest`.
    pub fn args(&self) -> Vec<String> {
        vec![
            "--db-driver=mysql".into(),
            "--mysql-host=127.0.0.1".into(),
            format!("--mysql-port={}", self.port),
            "--mysql-password=sbpass".into(),
        ]
    }
}

impl Drop for Mariadb {
    fn drop(&mut self) {
        // SAFETY: kill(2) on our own child's pid.
        unsafe { libc::kill(self.server.id() as i32, libc::SIGTERM) };
        let done = wait_until(Duration::from_secs(30), || {
            self.server.try_wait().ok().flatten().is_some()
        });
        if !done {
            let _ = self.server.kill();
            let _ = self.server.wait();
        }
    }
}
