//! `StructuredLoggingHook`: the same events as JSON lines, and a subscriber that prints them.

use std::fmt;
use std::io;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value as Json};
use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber, field::Value};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields, MakeWriter};
use tracing_subscriber::registry::LookupSpan;

use crate::callsite::Site;
use crate::error::{Error, Result};
use crate::fields::{self, Kind, Val};
use crate::hook::{Options, forward_hooks, option_setters};

/// The `tracing` event name of a structured line, so a formatter can print it as it is.
pub const STRUCTURED_EVENT_NAME: &str = "hooks.structured";

/// Logs every lifecycle event as one JSON line: `timestamp` (RFC 3339, UTC), `level`,
/// `message`, `event` (the message in snake_case, e.g. `tool_call_starting`), the extra
/// fields, then the event's fields (see [`LoggingHook`](crate::LoggingHook) for the list).
///
/// The line is the message of a `tracing` event, so it works under any subscriber; with
/// [`json_subscriber`] (or [`install_json_subscriber`]) it is printed as it is. Its name is
/// `StructuredLoggingHook`, so it can be registered beside a `LoggingHook`.
///
/// ```
/// use hooks_logging::StructuredLoggingHook;
/// let hook = StructuredLoggingHook::builder().with_field("env", "prod").build().unwrap();
/// # let _ = hook;
/// ```
#[derive(Debug)]
pub struct StructuredLoggingHook {
    options: Options,
    timestamps: bool,
    sites: [&'static Site; Kind::ALL.len()],
}

impl Default for StructuredLoggingHook {
    fn default() -> Self {
        Self::new()
    }
}

impl StructuredLoggingHook {
    /// A hook with the defaults (as [`LoggingHook::new`](crate::LoggingHook::new), with
    /// timestamps).
    pub fn new() -> Self {
        Self::from_options(Options::default(), true)
    }

    /// A builder for a configured hook.
    pub fn builder() -> StructuredLoggingHookBuilder {
        StructuredLoggingHookBuilder {
            options: Options::default(),
            timestamps: true,
        }
    }

    fn from_options(options: Options, timestamps: bool) -> Self {
        let names = ["message".to_owned()];
        let sites = Kind::ALL.map(|kind| {
            Site::get(
                STRUCTURED_EVENT_NAME,
                &options.target,
                options.level_of(kind),
                &names,
            )
        });
        Self {
            options,
            timestamps,
            sites,
        }
    }

    #[inline]
    fn log(&self, kind: Kind, values: impl FnOnce() -> Vec<Option<Val>>) {
        let site = self.sites[kind.index()];
        if !site.enabled() {
            return;
        }
        let line = self.line(kind, &values());
        site.emit(&[Some(&line.as_str() as &dyn Value)]);
    }

    fn line(&self, kind: Kind, values: &[Option<Val>]) -> String {
        let mut out = String::with_capacity(256);
        out.push('{');
        if self.timestamps {
            out.push_str("\"timestamp\":\"");
            out.push_str(&rfc3339_utc(SystemTime::now()));
            out.push_str("\",");
        }
        out.push_str("\"level\":\"");
        out.push_str(self.options.level_of(kind).as_str());
        out.push_str("\",\"message\":\"");
        out.push_str(kind.message());
        out.push_str("\",\"event\":\"");
        out.push_str(kind.event());
        out.push('"');
        let extras = self
            .options
            .extras
            .iter()
            .map(|(k, v)| (k.as_str(), Some(v)));
        let own = kind
            .fields()
            .iter()
            .copied()
            .zip(values.iter().map(Option::as_ref));
        for (key, value) in extras.chain(own) {
            if let Some(value) = value {
                out.push(',');
                out.push_str(&Json::String(key.to_owned()).to_string());
                out.push(':');
                value.write_json(&mut out);
            }
        }
        out.push('}');
        out
    }
}

/// Builds a [`StructuredLoggingHook`].
#[derive(Debug, Clone)]
pub struct StructuredLoggingHookBuilder {
    options: Options,
    timestamps: bool,
}

impl StructuredLoggingHookBuilder {
    option_setters!();

    /// Adds an RFC 3339 UTC `timestamp` to every line (default on).
    #[must_use]
    pub fn with_timestamps(mut self, on: bool) -> Self {
        self.timestamps = on;
        self
    }

