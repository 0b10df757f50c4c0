use super::*;

#[test]
fn mix64_is_splitmix64_and_hash_user_spreads_users_evenly() {
    // SplitMix64 seeded with 0 (Vigna's reference generator): its first outputs are
    // mix64 of 0, γ, 2γ, 3γ.
    let gamma: u64 = 0x9E37_79B9_7F4A_7C15;
    let outputs: Vec<u64> = (0..4u64).map(|i| mix64(i.wrapping_mul(gamma))).collect();
    assert_eq!(
        outputs,
        [
            0xE220_A839_7B1D_CDAF,
            0x6E78_9E6A_A1B9_65F4,
            0x06C4_5D18_8009_454F,
            0xF88B_B8A8_724C_81EC
        ]
    );
    // 160,000 consecutive user ids over 16 rows: χ² with 15 degrees of freedom stays under
    // 37.7 with probability 0.999 for a uniform spread.
    let rows = 16u32;
    let mut counts = vec![0u64; rows as usize];
    for user in 0..160_000u64 {
        counts[(mix64(user) % u64::from(rows)) as usize] += 1;
    }
    let expected = 160_000.0 / f64::from(rows);
    let chi2: f64 = counts
        .iter()
        .map(|&c| (c as f64 - expected).powi(2) / expected)
        .sum();
    assert!(chi2 < 37.7, "χ² = {chi2:.1}: {counts:?}");
}

#[test]
fn earliest_free_prefers_the_earliest_then_the_lowest_index() {
    let mut rows = RowTable::new(3, Policy::EarliestFree, 1);
    let slots: Vec<u32> = (0..3).map(|_| rows.acquire(0, 0, 10, 0, 0).slot).collect();
    assert_eq!(slots, [0, 1, 2]);
    // All three free at 10: lowest index first.
    assert_eq!(
        rows.acquire(0, 20, 5, 0, 0),
        Grant {
            slot: 0,
            start: 20,
            tries: 1
        }
    );
    // Rows 1 and 2 are free at 10, row 0 at 25: row 1 (earliest, then lowest index).
    assert_eq!(
        rows.acquire(0, 20, 1, 0, 0),
        Grant {
            slot: 1,
            start: 20,
            tries: 1
        }
    );
    assert_eq!(rows.total(0), 5);
}

#[test]
fn round_robin_cycles_per_key() {
    let mut rows = RowTable::new(3, Policy::RoundRobin, 2);
    let a: Vec<u32> = (0..4).map(|_| rows.acquire(0, 0, 1, 0, 0).slot).collect();
    let b = rows.acquire(1, 0, 1, 0, 0).slot;
    assert_eq!((a, b), (vec![0, 1, 2, 0], 0));
}

#[test]
fn random_maps_bits_uniformly_onto_rows() {
    let mut rows = RowTable::new(4, Policy::Random, 1);
    assert_eq!(rows.acquire(0, 0, 1, 0, 0).slot, 0);
    assert_eq!(rows.acquire(0, 0, 1, u64::MAX, 0).slot, 3);
    assert_eq!(rows.acquire(0, 0, 1, 1 << 63, 0).slot, 2);
}

#[test]
fn hash_user_sends_a_user_to_the_same_row() {
    let mut rows = RowTable::new(16, Policy::HashUser, 1);
    let first = rows.acquire(0, 0, 1, 0, 9001).slot;
    assert!((0..10).all(|_| rows.acquire(0, 5, 1, 0, 9001).slot == first));
}

#[test]
fn large_key_spaces_index_only_touched_keys() {
    let mut rows = RowTable::new(4, Policy::Random, 10_000_000);
    assert!(matches!(rows.block_of_key, KeyIndex::Sparse(_)));
    rows.acquire(9_999_999, 0, 1, 0, 0);
    rows.acquire(3, 0, 1, 0, 0);
    assert_eq!(
        (rows.keys_touched(), rows.block_of(3), rows.total(9_999_999)),
        (2, Some(1), 1)
    );
    assert_eq!(rows.block_of(4), None);
}

#[test]
fn growth_adds_free_rows_at_zero_and_keeps_counts() {
    for policy in Policy::ALL {
        let mut rows = RowTable::new(2, policy, 4);
        for t in 0..4 {
            rows.acquire(0, t, 100, t.wrapping_mul(0x9E37_79B9_7F4A_7C15), t);
        }
        rows.acquire(1, 0, 100, 0, 0);
        rows.grow(0, 5);
        assert_eq!(
            (rows.rows_of(0), rows.total(0), rows.row_count(0, 4)),
            (5, 4, 0),
            "{policy}"
        );
        assert_eq!(
            (
                rows.rows_of(1),
                rows.total(1),
                rows.grand_total(),
                rows.rows_total()
            ),
            (2, 1, 5, 7)
        );
        if policy == Policy::EarliestFree {
            // The new rows are free now: the next three updates take them without waiting.
            let grants: Vec<Grant> = (0..3).map(|_| rows.acquire(0, 10, 1, 0, 0)).collect();
            assert_eq!(
                grants.iter().map(|g| (g.slot, g.start)).collect::<Vec<_>>(),
                [(2, 10), (3, 10), (4, 10)]
            );
        }
        rows.grow(0, 3);
        assert_eq!(rows.rows_of(0), 5, "never shrinks");
    }
}

#[test]
fn untouched_keys_have_no_rows() {
    let mut rows = RowTable::new(8, Policy::EarliestFree, 1000);
    rows.acquire(7, 0, 1, 0, 0);
    assert_eq!(rows.keys_touched(), 1);
    assert_eq!(rows.total(3), 0);
    assert_eq!(rows.total(5000), 0);
}
