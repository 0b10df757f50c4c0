//! `report.html`: one self-contained page (inline SVG charts and styles, no network) with the
//! scenario, a reading of the result, the summary table and the charts.

use std::fmt::Write;

use crate::scenario::Scenario;

use super::chart::Chart;
use super::extended::extended_tables;
use super::headline::{Headline, Load};
use super::reading::reading;
use super::table::{HEADER, summary_lines};
use super::units;
use crate::figures::{Recommendation, SummaryRow, Verdict, by_policy};

const STYLE: &str = "body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;max-width:1240px;margin:2em auto;padding:0 1em;color:#222}\
h1{font-size:1.6em}table{border-collapse:collapse;margin:1em 0;font-variant-numeric:tabular-nums}\
th,td{padding:.3em .7em;border-bottom:1px solid #ddd;text-align:right}td{white-space:nowrap}th{background:#f4f4f4}\
td.verdict,th:last-child{text-align:left}.stable{color:#1a7f37}.near{color:#9a6700}.overloaded{color:#cf222e}\
tr.recommended{font-weight:bold;background:#eef6ff}figure{margin:1.5em 0}figure svg{max-width:100%;height:auto}\
.facts{color:#555}.scroll{overflow-x:auto}figcaption{color:#444;max-width:1100px;margin:.3em auto 0}\
footer{margin:2em 0 1em;font-size:.9em}";

/// Renders the report page; `more` are tables shown after the summaries (such as the regions').
pub fn render(
    scenario: &Scenario,
    rows: &[SummaryRow],
    charts: &[Chart],
    more: &[super::table::Table],
) -> String {
    let mut page = String::new();
    let name = escape(scenario.name());
    let _ = write!(
        page,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <title>shardsim: {name}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n\
         <h1>shardsim: {name}</h1>\n<p>{}</p>\n<p class=\"facts\">{}</p>\n",
        escape(scenario.description()),
        escape(&facts(scenario, rows)),
    );
    let groups = by_policy(scenario, rows);
    for group in &groups {
        let policy = if groups.len() > 1 {
            format!(" — policy {}", group.policy)
        } else {
            String::new()
        };
        let _ = write!(
            page,
            "<h2>Reading{policy}</h2>\n<p>{}</p>\n<h2>Summary{policy}</h2>\n{}",
            prose(&reading(scenario, group.rows, &group.recommendation)),
            table(group.rows, &group.recommendation)
        );
        extra_tables(&mut page, group.rows);
    }
    for table in more {
        write_table(&mut page, table);
    }
    page.push_str(&figures(charts));
    page
}

/// The report page of a grid sweep: the grid of recommended shard counts (as the terminal
/// prints it) and the sweep charts.
pub fn render_sweep(name: &str, grid: &str, charts: &[Chart], every_run: bool) -> String {
    let name = escape(name);
    let files = if every_run {
        "every configuration's rows are in <a href=\"summary.csv\">summary.csv</a> and \
         <a href=\"timeseries.csv\">timeseries.csv</a> after its values, and what each \
         recommends in <a href=\"sweep.csv\">sweep.csv</a>"
    } else {
        "what each configuration recommends is in <a href=\"sweep.csv\">sweep.csv</a> (only \
         the shard counts that decide it were simulated; <code>--every-run</code> writes every \
         run's rows too)"
    };
    let mut page = format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <title>shardsim: {name}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n\
         <h1>shardsim: {name}</h1>\n<p>A sweep: {files}.</p>\n\
         <h2>Shards recommended</h2>\n<pre style=\"white-space:pre-wrap\">{}</pre>\n",
        escape(grid)
    );
    page.push_str(&figures(charts));
    page
}

/// The behaviours' tables of some rows.
fn extra_tables(page: &mut String, rows: &[SummaryRow]) {
    for extra in extended_tables(rows) {
        write_table(page, &extra);
    }
}

/// One small table with its heading.
fn write_table(page: &mut String, table: &super::table::Table) {
    let _ = write!(
        page,
        "<h2>{}</h2>\n<div class=\"scroll\"><table>\n<tr>",
        escape(&table.title)
    );
    for heading in &table.header {
        let _ = write!(page, "<th>{}</th>", escape(heading));
    }
    page.push_str("</tr>\n");
    for row in &table.rows {
        page.push_str("<tr>");
        for cell in row {
            let _ = write!(page, "<td>{}</td>", escape(cell));
        }
        page.push_str("</tr>\n");
    }
    page.push_str("</table></div>\n");
}

