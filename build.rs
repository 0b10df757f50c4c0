//! Tells the tests whether a PostgreSQL is at hand: with `SHARDSIM_TEST_DB` set when the
//! tests are built, the database tests run; without it the test runner lists them as ignored,
//! saying what they need.

fn main() {
    println!("cargo::rerun-if-env-changed=SHARDSIM_TEST_DB");
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rustc-check-cfg=cfg(shardsim_test_db)");
    if std::env::var_os("SHARDSIM_TEST_DB").is_some_and(|value| !value.is_empty()) {
        println!("cargo::rustc-cfg=shardsim_test_db");
    }
}
