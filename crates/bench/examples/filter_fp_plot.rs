//! Measures the false-positive rate of both Bloom policies against bits per key (1–30) on
//! random, zero-padded decimal and big-endian u64 keys, next to each policy's theoretical
//! rate, and draws the curves as an SVG.
//!
//! ```sh
//! cargo run --release -p leveltable-bench --example filter_fp_plot -- docs/filters-fp.svg
//! ```
//!
//! Two filter sizes, one panel each: 100 keys (what one 2 KiB filter of a table holds) and
//! 10,000 keys. Filters hold keys `2i` over consecutive stretches and are probed with the
//! 100,000 immediate neighbours `2i + 1`. A markdown table of the figures goes to standard
//! output.

use std::error::Error;

use leveltable_bench::workload::KeyShape;
use leveltable_filter_policy::{BloomFilterPolicy, CacheLocalBloomPolicy, FilterPolicy};
use plotters::prelude::*;

/// Filter sizes, one panel each.
const FILTER_KEYS: [u64; 2] = [100, 10_000];
/// Neighbours probed per panel and curve.
const PROBES: u64 = 100_000;
const SHAPES: [KeyShape; 3] = [KeyShape::Random, KeyShape::Decimal, KeyShape::BigEndianU64];

/// The fraction of neighbours `2i + 1` that the filters over keys `2i` let through.
fn measure(policy: &dyn FilterPolicy, shape: KeyShape, keys_per_filter: u64) -> f64 {
    let mut key = Vec::new();
    let mut flat = Vec::new();
    let mut filter = Vec::new();
    let mut hits = 0u64;
    for f in 0..PROBES / keys_per_filter {
        let range = f * keys_per_filter..(f + 1) * keys_per_filter;
        flat.clear();
        for i in range.clone() {
            shape.key_into(2 * i, &mut key);
            flat.push(key.clone());
        }
        let refs: Vec<&[u8]> = flat.iter().map(Vec::as_slice).collect();
        filter.clear();
        policy.create_filter(&refs, &mut filter);
        for i in range {
            shape.key_into(2 * i + 1, &mut key);
            hits += u64::from(policy.key_may_match(&key, &filter));
        }
    }
    hits as f64 / PROBES as f64
}

struct Series {
    label: String,
    color: RGBColor,
    dashed: bool,
    points: Vec<(f64, f64)>,
}

fn main() -> Result<(), Box<dyn Error>> {
    let out = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "docs/filters-fp.svg".to_string());
    let bits: Vec<usize> = (1..=30).collect();
    let colors = [
        RGBColor(31, 119, 180),
        RGBColor(214, 39, 40),
        RGBColor(44, 160, 44),
    ];
    let theory = |f: &dyn Fn(usize) -> f64| bits.iter().map(|&b| (b as f64, f(b))).collect();

    let mut panels = Vec::new();
    for keys_per_filter in FILTER_KEYS {
        let mut series = Vec::new();
        let mut rows = vec![Vec::new(); bits.len()];
        for (policy_name, dashed) in [("LevelDB Bloom", true), ("LocalBloom64", false)] {
            for (shape, color) in SHAPES.into_iter().zip(colors) {
                let mut points = Vec::new();
                for (row, &b) in rows.iter_mut().zip(&bits) {
                    let rate = if dashed {
                        measure(&BloomFilterPolicy::new(b), shape, keys_per_filter)
                    } else {
                        measure(&CacheLocalBloomPolicy::new(b), shape, keys_per_filter)
                    };
                    row.push(rate);
                    points.push((b as f64, rate.max(1e-6)));
                }
                series.push(Series {
                    label: format!("{policy_name}, {} keys", shape.name()),
                    color,
                    dashed,
                    points,
                });
            }
        }
        series.push(Series {
            label: "theory: standard Bloom, LevelDB's k".into(),
            color: BLACK,
            dashed: true,
            points: theory(&|b| BloomFilterPolicy::expected_fp_rate(b as f64)),
        });
        series.push(Series {
            label: "theory: cache-local Bloom".into(),
            color: BLACK,
            dashed: false,
            points: theory(&|b| CacheLocalBloomPolicy::expected_fp_rate(b as f64)),
        });

        println!("\n{keys_per_filter}-key filters:\n");
        println!(
            "| bits/key | LevelDB random | LevelDB decimal | LevelDB u64 | Local random | Local decimal | Local u64 |"
        );
        println!("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
        for (&b, row) in bits.iter().zip(&rows) {
            let cells: Vec<String> = row.iter().map(|r| format!("{:.3}%", r * 100.0)).collect();
            println!("| {b} | {} |", cells.join(" | "));
        }
        panels.push((keys_per_filter, series));
    }
    draw(&out, &panels)?;
    eprintln!("wrote {out}");
    Ok(())
}

fn draw(path: &str, panels: &[(u64, Vec<Series>)]) -> Result<(), Box<dyn Error>> {
    let root = SVGBackend::new(path, (1400, 620)).into_drawing_area();
    root.fill(&WHITE)?;
    for (area, (keys, series)) in root.split_evenly((1, panels.len())).iter().zip(panels) {
        draw_panel(area, *keys, series)?;
    }
    Ok(())
}

fn draw_panel(
    area: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    keys: u64,
    series: &[Series],
) -> Result<(), Box<dyn Error>> {
    let caption = format!("False positives on absent neighbours, {keys}-key filters");
    let mut chart = ChartBuilder::on(area)
        .caption(caption, ("sans-serif", 18))
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(1f64..30f64, (1e-6f64..1f64).log_scale())?;
    chart
        .configure_mesh()
        .x_desc("bits per key")
        .y_desc("false-positive rate")
        .y_label_formatter(&|y| format!("{y:.0e}"))
        .draw()?;
    for s in series {
        let style = ShapeStyle::from(&s.color).stroke_width(2);
        let color = s.color;
        if s.dashed {
            chart
                .draw_series(DashedLineSeries::new(s.points.iter().copied(), 6, 4, style))?
                .label(&s.label)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
        } else {
            chart
                .draw_series(LineSeries::new(s.points.iter().copied(), style))?
                .label(&s.label)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
        }
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    Ok(())
}
