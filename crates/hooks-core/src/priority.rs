//! Hook priorities: lower runs earlier.

use std::fmt;

/// When a provider runs relative to others: lower runs earlier on the "before" events and later
/// on the "after" events. Equal priorities keep registration order.
///
/// The bands: security 0–99, observability 100–199, business 200–299, default 300.
///
/// ```
/// use hooks_core::HookPriority;
/// assert!(HookPriority::SECURITY_DEFAULT < HookPriority::OBSERVABILITY_DEFAULT);
/// assert_eq!(HookPriority::new(175).band(), "observability");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct HookPriority(i32);

impl HookPriority {
    /// Lowest security priority.
    pub const SECURITY_MIN: Self = Self(0);
    /// Default for security providers (guardrails).
    pub const SECURITY_DEFAULT: Self = Self(50);
    /// Highest security priority.
    pub const SECURITY_MAX: Self = Self(99);
    /// Lowest observability priority.
    pub const OBSERVABILITY_MIN: Self = Self(100);
    /// Default for observability providers (logging, telemetry).
    pub const OBSERVABILITY_DEFAULT: Self = Self(150);
    /// Highest observability priority.
    pub const OBSERVABILITY_MAX: Self = Self(199);
    /// Lowest business priority.
    pub const BUSINESS_MIN: Self = Self(200);
    /// Default for business-logic providers (steering).
    pub const BUSINESS_DEFAULT: Self = Self(250);
    /// Highest business priority.
    pub const BUSINESS_MAX: Self = Self(299);
    /// The priority of a provider that does not choose one.
    pub const DEFAULT: Self = Self(300);
    /// Above every band: on an after-event (run in reverse order) a provider at this priority
    /// runs before all the others, so an output guard redacts a tool result or a model reply
    /// before any observability provider sees it. See [`HookProvider::priority_for`].
    ///
    /// Equal priorities run in registration order on before-events and in reverse on
    /// after-events, so two providers at this priority on one after-event run the
    /// later-registered first: it would see what the other redacts. The registry logs a
    /// warning (target `hooks::registry`) when that happens.
    ///
    /// [`HookProvider::priority_for`]: crate::HookProvider::priority_for
    pub const OUTPUT_GUARD: Self = Self(i32::MAX);

    /// Any priority; values outside the bands are allowed.
    pub const fn new(value: i32) -> Self {
        Self(value)
    }

    /// The number.
    pub const fn value(self) -> i32 {
        self.0
    }

    /// The band's name: `security`, `observability`, `business` or `default` (anything else).
    pub fn band(self) -> &'static str {
        match self.0 {
            0..=99 => "security",
            100..=199 => "observability",
            200..=299 => "business",
            _ => "default",
        }
    }

    /// True for a guard's priority: the security band, or [`OUTPUT_GUARD`](Self::OUTPUT_GUARD).
    pub fn is_guard(self) -> bool {
        (Self::SECURITY_MIN..=Self::SECURITY_MAX).contains(&self) || self == Self::OUTPUT_GUARD
    }

    /// True for the observability band.
    pub fn is_observability(self) -> bool {
        (Self::OBSERVABILITY_MIN..=Self::OBSERVABILITY_MAX).contains(&self)
    }
}

impl Default for HookPriority {
    fn default() -> Self {
        Self::DEFAULT
    }
}

impl fmt::Display for HookPriority {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl From<i32> for HookPriority {
    fn from(v: i32) -> Self {
        Self(v)
    }
}

#[cfg(test)]
mod tests {
    use super::HookPriority as P;

    #[test]
    fn constants_are_exactly_the_documented_values() {
        let got = [
            P::SECURITY_MIN,
            P::SECURITY_DEFAULT,
            P::SECURITY_MAX,
            P::OBSERVABILITY_MIN,
            P::OBSERVABILITY_DEFAULT,
            P::OBSERVABILITY_MAX,
            P::BUSINESS_MIN,
            P::BUSINESS_DEFAULT,
            P::BUSINESS_MAX,
            P::DEFAULT,
        ]
        .map(P::value);
        assert_eq!(got, [0, 50, 99, 100, 150, 199, 200, 250, 299, 300]);
        assert_eq!(P::default(), P::DEFAULT);
    }
}
