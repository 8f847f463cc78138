//! Scans JSONL records for PII.
//!
//! `cargo run --release -p hooks-guardrails --example pii_scan < records.jsonl` reads records
//! (`id`, `text`; other fields ignored) and writes one line per record:
//! `{"id": ..., "spans": [{"start": b, "end": e, "entity": "EMAIL_ADDRESS"}, ...]}` (UTF-8 byte
//! offsets). With `--throughput FILE` it scans the raw file instead and prints
//! `{"bytes": N, "seconds": S, "mb_per_s": X, "detections": K}`, timing the scan only.

use std::io::{self, BufRead, Write};
use std::process::ExitCode;
use std::time::Instant;

use hooks_guardrails::PiiDetector;
use serde_json::{Value, json};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.as_slice() {
        [flag, file] if flag == "--throughput" => throughput(file),
        [] => scan_stdin(),
        _ => Err("usage: pii_scan < records.jsonl | pii_scan --throughput FILE".to_owned()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("pii_scan: {e}");
            ExitCode::FAILURE
        }
    }
}

fn throughput(file: &str) -> Result<(), String> {
    let text = std::fs::read(file).map_err(|e| format!("cannot read {file}: {e}"))?;
    let text = String::from_utf8_lossy(&text);
    let detector = PiiDetector::new();
    // Warm up once (lazy DFA caches), then time the best of three scans.
    let mut detections = detector.detect(&text).len();
    let mut best = f64::INFINITY;
    for _ in 0..3 {
        let t0 = Instant::now();
        detections = detector.detect(&text).len();
        best = best.min(t0.elapsed().as_secs_f64());
    }
    let bytes = text.len();
    println!(
        "{}",
        json!({"bytes": bytes, "seconds": best, "mb_per_s": bytes as f64 / best / 1e6, "detections": detections})
    );
    Ok(())
}

fn scan_stdin() -> Result<(), String> {
    let detector = PiiDetector::new();
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    for (n, line) in io::stdin().lock().lines().enumerate() {
        let line = line.map_err(|e| format!("cannot read line {}: {e}", n + 1))?;
        if line.trim().is_empty() {
            continue;
        }
        let rec: Value =
            serde_json::from_str(&line).map_err(|e| format!("line {}: not JSON: {e}", n + 1))?;
        let text = rec
            .get("text")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("line {}: no string field 'text'", n + 1))?;
        let spans: Vec<Value> = detector
            .detect(text)
            .iter()
            .map(|d| json!({"start": d.start, "end": d.end, "entity": d.entity.label()}))
            .collect();
        let id = rec.get("id").cloned().unwrap_or(Value::Null);
        writeln!(out, "{}", json!({"id": id, "spans": spans}))
            .map_err(|e| format!("cannot write: {e}"))?;
    }
    out.flush().map_err(|e| format!("cannot write: {e}"))
}
