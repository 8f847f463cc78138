//! Properties of the redactor: its output holds no detectable entity, every offset falls on a
//! UTF-8 boundary, redaction is idempotent, and no input makes it panic.

#![allow(clippy::unwrap_used)]

use std::sync::OnceLock;

use hooks_guardrails::PiiDetector;
use proptest::prelude::*;

fn detector() -> &'static PiiDetector {
    static D: OnceLock<PiiDetector> = OnceLock::new();
    D.get_or_init(PiiDetector::new)
}

const SAMPLES: [&str; 16] = [
    "jane.doe@example.com",
    "+1 (978) 917-3444",
    "+44 20 7981 2838",
    "385-324-8687",
    "123-45-6789",
    "4111 1111 1111 1111",
    "378282246310005",
    "192.168.1.20",
    "2001:db8::8a2e:370:7334",
    "DE89 3704 0044 0532 0130 00",
    "GB82WEST12345698765432",
    "AKIAIOSFODNN7EXAMPLE",
    "ghp_jfs5PmXFxQfcM97YtJ1PgVZSTOUbb7Q1QSaJ",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "ssn 078-05-1120",
    "sk-proj-abcdefghijklmnopqrstuvwxyz012345",
];

/// Text mixing arbitrary characters, digits and punctuation with real entities.
fn text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        3 => "\\PC{0,12}",
        2 => "[0-9 .:@+()-]{0,16}",
        2 => prop::sample::select(SAMPLES.to_vec()).prop_map(str::to_owned),
        1 => "[ ,;\n]{1,3}",
        // Where a secret's reading starts: commands, names, markup, YAML — and what cuts a
        // reading short: quotes, escapes, multibyte runs past the 1 KiB a command's words
        // are read for (a panic found by an attack review).
        2 => prop::sample::select(vec![
            "sqlplus scott/", "htpasswd -b f u ", "net use Z: \\\\s\\x ", "cmdkey /pass:",
            "schtasks /rp ", "password=", "<password a=\"b\">", "<e key=\"token\">",
            "<name>password</name>", "psk=\"", "Set-Item Env:TOKEN ", "mysql -p", "curl -u a:",
            "password: !!str ", "password: |\n  ", "nmcli d wifi c x password ", "\"", "'", "\\",
        ]).prop_map(str::to_owned),
        1 => prop::sample::select(vec!["€", "é", "日"]).prop_map(|c| c.repeat(400)),
        // Characters that fold to several ASCII characters, or to none, or to a separator.
        1 => prop::sample::select(vec!["℅", "㏂", "℀", "㎦", "㍸", "\u{200B}", "\u{00AD}", "＠", "４", "–", "\u{00A0}", "⑴"]).prop_map(str::to_owned),
    ];
    prop::collection::vec(piece, 0..12).prop_map(|v| v.concat())
}

