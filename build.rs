//! Tells the tests whether a PostgreSQL and a MariaDB (or MySQL) are at hand: with
//! `SHARDSIM_TEST_DB` (`SHARDSIM_TEST_MYSQL`) set when the tests are built, that database's
//! tests run; without it the test runner lists them as ignored, saying what they need.

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    for (variable, cfg) in [
        ("SHARDSIM_TEST_DB", "shardsim_test_db"),
        ("SHARDSIM_TEST_MYSQL", "shardsim_test_mysql"),
    ] {
        println!("cargo::rerun-if-env-changed={variable}");
        println!("cargo::rustc-check-cfg=cfg({cfg})");
        if std::env::var_os(variable).is_some_and(|value| !value.is_empty()) {
            println!("cargo::rustc-cfg={cfg}");
        }
    }
}