    /// Builds the hook.
    ///
    /// # Errors
    /// [`Error::EmptyTarget`] for an empty target; [`Error::TooManyExtraFields`] past
    /// [`MAX_EXTRA_FIELDS`](crate::MAX_EXTRA_FIELDS).
    pub fn build(self) -> Result<StructuredLoggingHook> {
        self.options.validate()?;
        Ok(StructuredLoggingHook::from_options(
            self.options,
            self.timestamps,
        ))
    }
}

forward_hooks!(StructuredLoggingHook);

/// `t` as RFC 3339 in UTC with microseconds, e.g. `2026-11-30T16:10:00.123456Z`.
///
/// ```
/// use std::time::{Duration, UNIX_EPOCH};
/// let t = UNIX_EPOCH + Duration::from_micros(1_700_000_000_123_456);
/// assert_eq!(hooks_logging::rfc3339_utc(t), "2023-11-14T22:13:20.123456Z");
/// ```
pub fn rfc3339_utc(t: SystemTime) -> String {
    const FORMAT: &[time::format_description::BorrowedFormatItem<'_>] = time::macros::format_description!(
        "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:6]Z"
    );
    // Before the epoch (a clock set wrong) reads as the epoch, as before.
    let t = t.max(UNIX_EPOCH);
    time::OffsetDateTime::from(t)
        .format(FORMAT)
        .unwrap_or_else(|_| "1970-01-01T00:00:00.000000Z".to_owned())
}

/// Formats events as JSON lines: a [`StructuredLoggingHook`] line as it is, any other event as
/// `{"timestamp", "level", "target", "message", fields…}`.
#[derive(Debug, Clone, Copy, Default)]
pub struct JsonLines;

#[derive(Default)]
struct Collect(Map<String, Json>);

impl Visit for Collect {
    fn record_str(&mut self, f: &Field, v: &str) {
        self.0
            .insert(f.name().to_owned(), Json::String(v.to_owned()));
    }
    fn record_bool(&mut self, f: &Field, v: bool) {
        self.0.insert(f.name().to_owned(), Json::Bool(v));
    }
    fn record_i64(&mut self, f: &Field, v: i64) {
        self.0.insert(f.name().to_owned(), Json::from(v));
    }
    fn record_u64(&mut self, f: &Field, v: u64) {
        self.0.insert(f.name().to_owned(), Json::from(v));
    }
    fn record_f64(&mut self, f: &Field, v: f64) {
        self.0.insert(f.name().to_owned(), Json::from(v));
    }
    fn record_debug(&mut self, f: &Field, v: &dyn fmt::Debug) {
        self.0
            .insert(f.name().to_owned(), Json::String(format!("{v:?}")));
    }
}

impl<S, N> FormatEvent<S, N> for JsonLines
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        _: &FmtContext<'_, S, N>,
        mut w: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let mut fields = Collect::default();
        event.record(&mut fields);
        let meta = event.metadata();
        if meta.name() == STRUCTURED_EVENT_NAME
            && let Some(Json::String(line)) = fields.0.get("message")
        {
            return writeln!(w, "{line}");
        }
        let mut obj = Map::new();
        obj.insert(
            "timestamp".into(),
            Json::String(rfc3339_utc(SystemTime::now())),
        );
        obj.insert(
            "level".into(),
            Json::String(meta.level().as_str().to_owned()),
        );
        obj.insert("target".into(), Json::String(meta.target().to_owned()));
        for (k, v) in fields.0 {
            obj.insert(k, v);
        }
        writeln!(w, "{}", Json::Object(obj))
    }
}

/// A subscriber that writes every event as a JSON line to `writer` (see [`JsonLines`]), for
/// programs that have no subscriber of their own.
///
/// ```
/// let subscriber = hooks_logging::json_subscriber(std::io::stderr);
/// tracing::subscriber::with_default(subscriber, || tracing::info!(answer = 42, "hello"));
/// ```
pub fn json_subscriber<W>(writer: W) -> impl Subscriber + Send + Sync + 'static
where
    W: for<'a> MakeWriter<'a> + Send + Sync + 'static,
{
    tracing_subscriber::fmt()
        .event_format(JsonLines)
        .with_writer(writer)
        .with_max_level(tracing::Level::TRACE)
        .finish()
}

/// Installs [`json_subscriber`] writing to stdout as the global default.
///
/// # Errors
/// [`Error::SubscriberAlreadySet`] when the program already has a global subscriber (the hooks
/// then log through that one).
pub fn install_json_subscriber() -> Result<()> {
    tracing::subscriber::set_global_default(json_subscriber(io::stdout))
        .map_err(Error::SubscriberAlreadySet)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn timestamps_are_rfc3339_utc() {
        assert_eq!(rfc3339_utc(UNIX_EPOCH), "1970-01-01T00:00:00.000000Z");
        // 2024-02-29 (leap day) 12:34:56.789
        let t = UNIX_EPOCH + Duration::from_millis(1_709_210_096_789);
        assert_eq!(rfc3339_utc(t), "2024-02-29T12:34:56.789000Z");
        let t = UNIX_EPOCH + Duration::from_secs(4_102_444_799);
        assert_eq!(rfc3339_utc(t), "2099-12-31T23:59:59.000000Z");
    }
}
