use super::*;

#[test]
fn a_tiny_lognormal_is_written_with_its_p99_above_its_median() {
    // A fitted overhead whose p99 is within 0.1% of its median, both below a microsecond's
    // resolution: written as equal numbers, the scenario would be refused.
    for (median, p99) in [(0.0000567, 0.0000567), (0.0000004, 0.0000004), (0.25, 0.1)] {
        let text = format!("dist = \"lognormal\"\n{}", lognormal_text(median, p99));
        let table: toml::Table = toml::from_str(&text).unwrap();
        let written = |key: &str| table[key].as_float().unwrap();
        assert!(written("median_ms") > 0.0, "{text}");
        assert!(written("p99_ms") > written("median_ms"), "{text}");
    }
    assert_eq!(
        lognormal_text(0.1, 0.5),
        "median_ms = 0.100000\np99_ms = 0.500000\n"
    );
}
