//! What `calibrate` and `validate` need from a database, behind one interface: connect with a
//! timeout; create, recognise and drop their own marked schema (refusing a foreign one of the
//! same name); settle between runs; read the commit-durability setting; count log flushes;
//! and run `UPDATE … SET count = count + 1` on one counter row. Each database is one file —
//! [`postgresql`], [`mariadb`] (MariaDB and MySQL) — registered in [`Target::parse`] by the
//! connection string's scheme. A third database is its file (a [`Database`] and its
//! [`Session`]) and one line there.

pub mod mariadb;
pub mod postgresql;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use super::checkpoints::CheckpointCounters;
use crate::error::InputError;

/// How long a connection attempt may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// The longest any statement may run (a load's update waits at most this for its row).
pub const STATEMENT_TIMEOUT: Duration = Duration::from_secs(15);

/// The schema (a database, on MariaDB and MySQL) calibration creates and drops.
pub const SCHEMA: &str = "shardsim_calibration";
/// The counter rows' table, qualified.
pub const COUNTERS: &str = "shardsim_calibration.counters";
/// The marker table that says shardsim made the schema, qualified.
pub const MARKER: &str = "shardsim_calibration.shardsim_marker";
/// What the marker table holds.
pub const MARK: &str = "created by shardsim calibrate; dropped when it ends";

/// A server that cannot be used: unreachable, a refused login, missing privileges (exit 3).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{target}: {message}")]
pub struct DbFailure {
    /// The server as shown (no password).
    pub(crate) target: String,
    /// What failed.
    pub(crate) message: String,
}

/// Whose the schema of shardsim's name is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ownership {
    /// There is none.
    Absent,
    /// Shardsim's (it has the marker).
    Ours,
    /// Someone else's.
    Foreign,
}

/// Whether a server's commits wait for their log flush, in its own words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Durability {
    /// The setting's name: `synchronous_commit`, `innodb_flush_log_at_trx_commit`.
    pub(crate) setting: &'static str,
    /// Its value as the server shows it.
    pub(crate) value: String,
    /// Whether a commit is answered only after its log is flushed.
    pub(crate) durable: bool,
}

#[cfg(test)]
impl Durability {
    /// PostgreSQL with durable commits, for tests.
    pub fn postgres_on() -> Durability {
        Durability {
            setting: "synchronous_commit",
            value: "on".into(),
            durable: true,
        }
    }

    /// PostgreSQL without durable commits, for tests.
    pub fn postgres_off() -> Durability {
        Durability {
            setting: "synchronous_commit",
            value: "off".into(),
            durable: false,
        }
    }
}

impl fmt::Display for Durability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} = {}", self.setting, self.value)
    }
}

/// A server's process serving a connection, for the scheduling check of [`super::host`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerProcess {
    /// Its process id on the server's machine.
    pub(crate) pid: u32,
    /// Its command name (`/proc/PID/comm`) when it is on this machine.
    pub(crate) command: &'static str,
}

/// A database `calibrate` can connect to.
pub trait Database: Send + Sync {
    /// The server as the tool shows it: where, which database, which user; never a password.
    fn shown(&self) -> &str;

    /// Opens one connection (the caller bounds the time it may take).
    fn open(&self) -> Result<Box<dyn Session>, String>;
}

/// One open connection. Every error is the server's or the network's, in one line.
pub trait Session: Send {
    /// Takes the server-wide lock that one calibration at a time holds while it runs (held
    /// until this connection closes, so a killed run lets go of it): `false` when another
    /// connection holds it.
    fn lock_the_run(&mut self) -> Result<bool, String>;

    /// Whether the schema of shardsim's name exists and is shardsim's.
    fn ownership(&mut self) -> Result<Ownership, String>;

    /// Creates the schema, its marker and `rows` counter rows of post 1 (shards 0 … rows − 1).
    fn create_schema(&mut self, rows: u32) -> Result<(), String>;

    /// Drops the schema (the caller has checked it is shardsim's).
    fn drop_schema(&mut self) -> Result<(), String>;

    /// Prepares the update [`Session::increment`] runs.
    fn prepare_increment(&mut self) -> Result<(), String>;

    /// Adds one to counter row `shard` of post 1, committed on its own.
    fn increment(&mut self, shard: i32) -> Result<(), String>;

    /// Brings the database to the same state before each run (old row versions cleaned up, a
    /// checkpoint), where the user may; nothing is required.
    fn settle(&mut self);

