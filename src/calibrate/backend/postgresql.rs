//! PostgreSQL: a libpq-style connection string or `postgres://` URL, completed as libpq would
//! (socket directory, port, user, database), with the password taken only from `PGPASSWORD`
//! or `~/.pgpass` (`PGPASSFILE`) and never printed; a statement timeout on every connection.
//! The schema is a schema; log flushes are `pg_stat_wal.wal_sync` (PostgreSQL 14 and later);
//! the durability is `synchronous_commit`; checkpoints are `pg_stat_checkpointer`'s
//! (`pg_stat_bgwriter`'s before 17) and their schedule `checkpoint_timeout`.

use std::path::{Path, PathBuf};
use std::str::FromStr;

use postgres::config::Host;
use postgres::{Client, Config, NoTls, Statement};

use super::super::checkpoints::CheckpointCounters;
use super::{
    COUNTERS, Database, Durability, MARK, MARKER, Ownership, SCHEMA, STATEMENT_TIMEOUT,
    ServerProcess, Session, check_percent_escapes,
};
use crate::error::InputError;

/// A PostgreSQL server and database.
#[derive(Debug, Clone)]
pub struct Postgres {
    config: Config,
    shown: String,
}

impl Postgres {
    /// Parses `conn` (flag `--db`) and completes it from the environment.
    pub fn parse(conn: &str) -> Result<Postgres, InputError> {
        if conn.starts_with("postgres://") || conn.starts_with("postgresql://") {
            check_percent_escapes(conn)?;
        }
        let mut config = Config::from_str(conn).map_err(|err| {
            // The library's own words ("unknown option `hots`") are in its error's cause.
            let why = std::error::Error::source(&err)
                .map_or_else(|| err.to_string(), ToString::to_string);
            InputError::flag(
                "--db",
                format!(
                    "not a connection string ({}): use key=value pairs (host=/var/run/postgresql dbname=app user=app) or a postgres://user@host:port/db URL",
                    crate::error::clip(&why)
                ),
            )
        })?;
        if config.get_password().is_some() {
            return Err(InputError::flag(
                "--db",
                "holds a password: give it in PGPASSWORD or ~/.pgpass instead, so it is never in a command line or a log",
            ));
        }
        if config.get_hosts().is_empty() {
            match std::env::var("PGHOST") {
                Ok(host) if !host.is_empty() => add_host(&mut config, &host),
                _ if Path::new("/var/run/postgresql").is_dir() => {
                    config.host_path("/var/run/postgresql");
                }
                _ => {
                    config.host("localhost");
                }
            }
        }
        if config.get_ports().is_empty() {
            let port = std::env::var("PGPORT")
                .ok()
                .and_then(|p| p.parse().ok())
                .unwrap_or(5432);
            config.port(port);
        }
        if config.get_user().is_none() {
            let user = std::env::var("PGUSER")
                .or_else(|_| std::env::var("USER"))
                .unwrap_or_else(|_| "postgres".into());
            config.user(&user);
        }
        if config.get_dbname().is_none() {
            let dbname = std::env::var("PGDATABASE")
                .unwrap_or_else(|_| config.get_user().unwrap_or("postgres").to_owned());
            config.dbname(&dbname);
        }
        config.connect_timeout(super::CONNECT_TIMEOUT);
        config.application_name("shardsim");
        config.options(&format!(
            "-c statement_timeout={}",
            STATEMENT_TIMEOUT.as_millis()
        ));
        let shown = show(&config);
        if let Some(password) = password_from_environment(&config) {
            config.password(password);
        }
        Ok(Postgres { config, shown })
    }
}

impl Database for Postgres {
    fn shown(&self) -> &str {
        &self.shown
    }

    fn open(&self) -> Result<Box<dyn Session>, String> {
        let client = self.config.connect(NoTls).map_err(|err| describe(&err))?;
        Ok(Box::new(PgSession {
            client,
            increment: None,
        }))
    }
}

/// One connection to PostgreSQL.
struct PgSession {
    client: Client,
    increment: Option<Statement>,
}

impl Session for PgSession {
    fn lock_the_run(&mut self) -> Result<bool, String> {
        self.client
            .query_one("SELECT pg_try_advisory_lock(hashtext($1))", &[&SCHEMA])
            .map(|row| row.get(0))
            .map_err(|err| describe(&err))
    }

    fn ownership(&mut self) -> Result<Ownership, String> {
        let exists: bool = self
            .client
            .query_one(
                "SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)",
                &[&SCHEMA],
            )
            .map_err(|err| describe(&err))?
            .get(0);
        if !exists {
            return Ok(Ownership::Absent);
        }
        let marked: bool = self
            .client
            .query_one(
                "SELECT EXISTS (SELECT 1 FROM pg_tables WHERE schemaname = $1 AND tablename = 'shardsim_marker')",
                &[&SCHEMA],
            )
            .map_err(|err| describe(&err))?
            .get(0);
        Ok(if marked {
            Ownership::Ours
        } else {
            Ownership::Foreign
        })
    }

