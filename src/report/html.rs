//! `report.html`: one self-contained page (inline SVG charts and styles, no network) with the
//! scenario, a reading of the result, the summary table and the charts.

use std::fmt::Write;

use crate::scenario::Scenario;

use super::chart::Chart;
use super::extended::extended_tables;
use super::summary::{Recommendation, SummaryRow, Verdict, compact, describe_slo, reading};

const STYLE: &str = "body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;max-width:1240px;margin:2em auto;padding:0 1em;color:#222}\
h1{font-size:1.6em}table{border-collapse:collapse;margin:1em 0;font-variant-numeric:tabular-nums}\
th,td{padding:.3em .7em;border-bottom:1px solid #ddd;text-align:right}th{background:#f4f4f4}\
td.verdict,th:last-child{text-align:left}.stable{color:#1a7f37}.near{color:#9a6700}.overloaded{color:#cf222e}\
tr.recommended{font-weight:bold;background:#eef6ff}figure{margin:1.5em 0}figure svg{max-width:100%;height:auto}\
.facts{color:#555}.scroll{overflow-x:auto}";

/// Renders the report page.
pub fn render(
    scenario: &Scenario,
    rows: &[SummaryRow],
    recommendation: &Recommendation,
    charts: &[Chart],
) -> String {
    let mut page = String::new();
    let name = escape(&scenario.name);
    let _ = write!(
        page,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <title>shardsim: {name}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n\
         <h1>shardsim: {name}</h1>\n<p>{}</p>\n<p class=\"facts\">{}</p>\n\
         <h2>Reading</h2>\n<p>{}</p>\n<h2>Summary</h2>\n{}",
        escape(&scenario.description),
        escape(&facts(scenario, rows)),
        escape(&reading(scenario, rows, recommendation)),
        table(rows, recommendation)
    );
    for extra in extended_tables(rows) {
        let _ = write!(
            page,
            "<h2>{}</h2>\n<div class=\"scroll\"><table>\n<tr>",
            escape(&extra.title)
        );
        for heading in &extra.header {
            let _ = write!(page, "<th>{}</th>", escape(heading));
        }
        page.push_str("</tr>\n");
        for row in &extra.rows {
            page.push_str("<tr>");
            for cell in row {
                let _ = write!(page, "<td>{}</td>", escape(cell));
            }
            page.push_str("</tr>\n");
        }
        page.push_str("</table></div>\n");
    }
    page.push_str("<h2>Charts</h2>\n");
    for chart in charts {
        let _ = write!(
            page,
            "<figure id=\"{}\">\n{}\n</figure>\n",
            chart.name,
            strip_xml_declaration(&chart.svg)
        );
    }
    page.push_str("</body>\n</html>\n");
    page
}

fn facts(scenario: &Scenario, rows: &[SummaryRow]) -> String {
    let arrivals = rows.first().map_or(0, |row| row.arrivals);
    let mut text = format!(
        "{arrivals} increments over {} s, peak {:.0}/s; mean hold {} ms; policy {}; seed {}",
        scenario.duration_s(),
        scenario.peak_offered_per_s(),
        scenario.hold.mean_ns() / 1e6,
        scenario.policy,
        scenario.seed
    );
    if scenario.slo.is_set() {
        text.push_str(&format!("; target {}", describe_slo(&scenario.slo)));
    }
    text
}

fn table(rows: &[SummaryRow], recommendation: &Recommendation) -> String {
    let mut html = String::from(
        "<div class=\"scroll\"><table>\n<tr><th>shards</th><th>ceiling/s</th><th>utilization</th><th>peak utilization</th>\
         <th>p50 ms</th><th>p99 ms</th><th>p99.9 ms</th><th>max ms</th><th>backlog max</th>\
         <th>backlog end</th><th>verdict</th></tr>\n",
    );
    let ms = |ns: u64| compact(ns as f64 / 1e6);
    for row in rows {
        let class = match row.verdict() {
            Verdict::Stable => "stable",
            Verdict::NearCeiling | Verdict::Backlogged => "near",
            Verdict::Overloaded | Verdict::Saturated => "overloaded",
        };
        let recommended = !row.adaptive && recommendation.shards() == Some(row.shards);
        let _ = writeln!(
            html,
            "<tr{}><td>{}</td><td>{:.0}</td><td>{:.2}</td><td>{:.2}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
             <td>{}</td><td>{}</td><td class=\"verdict {class}\">{}{}</td></tr>",
            if recommended {
                " class=\"recommended\""
            } else {
                ""
            },
            row.label(),
            row.ceiling_per_s,
            row.utilization,
            row.peak_utilization,
            ms(row.waits.p50_ns),
            ms(row.waits.p99_ns),
            ms(row.waits.p999_ns),
            ms(row.waits.max_ns),
            row.backlog_max,
            row.backlog_final,
            row.verdict().label(),
            if recommended { " — recommended" } else { "" }
        );
    }
    html.push_str("</table></div>\n");
    html
}

fn strip_xml_declaration(svg: &str) -> &str {
    match svg.find("<svg") {
        Some(start) => &svg[start..],
        None => svg,
    }
}

/// Escapes text for HTML.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
