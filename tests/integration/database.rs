//! `shardsim calibrate` against a real PostgreSQL: the one `.ci/run` makes (a throwaway
//! cluster on a unix socket), named by `SHARDSIM_TEST_DB`. Without it when the tests are
//! built, the test runner lists the tests that need a server as ignored, saying what they
//! need; the error paths that need no server always run.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use postgres::{Client, NoTls};

use crate::common::{shardsim, stderr};

/// The tests share one server and one schema name: one at a time.
static SERVER: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The test server's connection string and the turn to use it, or `None` (the test is
/// skipped, and says so).
fn test_db(test: &str) -> Option<(String, std::sync::MutexGuard<'static, ()>)> {
    match std::env::var("SHARDSIM_TEST_DB") {
        Ok(conn) if !conn.is_empty() => {
            let turn = SERVER
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            Some((conn, turn))
        }
        _ => {
            eprintln!("skipped {test}: SHARDSIM_TEST_DB is not set (.ci/run sets it)");
            None
        }
    }
}

fn schema_exists(conn: &str) -> bool {
    let mut client = Client::connect(conn, NoTls).expect("the test server answers");
    client
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = 'shardsim_calibration')",
            &[],
        )
        .unwrap()
        .get(0)
}

/// A short calibration: 1 and 4 rows at 1 and 4 clients, half a second each.
fn calibrate(dir: &Path, conn: &str) -> std::process::Output {
    let out = dir.join("cal");
    shardsim(
        dir,
        &[
            "calibrate",
            "--db",
            conn,
            "--duration-s",
            "0.5",
            "--clients",
            "1,4",
            "--max-rows",
            "4",
            "--out",
            out.to_str().unwrap(),
            "--quiet",
        ],
    )
}

#[test]
#[cfg_attr(
    not(shardsim_test_db),
    ignore = "needs a PostgreSQL: set SHARDSIM_TEST_DB to a connection string when building the tests (.ci/run starts one)"
)]
fn calibrate_measures_fits_writes_and_leaves_nothing_behind() {
    let Some((conn, _turn)) = test_db("calibrate_measures_fits_writes_and_leaves_nothing_behind")
    else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let output = calibrate(dir.path(), &conn);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(!schema_exists(&conn), "the schema is dropped at the end");
    let out = dir.path().join("cal");
    for file in [
        "calibration.toml",
        "calibration.csv",
        "calibration.png",
        "calibration.svg",
    ] {
        assert!(out.join(file).exists(), "{file}");
    }
    let csv = std::fs::read_to_string(out.join("calibration.csv")).unwrap();
    // Five closed loops (1 row at 1, 4 and 64 clients — the herd of a backlogged stream — and
    // 4 rows at 1 and 4), the three open streams, then the busiest loop again.
    assert_eq!(csv.lines().count(), 1 + 9, "{csv}");
    assert!(csv.lines().nth(3).unwrap().starts_with("1,64,,"), "{csv}");
    let mut reader = csv::Reader::from_reader(csv.as_bytes());
    let header = reader.headers().unwrap().clone();
    let column = |name: &str| header.iter().position(|h| h == name).unwrap();
    let records: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    for record in &records {
        let measured: f64 = record[column("measured_tps")].parse().unwrap();
        assert!(measured > 50.0, "a real database commits: {record:?}");
    }
    for open in &records[5..8] {
        assert!(!open[column("offered_per_s")].is_empty(), "{open:?}");
        assert_eq!(&open[column("run")], "open");
        let steady: f64 = open[column("measured_steady_p99_ms")].parse().unwrap();
        assert!(steady > 0.0, "{open:?}");
    }
    for closed in records[..5].iter().chain(&records[8..]) {
        assert!(
            closed[column("measured_steady_p99_ms")].is_empty(),
            "{closed:?}"
        );
    }
    let again = &records[8];
    assert_eq!(
        (
            &again[column("rows")],
            &again[column("clients_or_connections")]
        ),
        ("4", "4")
    );
    assert_eq!(&again[column("run")], "again");
    let toml = std::fs::read_to_string(out.join("calibration.toml")).unwrap();
    assert!(
        toml.contains("# Steadiness: the busiest closed loop (4 rows, 4 clients)"),
        "{toml}"
    );
    assert!(
        toml.contains("[client.idle_overhead]") && toml.contains("idle_wake_cpu_ms"),
        "{toml}"
    );
    // The calibration drives a scenario.
    let scenario = dir.path().join("s.toml");
    std::fs::write(
        &scenario,
        "shards = [1, 4]\nduration_s = 2\n[arrivals]\nclients = 4\nthink_ms = 0\n",
    )
    .unwrap();
    let calibration = out.join("calibration.toml");
    let run = shardsim(
        dir.path(),
        &[
            "run",
            scenario.to_str().unwrap(),
            "--quiet",
            "--calibration",
            calibration.to_str().unwrap(),
            "--out",
            dir.path().join("run").to_str().unwrap(),
        ],
    );
    assert!(run.status.success(), "{}", stderr(&run));
}

