use super::*;

#[test]
fn earliest_free_takes_the_row_released_first_then_the_lowest_index() {
    let mut links = Links::with_jobs(16);
    let mut locks = LockTable::new(3, Policy::EarliestFree, 1, GrantOrder::Fifo, 0);
    let grants: Vec<Request> = (0..4)
        .map(|job| locks.request(0, 0, 0, job, &mut links))
        .collect();
    assert_eq!(
        grants,
        [
            Request::Granted(0),
            Request::Granted(1),
            Request::Granted(2),
            Request::Queued(NONE)
        ]
    );
    // Row 2 is released first and goes to the waiting job; then 1 and 0 at the same time.
    assert_eq!(
        locks.release(2, 5, &mut links),
        Some(Handover {
            job: 3,
            waiters: 0,
            row: 2
        })
    );
    assert_eq!(locks.release(1, 7, &mut links), None);
    assert_eq!(locks.release(0, 7, &mut links), None);
    assert_eq!(locks.request(0, 0, 0, 4, &mut links), Request::Granted(0));
    assert_eq!(locks.request(0, 0, 0, 5, &mut links), Request::Granted(1));
    assert_eq!(locks.request(0, 0, 0, 6, &mut links), Request::Queued(NONE));
}

#[test]
fn fixed_policies_wait_for_their_own_row() {
    let mut links = Links::with_jobs(16);
    let mut locks = LockTable::new(2, Policy::RoundRobin, 1, GrantOrder::Fifo, 0);
    assert_eq!(locks.request(0, 0, 0, 0, &mut links), Request::Granted(0));
    assert_eq!(locks.request(0, 0, 0, 1, &mut links), Request::Granted(1));
    assert_eq!(locks.request(0, 0, 0, 2, &mut links), Request::Queued(0));
    assert_eq!(locks.request(0, 0, 0, 3, &mut links), Request::Queued(1));
    // Job 3 waits for row 1, so releasing row 0 hands it to job 2 only.
    assert_eq!(
        locks.release(0, 1, &mut links),
        Some(Handover {
            job: 2,
            waiters: 0,
            row: 0
        })
    );
    assert_eq!(locks.release(0, 2, &mut links), None);
    assert_eq!(
        locks.release(1, 3, &mut links),
        Some(Handover {
            job: 3,
            waiters: 0,
            row: 1
        })
    );
    assert_eq!(locks.rows_of(0), 2);
    assert_eq!(locks.rows_of(9), 0);
}

#[test]
fn growth_hands_new_rows_to_waiters_and_later_to_arrivals() {
    let mut links = Links::with_jobs(16);
    let mut handovers = Vec::new();
    let mut locks = LockTable::new(1, Policy::EarliestFree, 1, GrantOrder::Fifo, 0);
    assert_eq!(locks.request(0, 0, 0, 0, &mut links), Request::Granted(0));
    assert_eq!(locks.request(0, 0, 0, 1, &mut links), Request::Queued(NONE));
    locks.grow(0, 3, &mut links, &mut handovers);
    assert_eq!(
        handovers,
        [Handover {
            job: 1,
            waiters: 0,
            row: 1
        }]
    );
    assert_eq!(locks.request(0, 0, 0, 2, &mut links), Request::Granted(2));
    assert_eq!(
        (locks.rows_of(0), locks.slot_of(2), locks.max_key_rows()),
        (3, 2, 3)
    );
    let mut fixed = LockTable::new(1, Policy::RoundRobin, 1, GrantOrder::Fifo, 0);
    handovers.clear();
    fixed.grow(0, 2, &mut links, &mut handovers);
    assert!(handovers.is_empty());
    assert_eq!(fixed.request(0, 0, 0, 3, &mut links), Request::Granted(0));
    assert_eq!(fixed.request(0, 0, 0, 4, &mut links), Request::Granted(1));
    assert_eq!((fixed.row_of_slot(0, 0), fixed.row_of_slot(0, 1)), (0, 1));
    fixed.add(1, 5);
    assert_eq!((fixed.total(0), fixed.grand_total()), (5, 5));
}

#[test]
fn a_waiting_job_can_withdraw() {
    let mut links = Links::with_jobs(16);
    let mut locks = LockTable::new(1, Policy::EarliestFree, 1, GrantOrder::Fifo, 0);
    assert_eq!(locks.request(0, 0, 0, 0, &mut links), Request::Granted(0));
    assert_eq!(locks.request(0, 0, 0, 1, &mut links), Request::Queued(NONE));
    assert_eq!(locks.request(0, 0, 0, 2, &mut links), Request::Queued(NONE));
    locks.withdraw(0, NONE, 1, &mut links);
    assert_eq!(
        locks.release(0, 4, &mut links),
        Some(Handover {
            job: 2,
            waiters: 0,
            row: 0
        })
    );
}

/// Random bits whose halves draw slots `first` and `second` of `len` rows.
fn two_draws(first: u64, second: u64, len: u64) -> u64 {
    let half = |slot: u64| (slot << 32).div_ceil(len);
    half(first) | half(second) << 32
}

#[test]
fn power_of_two_asks_for_the_row_with_fewer_jobs_on_it() {
    let mut links = Links::with_jobs(16);
    let mut locks = LockTable::new(4, Policy::PowerOfTwo, 1, GrantOrder::Fifo, 0);
    let bits = |a, b| two_draws(a, b, 4);
    // Row 0 gets a holder and a waiter, row 1 a holder.
    assert_eq!(
        locks.request(0, bits(0, 0), 0, 0, &mut links),
        Request::Granted(0)
    );
    assert_eq!(
        locks.request(0, bits(0, 0), 0, 1, &mut links),
        Request::Queued(0)
    );
    assert_eq!(
        locks.request(0, bits(1, 1), 0, 2, &mut links),
        Request::Granted(1)
    );
    // Rows 0 (two jobs) and 1 (one): the second drawn has fewer.
    assert_eq!(
        locks.request(0, bits(0, 1), 0, 3, &mut links),
        Request::Queued(1)
    );
    // Rows 1 and 0 now have two jobs each: a tie goes to the first drawn.
    assert_eq!(
        locks.request(0, bits(0, 1), 0, 4, &mut links),
        Request::Queued(0)
    );
    assert_eq!(
        locks.request(0, bits(2, 1), 0, 5, &mut links),
        Request::Granted(2)
    );
    assert_eq!(locks.choose(0, bits(3, 3), 0), NONE, "decided at the rows");
}

#[test]
fn skip_locked_tries_every_row_once_and_takes_only_a_free_one() {
    let mut locks = LockTable::new(5, Policy::SkipLocked, 1, GrantOrder::Fifo, 0);
    let bits = 0x9E37_79B9_7F4A_7C15;
    let rows: Vec<u32> = (0..5)
        .map(|k| locks.skip_locked_row(0, bits, k, 9).0)
        .collect();
    let mut sorted = rows.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, [0, 1, 2, 3, 4], "{rows:?}");
    assert_eq!(
        locks.skip_locked_row(0, bits, 0, 9).1,
        5,
        "at most the key's rows"
    );
    assert_eq!(locks.skip_locked_row(0, bits, 0, 2).1, 2);
    assert!(locks.try_row(rows[0]));
    assert!(!locks.try_row(rows[0]));
}