/// Text built to cut a secret's reading short or run it past a bound: names and their
/// separators in the languages and forms the secrets' detector reads, then runs of one
/// character (multibyte, quotes, escapes, separators) long enough to cross the 256 bytes a
/// named value is judged on. (Found a value read whole to a script written without blanks
/// as an empty span — `token: 0“…“日`, a panic the generator above met once in a CI run.)
fn hostile() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        3 => prop::sample::select(vec![
            "password: ", "password=", "password is ", "Passwort ist ", "密码是", "パスワードは",
            "비밀번호는 ", "mdp : ", "le mot de passe est ", "wifi password ", "token: ",
            "api_key=", "pwd=", "\"password\": \"", "process.env.DB_PASSWORD || \"",
            "getattr(settings, \"DB_PASSWORD\", \"", "${DB_PASSWORD:-", "PASSWORD=",
            "password: !!str ", "<password>", "psk=", "mysql -p", "curl -u a:", "--password ",
            "IDENTIFIED BY '", "Authorization: Bearer ", "Basic ", "sk-", "ghp_", "eyJ",
            "user admin pass ", "密码：", "SENHA=", "Mot de passe : ", "password: |\n  ",
            "<e key=\"token\">", "sqlplus scott/", "a@", "@example.com", "https://u:",
            "AccountKey=", "export TOKEN=", "ENV PASSWORD ", "| password | ", "密码也是",
            "비밀번호가 ", "la contraseña es ", "System.getProperty(\"db.password\", \"",
            "env::var(\"DB_PASSWORD\").unwrap_or(\"", "\r\n", "℅", "\u{200B}",
            "+1 (978) ", "4111 ",
        ]).prop_map(str::to_owned),
        2 => (
            prop::sample::select(vec![
                "€", "é", "日", "하", "😀", "x", "0", "-", ".", " ", "'", "\"", "（", "）", "「",
                "」", "“", "”", "«", "»", "\\", "=", ":",
            ]),
            1usize..300,
        ).prop_map(|(c, n)| c.repeat(n)),
        2 => "[A-Za-z0-9]{1,20}",
        1 => "[ \n\t,;]{1,3}",
        1 => "\\PC{0,8}",
    ];
    prop::collection::vec(piece, 0..8).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn hostile_text_gives_sound_spans_and_redacts_completely(s in hostile()) {
        let mut last = 0;
        for d in detector().detect(&s) {
            prop_assert!(d.start < d.end && d.end <= s.len(), "{d:?} in {s:?}");
            prop_assert!(d.start >= last, "overlap in {s:?}");
            prop_assert!(s.is_char_boundary(d.start) && s.is_char_boundary(d.end));
            last = d.end;
        }
        let (once, _) = detector().redact(&s);
        let left = detector().detect(&once);
        prop_assert!(left.is_empty(), "{s:?} -> {once:?} still holds {left:?}");
    }

    #[test]
    fn detections_are_ordered_non_overlapping_and_on_char_boundaries(s in text()) {
        let mut last = 0;
        for d in detector().detect(&s) {
            prop_assert!(d.start < d.end && d.end <= s.len());
            prop_assert!(d.start >= last, "overlap in {s:?}");
            prop_assert!(s.is_char_boundary(d.start) && s.is_char_boundary(d.end));
            last = d.end;
        }
    }

    #[test]
    fn redacted_text_holds_no_entity_and_redaction_is_idempotent(s in text()) {
        let (once, _) = detector().redact(&s);
        let left = detector().detect(&once);
        prop_assert!(left.is_empty(), "{s:?} -> {once:?} still holds {:?}", left.iter().map(|d| &once[d.start..d.end]).collect::<Vec<_>>());
        let (twice, found) = detector().redact(&once);
        prop_assert_eq!(&twice, &once);
        prop_assert!(found.is_empty());
    }

    #[test]
    fn arbitrary_input_is_scanned_and_redacted_completely(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        let s = String::from_utf8_lossy(&bytes);
        let mut last = 0;
        for d in detector().detect(&s) {
            prop_assert!(last <= d.start && d.start < d.end && d.end <= s.len());
            last = d.end;
        }
        let (out, _) = detector().redact(&s);
        prop_assert!(detector().detect(&out).is_empty(), "{s:?} -> {out:?}");
    }
}

#[test]
fn a_value_read_whole_up_to_an_unspaced_script_is_taken_up_to_it() {
    // A bare value past the 256 bytes it is judged on, read whole, ends before the script
    // written without blanks glued after it; where the run holds no letter it ended at its
    // start: an empty span, and the merge of overlaps panicked (a CI run's property test).
    for (name, unit) in [
        ("password: ", "€"),
        ("password: !!str ", "€"),
        ("token: ", "“"),
    ] {
        for n in [85, 100, 400] {
            let value = format!("0{}", unit.repeat(n));
            for tail in ["日", "日日日", "하"] {
                let text = format!("{name}{value}{tail}");
                let found = detector().detect(&text);
                let spans: Vec<&str> = found.iter().map(|d| &text[d.start..d.end]).collect();
                assert_eq!(spans, [value.as_str()], "{text:?}");
                let (out, _) = detector().redact(&text);
                assert!(!out.contains(unit) && out.ends_with(tail), "{out:?}");
            }
        }
    }
}

#[test]
fn a_lookups_bound_between_a_carriage_return_and_its_line_feed_is_no_panic() {
    // A lookup's fallback is looked for within 160 bytes; a `\r\n` cut by that bound read
    // its `\n` past it, and the slice after panicked (`user admin pass x…x   \r\n`, found
    // by the hostile property test).
    for n in 150..180 {
        for name in ["user admin pass ", "password = ", "DB_PASSWORD="] {
            let text = format!("{name}{}   \r\n", "x".repeat(n));
            let (out, _) = detector().redact(&text);
            assert!(detector().detect(&out).is_empty(), "{text:?} -> {out:?}");
        }
    }
}

