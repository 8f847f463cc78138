//! An OTLP/HTTP receiver on 127.0.0.1 for tests (feature `test-util`): it decodes the
//! protobuf requests it gets and keeps the spans and metric points.
//!
//! It binds port 0, serves each connection on its own thread with a read timeout, and stops
//! when dropped.

use std::collections::BTreeMap;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::metrics::v1::{metric, number_data_point};
use prost::Message;

/// An attribute value as received.
#[derive(Debug, Clone, PartialEq)]
pub enum AttrValue {
    /// A string.
    Str(String),
    /// An integer.
    Int(i64),
    /// A float.
    Double(f64),
    /// A boolean.
    Bool(bool),
    /// An array.
    Array(Vec<AttrValue>),
    /// Anything else, debug-printed.
    Other(String),
}

impl AttrValue {
    /// The string, if it is one.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            AttrValue::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The integer, if it is one.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            AttrValue::Int(i) => Some(*i),
            _ => None,
        }
    }

    /// The boolean, if it is one.
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            AttrValue::Bool(b) => Some(*b),
            _ => None,
        }
    }
}

fn value(v: &Option<AnyValue>) -> AttrValue {
    match v.as_ref().and_then(|v| v.value.as_ref()) {
        Some(any_value::Value::StringValue(s)) => AttrValue::Str(s.clone()),
        Some(any_value::Value::IntValue(i)) => AttrValue::Int(*i),
        Some(any_value::Value::DoubleValue(d)) => AttrValue::Double(*d),
        Some(any_value::Value::BoolValue(b)) => AttrValue::Bool(*b),
        Some(any_value::Value::ArrayValue(a)) => {
            AttrValue::Array(a.values.iter().map(|v| value(&Some(v.clone()))).collect())
        }
        other => AttrValue::Other(format!("{other:?}")),
    }
}

fn attrs(kvs: &[KeyValue]) -> BTreeMap<String, AttrValue> {
    kvs.iter()
        .map(|kv| (kv.key.clone(), value(&kv.value)))
        .collect()
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// A span as received.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ReceivedSpan {
    /// The name.
    pub name: String,
    /// Trace id, hex.
    pub trace_id: String,
    /// Span id, hex.
    pub span_id: String,
    /// Parent span id, hex; empty for a root.
    pub parent_span_id: String,
    /// The OTLP span kind number (1 internal, 3 client, …).
    pub kind: i32,
    /// Attributes.
    pub attributes: BTreeMap<String, AttrValue>,
    /// Event names with their attributes.
    pub events: Vec<(String, BTreeMap<String, AttrValue>)>,
    /// Status code (0 unset, 1 ok, 2 error).
    pub status_code: i32,
    /// Links: (trace id, span id) in hex.
    pub links: Vec<(String, String)>,
    /// Status message.
    pub status_message: String,
    /// Resource attributes.
    pub resource: BTreeMap<String, AttrValue>,
    /// The instrumentation scope's name.
    pub scope: String,
    /// Start and end, nanoseconds since the epoch.
    pub start_end: (u64, u64),
}

impl ReceivedSpan {
    /// A string attribute.
    pub fn str_attr(&self, key: &str) -> Option<&str> {
        self.attributes.get(key).and_then(AttrValue::as_str)
    }
}

/// One metric data point as received.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ReceivedPoint {
    /// The metric's name.
    pub metric: String,
    /// The metric's unit.
    pub unit: String,
    /// `sum`, `gauge` or `histogram`.
    pub kind: &'static str,
    /// Point attributes.
    pub attributes: BTreeMap<String, AttrValue>,
    /// The sum's or gauge's value, or the histogram's sum.
    pub value: f64,
    /// The histogram's count (1 for sums and gauges).
    pub count: u64,
    /// The histogram's explicit bucket bounds.
    pub bounds: Vec<f64>,
}

#[derive(Default)]
struct Shared {
    spans: Mutex<Vec<ReceivedSpan>>,
    points: Mutex<Vec<ReceivedPoint>>,
    arrived: Condvar,
    requests: AtomicUsize,
    bodies: Mutex<Vec<Vec<u8>>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// An OTLP/HTTP receiver on 127.0.0.1.
///
/// ```
/// let receiver = hooks_otel::testing::OtlpReceiver::start().unwrap();
/// assert!(receiver.endpoint().starts_with("http://127.0.0.1:"));
/// assert!(receiver.spans().is_empty());
/// ```
pub struct OtlpReceiver {
    addr: SocketAddr,
    tls: bool,
    shared: Arc<Shared>,
    stop: Arc<AtomicBool>,
    accept: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for OtlpReceiver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OtlpReceiver")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl OtlpReceiver {
    /// Binds 127.0.0.1 on a free port and starts serving.
    ///
    /// # Errors
    /// When the socket cannot be bound.
    pub fn start() -> io::Result<Self> {
        Self::start_with(None)
    }

