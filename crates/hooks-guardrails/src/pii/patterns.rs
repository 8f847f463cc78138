//! The detectors' patterns: a cheap trigger per entity for the combined scan, the exact
//! pattern, and the validator that confirms a candidate.

use regex_automata::Input;
use regex_automata::meta::Regex as MetaRegex;

use super::Entity;
use super::phone::{PHONE_WINDOW, phone_reach, validate_phone};
use super::validate::*;

pub(super) const B: &str = r"(?-u:\b)";
/// The characters of a URL's user name: RFC 3986's userinfo without the `:`, an `@` (a
/// folded `%40`) and any non-ASCII character (`josé`).
const URL_USER: &str = r"(?:[A-Za-z0-9\-._~%!$&'()*+,;=@]|[^\x00-\x7F])";
/// A character of a URL's password as people write it (in `.env` files, unencoded:
/// `p#ss/w?rd`, or percent-encoded, which folding decodes): anything but white space,
/// quotes, angle brackets and backslashes — which end the URL in the text around it — and a
/// slash only before something other than a slash (a password holds no `//`: there the
/// next URL starts, so a run of URLs without credentials is not read again from each of
/// them). (The validator reads what follows the `@` as a host and refuses a port and a
/// path.)
const URL_PASSWORD: &str = r#"(?:[^\s'"`<>\\/]|/[^\s'"`<>\\/])"#;
/// The characters of a bearer token: RFC 6750's `b64token` (`=` also inside: some tokens
/// hold one) and `|` (Laravel Sanctum's `id|secret`).
const BEARER: &str = r"[A-Za-z0-9\-._~+/=|]";
/// The characters of basic credentials: base64, standard or URL-safe.
const BASIC: &str = r"[A-Za-z0-9+/_\-]";
/// Names of the fields that hold a password or a key (`DB_PASSWORD=`, `"client_secret":`,
/// `apiKey:`), as they are written: lower case, capitals, capitalised, camel case. A field
/// whose name ends in one of them (`MYSQL_ROOT_PASSWORD`, `spring.datasource.password`)
/// holds a secret (see `validate::named_secret`). The first [`RUN_PASS_NAMES`] are fields'
/// names; the rest, headers' (`X-API-Key`, `X-Auth-Token`, `Private-Token`) and tokens'.
pub(super) const SECRET_NAMES: [&str; 125] = [
    // (Before `Secret`, which the trigger would otherwise take with a blank after it, as a
    // name a command sets, and the candidate fail.)
    "Secret Key",
    "Secret key",
    "SECRET KEY",
    "secret key",
    "password",
    "Password",
    "PASSWORD",
    "passwd",
    "Passwd",
    "PASSWD",
    "passphrase",
    "Passphrase",
    "PASSPHRASE",
    "secret",
    "Secret",
    "SECRET",
    "secret_key",
    "secretKey",
    "SecretKey",
    "SECRET_KEY",
    // (AWS Secrets Manager's value, in `aws secretsmanager get-secret-value` output, and as
    // Terraform and the SDKs name it.)
    "SecretString",
    "SecretBinary",
    "secret_string",
    "secretString",
    "SECRET_STRING",
    "private_key",
    "privateKey",
    "PRIVATE_KEY",
    // (WireGuard's keys: `PrivateKey = …`, `PresharedKey = …`.)
    "PrivateKey",
    "PresharedKey",
    "api_key",
    "apiKey",
    "ApiKey",
    "API_KEY",
    "apikey",
    "APIKEY",
    "api-key",
    // Labels written for people, as Markdown and prose lay credentials out (`**API Key:**
    // …`, `| Secret Key | … |`; `Token:`, `Secret:` and `Password:` are names already).
    "API Key",
    "API key",
    "Api Key",
    "Api key",
    "API KEY",
    // (Prose: `the api key is …`, `the access key is …`, `my private key is 0x…`.)
    "api key",
    "Access Key",
    "Access key",
    "access key",
    "ACCESS KEY",
    "Private Key",
    "Private key",
    "PRIVATE KEY",
    "private key",
    "access_token",
    "accessToken",
    "ACCESS_TOKEN",
    "refresh_token",
    "refreshToken",
    "REFRESH_TOKEN",
    "auth_token",
    "authToken",
    "AUTH_TOKEN",
    "client_secret",
    // Environment variables the tools read their secret from (`VAULT_TOKEN=`,
    // `AWS_SESSION_TOKEN=`, `MYSQL_PWD=`, `REDISCLI_AUTH=`) and a session token's field
    // (`"SessionToken":` in `aws sts` output, `X-Session-Token:`).
    "VAULT_TOKEN",
    "vault_token",
    "SESSION_TOKEN",
    "session_token",
    "sessionToken",
    "SessionToken",
    "Session-Token",
    "session-token",
    // (Not `mysql_pwd`: its first letters are the MySQL client's name, which the prefilter
    // then stopped at in every command line — 26% slower in a run of them.)
    "MYSQL_PWD",
    "REDISCLI_AUTH",
    // A token of any service (`GITHUB_TOKEN=`, `"token":`, `botToken:`, `hf_token:` — not
    // a page's or a tokenizer's: see `validate::no_secret_name`), a password shortened
    // (`DB_PASS=`, `smtp_pass:`, ODBC's `Pwd=`, MongoDB's `pwd:`), keys that encrypt or
    // sign.
    "token",
    "Token",
    "TOKEN",
    "_pass",
    "_PASS",
    // (A field named `pass` alone, nodemailer's `auth: { user, pass }`, `"pass":`: only as
    // a field's whole name, or its last part after a dot or a dash — not `bypass:`.)
    "pass",
    "PASS",
    // (Basic credentials' base64 under `auth`: Docker's `config.json`, npm's `_auth=` —
    // only such a value: see `validate::validate_secret`.)
    "auth",
    "Auth",
    "AUTH",
    "pwd",
    "Pwd",
    "PWD",
    // (French's `mot de passe` shortened, as its chat writes it: `mdp : …`, `le mdp est …`
    // — a word of its own, see `WORD_NAMES`; not in capitals, a Markov decision process's
    // `MDP`, review 51.)
    "mdp",
    "Mdp",
    "encryption_key",
    "encryptionKey",
    "ENCRYPTION_KEY",
    "signing_key",
    "signingKey",
    "SIGNING_KEY",
    "master_key",
    "masterKey",
    "MASTER_KEY",
    // A Wi-Fi network's pre-shared key (wpa_supplicant's `psk="…"`, Debian's `wpa-psk …`,
    // NetworkManager's `wifi-sec.psk …`).
    "psk",
    "PSK",
    // A password under a camelCase name (`adminPass`, `dbPass`, `DBPass`: only after the
    // word of what it opens, see `validate::camel_pass`), Rails's `secret_key_base`, AWS's
    // secret key under its whole name (`aws_secret_access_key`, `"SecretAccessKey":` in
    // `aws sts` output) whatever its value's length.
    "Pass",
    "secret_key_base",
    "SECRET_KEY_BASE",
    "secret_access_key",
    "SECRET_ACCESS_KEY",
    "secretAccessKey",
    "SecretAccessKey",
    "API-Key",
    "Api-Key",
    "api_token",
    "apiToken",
    "API_TOKEN",
    "Auth-Token",
    "auth-token",
    "AUTH-TOKEN",
    "API-KEY",
    "Api-key",
    "Api-Token",
    "api-token",
    "API-Token",
    "ApiToken",
    "apitoken",
    "Access-Token",
    "access-token",
    "Private-Token",
    "PRIVATE-TOKEN",
    "private-token",
    "Vault-Token",
];

/// A password's name in other languages, as their labels write it (`Passwort: …`,
/// `Contraseña: …`, `Mot de passe : …`, `Пароль: …`, `密码：…` — a full-width colon is
/// folded to `:`), small and capitalised (in title case, `Kata Sandi`, and without an
/// accent, `contrasena`, where interfaces and identifiers write them so): German's (and
/// its `Kennwort`), Dutch's,
/// Spanish's, Portuguese's, French's, Polish's, Swedish's, Norwegian's, Danish's,
/// Finnish's, Turkish's, Russian's, Chinese's, Japanese's, Korean's, Vietnamese's,
/// Indonesian's and Hindi's. Read as [`SECRET_NAMES`]' are (see `validate::named_secret`),
/// in a pass of their own: their literals in the others' prefilters would make those the
/// slower kind. (Its prefilter holds 64 literals, the most its slower kind takes — one
/// more would cut every one to three bytes; past 32, the capitals and the spellings
/// without diacritics cost about 1% of the bench text's speed.)
pub(super) const LOCAL_NAMES: [&str; 75] = [
    "Passwort",
    "passwort",
    "Kennwort",
    "kennwort",
    "Wachtwoord",
    "wachtwoord",
    "Contraseña",
    "contraseña",
    // (Without its tilde, as identifiers write it; title case, as interfaces do.)
    "Contrasena",
    "contrasena",
    "Senha",
    "senha",
    "Mot de passe",
    "mot de passe",
    "Mot de Passe",
    "Hasło",
    "hasło",
    "Lösenord",
    "lösenord",
    "Passord",
    "passord",
    "Adgangskode",
    "adgangskode",
    "Salasana",
    "salasana",
    "Şifre",
    "şifre",
    "Пароль",
    "пароль",
    "密码",
    "密碼",
    "パスワード",
    "비밀번호",
    "Mật khẩu",
    "mật khẩu",
    "Mật Khẩu",
    "Kata sandi",
    "kata sandi",
    "Kata Sandi",
    "पासवर्ड",
    // (In capitals, as forms and environment variables write them, `DB_PASSWORT`; without
    // their diacritics, as identifiers and hurried typing do: `haslo`, `sifre`, `Mat
    // khau`.)
    "PASSWORT",
    "KENNWORT",
    "WACHTWOORD",
    "CONTRASEÑA",
    "CONTRASENA",
    "SENHA",
    "MOT DE PASSE",
    "HASŁO",
    "HASLO",
    "Haslo",
    "haslo",
    "LÖSENORD",
    "LOSENORD",
    "Losenord",
    "losenord",
    "PASSORD",
    "ADGANGSKODE",
    "SALASANA",
    "ŞIFRE",
    "SIFRE",
    "Sifre",
    "sifre",
    "ПАРОЛЬ",
    "MẬT KHẨU",
    "Mat khau",
    "mat khau",
    "Mat Khau",
    "KATA SANDI",
    // (Turkish capitalises `i` dotted, `ŞİFRE`; identifiers join French's and Vietnamese's
    // words, `mot_de_passe`, `motDePasse`, `mat_khau`, `matKhau`.)
    "ŞİFRE",
    "MAT KHAU",
    "mot_de_passe",
    "MOT_DE_PASSE",
    "motDePasse",
    "mat_khau",
    "matKhau",
];

/// A password's names that fit no other pass's prefilter, read as [`LOCAL_NAMES`]' are
/// (see [`local_name_at`]), in a pass of their own: `pw` (`pw=…`, `PW: …`, `the pw is …`:
/// its two bytes in another pass's prefilter cut every literal's compare to two bytes,
/// 12% slower; after a word too, `ADMIN_PW=`, `wifi_pw:`, which that pass's `_pw` read
/// before), `passcode`, Spanish's `clave` as it names a password (`Clave de acceso: …`,
/// `la clave del wifi es …`), the definite forms Norwegian, Swedish and Danish glue an
/// article to (`passordet er …`, `lösenordet är …`, `adgangskoden er …`; in capitals,
/// `PASSORDET: …`), Danish's `kodeord`, Korean's `비번`, `비밀번호` shortened, a Wi-Fi
/// network's key (`WPA key: …`, `the Wi-Fi key is …`, as routers' labels and chat name
/// it), and credentials given as an account's name and its password (`credentials:
/// admin:…`, see `validate::no_secret_name`). (A code that signs someone in, `OTP: …`,
/// `verification code: …`, tried here and in a pass of its own, made every scan 2–3%
/// slower either way — its literals start as common words do, `one-`, `ver`, `sec`,
/// `log`, and `otp` stands in `footprint`: left out.)
pub(super) const ADDED_NAMES: [&str; 62] = [
    "pw",
    "PW",
    "Pw",
    "passcode",
    "Passcode",
    "PASSCODE",
    // (Not `clave` alone: Spanish's records name a product's, a course's, a school's code
    // so, `{"clave": "MX01"}`, `Clave: MAT101`, review 55 — only its names of a password.)
    "clave de acceso",
    "Clave de acceso",
    "clave secreta",
    "Clave secreta",
    "clave wifi",
    "Clave wifi",
    "clave WiFi",
    "Clave WiFi",
    "clave del wifi",
    "Clave del wifi",
    "clave del WiFi",
    "Clave Secreta",
    "CLAVE SECRETA",
    "clave_secreta",
    "CLAVE_SECRETA",
    "clave_de_acceso",
    "clave_wifi",
    "passordet",
    "Passordet",
    "PASSORDET",
    "lösenordet",
    "Lösenordet",
    "LÖSENORDET",
    "losenordet",
    "Losenordet",
    "LOSENORDET",
    "adgangskoden",
    "Adgangskoden",
    "ADGANGSKODEN",
    // (Danish's other word, `kodeord`, and its definite form.)
    "kodeord",
    "Kodeord",
    "kodeordet",
    "Kodeordet",
    "KODEORD",
    "KODEORDET",
    "비번",
    // (A Wi-Fi network's key, as routers' labels and chat name it.)
    "WPA key",
    "WPA Key",
    "WPA2 key",
    "Wi-Fi key",
    "Wi-Fi Key",
    "WiFi key",
    "wifi key",
    "Wifi key",
    "WLAN key",
    "network key",
    "Network key",
    "Network Key",
    "wireless key",
    "Wireless key",
    "credentials",
    "Credentials",
    "CREDENTIALS",
    "creds",
    "Creds",
    "CREDS",
];

/// The particles Chinese, Japanese and Korean glue to a name of [`LOCAL_NAMES`] to say what
/// it is, or what it was set to (see [`local_secret`]), the longest first: Chinese's `是`,
/// `为`, `就是`, `也是`, `还是`, `改为`, `改成`, `设为`, `设置为`; Japanese's `は`, `が`,
/// `も`; Korean's `는`, `가`, `도`.
const PARTICLES: [(&[&str], &[&str]); 4] = [
    (
        &["密码", "密碼"],
        &[
            "设置为",
            "就是",
            "也是",
            "还是",
            "改为",
            "改成",
            "设为",
            "是",
            "为",
            "為",
        ],
    ),
    (&["パスワード"], &["は", "が", "も"]),
    (&["비밀번호"], &["는", "가", "도"]),
    (&["비번"], &["은", "이", "도"]),
];

/// The length of the particle of [`PARTICLES`] that `rest` (what follows a name) starts
/// with, if any (asked past ASCII only: most names stand before an ASCII separator).
pub(super) fn particle_at(rest: &[u8]) -> Option<usize> {
    if rest.first().is_none_or(u8::is_ascii) {
        return None;
    }
    PARTICLES
        .iter()
        .flat_map(|(_, particles)| particles.iter())
        .find(|p| rest.starts_with(p.as_bytes()))
        .map(|p| p.len())
}

/// A field named by one of `names` ([`LOCAL_NAMES`] or [`ADDED_NAMES`]: see
/// [`named_secret`]), or one that Chinese, Japanese or Korean names before a particle of
/// [`PARTICLES`] (those of its names), unspaced: `密码是…`, `密码改为…`, `パスワードは…`,
/// `비밀번호는 …`, `비번은 …` ("the password is", "was changed to"), a colon and blanks
/// after it or not, the value quoted or not. (The particles' literals start with their
/// names', which the prefilter holds already.)
fn local_secret(names: &[&str]) -> String {
    let particles = PARTICLES
        .iter()
        .filter(|(of, _)| of.iter().all(|n| names.contains(n)))
        .map(|(names, particles)| format!("(?:{})(?:{})", names.join("|"), particles.join("|")))
        .collect::<Vec<_>>()
        .join("|");
    format!(
        r#"{}|(?:{particles})(?:[ \t]{{0,4}}:)?[ \t]{{0,4}}(?:\\{{0,3}}["'])?[^\s"'\\>]"#,
        named_secret(names, false)
    )
}

/// Whether the name of [`LOCAL_NAMES`] or [`ADDED_NAMES`] `name`, after `before` (the
/// character before it, if any), stands as a name: alone or after a character that is no
/// letter or digit (`db_senha`), after a camelCase word (`dbSenha`), or glued to a word
/// where its language compounds words (`Datenbankpasswort`, `wifilösenord`,
/// `wlansalasana`: told by the names' tails, small or capitalised) or its script has no
/// case (Chinese's, Japanese's and Korean's words stand unspaced: `wifi密码`) — not
/// `resenha`, `desenha`, which hold `senha`; credentials' names alone or after such a
/// character only (`PlainCredentials` names a call).
pub(super) fn local_name_stands(name: &str, before: Option<char>) -> bool {
    const COMPOUNDING: [&str; 7] = [
        "asswort",
        "ennwort",
        "achtwoord",
        "ösenord",
        "assord",
        "gangskode",
        "alasana",
    ];
    let Some(c) = before else {
        return true;
    };
    // (Credentials stand alone or after a separator only: `PlainCredentials(user, …)` is
    // a credential call's name, read as that call.)
    if ["credentials", "creds"]
        .iter()
        .any(|n| name.eq_ignore_ascii_case(n))
    {
        return !c.is_alphanumeric();
    }
    !c.is_alphanumeric()
        || COMPOUNDING.iter().any(|t| name.ends_with(t))
        || !name.starts_with(|n: char| n.is_lowercase() || n.is_uppercase())
        || (name.starts_with(char::is_uppercase) && (c.is_lowercase() || c.is_ascii_digit()))
}

/// The longest of [`LOCAL_NAMES`] and [`ADDED_NAMES`] that `m` starts with (every named
/// field's candidate asks: `password`, `secret` start as `passwort`, `senha` do; most start
/// as none).
pub(super) fn local_name_at(m: &[u8]) -> Option<&'static str> {
    const STARTS: [[u128; 256]; 2] = name_starts(&LOCAL_NAMES);
    const ADDED: [[u128; 256]; 2] = name_starts(&ADDED_NAMES);
    let local = longest_name(m, &LOCAL_NAMES, &STARTS).map(|k| LOCAL_NAMES[k]);
    // (Not where a longer one of [`SECRET_NAMES`] stands: `pw` in ODBC's `PWD=`.)
    let added = longest_name(m, &ADDED_NAMES, &ADDED)
        .map(|k| ADDED_NAMES[k])
        .filter(|a| secret_name_at(m).is_none_or(|n| n.len() <= a.len()));
    local.into_iter().chain(added).max_by_key(|n| n.len())
}

/// For each byte and each of the first two places of `names`' (at most 128, each of two
/// bytes or more), which names have it there: bit `i` for name `i` (see [`longest_name`]).
pub(super) const fn name_starts(names: &[&str]) -> [[u128; 256]; 2] {
    assert!(names.len() <= 128);
    let mut starts = [[0; 256]; 2];
    let mut i = 0;
    while i < names.len() {
        let name = names[i].as_bytes();
        starts[0][name[0] as usize] |= 1 << i;
        starts[1][name[1] as usize] |= 1 << i;
        i += 1;
    }
    starts
}

/// Which of `names` is the longest that `m` starts with, compared only where its first two
/// bytes are a name's (`starts`: [`name_starts`] of `names`): most candidates that start
/// with a name's first letter start with no name's first two.
pub(super) fn longest_name(m: &[u8], names: &[&str], starts: &[[u128; 256]; 2]) -> Option<usize> {
    let mut left = starts[0][usize::from(*m.first()?)] & starts[1][usize::from(*m.get(1)?)];
    let mut longest: Option<usize> = None;
    while left != 0 {
        let k = left.trailing_zeros() as usize;
        left &= left - 1;
        if m.starts_with(names[k].as_bytes())
            && longest.is_none_or(|l| names[k].len() > names[l].len())
        {
            longest = Some(k);
        }
    }
    longest
}

/// How many of a name's first bytes [`SECRET_NAME_BYTES`] reads (the length of most of the
/// shortest names: `secret`, `passwd`, `apiKey`; a shorter one, `pwd`, allows any byte
/// past its end).
const NAME_PREFIX: usize = 6;

/// For each of a name's first [`NAME_PREFIX`] positions and each byte, which of
/// [`SECRET_NAMES`] may have it there (bit `i` for name `i`): the names with that byte there,
/// and those shorter than the position (see [`secret_name_at`]).
static SECRET_NAME_BYTES: [[u128; 256]; NAME_PREFIX] = {
    let mut masks = [[0; 256]; NAME_PREFIX];
    let mut i = 0;
    while i < SECRET_NAMES.len() {
        let b = SECRET_NAMES[i].as_bytes();
        let mut at = 0;
        while at < NAME_PREFIX {
            if at < b.len() {
                masks[at][b[at] as usize] |= 1 << i;
            } else {
                let mut c = 0;
                while c < 256 {
                    masks[at][c] |= 1 << i;
                    c += 1;
                }
            }
            at += 1;
        }
        i += 1;
    }
    masks
};

