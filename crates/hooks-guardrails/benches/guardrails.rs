//! `guardrails/scan`: PII detection over ≥ 4 MiB of text built from the dev set (its texts with
//! the labelled values cut out — hard negatives included — and one value put back about every
//! 2 KB), throughput in bytes. `guardrails/tool_call_pair`: one before+after tool call through
//! the guard (both sides) with typical short arguments and a 200-character result.
//! `guardrails/new_hook`: building a guard once the process has built one.

use hooks_core::test_util::ready;
use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};

#[path = "../tests/support/hex.rs"]
mod hex;
use hooks_core::{AfterToolCallEvent, BeforeToolCallEvent, HookRegistry, RunId};
use hooks_guardrails::{GuardrailConfig, GuardrailsHook, PiiDetector};
use serde_json::{Value, json};

fn corpus() -> String {
    let data = include_str!("../tests/data/pii-dev.jsonl");
    let mut clean = Vec::new();
    let mut items = Vec::new();
    for line in data.lines().filter(|l| !l.trim().is_empty()) {
        let rec: Value = serde_json::from_str(line).expect("the dev set is JSONL");
        let text = rec["text"].as_str().unwrap_or_default();
        let mut spans: Vec<(usize, usize)> = rec["spans"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|s| {
                        (
                            s["start"].as_u64().unwrap_or(0) as usize,
                            s["end"].as_u64().unwrap_or(0) as usize,
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        spans.sort_unstable();
        let mut kept = String::new();
        let mut last = 0;
        for (s, e) in spans {
            kept.push_str(&text[last..s]);
            items.push(text[s..e].to_owned());
            last = e;
        }
        kept.push_str(&text[last..]);
        clean.push(kept);
    }
    let mut out = String::new();
    let mut since = 0;
    let mut next_item = 0;
    while out.len() < 4 * 1024 * 1024 + 1 {
        for c in &clean {
            out.push_str(c);
            out.push('\n');
            since += c.len() + 1;
            if since >= 2048 {
                out.push(' ');
                out.push_str(&items[next_item % items.len()]);
                out.push_str(" \n");
                next_item += 7;
                since = 0;
            }
        }
    }
    out
}

fn scan(c: &mut Criterion) {
    let text = corpus();
    let detector = PiiDetector::new();
    let mut g = c.benchmark_group("guardrails");
    g.throughput(Throughput::Bytes(text.len() as u64));
    g.sample_size(20);
    g.bench_function("scan", |b| {
        b.iter(|| black_box(detector.detect(black_box(&text))).len())
    });
    g.finish();
}

/// 1 MB of each hostile family: inputs built to make a detector search the same text again
/// and again. Compare each with `guardrails/scan` on normal text.
fn scan_adversarial(c: &mut Criterion) {
    const MB: usize = 1 << 20;
    let fill = |unit: &str, tail: &str| {
        let mut s = unit.repeat((MB - tail.len()) / unit.len());
        s.push_str(tail);
        s
    };
    let families = [
        ("local_part_run", fill("a", "@example.com")),
        ("dotted_run", fill("a.", "@b.co")),
        ("jwt_like_run", fill("eyJa-", "")),
        ("digit_runs_with_separators", fill("1 2-3 ", "")),
        ("ipv6_like_run", fill("a:", "")),
        ("bare_ssn_csv", fill("123456789,", "")),
        (
            "pem_headers_without_bodies",
            fill("-----BEGIN PRIVATE KEY-----\n", ""),
        ),
        ("plus_runs", fill("+1 ", "")),
        ("pct40_local_part_run", fill("a", "%40example.com")),
        ("unicode_local_part_run", fill("é", "@例子.广告")),
        ("paren_groups", fill("(12)", "")),
        ("phone_groups_without_end", fill("06 12 ", "")),
        ("zero_width_digits", fill("4\u{200B}", "")),
        ("fullwidth_digits", fill("４１", "")),
        ("glued_card_words", fill("x4111111111111111y ", "")),
        ("lowercase_iban_runs", fill("de89 3704 ", "")),
        // Found by a hostile review (2026-12-02): failed run tokens, each re-reading the run
        // (fixed: within 4×), and runs of candidates of one digit-led kind or of failed
        // addresses (linear; all but `address_runs` within 4× since their kinds are quiet
        // over them — see the README).
        ("sk_runs", fill("sk-", "")),
        ("xoxb_runs", fill("xoxb-", "")),
        ("xapp_runs", fill("xapp-1-", "")),
        ("address_runs", fill("a@b.", "")),
        ("ipv4_like_runs", fill("1.2.3.4.", "")),
        ("card_group_runs", fill("4111 ", "")),
        ("spaced_paren_groups", fill("(12) ", "")),
        // Local parts no start can make an address of, up to the last `a` (1.5 s per MB
        // before the local-part skip).
        (
            "failed_local_parts",
            fill(&format!("{}..a@b.co ", "a".repeat(250)), ""),
        ),
        // Found by the third hostile review: a long local part before a domain that never
        // ends inside the window (0.8–1 s per MB before every start read the same domain).
        (
            "long_local_part_long_domain",
            fill(&format!("{}@{}.com ", "a".repeat(250), "b".repeat(390)), ""),
        ),
        // Tokens that fail as placeholders, each reading 400 bytes (96 ms per MB before the
        // placeholder rule), and form-encoded digit groups.
        (
            "placeholder_token_runs",
            fill("sk-aaaaaaaaaaaaaaaaaaaaaaaa-Abc12-", ""),
        ),
        ("form_encoded_digit_runs", fill("x=12+3+", "")),
        // Addresses that fail on their domain: a letter run that goes on into a digit
        // (`a@b.cc1`, turned away by the domain's first look), asset names (`icon@2x.png`,
        // which pass it and fail on the extension).
        ("failing_domain_runs", fill("a@b.cc1", "")),
        ("asset_name_runs", fill("i@2x.png ", "")),
        // The same in other scripts (local parts, and a one-letter last label).
        ("other_script_address_runs", fill("é@b.", "")),
        ("other_script_label_runs", fill("a@b.é.", "")),
        // A last label's letters that run on into a digit: each place in them is asked
        // whether a value glued to the address starts there (`email_glued`), the second
        // run made of the first bytes of keys (`sk`), which the cheap look lets through.
        (
            "letter_runs_before_a_digit",
            fill("x@y.abcdefghijklmnopqrstuvwx1 ", ""),
        ),
        (
            "key_prefix_runs_before_a_digit",
            fill("a@b.sksksksksksksksksksksk1", ""),
        ),
        // Bare numbers glued after a known top-level domain (`email_glued`), every local
        // part failing: the domain is checked up to the letters, the local part read.
        (
            "bare_numbers_after_failing_local_parts",
            fill("@x.travel123456.", ""),
        ),
        // Credentials a URL or an authorization header would hold, every one failing.
        ("url_passwords_without_an_at", fill("://a:bcdefgh", "")),
        (
            "bearer_tokens_without_digits",
            fill("Bearer abcdefghijklmnopqrstuvwxyz ", ""),
        ),
        (
            "basic_credentials_that_do_not_decode",
            fill("Basic YWJjZGVmZ2hpams= ", ""),
        ),
        // Fields named for a secret whose values are variables (code, not secrets).
        (
            "named_fields_with_variables",
            fill("password=password ", ""),
        ),
        // Credentials on command lines whose commands and options fail: each command's
        // line is read for its `-p`.
        (
            "commands_without_a_password",
            fill("mysql -u root -p db ", ""),
        ),
        (
            "secret_options_with_placeholders",
            fill(" --password changeme", ""),
        ),
        (
            "command_names_before_an_option",
            fill(&format!("{}-p; ", "mysql ".repeat(85)), ""),
        ),
        ("command_names_in_a_row", fill("curl ", "")),
        ("header_names_with_words", fill("X-API-Key: ", "")),
        // Field names glued in a row (`apiKey:apiKey:…`): a candidate every 7 bytes, each
        // a search and a validation; authorization headers in any scheme, and other
        // clients' password options, every one failing.
        ("header_names_glued", fill("apiKey:", "")),
        (
            "authorization_schemes_without_credentials",
            fill("Authorization: a ", ""),
        ),
        (
            "client_options_without_passwords",
            fill(
                "keytool -storepass $X openssl -passin env:X redis-cli -a $Y ",
                "",
            ),
        ),
        // Database and cache clients with no password: names in a row, passed over by the
        // first's reach; options given variables, an argument list, a Redis command after
        // a name.
        (
            "client_names_in_a_row",
            fill("twine cqlsh valkey-cli keydb-cli ", ""),
        ),
        (
            "clients_without_passwords",
            fill(
                "valkey-cli -a $X cqlsh -u a -p \"cypher-shell\", \"-p\", twine AUTH ",
                "",
            ),
        ),
        // Commands named as other commands' arguments, every line failing: each name
        // ends the line before it and reads back the names before it for theirs (see
        // `validate::password_of_commands_before`).
        (
            "commands_named_in_argument_lists",
            fill(
                "redis-cli -a $X mongo -u a -p \"sshpass\", \"-p\", curl AUTH zip -P twine ",
                "",
            ),
        ),
        // The tools read in the headers' pass (see `validate::ADDED_POSITIONAL`), none
        // given a password: a variable, a default community, a prompt, a store named.
        (
            "tools_without_passwords",
            fill(
                "dsadd -pwd auth-pass ipmitool -P $X snmpwalk -c public xfreerdp /p: \
                 neo4j-admin set-initial-password jarsigner -storepass:env X sentinel \
                 auth-pass psexec -p ",
                "",
            ),
        ),
        // And in argument lists, names among their strings (each name's list read to the
        // next name).
        (
            "tool_lists_without_passwords",
            fill("\"hydra\", \"hydra\", \"ipmitool\", \"-P\", \"$X\", ", ""),
        ),
        // A secret's name as a call's, no blank anywhere (each was read back for Redis's
        // `AUTH` to the text's start: 1 MB took 10 s before this release).
        ("calls_named_auth", fill("auth(db.auth(", "")),
        // Calls that take a password as a later argument (`smtp.login(user, …)`), the
        // string never closed: each call's second argument is the next call's name.
        ("credential_calls_unclosed", fill(".login('a','b", "")),
        // The same calls each closed by a bracket it did not open: no call's arguments
        // ended, each read its 512 bytes (10x the bench text before this release).
        (
            "calls_closed_by_brackets",
            fill(".login(\"\"]auth=(\"\"]NetworkCredential]::new(''}", ""),
        ),
        // Go's data source names glued one to another, their passwords holding `=` and `(`
        // (read back to the previous one's `@tcp(`, not 256 bytes each: 42x before).
        ("data_source_names_glued", fill("root:a=b(c@tcp6(", "")),
        // Secrets' names in a row, each the next one's field (each read its value 256 bytes
        // long, or took the next name for one: 5-9x before review 46's fix).
        (
            "names_glued_in_a_row",
            fill("password=token=pass=pwd=passwd=secret=SENHA=HASLO=dbHaslo=dbSenha=SENHA:SIFRE:HASLO SENHA Passwort Passwort: ", ""),
        ),
        // Other languages' names before their particles and their words for "is", each with
        // no value (the particles' run read 256 bytes at each, 11x the bench text before).
        (
            "names_before_particles_and_verbs",
            fill(
                "密码是a密码为パスワードはa비밀번호는 a Passwort ist password è salasana on ",
                "",
            ),
        ),
        // Values a person makes after a password's word and a verb, each one a word goes on
        // after, a name that sends the password, a noun before the next line's value.
        (
            "person_values_that_go_on",
            fill("the password is hunter22 xyz mdp est soleil2024 Passwort ist Sommer2024 ja password is\nthe password to the router the password list is\nrockyou2024 ", ""),
        ),
        // This release's names, calls and forms with no secret after them: `pw` glued to
        // the next field, an index's name again, credentials that are no pair, a template's
        // default that is none, `clave` a code, a Nordic definite form, a length.
        (
            "added_names_without_secrets",
            fill("pw=x,token=y;api_key=z [pw]=\"[pw]=\" x_pw]=\"x_pw]=\" credentials: gcp.json creds=x {{ db_pw | default(omit) }} clave: MX01 passordet er for kort 비번은 createCredential(a, b, c) Password for Wi-Fi: see PW: 1500us passcode: 6-digit ", ""),
        ),
        // A wallet's recovery words' names before eleven words of BIP-39's list (a twelfth
        // would make them a detection), a definition, a variable, an instruction; names'
        // first words in other senses (`seed: 42`), a name that is the list's word over and
        // over, a nested key and a table's head with no words after them.
        (
            "seed_names_without_words",
            fill("seed phrase: produce drop purity excite mystery tackle library cabbage middle roof cover mnemonic: a WALLET_MNEMONIC=\"x\" Recovery phrase: write down these twelve words seed: 42 wallet: 0x5290 backup seed seed seed recovery words: none {\"mnemonic\": {\"phrase\": \"\"}} Seed phrase:\n| # | Word |\n|---|---|\n| 1 | never | ", ""),
        ),
        // Wi-Fi QR codes with no password (`T:nopass`), a placeholder, a log's `WIFI:P:`,
        // the code that builds one; extended keys' prefixes with no key (`xprv…` cut
        // short); `private key` and a hash of the secret in prose; a password of a kind.
        (
            "wifi_codes_and_wallet_keys_without_secrets",
            fill("WIFI:S:Home;T:nopass;; WIFI:S:x;T:WPA;P:${PASS};; LOG WIFI:P:enabled [WIFI:S:WIFI:S:WIFI: \"WIFI:S:\" + ssid + \";T:WPA;P:\" + pw + \";;\" xprv9s21ZrQH143K3QTDL4LX xprvxprv tprv... zprv_key my private key is on the HSM; MD5 of the secret is 5f4dcc3b5aa765d61d8327deb882cf99 use a password Manager2000 ", ""),
        ),
        // Mail sessions' `AUTH PLAIN` and `AUTH LOGIN` with no password after them (base64
        // of another text, the prompt after another `AUTH`); a one-time password's key
        // groups that are prose or a placeholder; Wallet Import Format's names with no key
        // after them; `wif` inside words; recovery codes' names before dates and counts;
        // base64 glued to a third `=` after `AUTH` (read from each of its characters in
        // review 72's build: 22x ordinary English); a certificate's PEM block in base64,
        // a key's glued after base64; a ConfigMap's data, a Secret's kind with no values,
        // `metadata:`, an API's `"data"`.
        (
            "mail_logins_and_key_groups_without_secrets",
            fill("AUTH PLAIN AUTH LOGIN\n334 UGFzc3dvcmQ6\nAUTH PLAIN dGVzdA== secret: JBSW Y3DP THIS word secret: AAAA BBBB CCCC DDDD the secret is SHA256WITHRSA privkey privkey wif: 5HueCGU8rMjxEXxiPuD5 from_wif(x) swift wif use the wifi password policy backup codes: 2024-01-05 Recovery codes: 10 left AUTH PLAIN\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA===\nAUTH LOGIN\n334 UGFzc3dvcmQ6\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA===\ntls.crt: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t xLS0tLS1CRUdJTiBFQyBQUklWQVRFIEtFWS0tLS0t \ndata:\n  key: dmFsdWU=\nkind: ConfigMap\n\"kind\": \"Secret\" \ndata: \nkind: SecretStore\nstringData:\n  pw: {{ x }}\nmetadata:\n  name: x\n\"data\":{\"id\":\"1\"} \"data\": [1] ", ""),
        ),
        // Secret stores' commands with no value (variables, files, the standard input, a
        // placeholder, a key alone, a visibility that is no secret's), and their
        // subcommands over and over (each reads its words up to the next one's); two-factor
        // setup's names with no key or codes after them; mail and FTP logins with none;
        // Kustomize's generators with none, nested.
        (
            "store_commands_without_secrets",
            fill("fly secrets set FOO=$FOO BAR=${BAR} gh secret set FOO --body-file x vault kv put secret/app foo=@f.json bar=- kubectl create secret generic x --from-literal=k=changeme --from-env-file=.env pulumi config set --secret k ansible-vault encrypt_string --stdin-name 'x' eas env:create --name A --value b1 --visibility plaintext secrets set secrets set kv put kv put config set config set secret generic secret:create env:create encrypt_string setup keys are rotated setup key: THIS WILL BE SHOWN setup key: AAAA BBBB CCCC 2222 emergency scratch codes: 5 left Setup key Setup key a001 LOGIN bob {8} PASS  src/app.test.js\nUSER guide\nPASS the salt\nAUTHENTICATE PLAIN\n a2 LOGIN x \" LOGIN PASS **** secretGenerator:\n- name: x\n  literals:\n  - k=${T}\n  - a=VALUE1\nconfigMapGenerator:\n- literals:\n  - b=Zq8xW2vT7k\n secretGenerator:\n  secretGenerator:\n", ""),
        ),
        // Keys' names with no key after them, wallets' calls with no key, Dovecot's logins
        // with the response hidden or none, setup pages' names with no key, a continuation
        // in a JSON string; AI services' prefixes with no key.
        (
            "key_names_without_keys",
            fill("encryption key: AES-256-GCM-with-HKDF-SHA256 master key is stored in KMS AES key: Zk3v9Qx2LmT7pWc8 signing key:\n\n-----BEGIN PGP PUBLIC KEY BLOCK----- Wallet(process.env.PK) new Wallet('0x4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f36231') from_key( privateKeyToAccount(` Buffer.from( aes_key=${AES_KEY} FERNET_KEY= Your key: THIS WILL BE SHOWN this code this code into your app: AUTH\t1\tPLAIN\tservice=imap\tresp=<hidden>\nAUTH\t2\tPLAIN\tservice=smtp\n ls \\\\\\n -l gsk_XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX r8_abc pplx-short tvly-YOUR_API_KEY xai-abababababababababababababababababababababababababababababababababababababababab lsv2_pt_<key> pcsk_x_y fc-barcelona e2b_sandbox sk-lf-... csk-? fw_id nvapi-a-nvapi-a-nvapi-a- bb_live_bb_live_ sk_0123456789abcdef0123456789abcdef0123456789abcdef AccountKey=;AccountKey=*** ", ""),
        ),
        // Vault's keys' names, lists and commands with no key, a key in Wallet Import
        // Format whose checksum fails, a bot's id glued to a word, wallets' calls given a
        // variable; `Key 1:` in a long line over and over (quadratic before review 85); the
        // unseal body's key with no path, a block with no default, a flow mapping;
        // Solana's calls and files with no key.
        (
            "vault_names_without_keys",
            fill("unseal_key: [x, null, unseal_keys_b64\": [ \"abc\", Recovery Key ID: 4A3B Unseal Key (will be hidden): vault operator unseal -migrate -address http://v:8200 \\\n UNSEAL_KEY_1=${KEY} recovery_keys_shares: 5 unsealKeyHash: abc keys_base64: [] 5KYZdUEo39z3FPrtuX2QbbwGnNP5zTd7yyr2SC1j299sBCnWjsX bot12345678:AA LocalWallet::from_str(&pk) wallet.add(item) {\"label\":\"Key 1:\",\"v\":1}, Key 1: x Key 2: \"keys\": [x, \"key\": \"xT3kQ9mZpL2vR8wN5yB7cF1dG4hJ6sA0eU9iO3qWtY+\", unseal_key { a = 1\n b = 2\n c = 3\n default = x \ndata: {a: dmFsdWU=, b: dmFsdWU=, c: x\nKeypair.fromSecretKey(new Uint8Array(bytes)) cat solana/id.json\n[1, 2, 3]\n", ""),
        ),
        // The positional tools added last (PuTTY's, the hashing tools', MinIO's, Oracle's),
        // none given a password.
        (
            "tools_added_last_without_passwords",
            fill(
                "plink -pw $X mkpasswd -m x openssl passwd -in f mc alias set a b c $Y \
                 expdp parfile=p rman target / ",
                "",
            ),
        ),
        // Hex with no break (a blob, joined hashes; a fixed xorshift sequence), and card
        // numbers glued to letters: each card candidate read the whole word before this
        // release (1 MB of hex took 5 s).
        ("hex_runs", hex::hex_run(MB)),
        ("cards_glued_in_a_word", fill("x4111111111111111", "")),
        // Short command lines whose one option gives no password (`zip -x `: a candidate
        // every 7 bytes, its line read to the next command, which is validated there), and
        // an archiver's after a word (`7z a -px `, its `-p` glued to too short a value).
        ("commands_with_other_options", fill("zip -x ", "")),
        ("archivers_with_other_options", fill("7z a -px ", "")),
        // Registry logins in a row (each line read 2 KiB before `login` ended its own
        // kind's lines: ~100x slower than text).
        ("registry_logins_in_a_row", fill("docker login ", "")),
        // `login` alone in a row: each may start a `.netrc` line (`login bob password …`),
        // which needs no option; a failed one's reach reads on past each that cannot.
        ("login_words_in_a_row", fill("login ", "")),
        // Short command lines over a registry's `login` whose line gives no password: each
        // `login` validated in place by the chain.
        ("registry_logins_in_chains", fill("7z a -px oc login ", "")),
        // Names of the tools that end only their own kind's lines (an LDAP tool's, SQLCMD),
        // hundreds before one option: read once as a run, not once per name.
        (
            "own_kind_names_before_an_option",
            fill(&format!("{}-x\n", "ldapadd ".repeat(250)), ""),
        ),
        // Tools whose password is positional, each given none or a variable, and writers
        // into a reader's standard input, each failing (see `tests/linear.rs`).
        (
            "positional_commands_without_passwords",
            fill(
                "htpasswd -b f u $P sqlplus a/$P@b rabbitmqctl add_user u wpa_passphrase n $P \
                 net use Z: x net user u * cmdkey /pass: schtasks /rp * security add-generic-password -w ",
                "",
            ),
        ),
        (
            "stdin_writers_without_passwords",
            fill(
                "echo x | cat echo 'y z' | sudo -S printf '%s' $P | docker login --password-stdin \
                 echo -e \"a\\nb\" | passwd echo x || sudo -S echo 'x | sudo -u a -g b -S ",
                "",
            ),
        ),
        // Credentials laid out for people whose values fail: Markdown's emphasis, code
        // spans and tables (a name's cell beside the value's; a header naming the column
        // over 64 rows), HTML's tables, elements never closed.
        (
            "markdown_and_tables_without_secrets",
            fill(
                "**Password:** *optional* `DB_PASSWORD`: `x` | Admin Password | string |\n\
                 <td><b>API Key</b></td>\n  <td>x</td> <password>a b\n",
                "",
            ),
        ),
        (
            "table_rows_under_a_secret_header",
            fill(
                &format!(
                    "| Service | User | Password |\n|---|---|---|\n{}\n",
                    "| db | app | **** |\n".repeat(64)
                ),
                "",
            ),
        ),
        // A header 16 KB wide (a secret's column last) over rows of four bytes: each row
        // read its header's cells again until the header's columns were kept with the row
        // read last (2 500x the bench text, an attack review's).
        (
            "wide_header_over_short_rows",
            fill(
                &format!(
                    "{}|Password|\n|---|\n{}\n",
                    "|a".repeat(8000),
                    "|x|\n".repeat(4000)
                ),
                "",
            ),
        ),
        // Strings that each open with a `|` (a table written into a string), on one line:
        // each read its line to the end until the row read last kept it (360x the bench
        // text for `"|"|"|…`).
        (
            "strings_opening_with_pipes",
            fill("\"|\"| a |\" '|' \"| Password | x |\" ", ""),
        ),
        // HTML tables: a header row naming the column over 64 rows whose values fail, and
        // rows that never close.
        (
            "html_rows_under_a_secret_header",
            fill(
                &format!(
                    "<table><tr><th>Service</th><th>Password</th></tr>{}</table>\n<tr><td><tr>",
                    "<tr><td>db</td><td>****</td></tr>\n".repeat(64)
                ),
                "",
            ),
        ),
        // Labels whose values on the next line fail: a placeholder in a fenced block,
        // YAML's next key and list.
        (
            "labels_over_their_values",
            fill(
                "**Password:**\n\n```\nchangeme\n```\npassword:\n  secretKeyRef:\n    - x\nToken:\nnone\n",
                "",
            ),
        ),
        // HTML rows whose cells' tags never close (each row read 16 KiB, 390x the bench
        // text, before a tag's `>` was looked for only up to the next `<`).
        (
            "html_cells_left_open",
            fill("<tr><td <tr><th x<tr><td><", ""),
        ),
        // Prose about secrets whose values fail: each name's words read up to a verb.
        (
            "prose_about_secrets",
            fill(
                "The password for the staging account is stored in Vault; the token is \
                 gpt4o-mini's. Password Token Secret password is 2048-bit, API key - x ",
                "",
            ),
        ),
        // Values given before names and names closed by marks, whose values fail: each
        // quoted word before `as`/`is` read to a prose name, each mark's words to a verb.
        (
            "prose_values_before_names",
            fill(
                "Use `snake_case` as the token format; \"x\" is the password hash. **Password** \
                 reset, password, token, (`a`) `a` is `b` as v2 as the new token type, a is ",
                "",
            ),
        ),
        // Labels at their lines' starts, tabs and values that fail (`key⇥value` lines).
        (
            "tab_separated_labels",
            fill(
                "password\tnot set\nuser\tbob\ttoken\t\t\nPassword\tchangeme\n",
                "",
            ),
        ),
        // Tables without outer pipes (psql's, GitHub's): a header naming a secret over a
        // border, rows whose values fail, lines whose first `|` follows a long first cell,
        // `name | value` records.
        (
            "pipeless_table_rows",
            fill(
                " id | password\n----+---------\n  1 | NULL\nx | y | z\npassword | a\n",
                "",
            ),
        ),
        // Names asked about (`password?`), emphasised from words before them or by a
        // field's prefix (`__password__`), their values failing.
        (
            "prose_questions_and_emphasis",
            fill(
                "password? a the token? It's a **a b c d password** is __password__ x ",
                "",
            ),
        ),
        // Tables drawn with box drawing (folded to ASCII tables): a header over its types
        // and a border, rows whose values fail, an empty first cell.
        (
            "box_drawn_tables",
            fill(
                "│ id │ password │\n│ varchar │ int64 │\n├──┼──┤\n│ a │ b │\n a │ token\n───┼───\n   │ x\n",
                "",
            ),
        ),
        // SQLite's list output: headers over rows of their shape or another, values that
        // fail.
        (
            "list_output_rows",
            fill("id|password\n1|x\na|b|c\npassword|a\n", ""),
        ),
        // Tables aligned with blanks: headers naming a secret over a rule or as a data
        // frame's, rows whose values fail or start with an address, lines that look like
        // rules or frames' rows, rules under rules; a table of names and values (`Key`
        // over `Value`), its secrets' names' values failing.
        (
            "blank_aligned_tables",
            fill(
                "id  password\n--  --------\n1   x\n2   a b\n--\n-- x\n   token\n0  a\n1  b\n\n--  --\n0 x\n\
                 host  password\n-  --------\n10.0.0.1  x\n \n3 a\n\
                 Key         Value\n---         -----\npassword    x\ntoken       a b\n\
                 api_key     n/a\nsecret key  x\n",
                "",
            ),
        ),
        // Redis's commands, ACL files' lines, a keyring's setter, secret stores' commands.
        (
            "redis_and_setter_runs",
            fill(
                "x:1> AUTH yyy1\nACL SETUSER a >b1cd >\nrequirepass --masterauth x AUTH -x AUTH \
                 set_password(\"a\", f(\"b\", \"c1d2\")\nkeyvault secret set \
                 --value=keyvault secret set --value a1b2 echo a | gh secret set x\necho \"AUTH a1b2\" | x\nAUTH \n\
                 user a on >b\nuser x >\n'AUTH a\n' | nc \nssm put-parameter --type \
                 SecureString --value a1b2 echo a | secret-tool store\nsetPassword(\"a\", \"b\", \
                 `c1d2` \npgpass pgpass\na:1:b:c:x\necho 'a:1:b:c:x' >> .pgpass\n",
                "",
            ),
        ),
        // Services' tokens by their prefixes, failing, in runs of 40.
        (
            "service_token_runs",
            fill(
                &[
                    "dckr_pat_aaaaaaaa-",
                    "LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVkt/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa/",
                    "ops_eyJ",
                    "whsec_aaaa/",
                    "sntryu_aaaa",
                    "glc_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa+",
                    "ATATT3aaaa",
                    "pypi-AgEaaaa",
                    "dp.st.",
                    "dapi12345678 ",
                    "dckr_oat_aaaaaaaa-",
                    "sb_secret_aaaaaaaa-",
                    "NRII-aaaaaaaa-",
                    "secret_aaaaaaaaaaaa",
                ]
                .map(|u| u.repeat(40))
                .join(" "),
                "",
            ),
        ),
        // Windows paths, parts that lead to no root, escapes between.
        (
            "windows_path_runs",
            fill(r"C:\a b\redis-cli.exe -a \n.\tools\x\n\a\a\a\a\a\n \\net x\t", ""),
        ),
        // Redis's protocol: `AUTH` arrays whose password's length reaches over the arrays
        // after it, with real and escaped line breaks.
        (
            "resp_lengths_over_later_arrays",
            fill(
                "*2\n$4\nAUTH\n$4081\na\n*2\r\n$4\r\nAUTH\r\n$99976\r\na\r\n*2\\r\\n$4\\r\\nAUTH\\r\\n$999\\r\\nab\\r\\n",
                "",
            ),
        ),
        // `AUTH` opening a string over and over, bare or as HELLO's and MIGRATE's option,
        // no client named (each read 512 bytes around it for one: 15x ordinary text
        // before review 32).
        (
            "quoted_auth_runs",
            fill("'AUTH 'HELLO 3 AUTH 'MIGRATE a 1 b 2 3 COPY AUTH \"AUTH ", ""),
        ),
        // Commands that print a secret (the twenty-first pass's literals), one after
        // another on a line, their outputs no secret's, sent to a file, a line break
        // escaped.
        (
            "commands_printing_secrets",
            fill(
                "echo $echo ${A} printenv PASSWORD\n$ vault kv get -field=password x\nab\n\
                 echo $API_KEY\\nx1\\n base64 -d secret /run/secrets/ pass show \n\
                 configure get aws_secret_access_key > f\n",
                "",
            ),
        ),
        // `AUTH` opening a string among names that are no client's (`-cli` over and over)
        // and a raw connection's about every 300 bytes: each look past the last name
        // read a few KiB again (25x ordinary text in review 33).
        (
            "auth_among_client_names",
            fill(&format!("'AUTH x nc {}\n'AUTH x{}\n", "-cli".repeat(70), "a-cli".repeat(40)), ""),
        ),
        // Text made only of real values: every few bytes a detection (validated, merged
        // with what runs into it, reported) — not a failing family, the dearest text per
        // byte there is.
        ("cards_back_to_back", fill("4111 1111 1111 1111 ", "")),
        ("addresses_back_to_back", fill("a@b.co ", "")),
        // Addresses glued to a value each, as a table read cell by cell: two detections
        // per 29 bytes.
        (
            "addresses_glued_to_values",
            fill("jane@example.com415-555-2671 ", ""),
        ),
    ];
    let detector = PiiDetector::new();
    let mut g = c.benchmark_group("guardrails/scan_adversarial");
    g.sample_size(10);
    for (name, text) in &families {
        g.throughput(Throughput::Bytes(text.len() as u64));
        g.bench_function(*name, |b| {
            b.iter(|| black_box(detector.detect(black_box(text))).len())
        });
    }
    g.finish();
}

fn tool_call_pair(c: &mut Criterion) {
    let mut registry = HookRegistry::new();
    registry
        .add(GuardrailsHook::new(GuardrailConfig::default()).expect("default config is valid"))
        .expect("fresh registry");
    let run_id = RunId::new("run-bench");
    let args = json!({"query": "weather in Paris", "limit": 5});
    let result = "The forecast for Paris: mostly sunny, light wind from the west, highs around 21 degrees \
                  and lows near 12. Rain is unlikely before the weekend; humidity stays moderate all week long.";
    // Built once, like the run and the arguments: the loop measures dispatch, not setup.
    let ext = hooks_core::Extensions::new();
    let call = hooks_core::ToolCall::new("c1", "search", args.clone());
    let ran = hooks_core::ToolOutcome::Ran;
    c.bench_function("guardrails/tool_call_pair", |b| {
        b.iter(|| {
            let mut before = BeforeToolCallEvent::new(
                hooks_core::EventContext::new(&run_id, &ext)
                    .with_iteration(1)
                    .with_attempt(0),
                &call,
            );
            ready(registry.before_tool_call(&mut before)).expect("no error");
            let mut after = AfterToolCallEvent::new(
                hooks_core::EventContext::new(&run_id, &ext)
                    .with_iteration(1)
                    .with_attempt(0),
                &call,
                &args,
                &ran,
                result.to_owned(),
            )
            .with_duration(Default::default());
            ready(registry.after_tool_call(&mut after)).expect("no error");
            black_box(after.result().len())
        })
    });
}

/// `guardrails/new_hook`: a guard with the default config once this process has built one
/// (the PII automata are built once per set of entities and shared; the first build takes
/// about 0.2 s and is not what this measures).
fn new_hook(c: &mut Criterion) {
    let first = GuardrailsHook::new(GuardrailConfig::default()).expect("default config is valid");
    c.bench_function("guardrails/new_hook", |b| {
        b.iter(|| GuardrailsHook::new(black_box(GuardrailConfig::default())).is_ok())
    });
    drop(first);
}

criterion_group!(benches, scan, scan_adversarial, tool_call_pair, new_hook);
criterion_main!(benches);
