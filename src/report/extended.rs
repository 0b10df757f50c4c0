//! The tables of the behaviours a scenario has — rows, the machine, stalls, the likes table,
//! responses, clients, batching, reads and the pool — one row per shard count, for the
//! terminal and the report page.

use super::table::Table;
use crate::figures::{ExtendedSummary, SummaryRow};
use crate::stability::{Stability, StabilityFigures};
use crate::stats::WaitSummary;
use crate::units::{self, count, duration, quantity};

/// The tables of the behaviours the scenario has (none without them).
pub fn extended_tables(rows: &[SummaryRow]) -> Vec<Table> {
    let machine = || {
        rows.iter()
            .any(|row| row.machine.is_some())
            .then(|| machine_table(rows))
    };
    let likes = || {
        rows.iter()
            .any(|row| row.likes.is_some())
            .then(|| likes_table(rows))
    };
    [
        rows_table(rows),
        machine(),
        stability_table(rows),
        knee_table(rows),
        stalls_table(rows),
        likes(),
        responses_table(rows),
        client_table(rows),
        batching_table(rows),
        reads_table(rows),
        pool_table(rows),
        band_table(rows),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// A table titled `title` with columns `header` and one row per shard count.
fn table(title: &str, header: &[&str], rows: Vec<Vec<String>>) -> Table {
    Table {
        title: title.into(),
        header: header.iter().map(|h| (*h).to_owned()).collect(),
        rows,
    }
}

/// One row per shard count from the behaviours' figures — the shard count's label, then
/// `get`'s cells — or `None` when a shard count lacks them.
fn each_extended(
    rows: &[SummaryRow],
    get: &dyn Fn(&ExtendedSummary) -> Option<Vec<String>>,
) -> Option<Vec<Vec<String>>> {
    rows.iter()
        .map(|row| {
            let cells = get(row.extended.as_ref()?)?;
            Some(std::iter::once(row.label()).chain(cells).collect())
        })
        .collect()
}

/// The rows each shard count created (adaptive rows or many keys).
fn rows_table(rows: &[SummaryRow]) -> Option<Table> {
    if !rows
        .iter()
        .any(|row| row.adaptive() || row.keys_touched > 1)
    {
        return None;
    }
    let cells = |row: &SummaryRow| {
        vec![
            row.label(),
            count(row.keys_touched as u64),
            count(row.rows_total),
            count(u64::from(row.max_key_rows)),
        ]
    };
    Some(table(
        "rows created",
        &["shards", "keys touched", "rows", "most rows on one key"],
        rows.iter().map(cells).collect(),
    ))
}

/// Response times: a closed loop's clients', or open arrivals' on a machine.
fn responses_table(rows: &[SummaryRow]) -> Option<Table> {
    let responses = |row: &SummaryRow| {
        row.closed
            .map(|c| (Some(c.clients), c.responses))
            .or_else(|| row.machine.and_then(|m| m.responses).map(|r| (None, r)))
    };
    if !rows.iter().any(|row| responses(row).is_some()) {
        return None;
    }
    let title = if rows.iter().any(|row| row.closed.is_some()) {
        "closed-loop clients: response time (send → commit)"
    } else {
        "response time (send → commit acknowledged)"
    };
    let cells = |row: &SummaryRow| {
        let (clients, r) = responses(row)?;
        Some(vec![
            row.label(),
            clients.map_or_else(|| "open".into(), |c| count(u64::from(c))),
            quantity(row.throughput_per_s()),
            duration(r.mean_ns),
            duration(r.p50_ns),
            duration(r.p99_ns),
            duration(r.p999_ns),
        ])
    };
    Some(table(
        title,
        &[
            "shards",
            "clients",
            "throughput/s",
            "mean",
            "p50",
            "p99",
            "p99.9",
        ],
        rows.iter().filter_map(cells).collect(),
    ))
}

/// Timeouts and retries (`[client]`).
fn client_table(rows: &[SummaryRow]) -> Option<Table> {
    let cells = each_extended(rows, &|e| {
        e.client.map(|c| {
            vec![
                format!("{:.2}", c.amplification),
                quantity(c.timeouts),
                quantity(c.failed),
                quantity(c.succeeded),
                quantity(c.pending),
                quantity(c.duplicates),
                quantity(c.drift),
                quantity(c.goodput_per_s),
            ]
        })
    })?;
    Some(table(
        "clients: timeouts and retries",
        &[
            "shards",
            "attempts/like",
            "timeouts",
            "failed",
            "succeeded",
            "pending",
            "duplicates",
            "drift",
            "goodput/s",
        ],
        cells,
    ))
}

/// Write batching (`[batching]`).
fn batching_table(rows: &[SummaryRow]) -> Option<Table> {
    let cells = each_extended(rows, &|e| {
        e.batching.as_ref().map(|b| {
            vec![
                quantity(b.likes_per_s),
                quantity(b.db_writes_per_s),
                duration(b.delay.p50_ns),
                duration(b.delay.p99_ns),
                quantity(b.at_risk_mean),
                quantity(b.at_risk_max),
                quantity(b.lost),
            ]
        })
    })?;
    Some(table(
        "write batching",
        &[
            "shards",
            "likes/s",
            "db writes/s",
            "count delay p50",
            "p99",
            "at risk mean",
            "at risk max",
            "lost",
        ],
        cells,
    ))
}

/// The read path (`[reads]`).
fn reads_table(rows: &[SummaryRow]) -> Option<Table> {
    let cells = each_extended(rows, &|e| {
        e.reads.as_ref().map(|r| {
            vec![
                quantity(r.requests_per_s),
                quantity(r.rows_touched_per_s),
                quantity(r.rows_per_read),
                format!("{:.3}", r.cache_hit_ratio),
                duration(r.staleness.mean_ns),
                duration(r.staleness.p99_ns),
                quantity(r.staleness_likes.mean_ns as f64),
                quantity(r.staleness_likes.p99_ns as f64),
            ]
        })
    })?;
    Some(table(
        "reads",
        &[
            "shards",
            "reads/s",
            "rows read/s",
            "rows/read",
            "cache hits",
            "stale mean",
            "stale p99",
            "stale likes mean",
            "p99",
        ],
        cells,
    ))
}

/// The connection pool's waits (`[pool]`), the likes' and each neighbour's.
fn pool_table(rows: &[SummaryRow]) -> Option<Table> {
    let cells = each_extended(rows, &|e| {
        e.pool.as_ref().map(|p| {
            std::iter::once(duration(p.like_wait.p99_ns))
                .chain(p.neighbours.iter().map(|(_, w)| duration(w.p99_ns)))
                .collect()
        })
    })?;
    let pool = rows
        .first()
        .and_then(|r| r.extended.as_ref()?.pool.as_ref())?;
    let header = ["shards".to_owned(), "likes p99".to_owned()]
        .into_iter()
        .chain(
            pool.neighbours
                .iter()
                .map(|(name, _)| format!("{name} p99")),
        )
        .collect();
    Some(Table {
        title: "connection pool: waits for a connection".into(),
        header,
        rows: cells,
    })
}

/// The machine's table: per shard count, what binds and how busy each part was.
fn machine_table(rows: &[SummaryRow]) -> Table {
    let share =
        |value: Option<f64>| value.map_or_else(|| "–".into(), |v| format!("{:.0}%", v * 100.0));
    Table {
        title: "the machine: what limits each shard count (busy fractions, measured)".into(),
        header: [
            "shards",
            "throughput/s",
            "ceiling/s",
            "bottleneck",
            "row",
            "cpu",
            "wal",
            "fsyncs/commit",
        ]
        .map(String::from)
        .to_vec(),
        rows: rows
            .iter()
            .filter_map(|row| {
                let m = row.machine.as_ref()?;
                Some(vec![
                    row.label(),
                    quantity(row.throughput_per_s()),
                    quantity(row.ceiling_per_s),
                    m.bottleneck.name().into(),
                    share(Some(m.row_utilization)),
                    share(m.cpu_utilization),
                    share(m.wal_utilization),
                    m.fsyncs_per_commit
                        .map_or_else(|| "–".into(), |f| format!("{f:.2}")),
                ])
            })
            .collect(),
    }
}
/// The stability table, when the stream was probed: per shard count its advertised and hidden
/// capacities and, at the peak, whether it recovers from every trigger — in words, what tips
/// it or how long it took.
fn stability_table(rows: &[SummaryRow]) -> Option<Table> {
    let probed: Vec<(&SummaryRow, &StabilityFigures)> = rows
        .iter()
        .filter_map(|row| Some((row, row.stability()?)))
        .collect();
    let (_, first) = probed.first()?;
    let title = format!(
        "metastable points at the peak ({}/s): advertised = kept up from empty, hidden = \
         recovered from every trigger within {} s",
        quantity(first.rate_per_s()),
        units::compact(first.recovery_s())
    );
    let cells = probed
        .iter()
        .map(|(row, figures)| {
            vec![
                row.label(),
                quantity(figures.advertised_per_s()),
                quantity(figures.hidden_per_s()),
                figures.stability().name().to_owned(),
                stability_words(figures),
            ]
        })
        .collect();
    Some(table(
        &title,
        &[
            "shards",
            "advertised/s",
            "hidden/s",
            "at the peak",
            "what a trigger does",
        ],
        cells,
    ))
}

/// The knee table, for a closed loop on a machine: per shard count what its clients commit,
/// and the client count its rows commit the most at.
fn knee_table(rows: &[SummaryRow]) -> Option<Table> {
    let cells: Vec<Vec<String>> = rows
        .iter()
        .filter_map(|row| {
            let knee = row.knee()?;
            let (clients, at_clients) = knee.at_clients();
            let best = units::plural(u64::from(knee.best_clients()), "client");
            let more = knee.best_per_s() / at_clients.max(1e-9) - 1.0;
            let words = if knee.best_clients() >= clients {
                "more clients still help".to_owned()
            } else if more >= 0.005 {
                format!("{best} commit {:.0}% more than {clients}", 100.0 * more)
            } else {
                format!("{best} commit as much as {clients}")
            };
            Some(vec![
                row.label(),
                count(u64::from(clients)),
                quantity(at_clients),
                count(u64::from(knee.best_clients())),
                quantity(knee.best_per_s()),
                words,
            ])
        })
        .collect();
    (!cells.is_empty()).then(|| {
        table(
            "the clients' knee: what the rows commit at each client count (1, 2, 4, …), the best beside the loop's own",
            &["shards", "clients", "commit/s", "best at", "best/s", "past the knee"],
            cells,
        )
    })
}

/// What the probes at the peak found, in words.
pub fn stability_words(figures: &StabilityFigures) -> String {
    match (figures.stability(), figures.tipped_by(), figures.slowest()) {
        (Stability::Collapsed, _, _) => "falls behind from empty".to_owned(),
        (_, Some(trigger), _) => format!("{} tips it", trigger.short()),
        (_, None, Some((trigger, after))) => {
            format!("recovers from {} in {}", trigger.short(), duration(after))
        }
        _ => "recovers from every trigger".to_owned(),
    }
}

/// The stalls' table, when the machine stalls: per shard count, how often and how long, and
/// the p99 wait with and without them.
fn stalls_table(rows: &[SummaryRow]) -> Option<Table> {
    let cells: Vec<Vec<String>> = rows
        .iter()
        .filter_map(|row| {
            let stalls = row.machine.as_ref()?.stalls?;
            Some(vec![
                row.label(),
                units::count(stalls.stalls.round() as u64),
                units::duration(crate::time::s_f64_to_ns(stalls.stalled_s)),
                units::duration(row.waits.p99_ns),
                units::duration(stalls.wait_p99_without_ns.round() as u64),
            ])
        })
        .collect();
    (!cells.is_empty()).then(|| Table {
        title: "stalls: spells in which the machine completed nothing, and the p99 wait with and without them".into(),
        header: ["shards", "stalls", "stalled", "p99 wait", "without stalls"]
            .map(String::from)
            .to_vec(),
        rows: cells,
    })
}

/// The likes table, one row per shard count.
fn likes_table(rows: &[SummaryRow]) -> Table {
    let header = [
        "shards",
        "insert p50",
        "insert p99",
        "hot partition",
        "like p50",
        "like p99",
        "stored",
        "counted",
        "rejected",
        "crashed",
        "drift max",
        "drift end",
    ];
    let count = |value: f64| units::count(value.round() as u64);
    let rows = rows
        .iter()
        .filter_map(|row| {
            let likes = row.likes.as_ref()?;
            let latency = |get: fn(&WaitSummary) -> u64| {
                likes
                    .latency
                    .as_ref()
                    .map_or_else(|| "–".to_owned(), |l| units::duration(get(l)))
            };
            Some(vec![
                row.label(),
                units::duration(likes.insert_waits.p50_ns),
                units::duration(likes.insert_waits.p99_ns),
                format!(
                    "{:.0}% of inserts, {:.0}% busy",
                    likes.hot_partition_share * 100.0,
                    likes.hot_partition_utilization * 100.0
                ),
                latency(|w| w.p50_ns),
                latency(|w| w.p99_ns),
                count(likes.stored),
                count(likes.counted),
                count(likes.rejected),
                count(likes.crashed),
                count(likes.drift_max),
                count(likes.drift_final),
            ])
        })
        .collect();
    Table {
        title: "likes table: the insert path's wait and its hottest partition, the like end to end (send → answer), and the count's drift"
            .to_owned(),
        header: header.iter().map(|h| h.to_string()).collect(),
        rows,
    }
}

/// Each shard count's throughput and p99 over its calibration's band, with the share of
/// the database's measurements the band is meant to hold.
fn band_table(rows: &[SummaryRow]) -> Option<Table> {
    let cells = rows
        .iter()
        .map(|row| {
            let band = row.band?;
            Some(vec![
                row.label(),
                format!(
                    "{}–{}",
                    quantity(band.throughput_per_s.0),
                    quantity(band.throughput_per_s.1)
                ),
                format!("{}–{}", duration(band.p99_ns.0), duration(band.p99_ns.1)),
                band.coverage
                    .map_or("not stated (an old calibration)".to_owned(), |c| {
                        format!("{:.0}%", 100.0 * c)
                    }),
            ])
        })
        .collect::<Option<Vec<_>>>()?;
    Some(table(
        "Over the calibration's band",
        &["shards", "throughput /s", "p99", "coverage"],
        cells,
    ))
}
