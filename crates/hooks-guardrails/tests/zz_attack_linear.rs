#![allow(clippy::unwrap_used)]
use hooks_guardrails::PiiDetector;
use std::io::BufRead;
use std::time::Instant;

/// Lines: JSON array [prefix, unit, suffix]. Prints work ratio and time at ~1MB.
#[test]
fn linear_probe() {
    let Ok(path) = std::env::var("LIN_FILE") else {
        return;
    };
    let d = PiiDetector::new();
    let f = std::io::BufReader::new(std::fs::File::open(path).unwrap());
    for line in f.lines() {
        let line = line.unwrap();
        if line.trim().is_empty() {
            continue;
        }
        let v: Vec<String> = serde_json::from_str(&line).unwrap();
        let mk = |n: usize| format!("{}{}{}", v[0], v[1].repeat(n), v[2]);
        let n = 20_000 / v[1].len().max(1);
        let a = d.scan_work(&mk(n));
        let b = d.scan_work(&mk(2 * n));
        let ratio = b as f64 / a.max(1) as f64;
        println!("{:?}: work {} -> {} ratio {:.2}", v, a, b, ratio);
        let size: usize = if ratio > 2.5 { 100_000 } else { 1_000_000 };
        let big_n = size / v[1].len().max(1);
        let big = mk(big_n);
        let t = Instant::now();
        let found = d.detect(&big);
        let dt = t.elapsed();
        let t2 = Instant::now();
        let _ = d.redact(&big);
        let dt2 = t2.elapsed();
        println!(
            "   {} bytes: detect {:?} ({} found), redact {:?}",
            big.len(),
            dt,
            found.len(),
            dt2
        );
    }
}
