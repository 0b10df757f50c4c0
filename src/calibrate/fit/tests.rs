use super::machine::lognormal;
use super::*;
use crate::scenario::ScenarioFile;

#[test]
fn a_tiny_lognormal_is_written_with_its_p99_above_its_median() {
    // A fitted overhead whose p99 is within 0.1% of its median, both below a microsecond's
    // resolution: written as equal numbers, the scenario would be refused.
    for (median, p99) in [(0.0000567, 0.0000567), (0.0000004, 0.0000004), (0.25, 0.1)] {
        let text = toml::to_string(&lognormal(median, p99)).unwrap();
        let table: toml::Table = toml::from_str(&text).unwrap();
        let written = |key: &str| table[key].as_float().unwrap();
        assert!(written("median_ms") > 0.0, "{text}");
        assert!(written("p99_ms") > written("median_ms"), "{text}");
    }
    assert_eq!(
        toml::to_string(&lognormal(0.1, 0.5)).unwrap(),
        "dist = \"lognormal\"\nmedian_ms = 0.1\np99_ms = 0.5\n"
    );
}

#[test]
fn the_sections_are_what_the_fit_simulates_and_read_back_as_written() {
    let machine = first_guess(&[], 2, true, GrantOrder::Random, 0.0123456789);
    let sections = machine.sections();
    for line in [
        "[hold]\ndist = \"constant\"\nms = ",
        "grant_order = \"random\"",
        "[machine]\ncores = 2\nwake_ms = 0.012346\n",
        "[wal]\nflush_ms = 0.1\ngroup_commit = true\n",
        "[client.overhead]\ndist = \"lognormal\"\n",
    ] {
        assert!(sections.contains(line), "{line:?} in\n{sections}");
    }
    let file: ScenarioFile = toml::from_str(&sections).unwrap();
    assert_eq!(file, machine.tables());
}