    /// The server's log flushes (syncs) so far, when it says.
    fn log_flushes(&mut self) -> Option<i64>;

    /// The server's commit durability.
    fn durability(&mut self) -> Result<Durability, String>;

    /// The server process serving this connection, when the server tells.
    fn server_process(&mut self) -> Option<ServerProcess>;

    /// The server's checkpoint counters, when it keeps them (PostgreSQL; InnoDB's give no
    /// timing).
    fn checkpoints(&mut self) -> Option<CheckpointCounters> {
        None
    }

    /// The server's time between scheduled checkpoints, s, when it has one.
    fn checkpoint_interval_s(&mut self) -> Option<f64> {
        None
    }
}

/// The database to calibrate against, chosen by the connection string.
#[derive(Clone)]
pub struct Target {
    database: Arc<dyn Database>,
}

impl fmt::Debug for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Target").field(&self.shown()).finish()
    }
}

impl Target {
    /// Parses `conn` (flag `--db`): `mysql://…` or `mariadb://…` is MariaDB or MySQL;
    /// `postgres://…`, `postgresql://…` or libpq's key=value form is PostgreSQL.
    pub fn parse(conn: &str) -> Result<Target, InputError> {
        let database: Arc<dyn Database> = if mariadb::MariaDb::claims(conn) {
            Arc::new(mariadb::MariaDb::parse(conn)?)
        } else {
            Arc::new(postgresql::Postgres::parse(conn)?)
        };
        Ok(Target { database })
    }

    /// The server as the tool shows it.
    pub fn shown(&self) -> &str {
        self.database.shown()
    }

    /// Opens a connection, or says in one line why it cannot. A client library's own timeout
    /// covers reaching the socket only; a server that accepts and then says nothing would hold
    /// the handshake for ever, so the whole of it is bounded by [`CONNECT_TIMEOUT`] (a
    /// handshake still waiting then is left to end with the process).
    pub fn connect(&self) -> Result<Box<dyn Session>, DbFailure> {
        let (sender, answer) = std::sync::mpsc::channel();
        let database = Arc::clone(&self.database);
        std::thread::spawn(move || {
            let _ = sender.send(database.open());
        });
        match answer.recv_timeout(CONNECT_TIMEOUT) {
            Ok(connected) => connected.map_err(|message| self.failure(message)),
            Err(_) => Err(self.failure(format!(
                "cannot reach the server: it accepted the connection but did not answer within {} s",
                CONNECT_TIMEOUT.as_secs()
            ))),
        }
    }

    /// A failure of this server, in one line.
    pub fn failure(&self, message: impl Into<String>) -> DbFailure {
        DbFailure {
            target: self.shown().to_owned(),
            message: message.into().replace('\n', " "),
        }
    }
}

/// Refuses a URL with a `%` not followed by two hex digits, as libpq does (a client library
/// would take it literally and look for a user or host named `%zz`).
fn check_percent_escapes(conn: &str) -> Result<(), InputError> {
    let bytes = conn.as_bytes();
    for (at, _) in conn.match_indices('%') {
        let escape = bytes.get(at + 1..at + 3);
        if !escape.is_some_and(|pair| pair.iter().all(u8::is_ascii_hexdigit)) {
            let shown: String = conn[at..].chars().take(3).collect();
            return Err(InputError::flag(
                "--db",
                format!(
                    "has an invalid percent escape \"{shown}\": a URL writes a reserved character as % and two hex digits (%40 for @)"
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scheme_chooses_the_database() {
        let shown = |conn: &str| Target::parse(conn).map(|t| t.shown().to_owned());
        assert_eq!(
            shown("host=/tmp/pg port=5433 dbname=app user=bob").unwrap(),
            "host=/tmp/pg port=5433 dbname=app user=bob"
        );
        assert_eq!(
            shown("mysql://bob@db.example:3307/app").unwrap(),
            "mysql host=db.example port=3307 dbname=app user=bob"
        );
        assert_eq!(
            shown("mariadb://bob@localhost/app?socket=/tmp/m/mysqld.sock").unwrap(),
            "mysql socket=/tmp/m/mysqld.sock dbname=app user=bob"
        );
    }

    #[test]
    fn durability_reads_as_the_setting() {
        let durability = Durability {
            setting: "innodb_flush_log_at_trx_commit",
            value: "2".into(),
            durable: false,
        };
        assert_eq!(durability.to_string(), "innodb_flush_log_at_trx_commit = 2");
    }
}
