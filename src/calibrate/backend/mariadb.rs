//! MariaDB and MySQL: a `mysql://` or `mariadb://` URL (`?socket=/path` for a unix socket),
//! with the password taken only from `MYSQL_PWD` and never printed; a lock-wait and (on
//! MariaDB) a statement timeout on every connection. The schema is a database of InnoDB
//! tables; each update commits on its own (autocommit). Log flushes are InnoDB's fsyncs
//! (`Innodb_os_log_fsyncs` where the server counts them apart, else `Innodb_data_fsyncs`); the
//! durability is `innodb_flush_log_at_trx_commit` (1 flushes at every commit; 2 and 0 about
//! once a second).

use mysql::prelude::Queryable;
use mysql::{Conn, Opts, OptsBuilder, Statement};

use super::{
    CONNECT_TIMEOUT, COUNTERS, Database, Durability, MARK, MARKER, Ownership, SCHEMA,
    STATEMENT_TIMEOUT, ServerProcess, Session, check_percent_escapes,
};
use crate::error::InputError;

/// The URL schemes of this database.
const SCHEMES: [&str; 2] = ["mysql://", "mariadb://"];

/// A MariaDB or MySQL server.
#[derive(Debug, Clone)]
pub struct MariaDb {
    opts: Opts,
    shown: String,
}

impl MariaDb {
    /// Whether `conn` names a MariaDB or MySQL server.
    pub fn claims(conn: &str) -> bool {
        SCHEMES.iter().any(|scheme| conn.starts_with(scheme))
    }

    /// Parses `conn` (flag `--db`); the user defaults to `USER`, the password comes from
    /// `MYSQL_PWD`.
    pub fn parse(conn: &str) -> Result<MariaDb, InputError> {
        check_percent_escapes(conn)?;
        let url = match conn.strip_prefix("mariadb://") {
            Some(rest) => format!("mysql://{rest}"),
            None => conn.to_owned(),
        };
        let opts = Opts::from_url(&url).map_err(|err| {
            InputError::flag(
                "--db",
                format!(
                    "not a MariaDB/MySQL URL ({}): use mysql://user@host:port/db or mysql://user@localhost/db?socket=/path/to/mysqld.sock",
                    crate::error::clip(&err.to_string())
                ),
            )
        })?;
        if opts.get_pass().is_some() {
            return Err(InputError::flag(
                "--db",
                "holds a password: give it in MYSQL_PWD instead, so it is never in a command line or a log",
            ));
        }
        let user = opts
            .get_user()
            .map(str::to_owned)
            .unwrap_or_else(|| std::env::var("USER").unwrap_or_else(|_| "root".into()));
        let mut builder = OptsBuilder::from_opts(opts)
            .user(Some(user))
            .tcp_connect_timeout(Some(CONNECT_TIMEOUT))
            .read_timeout(Some(STATEMENT_TIMEOUT + CONNECT_TIMEOUT))
            .write_timeout(Some(STATEMENT_TIMEOUT + CONNECT_TIMEOUT))
            .prefer_socket(false);
        let shown = show(&Opts::from(builder.clone()));
        if let Ok(password) = std::env::var("MYSQL_PWD") {
            builder = builder.pass(Some(password));
        }
        Ok(MariaDb {
            opts: Opts::from(builder),
            shown,
        })
    }
}

/// `mysql socket=… dbname=… user=…` or `mysql host=… port=… …`, as the tool prints it.
fn show(opts: &Opts) -> String {
    let place = match opts.get_socket() {
        Some(socket) => format!("socket={}", crate::error::clip(socket)),
        None => format!(
            "host={} port={}",
            crate::error::clip(&opts.get_ip_or_hostname()),
            opts.get_tcp_port()
        ),
    };
    let db = opts
        .get_db_name()
        .map(|db| format!(" dbname={}", crate::error::clip(db)))
        .unwrap_or_default();
    format!(
        "mysql {place}{db} user={}",
        crate::error::clip(opts.get_user().unwrap_or("?"))
    )
}

impl Database for MariaDb {
    fn shown(&self) -> &str {
        &self.shown
    }

    fn open(&self) -> Result<Box<dyn Session>, String> {
        let mut conn = Conn::new(self.opts.clone()).map_err(|err| describe(&err))?;
        let seconds = STATEMENT_TIMEOUT.as_secs();
        conn.query_drop(format!("SET SESSION innodb_lock_wait_timeout = {seconds}"))
            .map_err(|err| describe(&err))?;
        // MariaDB's statement timeout; MySQL has none for updates (the lock wait bounds them).
        let _ = conn.query_drop(format!("SET SESSION max_statement_time = {seconds}"));
        Ok(Box::new(MariaDbSession {
            conn,
            increment: None,
        }))
    }
}

/// One connection to MariaDB or MySQL.
struct MariaDbSession {
    conn: Conn,
    increment: Option<Statement>,
}

impl MariaDbSession {
    /// A number the server answers `query` with.
    fn number(&mut self, query: &str) -> Result<Option<i64>, String> {
        self.conn
            .query_first::<i64, _>(query)
            .map_err(|err| describe(&err))
    }