/// The charts, each with its caption and data links, and the footer.
fn figures(charts: &[Chart]) -> String {
    let mut page = String::new();
    page.push_str("<h2>Charts</h2>\n");
    for chart in charts {
        let links: Vec<String> = chart
            .data
            .iter()
            .map(|file| format!("<a href=\"{file}\">{file}</a>"))
            .collect();
        let _ = write!(
            page,
            "<figure id=\"{}\">\n{}\n<figcaption>{} Data: {}; image: <a href=\"{}.png\">{}.png</a>.</figcaption>\n</figure>\n",
            chart.name,
            strip_xml_declaration(&chart.svg),
            prose(chart.caption),
            links.join(", "),
            chart.name,
            chart.name
        );
    }
    let _ = writeln!(
        page,
        "<footer class=\"facts\">Written by shardsim {} on {} UTC. The CSV files hold exact milliseconds: \
         <a href=\"summary.csv\">summary.csv</a>, <a href=\"timeseries.csv\">timeseries.csv</a>; \
         <a href=\"scenario.toml\">scenario.toml</a> repeats the run.</footer>",
        env!("CARGO_PKG_VERSION"),
        humantime::format_rfc3339_seconds(std::time::SystemTime::now())
            .to_string()
            .replace('T', " ")
            .trim_end_matches('Z')
    );
    page.push_str("</body>\n</html>\n");
    page
}

fn facts(scenario: &Scenario, rows: &[SummaryRow]) -> String {
    let headline = Headline::of(scenario, rows);
    let load = match headline.load {
        // A closed loop's count differs per shard count: it follows the rows.
        Load::Closed {
            clients, max_per_s, ..
        } => format!(
            "{} in a closed loop for {} s, up to {}/s",
            units::plural(u64::from(clients), "client"),
            units::quantity(headline.duration_s),
            units::quantity(max_per_s)
        ),
        Load::Open {
            increments,
            peak_per_s,
            ..
        } => format!(
            "{} increments over {} s, peak {}/s",
            units::count(increments),
            units::quantity(headline.duration_s),
            units::quantity(peak_per_s)
        ),
    };
    let traffic: Vec<String> = [
        headline
            .scale
            .map(|scale| format!("traffic ×{}", units::compact(scale))),
        headline
            .speed
            .map(|speed| format!("trace sped up ×{}", units::compact(speed))),
    ]
    .into_iter()
    .flatten()
    .collect();
    let mut text = format!(
        "{}{load}; mean hold {}; policy {}; seed {}",
        if traffic.is_empty() {
            String::new()
        } else {
            format!("{}; ", traffic.join(", "))
        },
        units::duration(headline.hold_ns.round() as u64),
        headline.policies,
        headline.seed
    );
    if let Some(r) = rows.first().filter(|r| r.replications > 1) {
        text.push_str(&format!(
            "; {} replications per shard count, waits as mean ±95% half-width",
            r.replications
        ));
    }
    if let Some(slo) = headline.slo {
        text.push_str(&format!("; target {slo}"));
    }
    text
}

fn table(rows: &[SummaryRow], recommendation: &Recommendation) -> String {
    let mut html = String::from("<div class=\"scroll\"><table>\n<tr>");
    for heading in HEADER {
        let _ = write!(html, "<th>{}</th>", escape(heading));
    }
    html.push_str("</tr>\n");
    for line in summary_lines(rows, recommendation) {
        let class = match line.verdict {
            Verdict::Stable => "stable",
            Verdict::NearCeiling | Verdict::Backlogged => "near",
            Verdict::Metastable | Verdict::Overloaded | Verdict::Saturated => "overloaded",
        };
        html.push_str(if line.recommended {
            "<tr class=\"recommended\">"
        } else {
            "<tr>"
        });
        let (verdict, numbers) = line.cells.split_last().expect("the table has cells");
        for cell in numbers {
            let _ = write!(html, "<td>{}</td>", escape(cell));
        }
        let _ = writeln!(
            html,
            "<td class=\"verdict {class}\">{}{}</td></tr>",
            escape(verdict),
            if line.recommended {
                " — recommended"
            } else {
                ""
            }
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

/// Prose for the page: escaped, with the terminal's `code` spans set as `<code>`.
fn prose(text: &str) -> String {
    escape(text)
        .split('`')
        .enumerate()
        .map(|(i, piece)| {
            if i % 2 == 1 {
                format!("<code>{piece}</code>")
            } else {
                piece.to_owned()
            }
        })
        .collect()
}

/// Escapes text for HTML, or for an XML attribute (the JUnit report).
pub(super) fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::scenario::{Overrides, Scenario};

    fn seed_example(extra: &str, overrides: &Overrides) -> Scenario {
        let text = std::fs::read_to_string("scenarios/seed-example.toml").expect("shipped");
        let path = Path::new("scenarios/seed-example.toml");
        Scenario::parse(path, &(text + extra), overrides).expect("a valid scenario")
    }

    #[test]
    fn the_page_names_a_traces_speed_up_alone_or_after_the_traffic() {
        let sped_up = seed_example("speed = 3\n", &Overrides::default());
        let facts = super::facts(&sped_up, &[]);
        assert!(facts.starts_with("trace sped up ×3; "), "{facts}");
        let both = Overrides {
            traffic: Some(2.0),
            ..Overrides::default()
        };
        let facts = super::facts(&seed_example("speed = 3\n", &both), &[]);
        assert!(
            facts.starts_with("traffic ×2, trace sped up ×3; "),
            "{facts}"
        );
        let plain = super::facts(&seed_example("", &Overrides::default()), &[]);
        assert!(plain.starts_with("0 increments over "), "{plain}");
    }
}