#[test]
#[cfg_attr(
    not(shardsim_test_db),
    ignore = "needs a PostgreSQL: set SHARDSIM_TEST_DB to a connection string when building the tests (.ci/run starts one)"
)]
fn validate_measures_every_point_beside_its_prediction_and_leaves_nothing_behind() {
    let Some((conn, _turn)) =
        test_db("validate_measures_every_point_beside_its_prediction_and_leaves_nothing_behind")
    else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // A calibration of the slow kind, so that every open stream stays light on any server.
    let calibration = dir.path().join("calibration.toml");
    std::fs::write(
        &calibration,
        "[hold]\nms = 2\ngrant_order = \"random\"\n[machine]\ncores = 2\nwake_ms = 0.05\n\
         wake_cpu_ms = 0.005\n[machine.cpu]\nms = 0.05\n[client.overhead]\ndist = \"lognormal\"\n\
         median_ms = 0.1\np99_ms = 1\n",
    )
    .unwrap();
    // What calibrate measured for one of the closed loops: its drift is shown.
    std::fs::write(
        dir.path().join("calibration.csv"),
        "rows,clients_or_connections,offered_per_s,duration_s,measured_tps\n1,32,,5,1000.0\n",
    )
    .unwrap();
    let out = dir.path().join("val");
    let output = shardsim(
        dir.path(),
        &[
            "validate",
            "--db",
            &conn,
            "--calibration",
            calibration.to_str().unwrap(),
            "--duration-s",
            "0.5",
            "--repeats",
            "2",
            "--out",
            out.to_str().unwrap(),
            "--quiet",
        ],
    );
    // The made-up calibration may well miss (exit 1, naming each miss); it must not fail.
    let message = stderr(&output);
    assert!(
        matches!(output.status.code(), Some(0 | 1)),
        "{:?}: {message}",
        output.status
    );
    assert!(!schema_exists(&conn), "the schema is dropped at the end");
    let csv = std::fs::read_to_string(out.join("validation.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + 11, "{csv}");
    let mut reader = csv::Reader::from_reader(csv.as_bytes());
    for record in reader.records() {
        let record = record.unwrap();
        let measured: f64 = record[4].parse().unwrap();
        let predicted: f64 = record[5].parse().unwrap();
        assert!(measured > 50.0, "a real database commits: {record:?}");
        assert!(predicted > 50.0, "the model commits too: {record:?}");
        let missed = &record[14] == "false";
        assert_eq!(&record[15], "2", "every point measured twice: {record:?}");
        let number = |i: usize| record[i].parse::<f64>().unwrap();
        assert!(
            number(16) <= measured && measured <= number(17),
            "{record:?}"
        );
        assert!(
            number(18) <= number(9) && number(9) <= number(19),
            "{record:?}"
        );
        assert!(
            !missed || message.contains(&record[0]),
            "each miss is named: {message}"
        );
        // An open stream's steady p99, and its error where its p99 has one; none for a
        // closed loop.
        let open = !record[3].is_empty();
        assert_eq!(!record[23].is_empty(), open, "{record:?}");
        assert!(!open || number(23) > 0.0, "{record:?}");
        assert_eq!(
            record[24].is_empty(),
            !open || record[11].is_empty(),
            "{record:?}"
        );
        if &record[0] == "closed 32 clients, 1 row" {
            assert_eq!(&record[21], "1000.0", "{record:?}");
            assert!(
                (number(22) - (measured / 1000.0 - 1.0)).abs() < 1e-3,
                "{record:?}"
            );
        } else {
            assert!(record[21].is_empty() && record[22].is_empty(), "{record:?}");
        }
    }
    for chart in ["validation.png", "validation.svg"] {
        assert!(out.join(chart).exists(), "{chart}");
    }
}

#[test]
#[cfg_attr(
    not(shardsim_test_db),
    ignore = "needs a PostgreSQL: set SHARDSIM_TEST_DB to a connection string when building the tests (.ci/run starts one)"
)]
fn a_foreign_schema_of_the_same_name_is_refused_and_kept() {
    let Some((conn, _turn)) = test_db("a_foreign_schema_of_the_same_name_is_refused_and_kept")
    else {
        return;
    };
    let mut client = Client::connect(&conn, NoTls).unwrap();
    client
        .batch_execute(
            "CREATE SCHEMA shardsim_calibration; CREATE TABLE shardsim_calibration.theirs (x int)",
        )
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let output = calibrate(dir.path(), &conn);
    let message = stderr(&output);
    client
        .batch_execute("DROP SCHEMA shardsim_calibration CASCADE")
        .unwrap();
    assert_eq!(output.status.code(), Some(3), "{message}");
    assert!(
        message.contains("did not create it") && message.lines().count() == 1,
        "{message}"
    );
}

