//! The backoff schedule, jitter, and the per-call clocks that bound total time.

use std::collections::HashMap;
use std::hash::Hash;
use std::time::Duration;

use hooks_core::{RunId, RunLocal, RunLocalFull};
use tokio::time::Instant;

use crate::error::{Error, Result};

/// Randomises delays so that many clients do not retry in lockstep.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
#[non_exhaustive]
pub enum Jitter {
    /// The exact schedule.
    #[default]
    None,
    /// A uniform delay between 0 and the scheduled one.
    Full,
    /// The scheduled delay times a uniform factor in `1 - p ..= 1 + p` (capped at the maximum).
    Proportional(f64),
}

/// Exponential backoff: the delay before retry `n` (0-based) is
/// `min(initial × factor^n, max)`, then jittered.
///
/// ```
/// use std::time::Duration;
/// use hooks_retry::Backoff;
/// let b = Backoff::default();
/// let d: Vec<_> = (0..4).map(|n| b.delay(n)).collect();
/// assert_eq!(d, [1, 2, 4, 8].map(Duration::from_secs));
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Backoff {
    /// The first delay (default 1 s).
    pub initial_delay: Duration,
    /// The cap on any one delay (default 30 s).
    pub max_delay: Duration,
    /// The growth factor (default 2).
    pub factor: f64,
    /// Jitter (default none).
    pub jitter: Jitter,
}

impl Default for Backoff {
    fn default() -> Self {
        Self {
            initial_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(30),
            factor: 2.0,
            jitter: Jitter::None,
        }
    }
}

impl Backoff {
    pub(crate) fn validate(&self) -> Result<()> {
        if !self.factor.is_finite() || self.factor < 1.0 {
            return Err(Error::BadFactor(self.factor));
        }
        if self.initial_delay > self.max_delay {
            return Err(Error::InitialAboveMax {
                initial: self.initial_delay,
                max: self.max_delay,
            });
        }
        if let Jitter::Proportional(p) = self.jitter
            && !(0.0..=1.0).contains(&p)
        {
            return Err(Error::BadJitter(p));
        }
        Ok(())
    }

    /// The scheduled delay before retry `n` (0-based), without jitter.
    pub fn delay(&self, n: u32) -> Duration {
        let exp = i32::try_from(n).unwrap_or(i32::MAX);
        let secs = self.initial_delay.as_secs_f64() * self.factor.powi(exp);
        Duration::try_from_secs_f64(secs)
            .unwrap_or(self.max_delay)
            .min(self.max_delay)
    }

    /// The delay before retry `n`, jittered.
    pub fn jittered(&self, n: u32) -> Duration {
        let d = self.delay(n);
        match self.jitter {
            Jitter::None => d,
            Jitter::Full => d.mul_f64(unit_random()),
            Jitter::Proportional(p) => d
                .mul_f64(1.0 - p + 2.0 * p * unit_random())
                .min(self.max_delay),
        }
    }
}

/// A uniform number in `0..1` from the thread's generator (not for cryptography).
fn unit_random() -> f64 {
    rand::Rng::random::<f64>(&mut rand::rng())
}

/// The builder methods both retry hooks share (their builders hold `hook` with the same
/// fields).
macro_rules! shared_setters {
    () => {
        /// Retries per call (default 3).
        #[must_use]
        pub fn with_max_retries(mut self, n: u32) -> Self {
            self.hook.max_retries = n;
            self
        }

        /// The first delay (default 1 s).
        #[must_use]
        pub fn with_initial_delay(mut self, d: std::time::Duration) -> Self {
            self.hook.backoff.initial_delay = d;
            self
        }

        /// The cap on one delay (default 30 s).
        #[must_use]
        pub fn with_max_delay(mut self, d: std::time::Duration) -> Self {
            self.hook.backoff.max_delay = d;
            self
        }

        /// The growth factor (default 2).
        #[must_use]
        pub fn with_backoff_factor(mut self, f: f64) -> Self {
            self.hook.backoff.factor = f;
            self
        }

        /// Jitter (default none: the exact schedule).
        #[must_use]
        pub fn with_jitter(mut self, j: crate::Jitter) -> Self {
            self.hook.backoff.jitter = j;
            self
        }

        /// The most time one call may take, retries and waits included (default 5 min);
        /// `None` for no limit.
        #[must_use]
        pub fn with_total_budget(mut self, budget: impl Into<Option<std::time::Duration>>) -> Self {
            self.hook.budget = budget.into();
            self
        }

        /// The priority (default DEFAULT, 300).
        #[must_use]
        pub fn with_priority(mut self, p: hooks_core::HookPriority) -> Self {
            self.hook.priority = p;
            self
        }

        /// The name in a registry (default: the type's name); two hooks of this type with
        /// different settings need different names.
        #[must_use]
        pub fn with_name(mut self, name: impl Into<String>) -> Self {
            self.hook.name = Some(name.into());
            self
        }
    };
}
pub(crate) use shared_setters;

