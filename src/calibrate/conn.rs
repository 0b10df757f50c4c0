//! The database to calibrate against: a libpq-style connection string or `postgres://` URL,
//! completed as libpq would (socket directory, port, user, database), with the password taken
//! only from `PGPASSWORD` or `~/.pgpass` (`PGPASSFILE`) and never printed. Connections have a
//! connect timeout and a statement timeout, so no step can hang.

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use postgres::config::Host;
use postgres::{Client, Config, NoTls};

use crate::error::InputError;

/// How long a connection attempt may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// The longest any statement may run (a load's update waits at most this for its row).
const STATEMENT_TIMEOUT_MS: u32 = 15_000;

/// A server that cannot be used: unreachable, a refused login, missing privileges (exit 3).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{target}: {message}")]
pub struct DbFailure {
    /// The server as shown (no password).
    pub target: String,
    /// What failed.
    pub message: String,
}

/// A database to connect to.
#[derive(Debug, Clone)]
pub struct Target {
    config: Config,
    shown: String,
}

impl Target {
    /// Parses `conn` (flag `--db`) and completes it from the environment.
    pub fn parse(conn: &str) -> Result<Target, InputError> {
        check_percent_escapes(conn)?;
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
        config.connect_timeout(CONNECT_TIMEOUT);
        config.application_name("shardsim");
        config.options(&format!("-c statement_timeout={STATEMENT_TIMEOUT_MS}"));
        let shown = show(&config);
        if let Some(password) = password_from_environment(&config) {
            config.password(password);
        }
        Ok(Target { config, shown })
    }

    /// The server as the tool shows it: host or socket, port, database, user; no password.
    pub fn shown(&self) -> &str {
        &self.shown
    }

    /// Opens a connection, or says in one line why it cannot. The client library's own
    /// timeout covers reaching the socket only; a server that accepts and then says nothing
    /// would hold the handshake for ever, so the whole of it is bounded by [`CONNECT_TIMEOUT`]
    /// too (a handshake still waiting then is left to end with the process).
    pub fn connect(&self) -> Result<Client, DbFailure> {
        let (sender, answer) = std::sync::mpsc::channel();
        let config = self.config.clone();
        std::thread::spawn(move || {
            let _ = sender.send(config.connect(NoTls));
        });
        match answer.recv_timeout(CONNECT_TIMEOUT) {
            Ok(connected) => connected.map_err(|err| self.failure(&err)),
            Err(_) => Err(DbFailure {
                target: self.shown.clone(),
                message: format!(
                    "cannot reach the server: it accepted the connection but did not answer within {} s",
                    CONNECT_TIMEOUT.as_secs()
                ),
            }),
        }
    }

    /// A failure of this server, in one line.
    pub fn failure(&self, err: &postgres::Error) -> DbFailure {
        DbFailure {
            target: self.shown.clone(),
            message: describe(err),
        }
    }
}

/// Refuses a URL with a `%` not followed by two hex digits, as libpq does (the client library
/// would take it literally and look for a user or host named `%zz`).
fn check_percent_escapes(conn: &str) -> Result<(), InputError> {
    let is_url = ["postgres://", "postgresql://"]
        .iter()
        .any(|scheme| conn.starts_with(scheme));
    if !is_url {
        return Ok(());
    }
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
        let target = Target::parse("host=/tmp/pg port=5433 dbname=app user=bob").unwrap();
        assert_eq!(target.shown(), "host=/tmp/pg port=5433 dbname=app user=bob");
        let target = Target::parse("postgresql://carol@db.example:6000/likes").unwrap();
        assert_eq!(
            target.shown(),
            "host=db.example port=6000 dbname=likes user=carol"
        );
    }

    #[test]
    fn a_password_in_the_string_or_a_malformed_string_is_refused_by_flag() {
        for conn in [
            "host=/tmp user=a password=secret",
            "postgres://a:secret@h/db",
        ] {
            let err = Target::parse(conn).unwrap_err().to_string();
            assert!(err.starts_with("--db: holds a password"), "{err}");
            assert!(!err.contains("secret"));
        }
        let err = Target::parse("host='unterminated").unwrap_err().to_string();
        assert!(err.starts_with("--db: not a connection string"), "{err}");
        let err = Target::parse("hots=/tmp user=x").unwrap_err().to_string();
        assert!(err.contains("hots"), "the unknown key is named: {err}");
        for conn in [
            "postgres://%zz@h",
            "postgresql://u@h/db%4",
            "postgres://u@h/%",
        ] {
            let err = Target::parse(conn).unwrap_err().to_string();
            assert!(
                err.starts_with("--db: has an invalid percent escape"),
                "{err}"
            );
        }
        let target = Target::parse("postgres://b%40b@h/l%69kes").unwrap();
        assert_eq!(target.shown(), "host=h port=5432 dbname=likes user=b@b");
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
