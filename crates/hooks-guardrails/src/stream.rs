//! The output guard on a streamed reply: text is released only once no entity can still
//! span it, and released redacted. Distances are counted in *visible* bytes (what the
//! detectors read: characters that fold away, such as zero-width spaces and soft hyphens, do
//! not count), so padding an entity with invisible characters does not stretch it past the
//! window.
//!
//! - Everything but the last [`HOLD_BACK`] visible bytes may be released, cut at whitespace,
//!   never inside a detected entity, never after a private key's start.
//! - The scan that decides it reads [`CONTEXT`] visible bytes to the left of what is released
//!   (a label before a number, a CSV header naming a column): it sees what a scan of the
//!   whole reply sees there.
//! - Where the text is too strange to measure (more invisible characters than any text has),
//!   nothing more is released until the reply is complete.
//! - Tool-call pieces are never released (the call's arguments are guarded whole before it
//!   runs). A BLOCK stops the release; the after-model-call guard then replaces the reply
//!   with the block message, which the consumer gets as the correction.

use crate::engine::{Engine, apply};
use crate::pii::fold::invisible;

/// How far behind the model the released text stays, in visible bytes: more than the
/// longest entity the detectors match that is not held by other means (an e-mail address is
/// at most 318 bytes, an API key 400, an IBAN with separators under 100), plus the few
/// characters a validator reads after a candidate. A private key is held from its
/// `-----BEGIN` on; a run of text without whitespace (a JWT, a glued run) is never cut.
pub const HOLD_BACK: usize = 1024;

/// Left context the scan reads before what is released, in visible bytes: more than the
/// farthest any detector looks back (a CSV header naming an `ssn` column, up to 4 096 bytes
/// above its rows; a word labelling a phone number, 48).
pub(crate) const CONTEXT: usize = 8192;

/// How far a distance is measured through raw bytes before the text counts as too strange
/// to measure (then the reply is released only once complete).
const MEASURE_LIMIT: usize = 64 * 1024;

/// How much the reply must grow before the tail is scanned again, at least.
const RESCAN_EVERY: usize = 256;

/// One streamed reply being guarded.
#[derive(Debug, Default)]
pub(crate) struct Hold {
    /// The model call it belongs to (iteration, attempt).
    pub(crate) call: (u32, u32),
    raw: String,
    released: usize,
    scanned_at: usize,
    blocked: bool,
    /// Released only once complete (see the module docs).
    whole: bool,
}

impl Hold {
    pub(crate) fn new(call: (u32, u32)) -> Self {
        Self {
            call,
            ..Self::default()
        }
    }

