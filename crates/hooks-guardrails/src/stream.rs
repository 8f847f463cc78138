//! The output guard on a streamed reply: text is released only once no entity can still
//! span it — everything but the last [`HOLD_BACK`] bytes (cut at whitespace, never inside a
//! detected entity or after the start of a private key) — and released redacted. Tool-call
//! pieces are never released (the call's arguments are guarded whole before it runs). A
//! BLOCK stops the release; the after-model-call guard then replaces the reply with the block
//! message, which the consumer gets as the correction.

use crate::engine::{Engine, apply};

/// How far behind the model the released text stays, in bytes: more than the longest entity
/// the detectors match that is not held by other means (an e-mail address is at most 318
/// bytes, an API key 400, an IBAN with separators under 100), plus the context a detector
/// reads around it. A private key is held from its `-----BEGIN` on; a run of text without
/// whitespace (a JWT, a glued run) is never cut.
pub const HOLD_BACK: usize = 1024;

/// Left context kept for detection around the released boundary (a word that labels a
/// phone number, the characters a validator checks before a candidate).
const CONTEXT: usize = 64;

/// How much the reply must grow before the tail is scanned again.
const RESCAN_EVERY: usize = 64;

/// One streamed reply being guarded.
#[derive(Debug, Default)]
pub(crate) struct Hold {
    /// The model call it belongs to (iteration, attempt).
    pub(crate) call: (u32, u32),
    raw: String,
    released: usize,
    scanned_at: usize,
    blocked: bool,
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
        if self.blocked {
            return String::new();
        }
        let len = self.raw.len();
        let target = if last {
            len
        } else {
            floor_boundary(&self.raw, len.saturating_sub(HOLD_BACK))
        };
        // Scanned again after the reply grew by a quarter of what is held (at least 64
        // bytes): a long run that cannot be cut yet is scanned a bounded number of times
        // (the work stays linear in the reply).
        let every = RESCAN_EVERY.max((len - self.released) / 4);
        if target <= self.released || (!last && len < self.scanned_at + every) {
            return String::new();
        }
        self.scanned_at = len;
        let ctx = floor_boundary(&self.raw, self.released.saturating_sub(CONTEXT));
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
            if let Some(p) = self.raw[self.released..].find("-----BEGIN") {
                cut = cut.min(self.released + p);
            }
        }
        // Never inside an entity.
        let spans: Vec<(usize, usize, &'static str)> = verdict
            .replace
            .iter()
            .map(|&(s, e, w)| (s + ctx, e + ctx, w))
            .collect();
        loop {
            let inside = spans.iter().find(|&&(s, e, _)| s < cut && e > cut);
            match inside {
                Some(&(s, _, _)) => cut = s,
                None => break,
            }
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
        // What redaction freed (glued entities), as the whole reply's guard does.
        for _ in 1..crate::MAX_REDACTION_PASSES {
            let again = engine.judge(&out, false);
            if again.replace.is_empty() {
                break;
            }
            out = apply(&out, again.replace);
        }
        self.released = cut;
        out
    }
}

fn floor_boundary(text: &str, mut i: usize) -> usize {
    while i > 0 && !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}