#[test]
#[cfg_attr(
    not(shardsim_test_db),
    ignore = "needs a PostgreSQL: set SHARDSIM_TEST_DB to a connection string when building the tests (.ci/run starts one)"
)]
fn an_interrupted_calibration_drops_its_schema() {
    let Some((conn, _turn)) = test_db("an_interrupted_calibration_drops_its_schema") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_shardsim"))
        .current_dir(dir.path())
        .args([
            "calibrate",
            "--db",
            &conn,
            "--duration-s",
            "5",
            "--clients",
            "2",
            "--quiet",
        ])
        .spawn()
        .unwrap();
    // Wait for the load to start (the schema exists), then interrupt.
    let mut started = false;
    for _ in 0..100 {
        std::thread::sleep(Duration::from_millis(100));
        if schema_exists(&conn) {
            started = true;
            break;
        }
    }
    assert!(started, "the calibration started");
    std::thread::sleep(Duration::from_millis(500));
    let pid = child.id().to_string();
    Command::new("kill").args(["-INT", &pid]).status().unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    assert!(
        !schema_exists(&conn),
        "the interrupted run dropped its schema"
    );
}

#[test]
#[cfg_attr(
    not(shardsim_test_db),
    ignore = "needs a PostgreSQL: set SHARDSIM_TEST_DB to a connection string when building the tests (.ci/run starts one)"
)]
fn an_unknown_role_is_one_line_and_exit_3() {
    let Some((conn, _turn)) = test_db("an_unknown_role_is_one_line_and_exit_3") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let conn = format!("{conn} user=no_such_role_here");
    let output = shardsim(dir.path(), &["calibrate", "--db", &conn, "--quiet"]);
    let message = stderr(&output);
    assert_eq!(output.status.code(), Some(3), "{message}");
    assert!(
        message.contains("no_such_role_here") && message.lines().count() == 1,
        "{message}"
    );
}

#[test]
fn an_unreachable_server_or_a_bad_string_fails_in_one_line_without_a_server() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "host=/nonexistent/socket/dir user=x dbname=x",
            3,
            "cannot reach the server",
        ),
        ("host='unterminated", 2, "--db: not a connection string"),
        (
            "postgres://u:secret@localhost/db",
            2,
            "--db: holds a password",
        ),
    ];
    for (conn, code, says) in cases {
        let output = shardsim(dir.path(), &["calibrate", "--db", conn, "--quiet"]);
        let message = stderr(&output);
        assert_eq!(output.status.code(), Some(code), "{conn}: {message}");
        assert!(
            message.contains(says) && message.lines().count() == 1 && !message.contains("secret"),
            "{conn}: {message}"
        );
        assert!(
            !dir.path().join("output").exists(),
            "{conn}: nothing written"
        );
    }
}

#[test]
fn a_server_that_accepts_and_never_answers_is_given_up_within_the_connect_timeout() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    // Accepts every connection and holds it open without a word.
    let held = std::thread::spawn(move || {
        let mut open = Vec::new();
        for stream in listener.incoming().take(4) {
            open.push(stream);
        }
        std::thread::sleep(Duration::from_secs(30));
    });
    let dir = tempfile::tempdir().unwrap();
    let conn = format!("host=127.0.0.1 port={port} user=x dbname=x");
    let started = std::time::Instant::now();
    let output = shardsim(dir.path(), &["calibrate", "--db", &conn, "--quiet"]);
    let message = stderr(&output);
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(output.status.code(), Some(3), "{message}");
    assert!(
        message.contains("did not answer within 5 s") && message.lines().count() == 1,
        "{message}"
    );
    drop(held);
}

#[test]
fn a_bad_calibration_is_refused_before_validate_reaches_the_server() {
    // An unreachable server: the calibration is judged first, as bad input naming its file
    // and field (exit 2); a good one goes on to the connection (exit 3).
    let dir = tempfile::tempdir().unwrap();
    let good = "[hold]\ndist = \"constant\"\nms = 0.01\n[machine]\ncores = 1\n\
                [machine.cpu]\ndist = \"constant\"\nms = 0.03\n";
    let cases = [
        (
            good.replace("cores = 1", "cores = 0"),
            2,
            "calibration.toml: machine.cores: ",
        ),
        (good.to_string(), 3, "cannot reach the server"),
    ];
    for (text, code, says) in cases {
        std::fs::write(dir.path().join("calibration.toml"), &text).unwrap();
        let output = shardsim(
            dir.path(),
            &[
                "validate",
                "--db",
                "host=/nonexistent/socket/dir user=x dbname=x",
                "--calibration",
                "calibration.toml",
                "--quiet",
            ],
        );
        let message = stderr(&output);
        assert_eq!(output.status.code(), Some(code), "{text}: {message}");
        assert!(
            message.contains(says) && message.lines().count() == 1,
            "{text}: {message}"
        );
        assert!(!dir.path().join("output").exists(), "nothing written");
    }
}