    /// A global status counter, when the server has it.
    fn status(&mut self, name: &str) -> Option<i64> {
        self.conn
            .query_first::<(String, String), _>(format!("SHOW GLOBAL STATUS LIKE '{name}'"))
            .ok()
            .flatten()
            .and_then(|(_, value)| value.parse().ok())
    }
}

impl Session for MariaDbSession {
    fn lock_the_run(&mut self) -> Result<bool, String> {
        let got = self.number(&format!("SELECT GET_LOCK('{SCHEMA}', 0)"))?;
        Ok(got == Some(1))
    }

    fn ownership(&mut self) -> Result<Ownership, String> {
        let exists = self.number(&format!(
            "SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = '{SCHEMA}'"
        ))?;
        if exists.unwrap_or(0) == 0 {
            return Ok(Ownership::Absent);
        }
        let marked = self.number(&format!(
            "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = '{SCHEMA}' AND TABLE_NAME = 'shardsim_marker'"
        ))?;
        Ok(if marked.unwrap_or(0) > 0 {
            Ownership::Ours
        } else {
            Ownership::Foreign
        })
    }

    fn create_schema(&mut self, rows: u32) -> Result<(), String> {
        let values: Vec<String> = (0..rows.max(1))
            .map(|shard| format!("(1, {shard})"))
            .collect();
        for statement in [
            format!("CREATE DATABASE {SCHEMA}"),
            format!("CREATE TABLE {MARKER} (note text NOT NULL) ENGINE = InnoDB"),
            format!("INSERT INTO {MARKER} VALUES ('{MARK}')"),
            format!(
                "CREATE TABLE {COUNTERS} (post int NOT NULL, shard int NOT NULL, \
                 `count` bigint NOT NULL DEFAULT 0, PRIMARY KEY (post, shard)) ENGINE = InnoDB"
            ),
            format!(
                "INSERT INTO {COUNTERS} (post, shard) VALUES {}",
                values.join(", ")
            ),
        ] {
            self.conn
                .query_drop(statement)
                .map_err(|err| describe(&err))?;
        }
        Ok(())
    }

    fn drop_schema(&mut self) -> Result<(), String> {
        self.conn
            .query_drop(format!("DROP DATABASE {SCHEMA}"))
            .map_err(|err| describe(&err))
    }

    fn prepare_increment(&mut self) -> Result<(), String> {
        let statement = self
            .conn
            .prep(format!(
                "UPDATE {COUNTERS} SET `count` = `count` + 1 WHERE post = 1 AND shard = ?"
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
        self.conn
            .exec_drop(statement, (shard,))
            .map_err(|err| describe(&err))
    }

    /// InnoDB purges old row versions and flushes pages in the background; nothing to ask.
    fn settle(&mut self) {}

    fn log_flushes(&mut self) -> Option<i64> {
        self.status("Innodb_os_log_fsyncs")
            .or_else(|| self.status("Innodb_data_fsyncs"))
    }

    fn durability(&mut self) -> Result<Durability, String> {
        let value = self
            .number("SELECT @@innodb_flush_log_at_trx_commit")?
            .unwrap_or(1);
        Ok(Durability {
            setting: "innodb_flush_log_at_trx_commit",
            value: value.to_string(),
            durable: value == 1,
        })
    }

    fn server_process(&mut self) -> Option<ServerProcess> {
        let pid_file: String = self.conn.query_first("SELECT @@pid_file").ok()??;
        let pid = std::fs::read_to_string(pid_file)
            .ok()?
            .trim()
            .parse()
            .ok()?;
        let version: String = self.conn.query_first("SELECT VERSION()").ok()??;
        Some(ServerProcess {
            pid,
            command: if version.contains("MariaDB") {
                "mariadbd"
            } else {
                "mysqld"
            },
        })
    }
}

/// A MariaDB/MySQL error's cause in a user's words, on one line.
fn describe(err: &mysql::Error) -> String {
    match err {
        mysql::Error::MySqlError(db) => {
            let hint = match db.code {
                1045 | 1698 => " (check the user and MYSQL_PWD)",
                1044 | 1142 => {
                    " (the user needs CREATE and DROP on shardsim_calibration to make its own database)"
                }
                1049 => " (name an existing database in the URL, or none)",
                _ => "",
            };
            format!("{}{hint}", db.message)
        }
        other => format!("cannot reach the server: {other}"),
    }
    .replace('\n', " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_shown_without_a_password_and_a_password_is_refused() {
        let shown = |conn: &str| MariaDb::parse(conn).map(|db| db.shown);
        assert_eq!(
            shown("mysql://ann@db.example/likes").unwrap(),
            "mysql host=db.example port=3306 dbname=likes user=ann"
        );
        for conn in ["mysql://ann:secret@h/db", "mariadb://ann:secret@h"] {
            let err = shown(conn).unwrap_err().to_string();
            assert!(err.starts_with("--db: holds a password"), "{err}");
            assert!(!err.contains("secret"));
        }
        let err = shown("mysql://ann@h/db?sockett=/x")
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("--db: not a MariaDB/MySQL URL"), "{err}");
        let err = shown("mysql://%zz@h").unwrap_err().to_string();
        assert!(
            err.starts_with("--db: has an invalid percent escape"),
            "{err}"
        );
    }
}