    fn create_schema(&mut self, rows: u32) -> Result<(), String> {
        self.client
            .batch_execute(&format!(
                "CREATE SCHEMA {SCHEMA};
                 CREATE TABLE {MARKER} (note text NOT NULL);
                 INSERT INTO {MARKER} VALUES ('{MARK}');
                 CREATE TABLE {COUNTERS} (post int NOT NULL, shard int NOT NULL,
                     count bigint NOT NULL DEFAULT 0, PRIMARY KEY (post, shard));
                 INSERT INTO {COUNTERS} (post, shard) SELECT 1, s FROM generate_series(0, {}) AS s;",
                rows.max(1) - 1
            ))
            .map_err(|err| describe(&err))
    }

    fn drop_schema(&mut self) -> Result<(), String> {
        self.client
            .batch_execute(&format!("DROP SCHEMA {SCHEMA} CASCADE"))
            .map_err(|err| describe(&err))
    }

    fn prepare_increment(&mut self) -> Result<(), String> {
        let statement = self
            .client
            .prepare(&format!(
                "UPDATE {COUNTERS} SET count = count + 1 WHERE post = 1 AND shard = $1"
            ))
            .map_err(|err| describe(&err))?;
        self.increment = Some(statement);
        Ok(())
    }

    fn increment(&mut self, shard: i32) -> Result<(), String> {
        let statement = self
            .increment
            .as_ref()
            .ok_or("the update was not prepared")?;
        self.client
            .execute(statement, &[&shard])
            .map(drop)
            .map_err(|err| describe(&err))
    }

    fn settle(&mut self) {
        let _ = self.client.batch_execute(&format!("VACUUM {COUNTERS}"));
        let _ = self.client.batch_execute("CHECKPOINT");
    }

    fn log_flushes(&mut self) -> Option<i64> {
        self.client
            .query_one("SELECT wal_sync FROM pg_stat_wal", &[])
            .ok()
            .map(|row| row.get(0))
    }

    fn durability(&mut self) -> Result<Durability, String> {
        let value: String = self
            .client
            .query_one("SHOW synchronous_commit", &[])
            .map(|row| row.get(0))
            .map_err(|err| describe(&err))?;
        Ok(Durability {
            setting: "synchronous_commit",
            durable: value != "off",
            value,
        })
    }

    fn checkpoints(&mut self) -> Option<CheckpointCounters> {
        // pg_stat_checkpointer from PostgreSQL 17, pg_stat_bgwriter's columns before.
        let row = self
            .client
            .query_one(
                "SELECT (num_timed + num_requested)::bigint, write_time::float8, \
                 sync_time::float8 FROM pg_stat_checkpointer",
                &[],
            )
            .or_else(|_| {
                self.client.query_one(
                    "SELECT (checkpoints_timed + checkpoints_req)::bigint, \
                     checkpoint_write_time::float8, checkpoint_sync_time::float8 \
                     FROM pg_stat_bgwriter",
                    &[],
                )
            })
            .ok()?;
        Some(CheckpointCounters {
            count: row.get(0),
            write_ms: row.get(1),
            sync_ms: row.get(2),
        })
    }

    fn checkpoint_interval_s(&mut self) -> Option<f64> {
        self.client
            .query_one(
                "SELECT setting::float8 FROM pg_settings WHERE name = 'checkpoint_timeout'",
                &[],
            )
            .ok()
            .map(|row| row.get(0))
    }

    fn server_process(&mut self) -> Option<ServerProcess> {
        let pid: i32 = self
            .client
            .query_one("SELECT pg_backend_pid()", &[])
            .ok()?
            .get(0);
        Some(ServerProcess {
            pid: u32::try_from(pid).ok()?,
            command: "postgres",
        })
    }
}

/// Adds a host given as text: a socket directory when it is a path, else a host name.
fn add_host(config: &mut Config, host: &str) {
    if host.starts_with('/') {
        config.host_path(host);
    } else {
        config.host(host);
    }
}

/// `host=… port=… dbname=… user=…`, as the tool prints it.
fn show(config: &Config) -> String {
    let host = match config.get_hosts().first() {
        Some(Host::Tcp(name)) => crate::error::clip(name).into_owned(),
        Some(Host::Unix(path)) => crate::error::clip_path(path),
        None => "?".into(),
    };
    format!(
        "host={host} port={} dbname={} user={}",
        config.get_ports().first().copied().unwrap_or(5432),
        crate::error::clip(config.get_dbname().unwrap_or("?")),
        crate::error::clip(config.get_user().unwrap_or("?")),
    )
}