    /// Takes a text piece (`last`: the reply's closing piece) and returns what may be
    /// released now, redacted.
    pub(crate) fn take(&mut self, engine: &Engine, piece: &str, last: bool) -> String {
        self.raw.push_str(piece);
        if self.blocked || (self.whole && !last) {
            return String::new();
        }
        let len = self.raw.len();
        // Scanned again once the reply grew by a quarter of what is held (at least
        // RESCAN_EVERY bytes): a long run that cannot be cut yet is scanned a bounded number
        // of times, so the work stays linear in the reply.
        let every = RESCAN_EVERY.max((len - self.released) / 4);
        if !last && len < self.scanned_at + every {
            return String::new();
        }
        self.scanned_at = len;
        let target = if last {
            len
        } else {
            match back_visible(&self.raw, len, HOLD_BACK) {
                Some(t) => t,
                None => {
                    self.whole = true;
                    return String::new();
                }
            }
        };
        if target <= self.released {
            return String::new();
        }
        // Context too strange to measure: scan from the start.
        let ctx = back_visible(&self.raw, self.released, CONTEXT).unwrap_or_default();
        let verdict = engine.judge(&self.raw[ctx..], false);
        // A BLOCK anywhere past what was released stops the release.
        if verdict.blocked.is_some()
            && verdict
                .violations
                .iter()
                .any(|(f, a)| *a == crate::GuardrailAction::Block && ctx + f.span.1 > self.released)
        {
            self.blocked = true;
            return String::new();
        }
        let mut cut = target;
        if !last {
            // At whitespace, and before a private key's start.
            let head = &self.raw[self.released..target];
            cut = match head.rfind(|c: char| c.is_whitespace()) {
                Some(i) => self.released + i,
                None => return String::new(),
            };
            if let Some(p) = key_start(&self.raw[self.released..]) {
                cut = cut.min(self.released + p);
            }
        }
        // Never inside an entity.
        let spans: Vec<(usize, usize, &'static str)> = verdict
            .replace
            .iter()
            .map(|&(s, e, w)| (s + ctx, e + ctx, w))
            .collect();
        while let Some(&(s, _, _)) = spans.iter().find(|&&(s, e, _)| s < cut && e > cut) {
            cut = s;
        }
        if cut <= self.released {
            return String::new();
        }
        let segment = &self.raw[self.released..cut];
        let replace: Vec<(usize, usize, &'static str)> = spans
            .iter()
            .filter(|&&(s, e, _)| e > self.released && s < cut)
            .map(|&(s, e, w)| {
                (
                    s.max(self.released) - self.released,
                    e.min(cut) - self.released,
                    w,
                )
            })
            .collect();
        let mut out = apply(segment, replace);
        // What redaction freed (glued entities), as the whole reply's guard does: a segment
        // that still uncovers entities after the last pass is released as one placeholder.
        let mut settled = false;
        for _ in 0..engine.passes {
            let again = engine.judge(&out, false);
            if again.blocked.is_some() {
                // A BLOCK value the redaction freed (glued to another entity): nothing of
                // this segment is released, and the reply is blocked after the call.
                self.blocked = true;
                return String::new();
            }
            if again.replace.is_empty() {
                settled = true;
                break;
            }
            out = apply(&out, again.replace);
        }
        self.released = cut;
        if settled {
            out
        } else {
            crate::engine::REDACTED_CONTENT.to_owned()
        }
    }
}

/// The position before `from` that leaves `n` visible bytes between it and `from` (or 0 when
/// the text is shorter); `None` when more than [`MEASURE_LIMIT`] raw bytes had to be walked.
fn back_visible(text: &str, from: usize, n: usize) -> Option<usize> {
    let mut seen = 0;
    for (walked, (i, c)) in text[..from].char_indices().rev().enumerate() {
        if !invisible(c) {
            seen += c.len_utf8();
            if seen >= n {
                return Some(i);
            }
        }
        if walked * 4 > MEASURE_LIMIT + n * 4 {
            return None;
        }
    }
    Some(0)
}

/// Where a private key may start: `-----BEGIN` followed by `PRIVATE KEY` on its line, or by
/// too little text yet to tell.
fn key_start(text: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(p) = text[from..].find("-----BEGIN") {
        let at = from + p;
        let rest = &text[at..];
        let line = rest.split('\n').next().unwrap_or(rest);
        let undecided = line.len() == rest.len() && rest.len() < 80;
        if undecided || line.contains("PRIVATE KEY") {
            return Some(at);
        }
        from = at + "-----BEGIN".len();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{GuardrailAction, GuardrailConfig};

    /// A streamed segment that still uncovers entities after the last pass is released as
    /// one placeholder, as the whole reply's guard settles it.
    #[test]
    fn a_segment_that_runs_out_of_passes_is_released_as_one_placeholder() {
        let chain = crate::pii::tests::FOUR_PASS_CHAIN;
        let release = |passes: usize| {
            let mut engine = Engine::new(
                GuardrailConfig::default().with_default_action(GuardrailAction::Redact),
            )
            .unwrap();
            engine.passes = passes;
            let mut hold = Hold::new((0, 0));
            let mut out = hold.take(&engine, "Here: ", false);
            out.push_str(&hold.take(&engine, chain, true));
            out
        };
        let settled = release(crate::MAX_REDACTION_PASSES);
        assert!(
            settled.starts_with("Here: ") && settled.contains("[REDACTED_SECRET]"),
            "{settled}"
        );
        assert_eq!(release(2), crate::engine::REDACTED_CONTENT);
    }
}
