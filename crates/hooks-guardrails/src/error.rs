//! Errors of the guardrails provider.

/// A guardrails configuration is invalid.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An action override names no rule.
    #[error("unknown rule '{rule}'{} in the action overrides; valid rules: {}", suggestion.as_ref().map(|s| format!(" (did you mean '{s}'?)")).unwrap_or_default(), valid.join(", "))]
    UnknownRule {
        /// The name given.
        rule: String,
        /// The closest valid name, if any is close.
        suggestion: Option<String>,
        /// Every valid name.
        valid: Vec<String>,
    },
    /// A user pattern does not compile.
    #[error("rule '{rule}': the pattern does not compile; fix the regular expression")]
    BadPattern {
        /// The rule's name.
        rule: String,
        /// Why it does not compile.
        #[source]
        source: regex::Error,
    },
    /// Two patterns share a rule name.
    #[error("rule '{0}' is defined twice; give each pattern its own name")]
    DuplicateRule(String),
    /// A detector could not be built (a guard never runs with a detector that finds nothing).
    #[error(
        "the {entity} detector could not be built; remove it from the PII list or report this as a bug"
    )]
    Detector {
        /// What it detects.
        entity: crate::Entity,
        /// Why it could not be built.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A pattern name that cannot form a rule name.
    #[error("pattern name '{0}' must be non-empty lowercase letters, digits and underscores")]
    BadName(String),
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The valid name closest to `name`: one that contains it, else the nearest by edit distance
/// (within half its length).
pub(crate) fn closest<'a>(name: &str, valid: &'a [String]) -> Option<&'a str> {
    if let Some(v) = valid
        .iter()
        .find(|v| v.contains(name) || name.contains(v.as_str()))
    {
        return Some(v);
    }
    valid
        .iter()
        .map(|v| (strsim::levenshtein(name, v), v))
        .filter(|(d, _)| *d <= name.chars().count().max(2) / 2)
        .min_by_key(|(d, _)| *d)
        .map(|(_, v)| v.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_rules_suggest_the_closest_name() {
        let valid: Vec<String> = ["blocked_tool", "pii_email", "pii_phone"]
            .map(String::from)
            .to_vec();
        assert_eq!(closest("email", &valid), Some("pii_email"));
        assert_eq!(closest("blocked_tol", &valid), Some("blocked_tool"));
        assert_eq!(closest("zzz", &valid), None);
        let e = Error::UnknownRule {
            rule: "email".into(),
            suggestion: Some("pii_email".into()),
            valid,
        };
        assert_eq!(
            e.to_string(),
            "unknown rule 'email' (did you mean 'pii_email'?) in the action overrides; valid rules: blocked_tool, pii_email, pii_phone"
        );
    }
}
