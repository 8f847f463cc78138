//! No leaks: every PII value of both dev sets goes through prompts, nested tool arguments, tool
//! results (also as JSON-encoded text, each value after an escaped line break, and in a link
//! whose query was URL-encoded twice) and model replies, with guardrails redacting every
//! detector, logging with arguments and results on, structured logging, and telemetry
//! capturing content over a real OTLP connection, and a steering judge (over `OpenAiModel`,
//! real HTTP to a server on loopback) judging every tool call and final answer. Not one value
//! (nor its twice-encoded form) may reach a log line, an exported span, a recorded violation,
//! a message the model receives or a request the judge receives — while the placeholders do.
//!
//! Installs a global tracing subscriber (the exporter logs from its own threads), so this
//! file holds this one test.

#![allow(clippy::unwrap_used)]

use std::io;

use std::sync::{Arc, Mutex};
use std::time::Duration;
use tracing_subscriber::Layer as _;

use hooks::agent::{Agent, FnTool};
use hooks::guardrails::{Entity, GuardrailAction, GuardrailConfig, GuardrailsHook, PiiDetector};
use hooks::http::HttpConfig;
use hooks::logging::{LoggingHook, StructuredLoggingHook};
use hooks::openai::OpenAiModel;
use hooks::otel::OtlpSetup;
use hooks::steering::{ModelJudge, SteeringHook};
use hooks::{
    AfterModelCallEvent, BeforeModelCallEvent, HookError, HookPriority, HookProvider, HookRegistry,
    HookSet, Message, ModelResponse, ToolCall, ToolSpec, async_trait,
};
use hooks_core::test_util::{ScriptedModel, TestReply, TestServer};
use hooks_otel::testing::OtlpReceiver;
use serde_json::{Value, json};

#[derive(Clone, Default)]
struct Buffer(Arc<Mutex<Vec<u8>>>);

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
    fn make_writer(&'a self) -> Buffer {
        self.clone()
    }
}

/// Text that enters the conversation without an event of its own: a context provider that
/// puts a system message into every request (in the security band, before the guard), and a
/// reviewer that turns down the first summary with feedback quoting the customer. Both carry
/// the run's snippet, PII and all.
#[derive(Default)]
struct Unjudged {
    snippet: Mutex<String>,
}

#[async_trait]
impl HookProvider for Unjudged {
    fn name(&self) -> &str {
        "unjudged"
    }
    fn hooks(&self) -> HookSet {
        HookSet::BEFORE_MODEL_CALL | HookSet::AFTER_MODEL_CALL
    }
    fn priority_for(&self, event: hooks::HookEvent) -> HookPriority {
        if event.is_after() {
            HookPriority::DEFAULT
        } else {
            HookPriority::new(10)
        }
    }
    async fn on_before_model_call(
        &self,
        e: &mut BeforeModelCallEvent<'_>,
    ) -> Result<(), HookError> {
        let note = format!("Known about the customer: {}", self.snippet.lock().unwrap());
        e.messages_mut().push(Message::system(note));
        Ok(())
    }
    async fn on_after_model_call(&self, e: &mut AfterModelCallEvent<'_>) -> Result<(), HookError> {
        let summary = e
            .response()
            .is_some_and(|r| r.message.content.starts_with("Summary:"));
        if summary && e.attempt() == 0 {
            e.request_retry();
            let feedback = format!(
                "Too long. The customer's own words were: {}",
                self.snippet.lock().unwrap()
            );
            e.set_retry_feedback(feedback);
        }
        Ok(())
    }
}