/// The longest of [`SECRET_NAMES`] that `m` starts with. (Each candidate of a name asks,
/// twice: one table lookup per byte of its first six leaves one name or two, whose rest is
/// compared a byte at a time — no call for so few bytes.)
pub(super) fn secret_name_at(m: &[u8]) -> Option<&'static str> {
    const _: () = assert!(SECRET_NAMES.len() <= 128);
    let mut left = u128::MAX >> (128 - SECRET_NAMES.len());
    for (at, &c) in m.iter().take(NAME_PREFIX).enumerate() {
        left &= SECRET_NAME_BYTES[at][usize::from(c)];
    }
    let mut longest: Option<&'static str> = None;
    while left != 0 {
        let name = SECRET_NAMES[left.trailing_zeros() as usize];
        left &= left - 1;
        let n = name.as_bytes();
        let from = NAME_PREFIX.min(m.len());
        if n.len() <= m.len()
            && n[from.min(n.len())..]
                .iter()
                .zip(&m[from.min(n.len())..])
                .all(|(a, b)| a == b)
            && longest.is_none_or(|l| l.len() < name.len())
        {
            longest = Some(name);
        }
    }
    longest
}

/// What a command-line option's name ends with when its value is a secret (any case, after
/// `--` and any words: `--password`, `--db-password`, `--API-TOKEN`, `--client_secret`):
/// the value is the next argument or follows an `=` (see `validate::command_line_secret`).
/// (The last, [`WORD_OPTIONS`], only as a word of the name: `--pass`, `--db-pw` — not
/// `--bypass`.)
pub(super) const SECRET_OPTIONS: [&str; 19] = [
    "password",
    "passwd",
    "passphrase",
    "secret",
    "token",
    "apikey",
    "api-key",
    "api_key",
    "secret-key",
    "secret_key",
    "private-key",
    "private_key",
    // (curl's `--oauth2-bearer`.)
    "bearer",
    // (The AWS CLI's `secretsmanager create-secret --secret-string …`.)
    "secret-string",
    "secret-binary",
    // (`redis-server --requirepass …`, a replica's `--masterauth …`.)
    "requirepass",
    "masterauth",
    "pass",
    "pw",
];

/// The names of [`SECRET_OPTIONS`] that end an option's name only as a word of it.
pub(super) const WORD_OPTIONS: [&str; 2] = ["pass", "pw"];

/// Commands whose line may carry a password (see `validate::command_password`): the MySQL
/// and MariaDB clients glued to `-p` (`mysql -uroot -pS3cret`: `-p S3cret` prompts and
/// names a database), the MongoDB shell's and tools' `-p` (`mongostat`, `mongotop`,
/// `mongofiles` too), `sshpass -p`, a registry's `login -p` (after docker, podman, nerdctl,
/// oras, buildah, skopeo, helm, oc, az or cf), curl's `-u user:password` (and `-U`,
/// `--user`, `--proxy-user`), `redis-cli -a` (and `redis-benchmark -a`), `sqlcmd -P`,
/// `zip`'s and `unzip`'s `-P` (also last of a cluster, `-rP`), keytool's
/// `-storepass`/`-keypass` (and their `-src…`/`-dest…`), openssl's `-pass…` `pass:…` and
/// `-k`, `smbclient -U user%password`, `lftp -u user,password`, `SQLCMD -P` (as Windows
/// scripts write it), `ssh-keygen`'s old and new passphrases (`-P`, `-N`: a trigger of the
/// commands' pass, see [`other_commands`]), the OpenLDAP tools' `-w` (`ldapsearch`,
/// `ldapmodify`, …: a name of `ldap` and letters in the trigger, one literal for the
/// prefilter), the archivers' `-p` glued to the password (`7z`, `7za`, `7zr`, `rar`,
/// `unrar`; rar's `-hp` too: a `-p` apart from its value prompts for one), and database
/// and cache clients: Valkey's and KeyDB's `-a` (as redis-cli's), Cassandra's `cqlsh -p`,
/// Neo4j's `cypher-shell -p`, `twine upload -p`. (`7z` is written out with what follows it
/// in the trigger: as a two-byte literal, the prefilter's fingerprints shrank to it and
/// every text was read 25% slower.)
pub(super) const PASSWORD_COMMANDS: [&str; 49] = [
    "mysql",
    "MySQL",
    "MYSQL",
    "mariadb",
    "MariaDB",
    "MARIADB",
    "mongosh",
    "mongodump",
    "mongorestore",
    "mongoexport",
    "mongoimport",
    "mongostat",
    "mongotop",
    "mongofiles",
    "mongo",
    "sshpass",
    "curl",
    "login",
    "redis-cli",
    "redis-benchmark",
    "sqlcmd",
    "zip",
    "unzip",
    "keytool",
    "openssl",
    "smbclient",
    "lftp",
    "SQLCMD",
    "ldapsearch",
    "ldapmodify",
    "ldapadd",
    "ldapdelete",
    "ldapwhoami",
    "ldappasswd",
    "ldapcompare",
    "ldapmodrdn",
    "ldapexop",
    "7za",
    "7zr",
    "7z",
    "unrar",
    "rar",
    "ssh-keygen",
    "valkey-cli",
    "valkey-benchmark",
    "keydb-cli",
    "cqlsh",
    "cypher-shell",
    "twine",
];

/// For each byte, which of [`PASSWORD_COMMANDS`] start with it (bit `i` for command `i`):
/// a command's line is read to the next command, asked at every byte (see
/// `validate::next_command`), and each candidate asks which command it is.
pub(super) const COMMAND_STARTS: [u64; 256] = {
    const _: () = assert!(PASSWORD_COMMANDS.len() <= 64);
    let mut starts = [0; 256];
    let mut i = 0;
    while i < PASSWORD_COMMANDS.len() {
        starts[PASSWORD_COMMANDS[i].as_bytes()[0] as usize] |= 1 << i;
        i += 1;
    }
    starts
};

/// For each byte and each of the next five places, which of [`PASSWORD_COMMANDS`] have it
/// there (or end before it): with [`COMMAND_STARTS`], the commands a text may start with,
/// so that most places that start with a command's first letter (`m`, `s`, `l`, …) are
/// turned away without comparing names, and a name that begins others (`mongo`,
/// `mongosh`, `mongostat`, …) is compared alone.
const COMMAND_NEXT: [[u64; 256]; 5] = {
    let mut next = [[0; 256]; 5];
    let mut i = 0;
    while i < PASSWORD_COMMANDS.len() {
        let name = PASSWORD_COMMANDS[i].as_bytes();
        let mut at = 1;
        while at < 6 {
            let mut c = 0;
            while c < 256 {
                if at >= name.len() || name[at] as usize == c {
                    next[at - 1][c] |= 1 << i;
                }
                c += 1;
            }
            at += 1;
        }
        i += 1;
    }
    next
};

/// The commands of [`PASSWORD_COMMANDS`] that `b` starts with, in the list's order.
pub(super) fn commands_at(b: &[u8]) -> impl Iterator<Item = &'static str> + '_ {
    let mut left = b.first().map_or(0, |&c| COMMAND_STARTS[usize::from(c)]);
    // (Past the text's end, any name may still be cut short by it.)
    let next = |k: usize| {
        b.get(k)
            .map_or(u64::MAX, |&c| COMMAND_NEXT[k - 1][usize::from(c)])
    };
    if left != 0 {
        left &= next(1) & next(2);
    }
    // (Further only where names share their first three bytes.)
    if left & left.wrapping_sub(1) != 0 {
        left &= next(3) & next(4) & next(5);
    }
    std::iter::from_fn(move || {
        while left != 0 {
            let c = PASSWORD_COMMANDS[left.trailing_zeros() as usize];
            left &= left - 1;
            if b.starts_with(c.as_bytes()) {
                return Some(c);
            }
        }
        None
    })
}