/// A database error's cause in a user's words, on one line.
fn describe(err: &postgres::Error) -> String {
    if let Some(db) = err.as_db_error() {
        let hint = match db.code().code() {
            "28P01" | "28000" => " (check the user, PGPASSWORD or ~/.pgpass)",
            "42501" => " (the user needs CREATE on the database to make its own schema)",
            "3D000" => " (name an existing database with dbname=)",
            _ => "",
        };
        return format!("{}{hint}", db.message()).replace('\n', " ");
    }
    let text = err.to_string();
    let cause = std::error::Error::source(err)
        .map(|source| source.to_string())
        .unwrap_or_default();
    let text = if cause.is_empty() || text.contains(&cause) {
        text
    } else {
        format!("{text}: {cause}")
    };
    format!("cannot reach the server: {text}").replace('\n', " ")
}

/// `PGPASSWORD`, else the first matching line of the password file.
fn password_from_environment(config: &Config) -> Option<String> {
    if let Ok(password) = std::env::var("PGPASSWORD") {
        return Some(password);
    }
    let file = std::env::var_os("PGPASSFILE")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| Path::new(&home).join(".pgpass")))?;
    let text = crate::input::read_text(
        &file,
        crate::input::MAX_PASSWORD_FILE_BYTES,
        "the password file",
    )
    .ok()?;
    let host = match config.get_hosts().first()? {
        Host::Tcp(name) => name.clone(),
        // libpq matches a socket connection as "localhost".
        Host::Unix(_) => "localhost".into(),
    };
    let port = config
        .get_ports()
        .first()
        .copied()
        .unwrap_or(5432)
        .to_string();
    let wanted = [
        host.as_str(),
        port.as_str(),
        config.get_dbname().unwrap_or(""),
        config.get_user().unwrap_or(""),
    ];
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .find_map(|line| pgpass_match(line, &wanted))
}

/// The password of a `.pgpass` line if its host, port, database and user match `wanted`
/// (`*` matches anything; `\:` and `\\` are escapes).
fn pgpass_match(line: &str, wanted: &[&str; 4]) -> Option<String> {
    let mut fields = Vec::with_capacity(5);
    let mut field = String::new();
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => field.extend(chars.next()),
            ':' if fields.len() < 4 => fields.push(std::mem::take(&mut field)),
            c => field.push(c),
        }
    }
    fields.push(field);
    if fields.len() != 5 {
        return None;
    }
    let matches = fields
        .iter()
        .zip(wanted)
        .all(|(pattern, value)| pattern == "*" || pattern == value);
    matches.then(|| fields[4].clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_value_strings_and_urls_are_completed_and_shown_without_a_password() {
        let target = Postgres::parse("host=/tmp/pg port=5433 dbname=app user=bob").unwrap();
        assert_eq!(target.shown, "host=/tmp/pg port=5433 dbname=app user=bob");
        let target = Postgres::parse("postgresql://carol@db.example:6000/likes").unwrap();
        assert_eq!(
            target.shown,
            "host=db.example port=6000 dbname=likes user=carol"
        );
    }

    #[test]
    fn a_password_in_the_string_or_a_malformed_string_is_refused_by_flag() {
        for conn in [
            "host=/tmp user=a password=secret",
            "postgres://a:secret@h/db",
        ] {
            let err = Postgres::parse(conn).unwrap_err().to_string();
            assert!(err.starts_with("--db: holds a password"), "{err}");
            assert!(!err.contains("secret"));
        }
        let err = Postgres::parse("host='unterminated")
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("--db: not a connection string"), "{err}");
        let err = Postgres::parse("hots=/tmp user=x").unwrap_err().to_string();
        assert!(err.contains("hots"), "the unknown key is named: {err}");
        for conn in [
            "postgres://%zz@h",
            "postgresql://u@h/db%4",
            "postgres://u@h/%",
        ] {
            let err = Postgres::parse(conn).unwrap_err().to_string();
            assert!(
                err.starts_with("--db: has an invalid percent escape"),
                "{err}"
            );
        }
        let target = Postgres::parse("postgres://b%40b@h/l%69kes").unwrap();
        assert_eq!(target.shown, "host=h port=5432 dbname=likes user=b@b");
    }

    #[test]
    fn pgpass_lines_match_with_wildcards_and_escapes() {
        let wanted = ["localhost", "5432", "app", "bob"];
        assert_eq!(
            pgpass_match("localhost:5432:app:bob:pw", &wanted),
            Some("pw".into())
        );
        assert_eq!(pgpass_match("*:*:*:bob:a\\:b", &wanted), Some("a:b".into()));
        assert_eq!(pgpass_match("otherhost:*:*:*:pw", &wanted), None);
        assert_eq!(pgpass_match("too:few:fields", &wanted), None);
    }
}
