//! Tells the tests whether a PostgreSQL, a MariaDB (or MySQL) and a Slurm are at hand: with
//! `SHARDSIM_TEST_DB` (`SHARDSIM_TEST_MYSQL`, `SHARDSIM_TEST_SLURM`) set when the tests are
//! built, those tests run; without it the test runner lists them as ignored, saying what they
//! need.

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    for (variable, cfg) in [
        ("SHARDSIM_TEST_DB", "shardsim_test_db"),
        ("SHARDSIM_TEST_MYSQL", "shardsim_test_mysql"),
        ("SHARDSIM_TEST_SLURM", "shardsim_test_slurm"),
    ] {
        println!("cargo::rerun-if-env-changed={variable}");
        println!("cargo::rustc-check-cfg=cfg({cfg})");
        if std::env::var_os(variable).is_some_and(|value| !value.is_empty()) {
            println!("cargo::rustc-cfg={cfg}");
        }
    }
}
