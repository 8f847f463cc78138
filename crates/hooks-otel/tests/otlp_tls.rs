//! OTLP/HTTP export over real TLS: a collector on 127.0.0.1 with a throwaway CA's certificate
//! receives the spans when that CA is trusted through `HttpConfig`, and is refused (with an
//! error that says why) when it is not.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::Duration;

use hooks_core::agent::Agent;
use hooks_core::http::HttpConfig;
use hooks_core::test_util::{ScriptedModel, TestCa};
use hooks_core::{HookRegistry, ModelResponse};
use hooks_otel::testing::OtlpReceiver;
use hooks_otel::{ExportMode, OtlpSetup};

fn agent(hook: Arc<hooks_otel::TelemetryHook>) -> Agent {
    let mut registry = HookRegistry::new();
    registry.add(hook).unwrap();
    Agent::builder(
        "tls",
        ScriptedModel::new(vec![Ok(ModelResponse::text("over tls"))]),
    )
    .registry(Arc::new(registry))
    .build()
    .unwrap()
}

fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    hooks_core::http::error_chain(e)
}

#[test]
fn spans_reach_an_https_collector_trusted_through_a_custom_root() {
    let ca = TestCa::new().unwrap();
    let receiver = OtlpReceiver::start_tls(ca.server_config()).unwrap();
    assert!(receiver.endpoint().starts_with("https://127.0.0.1:"));
    for mode in [ExportMode::Blocking, ExportMode::Tokio] {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let before = receiver.spans().len();
        let _enter = rt.enter();
        let guard = OtlpSetup::new()
            .with_endpoint(receiver.endpoint())
            .with_export_mode(mode)
            .with_timeout(Duration::from_secs(5))
            .with_http_config(
                HttpConfig::new()
                    .with_root_certificate_pem(ca.ca_pem().as_bytes())
                    .unwrap()
                    .without_proxy(),
            )
            .install()
            .unwrap();
        let hook = Arc::new(guard.hook().build());
        let out = rt.block_on(agent(hook).run("hi")).unwrap();
        assert_eq!(out.answer, "over tls");
        match mode {
            ExportMode::Tokio => rt.block_on(guard.shutdown_async()).unwrap(),
            _ => guard.shutdown().unwrap(),
        }
        let spans = receiver.wait_for_spans(before + 2, Duration::from_secs(10));
        assert!(
            spans[before..].iter().any(|s| s.name == "invoke_agent tls"),
            "{mode:?}: {:?}",
            spans.iter().map(|s| &s.name).collect::<Vec<_>>()
        );
    }
}

#[test]
fn an_untrusted_collector_certificate_is_refused_with_a_clear_error() {
    let ca = TestCa::new().unwrap();
    let receiver = OtlpReceiver::start_tls(ca.server_config()).unwrap();
    let guard = OtlpSetup::new()
        .with_endpoint(receiver.endpoint())
        .with_timeout(Duration::from_secs(5))
        .with_http_config(HttpConfig::new().without_proxy())
        .install()
        .unwrap();
    let hook = Arc::new(guard.hook().build());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(agent(hook).run("hi")).unwrap();
    let err = guard.force_flush().unwrap_err();
    let msg = chain(&err);
    assert!(
        msg.contains("certificate") || msg.contains("UnknownIssuer"),
        "the error should say the certificate was not trusted: {msg}"
    );
    assert!(guard.export_failures() >= 1);
    assert_eq!(receiver.spans().len(), 0, "nothing was accepted");
}

#[test]
fn collector_credentials_and_tokens_never_reach_errors_logs_or_debug_output() {
    let ca = TestCa::new().unwrap();
    let receiver = OtlpReceiver::start_tls(ca.server_config()).unwrap();
    let endpoint = receiver
        .endpoint()
        .replace("https://", "https://otuser:OTELPASSMARKER@")
        + "/?token=OTELTOKENMARKER";
    let setup = OtlpSetup::new()
        .with_endpoint(endpoint)
        .with_timeout(Duration::from_secs(5))
        .with_http_config(HttpConfig::new().without_proxy());
    let guard = setup.clone().install().unwrap();
    let hook = Arc::new(guard.hook().build());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(agent(hook).run("hi")).unwrap();
    let err = guard.force_flush().unwrap_err();
    let shown = format!(
        "{} {err:?} {:?} {guard:?} {setup:?}",
        chain(&err),
        guard.last_export_error()
    );
    for marker in ["OTELPASSMARKER", "OTELTOKENMARKER"] {
        assert!(!shown.contains(marker), "{marker} in {shown}");
    }
    assert!(guard.last_export_error().is_some());
}

#[test]
fn a_token_in_the_endpoints_query_is_kept_after_the_signal_path() {
    let receiver = OtlpReceiver::start().unwrap();
    let guard = OtlpSetup::new()
        .with_endpoint(format!("{}/?token=abc", receiver.endpoint()))
        .install()
        .unwrap();
    let hook = Arc::new(guard.hook().build());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(agent(hook).run("hi")).unwrap();
    guard.shutdown().unwrap();
    let spans = receiver.wait_for_spans(1, Duration::from_secs(10));
    assert!(
        spans.iter().any(|s| s.name == "invoke_agent tls"),
        "{spans:?}"
    );
}