/// An option named for a secret and its value's first character (see
/// [`command_line_secrets`]), from its `--`: after a blank, a quote, a bracket, a comma or a
/// backtick in the trigger — at the text's start, searched there alone (see
/// `Spec::at_start`: as `(?:^|…)--` the prefilter would look for `--` everywhere).
fn secret_option() -> String {
    let q = r#"(?:\\{0,3}["'])?"#;
    let qq = r#"\\{0,3}["']"#;
    // (A line continued by a shell's `\`, cmd.exe's `^` or PowerShell's backtick after a
    // blank: see `validate::continued`.)
    let sep = format!(
        r"(?:(?:[ \t]*[\\^]\r?\n|[ \t]+`\r?\n)?[ \t]{{1,40}}|[\\^]\r?\n|=|{qq}[ \t\r\n]*,[ \t\r\n]*)"
    );
    let names = SECRET_OPTIONS.join("|");
    format!(r#"--[A-Za-z0-9_-]*(?i:{names}){sep}{q}[^\s"'\\-]"#)
}

/// Credentials on a command line (see `validate::command_line_secret`): an option's value
/// (`--password S3cret`, `--token=…`, `["--api-key", "…"]`), a command's (see
/// [`PASSWORD_COMMANDS`]), a `.netrc` line (`machine h login bob password S3cret`). An
/// option's value follows blanks, a line continuation (`\` and a line break), an `=`, or,
/// in an argument list, a quote and a comma (`"--password", "S3cret"`).
fn command_line_secrets() -> String {
    // (Not the registries' names: `oc`, `az`, `cf` are letters of every other word, which
    // the prefilter would stop at; their `login` is the trigger.)
    let commands = named_command(
        "(?:mysql|MySQL|MYSQL|mariadb|MariaDB|MARIADB)[A-Za-z0-9_.-]*|mongo(?:sh|dump|restore|export|import|stat|top|files)?|sshpass|curl|login|redis-(?:cli|benchmark)|sqlcmd|SQLCMD|zip|unzip|keytool|openssl|smbclient|lftp|ldap[a-z]{3,7}|valkey-(?:cli|benchmark)|keydb-cli|cqlsh|cypher-shell|twine",
    );
    let flag = secret_option();
    format!(
        r#"[ \t\r\n"'`\[(,]{flag}|{B}(?:ConvertTo-SecureString|convertto-securestring)[ \t]|{B}(?:7z(?:[ar]|\.exe|[ar]\.exe)?|(?:un)?rar(?:\.exe)?)[ \t]|{B}(?:login|LOGIN)[ \t]+[^\s]+[ \t\r\n]+(?:account[ \t]+[^\s]+[ \t\r\n]+)?(?:password|passwd)[ \t]|{commands}"#
    )
}

/// An `Authorization` header's credentials in any scheme but the two that have triggers of
/// their own, `Bearer` and `Basic` (see `validate::command_line_secret`): `Token …` (Django
/// REST framework's, GitHub's), `Bot …` (Discord's), `SSWS …` (Okta's), `ApiKey …`
/// (Elastic's), any other.
fn authorization_header() -> String {
    let q = r#"(?:\\{0,3}["'])?"#;
    let qq = r#"\\{0,3}["']"#;
    format!(
        r#"{B}(?:Authorization|authorization|AUTHORIZATION)(?:{q}[ \t]*(?:=>|[:=]|{qq}?[ \t]*,)|{qq}\][ \t]{{0,40}}=)[ \t]*{q}[A-Za-z][A-Za-z0-9_-]{{0,31}}[ \t]{{1,16}}{BEARER}{{4}}"#
    )
}

/// The command of [`PASSWORD_COMMANDS`] the commands' pass looks for, not the command-line
/// pass (`ssh-keygen`): that pass's prefilter held 64 literals of four bytes then (55 since
/// the header names left it), the most it keeps at that length — one more, and all were
/// cut to three (`log`, `key`, `ope`, …), which every text was read 3% more slowly for (in
/// the secrets pass, whose literals are cut to three already, `ssh` cost 1.3%). Its
/// candidates are validated as the command-line pass's are (see
/// `validate::command_password`); each one that fails reads its line, to the next command,
/// once. (No reach passes over a run of them: `bcp`, a name of four bytes with a blank,
/// read 6.6x slower than the bench text in a run, so it is not looked for.)
fn other_commands() -> String {
    named_command(KEYGEN)
}

/// A trigger for a command of [`PASSWORD_COMMANDS`] among `names` (an alternation): at a
/// word's start, the name (`.exe` after it, as Windows writes it), then a blank, a line
/// continuation, a `)`, or the closing quote of a name quoted alone (an argument list's
/// `"curl", …`, or `"curl" -u …`).
fn named_command(names: &str) -> String {
    let qq = r#"\\{0,3}["']"#;
    format!(r"{B}(?:{names})(?:\.exe|\.EXE)?(?:[ \t]|\\\r?\n|{qq}[ \t\r\n]*,|{qq}[ \t]|\))")
}

/// Which of [`positional_commands`] a pattern holds.
#[derive(Clone, Copy, PartialEq)]
enum Positional {
    /// All of them but the added: the exact pattern's.
    All,
    /// Those that are names of the run-token pass too (`AUTH`): triggers of that pass,
    /// beside the names, so that one candidate stands at each.
    Named,
    /// All others but the added: the commands' pass's.
    Unnamed,
    /// Those added since the commands' pass's prefilter filled (see
    /// `validate::ADDED_POSITIONAL`): the headers' pass's, their exact pattern their
    /// trigger.
    Added,
    /// Those added since the headers' pass's filled (see `validate::HERE_POSITIONAL`): the
    /// credential calls' pass's (pass 11), and the exact pattern's.
    Here,
}

/// The commands whose password is a positional argument (see
/// `validate::positional_password`): `htpasswd -b`, `rabbitmqctl add_user`, `sqlplus
/// user/password`, `wpa_passphrase`, `cmdkey /pass:`, `schtasks /rp`, `net user`, `net
/// use`, `security add-generic-password -w`, Redis's `requirepass`, `masterauth`, `AUTH`
/// (also as `HELLO`'s and `MIGRATE`'s option) and `ACL SETUSER`, an ACL file's `user
/// NAME` before a rule (`on`, `off`, `>…`, `~…`, `&…`, `%R~…`, `(…`, `+@…`, `-get`,
/// `reset…`, `all…`, `nopass`: prose's "user alice logged in" is no candidate), `az
/// keyvault secret set --value`, `aws ssm put-parameter --value`; and those added since
/// (see [`Positional::Added`]): `ipmitool -P`, `psexec -p`, `rdesktop -p`, `hydra -p`, the
/// Net-SNMP tools' `-A`, `-X` and `-c`, `jarsigner -storepass`, FreeRDP's `/p:`, `dsadd
/// -pwd`, Redis Sentinel's `auth-pass`, `neo4j-admin set-initial-password`; and those added
/// last (see [`Positional::Here`]): PuTTY's `plink|pscp|psftp -pw`, `mkpasswd`, `openssl
/// passwd`, MinIO's `mc|mcli alias set` (`config host add`, `admin user add`), Oracle's
/// `expdp`, `impdp`, `rman`, `sqlldr`, `dgmgrl` with a logon (`mc`'s flags before its
/// subcommand, `mc --insecure alias set`, with it). The name and a blank, or (but
/// Redis's words and the forms read with their subcommand) its closing quote and a comma,
/// an argument list's — for those added last, a quoted path's closing quote and a blank
/// too; `which` says which of them (see [`Positional`]).
fn positional_commands(which: Positional) -> String {
    use super::validate::{ADDED_POSITIONAL, HERE_POSITIONAL, POSITIONAL_COMMANDS};
    // (`security` and `net` only with the subcommand that takes a password: "security
    // team" and ".net user" are prose; `ACL`, `keyvault`, `ssm` and `neo4j-admin` with
    // theirs; `user` with a rule.)
    let names = |from: usize, to: usize| {
        POSITIONAL_COMMANDS[from..to]
            .iter()
            .filter(|c| {
                ![
                    "security",
                    "net",
                    "acl",
                    "keyvault",
                    "ssm",
                    "neo4j-admin",
                    "openssl",
                    "mc",
                ]
                .iter()
                .any(|n| c.eq_ignore_ascii_case(n))
            })
            .filter(|c| match which {
                Positional::Named => SECRET_NAMES[..RUN_PASS_NAMES].contains(c),
                Positional::Unnamed => !SECRET_NAMES[..RUN_PASS_NAMES].contains(c),
                Positional::All | Positional::Added | Positional::Here => true,
            })
            .copied()
            .collect::<Vec<_>>()
            .join("|")
    };
    // (And quoted, in an argument list: `["ipmitool", "-P", …]`.)
    let listed = r#"|\\{0,3}["'][ \t\r\n]*,"#;
    let plain = |names: String, listed: &str| {
        format!(r"{B}(?:{names})(?:\.exe|\.EXE|\.bat)?(?:[ \t]{listed})")
    };
    if which == Positional::Here {
        // (Their path quoted too, as Windows writes it: `"C:\…\plink.exe" -pw …`.)
        let here = plain(
            names(HERE_POSITIONAL, POSITIONAL_COMMANDS.len()),
            &format!("{listed}|[\"'][ \t]"),
        );
        return format!(
            r"{here}|{B}openssl(?:\.exe)?[ \t]+passwd[ \t]|{B}mc(?:li)?(?:\.exe)?[ \t]+(?:--[a-z][a-z-]{{1,20}}[ \t]+){{0,4}}(?:alias[ \t]+set|config[ \t]+host[ \t]+add|admin[ \t]+user[ \t]+add)[ \t]"
        );
    }
    if which == Positional::Added {
        let added = plain(names(ADDED_POSITIONAL, HERE_POSITIONAL), listed);
        return format!(
            r"{added}|{B}neo4j-admin(?:\.bat)?[ \t]+(?:dbms[ \t]+)?set-initial-password[ \t]"
        );
    }
    if which == Positional::Named {
        return plain(names(0, ADDED_POSITIONAL), "");
    }
    let plain = plain(names(0, ADDED_POSITIONAL), listed);
    format!(
        r"{plain}|{B}security[ \t]+add-(?:generic|internet)-password[ \t]|{B}(?:net|Net|NET)(?:\.exe|\.EXE)?[ \t]+(?:user|use|User|Use|USER|USE)[ \t]|{B}(?:ACL|acl)[ \t]+(?:SETUSER|setuser)[ \t]|{B}keyvault[ \t]+secret[ \t]+set[ \t]|{B}ssm[ \t]+put-parameter[ \t]|{B}(?:user|USER)[ \t]+[^ \t\r\n]{{1,64}}[ \t]+(?:on|off|[>~&%(]|[+-][@a-z]|reset|all(?:keys|commands|channels)|nopass|nocommands|clearselectors)"
    )
}

/// `AUTH` as a client writes it in Redis's protocol (RESP: `*2⏎$4⏎AUTH⏎$10⏎S3cr3tPw99⏎`,
/// line breaks `\r\n`, folded from their escapes), from its bulk string's `$4`: see
/// `validate::resp_auth`. A trigger of the commands' pass.
const RESP_AUTH: &str = r"\$4\r?\n(?:AUTH|auth|Auth)\r?\n\$[0-9]";

/// The commands that write a password into another's standard input (see
/// `validate::stdin_password`): `echo`, `printf`, `yes` and a blank. A trigger of the
/// commands' pass.
fn stdin_writers() -> String {
    let names = super::validate::STDIN_WRITERS.join("|");
    format!(r"{B}(?:{names})[ \t]")
}

/// What gives a password to a command's standard input in a here-string or a
/// here-document (see `validate::stdin_password`): a here-string's `<<<` and the character
/// after it (no `<`: a run of them is one candidate); a here-document's `<<` (or `<<-`),
/// blanks, a quote and its delimiter's first letter (the validator turns away one after a
/// `<`, inside a here-string's `<<<a`). A pass of their own: their two-byte literal `<<`
/// beside any other pass's literals made its prefilter match on two bytes, and a class
/// before it (`[^<]<<`) left the prefilter no literal at all — either read every text
/// several times as slowly.
fn here_strings() -> String {
    r#"<<<[^<]|<<-?[ \t]*(?:\\{0,3}["']|\\)?[A-Za-z_]"#.to_owned()
}

/// After a failed here-string at `s` (`<<<a`): the `<<` right after its first `<` opens no
/// here-document (the validator turns away one after a `<`), nor another here-string
/// (the fourth character is no `<`): the pass resumes past it, so a run of here-strings is
/// one candidate each.
pub(super) fn here_string_reach(
    text: &str,
    s: usize,
    _: &mut dyn FnMut() -> Option<usize>,
    _: &Kind,
) -> Option<usize> {
    text.as_bytes()[s..].starts_with(b"<<<").then_some(s + 2)
}

/// Whether `m` starts with a trigger of the credential calls' pass, which is its exact
/// match: a credential call's (see [`credential_calls`]) or a tool's (see
/// [`Positional::Here`]).
fn call_or_tool_exactly(m: &[u8]) -> bool {
    credential_call_at(m).is_some() || names_a_command(m)
}

/// The command [`other_commands`] looks for.
const KEYGEN: &str = "ssh-keygen";

/// Options written with one dash whose value is a secret, as Go's flags, Java tools, NuGet
/// and PowerShell write them (`-password S3cret`, `-token=…`, `nuget push -ApiKey …`): the
/// name whole, in the cases people write it (see `validate::single_dash_option`). A
/// trigger of the commands' pass, whose prefilter holds 64 literals of four bytes, the
/// most it keeps so: one more (x11vnc's `-storepasswd`) cut all to three, and the bench
/// text read 1–2% more slowly; in the command-line pass's, they would cut all to three
/// (see [`other_commands`]).
pub(super) const SINGLE_DASH_OPTIONS: [&str; 22] = [
    "password",
    "Password",
    "PASSWORD",
    "passwd",
    "passphrase",
    "Passphrase",
    "token",
    "Token",
    "TOKEN",
    "apikey",
    "apiKey",
    "ApiKey",
    "APIKEY",
    "api-key",
    "api_key",
    "secret",
    "Secret",
    "SECRET",
    // (Azure's PowerShell: `Connect-AzAccount -AccessToken …`, `-ClientSecret …`.)
    "AccessToken",
    "accessToken",
    "ClientSecret",
    "clientSecret",
];

/// An option of [`SINGLE_DASH_OPTIONS`], its separator (blanks, `=`, or in an argument list
/// a quote and a comma or blanks: `args=("-password" "…")`) and its value's first character.
fn single_dash_options() -> String {
    let q = r#"(?:\\{0,3}["'])?"#;
    let qq = r#"\\{0,3}["']"#;
    let names = SINGLE_DASH_OPTIONS.join("|");
    format!(
        r#"-(?:{names})(?:[ \t]{{1,40}}|=|{qq}[ \t\r\n]*,[ \t\r\n]*|{qq}[ \t]{{1,40}}){q}[^\s"'\\-]"#
    )
}

/// The SQL that sets a user's password and names no field: `CREATE USER bob IDENTIFIED BY
/// 'S3cret9'` (MySQL, Oracle, MariaDB; `IDENTIFIED WITH caching_sha2_password BY '…'`; the
/// keywords on lines of their own), the keywords' first letters read by `validate_secret`.
/// In capitals the value may be bare (Oracle's `IDENTIFIED BY S3cret9;`); in small letters
/// or capitalised only a quoted one is read, as "identified by the team" is prose.
fn sql_passwords() -> String {
    let qq = r#"\\{0,3}["']"#;
    let with = |w: &str| format!(r"(?:[ \t\r\n]+{w}[ \t\r\n]+[A-Za-z0-9_]{{1,40}})?[ \t\r\n]+");
    format!(
        r#"{B}IDENTIFIED{}BY[ \t\r\n]+(?:{qq})?[^\s"'\\>;]|{B}(?:IDENTIFIED|Identified|identified){}(?:BY|By|by)[ \t\r\n]+{qq}[^\s"'\\>]"#,
        with("WITH"),
        with("(?:WITH|With|with)"),
    )
}

/// MySQL's `SET PASSWORD FOR account = '…'`: the keywords, on lines of their own too (the
/// account, the `=` and the value are read by the validator: a counted class here made
/// the pass's automaton too large to build whole). (`SET PASSWORD = '…'` and `… =
/// PASSWORD('…')` are a named field's.) A trigger of the prefixed tokens' pass: the
/// commands' pass's prefilter holds no more literals.
fn sql_set_password() -> String {
    format!(r"{B}(?:SET|set)[ \t\r\n]+(?:PASSWORD|password)[ \t\r\n]+(?:FOR|for)[ \t\r\n]")
}

/// Calls that take a password as a later argument than the first, by a name no secret's
/// holds (see `validate::password_argument`, which tells which): Python's `smtplib`,
/// `imaplib` and `ftplib` clients' `.login(user, password)` (PHP's `->login`, .NET's
/// `.Login`, `.Authenticate`), MongoDB's older
/// `db.authenticate(user, password)`, python-ldap's `.simple_bind_s(dn, password)`,
/// Neo4j's `dbms.security.createUser(user, password, …)`, .NET's `new
/// NetworkCredential(user, password)`, Java's `new PasswordAuthentication(user, …)` and
/// Apache HttpClient's `new UsernamePasswordCredentials(user, password)`. Their trigger:
/// the name and the `(` (a blank between too), in a pass of their own with the tools of
/// [`Positional::Here`] (see `specs`).
pub(super) const CREDENTIAL_CALLS: [&str; 15] = [
    ".login",
    // (PHP's, phpseclib's `$sftp->login('user', …)`.)
    "->login",
    ".authenticate",
    // (.NET's MailKit and FluentFTP: `client.Authenticate(user, …)`, `ftp.Login`.)
    ".Login",
    ".Authenticate",
    ".AuthenticateAsync",
    ".simple_bind_s",
    ".simple_bind",
    // (Not any object's `.createUser`: MongoDB's takes a document, and a `.c` would make
    // the pass look for it again in every address's `.com`, see `Pass::may_start_in`.)
    "dbms.security.createUser",
    "NetworkCredential",
    "UsernamePasswordCredentials",
    "PasswordAuthentication",
    // (Spring Security's `new UsernamePasswordAuthenticationToken(user, password)`, pika's
    // `pika.PlainCredentials(user, password)` (RabbitMQ), the Cassandra driver's
    // `PlainTextAuthProvider(user, password)`: the prefilter's literals of the names
    // above hold them.)
    "UsernamePasswordAuthenticationToken",
    "PlainCredentials",
    "PlainTextAuthProvider",
];

/// Calls whose third argument is the password, after a host's (or a connection string's,
/// a database's, an identity's) and an account's: Python's `ftplib.FTP(host, user,
/// password)` and `FTP_TLS`, MySQLdb's `MySQLdb.connect(host, user, passwd, db)`, Java's
/// `DriverManager.getConnection(url, user, password)`, PHP's `new PDO(dsn, user,
/// password)`, `mysqli_connect(host, user, password, db)` and `new mysqli(…)`, Node's `new
/// Sequelize(database, user, password, options)`, Go's `smtp.PlainAuth(identity, user,
/// password, host)` (its identity most often `""`, which the glued name `Auth`'s trigger,
/// as `HTTPBasicAuth`'s, does not take). A name of its own only (`SFTP(` is none: see
/// `validate::password_argument`); in the credential calls' trigger. (The pass's
/// prefilter holds 32 literals with them, the most its faster kind takes: PyMySQL's
/// `connect`, PHP's `ftp_login` and `ldap_bind` would each add one.)
pub(super) const THIRD_ARGUMENT_CALLS: [&str; 9] = [
    "FTP",
    "FTP_TLS",
    "MySQLdb.connect",
    "getConnection",
    "PDO",
    "mysqli_connect",
    "mysqli",
    "Sequelize",
    "PlainAuth",
];

/// Calls whose third argument is the password, read as [`THIRD_ARGUMENT_CALLS`]' are but
/// found in the fourteenth pass (see [`ADDED_NAMES`]; the credential calls' prefilter holds
/// no more): MongoDB's Java driver's `MongoCredential.createCredential(user, database,
/// password)` and its mechanisms' (`createScramSha256Credential`, `createPlainCredential`).
pub(super) const ADDED_THIRD_ARGUMENT_CALLS: [&str; 4] = [
    "createCredential",
    "createScramSha256Credential",
    "createScramSha1Credential",
    "createPlainCredential",
];

/// Calls whose fifth argument is the password, after a pool's configuration, a host, a
/// port and a timeout — or the sixth, after an account's, where that one is a string too:
/// Jedis's `new JedisPool(config, host, port, timeout, password)` (`…, timeout, "app",
/// password)`; not the database's number or the client's name after the password), and
/// its other clients', `JedisPooled(…)` alike, `JedisSentinelPool(master, sentinels,
/// config, timeout, password)`, `JedisCluster(nodes, timeout, timeout, attempts, password,
/// config)`. Found in the fourteenth pass, as [`ADDED_THIRD_ARGUMENT_CALLS`] are.
pub(super) const FIFTH_ARGUMENT_CALLS: [&str; 4] = [
    "JedisPool",
    "JedisPooled",
    "JedisSentinelPool",
    "JedisCluster",
];

/// The names a wallet's recovery words are given under (see `validate::seed_phrase`):
/// BIP-39's mnemonic, its seed (Trezor's "recovery seed", Electrum's "seed"), its seed
/// phrase and recovery phrase (MetaMask's "Secret Recovery Phrase"), seed words, recovery
/// words, backup phrase, wallet words — each name's first word, as labels, fields,
/// variables and prose write it; the validator reads the rest, which `wallet`, `recovery`
/// and `backup` need (`seed_phrase`, `seedPhrase`, `Seed-Phrase`, `recovery words`). In a
/// pass of their own (see `fifteenth_pass_trigger`): in another pass's prefilter they would
/// take it past the literals of its faster kind. Not `passphrase` (Algorand's name for its
/// words): its `pass` starts every password's name, and every scan read 2% slower with it.
pub(super) const SEED_NAMES: [&str; 15] = [
    "mnemonic", "Mnemonic", "MNEMONIC", "seed", "Seed", "SEED", "recovery", "Recovery", "RECOVERY",
    "backup", "Backup", "BACKUP", "wallet", "Wallet", "WALLET",
];

/// The prefixes of a wallet's extended private keys (BIP-32, SLIP-132): mainnet's `xprv`,
/// `yprv`, `zprv`, `Yprv`, `Zprv`, testnet's `tprv`, `uprv`, `vprv`, `Uprv`, `Vprv` (see
/// `validate::extended_private_key`).
pub(super) const EXTENDED_KEY_PREFIXES: [&str; 10] = [
    "xprv", "yprv", "zprv", "Yprv", "Zprv", "tprv", "uprv", "vprv", "Uprv", "Vprv",
];

/// The names before a wallet's private key in Wallet Import Format (`"wif": "5Hue…"`,
/// `WIF: Kw…`, `from_wif("…")`, `ECPair.fromWIF(…)`, `bitcoin-cli importprivkey …`,
/// `"privkey":`, `wifKey`, `"privateKeyWif":`, `wif-key:`; see `validate::wif_key`) —
/// `wif` and `WIF` with the mark after them: `wif` alone stops the prefilter at every
/// `wifi` (a run of `wifi password ` read 8% slower), and `WIF`, three bytes, made the
/// whole pass's prefilter read the bench text 3% slower.
pub(super) const WIF_NAMES: [&str; 28] = [
    "wif\"", "wif:", "wif=", "wif ", "wif(", "wif_", "wif.", "wif\t", "wif-", "wifKey", "Wif:",
    "Wif\"", "WIF:", "WIF\"", "WIF'", "WIF(", "WIF)", "WIF_", "WIF=", "WIF ", "WIF\t", "WIF,",
    "WIF>", "privkey", "priv_key", "PrivKey", "privKey", "PRIVKEY",
];

/// `-----BEGIN` in base64, as a private key's PEM block encoded again starts (see
/// `validate::encoded_private_key`).
pub(super) const ENCODED_PEM: &str = "LS0tLS1CRUdJTi";

/// What opens a Kubernetes Secret's values (see `validate::kube_secret`): its `data`
/// and `stringData` blocks' names as `kubectl get secret -o yaml` prints them (before the
/// kind), the kind before them as people write a manifest, and `-o json`'s `"data"` and
/// `"stringData"` objects and kind (compact too; `last-applied-configuration`'s).
pub(super) const KUBE_SECRET: [&str; 7] = [
    "data:",
    "stringData:",
    "kind: Secret",
    "\"data\":",
    "\"kind\": \"Secret\"",
    "\"stringData\":",
    "\"kind\":\"Secret\"",
];

/// The subcommands of secret stores' command-line tools that set values under keys of any
/// name (see `validate::store_values`), among the seventeenth pass's literals (see
/// [`seventeenth_pass_trigger`]). `secrets set`
/// (Supabase's, Fly's, Doppler's, Infisical's; .NET's `user-secrets set`), `secret set`
/// (GitHub's `gh secret set … --body`), `secret generic` (`kubectl create secret generic
/// … --from-literal=…`), `kv put` and `kv patch` (Vault's), `config set` (Pulumi's, with
/// `--secret`), `encrypt_string` (`ansible-vault`'s), `secret:create` and `env:create`
/// (Expo's `eas`, the latter with a secret's visibility).
pub(super) const STORE_COMMANDS: [&str; 9] = [
    "secrets set",
    "secret set",
    "secret generic",
    "kv put",
    "kv patch",
    "config set",
    "encrypt_string",
    "secret:create",
    "env:create",
];

/// The names two-factor sign-in's setup gives what it shows once (see
/// `validate::setup_secret`): a one-time password's key as a service shows it to be typed
/// in (`Setup key: JBSW Y3DP …`, `your setup key is …`; Google Authenticator's `Your key`,
/// `enter this code into your authentication app:`, `Manual entry key:`, Discord's `2FA
/// Key (Manual entry)`) and the emergency codes Google's PAM module prints (`Your
/// emergency scratch codes are:`). Among the seventeenth pass's literals (see
/// [`seventeenth_pass_trigger`]).
pub(super) const SETUP_NAMES: [&str; 15] = [
    "setup key",
    "Setup key",
    "Setup Key",
    "SETUP KEY",
    "Your key",
    "your key",
    "this key",
    "This key",
    "this code",
    "entry key",
    "entry code",
    "2FA key",
    "2FA Key",
    "scratch codes",
    "Scratch codes",
];

/// The commands that log in to a mailbox or an FTP server as clients' debug output prints
/// them (see `validate::mail_login`): IMAP's `AUTHENTICATE` (a SASL exchange, as SMTP's
/// `AUTH`) and `LOGIN` (after its tag: `a001 LOGIN bob hunter22`; ` login ` as people type
/// it into `openssl s_client`), POP3's and FTP's `PASS` (after `USER`).
pub(super) const MAIL_LOGINS: [&str; 4] = ["AUTHENTICATE ", "LOGIN ", " login ", "PASS "];

/// Kustomize's generator of Secrets, whose `literals:` are their values (see
/// `validate::generated_secrets`).
pub(super) const SECRET_GENERATOR: &str = "secretGenerator:";

/// A Kubernetes Secret's kind quoted, as a manifest written by hand may give it (see
/// `validate::kube_secret`; [`KUBE_SECRET`] holds it bare): among the seventeenth pass's
/// literals, the sixteenth's prefilter being full.
pub(super) const KUBE_QUOTED_KINDS: [&str; 2] = ["kind: \"Secret\"", "kind: 'Secret'"];

/// The trigger of the seventeenth pass: [`STORE_COMMANDS`], [`SETUP_NAMES`],
/// [`MAIL_LOGINS`], [`SECRET_GENERATOR`] and [`KUBE_QUOTED_KINDS`], 31 literals (see
/// `validate::seventeenth_pass_secret`; past 32, its prefilter would read 16 bytes a step).
fn seventeenth_pass_trigger() -> String {
    literals(&[
        &STORE_COMMANDS,
        &SETUP_NAMES,
        &MAIL_LOGINS,
        &[SECRET_GENERATOR],
        &KUBE_QUOTED_KINDS,
    ])
}

/// The names prose and code give a symmetric key, a master key or a signing key where no
/// other name of a secret stands (`encryption key: 3f9a…`, `the master key is …`, `AES-256
/// key: …`, `aes_key = '…'`, `FERNET_KEY=…`; `encryption_key` and `masterKey` are secrets'
/// names already): the value only a key's hex or base64 (see
/// `validate::crypto_key_value`). Among the eighteenth pass's literals (see
/// [`eighteenth_pass_trigger`]).
pub(super) const CRYPTO_KEY_NAMES: [&str; 22] = [
    "encryption key",
    "Encryption key",
    "Encryption Key",
    "ENCRYPTION KEY",
    "decryption key",
    "Decryption key",
    "master key",
    "Master key",
    "Master Key",
    "signing key",
    "Signing key",
    "Signing Key",
    "AES key",
    "AES-256 key",
    "AES-128 key",
    "AES256 key",
    "aes_key",
    "AES_KEY",
    "aesKey",
    "Fernet key",
    "fernet_key",
    "FERNET_KEY",
];

/// The calls that take a wallet's private key as their first argument, as scripts write
/// it in a string (see `validate::wallet_call_key`): ethers' `new Wallet('0x…')`,
/// eth-account's `Account.from_key('0x…')`, viem's and web3.js's
/// `privateKeyToAccount('0x…')`, ethereumjs-wallet's
/// `Wallet.fromPrivateKey(Buffer.from('…', 'hex'))`. Among the eighteenth pass's literals.
pub(super) const WALLET_CALLS: [&str; 4] = [
    "Wallet(",
    "from_key(",
    "privateKeyToAccount(",
    "fromPrivateKey(",
];

/// More names of a one-time password's key, as [`SETUP_NAMES`] (see
/// `validate::setup_secret`): setup screens' capitalised labels (`Your Key`, `Manual Entry
/// Key`) and `authenticator key`. Among the eighteenth pass's literals, the seventeenth's
/// being full.
pub(super) const MORE_SETUP_NAMES: [&str; 6] = [
    "Your Key",
    "This Code",
    "Entry Key",
    "Entry Code",
    "authenticator key",
    "Authenticator key",
];

/// The trigger of the eighteenth pass: [`CRYPTO_KEY_NAMES`], [`WALLET_CALLS`] and
/// [`MORE_SETUP_NAMES`], 32 literals (see `validate::eighteenth_pass_secret`): the
/// seventeenth pass holds 31, and past 32 a prefilter reads 16 bytes a step.
fn eighteenth_pass_trigger() -> String {
    literals(&[&CRYPTO_KEY_NAMES, &WALLET_CALLS, &MORE_SETUP_NAMES])
}

/// What a command that prints a secret is known by on its command line, its output on the
/// next line (see `validate::printed_secret`, which tells each apart): HashiCorp Vault's
/// `vault kv get -field=password …`, AWS's `aws configure get aws_secret_access_key` and
/// `aws ecr get-login-password`, Google Cloud's `gcloud secrets versions access`, Azure's
/// `az keyvault secret show … --query value -o tsv`, macOS's `security
/// find-generic-password … -w`, `pass show …`, 1Password's `op read …`, Docker's `cat
/// /run/secrets/…`, a Kubernetes Secret's value decoded (`kubectl get secret … | base64
/// -d`), libsecret's `secret-tool lookup`, Heroku's `heroku config:get …`, `printenv …` and
/// `echo $…` of a secret's variable, Doppler's `doppler secrets get … --plain`, Consul's
/// `consul kv get …`, Bitwarden's `bw get password …`. The twenty-first pass's trigger: 22
/// literals, the prefilter's faster kind.
pub(super) const SECRET_PRINTERS: [&str; 22] = [
    "-field=",
    "configure get ",
    "get-login-password",
    "secrets versions access",
    "keyvault secret show",
    "find-generic-password",
    "find-internet-password",
    "pass show ",
    "op read ",
    "/run/secrets/",
    "base64 -d",
    "base64 --decode",
    "base64 -D",
    "secret-tool lookup",
    "config:get ",
    "printenv ",
    "echo $",
    "echo \"$",
    "echo ${",
    "secrets get ",
    "consul kv get ",
    "bw get password ",
];

/// The trigger of the fifteenth pass: [`SEED_NAMES`], [`EXTENDED_KEY_PREFIXES`], a Wi-Fi
/// QR code's `WIFI:` and [`KUBE_SECRET`]'s first five — 31 literals, the prefilter's
/// faster kind (see `validate::wallet_secret`). With `WIFI:` among them, the command-line
/// families read 2–4% slower (`clients_without_passwords`' unit, interleaved with the pass
/// without it); with all of this release's literals in this one pass (62) the bench
/// text read 5% slower than on the last release (past 32 literals the prefilter reads 16
/// bytes a step, not 32), with the rest in the sixteenth (see [`sixteenth_pass_trigger`])
/// 2–3%.
fn fifteenth_pass_trigger() -> String {
    literals(&[
        &SEED_NAMES,
        &EXTENDED_KEY_PREFIXES,
        &["WIFI:"],
        &KUBE_SECRET[..5],
    ])
}

/// The trigger of the sixteenth pass: [`WIF_NAMES`], [`ENCODED_PEM`] and
/// [`KUBE_SECRET`]'s last two — 31 literals (see `validate::key_secret`).
fn sixteenth_pass_trigger() -> String {
    literals(&[&WIF_NAMES, &[ENCODED_PEM], &KUBE_SECRET[5..]])
}

/// `lists`' literals as one alternation, each escaped.
fn literals(lists: &[&[&str]]) -> String {
    lists
        .concat()
        .iter()
        .map(|literal| regex::escape(literal))
        .collect::<Vec<_>>()
        .join("|")
}

/// The trigger of the fourteenth pass: a field named by one of [`ADDED_NAMES`] (see
/// [`local_secret`]), or a call of [`ADDED_THIRD_ARGUMENT_CALLS`] or
/// [`FIFTH_ARGUMENT_CALLS`], its name and its `(`.
fn added_secret() -> String {
    format!(
        r"{}|(?:{}|{})\(",
        local_secret(&ADDED_NAMES),
        ADDED_THIRD_ARGUMENT_CALLS.join("|"),
        FIFTH_ARGUMENT_CALLS.join("|")
    )
}

/// The trigger of [`CREDENTIAL_CALLS`] and [`THIRD_ARGUMENT_CALLS`]: a name and its `(`
/// (PowerShell's constructor after a type's name too,
/// `[System.Net.NetworkCredential]::new(`).
fn credential_calls() -> String {
    let names = |names: &[&str]| {
        let names: Vec<String> = names.iter().map(|n| n.replace('.', r"\.")).collect();
        names.join("|")
    };
    // (Blanks before the `(` but after `FTP` and `PDO`: after those each blank was a
    // literal of the pass's prefilter, which held 33 so, past the 32 of its faster kind.)
    let (short, long): (Vec<&str>, Vec<&str>) = THIRD_ARGUMENT_CALLS
        .iter()
        .partition(|n| ["FTP", "PDO"].contains(n));
    format!(
        r"(?:{}|{})(?:\]::(?i:new))?[ \t]{{0,3}}\(|(?:{})\(",
        names(&CREDENTIAL_CALLS),
        names(&long),
        names(&short)
    )
}

/// Whether `m` is a trigger of [`credential_calls`]: where its name ends.
pub(super) fn credential_call_at(m: &[u8]) -> Option<usize> {
    let name = m.strip_suffix(b"(")?.trim_ascii_end();
    CREDENTIAL_CALLS
        .iter()
        .chain(&THIRD_ARGUMENT_CALLS)
        .chain(&ADDED_THIRD_ARGUMENT_CALLS)
        .chain(&FIFTH_ARGUMENT_CALLS)
        .any(|n| super::validate::call_name(name) == n.as_bytes())
        .then_some(name.len())
}

/// Whether `m` starts as [`sql_set_password`] does.
pub(super) fn set_password_at(m: &[u8]) -> bool {
    let keyword = |m: &[u8], k: &[u8]| m.get(..k.len()).is_some_and(|w| w.eq_ignore_ascii_case(k));
    keyword(m, b"set")
        && m.get(3).is_some_and(u8::is_ascii_whitespace)
        && keyword(m[4..].trim_ascii_start(), b"password")
}

/// Whether `m` starts as [`sql_passwords`] does.
pub(super) fn identified_at(m: &[u8]) -> bool {
    m.starts_with(b"IDENTIFIED") || m.starts_with(b"identified") || m.starts_with(b"Identified")
}

/// Whether `m` starts with a name whose trigger is its exact match in a `named_exact`
/// kind: a secret's name, the command of [`other_commands`] or of
/// [`positional_commands`], a writer of [`stdin_writers`], a here-string of
/// [`here_strings`], or [`sql_passwords`]'s keyword.
pub(super) fn named_exactly(m: &[u8]) -> bool {
    secret_name_at(m).is_some() || names_a_command(m)
}

/// Whether `m` starts with a command's name, a writer, a here-string or SQL's keyword of
/// [`named_exactly`] (not a secret's name).
fn names_a_command(m: &[u8]) -> bool {
    m.starts_with(KEYGEN.as_bytes())
        || super::validate::positional_at(m).is_some()
        || super::validate::STDIN_WRITERS
            .iter()
            .any(|c| m.starts_with(c.as_bytes()))
        || m.starts_with(b"<<")
        || identified_at(m)
}

/// [`named_exactly`] for the command words' pass, which holds no secret's name: not where
/// one starts too (`AUTH` is Redis's command and a name), which the exact pattern reads as
/// the name (its alternatives come first there) and the pass as the command.
pub(super) fn command_named_exactly(m: &[u8]) -> bool {
    names_a_command(m) && secret_name_at(m).is_none()
}

/// The names of [`SECRET_NAMES`] that are common words too: each names a secret only as a
/// field's whole name or its last part after a `.`, a `-` or a `_` (`smtp.pass`, npm's
/// `_auth`) — never as the end of another word (`bypass`, `oauth`, `pomdp`) — and heads no
/// table's column (a test's `Pass`, a method's `Auth`).
pub(super) const WORD_NAMES: [&str; 7] = ["pass", "PASS", "auth", "Auth", "AUTH", "mdp", "Mdp"];

/// How many of [`SECRET_NAMES`] the run-token pass looks for: the rest (header names, added
/// since) are looked for in a pass of their own, the headers' pass, whose prefilter
/// then stays the faster kind with fewer literals (see `specs`).
pub(super) const RUN_PASS_NAMES: usize = 104;

/// A field named by one of `names`, its separator and the value's first character. The
/// separator is
/// - `=`, `:`, `=>` or `:=`, the name and the value each quoted or not, JSON-escaped up to
///   three times; `||=` or `??=`, a default assigned (`password ||= '…'`);
/// - the name as an index: `os.environ["DB_PASSWORD"] = "…"`, `headers[ "X-API-Key" ] = "…"`,
///   Ruby's `params[:password] = "…"` and `ENV["API_KEY"] ||= "…"`;
/// - a pair's next field, as Kubernetes, ECS, CodeBuild, Terraform and gcloud write
///   environment variables: `- name: DB_PASSWORD` and `value: …` on the next line (a blank
///   line or one other field between them), `{"name": "DB_PASSWORD", "type": "PLAINTEXT",
///   "value": …}`, `{ name = "DB_PASSWORD", value = … }`, `name=DB_PASSWORD,value=…`;
/// - blanks or a line break before a quoted value, as SQL sets a role's password
///   (`ALTER ROLE app WITH LOGIN PASSWORD 'S3cret9'`, `PASSWORD "…"`) and Chef a
///   resource's;
/// - for field names (not `comma`), blanks before any value, the name quoted or not, where
///   a command sets the name (`setx API_KEY …`, fish's `set -x`, Dockerfile's `ENV`,
///   `npm config set`, `git config`, `gh secret set … --body`: see
///   `validate::blank_setter`);
/// - for field names (not `comma`), a comma between the two quoted, where a setter is
///   called (`define('DB_PASSWORD', '…')`, `os.Setenv("API_KEY", "…")`: see
///   `validate::setter_call`; lists of names are no setter's: `("username", "password",
///   "email1")`);
/// - with `comma`, a comma between the two quoted, as code passes a header:
///   `.header("X-API-Key", "…")`;
/// - for field names, an XML element's `>` (`<password>…</password>`), an attribute pair
///   (`<add key="ApiKey" value="…"/>`), a call's `(` (`set_password('…')`), a YAML block
///   scalar's `|` or `>` and a line break (`password: |`, the value indented below);
/// - for field names, a lookup's fallback operator and the string's quote after the name,
///   its quote, a call's `)` or an index's `]`: `process.env.DB_PASSWORD || "…"`,
///   `getenv("DB_PASSWORD") ?: "…"`, `os.environ.get("DB_PASSWORD") or "…"`, Rust's
///   `env::var("DB_PASSWORD").unwrap_or("…")`.
///
/// (A literal block scalar's `|` is read as the value: the validator reads the block.)
///
/// A value may open with a string's prefix: Python's (`f"…"`, `r'…'`, `b"…"`), SQL Server's
/// `N'…'`, C#'s `@"…"` and `$"…"`, C++'s `L"…"`, bash's `$'…'`.
fn named_secret(names: &[&str], comma: bool) -> String {
    let q = r#"(?:\\{0,3}["'])?"#;
    let qq = r#"\\{0,3}["']"#;
    // A line break, as written or JSON-escaped.
    let nl = r"(?:\r?\n|(?:\\){1,3}(?:r(?:\\){1,3})?n)";
    let names = names.join("|");
    let value = format!(r"(?:[rbfuRBFUNL@$]{{1,2}}{qq}|{q})");
    // (One other field between a pair's two holds a word, `"type": "PLAINTEXT",`: a wider
    // value, or a comment, and the fully built automaton of the pass grew past memory.)
    let field = format!(
        r"(?:[ \t]{{0,40}}{q}[A-Za-z_]{{1,24}}{q}:[ \t]{{0,4}}{q}[A-Za-z0-9_]{{0,24}}{q}(?:,[ \t]{{0,40}}{nl}?|{nl}))?"
    );
    // Markdown and HTML (not with `comma`): the name emphasised or a code span, the
    // separator inside or after it (`**Password:**`, `__Password__:`, `` `DB_PASSWORD`:
    // ``; HTML's `<b>Password:</b>`), or a table's next cell (`| **Password** | …`, `|
    // DB_PASSWORD | …`: see `validate::table_cells`); an HTML table's next cell
    // (`<td>DB_PASSWORD</td><td>…`, `<th>Password</th>⏎  <td class="v">…`, a `<b>` or
    // `<code>` inside either, a colon before the cell's end) or a definition list's
    // (`<dt>Password</dt><dd>…`). The HTML forms come first: a colon, the first of the
    // others, would be taken with the tag's `<` as the value's first character.
    let emphasis = r"(?:\*{1,3}|_{1,2}|`|</(?:b|strong|em)>)";
    let inline = "(?:code|b|strong|em|span)";
    let markup = [
        format!(
            r"(?::?</{inline}>)?:?</(?:[Tt][DdHh]|dt)>(?:[ \t\r\n]|\\{{1,3}}[nr]){{0,64}}<(?:[Tt][DdHh]|dd)(?:[ \t][^<>\r\n]{{0,80}})?>(?:<{inline}>)?(?:[ \t]{{0,40}}\r?\n)?"
        ),
        r":</(?:b|strong|em)>".to_owned(),
    ];
    let mut separators = match comma {
        false => markup.to_vec(),
        true => Vec::new(),
    };
    separators.extend([
        format!(r"{q}[ \t]{{0,40}}(?:=>|:=|\|\|=|\?\?=|[:=])"),
        format!(r"{q}[ \t]{{0,8}}\][ \t]{{0,40}}(?:\|\||\?\?)?="),
        format!(
            r"{q}[ \t]{{0,40}}(?:,[ \t]{{0,40}}{nl}?|{nl})(?:[ \t]{{0,40}}{nl})?{field}[ \t]{{0,40}}{q}[Vv]alue{q}[ \t]{{0,40}}[:=]"
        ),
    ]);
    if !comma {
        separators.push(format!(r"{qq}[ \t]{{0,4}},(?:[ \t]{{0,4}}\r?\n)?"));
        // An XML element (`<password>…</password>`, `<wsse:Password >`, its content on a
        // line of its own; named by its `key` or `name` attribute, `<entry
        // key="db.password">`; a `<name>` element's sibling `<value>`, Hadoop's; one with
        // attributes on its tag is the blanks' candidate, or with its next attribute on
        // the next line the line break's: see `validate::element_tag`),
        // an attribute pair (`<add key="ApiKey" value="…"/>`,
        // `<property name="password" value="…"/>`), a call with the value quoted
        // (`user.set_password('…')`, MySQL's `PASSWORD('…')`), a folded YAML block scalar
        // (`password: >-`, the value indented on the next line; a
        // literal one's `|` is read as the value, and the validator reads the block).
        separators.push(format!(r"{q}[ \t]{{0,4}}>(?:[ \t]{{0,40}}\r?\n)?"));
        separators
            .push(r"</(?:[Nn]ame|NAME|param-name)>(?:[ \t\r\n]|\\{1,3}[nr]){0,16}<".to_owned());
        separators.push(format!(
            r"{q}[ \t]{{0,4}}(?:\r?\n|\\{{1,3}}n)[ \t]{{0,16}}(?:>(?:[ \t]{{0,16}}\r?\n)?|[A-Za-z_][-A-Za-z0-9_:.]{{0,24}}=)"
        ));
        separators.push(format!(r"{qq}[ \t]{{1,40}}[Vv]alue[ \t]{{0,4}}="));
        // (A Terraform variable's default, the variable named for a secret: `variable
        // "db_password" {⏎  type = string⏎  default = "…"`, four of its other arguments
        // before it at most (`description`, `type`, `sensitive`, `nullable`; a
        // description with escaped quotes, review 86); or on the block's one line, `{
        // default = "…" }`.)
        separators.push(format!(
            r#"{qq}[ \t]{{0,4}}\{{(?:[ \t]{{0,8}}\r?\n(?:[ \t]{{0,16}}[a-z_]{{1,16}}[ \t]{{0,16}}=[ \t]{{0,4}}(?:"[^\r\n]{{0,64}}"|[A-Za-z_.()]{{1,24}})[ \t]{{0,4}}\r?\n){{0,4}})?[ \t]{{0,16}}default[ \t]{{0,16}}="#
        ));
        // (A call's arguments may start on the next line: `set_password(⏎    "svc",`.)
        separators.push(r"\((?:[ \t]{0,8}\r?\n[ \t]{0,16})?".to_owned());
        // (A lookup of the name and its fallback string, whatever holds it: `pw =
        // process.env.DB_PASSWORD || "…"`, `AppSettings["DbPassword"] ?? "…"`, Kotlin's and
        // PHP's `getenv("DB_PASSWORD") ?: "…"`, Python's `os.environ.get("DB_PASSWORD") or
        // "…"` (after a call or an index only: `the password or 'whatever' you chose` is
        // prose), Rust's `env::var("DB_PASSWORD").unwrap_or("…")`; a template's filter,
        // Jinja's and Ansible's `{{ db_password | default('…') }}` and `| d('…')`, Helm's
        // `{{ .Values.password | default "…" }}`, Liquid's `| default: "…"`.)
        separators.push(format!(
            r#"{q}[ \t]{{0,8}}[\])]?[ \t]{{0,40}}(?:\|\||\?\?|\?:)[ \t]{{0,40}}["'`]|[ \t]{{0,4}}\|[ \t]{{0,4}}(?:default(?:[ \t]{{0,4}}[(:])?|d\()[ \t]{{0,4}}["'`]|{q}[ \t]{{0,8}}[\])][ \t]{{0,40}}or[ \t]{{1,40}}["'`]|{q}\)\.unwrap_or(?:_else)?\((?:\|_\|[ \t]{{0,4}})?(?:String::from\()?""#
        ));
        separators.push(format!(
            r"{q}[ \t]{{0,40}}:[ \t]{{0,4}}>[-+0-9]{{0,2}}[ \t]{{0,40}}\r?\n"
        ));
        // (Markdown's emphasis: see `markup` above. After the others, so that `:=` and
        // `=>` are read as theirs.)
        separators.push(format!(r"{emphasis}?[ \t]{{0,4}}(?:[:=]{emphasis}?|\|)"));
        // (A label's colon at its line's end, the value on the next line — after a blank
        // line, in a fenced block: `Here is the password:⏎⏎```⏎…`; see
        // `validate::next_line_value`.)
        separators.push(format!(
            r"{emphasis}?[ \t]{{0,4}}:{emphasis}?[ \t]{{0,8}}\r?\n(?:[ \t]{{0,8}}\r?\n)?[ \t]{{0,16}}(?:```[A-Za-z]{{0,16}}[ \t]{{0,4}}\r?\n[ \t]{{0,16}})?"
        ));
    }
    let separators = separators.join("|");
    // (Blanks alone before the value: a quoted one, or, for field names, any — which only
    // a command that sets the name may stand before: `setx DB_PASSWORD S3cret9`, see
    // `validate::blank_setter`.)
    let blanks = match comma {
        // (Or, for prose, the name's emphasis or code span closed, a comma or a question's
        // mark before the blanks: `**Password** is …`, `__Password__ is …`, `the root
        // password, for the record, is …`, `The password? It's …`; see
        // `validate::prose_mark`.)
        // (Or a comma, blanks around it or a line break after it, `CURLOPT_PASSWORD,⏎
        // "…"`: a call's next argument — see `validate::curl_option`.)
        false => format!(
            r"[ \t]{{0,4}},(?:[ \t]{{0,40}}\r?\n)?[ \t]{{0,40}}{q}|(?:{q}|,|\?|\*{{1,3}}|_{{1,2}}|`)(?:[ \t]{{1,40}}|[ \t]{{0,40}}[\\^`]\r?\n[ \t]{{0,40}}){q}"
        ),
        true => r#"[ \t]{1,40}["']"#.to_owned(),
    };
    let mut out = format!(
        r#"(?:{names})(?:(?:{separators})[ \t]{{0,40}}{value}|{blanks}|[ \t]{{0,40}}\r?\n[ \t]{{0,40}}["'])[^\s"'\\>]"#
    );
    if comma {
        out += &format!(r#"|(?:{names}){qq}[ \t]*,[ \t]*{qq}[^\s"'\\>]"#);
    }
    out
}

/// The names prose gives a value before (see [`value_before_name`]), each a word of its
/// own, the longest first (an alternative's match is the first that matches).
pub(super) const PROSE_NAMES: [&str; 26] = [
    "access token",
    "client secret",
    "bearer token",
    "credentials",
    "secret key",
    "access key",
    "Access Key",
    "auth token",
    "credential",
    "API token",
    "api token",
    "passphrase",
    "API key",
    "api key",
    "API Key",
    "API_KEY",
    "api_key",
    "password",
    "Password",
    "PASSWORD",
    "passcode",
    "secret",
    "passwd",
    "token",
    "PAT",
    "pwd",
];

/// A value prose gives before its name, quoted, a code span or emphasised: `` use
/// `Xk9vQ2mZp4Lw` as the password ``, `"Xk9vQ2mZp4Lw" is your new API key` — a verb (`as`,
/// `is`, `are`, `was`, `for`), an article (`the`, `your`, …), up to three words (`new
/// admin`, `staging`, `Wi-Fi`) and one of [`PROSE_NAMES`] (see
/// `validate::value_before_name`). Read by hand (see [`value_before_name_at`]); the
/// regex is what that reading is tested against. (The value's run, printable ASCII, is
/// unbounded here, as a bounded one would count in a lazy DFA's states; the hand reading
/// and the validator bound it. Its quotes keep it linear: a failed value's run starts no
/// other candidate of the form. A bare one,
/// `use Xk9… as the password`, is not read: its run could start at every word border, and
/// a failed one was read again from each — `a.a.a.…` before `as the password` ran 780x the
/// bench text — and in code `as` is a cast, an alias or an import's.)
pub(super) fn value_before_name() -> String {
    format!(
        r#"(?:`[!-~&&[^`]]+`|"[!-~&&[^"]]+"|'[!-~&&[^']]+'|“[!-~]+”|‘[!-~]+’|«[!-~]+»|\*\*[!-~&&[^*]]+\*\*){}"#,
        prose_name_after()
    )
}

/// What follows the value in [`value_before_name`]: blanks, the verb, the words and the
/// name.
fn prose_name_after() -> String {
    let names = PROSE_NAMES.join("|");
    format!(
        r#"[ \t]+(?:as|is|are|was|for)[ \t]+(?:(?:also|now|actually|still)[ \t]+)?(?:(?:the|your|a|an|my|our|its|this|their|his|her|that)[ \t]+)?(?:[A-Za-z][A-Za-z'-]{{0,15}}[ \t]+){{0,3}}(?:{names}){B}"#
    )
}

/// What [`value_before_name_at`] searches for: a value's closing mark, then all that
/// follows the value in [`value_before_name`]. Its literals are a closing mark and a blank
/// (`" `, `` ` ``⇥, `** `): rare in JSON, where every quote is followed by `:` or `,`.
pub(super) fn prose_value_closed() -> String {
    format!(r#"(?:[`"']|\*\*|”|’|»){}"#, prose_name_after())
}

/// The ASCII marks a value prose gives before its name is set in (see
/// [`value_before_name`]), opening and closing; the curly ones are `CURLY_QUOTES`. (No
/// value holds its closing mark's first byte: an ASCII mark's is left out of its value,
/// and a curly one's is no printable ASCII.)
const PROSE_MARKS: [(&str, &str); 4] = [("`", "`"), ("\"", "\""), ("'", "'"), ("**", "**")];

/// The trigger of [`value_before_name`], read by hand (`closed`: [`prose_value_closed`]'s
/// regex): its first match in `text[from..to]`. A match holds no blank before its closing
/// mark and a blank right after it, so the matches' starts come in the order of their
/// closing marks: the regex finds a closing mark with what follows (its prefilter skips the
/// text between), and the value is read back from it to its opening mark. Each value is
/// read back at most [`QUOTED_VALUE_MAX`](super::validate::QUOTED_VALUE_MAX) bytes and a
/// mark: a longer one is no candidate (its validator turns it away), and a run of values,
/// each read again after every detection inside the last one, costs no more than that.
/// (Searched by the regex, the pass read every text as slowly as a walk of each byte: the
/// quotes that start the regex's matches are everywhere in JSON.)
pub(super) fn value_before_name_at(
    text: &str,
    from: usize,
    to: usize,
    _: &Freed,
    closed: Option<&MetaRegex>,
) -> Option<(usize, usize)> {
    let closed = closed?;
    let b = text.as_bytes();
    let mut at = from;
    while at < to {
        let m = closed.search(&Input::new(text).range(at..to))?;
        let q = m.start();
        if let Some(&(open, close)) = PROSE_MARKS
            .iter()
            .chain(&CURLY_QUOTES)
            .find(|(_, close)| b[q..].starts_with(close.as_bytes()))
        {
            let own = close.as_bytes()[0];
            let cap = QUOTED_VALUE_MAX + 2;
            let value = b[q.saturating_sub(cap)..q]
                .iter()
                .rev()
                .take_while(|&&c| (b'!'..=b'~').contains(&c) && c != own)
                .count();
            let start = q - value;
            if value > 0 && b[..start].ends_with(open.as_bytes()) && start - open.len() >= from {
                return Some((start - open.len(), m.end()));
            }
        }
        at = next_char(text, q);
    }
    None
}

/// The lazy DFA's cache for the combined pattern: large enough that scanning never falls back
/// to the slow engines.
pub(super) const DFA_CACHE_BYTES: usize = 256 << 20;

/// How far a secret's exact match may reach past its trigger: a private key's body or a JWT
/// has no fixed length. A JWT's trigger is its whole shape, so a JWT candidate never fails
/// after reading far (see `validate_secret`).
pub(super) const SECRET_WINDOW: usize = 1 << 20;

pub(super) type Validate = fn(&str, usize, usize, &Freed) -> Option<(usize, usize)>;

/// One detector: a cheap `trigger` (an alternative of the combined pass), the exact pattern,
/// how far past the trigger the exact match may reach, and the validator.
pub(super) struct Kind {
    pub(super) entity: Entity,
    /// The exact pattern; `None` when the validator reads the candidate itself.
    pub(super) re: Option<MetaRegex>,
    pub(super) window: usize,
    /// The exact match must start where the trigger did (otherwise: anywhere in the window).
    pub(super) anchored: bool,
    /// An entity of this kind starts at most this many bytes before the first occurrence of
    /// this anchor in its trigger: after a failed candidate the scan resumes there (see
    /// `skip_after_failure`).
    pub(super) back_window: Option<(&'static [u8], usize)>,
    /// For an e-mail address: its exact match may reach this far past its `@` (or `%40`),
    /// wherever the candidate starts — so every start before one `@` sees the same domain
    /// (see [`email_reach`]). The `@` must be within `window` of the start.
    pub(super) domain_window: Option<usize>,
    /// For a kind whose failure rules out more than its own start: how far no candidate of
    /// this kind can succeed after a failed one at this start (see [`run_token_reach`]). A
    /// kind alone in its pass makes the pass resume there; one that shares its pass (an IPv4
    /// address, see [`ipv4_reach`]) is only itself quiet up to there. It must hold whatever
    /// the scan detected before — or, for a kind whose validator reads the last detection,
    /// up to the next detection (see `reach_until_detection`).
    pub(super) reach: Option<Reach>,
    /// The reach read what stands right before later candidates, which the scan's next
    /// detection changes (a validator reads it as the placeholder it becomes): it holds only
    /// up to that detection's end.
    pub(super) reach_until_detection: bool,
    pub(super) validate: Validate,
    /// A cheap necessary condition for a candidate at `s` to pass, asked before the exact
    /// pattern is searched (see [`email_may_pass`]).
    pub(super) may_pass: Option<MayPass>,
    /// The kind is alone in its pass and its exact pattern starts with its trigger, all of it,
    /// as its first alternatives (`trigger|more`): a candidate the pass's search found at
    /// `s` over the whole text is its exact match at `s`, as found (leftmost-first prefers
    /// the trigger's alternatives, and over the same text from the same start they end at
    /// the same place), so it is not searched for again.
    pub(super) trigger_is_exact: bool,
    /// See `Spec::named_exact`.
    pub(super) named_exact: Option<NamedExact>,
    /// Kinds that validate a candidate alike (the same entity, exact pattern, window and
    /// validator, and no other look) share a class: where one of them has just validated
    /// a candidate at a start, another's candidate there has the same answer (the secrets'
    /// passes find `AUTH` as a name and as a command, see `PiiDetector::validate_once`).
    pub(super) class: Option<usize>,
}

/// See [`Kind::may_pass`].
pub(super) type MayPass = fn(&str, usize, &Kind) -> bool;

/// Whether an address with its candidate at `s` may pass: not when its domain cannot (see
/// [`email_domain_may_pass`]).
pub(super) fn email_may_pass(text: &str, s: usize, kind: &Kind) -> bool {
    let window = ceil_char_boundary(text, s.saturating_add(kind.window));
    match email_at(&text[s..window]) {
        Some((at, at_len)) => email_domain_may_pass(
            text,
            s + at + at_len,
            kind.domain_window.unwrap_or(kind.window),
        ),
        None => true,
    }
}

impl Kind {
    /// Where the exact match for a candidate at `s` must end by.
    pub(super) fn cut(&self, text: &str, s: usize) -> usize {
        let cut = ceil_char_boundary(text, s.saturating_add(self.window));
        let Some(after) = self.domain_window else {
            return cut;
        };
        match email_at(&text[s..cut]) {
            Some((at, at_len)) => ceil_char_boundary(text, s + at + at_len + after),
            None => cut,
        }
    }
}

/// Where a pass may resume after its candidate of this kind at `s` failed, if further than
/// the next character.
/// Called with a way to ask for the failed candidate's exact match's end, if it had one
/// (asked only by a reach that reads it: it may cost a search).
pub(super) type Reach = fn(&str, usize, &mut dyn FnMut() -> Option<usize>, &Kind) -> Option<usize>;

/// A pass's search read by hand (see [`email_trigger_at`]): the first match of its one
/// trigger in `text[from..to]`, knowing what the scan has read so far (see
/// [`table_row_at`]: the next row of a table aligned with blanks), with the regex it reads
/// by, if it has one (see [`Spec::hand_regex`]).
pub(super) type HandSearch =
    fn(&str, usize, usize, &Freed, Option<&MetaRegex>) -> Option<(usize, usize)>;

/// Whether a trigger read by hand may start in `text[from..to]` (see [`Spec::may_start`]).
pub(super) type MayStart = fn(&[u8], usize, usize) -> bool;

pub(super) struct Spec {
    pub(super) entity: Entity,
    /// Which scan pass the trigger joins (see [`PiiDetector`]).
    pub(super) pass: usize,
    pub(super) trigger: String,
    /// Empty when the validator parses the window itself (see [`Kind::re`]).
    pub(super) exact: String,
    pub(super) window: usize,
    pub(super) anchored: bool,
    pub(super) back_window: Option<(&'static [u8], usize)>,
    pub(super) domain_window: Option<usize>,
    pub(super) reach: Option<Reach>,
    pub(super) reach_until_detection: bool,
    pub(super) validate: Validate,
    /// The trigger read by hand, for a kind alone in its pass (`None`: the regex searches).
    pub(super) hand_search: Option<HandSearch>,
    /// A regex the hand search reads by (see [`value_before_name_at`]), built with the
    /// detector (a pattern that does not build fails it).
    pub(super) hand_regex: Option<String>,
    /// For a trigger read by hand: whether a candidate may start in `text[from..to]`, if
    /// it knows (see `Pass::may_start_in`).
    pub(super) may_start: Option<MayStart>,
    /// See [`Kind::may_pass`].
    pub(super) may_pass: Option<MayPass>,
    /// For a kind alone in its pass: what its trigger also matches at the text's start only
    /// (searched there, anchored, before the pass's search), kept out of the trigger so that
    /// the pass's prefilter need not look for a shorter literal everywhere.
    pub(super) at_start: Option<String>,
    /// The trigger and the exact pattern both end with the same alternatives for fields
    /// named for a secret, for [`other_commands`], [`positional_commands`] and
    /// [`stdin_writers`], and no earlier alternative of either can match where a secret's
    /// name or such a command starts (their first two bytes differ from every name's and
    /// command's): a candidate that starts with one (this answers which: [`named_exactly`],
    /// or for a pass that holds some of those alternatives only, what it holds) is its
    /// exact match as the pass found it (see `Kind::trigger_is_exact`).
    pub(super) named_exact: Option<NamedExact>,
}

/// Whether a candidate that starts with `m` is its exact match as its pass found it (see
/// [`Spec::named_exact`]).
pub(super) type NamedExact = fn(&[u8]) -> bool;

/// Pass 0: triggers that start with literals (a prefilter skips most text); pass 1: the
/// tokens whose key is a run of characters after a prefix (`sk-`, `xoxb-`, `xapp-1-`), on
/// their own so that a failed one can skip the rest of its run (see [`run_token_reach`]),
/// and the secrets added since (credentials in a URL or an authorization header, fields
/// named for a secret, DigitalOcean tokens, Azure keys: their literals in pass 0 would
/// make its prefilter the slower kind that holds more of them), and `AUTH`, a name and
/// Redis's command; pass 7: commands that take a password and the other command words the
/// run-token pass held before (see `command_word_trigger` in [`specs`]); pass 8:
/// here-strings and here-documents (see [`here_strings`]); pass 9: a value prose gives
/// before its name, found by hand from its closing mark (see [`value_before_name_at`]);
/// pass 11: calls that take a password (see [`credential_calls`]) and the positional
/// commands added last (see [`Positional::Here`]), on their own so that no other pass's
/// prefilter takes their literals (the here-strings' `<<` alone is found fastest);
/// pass 2: e-mail (found from its `@`; a URL-encoded `%40` is decoded to `@` by folding
/// first); pass 3: the digit-led formats, one fully built DFA, phone numbers last (their broad
/// trigger fires on most numbers; as the last pattern, a failed phone candidate makes no other
/// kind look again); pass 4: credentials on command lines (`--password …`, `curl -u
/// user:…`, `mysql -p…`: see [`command_line_secrets`]), on their own so that neither pass
/// 1's prefilter nor its skip over a failed run (see `other_trigger_in`) need know them;
/// pass 5: a Markdown table's rows (see `validate::table_row_secret`) and those of a table
/// aligned with blanks, found by hand; pass 6: other services' tokens by their prefixes,
/// and `.pgpass`'s name (see [`prefixed_tokens`]), on their own so that pass 0's prefilter
/// keeps its literals; pass 10: credentials in headers (`Authorization: Token …`,
/// `X-API-Key: …`: see [`authorization_header`] and [`RUN_PASS_NAMES`]), moved out of pass
/// 4 so that its prefilter has room for more commands' names (in one prefilter, four-byte
/// literals past 64 are all cut to three); pass 12: a password's name in other languages
/// (see [`LOCAL_NAMES`]); pass 13: the names and calls added since (see [`ADDED_NAMES`],
/// [`ADDED_THIRD_ARGUMENT_CALLS`]); pass 14: a wallet's recovery words under their names
/// (see [`SEED_NAMES`]), a wallet's extended private key (see [`EXTENDED_KEY_PREFIXES`])
/// and a Wi-Fi QR code's password; pass 15: the rest of its literals (see
/// [`sixteenth_pass_trigger`]); pass 16: secret stores' commands, two-factor setup's
/// names, mail logins, Kustomize's generator and a Secret's kind quoted (see
/// [`seventeenth_pass_trigger`]); pass 17: keys under their names in prose and wallets'
/// keys in calls (see [`eighteenth_pass_trigger`]); pass 18: keys AI services issue,
/// Azure's key, a Telegram bot's URL and the names added last (see
/// [`ai_service_tokens`]); pass 19: a private key in Wallet Import Format with no name
/// before it, found by hand (see `validate::bare_wif_at`); pass 20: a secret a command
/// printed, on the line after it (see [`SECRET_PRINTERS`]). At one start, passes are asked
/// in this order.
pub(super) const PASSES: usize = 21;
pub(super) const DENSE_PASSES: [usize; 1] = [3];
/// Passes whose values may stand after other triggers of theirs (a command's password after
/// another command's name on its line, `curl -T mysql.sql -u admin:…`): after such a value,
/// held until the scan reaches it, the pass resumes right after the trigger, not past the
/// value.
pub(super) const APART_PASSES: [usize; 1] = [4];

/// After a failed address at `s`: every start before its `@` reaches the same `@` (a local
/// part holds no `@`) and reads the same domain (the exact match ends within
/// [`Kind::domain_window`] of the `@`, wherever it starts), so when the address failed on its
/// domain — the exact pattern found none, or the domain's checks (`email_domain_ok`) refused
/// it — every start before the `@` fails too; otherwise every later start whose local part
/// fails too (see `email_local_skip`). So neither `a@b.a@b.…`, `aaaa…..a@b.co` nor a long
/// local part before a domain that never ends is read again from each of its characters.
pub(super) fn email_reach(
    text: &str,
    s: usize,
    end: &mut dyn FnMut() -> Option<usize>,
    kind: &Kind,
) -> Option<usize> {
    let window = ceil_char_boundary(text, s.saturating_add(kind.window));
    let (at, at_len) = email_at(&text[s..window])?;
    let (at, domain) = (s + at, s + at + at_len);
    if !email_domain_may_pass(text, domain, kind.domain_window.unwrap_or(kind.window)) {
        return Some(domain);
    }
    match end() {
        Some(end) if email_domain_end(text, domain, end).is_some() => {
            Some(email_local_skip(text, s, at))
        }
        _ => Some(domain),
    }
}

/// After a failed IPv4 candidate at `s`: a later start in the same run of digits and dots
/// that follows a digit and a dot (`1.2.3.4.5.6.7.8`: the `5`, the `6`, …) continues a
/// dotted number, which `validate_ipv4` refuses, and a digit right after a digit starts no
/// candidate (the trigger begins at a word border). So no candidate succeeds before the run
/// ends or a digit follows `..` (or starts it) — where a dotted-number run of any length is
/// passed over once, not from each of its numbers. Reads only the text: the last detection
/// does not matter to `validate_ipv4`.
pub(super) fn ipv4_reach(
    text: &str,
    s: usize,
    _: &mut dyn FnMut() -> Option<usize>,
    _: &Kind,
) -> Option<usize> {
    let b = text.as_bytes();
    Some(walk_after(text, s, usize::MAX, |i| {
        let start =
            b[i].is_ascii_digit() && b[i - 1] == b'.' && !(i >= 2 && b[i - 2].is_ascii_digit());
        (b[i].is_ascii_digit() || b[i] == b'.') && !start
    }))
}

/// After a failed run token at `s` (`sk-…`, `xox?-…`, `xapp-N-…`): how far the scan may skip,
/// when every later token of the same prefix that starts there must fail too — so the scan
/// does not read the run again from each of them (`sk-sk-sk-…` made every byte be read some
/// 130 times).
///
/// A later start `s'` reads (at most) the run from `s'` to its end or to the pattern's length
/// cap. This reads the run from `s` as far as two caps: every start up to one cap further (or
/// to the run's end, when it ends sooner) then reads only what was read here, and each reason
/// below, true of all that was read, is true of any part of it (see `validate_secret`): no
/// digit or capital after the prefix; for `sk-`, no run of 16 letters and digits; every run of
/// letters and digits made of at most four distinct characters. A token of another prefix
/// inside is not skipped: the scan resumes at the first one.
pub(super) fn run_token_reach(
    text: &str,
    s: usize,
    _: &mut dyn FnMut() -> Option<usize>,
    _: &Kind,
) -> Option<usize> {
    const FAMILIES: [(&[u8], usize); 3] = [(b"sk-", 400), (b"xox", 255), (b"xapp-", 255)];
    let b = text.as_bytes();
    let rest = b.get(s..)?;
    let &(family, cap) = FAMILIES.iter().find(|(p, _)| rest.starts_with(p))?;
    let sk = family == b"sk-";
    // The pattern's character class for the key (only `sk-` keys hold `_`); the prefix is
    // made of the same characters.
    let in_run = |c: u8| c.is_ascii_alphanumeric() || c == b'-' || (sk && c == b'_');
    let window = 8 + 2 * cap;
    let run = rest.iter().take(window).take_while(|&&c| in_run(c)).count();
    let read = &rest[..run];
    let skip = if run < window { run } else { cap };
    let few_distinct = alnum_runs(read).all(|r| distinct_bytes(r) <= 4);
    let body = read.get(3..).unwrap_or_default();
    let plain = !digit_or_capital(body);
    let short_runs = alnum_runs(body).all(|r| r.len() < 16);
    let fails = few_distinct
        || (family != b"xapp-" && (plain || (sk && short_runs)))
        || placeholder_runs_decide(read, skip, cap + 3);
    if !fails || skip <= 1 {
        return None;
    }
    let end = s + skip;
    // The first token of another prefix inside, if any, and the first start of the pass's
    // other triggers whose first characters a run holds (`sk-proj-Bearer 1a2b…`).
    let other = FAMILIES
        .iter()
        .filter(|(p, _)| *p != family)
        .filter_map(|(p, _)| memchr::memmem::find(&b[s + 1..end], p).map(|i| s + 1 + i))
        .chain(other_trigger_in(b, s + 1, end))
        .min();
    Some(other.unwrap_or(end))
}

/// After a failed candidate at `s` of the command-line pass that is a command's name (see
/// [`PASSWORD_COMMANDS`]; its other candidates resume at the next character): how far no
/// candidate of the pass can succeed, so a run of commands' names (`curl curl …`) is not
/// read again from each of them. A command's password needs an option (`-p`, `-u`, `-U`,
/// `-a`, `--user`, …), which starts with `-`, on its line within the 2 KiB its validator
/// reads; the pass's other candidates start with `--`, `login` or `LOGIN` — or need an
/// option too (PowerShell's `ConvertTo-SecureString` its `-AsPlainText`). So no start more
/// than 2 KiB before the first `-` or such word after `s` (read up to 4 KiB) can succeed.
/// (Line ends are not trusted: a quoted line break does not end a command.) Where that `-`
/// is nearer, the run of commands before it that fail is passed over (see
/// [`failing_commands`]).
pub(super) fn command_reach(
    text: &str,
    s: usize,
    _: &mut dyn FnMut() -> Option<usize>,
    _: &Kind,
) -> Option<usize> {
    const WINDOW: usize = 2048;
    let b = text.as_bytes();
    let word = commands_at(&b[s..]).next()?;
    let from = s + word.len();
    let to = b.len().min(s + 2 * WINDOW);
    // An option's `-` stands after a blank, a quote or a list's punctuation (not the `-` of
    // a name: `redis-cli`).
    let option = |i: usize| b[i] == b'-' && i > 0 && before_option(b[i - 1]);
    let other = |i: usize| {
        let rest = &b[i..];
        match b[i] {
            b'-' => option(i),
            b'l' | b'L' => rest.starts_with(b"login") || rest.starts_with(b"LOGIN"),
            _ => false,
        }
    };
    // The first `-` (found fast: in a run of names before one, each name looks for it),
    // then, over only what that would skip, the other triggers' words: every start up to
    // 2 KiB before the first of them fails (a command's validator reads at most 2 KiB from
    // its name's start).
    let dash = memchr::memchr_iter(b'-', &b[from..to])
        .map(|i| from + i)
        .find(|&i| option(i))
        .unwrap_or(to);
    // (An option right after the name: no other name stands before it — the commands that
    // follow, if any, are read one by one.)
    if dash <= from + 1 {
        return failing_chain(text, s);
    }
    let reach = if dash == b.len() {
        b.len()
    } else {
        dash.saturating_sub(WINDOW)
    };
    // Else the run of names before the option (`mysql mysql … -p`), read once.
    let far = reach > s + 1;
    let reach = if far {
        reach
    } else {
        // (Up to the character before that `-`: an option's trigger starts there.)
        failing_commands(b, s, dash.saturating_sub(1))
    };
    if reach <= s + 1 {
        return failing_chain(text, s);
    }
    // (Past a `login` whose candidate fails: see [`login_fails`]. Where every start up to
    // the reach is more than 2 KiB before the first option, its command fails anyway, and
    // its `.netrc` form alone is looked at: a run of `login` words reads 4x faster so.)
    let mut at = from;
    let reach = loop {
        match (at..reach).find(|&i| other(i)) {
            Some(i)
                if matches!(b[i], b'l' | b'L')
                    && ((far && !netrc_follows(text, i + "login".len()))
                        || login_fails(text, i)) =>
            {
                at = i + 1;
            }
            // (An option's trigger starts a character before its `--`.)
            Some(i) if b[i] == b'-' => break i - 1,
            Some(i) => break i,
            None => break reach,
        }
    };
    // (Short of the option: where the line ends at the next command, the commands from
    // there may fail too — `7z a -px 7z a -px …`.)
    // (Only where the reach is short: past a long one — a run of bare names, `curl curl …`
    // with no option in 4 KiB — the chain would read every name's line for a shorter
    // reach, 3.5-6x slower; found by an attack review.)
    let reach = match reach < dash && reach < s + CHAIN_LINE {
        true => failing_chain(text, s).map_or(reach, |chained| chained.max(reach)),
        false => reach,
    };
    (reach > s + 1).then(|| ceil_char_boundary(text, reach))
}

/// How far the commands on from the failed one at `s` fail too (see [`command_reach`]): a
/// command whose line (as its validator reads it, see `validate::command_line`) holds no
/// `-` fails, and where that line ends at the next command, that one is next; so the first
/// command on from `s` whose line holds a `-` is the first that may succeed (or, where a
/// line ends at a terminator, what follows it). Only over lines without quotes: in quotes,
/// a command's name does not end the line before it, but the line read from that name
/// may run on past the quote. Each line is read once, and none past `until` (just before
/// the first `-` after `s`, where the reach ends anyway: see [`command_reach`]); a command
/// whose line is read up to there may hold an option past it, so it is the next candidate.
/// So is a candidate that ends no other command's line (an LDAP tool's name, `SQLCMD`, an
/// archiver's, PowerShell's cmdlet: see `validate::line_family`) inside a line read: its own
/// line runs on past the lines read here.
fn failing_commands(b: &[u8], s: usize, until: usize) -> usize {
    let mut at = s;
    loop {
        let (start, end, next) = super::validate::command_line(b, at, until);
        let line = &b[start..end];
        let stop = match at == s {
            // (`s` failed, whatever options its line holds.)
            true => memchr::memchr2(b'"', b'\'', line),
            false => memchr::memchr3(b'-', b'"', b'\'', line),
        };
        if stop.is_some() || (at > s && end >= until) {
            return at;
        }
        if let Some(i) = (start..end).find(|&i| ends_no_line(b, i)) {
            return i;
        }
        if !next {
            return end;
        }
        at = end;
    }
}

/// Whether the pattern's `.netrc` form (`login bob password S3cret`, in
/// [`command_line_secrets`]) follows a `login` that ends at `j`: blanks, a word, white
/// space, optionally `account`, blanks, a word and white space, then `password` or `passwd`
/// and a blank. A word runs to white space as the pattern's `[^\s]+` does (`char::
/// is_whitespace` reads the same Unicode property as `\s`). So a run of `login` words is
/// read as one (`login login …`: each was a candidate, the scan 5.3x slower than the bench
/// text).
fn netrc_follows(text: &str, j: usize) -> bool {
    let b = text.as_bytes();
    let skip =
        |k: usize, f: fn(&u8) -> bool| k + b[k.min(b.len())..].iter().take_while(|c| f(c)).count();
    let blank = |c: &u8| matches!(c, b' ' | b'\t');
    let space = |c: &u8| matches!(c, b' ' | b'\t' | b'\r' | b'\n');
    // A word from `k` (a character boundary): its ASCII read by byte, and from its first
    // character past ASCII on, by character.
    let word_end = |k: usize| {
        let ascii = skip(k, |c| {
            c.is_ascii() && !matches!(c, b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r' | b' ')
        });
        match b.get(ascii) {
            Some(c) if !c.is_ascii() => text[ascii..]
                .char_indices()
                .find(|(_, c)| c.is_whitespace())
                .map_or(b.len(), |(n, _)| ascii + n),
            _ => ascii,
        }
    };
    // Blanks, a word and white space, each at least one character, from `k`: where they end.
    let word_after = |k: usize| {
        let w = skip(k, blank);
        let end = word_end(w);
        let next = skip(end, space);
        (w > k && end > w && next > end).then_some(next)
    };
    let password = |k: usize| {
        let rest = &b[k.min(b.len())..];
        ["password", "passwd"]
            .iter()
            .any(|p| rest.starts_with(p.as_bytes()) && rest.get(p.len()).is_some_and(blank))
    };
    let Some(k) = word_after(j) else {
        return false;
    };
    password(k)
        || (b[k..].starts_with(b"account") && word_after(k + "account".len()).is_some_and(password))
}

/// The longest line [`failing_chain`] reads: after a longer one, the search for the next
/// command costs less than a byte's read of the line, and in text most failed commands'
/// lines end at no other command (reading every one again to its end made every scan 2.4%
/// slower, its first 32 bytes 0.1-0.4%).
const CHAIN_LINE: usize = 32;

/// How far the commands that follow the failed one at `s`, each at the end of the line
/// before it (see `validate::command_line`), fail too, read one after another here: where
/// a command's line holds an option that gives no password (`zip -x zip -x …`), its
/// next command is the next candidate, and reading it here costs no search of the pass
/// before it. Each is passed over while it fails: its line holds none of its password
/// options (see `validate::may_give_password`), or its validation fails as the pass's
/// would (see `validate::command_password`). The chain stops at the first place between
/// them where another candidate of the pass may start (see [`chain_stop`]), at a line that
/// no command ends within [`CHAIN_LINE`] bytes, at a line with no option (see below), and
/// at a command that passes or whose trigger is not its bare name (or with `.exe`) and a
/// blank (`mysqldump`, `zip\`): the search goes on from there. Each line is read at
/// most three times (as the line before a command and as its own here, and by its
/// validation), and each command validated at most twice (here, and by the search where it
/// passes).
fn failing_chain(text: &str, s: usize) -> Option<usize> {
    let b = text.as_bytes();
    // (A registry's `login`: its line ends only at another `login` — see
    // `validate::line_family` — where the chain stops anyway, since its candidate may be the
    // `.netrc` form's, which `command_password` does not read (see [`chain_other`]). Not
    // read at all: a run of registry logins read 28% slower.)
    if b[s..].starts_with(b"login") {
        return None;
    }
    let done = |i: usize| (i > s + 1).then(|| ceil_char_boundary(text, i));
    let mut at = s;
    let mut line = super::validate::command_line(b, at, at + CHAIN_LINE);
    loop {
        let (_, end, next) = line;
        if !next {
            return done(at + 1);
        }
        if let Some(i) = (at + 1..end).find_map(|i| chain_stop(text, i)) {
            return done(i);
        }
        let Some(command) = commands_at(&b[end..]).next() else {
            return done(end);
        };
        let word = b[end..]
            .iter()
            .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'-'))
            .count();
        // (`.exe` and `.EXE` after the name too: the validator reads the same command.)
        let exe = word == command.len() + 4
            && b[end + command.len()..end + word].eq_ignore_ascii_case(b".exe");
        if (word != command.len() && !exe)
            || !matches!(b.get(end + word), Some(b' ' | b'\t'))
            || chain_other(text, end).is_some()
        {
            return done(end);
        }
        // Its line, whole (cut at 32 bytes, it may hold more: the search validates it). A
        // line with none of the command's password options fails without its validation
        // (so does a line with no option at all, `sshpass` cut by `mongo` in `sshpass mongo
        // -p …`, for the names before it too — the chain goes on past it: stopped there,
        // such runs read 6x slower than the bench text, 3.3x now); one with such an option
        // is validated (`7z a -px`, `mysql -u root -p db` fail).
        let after = super::validate::command_line(b, end, end + CHAIN_LINE);
        let options = &b[after.0..after.1];
        // (A line that ends before the bytes read is the whole line: the password is looked
        // for on it, not on the line read again.)
        if after.1 >= end + CHAIN_LINE
            || (super::validate::may_give_password(options, command)
                && (command != "login" || super::validate::registry_cli_before(b, end))
                && super::validate::command_password_on(text, end, command, after, true).is_some())
            || super::validate::password_of_commands_before(text, end, command, after).is_some()
        {
            return done(end);
        }
        (at, line) = (end, after);
    }
}

/// Where a candidate of the command-line pass other than the next command of a chain may
/// start, found at `i` (see [`failing_chain`]): a command's name where a command stands
/// (see `validate::command_position`; elsewhere its candidate fails), or another trigger
/// (see [`chain_other`]).
fn chain_stop(text: &str, i: usize) -> Option<usize> {
    let b = text.as_bytes();
    if COMMAND_STARTS[usize::from(b[i])] != 0
        && super::validate::command_position(b, i)
        && commands_at(&b[i..]).next().is_some()
    {
        // (Only a `login` fails here: the other triggers start with other letters.)
        return (!login_fails(text, i)).then_some(i);
    }
    chain_other(text, i)
}

/// The longest line of a registry's `login` that [`login_fails`] reads (to the next
/// `login`: see `validate::line_family`).
const LOGIN_LINE: usize = 64;

/// Whether a `login` (or `LOGIN`) starts at `i` whose candidate fails, however it is read:
/// the `.netrc` form follows it and names no password (see [`netrc_follows`] and
/// `validate::netrc_password`), or it does not follow (`LOGIN` has no other form) and its
/// command fails: no registry's tool is named before it (see
/// `validate::registry_cli_before`), or its line, read whole within [`LOGIN_LINE`] bytes,
/// holds none of its password options (see `validate::may_give_password`) or gives none
/// (see `validate::command_password`). (`zip -x login …`, `zip -x oc login …`: each
/// `login` was a chain's stop, 5.6-8x slower than the bench text.)
fn login_fails(text: &str, i: usize) -> bool {
    use super::validate::{
        command_line, command_password_on, may_give_password, registry_cli_before,
    };
    let b = text.as_bytes();
    let rest = &b[i..];
    if !(rest.starts_with(b"login") || rest.starts_with(b"LOGIN")) {
        return false;
    }
    // (Where the `.netrc` form follows, the candidate is that form's, whatever the command's
    // would be: it fails where the password it names is none.)
    if netrc_follows(text, i + "login".len()) {
        return super::validate::netrc_password(text, i + "login".len()).is_none();
    }
    if rest.starts_with(b"LOGIN") || !registry_cli_before(b, i) {
        return true;
    }
    // (A line that ends before the bytes read ends there however far it is read: the
    // password is looked for on it, not on the line read again.)
    let line = command_line(b, i, i + LOGIN_LINE);
    let (start, end, _) = line;
    end < i + LOGIN_LINE
        && !(may_give_password(&b[start..end], "login")
            && command_password_on(text, i, "login", line, true).is_some())
}

/// Where a trigger of the command-line pass that is no command's name may start, found at
/// `i`: an option named `--…` (its trigger starts a character before the dashes, at a
/// blank, a quote, a backtick or a list's punctuation), `login`, PowerShell's cmdlet.
fn chain_other(text: &str, i: usize) -> Option<usize> {
    let b = text.as_bytes();
    let rest = &b[i..];
    let found = match b[i] {
        c if before_option(c) => rest[1..].starts_with(b"--"),
        b'l' | b'L' => {
            (rest.starts_with(b"login") || rest.starts_with(b"LOGIN")) && !login_fails(text, i)
        }
        // (No field's or header's name, no `Authorization`: the run-token pass and the
        // headers' pass look for those.)
        b'C' | b'c' => {
            rest.starts_with(b"ConvertTo-SecureString")
                || rest.starts_with(b"convertto-securestring")
        }
        _ => false,
    };
    found.then_some(i)
}

/// Whether `name` (one of [`SECRET_NAMES`]) is a header name, which the headers' pass
/// looks for (see [`RUN_PASS_NAMES`]).
pub(super) fn header_name(name: &str) -> bool {
    SECRET_NAMES[RUN_PASS_NAMES..].contains(&name)
}

/// Whether a candidate of the command-line pass that ends no other command's line may
/// start at `i` (see [`failing_commands`]): a command of a line family added later (see
/// `validate::line_family`), wherever its name stands, or PowerShell's cmdlet.
fn ends_no_line(b: &[u8], i: usize) -> bool {
    let rest = &b[i..];
    rest.starts_with(b"ConvertTo-SecureString")
        || rest.starts_with(b"convertto-securestring")
        || commands_at(rest).any(|c| super::validate::line_family(c) == Some("added"))
}

/// Where the first of the run-token pass's other triggers may start in `b[from..to]` (see
/// `specs`): an authorization scheme and the blank its trigger needs after it, a
/// DigitalOcean token, an Azure key's name — words a run's characters can spell. Read
/// once, by their first letters; the text after `to` is read too (the run may end inside
/// the trigger: `xoxa-aaaa-dop_v1_…`), and a word glued after a letter or a digit is not a
/// start (the trigger begins at a word border), so `sk-Bearer-` runs do not stop the skip.
fn other_trigger_in(b: &[u8], from: usize, to: usize) -> Option<usize> {
    const STARTS: [(&[u8], bool); 11] = [
        (b"Bearer", true),
        (b"bearer", true),
        (b"BEARER", true),
        (b"Basic", true),
        (b"basic", true),
        (b"BASIC", true),
        (b"doo_v1_", false),
        (b"dop_v1_", false),
        (b"dor_v1_", false),
        (b"AccountKey=", false),
        (b"SharedAccessKey=", false),
    ];
    // A field's name ends the run (its separator is no run character): only a name that
    // ends where the run does can be followed by one.
    let named = SECRET_NAMES
        .iter()
        .filter(|n| b[..to].ends_with(n.as_bytes()) && to - n.len() >= from)
        .map(|n| to - n.len())
        .min();
    let word = (from..to).find(|&i| {
        matches!(b[i], b'B' | b'b' | b'd' | b'A' | b'S')
            && STARTS.iter().any(|&(p, blank)| {
                let bordered = p[0] != b'A' && p[0] != b'S';
                b[i..].starts_with(p)
                    && (!bordered || !b[i - 1].is_ascii_alphanumeric())
                    && (!blank || matches!(b.get(i + p.len()), Some(b' ' | b'\t')))
            })
    });
    word.into_iter().chain(named).min()
}

/// True when every token starting in `read[1..skip]` fails as a placeholder: its key's
/// longest run of letters and digits repeats at most four characters (see `validate_secret`,
/// which reads only the longest). It does when each such token's match (at least `reach`
/// bytes from its start, or to the end of `read` when the run ends there) holds a whole run
/// of at most four distinct characters longer than every run in `read` with more — so
/// `sk-aaaa…aaaa-Abc12-` repeated is not read again from each of its tokens.
fn placeholder_runs_decide(read: &[u8], skip: usize, reach: usize) -> bool {
    // (start, end) of the runs with at most four distinct characters longer than every run
    // with more, in order.
    let mut runs = Vec::new();
    let mut richest = 0;
    let mut at = 0;
    for run in alnum_runs(read) {
        if distinct_bytes(run) > 4 {
            richest = richest.max(run.len());
        } else {
            runs.push((at, at + run.len()));
        }
        at += run.len() + 1;
    }
    runs.retain(|&(a, b)| b - a > richest);
    // For each later start, the first such run that starts after its prefix (`sk-`, three
    // bytes at least) must end inside its match.
    let mut next = 0;
    (1..skip).all(|start| {
        while runs.get(next).is_some_and(|&(a, _)| a < start + 3) {
            next += 1;
        }
        let end = (start + reach).min(read.len());
        runs.get(next).is_some_and(|&(_, b)| b <= end)
    })
}

pub(super) fn spec(
    entity: Entity,
    pass: usize,
    trigger: String,
    exact: String,
    window: usize,
    validate: Validate,
) -> Spec {
    Spec {
        entity,
        pass,
        trigger,
        exact,
        window,
        anchored: true,
        back_window: None,
        domain_window: None,
        reach: None,
        reach_until_detection: false,
        validate,
        hand_search: None,
        hand_regex: None,
        may_start: None,
        may_pass: None,
        at_start: None,
        named_exact: None,
    }
}

/// Tokens other services issue, each found by its prefix: Google's OAuth access tokens
/// (`ya29.…`), PyPI's (`pypi-AgE…`), Docker Hub's (`dckr_pat_…`, `dckr_oat_…`), Shopify's
/// (`shpat_…`, `shpca_…`, `shppa_…`, `shpss_…`), Linear's (`lin_api_…`, `lin_oauth_…`),
/// Notion's (`ntn_…`, the older `secret_…`), Supabase's (`sbp_…`, `sb_secret_…`),
/// Databricks' (`dapi…`), Postman's (`PMAK-…`), Grafana's (`glsa_…`, `glc_…`), New Relic's
/// (`NRAK-…`, `NRII-…`), Sentry's (`sntrys_…`, `sntryu_…`), Atlassian's (`ATATT3…`),
/// Stripe's webhook secrets (`whsec_…`), 1Password's service accounts' (`ops_eyJ…`),
/// Doppler's (`dp.st.…`), Pulumi's (`pul-…`); and a PEM private key encoded in base64, as
/// a kubeconfig's `client-key-data` holds one (`LS0tLS1CRUdJTi…`, `-----BEGIN` encoded,
/// then `PRIVATE KEY` encoded at any of the three offsets base64 can put it, then the
/// key's body, on one line or wrapped: see `validate::base64_block_end`). A Google access
/// token may hold dots (a service account's `ya29.c.…`). Each is the length its service
/// gives, between word borders, or a run of at most 255 characters, read on to the run's
/// end once it passes (see `validate::past_the_cap`: with no cap, each failed candidate in
/// a run of them read the run to its end; a cap of thousands grew the pass's automata by as
/// many states); the validator refuses a placeholder, and a body that is no random one
/// (see `validate_secret`). And `pgpass`, a `.pgpass` file's name: its entries are read on
/// the lines after it (see `validate::pgpass_after`).
fn prefixed_tokens() -> String {
    [
        format!(r"{B}ya29\.[0-9A-Za-z_-][0-9A-Za-z_.-]{{29,254}}"),
        format!(r"{B}pypi-AgE[A-Za-z0-9_-]{{50,255}}"),
        format!(r"{B}dckr_(?:pat|oat)_[A-Za-z0-9_-]{{27,64}}"),
        format!(r"{B}shp(?:at|ca|pa|ss)_[a-fA-F0-9]{{32}}{B}"),
        format!(r"{B}lin_api_[A-Za-z0-9]{{40}}{B}"),
        format!(r"{B}lin_oauth_[a-f0-9]{{64}}{B}"),
        format!(r"{B}ntn_[0-9]{{11}}[A-Za-z0-9]{{35}}{B}"),
        format!(r"{B}sbp_[a-f0-9]{{40}}{B}"),
        format!(r"{B}sb_secret_[A-Za-z0-9_-]{{20,255}}"),
        format!(r"{B}dapi[a-f0-9]{{32}}(?:-[0-9]{{1,2}})?{B}"),
        format!(r"{B}PMAK-[a-f0-9]{{24}}-[a-f0-9]{{34}}{B}"),
        format!(r"{B}glsa_[A-Za-z0-9]{{32}}_[A-Fa-f0-9]{{8}}{B}"),
        format!(r"{B}glc_[A-Za-z0-9+/]{{32,255}}={{0,2}}"),
        format!(r"{B}NRAK-[A-Z0-9]{{27}}{B}"),
        format!(r"{B}NRII-[A-Za-z0-9_-]{{32}}"),
        format!(r"{B}sntry[us]_[A-Za-z0-9+/=_-]{{40,255}}"),
        format!(r"{B}ATATT3[A-Za-z0-9_=-]{{50,255}}"),
        format!(r"{B}whsec_[A-Za-z0-9+/]{{32,255}}={{0,2}}"),
        format!(r"{B}ops_eyJ[A-Za-z0-9+/=_-]{{100,255}}"),
        format!(
            r"{B}dp\.(?:st|ct|sa|scim|audit|pt)\.(?:[a-z0-9_-]{{2,35}}\.)?[A-Za-z0-9]{{40,44}}{B}"
        ),
        format!(r"{B}pul-[a-f0-9]{{40}}{B}"),
        format!(r"{B}secret_[A-Za-z0-9]{{43}}{B}"),
        format!(r"{B}pgpass{B}"),
        format!(
            r"{B}LS0tLS1CRUdJTi[A-Za-z0-9+/]{{0,40}}(?:UFJJVkFURSBL|UklWQVRFIEtF|SVZBVEUgS0VZ)[A-Za-z0-9+/]{{0,255}}"
        ),
    ]
    .join("|")
}

/// The prefixes of [`prefixed_tokens`], each with the length of what stands before the
/// token's random body (Doppler's environment name is read as part of its body).
const TOKEN_PREFIXES: [(&str, usize); 27] = [
    ("ya29.", 5),
    ("pypi-AgE", 8),
    ("dckr_pat_", 9),
    ("dckr_oat_", 9),
    ("shpat_", 6),
    ("shpca_", 6),
    ("shppa_", 6),
    ("shpss_", 6),
    ("lin_api_", 8),
    ("lin_oauth_", 10),
    ("ntn_", 4),
    ("sbp_", 4),
    ("sb_secret_", 10),
    ("dapi", 4),
    ("PMAK-", 5),
    ("glsa_", 5),
    ("glc_", 4),
    ("NRAK-", 5),
    ("NRII-", 5),
    ("sntrys_", 7),
    ("sntryu_", 7),
    ("ATATT3", 6),
    ("whsec_", 6),
    ("ops_eyJ", 7),
    ("dp.", 3),
    ("pul-", 4),
    ("secret_", 7),
];

/// The tokens of [`TOKEN_PREFIXES`] whose body mixes small letters, capitals and digits
/// (the others are hex, or capitals and digits).
pub(super) const MIXED_CASE_TOKENS: [&str; 15] = [
    "ya29.",
    "pypi-AgE",
    "dckr_pat_",
    "dckr_oat_",
    "lin_api_",
    "ntn_",
    "sb_secret_",
    "glsa_",
    "glc_",
    "sntrys_",
    "ATATT3",
    "whsec_",
    "ops_eyJ",
    "dp.",
    "secret_",
];

/// The random body of a token of [`prefixed_tokens`] that `m` (its match) starts with, if
/// it is one; a base64-encoded key's is the whole match.
pub(super) fn prefixed_token_body(m: &str) -> Option<&[u8]> {
    if m.starts_with("LS0tLS1CRUdJTi") {
        return Some(m.as_bytes());
    }
    let &(_, skip) = TOKEN_PREFIXES.iter().find(|(p, _)| m.starts_with(p))?;
    Some(&m.as_bytes()[skip..])
}

/// Keys that AI services and agents' tools issue, each found by its prefix and its length
/// (see `validate::validate_ai_token`): Groq's (`gsk_`), Replicate's (`r8_`),
/// Perplexity's (`pplx-`), Tavily's (`tvly-`, `tvly-dev-`, `tvly-prod-`), xAI's (`xai-`),
/// LangSmith's (`lsv2_pt_`, `lsv2_sk_`), Pinecone's (`pcsk_`), Firecrawl's (`fc-`), E2B's
/// (`e2b_`), Langfuse's secret keys (`sk-lf-`), Cerebras' (`csk-`), Fireworks' (`fw_`),
/// NVIDIA's (`nvapi-`), Browserbase's (`bb_live_`), ElevenLabs' (`sk_` and 48 hex
/// digits); an Azure storage account's key under its names (`AccountKey=` in a
/// connection string, `--account-key`, `AZURE_STORAGE_KEY=`, …: 88 characters of base64);
/// a Telegram bot's token in its API's URL (`/bot…:AA…`); HashiCorp Vault's unseal and
/// recovery keys under their names ([`VAULT_KEY_NAMES`]); and the names of keys, setup
/// pages' labels and wallets' calls added last ([`MORE_CRYPTO_KEY_NAMES`],
/// [`LAST_SETUP_NAMES`], [`MORE_WALLET_CALLS`]), Solana's keypairs' calls and files
/// ([`SOLANA_KEY_NAMES`]). A pass of its own, every other pass's prefilter being full: 109
/// literals, past the 32 of the prefilter's faster kind.
fn ai_service_tokens() -> String {
    [
        format!(r"{B}gsk_[A-Za-z0-9]{{52}}"),
        format!(r"{B}r8_[A-Za-z0-9]{{37}}"),
        format!(r"{B}pplx-[A-Za-z0-9]{{48}}"),
        format!(r"{B}tvly-(?:dev-|prod-)?[A-Za-z0-9]{{32}}"),
        format!(r"{B}xai-[A-Za-z0-9]{{80}}"),
        format!(r"{B}lsv2_(?:pt|sk)_[a-f0-9]{{32}}_[a-f0-9]{{10}}"),
        format!(r"{B}pcsk_[A-Za-z0-9]{{4,10}}_[A-Za-z0-9]{{40,80}}"),
        format!(r"{B}fc-[a-f0-9]{{32}}"),
        format!(r"{B}e2b_[a-f0-9]{{40}}"),
        format!(r"{B}sk-lf-[0-9a-f]{{8}}-[0-9a-f]{{4}}-[0-9a-f]{{4}}-[0-9a-f]{{4}}-[0-9a-f]{{12}}"),
        format!(r"{B}csk-[a-z0-9]{{48}}"),
        format!(r"{B}fw_[A-Za-z0-9]{{24}}"),
        format!(r"{B}nvapi-[A-Za-z0-9_-]{{64}}"),
        format!(r"{B}bb_live_[A-Za-z0-9_-]{{27}}"),
        format!(r"{B}sk_[a-f0-9]{{48}}"),
        // (An Azure storage account's key under the names a connection string, the CLI,
        // SDKs, Terraform and PowerShell give it, quoted or not, a JSON object's key too;
        // glued to a prefix, `azure_storage_account_key`: reviews 80 and 81.)
        r#"(?:AccountKey|accountkey|ACCOUNTKEY|AZURE_STORAGE_KEY|AZURE_STORAGE_ACCOUNT_KEY|AZURE_STORAGE_ACCESS_KEY|ARM_ACCESS_KEY|account_key|accountKey|access_key)["']?[ \t]*[=:][ \t]*["']?[A-Za-z0-9+/]{86}=="#
            .to_owned(),
        r#"(?:--account-key|-StorageAccountKey|-AccountKey)[ \t=]+["']?[A-Za-z0-9+/]{86}=="#
            .to_owned(),
        // (A Telegram bot's token in its API's URL, `…/bot7012345678:AAF…/sendMessage`,
        // where no word border stands before its id: see `validate_bot_token`.)
        r"/bot[0-9]{8,10}:AA[A-Za-z0-9_-]{33}".to_owned(),
        literals(&[
            &MORE_CRYPTO_KEY_NAMES,
            &LAST_SETUP_NAMES,
            &MORE_WALLET_CALLS,
            &VAULT_KEY_NAMES,
            &VAULT_UNSEAL_BODIES,
            &SOLANA_KEY_NAMES,
        ]),
    ]
    .join("|")
}

/// Where a Solana keypair's secret key stands (see `validate::solana_key`): the calls that
/// take one — web3.js' `Keypair.fromSecretKey(…)`, Rust's `Keypair::from_bytes(…)`,
/// solders' `Keypair.from_bytes(…)`, `Keypair.from_json(…)` and
/// `Keypair.from_base58_string(…)`, solana-py's `Keypair.from_secret_key(…)`, Go's
/// `solana.PrivateKeyFromBase58(…)`, and its 32 bytes' seed to `Keypair.fromSeed(…)` — the
/// files that hold one, `~/.config/solana/id.json` and a `keypair.json` (`cat` prints the
/// bytes on the next line), and the name a `.env` gives one (`PRIVATE_KEY=[…]`). Among the
/// nineteenth pass's patterns (each with what stands before it in those forms, `Keypair.`,
/// a path's `/`: `fromSecretKey(` and `id.json` alone matched other calls and files,
/// `paid.json`).
pub(super) const SOLANA_KEY_NAMES: [&str; 14] = [
    "Keypair.fromSecretKey(",
    "Keypair::from_bytes(",
    "Keypair.from_bytes(",
    "Keypair.from_base58_string(",
    "/id.json",
    "\\id.json",
    "keypair.json",
    "Keypair.json",
    // (Review 86: more calls.)
    "Keypair.from_json(",
    "Keypair.from_secret_key(",
    "PrivateKeyFromBase58(",
    "Keypair.fromSeed(",
    "PRIVATE_KEY=[",
    "PRIVATE_KEY=\"[",
];

/// The names HashiCorp Vault's unseal and recovery keys go by (see
/// `validate::vault_keys`): `vault operator init`'s output (`Unseal Key 1: …`, `Recovery
/// Key 1: …`; with `-format=json`, `"unseal_keys_b64": […]`, `"recovery_keys_hex": […]`),
/// the command that takes one (`vault operator unseal …`, the older `vault unseal …`), the
/// API's (`"keys_base64": […]`), and the names scripts and prose give them
/// (`VAULT_UNSEAL_KEY=`, `unseal_key:`, `unsealKey`, `--unseal-key=`, `recovery_key`, `the
/// unseal key is …`, Go's `RecoveryKeysB64`, bank-vaults' `vault-unseal-0`), the API's hex
/// keys (`"keys": […]`) and `vault operator rekey`'s lines (`Key 1: …`); the key the
/// API's unseal takes is under [`VAULT_UNSEAL_BODIES`]. Among the nineteenth pass's
/// patterns.
pub(super) const VAULT_KEY_NAMES: [&str; 27] = [
    "Unseal Key",
    "Unseal key",
    "unseal key",
    "UNSEAL KEY",
    "unseal_key",
    "UNSEAL_KEY",
    "unsealKey",
    "UnsealKey",
    "unseal-key",
    "Recovery Key",
    "Recovery key",
    "recovery_key",
    "RECOVERY_KEY",
    "recoveryKey",
    "keys_base64",
    "operator unseal",
    "vault unseal",
    // (Review 83: prose's and options' spellings, Go's fields, bank-vaults' names, the
    // API's hex keys, `vault operator rekey`'s lines.)
    "recovery key",
    "RECOVERY KEY",
    "recovery-key",
    "RecoveryKey",
    "KeysB64",
    "vault-unseal-",
    "\"keys\": [",
    "\"keys\":[",
    "Key 1:",
    // (`"keys" : [` as some printers space it.)
    "\"keys\" : [",
];

/// The names the key share the Vault API's unseal takes goes by in its body (see
/// `validate::vault_call_near`: only with the API's path near): `{"key": "…"}`, `{'key':
/// '…'}`, escaped in a tool call's JSON (`{\"key\": \"…\"}`), PowerShell's `@{ key = "…"
/// }`, a JavaScript object's `{ key: '…' }`, YAML's indented `key: "…"` (review 86) — each
/// with what those forms write before `key` (`@{`, `{`, an indent), not every ` key: "` of
/// prose and code. Read as [`VAULT_KEY_NAMES`] are; among the nineteenth pass's patterns.
pub(super) const VAULT_UNSEAL_BODIES: [&str; 9] = [
    "\"key\"",
    "'key'",
    "\"key\\\"",
    "@{ key = \"",
    "@{ key = '",
    "{ key: \"",
    "{ key: '",
    "  key: \"",
    "  key: '",
];

/// More names of keys, as [`CRYPTO_KEY_NAMES`] (see `validate::crypto_key_value`): other
/// spellings (`MASTER KEY`, `AES Key`, `HMAC key`, `symmetric key`) and Laravel's
/// `APP_KEY` (`base64:…`). Among the nineteenth pass's patterns, the eighteenth's
/// prefilter being full (review 80).
pub(super) const MORE_CRYPTO_KEY_NAMES: [&str; 20] = [
    "HMAC Key",
    "hmacKey",
    "AES KEY",
    "Symmetric Key",
    "symmetric_key",
    "MASTER KEY",
    "SIGNING KEY",
    "DECRYPTION KEY",
    "Decryption Key",
    "AES Key",
    "aes key",
    "HMAC key",
    "hmac key",
    "HMAC_KEY",
    "hmac_key",
    "symmetric key",
    "Symmetric key",
    "Fernet Key",
    "fernetKey",
    "APP_KEY",
];

/// More names of a one-time password's key, as [`SETUP_NAMES`]: capitals and
/// `Authenticator Key` (review 80). Among the nineteenth pass's patterns.
pub(super) const LAST_SETUP_NAMES: [&str; 3] =
    ["YOUR KEY", "Authenticator Key", "AUTHENTICATOR KEY"];

/// More calls that take a wallet's private key, as [`WALLET_CALLS`]: go-ethereum's
/// `crypto.HexToECDSA("…")`, ethers' `new SigningKey('0x…')` (review 80), Rust's and
/// web3.js' (below). Among the nineteenth pass's patterns.
pub(super) const MORE_WALLET_CALLS: [&str; 7] = [
    "HexToECDSA(",
    "SigningKey(",
    // (Rust's ethers and alloy, `LocalWallet::from_str("0x…")`,
    // `PrivateKeySigner::from_str(…)`; web3.js' `web3.eth.accounts.wallet.add('0x…')`.)
    "Wallet::from_str(",
    "Signer::from_str(",
    "wallet.add(",
    // (The value a wallet's or a signer's type is given, Rust's `let wallet: LocalWallet =
    // "0x…".parse()?`, `let signer: PrivateKeySigner = "…".parse()?` — review 82.)
    "Wallet = \"",
    "Signer = \"",
];

/// The triggers of [`prefixed_tokens`]: each prefix and a few characters of the token.
fn prefixed_token_triggers() -> String {
    [
        format!(r"{B}ya29\.[0-9A-Za-z_-]{{8}}"),
        format!(r"{B}pypi-AgE[A-Za-z0-9_-]{{8}}"),
        format!(r"{B}dckr_(?:pat|oat)_[A-Za-z0-9_-]{{8}}"),
        format!(r"{B}shp[a-z]{{2}}_[a-fA-F0-9]{{8}}"),
        format!(r"{B}lin_api_[A-Za-z0-9]{{8}}"),
        format!(r"{B}lin_oauth_[a-f0-9]{{8}}"),
        format!(r"{B}ntn_[0-9]{{8}}"),
        format!(r"{B}sbp_[a-f0-9]{{8}}"),
        format!(r"{B}sb_secret_[A-Za-z0-9_-]{{8}}"),
        format!(r"{B}dapi[a-f0-9]{{8}}"),
        format!(r"{B}PMAK-[a-f0-9]{{8}}"),
        format!(r"{B}glsa_[A-Za-z0-9]{{8}}"),
        format!(r"{B}glc_[A-Za-z0-9]{{8}}"),
        format!(r"{B}NRAK-[A-Z0-9]{{8}}"),
        format!(r"{B}NRII-[A-Za-z0-9_-]{{8}}"),
        format!(r"{B}sntry[a-z]_[A-Za-z0-9]{{8}}"),
        format!(r"{B}ATATT3[A-Za-z0-9_=-]{{8}}"),
        format!(r"{B}whsec_[A-Za-z0-9+/]{{8}}"),
        format!(r"{B}ops_eyJ[A-Za-z0-9+/=_-]{{8}}"),
        format!(r"{B}dp\.[a-z]{{2,5}}\."),
        format!(r"{B}pul-[a-f0-9]{{8}}"),
        format!(r"{B}secret_[A-Za-z0-9]{{8}}"),
        format!(r"{B}pgpass{B}"),
        format!(r"{B}LS0tLS1CRUdJTi"),
    ]
    .join("|")
}

pub(super) fn specs() -> Vec<Spec> {
    // Line breaks as written, JSON-escaped once or twice, or flattened to spaces.
    // (A quoted key in e-mail or a comment block puts `> ` or `# ` after each break.)
    let nl = r"(?:(?:\r?\n|(?:\\){1,3}r(?:\\){1,3}n|(?:\\){1,3}n)(?:[>#] ?)?|[ \t])";
    // A private key block: the BEGIN line, then header lines (`Comment: https://…`,
    // `Version: OpenPGP.js v4.10.10`: any value short of a line break or `--`) and base64
    // lines of any length (line breaks as written, escaped, flattened to blanks or left out;
    // `/` escaped as `\/` by PHP's json_encode), then the END line — or, when it was cut
    // off, the body as far as it goes.
    let pem = format!(
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----(?:{nl}|[A-Za-z-]{{1,40}}: (?:[^\r\n\\-]|-[^\r\n\\-]){{1,100}}|(?:[A-Za-z0-9+/=]|\\/)+)+(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----)?"
    );
    let secret = [
        pem,
        format!(
            r"{B}(?:A3T[A-Z0-9]|AKIA|ASIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|ABIA|ACCA)[A-Z0-9]{{16}}{B}"
        ),
        format!(r"{B}gh[pousr]_[A-Za-z0-9]{{36,255}}{B}"),
        format!(r"{B}github_pat_[A-Za-z0-9_]{{22,255}}{B}"),
        format!(r"{B}sk-[A-Za-z0-9_-]{{20,400}}"),
        format!(r"{B}(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{{16,255}}{B}"),
        format!(r"{B}xox[abposre]-[A-Za-z0-9-]{{10,255}}"),
        format!(r"{B}xapp-[0-9]-[A-Za-z0-9-]{{10,255}}"),
        format!(r"{B}AIza[0-9A-Za-z_-]{{35}}"),
        format!(r"{B}hf_[A-Za-z0-9]{{30,64}}{B}"),
        format!(r"{B}gl(?:pat|dt|rt|ptt|ft|soat|cbt|imt|agent|oas)-[A-Za-z0-9_-]{{20,64}}"),
        format!(r"{B}npm_[A-Za-z0-9]{{36}}{B}"),
        // HashiCorp Vault's service, batch and recovery tokens (`hvs.6j4cuewowBGit65rheNoceI7`;
        // the trigger reads the shortest whole, so a run of short ones is no candidate).
        // (A namespace's id may follow: `hvs.….AbC12`.)
        format!(r"{B}hv[sbr]\.[A-Za-z0-9_-]{{24,400}}(?:\.[A-Za-z0-9]{{5}}{B})?"),
        format!(r"{B}SG\.[A-Za-z0-9_-]{{16,32}}\.[A-Za-z0-9_-]{{30,64}}"),
        r"https?://(?:hooks\.slack\.com|HOOKS\.SLACK\.COM)/(?:services|workflows|triggers)/[A-Za-z0-9_/-]{20,200}"
            .to_owned(),
        format!(r"{B}eyJ[A-Za-z0-9_-]{{5,}}\.eyJ[A-Za-z0-9_-]{{5,}}\.[A-Za-z0-9_-]{{10,}}"),
        format!(r"{B}do[opr]_v1_[a-f0-9]{{64}}{B}"),
        // Azure storage and Service Bus keys in a connection string (the value is the
        // secret: see `validate_secret`).
        r"AccountKey=[A-Za-z0-9+/]{86}==|SharedAccessKey=[A-Za-z0-9+/]{43}=".to_owned(),
        // A URL's credentials (`postgres://app:s3cret@db:5432`): the user (RFC 3986's
        // userinfo characters, and an `@` a folded `%40` became), a colon, the password (the
        // validator ends it at the first `@` a host follows).
        format!(r"://{URL_USER}{{0,256}}:{URL_PASSWORD}{{1,256}}@"),
        // An HTTP authorization's credentials: a bearer token (its run is read to its end
        // by the validator), or a basic one (base64 of `user:password`).
        format!(r"{B}(?:Bearer|bearer|BEARER)[ \t]{{1,16}}{BEARER}{{16}}"),
        format!(r"{B}(?:Basic|basic|BASIC)[ \t]{{1,16}}{BASIC}{{8}}"),
        named_secret(&SECRET_NAMES[..RUN_PASS_NAMES], false),
        other_commands(),
        positional_commands(Positional::All),
        RESP_AUTH.to_owned(),
        stdin_writers(),
        here_strings(),
        credential_calls(),
        positional_commands(Positional::Here),
        sql_passwords(),
        single_dash_options(),
        value_before_name(),
    ]
    .join("|");
    // Local parts and internationalised domains in any script; `@` or `%40`. (Where a
    // Latin-script address is glued to CJK text, the validator cuts the CJK off.)
    // A percent-encoded character other than `@` (`%2B` for `+`) belongs to the local part;
    // `%40` is the `@` itself.
    let local = r"(?:[A-Za-z0-9._+'\-\p{L}\p{M}\p{N}]|%(?:[0-35-9A-Fa-f][0-9A-Fa-f]|4[1-9A-Fa-f]))";
    let label = r"[A-Za-z0-9\-\p{L}\p{M}\p{N}]";
    // Lengths (64-character local part, 63-character labels, 2–24-letter TLD) are checked by
    // the validator: counted Unicode classes would make the automaton huge.
    let email = format!(
        r"{local}+(?:@|%40){label}+(?:\.{label}+)*\.(?:xn--[A-Za-z0-9-]+|[A-Za-z]+|[\p{{L}}\p{{M}}&&[^\x00-\x7F]]+)"
    );
    // Cards: digits in groups of four (or Amex 4-6-5) split by spaces, dashes or dots, or
    // glued to the word before them (`VISA4111…`): the letter is skipped by the validator.
    let card = format!(
        r"(?:{B}|[A-Za-z])(?:[0-9]{{13,19}}|[0-9]{{4}}(?:[ .-]{{1,2}}[0-9]{{4}}){{2,3}}(?:[ .-]{{1,2}}[0-9]{{1,3}})?|[0-9]{{4}}[ .-]{{1,2}}[0-9]{{6}}[ .-]{{1,2}}[0-9]{{4,5}})(?:{B}|[A-Za-z])"
    );
    let ipv6 = r"(?:(?m:^)|[^0-9A-Za-z_:./])(?:(?:[0-9A-Fa-f]{0,4}:){3,8}[0-9A-Fa-f]{0,4}(?:\.[0-9]{1,3}){0,3}|[0-9A-Fa-f]{1,4}::[0-9A-Fa-f]{1,4}|::[0-9A-Fa-f]{1,4})".to_owned();
    let ipv4 = format!(r"{B}[0-9]{{1,3}}(?:\.[0-9]{{1,3}}){{3}}{B}");
    // A separated SSN may have a card glued on after it (see `validate_ssn`).
    let ssn = format!(
        r"(?:\\[nrt]|{B})(?:(?:[0-9]{{3}}-[0-9]{{2}}-[0-9]{{4}}|[0-9]{{3}} [0-9]{{2}} [0-9]{{4}}|[0-9]{{3}}\.[0-9]{{2}}\.[0-9]{{4}})(?:{B}|[0-9])|[0-9]{{9}}{B})"
    );
    // Phones: a run of digit groups; the grammar is read by `phone::validate_phone`.
    let esc = format!(r"(?:\\[nrt]|{B})");
    // Read by the validator itself: no exact pattern.
    let phone = String::new();
    // AWS secret access keys: 40 characters between non-key borders, only after a key name:
    // the name is the trigger, the key is searched for right after it.
    let aws_secret = r"(?:^|[^A-Za-z0-9/+])[A-Za-z0-9/+]{40}(?:[^A-Za-z0-9/+=]|$)".to_owned();
    let aws_trigger =
        r"(?i-u:secret[_ ]?access[_ ]?key|secret-access-key|aws_secret|secret_key)".to_owned();
    // Triggers: short prefixes of the exact patterns, so the combined pass stays a small DFA.
    let secret_trigger = format!(
        r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----(?:\r?\n|(?:\\){{1,3}}[rn]|[ \t>#]){{0,8}}[A-Za-z0-9+/=]{{4}}|{B}(?:A3T[A-Z0-9]|AKIA|ASIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|ABIA|ACCA)[A-Z0-9]{{4}}|{B}gh[pousr]_[A-Za-z0-9]{{8}}|{B}github_pat_|{B}[srp]k_(?:live|test)_|{B}AIza[0-9A-Za-z_-]{{4}}|{B}hf_[A-Za-z0-9]{{8}}|{B}eyJ[A-Za-z0-9_-]{{5}}[A-Za-z0-9_-]*\.eyJ[A-Za-z0-9_-]{{5}}[A-Za-z0-9_-]*\.[A-Za-z0-9_-]{{10}}|{B}gl(?:pat|dt|rt|ptt|ft|soat|cbt|imt|agent|oas)-[A-Za-z0-9_-]{{8}}|{B}npm_[A-Za-z0-9]{{8}}|{B}hv[sbr]\.[A-Za-z0-9_-]{{24}}|{B}SG\.[A-Za-z0-9_-]{{8}}|https?://(?:hooks\.slack\.com|HOOKS\.SLACK\.COM)/"
    );
    let run_token_trigger = format!(
        r"{B}(?:sk-[A-Za-z0-9_-]{{8}}|xox[abposre]-|xapp-[0-9]-)|{B}do[opr]_v1_[a-f0-9]{{8}}|AccountKey=[A-Za-z0-9+/]{{8}}|SharedAccessKey=[A-Za-z0-9+/]{{8}}|://{URL_USER}*:{URL_PASSWORD}|{B}(?:Bearer|bearer|BEARER)[ \t]{{1,16}}{BEARER}{{8}}|{B}(?:Basic|basic|BASIC)[ \t]{{1,16}}{BASIC}{{8}}|{}|{}",
        named_secret(&SECRET_NAMES[..RUN_PASS_NAMES], false),
        positional_commands(Positional::Named),
    );
    // Commands that take a password, writers into a reader's standard input, SQL's
    // `IDENTIFIED BY` and single-dash options: a pass of their own, apart from the run
    // tokens' (a failed token skips the rest of its run, which may end in a command's name:
    // `sk-x-echo …`) and from their prefilter (one prefilter for both held more literals
    // than it keeps, and the pass read every byte).
    let command_word_trigger = [
        other_commands(),
        positional_commands(Positional::Unnamed),
        RESP_AUTH.to_owned(),
        stdin_writers(),
        sql_passwords(),
        single_dash_options(),
    ]
    .join("|");
    // Credentials on command lines (see `command_line_secrets`): a pass of their own, so
    // the run-token pass's prefilter keeps its literals (one prefilter with both read the
    // text about twice as slowly).
    let command_line_trigger = command_line_secrets();
    // An `Authorization` header's credentials and the header names (see
    // `RUN_PASS_NAMES`): a pass of their own, so the command-line pass's prefilter has
    // room for more commands' names; and the positional commands' added since the
    // commands' pass's prefilter filled.
    let header_trigger = format!(
        "{}|{}|{}",
        authorization_header(),
        named_secret(&SECRET_NAMES[RUN_PASS_NAMES..], true),
        positional_commands(Positional::Added),
    );
    let email_trigger = format!(r"{local}+@{label}+\.");
    let iban_trigger = format!(r"{B}[A-Za-z]{{2}}[ -]{{0,2}}[0-9]{{2}}[ -]{{0,2}}[A-Za-z0-9]{{4}}");
    let ipv6_trigger = r"(?:(?m:^)|[^0-9A-Za-z_:./])(?:[0-9A-Fa-f]{0,4}:[0-9A-Fa-f]{0,4}:[0-9A-Fa-f]{0,4}:|[0-9A-Fa-f]{1,4}::[0-9A-Fa-f]|::[0-9A-Fa-f])".to_owned();
    let ipv4_trigger = format!(r"{B}[0-9]{{1,3}}\.[0-9]{{1,3}}\.[0-9]{{1,3}}\.[0-9]");
    // Five characters of digits and separators with two adjacent digits among them: every
    // grouped phone number has them after its first group (`98765 43210`), and runs of
    // one-digit groups (`1 2-3 …`) are not candidates at every digit.
    let c = r"[0-9 .\-/()]";
    let five_with_a_pair = format!(
        r"(?:[0-9]{{2}}{c}{{3}}|{c}[0-9]{{2}}{c}{{2}}|{c}{{2}}[0-9]{{2}}{c}|{c}{{3}}[0-9]{{2}})"
    );
    let phone_trigger = format!(
        r"\+[1-9][0-9 ().\-/]{{0,10}}[0-9]{{2}}|{esc}00[1-9]|\([0-9]{{2,3}}\)|{esc}1[ .-]?\(|{esc}[0-9]{{1,8}}[ .\-/(]{five_with_a_pair}|{esc}[0-9]{{8,13}}{B}"
    );
    vec![
        spec(
            Entity::Secret,
            0,
            secret_trigger,
            secret.clone(),
            SECRET_WINDOW,
            validate_secret,
        ),
        Spec {
            entity: Entity::Secret,
            pass: 0,
            trigger: aws_trigger,
            exact: aws_secret,
            window: 96,
            anchored: false,
            back_window: None,
            domain_window: None,
            reach: None,
            reach_until_detection: false,
            validate: validate_aws_border,
            hand_search: None,
            hand_regex: None,
            may_start: None,
            may_pass: None,
            at_start: None,
            named_exact: None,
        },
        Spec {
            reach: Some(run_token_reach),
            named_exact: Some(named_exactly),
            ..spec(
                Entity::Secret,
                1,
                run_token_trigger,
                secret.clone(),
                SECRET_WINDOW,
                validate_secret,
            )
        },
        Spec {
            named_exact: Some(command_named_exactly),
            ..spec(
                Entity::Secret,
                7,
                command_word_trigger,
                secret.clone(),
                SECRET_WINDOW,
                validate_secret,
            )
        },
        Spec {
            named_exact: Some(named_exactly),
            reach: Some(here_string_reach),
            ..spec(
                Entity::Secret,
                8,
                here_strings(),
                secret.clone(),
                SECRET_WINDOW,
                validate_secret,
            )
        },
        // (A pass of their own, not the here-strings' (whose `<<` alone is found fast)
        // nor any other: their literals made another's prefilter the slower kind.)
        Spec {
            named_exact: Some(call_or_tool_exactly),
            ..spec(
                Entity::Secret,
                11,
                format!(
                    "{}|{}",
                    credential_calls(),
                    positional_commands(Positional::Here)
                ),
                secret.clone(),
                SECRET_WINDOW,
                validate_secret,
            )
        },
        Spec {
            hand_search: Some(value_before_name_at),
            hand_regex: Some(prose_value_closed()),
            may_start: Some(opens_a_mark),
            ..spec(
                Entity::Secret,
                9,
                value_before_name(),
                secret.clone(),
                SECRET_WINDOW,
                validate_secret,
            )
        },
        // (Their own pass: in pass 0's, the prefilter that holds their prefixes too read
        // every text 7% more slowly.)
        spec(
            Entity::Secret,
            6,
            prefixed_token_triggers(),
            prefixed_tokens(),
            SECRET_WINDOW,
            validate_prefixed_token,
        ),
        // (Its exact pattern is its trigger.)
        spec(
            Entity::Secret,
            6,
            sql_set_password(),
            sql_set_password(),
            SECRET_WINDOW,
            validate_secret,
        ),
        // A password's name in other languages (its exact pattern is its trigger).
        spec(
            Entity::Secret,
            12,
            local_secret(&LOCAL_NAMES),
            local_secret(&LOCAL_NAMES),
            SECRET_WINDOW,
            validate_secret,
        ),
        // The names and calls added since (their exact pattern is their trigger: one kind,
        // so that a candidate's match is its exact match, see `Kind::trigger_is_exact` —
        // as two kinds each candidate was searched again, `pw=` over and over 5.4x the
        // bench text, 3.8x as one).
        spec(
            Entity::Secret,
            13,
            added_secret(),
            added_secret(),
            SECRET_WINDOW,
            validate_secret,
        ),
        // A wallet's recovery words under their names, its extended private key by its
        // prefix, a Wi-Fi QR code's password after its `WIFI:` (the literals are the
        // trigger; what follows is read by hand), one kind.
        spec(
            Entity::Secret,
            14,
            fifteenth_pass_trigger(),
            fifteenth_pass_trigger(),
            SECRET_WINDOW,
            super::validate::wallet_secret,
        ),
        // The names of private keys in Wallet Import Format, a PEM block in base64, the
        // rest of a Kubernetes Secret's literals (see `sixteenth_pass_trigger`): the
        // fifteenth pass's literals past 32.
        spec(
            Entity::Secret,
            15,
            sixteenth_pass_trigger(),
            sixteenth_pass_trigger(),
            SECRET_WINDOW,
            super::validate::key_secret,
        ),
        // A secret store's command that sets values under keys of any name (see
        // `STORE_COMMANDS`), what two-factor sign-in's setup shows once (see
        // `SETUP_NAMES`), a mailbox's or an FTP server's login (see `MAIL_LOGINS`),
        // Kustomize's generated Secrets, a Secret's kind quoted: a pass of its own, 31
        // literals, so that neither the fifteenth pass's prefilter nor the sixteenth's (31
        // each) passes 32.
        spec(
            Entity::Secret,
            16,
            seventeenth_pass_trigger(),
            seventeenth_pass_trigger(),
            SECRET_WINDOW,
            super::validate::seventeenth_pass_secret,
        ),
        // A symmetric or signing key under its name in prose, a wallet's private key in a
        // call (see `CRYPTO_KEY_NAMES`, `WALLET_CALLS`): the seventeenth pass is full.
        spec(
            Entity::Secret,
            17,
            eighteenth_pass_trigger(),
            eighteenth_pass_trigger(),
            SECRET_WINDOW,
            super::validate::eighteenth_pass_secret,
        ),
        // A secret a command printed, on the line after its command line (see
        // `SECRET_PRINTERS`): a pass of its own, every other literal pass's prefilter full.
        spec(
            Entity::Secret,
            20,
            literals(&[&SECRET_PRINTERS]),
            literals(&[&SECRET_PRINTERS]),
            SECRET_WINDOW,
            super::validate::printed_secret,
        ),
        // Keys AI services and agents' tools issue, an Azure storage account's key (see
        // `ai_service_tokens`): their exact pattern is their trigger.
        spec(
            Entity::Secret,
            18,
            ai_service_tokens(),
            ai_service_tokens(),
            SECRET_WINDOW,
            super::validate::validate_ai_token,
        ),
        // A data source name as Go's MySQL driver writes it, `root:…@tcp(db:3306)/app`:
        // from its protocol, the credentials read back (the prefilter's 32nd literal; its
        // `@unix(` would be a 33rd, past the faster kind's).
        spec(
            Entity::Secret,
            6,
            r"@tcp6?\(".to_owned(),
            r"@tcp6?\(".to_owned(),
            SECRET_WINDOW,
            super::validate::validate_dsn_password,
        ),
        // (Their exact pattern is their trigger.)
        spec(
            Entity::Secret,
            10,
            header_trigger.clone(),
            header_trigger,
            SECRET_WINDOW,
            validate_secret,
        ),
        // (Its exact pattern is its trigger: a smaller automaton than all the secrets',
        // read once per candidate, and a candidate is a word as common as `curl`.)
        Spec {
            reach: Some(command_reach),
            at_start: Some(secret_option()),
            ..spec(
                Entity::Secret,
                4,
                command_line_trigger.clone(),
                // (And what `at_start` finds.)
                format!("{command_line_trigger}|{}", secret_option()),
                SECRET_WINDOW,
                validate_secret,
            )
        },
        Spec {
            // The local part is at most 64 characters (at most 256 bytes): no start further
            // before the `@` (or the `%` of `%40`) can be an address.
            back_window: Some((b"@", 256)),
            // A domain is at most 253 bytes.
            domain_window: Some(256),
            reach: Some(email_reach),
            hand_search: Some(email_trigger_at),
            may_pass: Some(email_may_pass),
            ..spec(Entity::Email, 2, email_trigger, email, 400, validate_email)
        },
        Spec {
            reach: Some(card_reach),
            reach_until_detection: true,
            ..spec(Entity::CreditCard, 3, card.clone(), card, 40, validate_card)
        },
        spec(Entity::IpAddress, 3, ipv6_trigger, ipv6, 64, validate_ipv6),
        Spec {
            reach: Some(ipv4_reach),
            ..spec(Entity::IpAddress, 3, ipv4_trigger, ipv4, 24, validate_ipv4)
        },
        // Read by its validator: no exact pattern.
        spec(Entity::Ssn, 3, ssn, String::new(), 24, validate_ssn),
        // A Telegram bot's token, `6123456789:AAHdqTcv…`: the bot's id and `:AA`, then 33
        // characters (before the phone number, which would take the id alone and leave the
        // secret in clear). Glued to a letter or `_` too (`bot6123…:AA…`,
        // `BOT_TOKEN_6123…`, `/Bot6123…`): that character opens the match (see
        // `validate_bot_token`).
        spec(
            Entity::Secret,
            3,
            format!(r"(?:{B}|[A-Za-z_])[0-9]{{8,10}}:AA"),
            format!(r"(?:{B}|[A-Za-z_])[0-9]{{8,10}}:AA[A-Za-z0-9_-]{{33}}"),
            64,
            super::validate::validate_bot_token,
        ),
        // Read by its validator (no exact pattern); after the digit-led kinds, so a failed
        // candidate makes only the phone number look again.
        spec(
            Entity::Iban,
            3,
            iban_trigger,
            String::new(),
            100,
            validate_iban,
        ),
        Spec {
            reach: Some(phone_reach),
            reach_until_detection: true,
            ..spec(
                Entity::Phone,
                3,
                phone_trigger,
                phone,
                PHONE_WINDOW,
                validate_phone,
            )
        },
        // A Markdown table's row, its header naming a secret's column (or a database
        // client's table: psql's, MySQL's), or a table aligned with blanks: its rule, or a
        // data frame's first row (its next rows are found by hand only, from what the scan
        // read: see `table_row_at`).
        Spec {
            hand_search: Some(table_row_at),
            ..spec(
                Entity::Secret,
                5,
                r#"(?m:^)[ \t>#/*-]{0,24}\||(?m:^)[^\r\n|]{1,1024}\||["'`][ \t>#/*-]{0,24}\||<[Tt][Rr][ \t\r\n/>]|(?m:^)(?:-{2,}[ \t]+-|-[ \t]+--|={2,}[ \t]+=|=[ \t]+==|[0-9]{1,12} )"#
                    .to_owned(),
                String::new(),
                1,
                table_row_secret,
            )
        },
        // A wallet's private key in Wallet Import Format with no name before it (`5Kb8…`,
        // `L1aW…` pasted alone): a whole word of 51 or 52 characters of Base58, its
        // checksum checked, found by hand (no prefilter finds a word by its length).
        Spec {
            hand_search: Some(bare_wif_at),
            may_start: Some(may_start_wif),
            ..spec(
                Entity::Secret,
                19,
                r"(?-u:\b)[5KL9c][1-9A-HJ-NP-Za-km-z]{50,51}(?-u:\b)".to_owned(),
                String::new(),
                64,
                bare_wif,
            )
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Inputs for a lookup of `names` (see the two tests after this): each name, each of
    /// its prefixes, itself with any byte changed to one of `swaps` (alone, and followed by
    /// `after`), and itself followed by each of `tails`.
    fn name_variants(names: &[&str], swaps: &[u8], after: &[u8], tails: &[&str]) -> Vec<Vec<u8>> {
        let mut inputs = Vec::new();
        for name in names {
            let n = name.as_bytes();
            for end in 0..=n.len() {
                inputs.push(n[..end].to_vec());
            }
            for at in 0..n.len() {
                for &c in swaps {
                    let mut m = n.to_vec();
                    m[at] = c;
                    inputs.push(m.clone());
                    m.extend_from_slice(after);
                    inputs.push(m);
                }
            }
            for tail in tails {
                inputs.push([n, tail.as_bytes()].concat());
            }
        }
        inputs
    }

    /// `secret_name_at`'s tables answer what comparing every name would: for each name,
    /// each of its prefixes, itself with any byte changed (to a letter of another name, a
    /// separator or a byte past ASCII) and itself followed by what a field writes next.
    #[test]
    fn a_secret_names_lookup_is_every_name_compared() {
        let naive = |m: &[u8]| {
            SECRET_NAMES
                .iter()
                .filter(|n| m.starts_with(n.as_bytes()))
                .max_by_key(|n| n.len())
                .copied()
        };
        let inputs = name_variants(
            &SECRET_NAMES,
            b"ak_-KPTy:\xc3",
            b"=x",
            &["", "=", "\":", "_key: ", "Token=", "word"],
        );
        let mut found = 0;
        for m in &inputs {
            assert_eq!(
                secret_name_at(m),
                naive(m),
                "{}",
                String::from_utf8_lossy(m)
            );
            found += usize::from(naive(m).is_some());
        }
        // (Both answers are asked for: about one input in ten holds a name.)
        assert!(
            found > inputs.len() / 20 && found < inputs.len() / 2,
            "{found} of {}",
            inputs.len()
        );
    }

    /// `commands_at` answers what comparing every name would, in the list's order: for each
    /// name, each of its prefixes, itself with any byte changed (to a letter of another
    /// name, a blank, a byte past ASCII) and itself followed by what a line writes next —
    /// names that begin others (`mongo`, `mongostat`) and texts shorter than the lookup.
    #[test]
    fn a_commands_lookup_is_every_name_compared() {
        let naive = |m: &[u8]| -> Vec<&str> {
            PASSWORD_COMMANDS
                .iter()
                .filter(|c| m.starts_with(c.as_bytes()))
                .copied()
                .collect()
        };
        let inputs = name_variants(
            &PASSWORD_COMMANDS,
            b"astqe- S\xc3",
            b" -p x",
            &[" ", "stat -p", "sh", "-cli", ".exe", "\"", "d", "x y z"],
        );
        let mut found = 0;
        for m in &inputs {
            let got: Vec<&str> = commands_at(m).collect();
            assert_eq!(got, naive(m), "{}", String::from_utf8_lossy(m));
            found += usize::from(!got.is_empty());
        }
        // (Both answers are asked for.)
        assert!(
            found > inputs.len() / 10 && found < inputs.len() * 9 / 10,
            "{found} of {}",
            inputs.len()
        );
    }

    /// `netrc_follows` answers as the pattern's `.netrc` form matches: generated lines of
    /// the form's parts, each right or wrong (no blank, a line break where a blank must be,
    /// other white space — past ASCII too, inside a word and after it — a longer word).
    #[test]
    fn a_netrc_look_ahead_answers_as_the_form_matches() {
        let form = regex::Regex::new(
            r"^(?:login|LOGIN)[ \t]+[^\s]+[ \t\r\n]+(?:account[ \t]+[^\s]+[ \t\r\n]+)?(?:password|passwd)[ \t]",
        )
        .unwrap();
        // (Each part right four times in five.)
        let blanks = ([" ", "\t", " \t "], ["", "\n", "\u{a0}", "\u{b}"]);
        let words = (
            ["bob", "x", "login", "é", "password", "中b", "aé"],
            [
                "",
                "b\u{a0}b",
                "a\u{b}b",
                "b\u{2003}",
                "é\u{85}",
                "\u{3000}",
            ],
        );
        let spaces = (
            [" ", "\n", "\r\n", " \t "],
            ["", "\u{c}", "\u{2003}", "\u{b}"],
        );
        let accounts = (["", "", "account"], ["accounts", "Account"]);
        let passwords = (
            ["password", "passwd"],
            ["passwords", "pass", "", "PASSWORD"],
        );
        let ends = ([" ", "\t"], ["\n", "", "x"]);
        let mut next = crate::pii::tests::numbers(0x2545_f491_4f6c_dd1d);
        let mut pick = |(right, wrong): (&[&'static str], &[&'static str])| match next(5) {
            0 => wrong[next(wrong.len())],
            _ => right[next(right.len())],
        };
        let (mut matched, mut other, mut neither) = (0, 0, 0);
        for _ in 0..100_000 {
            let mut text = format!(
                "{}{}{}{}",
                pick((&["login", "LOGIN"], &["login"])),
                pick((&blanks.0, &blanks.1)),
                pick((&words.0, &words.1)),
                pick((&spaces.0, &spaces.1))
            );
            let account = pick((&accounts.0, &accounts.1));
            if !account.is_empty() {
                text += &format!(
                    "{account}{}{}{}",
                    pick((&blanks.0, &blanks.1)),
                    pick((&words.0, &words.1)),
                    pick((&spaces.0, &spaces.1))
                );
            }
            text += pick((&passwords.0, &passwords.1));
            text += pick((&ends.0, &ends.1));
            let follows = netrc_follows(&text, "login".len());
            assert_eq!(follows, form.is_match(&text), "{text:?}");
            other += usize::from(!text.is_ascii());
            match form.is_match(&text) {
                true => matched += 1,
                false => neither += 1,
            }
        }
        assert!(
            matched > 5_000 && neither > 5_000 && other > 5_000,
            "{matched} {other} {neither}"
        );
    }

    /// Where a header name starts, the longest name found there is the header's (as
    /// `secret_name_at` reads a candidate's name, in the headers' pass and the
    /// run-token pass alike): no header name begins a field name of the run-token pass, and
    /// a field name that begins a header name (`auth`, `auth-token`) is the longest there
    /// only where the header's is not (`auth: …`).
    #[test]
    fn where_a_header_name_starts_the_longest_name_is_it() {
        let (fields, headers) = SECRET_NAMES.split_at(RUN_PASS_NAMES);
        for f in fields {
            for h in headers {
                assert!(!f.starts_with(h), "{f} {h}");
                if h.starts_with(f) {
                    assert_eq!(secret_name_at(format!("{h}: x").as_bytes()), Some(*h));
                    assert_eq!(secret_name_at(format!("{f}: x").as_bytes()), Some(*f));
                }
            }
        }
        assert!(header_name("Vault-Token") && !header_name("password"));
    }

    /// `placeholder_runs_decide` says every token after the first fails as a placeholder
    /// only when it does: checked against reading each window (every start, every end from
    /// the shortest match on) the way `validate_secret` does, on generated runs of
    /// placeholder-like and key-like stretches of about the same lengths.
    #[test]
    fn the_placeholder_rule_holds_for_every_window() {
        let pieces: [&[u8]; 9] = [
            b"-",
            b"aaaa",
            b"aaaaaaa",
            b"abab",
            b"b",
            b"Ab3dE",
            b"f9hIjK",
            b"x",
            b"-aaaaaaaaaa",
        ];
        let mut next = crate::pii::tests::numbers(0x853c_49e6_748f_ea9b);
        let mut decided = 0;
        for _ in 0..20_000 {
            let len = 4 + next(40);
            let read: Vec<u8> = (0..len)
                .flat_map(|_| pieces[next(pieces.len())])
                .copied()
                .collect();
            let reach = 8 + next(40);
            let skip = 1 + next(read.len().min(2 * reach));
            if !placeholder_runs_decide(&read, skip, reach) {
                continue;
            }
            decided += 1;
            for start in 1..skip {
                for end in (start + reach).min(read.len())..=read.len() {
                    let longest = alnum_runs(&read[start..end])
                        .max_by_key(|run| run.len())
                        .unwrap_or_default();
                    assert!(
                        distinct_bytes(longest) <= 4,
                        "{} from {start} to {end}",
                        String::from_utf8_lossy(&read)
                    );
                }
            }
        }
        assert!(decided > 500, "{decided}");
    }
}
