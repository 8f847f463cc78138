//! Scans are linear: no input makes a detector search a run of text again from each of its
//! characters. Work is counted in steps (bytes searched and validated), not time, so these
//! tests hold on any machine.

#![allow(clippy::unwrap_used)] // tests fail loudly on the first unexpected error

use std::sync::OnceLock;

use hooks_guardrails::PiiDetector;

#[path = "support/hex.rs"]
mod hex;
use proptest::prelude::*;

fn detector() -> &'static PiiDetector {
    static D: OnceLock<PiiDetector> = OnceLock::new();
    D.get_or_init(PiiDetector::new)
}

/// The hostile families: each a unit repeated `n` times (with a tail where it matters).
fn family(name: &str, n: usize) -> String {
    match name {
        "local_part_run" => format!("{}@example.com", "a".repeat(n)),
        "dotted_run" => format!("{}@b.co", "a.".repeat(n)),
        "jwt_like_run" => "eyJa-".repeat(n),
        "digit_runs" => "1 2-3 ".repeat(n),
        "ipv6_like_run" => "a:".repeat(n),
        "bare_ssn_csv" => "123456789,".repeat(n),
        "pem_headers_without_bodies" => "-----BEGIN PRIVATE KEY-----\n".repeat(n),
        "plus_runs" => "+1 ".repeat(n),
        "pct40_local_part_run" => format!("{}%40example.com", "a".repeat(n)),
        "unicode_local_part_run" => format!("{}@例子.广告", "é".repeat(n)),
        "paren_groups" => "(12)".repeat(n),
        "phone_groups_without_end" => "06 12 ".repeat(n),
        "pem_body_without_end" => format!("-----BEGIN PRIVATE KEY-----\n{}", "QUFB\n".repeat(n)),
        "zero_width_digits" => "4\u{200B}".repeat(n),
        "fullwidth_digits" => "４１".repeat(n),
        "glued_card_words" => "x4111111111111111y ".repeat(n),
        "lowercase_iban_runs" => "de89 3704 ".repeat(n),
        // Found by an attack review: quadratic before.
        "pct_encoded_local_part_run" => format!("{}%40b.png", "%2B".repeat(n)),
        "jwt_run_before_one_anchor" => format!("{}.eyJ", "eyJa-".repeat(n)),
        "unterminated_html_escapes" => "&#6".repeat(n),
        "json_escapes_between_digits" => "4\\u00a0".repeat(n),
        "jwt_run_with_a_placeholder_tail" => format!("{}.eyJaaaaa.aaaaaaaaaa", "eyJa-".repeat(n)),
        // Escapes decoded since: form-encoded spaces, URL escapes encoded twice.
        "form_encoded_digit_runs" => "x=12+3+".repeat(n),
        "twice_encoded_escapes" => "%2540a%25".repeat(n),
        "twice_escaped_entities" => "&amp;#64;a".repeat(n),
        // Runs a kind is quiet over (its failed candidates rule out the rest of the run),
        // and quiet kinds between detections, which end their quiet.
        "ipv4_like_runs" => "1.2.3.4.".repeat(n),
        "card_group_runs" => "4111 ".repeat(n),
        "spaced_paren_groups" => "(12) ".repeat(n),
        "address_runs" => "a@b.".repeat(n),
        "failing_domain_runs" => "a@b.cc1".repeat(n),
        "asset_name_runs" => "i@2x.png ".repeat(n),
        "other_script_address_runs" => "é@b.".repeat(n),
        "other_script_label_runs" => "a@b.é.".repeat(n),
        "addresses_back_to_back" => "a@b.co ".repeat(n),
        "letter_runs_before_a_digit" => "x@y.abcdefghijklmnopqrstuvwx1 ".repeat(n / 8),
        "key_prefix_runs_before_a_digit" => "a@b.sksksksksksksksksksksk1".repeat(n / 8),
        "addresses_glued_to_values" => "jane@example.com415-555-2671 ".repeat(n / 8),
        "jwt_starts_in_a_label" => {
            format!("x@y.coeyJeyJeyJeyJeyJeyJeyJ{} ", "aB3-".repeat(64)).repeat(n / 64)
        }
        // A JWT-like run past the cheap look's bound, walked to its end once per label.
        "long_jwt_runs_in_a_label" => {
            format!("x@y.coeyJeyJeyJ{}.eyJab ", "aB3-".repeat(512)).repeat(n / 500)
        }
        // Bare numbers after a known top-level domain, every local part failing.
        "bare_numbers_after_failing_local_parts" => "@x.travel123456.".repeat(n / 8),
        // Credentials a URL or an authorization header would hold, every one failing: a
        // password with no `@` after it, users that run on, tokens without a digit, base64
        // that is not `user:password`.
        "url_passwords_without_an_at" => "://a:bcdefgh".repeat(n / 11),
        "url_users_that_run_on" => format!("{}:", "://a@".repeat(n / 5)),
        "url_colon_runs" => "://a:".repeat(n / 5),
        "urls_glued_with_ports" => "https://a:b@c:1".repeat(n / 15),
        "bearer_tokens_without_digits" => "Bearer abcdefghijklmnopqrstuvwxyz ".repeat(n / 34),
        "basic_credentials_that_do_not_decode" => "Basic YWJjZGVmZ2hpams= ".repeat(n / 23),
        // Fields named for a secret whose values fail (a variable) or run on unclosed.
        "named_fields_with_variables" => "password=password ".repeat(n / 18),
        "named_fields_glued_in_a_row" => "api_key=x".repeat(n / 9),
        "named_fields_with_unclosed_quotes" => format!("{}x", "secret: '$".repeat(n / 10)),
        // Credentials on command lines and in headers, every one failing: placeholders,
        // commands without a password, templates, tokens without a digit.
        "secret_options_with_placeholders" => " --password changeme".repeat(n / 20),
        "commands_without_a_password" => "mysql -u root -p db ".repeat(n / 20),
        "netrc_logins_without_a_password" => "login bob ".repeat(n / 10),
        "user_options_with_templates" => "curl -u a:$PASS ".repeat(n / 16),
        "command_names_in_a_row" => "curl ".repeat(n / 5),
        "command_names_before_an_option" => format!("{}-p; ", "mysql ".repeat(85)).repeat(n / 514),
        "header_names_with_words" => "X-API-Key: ".repeat(n / 11),
        // Found by an attack review: quadratic before (each `--` read to the end).
        "dashes_before_an_option_name" => format!("{}password x", "-".repeat(n)),
        "glued_options_before_a_name" => format!("{}password x", "--a".repeat(n / 3)),
        // Found by the step-count proptest: fields glued in a row whose values pass, each
        // read whole (16 KiB) again as it grew the detection.
        "named_fields_glued_with_values" => "password=eyJ-x@y.".repeat(n / 18),
        "header_names_glued" => "apiKey:".repeat(n / 7),
        // Names as an index and as a pair's name, every value too short.
        "indexed_names_with_short_values" => "env[\"API_KEY\"]=\"x\";".repeat(n / 20),
        "named_pairs_with_short_values" => "password,\nvalue:password,\nvalue:".repeat(n / 32),
        // SQL's password clauses, every value failing.
        "sql_password_clauses_without_one" => "IDENTIFIED BY x PASSWORD 'x' ".repeat(n / 29),
        // The shortest names glued in a row (each value the next name: a detection every
        // 4 bytes), and tokens' names whose values are a page's position.
        "short_names_glued" => "pwd=".repeat(n / 4),
        "page_tokens_in_a_row" => "nextToken: AAAA1234 ".repeat(n / 20),
        // Options with one dash whose values fail, and one dash inside names.
        "single_dash_options_without_values" => " -token x -password -v a-token=b".repeat(n / 32),
        // Quotes doubled inside values that never close, single-dash options opening a
        // quote, `IDENTIFIED BY` without a statement.
        "doubled_quotes_never_closed" => {
            "password='a''b'' -token \"x IDENTIFIED BY 'Zq8r9x' ".repeat(n / 50)
        }
        // Names apart from their values by blanks: after commands that set them, values
        // failing (`gh secret set` reads its line for `--body`); in prose, each name a
        // candidate; a camelCase `…Pass` in a row.
        "blank_setters_without_values" => {
            "setx API_KEY x set -x TOKEN gh secret set API_KEY ".repeat(n / 50)
        }
        "names_and_words_in_a_row" => "token password aPass x ".repeat(n / 23),
        // XML elements never closed, calls and block scalars whose values fail, elements
        // in a row on one line.
        // Literal blocks with a comment and blank lines, prefixed elements and CDATA that
        // never close.
        "blocks_and_cdata_without_values" => {
            "password: | # c\n\n<wsse:Password><![CDATA[x ".repeat(n / 43)
        }
        "mysqladmin_passwords_without_values" => "mysqladmin -p password x ".repeat(n / 25),
        "elements_calls_and_blocks_without_values" => {
            "<password>x password('x') token: |\n  x\n<token>a b ".repeat(n / 50)
        }
        // Elements with attributes on their tags (on the next line too), named by a `key`
        // attribute (with no element before it, too), `<name>` and `<value>` siblings (a
        // `<description>` and a comment never closed between them), every value failing.
        "tagged_and_keyed_elements_without_values" => {
            "<password a=\"b\">x <e key=\"token\" c='d'>x key=\"password\">x <name>token</name><value>x \
             <password\n a=\"b\">x <name>token</name>\n<description>x <!-- "
                .repeat(n / 143)
        }
        // Tools whose password is positional, each given none or a variable.
        "positional_commands_without_passwords" => {
            "htpasswd -b f u $P sqlplus a/$P@b rabbitmqctl add_user u wpa_passphrase n $P \
             net use Z: x net user u * cmdkey /pass: schtasks /rp * security add-generic-password -w "
                .repeat(n / 165)
        }
        // Passwords written into a reader's standard input, each failing: no reader, a
        // variable, `||`, a quote never closed before the next writer, a reader's long line.
        "stdin_writers_without_passwords" => {
            "echo x | cat echo 'y z' | sudo -S printf '%s' $P | docker login --password-stdin \
             echo -e \"a\\nb\" | passwd echo x || sudo -S echo 'x | sudo -u a -g b -S "
                .repeat(n / 151)
        }
        // Here-strings glued and in runs, groups of writers and a remote command, each
        // failing.
        "here_strings_and_groups_without_passwords" => {
            "a<<<a a <<< x <<<<<< (echo x; echo y) | cat { echo x; } | sudo ls echo x | ssh h 'a' 'sudo' "
                .repeat(n / 92)
        }
        // Here-documents never closed, given variables or words, or to no reader; C++'s
        // `<<`.
        "here_documents_without_passwords" => {
            "chpasswd <<X\n<<a cout << x << y; cat <<E | chpasswd\nb:$P\nE\nsudo -S a <<E\nx\nE\npasswd <<-E\n\tx\n"
                .repeat(n / 92)
        }
        // Groups of writers into a remote command quoted empty, and through filters (each
        // group's writers read the rest of it; found by an attack review: 26x before the
        // remote command was read within its quotes).
        "groups_into_remote_and_filtered_readers" => {
            "(echo a;echo a;echo a;echo a;echo a)|ssh '' ''\n{ yes a && yes a; }|tee|tee|sudo -iu\n"
                .repeat(n / 84)
        }
        // ODBC's braced values that fail or never close, Mosquitto's tools given none.
        "braced_values_and_mosquitto_without_passwords" => {
            "Pwd={}} Pwd={a;b} Pwd={ mosquitto_pub -P $X mosquitto_passwd -b f u ".repeat(n / 68)
        }
        // Setters' arguments and pairs with a field between, every value failing.
        "setters_and_pairs_without_values" => {
            "define('password', 'x'); {\"name\": \"token\", \"type\": \"a\", \"value\": \"x\"} "
                .repeat(n / 70)
        }
        // Authorization in any scheme, and other clients' password options, all failing.
        "authorization_schemes_without_credentials" => "Authorization: a ".repeat(n / 17),
        "client_options_without_passwords" => {
            "keytool -storepass $X openssl -passin env:X redis-cli -a $Y ".repeat(n / 60)
        }
        // Short command lines whose one option gives no password: a candidate every 7
        // bytes, each line read to the next command; LDAP tools' names (any letters after
        // `ldap` in the trigger).
        "commands_with_other_options" => "zip -x curl -k ldapsearch -x ".repeat(n / 29),
        "ldap_words_that_are_no_tools" => "ldapfoo -w ".repeat(n / 11),
        // (Found by an attack review: a word a tool's name starts, 290x slower than text.)
        "ldap_tools_names_with_more_letters" => "ldapaddx -x ".repeat(n / 12),
        "archivers_without_a_password" => "7z a -p rar x -p- ".repeat(n / 18),
        // (Found by an attack review: each registry login read its 2 KiB line.)
        "registry_logins_in_a_row" => "docker login ".repeat(n / 13),
        // Chains of short lines over `login` words: a registry's, a `.netrc` form's and one
        // that can be neither, each read in place.
        "logins_in_chains" => {
            "7z a -px oc login zip -x login a password zip -x login ".repeat(n / 55)
        }
        // `ssh-keygen` (a trigger of the run-token pass) alone, with options that give no
        // passphrase, and as another command's argument.
        "key_generators_in_a_row" => {
            "ssh-keygen ssh-keygen -q -N -P $P zip -x ssh-keygen ".repeat(n / 52)
        }
        // Commands' names as other commands' arguments, whose lines are read as the
        // other commands' too.
        "commands_named_as_arguments" => {
            "keytool -alias mysql -x curl -T zip -x mysql -u ".repeat(n / 48)
        }
        // Database and cache clients with no password (their own pass): names in a row,
        // options given variables, an argument list, and named as other commands'
        // arguments in argument lists.
        "client_names_in_a_row" => "twine cqlsh valkey-cli keydb-cli ".repeat(n / 33),
        "clients_without_passwords" => {
            "valkey-cli -a $X cqlsh -u a -p \"cypher-shell\", \"-p\", twine AUTH ".repeat(n / 66)
        }
        "commands_named_in_argument_lists" => {
            "redis-cli -a $X mongo -u a -p \"sshpass\", \"-p\", curl AUTH zip -P twine "
                .repeat(n / 72)
        }
        // The tools read in the headers' pass, none given a password.
        "tools_without_passwords" => TOOLS_WITHOUT_PASSWORDS.repeat(n / 157),
        // And in argument lists, names among their strings.
        "tool_lists_without_passwords" => {
            "\"hydra\", \"hydra\", \"ipmitool\", \"-P\", \"$X\", ".repeat(n / 42)
        }
        // A secret's name as a call's with no blank anywhere: each read back for Redis's
        // `AUTH` to the text's start (1 MB: 10 s) before this release. (The step count does
        // not count a validator's reading: the bench shows it.)
        "calls_named_auth" => "auth(db.auth(".repeat(n / 13),
        // Calls that take a password as a later argument, its string never closed: each
        // call's second argument is the next call's name.
        "credential_calls_unclosed" => ".login('a','b".repeat(n / 13),
        // And each closed by a bracket it did not open, so that the next call's `(` is
        // closed and no call's arguments end (each read its 512 bytes before this release).
        "calls_closed_by_brackets" => {
            ".login(\"\"]auth=(\"\"]NetworkCredential]::new(''}".repeat(n / 46)
        }
        // Go's data source names glued one to another, each password holding `=` and `(`:
        // each was read back 256 bytes before review 43's fix shipped.
        "data_source_names_glued" => "root:a=b(c@tcp6(".repeat(n / 16),
        // Secrets' names in a row, each the next one's field: glued by their separators,
        // alternating, a word before them, other languages' (each read its value 256 bytes
        // long, or took the next name for one: 5-9x the bench text, review 46).
        "names_glued_in_a_row" => {
            "password=token=pass=pwd=passwd=secret=SENHA=HASLO=dbHaslo=dbSenha=SENHA:SIFRE:HASLO SENHA Passwort Passwort: ".repeat(n / 109)
        }
        // Other languages' names before their particles and their words for "is", each
        // with no value (the particles' run read 256 bytes at each, 11x the bench text).
        "names_before_particles_and_verbs" => {
            "密码是a密码为パスワードはa비밀번호는 a Passwort ist password è salasana on "
                .repeat(n / 93)
        }
        // Values a person makes after a password's word and a verb, each one a word goes
        // on after, a name that sends the password, a noun before the next line's value.
        "person_values_that_go_on" => {
            "the password is hunter22 xyz mdp est soleil2024 Passwort ist Sommer2024 ja password is\nthe password to the router the password list is\nrockyou2024 ".repeat(n / 147)
        }
        // This release's names, calls and forms with no secret after them.
        "added_names_without_secrets" => {
            "pw=x,token=y;api_key=z [pw]=\"[pw]=\" x_pw]=\"x_pw]=\" credentials: gcp.json creds=x {{ db_pw | default(omit) }} clave: MX01 passordet er for kort 비번은 createCredential(a, b, c) Password for Wi-Fi: see PW: 1500us passcode: 6-digit ".repeat(n / 232)
        }
        // A wallet's recovery words' names before eleven words of the list, a definition,
        // a variable, an instruction; names' first words in other senses, a name that is
        // the list's word over and over, a nested key and a table's head with no words.
        "seed_names_without_words" => {
            "seed phrase: produce drop purity excite mystery tackle library cabbage middle roof cover mnemonic: a WALLET_MNEMONIC=\"x\" Recovery phrase: write down these twelve words seed: 42 wallet: 0x5290 backup seed seed seed recovery words: none {\"mnemonic\": {\"phrase\": \"\"}} Seed phrase:\n| # | Word |\n|---|---|\n| 1 | never | ".repeat(n / 314)
        }
        // Wi-Fi QR codes with no password, a placeholder or the code that builds one;
        // extended keys' prefixes with no key; the names and forms of this release's keys
        // and passwords with none after them.
        "wifi_codes_and_wallet_keys_without_secrets" => {
            "WIFI:S:Home;T:nopass;; WIFI:S:x;T:WPA;P:${PASS};; LOG WIFI:P:enabled [WIFI:S:WIFI:S:WIFI: \"WIFI:S:\" + ssid + \";T:WPA;P:\" + pw + \";;\" xprv9s21ZrQH143K3QTDL4LX xprvxprv tprv... zprv_key my private key is on the HSM; MD5 of the secret is 5f4dcc3b5aa765d61d8327deb882cf99 use a password Manager2000 ".repeat(n / 295)
        }
        // Mail sessions' `AUTH` with no password after it; key groups that are prose or a
        // placeholder; Wallet Import Format's names with no key; `wif` inside words;
        // recovery codes' names before dates and counts; base64 glued to a third `=`
        // after `AUTH` (each token read once: 22x ordinary English in review 72); a
        // certificate's block in base64, a key's glued after base64; a ConfigMap's data,
        // a Secret's kind with no values, `metadata:`, an API's `"data"`.
        "mail_logins_and_key_groups_without_secrets" => {
            "AUTH PLAIN AUTH LOGIN\n334 UGFzc3dvcmQ6\nAUTH PLAIN dGVzdA== secret: JBSW Y3DP THIS word secret: AAAA BBBB CCCC DDDD the secret is SHA256WITHRSA privkey privkey wif: 5HueCGU8rMjxEXxiPuD5 from_wif(x) swift wif use the wifi password policy backup codes: 2024-01-05 Recovery codes: 10 left AUTH PLAIN\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA===\nAUTH LOGIN\n334 UGFzc3dvcmQ6\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA===\ntls.crt: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t xLS0tLS1CRUdJTiBFQyBQUklWQVRFIEtFWS0tLS0t \ndata:\n  key: dmFsdWU=\nkind: ConfigMap\n\"kind\": \"Secret\" \ndata: \nkind: SecretStore\nstringData:\n  pw: {{ x }}\nmetadata:\n  name: x\n\"data\":{\"id\":\"1\"} \"data\": [1] ".repeat(n / 1168)
        }
        // Secret stores' commands with no value (variables, files, the standard input, a
        // placeholder, a key alone, a visibility that is no secret's), and their
        // subcommands over and over (each reads its words up to the next one's); two-factor
        // setup's names with no key or codes after them; mail and FTP logins with none;
        // Kustomize's generators with none, nested.
        "store_commands_without_secrets" => {
            "fly secrets set FOO=$FOO BAR=${BAR} gh secret set FOO --body-file x vault kv put secret/app foo=@f.json bar=- kubectl create secret generic x --from-literal=k=changeme --from-env-file=.env pulumi config set --secret k ansible-vault encrypt_string --stdin-name 'x' eas env:create --name A --value b1 --visibility plaintext secrets set secrets set kv put kv put config set config set secret generic secret:create env:create encrypt_string setup keys are rotated setup key: THIS WILL BE SHOWN setup key: AAAA BBBB CCCC 2222 emergency scratch codes: 5 left Setup key Setup key a001 LOGIN bob {8} PASS  src/app.test.js\nUSER guide\nPASS the salt\nAUTHENTICATE PLAIN\n a2 LOGIN x \" LOGIN PASS **** secretGenerator:\n- name: x\n  literals:\n  - k=${T}\n  - a=VALUE1\nconfigMapGenerator:\n- literals:\n  - b=Zq8xW2vT7k\n secretGenerator:\n  secretGenerator:\n".repeat(n / 837)
        }
        // Keys' names with no key after them (an algorithm, prose, a short id, a variable,
        // a PGP block after a blank line), wallets' calls with no key (a variable, 63 hex
        // digits, a call left open), Dovecot's logins with the response hidden or none,
        // setup pages' names with no key, a continuation in a JSON string; AI services'
        // prefixes with no key (placeholders, runs in a row, glued, cut short).
        "key_names_without_keys" => {
            "encryption key: AES-256-GCM-with-HKDF-SHA256 master key is stored in KMS AES key: Zk3v9Qx2LmT7pWc8 signing key:\n\n-----BEGIN PGP PUBLIC KEY BLOCK----- Wallet(process.env.PK) new Wallet('0x4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f36231') from_key( privateKeyToAccount(` Buffer.from( aes_key=${AES_KEY} FERNET_KEY= Your key: THIS WILL BE SHOWN this code this code into your app: AUTH\t1\tPLAIN\tservice=imap\tresp=<hidden>\nAUTH\t2\tPLAIN\tservice=smtp\n ls \\\\\\n -l gsk_XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX r8_abc pplx-short tvly-YOUR_API_KEY xai-abababababababababababababababababababababababababababababababababababababababab lsv2_pt_<key> pcsk_x_y fc-barcelona e2b_sandbox sk-lf-... csk-? fw_id nvapi-a-nvapi-a-nvapi-a- bb_live_bb_live_ sk_0123456789abcdef0123456789abcdef0123456789abcdef AccountKey=;AccountKey=*** ".repeat(n / 840)
        }
        // Vault's keys' names, lists and commands with no key (items that are no keys, a
        // prompt, BitLocker's id, a hash's name, a continued command), a key in Wallet
        // Import Format whose checksum fails, a bot's id glued to a word, wallets' calls
        // given a variable; `Key 1:` in a long line over and over (each read back to its
        // line's start before review 85: 15 s for 1 MB of JSON, which no step count saw);
        // the unseal body's key with no path near, a variable's block with no default, a
        // Secret's flow mapping with no kind; Solana's calls and files with no key.
        "vault_names_without_keys" => {
            "unseal_key: [x, null, unseal_keys_b64\": [ \"abc\", Recovery Key ID: 4A3B Unseal Key (will be hidden): vault operator unseal -migrate -address http://v:8200 \\\n UNSEAL_KEY_1=${KEY} recovery_keys_shares: 5 unsealKeyHash: abc keys_base64: [] 5KYZdUEo39z3FPrtuX2QbbwGnNP5zTd7yyr2SC1j299sBCnWjsX bot12345678:AA LocalWallet::from_str(&pk) wallet.add(item) {\"label\":\"Key 1:\",\"v\":1}, Key 1: x Key 2: \"keys\": [x, \"key\": \"xT3kQ9mZpL2vR8wN5yB7cF1dG4hJ6sA0eU9iO3qWtY+\", unseal_key { a = 1\n b = 2\n c = 3\n default = x \ndata: {a: dmFsdWU=, b: dmFsdWU=, c: x\nKeypair.fromSecretKey(new Uint8Array(bytes)) cat solana/id.json\n[1, 2, 3]\n".repeat(n / 614)
        }
        // The positional tools added last, none given a password.
        "tools_added_last_without_passwords" => {
            "plink -pw $X mkpasswd -m x openssl passwd -in f mc alias set a b c $Y expdp parfile=p rman target / ".repeat(n / 100)
        }
        // Hex with no break (a blob, joined hashes), and card numbers glued to letters
        // with no break: each card candidate read the whole word before this release.
        "hex_runs" => hex::hex_run(n),
        "cards_glued_in_a_word" => "x4111111111111111".repeat(n / 17),
        // PowerShell's cmdlet over and over, and with parameters that are not the switch.
        "secure_strings_in_a_row" => "ConvertTo-SecureString ".repeat(n / 23),
        "secure_strings_without_the_switch" => {
            "ConvertTo-SecureString -a: -Key 'k' x ".repeat(n / 38)
        }
        "token_headers_without_digits" => {
            "Authorization: Token abcdefghijklmnopqrstuvwxyz ".repeat(n / 48)
        }
        "quiet_kinds_between_detections" => {
            "5-12 4111 1111 1111 1111 06 12 (12) (34) (56) 1.2.3.4.5 ".repeat(n / 8)
        }
        // Markdown's and HTML's tables and emphasis around names whose values fail, and
        // pipes after names outside any table.
        "markdown_table_rows" => "| password | x | **Password** | `a` |\n".repeat(n / 38),
        "markdown_emphasis" => "**Password:** x `password`: `a` __Secret:__ ".repeat(n / 44),
        "html_table_cells" => "<td>password</td><td>x</td><th>API_KEY</th> <td>".repeat(n / 48),
        "pipes_after_names" => "$password | password |password | ".repeat(n / 33),
        "html_cells_indented" => {
            "<TD><b>Admin Password:</b></TD>\n        <dd style=\"a\">\n x<br> ".repeat(n / 62)
        }
        "emphasised_values" => "**Password:** *x* Password:**a `Password`:`".repeat(n / 43),
        // Tables' rows under a header that names a secret's column, whose values fail
        // (each row read back to its header, 64 rows at most), under one that names none,
        // and rows with no header.
        "table_rows_under_a_secret_header" => {
            format!("| User | Password |\n|---|---|\n{}", "| a | **** |\n".repeat(n / 13))
        }
        "table_rows_under_other_headers" => {
            format!("| User | Role |\n|---|---|\n{}", "| a | x1 |\n".repeat(n / 11))
        }
        "table_rows_without_headers" => "| a |\n|---|\n|---|\n| b |\n".repeat(n / 24),
        // Strings that each open with a `|`, on one line; quoted and indented rows.
        "strings_opening_with_pipes" => "\"|\"| a |\" '|' \"| Password | x |\" ".repeat(n / 33),
        "quoted_table_rows" => {
            format!("> | User | Password |\n> |---|---|\n{}", "    > | a | **** |\n".repeat(n / 19))
        }
        // HTML tables' rows under a header row naming a secret's column, and rows that
        // never close.
        "html_rows_under_a_secret_header" => format!(
            "<table><tr><th>User</th><th>Password</th></tr>{}",
            "<tr><td>a</td><td>****</td></tr>\n".repeat(n / 33)
        ),
        "html_rows_never_closed" => "<tr><td>a<td><th>Password<tr>".repeat(n / 29),
        "labels_over_their_values" => "Password:**\n\n```\nx\n```\npassword:\n  - x\n".repeat(n / 39),
        "html_cells_left_open" => "<tr><td <tr><th x<tr><td><".repeat(n / 26),
        // Prose about secrets, each name's words read up to a verb.
        "prose_about_secrets" => "the password for the db is x; Password Token token a b c is ".repeat(n / 60),
        // Values before names and names closed by marks, whose values fail.
        "prose_values_before_names" => "`a` is the password hash; **Password** is, password, (`b`) \"c\" as v2 as the a b password ".repeat(n / 89),
        // Labels at their lines' starts, tabs and values that fail.
        "tab_separated_labels" => "password\tnot set\nuser\tbob\ttoken\t\t\nPassword\tchangeme\n".repeat(n / 52),
        // Tables without outer pipes: a header over a border, rows whose values fail, a
        // first cell of 200 bytes, `name | value` records.
        "pipeless_table_rows" => format!(
            " id | password\n----+---------\n  1 | NULL\nx | y | z\npassword | a\n{} | b\n",
            "a".repeat(200)
        )
        .repeat(n / 269),
        // Names asked about, emphasised from words before them or by a field's prefix,
        // their values failing.
        "prose_questions_and_emphasis" => {
            "password? a the token? It's a **a b c d password** is __password__ x ".repeat(n / 69)
        }
        // Tables drawn with box drawing: a header over its types and a border, rows whose
        // values fail, an empty first cell.
        "box_drawn_tables" => "│ id │ password │\n│ varchar │ int64 │\n├──┼──┤\n│ a │ b │\n a │ token\n───┼───\n   │ x\n"
            .repeat(n / 132),
        // SQLite's list output: headers over rows of their shape or another, values that
        // fail.
        "list_output_rows" => "id|password\n1|x\na|b|c\npassword|a\n".repeat(n / 33),
        // Tables aligned with blanks: headers naming a secret over a rule or as a data
        // frame's, rows whose values fail or start with an address, lines that look like
        // rules or frames' rows, rules under rules; a table of names and values (`Key`
        // over `Value`), its secrets' names' values failing.
        "blank_aligned_tables" => {
            "id  password\n--  --------\n1   x\n2   a b\n--\n-- x\n   token\n0  a\n1  b\n\n--  --\n0 x\n\
             host  password\n-  --------\n10.0.0.1  x\n \n3 a\n\
             Key         Value\n---         -----\npassword    x\ntoken       a b\n\
             api_key     n/a\nsecret key  x\n"
                .repeat(n / 220)
        }
        // Redis's commands (a prompt's `AUTH`, `ACL SETUSER`, `requirepass`, options, an
        // ACL file's `user` lines, `AUTH` piped into `nc`), a keyring's setter, whose
        // arguments are read to the third, and secret stores' (`az keyvault secret set
        // --value`, `aws ssm put-parameter`, a value piped into `gh secret set` or
        // `secret-tool store`), and `.pgpass`'s name and entries.
        "redis_and_setter_runs" => {
            "x:1> AUTH yyy1\nACL SETUSER a >b1cd >\nrequirepass --masterauth x AUTH -x AUTH \
             set_password(\"a\", f(\"b\", \"c1d2\")\nkeyvault secret set --value=keyvault \
             secret set --value a1b2 echo a | gh secret set x\necho \"AUTH a1b2\" | x\nAUTH \n\
             user a on >b\nuser x >\n'AUTH a\n' | nc \nssm put-parameter --type \
             SecureString --value a1b2 echo a | secret-tool store\nsetPassword(\"a\", \"b\", \
             `c1d2` \npgpass pgpass\na:1:b:c:x\necho 'a:1:b:c:x' >> .pgpass\n"
                .repeat(n / 421)
        }
        // Services' tokens by their prefixes, failing (placeholders, bodies too short), in
        // runs that grow with `n`: each read at most its cap past its prefix (with no cap,
        // a failed one read its run to the end).
        "service_token_runs" => [
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
        .map(|u| u.repeat(n / u.len() + 1))
        .join(" "),
        // Windows paths (their separators before `n`, `r`, `t` are read back to a root:
        // each run once), parts that lead to no root, escapes between.
        "windows_path_runs" => r"C:\a b\redis-cli.exe -a \n.\tools\x\n\a\a\a\a\a\n \\net x\t".repeat(n / 59),
        // Redis's protocol: `AUTH` arrays whose password's length reaches over the arrays
        // after it (to a line's end, and 4 KiB at most), with real and escaped line breaks.
        "resp_lengths_over_later_arrays" => {
            "*2\n$4\nAUTH\n$4081\na\n*2\r\n$4\r\nAUTH\r\n$99976\r\na\r\n*2\\r\\n$4\\r\\nAUTH\\r\\n$999\\r\\nab\\r\\n"
                .repeat(n / 78)
        }
        // Elements never closed, their content on its line.
        "unclosed_elements" => "<password>x y\n<token>a &lt;/password&gt ".repeat(n / 39),
        // Commands that print a secret, one after another on a line, their outputs no
        // secret's, sent to a file, a line break escaped.
        "commands_printing_secrets" => "echo $echo ${A} printenv PASSWORD\n$ vault kv get -field=password x\nab\n\
             echo $API_KEY\\nx1\\n base64 -d secret /run/secrets/ pass show \n\
             configure get aws_secret_access_key > f\n"
            .repeat(n / 172),
        _ => unreachable!(),
    }
}

/// The unit of the `tools_without_passwords` family (157 bytes).
const TOOLS_WITHOUT_PASSWORDS: &str = "dsadd -pwd auth-pass ipmitool -P $X snmpwalk -c public \
    xfreerdp /p: neo4j-admin set-initial-password jarsigner -storepass:env X sentinel auth-pass \
    psexec -p ";

const FAMILIES: [&str; 145] = [
    "local_part_run",
    "dotted_run",
    "jwt_like_run",
    "digit_runs",
    "ipv6_like_run",
    "bare_ssn_csv",
    "pem_headers_without_bodies",
    "plus_runs",
    "pct40_local_part_run",
    "unicode_local_part_run",
    "paren_groups",
    "phone_groups_without_end",
    "pem_body_without_end",
    "zero_width_digits",
    "fullwidth_digits",
    "glued_card_words",
    "lowercase_iban_runs",
    "pct_encoded_local_part_run",
    "jwt_run_before_one_anchor",
    "jwt_run_with_a_placeholder_tail",
    "unterminated_html_escapes",
    "json_escapes_between_digits",
    "form_encoded_digit_runs",
    "twice_encoded_escapes",
    "twice_escaped_entities",
    "ipv4_like_runs",
    "card_group_runs",
    "spaced_paren_groups",
    "address_runs",
    "failing_domain_runs",
    "asset_name_runs",
    "other_script_address_runs",
    "other_script_label_runs",
    "addresses_back_to_back",
    "letter_runs_before_a_digit",
    "key_prefix_runs_before_a_digit",
    "addresses_glued_to_values",
    "jwt_starts_in_a_label",
    "long_jwt_runs_in_a_label",
    "bare_numbers_after_failing_local_parts",
    "url_passwords_without_an_at",
    "url_users_that_run_on",
    "url_colon_runs",
    "urls_glued_with_ports",
    "bearer_tokens_without_digits",
    "basic_credentials_that_do_not_decode",
    "named_fields_with_variables",
    "named_fields_glued_in_a_row",
    "named_fields_with_unclosed_quotes",
    "secret_options_with_placeholders",
    "commands_without_a_password",
    "netrc_logins_without_a_password",
    "user_options_with_templates",
    "command_names_in_a_row",
    "command_names_before_an_option",
    "header_names_with_words",
    "dashes_before_an_option_name",
    "glued_options_before_a_name",
    "named_fields_glued_with_values",
    "header_names_glued",
    "indexed_names_with_short_values",
    "named_pairs_with_short_values",
    "sql_password_clauses_without_one",
    "blank_setters_without_values",
    "names_and_words_in_a_row",
    "elements_calls_and_blocks_without_values",
    "tagged_and_keyed_elements_without_values",
    "positional_commands_without_passwords",
    "mysqladmin_passwords_without_values",
    "blocks_and_cdata_without_values",
    "short_names_glued",
    "page_tokens_in_a_row",
    "single_dash_options_without_values",
    "setters_and_pairs_without_values",
    "stdin_writers_without_passwords",
    "braced_values_and_mosquitto_without_passwords",
    "here_strings_and_groups_without_passwords",
    "here_documents_without_passwords",
    "groups_into_remote_and_filtered_readers",
    "doubled_quotes_never_closed",
    "authorization_schemes_without_credentials",
    "client_options_without_passwords",
    "token_headers_without_digits",
    "quiet_kinds_between_detections",
    "commands_with_other_options",
    "ldap_words_that_are_no_tools",
    "ldap_tools_names_with_more_letters",
    "archivers_without_a_password",
    "registry_logins_in_a_row",
    "logins_in_chains",
    "key_generators_in_a_row",
    "commands_named_as_arguments",
    "client_names_in_a_row",
    "clients_without_passwords",
    "commands_named_in_argument_lists",
    "tools_without_passwords",
    "tool_lists_without_passwords",
    "calls_named_auth",
    "credential_calls_unclosed",
    "calls_closed_by_brackets",
    "data_source_names_glued",
    "names_glued_in_a_row",
    "names_before_particles_and_verbs",
    "person_values_that_go_on",
    "added_names_without_secrets",
    "seed_names_without_words",
    "wifi_codes_and_wallet_keys_without_secrets",
    "mail_logins_and_key_groups_without_secrets",
    "store_commands_without_secrets",
    "key_names_without_keys",
    "vault_names_without_keys",
    "tools_added_last_without_passwords",
    "hex_runs",
    "cards_glued_in_a_word",
    "secure_strings_in_a_row",
    "secure_strings_without_the_switch",
    "markdown_table_rows",
    "markdown_emphasis",
    "html_table_cells",
    "pipes_after_names",
    "unclosed_elements",
    "commands_printing_secrets",
    "html_cells_indented",
    "emphasised_values",
    "table_rows_under_a_secret_header",
    "table_rows_under_other_headers",
    "table_rows_without_headers",
    "strings_opening_with_pipes",
    "quoted_table_rows",
    "html_rows_under_a_secret_header",
    "html_rows_never_closed",
    "prose_about_secrets",
    "html_cells_left_open",
    "labels_over_their_values",
    "prose_values_before_names",
    "tab_separated_labels",
    "pipeless_table_rows",
    "prose_questions_and_emphasis",
    "box_drawn_tables",
    "list_output_rows",
    "blank_aligned_tables",
    "redis_and_setter_runs",
    "service_token_runs",
    "windows_path_runs",
    "resp_lengths_over_later_arrays",
];

#[test]
fn doubling_a_hostile_input_at_most_about_doubles_the_work() {
    for name in FAMILIES {
        let small = detector().scan_work(&family(name, 4_000));
        let large = detector().scan_work(&family(name, 8_000));
        assert!(
            large <= small * 2 + small / 4 + 10_000,
            "{name}: {small} steps for n, {large} for 2n"
        );
    }
}

#[test]
fn a_dotted_local_part_run_costs_steps_in_proportion_to_its_length() {
    // Was quadratic: 40 KB of `a.` before `@b.co` took seconds, every start searched again.
    let text = family("dotted_run", 20_000);
    let work = detector().scan_work(&text);
    assert!(
        work < 200 * text.len() as u64,
        "{work} steps for {} bytes",
        text.len()
    );
    // A valid address after a long run is still found, where it starts.
    let text = format!("{} bob@example.com", "a.".repeat(5_000));
    let found = detector().detect(&text);
    assert_eq!(found.len(), 1);
    assert_eq!(&text[found[0].start..found[0].end], "bob@example.com");
    let text = format!("{}@example.com", "a".repeat(10_000));
    let found = detector().detect(&text);
    assert_eq!(found.len(), 1, "the last 64 characters form an address");
    assert_eq!(found[0].end - found[0].start, 64 + "@example.com".len());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn doubling_any_input_at_most_about_doubles_the_work(
        unit in prop::collection::vec(
            prop::sample::select(vec!["a", ".", "@", "b.co", "1", " ", "-", ":", "eyJ", "+", ",", "\n", "x@y.", "4111", "%40", "(", ")", "é", "\u{200B}", "０", "-----BEGIN PRIVATE KEY-----\n", "00", "%2B", "eyJ", ".eyJ", "℅", "\\u00", "&#", ";", "://u:", "Bearer ", "Basic ", "p4ss", "password=", "'", "\""]),
            1..12,
        ),
        n in 50usize..400,
    ) {
        let unit: String = unit.concat();
        let once = unit.repeat(n);
        let twice = unit.repeat(2 * n);
        let a = detector().scan_work(&once);
        let b = detector().scan_work(&twice);
        prop_assert!(b <= a * 2 + a / 4 + 20_000, "{unit:?} x{n}: {a} then {b}");
    }
}