    /// Like [`start`](Self::start), but serving HTTPS with `config` (a certificate for
    /// 127.0.0.1, e.g. made with rcgen); [`endpoint`](Self::endpoint) is then `https://…`.
    /// A handshake that fails (a client that does not trust the certificate) is dropped.
    ///
    /// # Errors
    /// When the socket cannot be bound.
    pub fn start_tls(config: Arc<rustls::ServerConfig>) -> io::Result<Self> {
        Self::start_with(Some(config))
    }

    fn start_with(tls: Option<Arc<rustls::ServerConfig>>) -> io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let tls_on = tls.is_some();
        let shared = Arc::new(Shared::default());
        let stop = Arc::new(AtomicBool::new(false));
        let (s, st) = (shared.clone(), stop.clone());
        let accept = std::thread::spawn(move || {
            for conn in listener.incoming() {
                if st.load(Ordering::SeqCst) {
                    break;
                }
                if let Ok(conn) = conn {
                    let s = s.clone();
                    let tls = tls.clone();
                    std::thread::spawn(move || {
                        let _ = conn.set_read_timeout(Some(Duration::from_secs(5)));
                        match tls {
                            None => {
                                let _ = serve(conn, &s);
                            }
                            Some(config) => {
                                if let Ok(server) = rustls::ServerConnection::new(config) {
                                    let _ = serve(rustls::StreamOwned::new(server, conn), &s);
                                }
                            }
                        }
                    });
                }
            }
        });
        Ok(Self {
            addr,
            tls: tls_on,
            shared,
            stop,
            accept: Some(accept),
        })
    }

    /// The base URL to export to, e.g. `http://127.0.0.1:40123`.
    pub fn endpoint(&self) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        format!("{scheme}://{}", self.addr)
    }

    /// Every span received so far.
    pub fn spans(&self) -> Vec<ReceivedSpan> {
        lock(&self.shared.spans).clone()
    }

    /// Every metric point received so far.
    pub fn points(&self) -> Vec<ReceivedPoint> {
        lock(&self.shared.points).clone()
    }

    /// The raw request bodies received so far (to search them for values that must not be
    /// there).
    pub fn raw_bodies(&self) -> Vec<Vec<u8>> {
        lock(&self.shared.bodies).clone()
    }

    /// How many export requests arrived.
    pub fn requests(&self) -> usize {
        self.shared.requests.load(Ordering::SeqCst)
    }

    /// Waits (at most `timeout`) until at least `n` spans arrived; returns what arrived.
    pub fn wait_for_spans(&self, n: usize, timeout: Duration) -> Vec<ReceivedSpan> {
        let deadline = Instant::now() + timeout;
        let mut spans = lock(&self.shared.spans);
        while spans.len() < n {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            spans = self
                .shared
                .arrived
                .wait_timeout(spans, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        spans.clone()
    }
}

impl Drop for OtlpReceiver {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop.
        let _ = TcpStream::connect(self.addr);
        if let Some(h) = self.accept.take() {
            let _ = h.join();
        }
    }
}

/// Serves one keep-alive connection until it closes or idles for 5 s.
fn serve(conn: impl Read + Write, shared: &Shared) -> io::Result<()> {
    let mut reader = BufReader::new(conn);
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            return Ok(());
        }
        // The path without its query (a collector token).
        let target = line.split_whitespace().nth(1).unwrap_or("");
        let path = target.split('?').next().unwrap_or("").to_owned();
        let mut length = 0usize;
        let mut chunked = false;
        loop {
            let mut h = String::new();
            if reader.read_line(&mut h)? == 0 {
                return Ok(());
            }
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            if let Some((k, v)) = h.split_once(':') {
                let (k, v) = (k.trim().to_ascii_lowercase(), v.trim());
                if k == "content-length" {
                    length = v.parse().unwrap_or(0);
                } else if k == "transfer-encoding" && v.eq_ignore_ascii_case("chunked") {
                    chunked = true;
                }
            }
        }
        let body = if chunked {
            read_chunked(&mut reader)?
        } else {
            read_exact(&mut reader, length)?
        };
        shared.requests.fetch_add(1, Ordering::SeqCst);
        decode(&path, &body, shared);
        lock(&shared.bodies).push(body);
        let writer = reader.get_mut();
        writer.write_all(
            b"HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n",
        )?;
        writer.flush()?;
    }
}

