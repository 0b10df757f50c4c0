//! The `policies` chart: every policy's p99 and p99.9 against shard count, side by side.

use super::*;

/// Every policy's p99 and p99.9 waits against shard count, one colour per policy.
pub(super) struct PoliciesFigure<'a> {
    pub(super) scenario: &'a Scenario,
    pub(super) rows: &'a [SummaryRow],
    /// Each policy, in the scenario's order, with its recommended shard count.
    pub(super) recommended: &'a [(Policy, Option<u32>)],
}
figure!(PoliciesFigure);

impl PoliciesFigure<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        root.fill(&WHITE)?;
        let ms = crate::time::ns_to_ms;
        let rows: Vec<&SummaryRow> = self.rows.iter().filter(|r| !r.adaptive()).collect();
        let target_ms = self.scenario.slo().p99_ns.map(ms);
        let y = Axis::fit_waits(
            rows.iter()
                .flat_map(|r| [ms(r.waits.p99_ns), ms(r.waits.p999_ns)])
                .chain(target_ms),
        );
        let mut legend = Legend::default();
        for (index, (policy, shards)) in self.recommended.iter().enumerate() {
            let advice = shards.map_or_else(
                || "none recommended".to_owned(),
                |n| format!("recommended {}", units::plural(u64::from(n), "shard")),
            );
            legend.add(
                format!("{policy}: p99 ({advice})"),
                Mark::Line(colour(index)),
            );
            legend.add(format!("{policy}: p99.9"), Mark::Dashed(colour(index)));
        }
        if let Some(target) = target_ms {
            legend.add(
                format!("target p99 {}", units::duration((target * 1e6) as u64)),
                Mark::Dashed(BLACK),
            );
        }
        let (plot_area, legend_area) = legend.split(root);
        let shards: Vec<u32> = rows.iter().map(|r| r.shards()).collect();
        let x = shard_range(&shards);
        let caption = title(self.scenario, "wait against shard count, per policy");
        let mut chart = log2_plot(
            &plot_area,
            caption,
            (x.clone(), SHARDS_AXIS),
            (y, "wait for the row"),
        )?;
        if let Some(target) = target_ms {
            draw_target(&mut chart, x.clone(), y.to_plot(target))?;
        }
        for (index, (policy, _)) in self.recommended.iter().enumerate() {
            let of: Vec<SummaryRow> = rows
                .iter()
                .filter(|r| r.policy == *policy)
                .map(|r| (*r).clone())
                .collect();
            let p999 = shard_points(&of, |r| ms(r.waits.p999_ns), y);
            draw_marked(&mut chart, p999, Mark::Dashed(colour(index)))?;
            let p99 = shard_points(&of, |r| ms(r.waits.p99_ns), y);
            draw_marked(&mut chart, p99, Mark::Line(colour(index)))?;
        }
        legend.draw(&legend_area)
    }
}
