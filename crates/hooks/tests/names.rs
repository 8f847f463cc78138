//! Every provider's name can be set, so one registry can hold two of a kind with different
//! settings; and every builder reads the same way.

#![allow(clippy::unwrap_used)] // tests fail loudly on the first unexpected error

use hooks::HookRegistry;
use hooks::guardrails::GuardrailsHook;
use hooks::logging::{LoggingHook, StructuredLoggingHook};
use hooks::otel::TelemetryHook;
use hooks::retry::{ModelRetryHook, ToolRetryHook};
use hooks::steering::{RuleJudge, SteeringAction, SteeringHook};

#[test]
fn two_of_every_provider_fit_in_one_registry_under_different_names() {
    let mut r = HookRegistry::new();
    r.add(LoggingHook::new()).unwrap();
    r.add(
        LoggingHook::builder()
            .with_name("audit-log")
            .build()
            .unwrap(),
    )
    .unwrap();
    r.add(StructuredLoggingHook::new()).unwrap();
    r.add(
        StructuredLoggingHook::builder()
            .with_name("json-audit")
            .build()
            .unwrap(),
    )
    .unwrap();
    r.add(TelemetryHook::new()).unwrap();
    r.add(TelemetryHook::builder().with_name("second-tracer").build())
        .unwrap();
    r.add(GuardrailsHook::builder().build().unwrap()).unwrap();
    r.add(
        GuardrailsHook::builder()
            .with_name("strict-guard")
            .build()
            .unwrap(),
    )
    .unwrap();
    r.add(ModelRetryHook::new()).unwrap();
    r.add(
        ModelRetryHook::builder()
            .with_name("patient-retry")
            .build()
            .unwrap(),
    )
    .unwrap();
    r.add(ToolRetryHook::builder(|_, _| true).build().unwrap())
        .unwrap();
    r.add(
        ToolRetryHook::builder(|_, _| false)
            .with_name("no-tool-retry")
            .build()
            .unwrap(),
    )
    .unwrap();
    r.add(SteeringHook::builder(RuleJudge::new(SteeringAction::Proceed)).build())
        .unwrap();
    r.add(
        SteeringHook::builder(RuleJudge::new(SteeringAction::Guide))
            .with_name("strict-steering")
            .build(),
    )
    .unwrap();
    assert_eq!(r.len(), 14);
    for name in [
        "LoggingHook",
        "audit-log",
        "StructuredLoggingHook",
        "json-audit",
        "TelemetryHook",
        "second-tracer",
        "GuardrailsHook",
        "strict-guard",
        "ModelRetryHook",
        "patient-retry",
        "ToolRetryHook",
        "no-tool-retry",
        "SteeringHook",
        "strict-steering",
    ] {
        assert!(r.contains(name), "{name}");
    }
    // The default names are taken: a second unnamed one is refused, naming it.
    let err = r.add(LoggingHook::new()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "Hook provider 'LoggingHook' already registered"
    );
}