/// When each call that is being retried started, per run (the core's [`RunLocal`]: bounded,
/// and let go of when the run ends or is abandoned).
#[derive(Debug)]
pub(crate) struct Clocks<T> {
    runs: RunLocal<HashMap<T, Instant>>,
}

impl<T: Eq + Hash + Clone> Clocks<T> {
    pub(crate) fn new() -> Self {
        Self {
            runs: RunLocal::new(),
        }
    }

    /// How long ago the call started; starts its clock `since` ago on first sight.
    ///
    /// # Errors
    /// [`RunLocalFull`] when the run holds no clock yet and the bound on runs is reached: the
    /// hook then does not retry (it could not keep the call within its budget).
    pub(crate) fn elapsed(
        &self,
        key: &(RunId, T),
        since: Duration,
    ) -> Result<Duration, RunLocalFull> {
        let now = Instant::now();
        self.runs.with(&key.0, |calls| {
            let start = *calls
                .entry(key.1.clone())
                .or_insert_with(|| now.checked_sub(since).unwrap_or(now));
            now.duration_since(start)
        })
    }

    pub(crate) fn forget(&self, key: &(RunId, T)) {
        self.runs.get(&key.0, |calls| calls.remove(&key.1));
    }

    /// How many calls are being timed, over every run.
    pub(crate) fn len(&self) -> usize {
        let mut n = 0;
        // Only tests and diagnostics ask; walking the runs is fine there.
        self.runs.for_each(|_, calls| n += calls.len());
        n
    }

    /// Forgets every call of `run` (it ended, or was abandoned).
    pub(crate) fn forget_run(&self, run: &RunId) {
        self.runs.end(run);
    }

    /// Sleeps `delay` before a retry of the call `key`. The call's clock keeps running for its
    /// next attempt; if the run is dropped during the sleep, the clock is forgotten.
    pub(crate) async fn wait(&self, key: (RunId, T), delay: Duration) {
        let guard = ForgetOnDrop {
            clocks: self,
            key: Some(key),
        };
        tokio::time::sleep(delay).await;
        guard.disarm();
    }
}

/// Forgets a call's clock when dropped: a run cancelled during a backoff sleep leaves nothing.
struct ForgetOnDrop<'a, T: Eq + Hash + Clone> {
    clocks: &'a Clocks<T>,
    key: Option<(RunId, T)>,
}

impl<T: Eq + Hash + Clone> ForgetOnDrop<'_, T> {
    fn disarm(mut self) {
        self.key = None;
    }
}

impl<T: Eq + Hash + Clone> Drop for ForgetOnDrop<'_, T> {
    fn drop(&mut self) {
        if let Some(k) = self.key.take() {
            self.clocks.forget(&k);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedules_follow_min_initial_times_factor_pow_n_and_max() {
        let b = Backoff {
            initial_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(4),
            factor: 3.0,
            jitter: Jitter::None,
        };
        let got: Vec<f64> = (0..6).map(|n| b.delay(n).as_secs_f64()).collect();
        assert_eq!(got, [0.5, 1.5, 4.0, 4.0, 4.0, 4.0]);
        assert_eq!(b.delay(u32::MAX), Duration::from_secs(4));
    }

    #[test]
    fn jitter_stays_within_its_bounds() {
        let full = Backoff {
            jitter: Jitter::Full,
            ..Backoff::default()
        };
        let prop = Backoff {
            jitter: Jitter::Proportional(0.25),
            ..Backoff::default()
        };
        let mut distinct = std::collections::HashSet::new();
        for _ in 0..1000 {
            let d = full.jittered(2);
            assert!(d <= Duration::from_secs(4));
            distinct.insert(d);
            let d = prop.jittered(2).as_secs_f64();
            assert!((3.0..=5.0).contains(&d), "{d}");
        }
        assert!(distinct.len() > 100, "jitter varies");
        let capped = Backoff {
            jitter: Jitter::Proportional(1.0),
            ..Backoff::default()
        };
        for _ in 0..100 {
            assert!(capped.jittered(10) <= Duration::from_secs(30));
        }
    }

    #[test]
    fn invalid_configs_are_refused() {
        assert_eq!(
            Backoff {
                factor: 0.5,
                ..Backoff::default()
            }
            .validate(),
            Err(Error::BadFactor(0.5))
        );
        assert!(
            Backoff {
                factor: f64::NAN,
                ..Backoff::default()
            }
            .validate()
            .is_err()
        );
        assert!(
            Backoff {
                initial_delay: Duration::from_secs(60),
                ..Backoff::default()
            }
            .validate()
            .is_err()
        );
        assert_eq!(
            Backoff {
                jitter: Jitter::Proportional(1.5),
                ..Backoff::default()
            }
            .validate(),
            Err(Error::BadJitter(1.5))
        );
    }
}