/// Every labelled value of both dev sets (agent traffic, and the formats people write every
/// day: fullwidth, NBSP and zero-width separators, IDN and `%40` e-mails, E.164 and national
/// phones, PEM variants, …), with a label that gives it its usual context.
/// `v` URL-encoded twice, as a query inside a link's query is: each ASCII punctuation or
/// white-space character as `%25` and its hex code (`@` → `%2540`).
fn encoded_twice(v: &str) -> String {
    v.chars()
        .map(|c| {
            if c.is_ascii_punctuation() || c.is_ascii_whitespace() {
                format!("%25{:02X}", c as u32)
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// A numeric password, passed as a JSON number on an argument list.
const PIN: u64 = 73_915_046;

fn values() -> Vec<(String, String)> {
    let data = [
        include_str!("../../hooks-guardrails/tests/data/pii-dev.jsonl"),
        include_str!("../../hooks-guardrails/tests/data/pii-field-dev.jsonl"),
    ]
    .concat();
    let mut out = Vec::new();
    for line in data.lines().filter(|l| !l.trim().is_empty()) {
        let rec: Value = serde_json::from_str(line).unwrap();
        let text = rec["text"].as_str().unwrap();
        for s in rec["spans"].as_array().unwrap() {
            let v =
                &text[s["start"].as_u64().unwrap() as usize..s["end"].as_u64().unwrap() as usize];
            // A secret that is one only where it is written (a named value) goes through
            // every path in that form.
            let resp: String;
            let named = match s["subtype"].as_str().unwrap_or_default() {
                // (Its length, as Redis's protocol writes it before the value.)
                "secret_redis_resp" => {
                    resp = format!("*2\r\n$4\r\nAUTH\r\n${}\r\n{{}}\r\n", v.len());
                    Some(resp.as_str())
                }
                "secret_k8s_env_pair" => Some("- name: DB_PASSWORD\n  value: {}\n"),
                "secret_ecs_env_pair" => Some(r#"{"name": "API_KEY", "value": "{}"}"#),
                "secret_env_index" | "secret_index" => Some(r#"os.environ["API_KEY"] = "{}""#),
                "secret_sql_identified_by" => Some("CREATE USER u IDENTIFIED BY '{}';"),
                "secret_sql_password" => Some("ALTER ROLE app WITH LOGIN PASSWORD '{}';"),
                "secret_blank_setter" => Some("setx DB_PASSWORD {} /M"),
                "secret_dockerfile_env_line" => Some("FROM node:20\nENV DB_PASSWORD {}\n"),
                "secret_gh_body" => Some("gh secret set API_KEY --body '{}'"),
                "secret_camel_pass" => Some("const dbPass = \"{}\";"),
                "secret_key_base" => Some("SECRET_KEY_BASE={}"),
                "secret_xml_element" => Some("<server><password>{}</password></server>"),
                "secret_attribute_pair" => Some(r#"<add key="ApiKey" value="{}" />"#),
                "secret_xml_tag_attributes" => {
                    Some(r#"<wsse:Password Type="…#PasswordText">{}</wsse:Password>"#)
                }
                "secret_xml_keyed_element" => Some(r#"<entry key="db.password">{}</entry>"#),
                "secret_xml_name_value" => {
                    Some("<name>javax.jdo.option.ConnectionPassword</name>\n<value>{}</value>")
                }
                "secret_call_argument" => Some("u.set_password(\"{}\")"),
                "secret_mysqladmin" => Some("mysqladmin -u root -p password '{}'"),
                "secret_positional_password" => Some("htpasswd -bc .htpasswd admin '{}'"),
                "secret_stdin_password" => Some("echo '{}' | sudo -S apt-get update"),
                "secret_odbc_braced" => Some("Driver={ODBC Driver 18};Uid=sa;Pwd={{}};"),
                "secret_html_escaped" => Some("&lt;password&gt;{}&lt;/password&gt;"),
                "secret_markdown" => Some("- **Password:** `{}`"),
                "secret_markdown_table" => Some("| `DB_PASSWORD` | `{}` |"),
                "secret_html_table" => Some("<tr><th>Password</th><td>{}</td></tr>"),
                "secret_prose" => Some("Done. Your new password is `{}`."),
                "secret_value_first" => Some("Use `{}` as the password."),
                "secret_db_client_table" => {
                    Some(" username | password\n----------+----------\n bob      | {}\n")
                }
                "secret_db_client_record" => {
                    Some("-[ RECORD 1 ]----\nusername | bob\npassword | {}\n")
                }
                // (On lines of its own: the values before it end on the line above.)
                "secret_aws_secret_string" => Some(r#"{"Name": "db", "SecretString": "{}"}"#),
                "secret_spaced_table" => Some("\nuser  password\n----  --------\nbob   {}\n"),
                "secret_redis_auth" => Some("\nlocalhost:6379> AUTH default {}\nOK\n"),
                "secret_mail_login" => Some("\na001 LOGIN bob {}\na001 OK\n"),
                "secret_redis_option" => Some("\n127.0.0.1:6379> HELLO 3 AUTH default {}\nOK\n"),
                "secret_redis_config" => Some("\nport 6379\nrequirepass {}\n"),
                "secret_redis_acl" => Some("ACL SETUSER bot on >{} ~jobs:* +get"),
                "secret_redis_acl_file" => Some("\nuser bot on >{} ~jobs:* +get\n"),
                "secret_client_option" => Some("valkey-cli -h cache -a '{}' ping"),
                "secret_tool_option" => Some("ipmitool -H bmc -U admin -P '{}' sel list"),
                "secret_pgpass" => Some("echo 'db:5432:app:bob:{}' >> ~/.pgpass\n"),
                "secret_ssm_value" => {
                    Some("aws ssm put-parameter --name /prod/db/password --value '{}'")
                }
                "secret_keyring_setter" => Some(r#"keyring.set_password("svc", "bot", "{}")"#),
                "secret_keyvault_value" => Some("az keyvault secret set --name db --value '{}'"),
                "secret_stdin_store" => Some("echo '{}' | gh secret set API_TOKEN\n"),
                "secret_wifi_psk" => Some("network={\n    ssid=\"Home\"\n    psk=\"{}\"\n}\n"),
                "secret_yaml_block" => Some("smtp:\n  password: |\n    {}\n  port: 587\n"),
                "secret_lookup_fallback" => Some("password: process.env.DB_PASSWORD || '{}',"),
                "secret_curl_option" => Some("curl_setopt($ch, CURLOPT_USERPWD, \"{}\");"),
                "secret_short_name" => Some("ADMIN_PW={}"),
                "secret_go_dsn" => Some("sql.Open(\"mysql\", \"app:{}@tcp(db:3306)/app\")"),
                "secret_local_label" => Some("Benutzername: admin\nPasswort: {}\n"),
                "secret_local_prose" => Some("Hallo! Mein Passwort ist {}, danke."),
                "secret_human_prose" => Some("Hi! My password is {}, can you check it?"),
                "secret_marked_value" => Some("db:\n  password: {}\n  host: db\n"),
                "secret_credentials_pair" => Some("rabbitmq:\n  credentials: {}\n"),
                "secret_seed_phrase" => Some("wallet:\n  mnemonic: \"{}\"\n"),
                "secret_wifi_qr" => Some("qrencode -o guest.png 'WIFI:S:Guest;T:WPA;P:{};;'"),
                "secret_used_prose" => Some("Please log in with password {} and change it."),
                "secret_sasl_login" => Some("send: 'AUTH PLAIN {}\\r\\n'"),
                "secret_wif_key" => Some("bitcoin-cli importprivkey {} \"cold\" false"),
                "secret_totp" => Some("2FA secret: {}"),
                "secret_recovery_codes" => Some("Your recovery codes:\n{}\n"),
                "secret_encoded_pem" => Some("data:\n  tls.key: {}\nkind: Secret\n"),
                "secret_kube_data" => Some("apiVersion: v1\ndata:\n  URL: {}\nkind: Secret\n"),
                "secret_store_value" => Some("fly secrets set SESSION={} --stage"),
                "secret_crypto_key" => Some("encryption key: {}"),
                "secret_azure_account_key" => {
                    Some("DefaultEndpointsProtocol=https;AccountName=st;AccountKey={};Endpoint")
                }
                "secret_wallet_call" => Some("const signer = new Wallet('{}', provider);"),
                "secret_vault_key" => Some("Unseal Key 1: {}\nUnseal Key 2: "),
                "secret_solana_key" => Some("$ cat ~/.config/solana/id.json\n[{}]\n"),
                "secret_printed" => Some("$ vault kv get -field=password secret/db\n{}\n"),
                "secret_terraform_default" => {
                    Some("variable \"db_password\" {\n  type = string\n  default = \"{}\"\n}\n")
                }
                _ => None,
            };
            let label = match s["entity"].as_str().unwrap() {
                _ if named.is_some() => named.unwrap_or_default(),
                "EMAIL_ADDRESS" => "email",
                "PHONE_NUMBER" => "phone",
                "US_SSN" => "ssn",
                "CREDIT_CARD" => "card",
                "IP_ADDRESS" => "ip",
                "IBAN_CODE" => "iban",
                _ if v.len() == 40
                    && !v.contains('_')
                    && !v.starts_with("AKIA")
                    && !v.starts_with("ASIA") =>
                {
                    "aws_secret_access_key ="
                }
                _ => "token",
            };
            out.push((label.to_owned(), v.to_owned()));
        }
    }
    // Credentials as agents pass them to tools: in a URL, an authorization header, a
    // connection string (the label is the text around the value, `{}` where it goes).
    for (label, v) in [
        (
            "DATABASE_URL=postgres://app:{}@db:5432/orders",
            "Qm7vX2pL9rT4wZ8k",
        ),
        ("redis://:{}@cache:6379/0", "Rk4!tW9@zP2qLm"),
        (
            "curl -H 'Authorization: Bearer {}' https://api",
            "tK9mQ2vX7pL4wZ8rB3nY6cH1",
        ),
        (
            "Authorization: Basic {}",
            "c3ZjLWRlcGxveTpKeDgjcFEybVc3dlI=",
        ),
        (
            "AccountName=acct;AccountKey={};EndpointSuffix=core.windows.net",
            "CzBVep/E6Q4zWH2ix+wRNluApcrvFDleg6jN8hc8YYar0PUaP2SJrtP4HUJnjLHW+yBFao+02f4jSG2St9wBJg==",
        ),
        (
            "token",
            "dop_v1_5e1c9a7f3b2d4e6a8c0f1b3d5e7a9c2f4b6d8e0a1c3e5f7a9b2d4c6e8f0a1b3c",
        ),
        ("DB_PASSWORD={}", "Jq8vR2mWx7pLk3"),
        ("'client_secret': '{}'", "cs_9fT2kLm7QxP4"),
        // On command lines and in headers.
        ("curl -u deploy:{} https://api", "Vb6nQ3kLz8Wx"),
        ("mysql -h db -u root -p{} orders", "Hy7tR4mKq2Zp"),
        ("app --password '{}' --verbose", "Lm3#wQ8vNk2x"),
        ("curl -H 'X-API-Key: {}' https://api", "xk_7Gh2Lp9Qw4Rt6Zm"),
        (
            "curl -H 'Authorization: Token {}' https://api",
            "9c2f7e1a4b8d3f6a0e5c",
        ),
        // A bearer token shorter than its own trigger reads, in a header; Redis's client
        // in compact JSON (review 32).
        (
            "curl -H 'Authorization: Bearer {}' https://api",
            "Wd4pX8nQ2kTz",
        ),
        (r#"{"cmd":"redis-cli -h cache AUTH {}"}"#, "Pz5kR8wN3qXm"),
    ] {
        out.push((label.to_owned(), v.to_owned()));
    }
    out
}

/// `v` in its context: inside its label where that has a `{}`, else after it and `sep`.
fn put(label: &str, v: &str, sep: &str) -> String {
    match label.split_once("{}") {
        Some((a, b)) => format!("{a}{v}{b}"),
        None => format!("{label}{sep}{v}"),
    }
}

#[test]
fn no_pii_value_of_the_dev_set_leaks_anywhere() {
    let logs = Buffer::default();
    // Everything the hooks log (targets `hooks::…`, any level) and every warning or error of
    // any crate. (The HTTP client's own debug lines name the collector's loopback address,
    // which is no agent data.)
    use tracing_subscriber::layer::SubscriberExt;
    let only = tracing_subscriber::filter::filter_fn(|m| {
        m.target().starts_with("hooks") || *m.level() <= tracing::Level::WARN
    });
    tracing::subscriber::set_global_default(
        tracing_subscriber::registry().with(
            tracing_subscriber::fmt::layer()
                .with_writer(logs.clone())
                .with_ansi(false)
                .with_filter(only),
        ),
    )
    .unwrap();

    let receiver = OtlpReceiver::start().unwrap();
    let telemetry = OtlpSetup::new()
        .with_endpoint(receiver.endpoint())
        .install()
        .unwrap();
    let mut config = GuardrailConfig::default();
    for e in Entity::ALL {
        config = config.with_action(format!("pii_{}", e.detector()), GuardrailAction::Redact);
    }
    let mut registry = HookRegistry::new();
    let guard = std::sync::Arc::new(GuardrailsHook::new(config).unwrap());
    registry.add(guard.clone()).unwrap();
    registry
        .add(
            LoggingHook::builder()
                .with_log_arguments(true)
                .with_log_results(true)
                .build()
                .unwrap(),
        )
        .unwrap();
    registry
        .add(
            StructuredLoggingHook::builder()
                .with_log_arguments(true)
                .with_log_results(true)
                .build()
                .unwrap(),
        )
        .unwrap();
    registry
        .add(telemetry.hook().with_content_capture(true).build())
        .unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    // A chat-completions server on loopback that answers PROCEED and keeps every request.
    let judge_server = rt.block_on(TestServer::start(|_| TestReply::chat("PROCEED")));
    let judge_url = format!("{}/v1", judge_server.url());
    let judge = OpenAiModel::builder("leak-judge")
        .with_base_url(judge_url)
        .without_api_key()
        .with_http_config(HttpConfig::new().without_proxy())
        .build()
        .unwrap();
    let steering = Arc::new(
        SteeringHook::builder(ModelJudge::new(judge))
            .with_evaluate_responses(true)
            .build(),
    );
    registry.add(steering.clone()).unwrap();
    let unjudged = Arc::new(Unjudged::default());
    registry.add(unjudged.clone()).unwrap();
    let registry = Arc::new(registry);

    let values = values();
    assert_eq!(values.len(), 1164 + 1383 + 15);
    let detector = PiiDetector::new();
    let mut seen_by_model = Vec::new();
    let seen_by_tools = Arc::new(Mutex::new(Vec::<String>::new()));
    let mut finals = Vec::new();
    for chunk in values.chunks(12) {
        let snippet = chunk
            .iter()
            .map(|(l, v)| put(l, v, " "))
            .collect::<Vec<_>>()
            .join(" ; ");
        *unjudged.snippet.lock().unwrap() = snippet.clone();
        // … and each value as a password on an argument list (where only the items before
        // it make it one: sshpass's, an LDAP tool's), in a PowerShell line, with a numeric
        // one among them.
        let argv: Vec<Value> = chunk
            .iter()
            .flat_map(|(_, v)| {
                [
                    json!("sshpass"),
                    json!("-p"),
                    json!(v),
                    json!("ssh"),
                    json!("h"),
                    json!("ldapsearch"),
                    json!("-x"),
                    json!("-w"),
                    json!(v),
                    json!(format!(
                        "ConvertTo-SecureString '{}' -AsPlainText -Force",
                        v.replace('\'', "''")
                    )),
                ]
            })
            .chain([json!("mysql"), json!("-uroot"), json!(format!("-p{PIN}"))])
            .chain([
                json!("sshpass"),
                json!("-p"),
                json!(PIN),
                json!("ssh"),
                json!("h"),
            ])
            .collect();
        let args = json!({
            "customer": {"notes": [{"text": snippet.clone()}], "level": 2},
            "limit": 5,
            "argv": argv,
        });
        let model = Arc::new(ScriptedModel::new(vec![
            Ok(ModelResponse::tool_calls(vec![ToolCall::new(
                "c1", "lookup", args,
            )])),
            Ok(ModelResponse::text(format!("Summary: {snippet}"))),
            Ok(ModelResponse::text("Done.")),
        ]));
        // The tool answers as JSON-encoded text does: each value right after an escaped line
        // break (`\n`, two characters), where it is glued to the escape's `n`.
        let escaped = chunk
            .iter()
            .map(|(l, v)| put(l, v, ":\\n"))
            .collect::<Vec<_>>()
            .join("\\n");
        // … and as a link to it whose query was URL-encoded twice (`%2540` for `@`).
        let link = chunk
            .iter()
            .map(|(l, v)| match l.contains("{}") {
                true => format!("cred%3D{}", encoded_twice(&put(l, v, ""))),
                false => format!("{}%3D{}", l.replace(' ', "_"), encoded_twice(v)),
            })
            .collect::<Vec<_>>()
            .join("%26");
        // … and as a table read cell by cell: each address with the next value glued on
        // (one that reads as a value on its own: a bare 9-digit SSN needs its label), and
        // each address with a bare order number glued on.
        let alone = |v: &str| {
            let found = detector.detect(v);
            found.len() == 1 && found[0].start == 0 && found[0].end == v.len()
        };
        let cells = chunk
            .windows(2)
            .filter(|w| w[0].0 == "email" && w[1].0 != "email" && alone(&w[1].1))
            .map(|w| format!("{}{}", w[0].1, w[1].1))
            .chain(
                chunk
                    .iter()
                    .filter(|(l, _)| l == "email")
                    .map(|(_, v)| format!("{v}70010423")),
            )
            .collect::<Vec<_>>()
            .join(" | ");
        let result = format!(
            "Found: {snippet}\\n{escaped}\\nhttps://crm.example/?next=%2Fview%3F{link}\\ncells: {cells}"
        );
        let tools_log = seen_by_tools.clone();
        let lookup = FnTool::new(
            ToolSpec::new("lookup", "looks up a customer", json!({})),
            move |a| {
                tools_log
                    .lock()
                    .unwrap()
                    .push(Value::Object(a.clone()).to_string());
                Ok(result.clone())
            },
        );
        let agent = Agent::builder("leak-check", model.clone())
            .tool(lookup)
            .registry(registry.clone())
            .build()
            .unwrap();
        let out = rt
            .block_on(agent.run(format!("Customer record: {snippet}")))
            .unwrap();
        for call in model.received(&out.state.run_id) {
            for m in call {
                seen_by_model.push(m.content.clone());
                for tc in &m.tool_calls {
                    seen_by_model.push(tc.arguments.to_string());
                }
            }
        }
        finals.push(format!("{} {:?}", out.answer, out.state));
    }
    telemetry.shutdown().unwrap();
    let spans = receiver.wait_for_spans(1, Duration::from_secs(10));
    assert!(!spans.is_empty());

    let logs = String::from_utf8(logs.0.lock().unwrap().clone()).unwrap();
    let exported = String::from_utf8_lossy(&receiver.raw_bodies().concat()).into_owned();
    // The same decoded: a value of a few bytes can stand by chance in a binary body's ids
    // and timestamps (`::1` did, about once in a hundred runs: three given bytes among some
    // 100 000 random ones), so such a value is looked for in every string the bodies
    // carry — span names, attributes' keys and values, events, status messages, resources,
    // metric points (ids hex-printed).
    let decoded = format!("{spans:?}{:?}", receiver.points());
    let violations = format!("{:?}", guard.violations());
    let model = seen_by_model.join("\n");
    let tools = seen_by_tools.lock().unwrap().join("\n");
    let finals = finals.join("\n");
    let judged = judge_server
        .requests()
        .iter()
        .map(|r| String::from_utf8_lossy(&r.body).into_owned())
        .collect::<Vec<_>>()
        .join("\n");
    // The judge saw every call and every reply (the summary the reviewer turned down too).
    assert_eq!(steering.decisions().len(), 3 * values.len().div_ceil(12));
    let decisions = format!("{:?}", steering.decisions());
    let mut leaks = Vec::new();
    for v in values
        .iter()
        .flat_map(|(_, v)| [v.clone(), encoded_twice(v)])
        .chain([PIN.to_string()])
    {
        let exported = match v.len() {
            ..5 => &decoded,
            _ => &exported,
        };
        for (place, text) in [
            ("logs", &logs),
            ("spans", exported),
            ("violations", &violations),
            ("model", &model),
            ("tools", &tools),
            ("state", &finals),
            ("judge", &judged),
            ("decisions", &decisions),
        ] {
            if text.contains(&v) {
                leaks.push(format!("{place}: {v:?}"));
            }
        }
    }
    assert!(
        leaks.is_empty(),
        "{} leaks, e.g. {:?}",
        leaks.len(),
        &leaks[..leaks.len().min(10)]
    );

    for (place, text) in [
        ("logs", &logs),
        ("spans", &exported),
        ("model", &model),
        ("tools", &tools),
        ("judge", &judged),
    ] {
        for placeholder in [
            "[REDACTED_EMAIL]",
            "[REDACTED_PHONE]",
            "[REDACTED_SSN]",
            "[REDACTED_CREDIT_CARD]",
            "[REDACTED_IP_ADDRESS]",
            "[REDACTED_IBAN]",
            "[REDACTED_SECRET]",
        ] {
            assert!(
                text.contains(placeholder),
                "{placeholder} missing from {place}"
            );
        }
    }
    assert!(
        violations.contains("pii_secret")
            && violations.contains("ToolResult")
            && violations.contains("ModelOutput")
    );
}
