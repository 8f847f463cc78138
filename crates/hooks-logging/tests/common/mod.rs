//! A subscriber that captures events, and a buffer writer, for the logging tests.

#![allow(dead_code, unreachable_pub, missing_docs, clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::fmt;
use std::io;
use std::sync::{Arc, Mutex};

use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::Layer;
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::registry::Registry;

/// One captured event.
#[derive(Debug, Clone)]
pub struct Captured {
    pub target: String,
    pub level: Level,
    pub name: String,
    pub fields: BTreeMap<String, String>,
}

impl Captured {
    pub fn message(&self) -> &str {
        self.fields.get("message").map(String::as_str).unwrap_or("")
    }
    pub fn get(&self, k: &str) -> Option<&str> {
        self.fields.get(k).map(String::as_str)
    }
}

#[derive(Clone, Default)]
pub struct Capture(pub Arc<Mutex<Vec<Captured>>>);

struct V<'a>(&'a mut BTreeMap<String, String>);

impl Visit for V<'_> {
    fn record_str(&mut self, f: &Field, v: &str) {
        self.0.insert(f.name().into(), v.into());
    }
    fn record_debug(&mut self, f: &Field, v: &dyn fmt::Debug) {
        self.0.insert(f.name().into(), format!("{v:?}"));
    }
}

impl<S: Subscriber> Layer<S> for Capture {
    fn on_event(&self, e: &Event<'_>, _: Context<'_, S>) {
        let mut fields = BTreeMap::new();
        e.record(&mut V(&mut fields));
        let m = e.metadata();
        self.0.lock().unwrap().push(Captured {
            target: m.target().into(),
            level: *m.level(),
            name: m.name().into(),
            fields,
        });
    }
}

impl Capture {
    /// A subscriber capturing everything up to `max` into this capture.
    pub fn subscriber(&self, max: Level) -> impl Subscriber + Send + Sync {
        Registry::default().with(
            self.clone()
                .with_filter(tracing_subscriber::filter::LevelFilter::from_level(max)),
        )
    }

    pub fn events(&self) -> Vec<Captured> {
        self.0.lock().unwrap().clone()
    }

    pub fn with_message(&self, msg: &str) -> Vec<Captured> {
        self.events()
            .into_iter()
            .filter(|e| e.message() == msg)
            .collect()
    }
}

/// An in-memory writer for `fmt` subscribers.
#[derive(Clone, Default)]
pub struct Buffer(pub Arc<Mutex<Vec<u8>>>);

impl io::Write for Buffer {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Buffer {
    type Writer = Buffer;
    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}

impl Buffer {
    pub fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
    }
}