#[test]
fn every_sample_is_detected_on_its_own() {
    for s in SAMPLES {
        assert!(!detector().detect(s).is_empty(), "{s}");
    }
}

#[test]
fn detections_sharing_a_folded_character_are_merged_not_overlapping() {
    // `℅` folds to `c/o`, `㏂` to `a.m.`: one detection can end inside such a character and
    // the next start inside it. Found by an attack review: redact() panicked on these.
    for s in [
        "a@b.co℅jane@x.com",
        "0::㏂jane@example.com",
        "sk-aBcDeFgHiJkLmNoPqRsTuV1㏂jane@x.com",
    ] {
        let found = detector().detect(s);
        assert!(!found.is_empty(), "{s}");
        for w in found.windows(2) {
            assert!(w[0].end <= w[1].start, "{s}: {found:?}");
        }
        let (out, _) = detector().redact(s);
        assert!(!out.contains("jane"), "{s} -> {out}");
        assert!(detector().detect(&out).is_empty(), "{s} -> {out}");
    }
}

#[test]
fn a_list_of_glued_phone_numbers_is_redacted_completely() {
    for list in [
        "+14155552671,+14155552672,+14155552673,+14155552674,+14155552675,+14155552676",
        "415-555-2671,415-555-2672,415-555-2673,415-555-2674,415-555-2675,415-555-2676",
        "(415) 555-2671,(415) 555-2672,(415) 555-2673,(415) 555-2674,(415) 555-2675,(415) 555-2676",
    ] {
        assert_eq!(detector().detect(list).len(), 6, "{list}");
        let (out, _) = detector().redact(list);
        assert!(!out.contains("555"), "{list} -> {out}");
    }
}

#[test]
fn entities_written_side_by_side_are_all_redacted() {
    // Found by a review: `call 978-917-3444 4111 1111 1111 1111` detected nothing (the phone
    // read on into the card's groups, the card looked like the tail of the phone), so under
    // BLOCK it went through and under REDACT both stayed visible. Every pair of these formats,
    // with every usual separator between them, must leave no digit behind ("call" has none).
    let entities = [
        "978-917-3444",
        "(978) 917-3444",
        "+44 7911 123456",
        "415.555.2671",
        "+1 415 555 2671",
        "0044 7911 123456",
        "415 555 2671",
        "020 7946 0958",
        "9789173444",
        "+49 30 123456",
        "4111 1111 1111 1111",
        "4111-1111-1111-1111",
        "4111111111111111",
        "5500 0000 0000 0004",
        "3782 822463 10005",
        "123-45-6789",
        "123.45.6789",
        "123 45 6789",
    ];
    let detector = detector();
    for a in entities {
        for b in entities {
            for sep in [" ", ", ", "; ", "\n", " / ", "/"] {
                // A German number's length varies: `+49 30 123456 020 …` may be one number
                // (11 digits) or two; only punctuation tells.
                if a.starts_with("+49") && sep == " " {
                    continue;
                }
                let text = format!("call {a}{sep}{b}");
                assert!(!detector.detect(&text).is_empty(), "{text:?}");
                let (out, _) = detector.redact(&text);
                assert!(
                    !out.bytes().any(|c| c.is_ascii_digit()),
                    "{text:?} -> {out:?}"
                );
            }
        }
    }
    // Found by a second review: each of these left one number (or part of it) visible.
    for text in [
        "Tel: +49 30 123456 978 917 3444",
        "Tel: +49 30 123456 (978) 917-3444",
        "978 917 3444/978 917 3444",
        "phone 415 555 2671 4111 1111 1111 1111",
        "tel 978-917-3444/978-917-3555",
        "call 9789173444 9789173444",
        "call 978 917 3444 020 7946 0958",
    ] {
        let (out, _) = detector.redact(text);
        assert!(
            !out.bytes().any(|c| c.is_ascii_digit()),
            "{text:?} -> {out:?}"
        );
    }
    // An SSN with a card glued straight on: both (the card once the SSN's placeholder frees it).
    for text in [
        "123-45-67894111111111111111",
        "ssn 123.45.67895500000000000004",
    ] {
        let (out, _) = detector.redact(text);
        assert!(
            !out.bytes().any(|c| c.is_ascii_digit()),
            "{text:?} -> {out:?}"
        );
    }
    // Not a card: the glued digits fail the Luhn check, so the part number stays.
    assert!(
        detector
            .detect("part 123-45-67894111111111111112")
            .is_empty()
    );
}
