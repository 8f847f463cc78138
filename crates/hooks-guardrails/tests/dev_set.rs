//! The detector scored on the labelled dev set (tests/data/pii-dev.jsonl, a copy of
//! shared/data/pii-dev.jsonl): exact-span micro-F1 must reach 0.97.

#![allow(clippy::unwrap_used)]

use std::collections::HashSet;

use hooks_guardrails::PiiDetector;
use serde_json::Value;

#[test]
fn exact_span_micro_f1_on_the_dev_set_is_at_least_0_97() {
    let data = include_str!("data/pii-dev.jsonl");
    let detector = PiiDetector::new();
    let (mut tp, mut fp, mut fn_) = (0usize, 0usize, 0usize);
    let mut records = 0;
    for line in data.lines().filter(|l| !l.trim().is_empty()) {
        let rec: Value = serde_json::from_str(line).unwrap();
        let text = rec["text"].as_str().unwrap();
        let gold: HashSet<(u64, u64, String)> = rec["spans"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| {
                (
                    s["start"].as_u64().unwrap(),
                    s["end"].as_u64().unwrap(),
                    s["entity"].as_str().unwrap().to_owned(),
                )
            })
            .collect();
        let found: HashSet<(u64, u64, String)> = detector
            .detect(text)
            .iter()
            .map(|d| (d.start as u64, d.end as u64, d.entity.label().to_owned()))
            .collect();
        for d in &found {
            assert!(text.is_char_boundary(d.0 as usize) && text.is_char_boundary(d.1 as usize));
        }
        tp += gold.intersection(&found).count();
        fp += found.difference(&gold).count();
        fn_ += gold.difference(&found).count();
        records += 1;
    }
    assert_eq!(records, 500);
    let precision = tp as f64 / (tp + fp) as f64;
    let recall = tp as f64 / (tp + fn_) as f64;
    let f1 = 2.0 * precision * recall / (precision + recall);
    println!(
        "dev set: tp={tp} fp={fp} fn={fn_} precision={precision:.4} recall={recall:.4} f1={f1:.4}"
    );
    assert!(
        f1 >= 0.97,
        "micro-F1 {f1:.4} is below 0.97 (tp={tp} fp={fp} fn={fn_})"
    );
}