fn read_exact(r: &mut impl Read, n: usize) -> io::Result<Vec<u8>> {
    let mut body = vec![0; n];
    r.read_exact(&mut body)?;
    Ok(body)
}

fn read_chunked(r: &mut impl BufRead) -> io::Result<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let mut size = String::new();
        r.read_line(&mut size)?;
        let n =
            usize::from_str_radix(size.trim().split(';').next().unwrap_or("0"), 16).unwrap_or(0);
        let chunk = read_exact(r, n + 2)?;
        body.extend_from_slice(&chunk[..n]);
        if n == 0 {
            return Ok(body);
        }
    }
}

fn decode(path: &str, body: &[u8], shared: &Shared) {
    if path.ends_with("/v1/traces") {
        let Ok(req) = ExportTraceServiceRequest::decode(body) else {
            return;
        };
        let mut out = Vec::new();
        for rs in &req.resource_spans {
            let resource = rs
                .resource
                .as_ref()
                .map(|r| attrs(&r.attributes))
                .unwrap_or_default();
            for ss in &rs.scope_spans {
                let scope = ss
                    .scope
                    .as_ref()
                    .map(|s| s.name.clone())
                    .unwrap_or_default();
                for s in &ss.spans {
                    out.push(ReceivedSpan {
                        name: s.name.clone(),
                        trace_id: hex(&s.trace_id),
                        span_id: hex(&s.span_id),
                        parent_span_id: hex(&s.parent_span_id),
                        kind: s.kind,
                        attributes: attrs(&s.attributes),
                        events: s
                            .events
                            .iter()
                            .map(|e| (e.name.clone(), attrs(&e.attributes)))
                            .collect(),
                        status_code: s.status.as_ref().map_or(0, |st| st.code),
                        links: s
                            .links
                            .iter()
                            .map(|l| (hex(&l.trace_id), hex(&l.span_id)))
                            .collect(),
                        status_message: s
                            .status
                            .as_ref()
                            .map(|st| st.message.clone())
                            .unwrap_or_default(),
                        resource: resource.clone(),
                        scope: scope.clone(),
                        start_end: (s.start_time_unix_nano, s.end_time_unix_nano),
                    });
                }
            }
        }
        lock(&shared.spans).extend(out);
        shared.arrived.notify_all();
    } else if path.ends_with("/v1/metrics") {
        let Ok(req) = ExportMetricsServiceRequest::decode(body) else {
            return;
        };
        let mut out = Vec::new();
        for rm in &req.resource_metrics {
            for sm in &rm.scope_metrics {
                for m in &sm.metrics {
                    match &m.data {
                        Some(metric::Data::Sum(s)) => {
                            out.extend(s.data_points.iter().map(|p| number(m, "sum", p)))
                        }
                        Some(metric::Data::Gauge(g)) => {
                            out.extend(g.data_points.iter().map(|p| number(m, "gauge", p)))
                        }
                        Some(metric::Data::Histogram(h)) => {
                            out.extend(h.data_points.iter().map(|p| ReceivedPoint {
                                metric: m.name.clone(),
                                unit: m.unit.clone(),
                                kind: "histogram",
                                attributes: attrs(&p.attributes),
                                value: p.sum.unwrap_or(0.0),
                                count: p.count,
                                bounds: p.explicit_bounds.clone(),
                            }))
                        }
                        _ => {}
                    }
                }
            }
        }
        lock(&shared.points).extend(out);
    }
}

fn number(
    m: &opentelemetry_proto::tonic::metrics::v1::Metric,
    kind: &'static str,
    p: &opentelemetry_proto::tonic::metrics::v1::NumberDataPoint,
) -> ReceivedPoint {
    let value = match p.value {
        Some(number_data_point::Value::AsDouble(d)) => d,
        Some(number_data_point::Value::AsInt(i)) => i as f64,
        None => 0.0,
    };
    ReceivedPoint {
        metric: m.name.clone(),
        unit: m.unit.clone(),
        kind,
        attributes: attrs(&p.attributes),
        value,
        count: 1,
        bounds: Vec::new(),
    }
}
