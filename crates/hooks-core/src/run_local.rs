//! Run-scoped state: a provider's per-run values, keyed by run id, bounded, dropped with the run.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::fmt;
use std::hash::{BuildHasher, RandomState};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

use crate::state::RunId;

/// How many runs a [`RunLocal`] holds state for unless told otherwise.
pub const DEFAULT_MAX_RUNS: usize = 100_000;

const SHARDS: usize = 16;

/// A provider's per-run state: one `T` per run id, created on first use, dropped when the run
/// ends.
///
/// Providers are shared by every concurrent run, so per-run state must be keyed by run id; this
/// is that map, written once. Call [`end`](Self::end) from both
/// [`on_after_invocation`](crate::HookProvider::on_after_invocation) and
/// [`on_run_abandoned`](crate::HookProvider::on_run_abandoned) (declare both in
/// [`hooks`](crate::HookProvider::hooks)), and a run's state lives exactly as long as the run.
///
/// **The bound.** At most [`max_runs`](Self::max_runs) runs hold state at once (default
/// [`DEFAULT_MAX_RUNS`]). At the bound, state for a *new* run is refused with
/// [`RunLocalFull`]; runs that already hold state keep it. Nothing is ever evicted, so a
/// pending decision (a call a guard flagged, a budget a retry hook is counting) cannot be
/// forgotten to make room: the provider sees the refusal and chooses how to fail (a guard
/// fails closed, telemetry skips the run).
///
/// Values are reached through closures that run under a short lock of one of 16 shards; never
/// await inside them (they are synchronous, so you cannot).
///
/// ```
/// use hooks_core::{RunId, RunLocal};
/// let calls: RunLocal<u32> = RunLocal::new();
/// let run = RunId::new("r1");
/// calls.with(&run, |n| *n += 1)?;
/// calls.with(&run, |n| *n += 1)?;
/// assert_eq!(calls.get(&run, |n| *n), Some(2));
/// assert_eq!(calls.end(&run), Some(2));
/// assert!(calls.is_empty());
/// # Ok::<(), hooks_core::RunLocalFull>(())
/// ```
pub struct RunLocal<T> {
    shards: Box<[Mutex<HashMap<RunId, T>>]>,
    hasher: RandomState,
    len: AtomicUsize,
    max_runs: usize,
}

/// A [`RunLocal`] is at its bound and refused state for a new run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "run-scoped state is full: {max_runs} runs hold state at once; end runs (after-invocation or abandon) or raise the bound with RunLocal::with_max_runs"
)]
pub struct RunLocalFull {
    /// The bound that was reached.
    pub max_runs: usize,
}

impl<T> Default for RunLocal<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> fmt::Debug for RunLocal<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RunLocal")
            .field("runs", &self.len())
            .field("max_runs", &self.max_runs)
            .finish()
    }
}

impl<T> RunLocal<T> {
    /// An empty map bounded at [`DEFAULT_MAX_RUNS`] runs.
    pub fn new() -> Self {
        Self::with_max_runs(DEFAULT_MAX_RUNS)
    }

    /// An empty map bounded at `max_runs` runs (at least 1).
    pub fn with_max_runs(max_runs: usize) -> Self {
        Self {
            shards: (0..SHARDS).map(|_| Mutex::default()).collect(),
            hasher: RandomState::new(),
            len: AtomicUsize::new(0),
            max_runs: max_runs.max(1),
        }
    }

    /// The bound.
    pub fn max_runs(&self) -> usize {
        self.max_runs
    }

    /// How many runs hold state.
    pub fn len(&self) -> usize {
        self.len.load(Ordering::Relaxed)
    }

    /// True when no run holds state.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn shard(&self, run: &RunId) -> MutexGuard<'_, HashMap<RunId, T>> {
        let i = (self.hasher.hash_one(run.as_str()) as usize) % self.shards.len();
        self.shards[i]
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes a place for a new run, or refuses at the bound. Reserved before the value is
    /// made, so concurrent first uses cannot overshoot.
    fn reserve(&self) -> Result<(), RunLocalFull> {
        let taken = self.len.fetch_add(1, Ordering::Relaxed);
        if taken >= self.max_runs {
            self.len.fetch_sub(1, Ordering::Relaxed);
            return Err(RunLocalFull {
                max_runs: self.max_runs,
            });
        }
        Ok(())
    }

    /// Calls `f` with the run's value, creating it with `init` on first use.
    ///
    /// # Errors
    /// [`RunLocalFull`] when the run holds no state yet and the bound is reached.
    pub fn with_or_insert<R>(
        &self,
        run: &RunId,
        init: impl FnOnce() -> T,
        f: impl FnOnce(&mut T) -> R,
    ) -> Result<R, RunLocalFull> {
        let mut shard = self.shard(run);
        match shard.entry(run.clone()) {
            Entry::Occupied(mut e) => Ok(f(e.get_mut())),
            Entry::Vacant(e) => {
                self.reserve()?;
                Ok(f(e.insert(init())))
            }
        }
    }

    /// Puts `value` in as the run's value; hands back the one it replaces.
    ///
    /// # Errors
    /// When the run holds no state yet and the bound is reached: the refusal, with `value`
    /// handed back so the caller can let go of it properly.
    pub fn insert(&self, run: &RunId, value: T) -> Result<Option<T>, (RunLocalFull, T)> {
        let mut shard = self.shard(run);
        match shard.entry(run.clone()) {
            Entry::Occupied(mut e) => Ok(Some(std::mem::replace(e.get_mut(), value))),
            Entry::Vacant(e) => match self.reserve() {
                Ok(()) => {
                    e.insert(value);
                    Ok(None)
                }
                Err(full) => Err((full, value)),
            },
        }
    }

    /// Calls `f` with the run's value, creating a default one on first use.
    ///
    /// # Errors
    /// [`RunLocalFull`] when the run holds no state yet and the bound is reached.
    pub fn with<R>(&self, run: &RunId, f: impl FnOnce(&mut T) -> R) -> Result<R, RunLocalFull>
    where
        T: Default,
    {
        self.with_or_insert(run, T::default, f)
    }

    /// Calls `f` with the run's value if it has one; creates nothing.
    pub fn get<R>(&self, run: &RunId, f: impl FnOnce(&mut T) -> R) -> Option<R> {
        if self.is_empty() {
            return None;
        }
        self.shard(run).get_mut(run).map(f)
    }

    /// Calls `f` with every run's value, one shard locked at a time (for diagnostics and
    /// sweeps; a run that starts or ends meanwhile may or may not be seen).
    pub fn for_each(&self, mut f: impl FnMut(&RunId, &mut T)) {
        for shard in &self.shards {
            let mut shard = shard.lock().unwrap_or_else(PoisonError::into_inner);
            for (run, value) in shard.iter_mut() {
                f(run, value);
            }
        }
    }

    /// Ends the run: drops and returns its value. Call it at after-invocation and at
    /// `on_run_abandoned`.
    pub fn end(&self, run: &RunId) -> Option<T> {
        if self.is_empty() {
            return None;
        }
        let v = self.shard(run).remove(run);
        if v.is_some() {
            self.len.fetch_sub(1, Ordering::Relaxed);
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_is_kept_per_run_and_dropped_when_the_run_ends() {
        let m: RunLocal<Vec<u32>> = RunLocal::new();
        let (a, b) = (RunId::new("a"), RunId::new("b"));
        m.with(&a, |v| v.push(1)).unwrap();
        m.with(&b, |v| v.push(2)).unwrap();
        m.with(&a, |v| v.push(3)).unwrap();
        assert_eq!(m.get(&a, |v| v.clone()), Some(vec![1, 3]));
        assert_eq!(m.len(), 2);
        assert_eq!(m.end(&a), Some(vec![1, 3]));
        assert_eq!(m.end(&a), None);
        assert_eq!(m.get(&a, |v| v.len()), None);
        assert_eq!(m.len(), 1);
    }

    #[test]
    fn at_the_bound_new_runs_are_refused_and_nothing_is_evicted() {
        let m: RunLocal<u32> = RunLocal::with_max_runs(2);
        let runs: Vec<RunId> = (0..3).map(|i| RunId::new(format!("r{i}"))).collect();
        m.with(&runs[0], |n| *n = 7).unwrap();
        m.with(&runs[1], |n| *n = 8).unwrap();
        let err = m.with(&runs[2], |n| *n = 9).unwrap_err();
        assert_eq!(err, RunLocalFull { max_runs: 2 });
        assert!(err.to_string().contains("raise the bound"));
        let (_, back) = m.insert(&runs[2], 9).unwrap_err();
        assert_eq!(back, 9);
        assert_eq!(m.insert(&runs[1], 10).unwrap(), Some(8));
        m.insert(&runs[1], 8).unwrap();
        // The runs that held state keep it, and may still use it.
        assert_eq!(m.with(&runs[0], |n| *n).unwrap(), 7);
        assert_eq!(m.get(&runs[1], |n| *n), Some(8));
        // A run ends: room for the next.
        m.end(&runs[0]);
        assert_eq!(m.with(&runs[2], |n| *n).unwrap(), 0);
        assert_eq!(m.len(), 2);
    }

    #[test]
    fn concurrent_first_uses_never_overshoot_the_bound() {
        let m: std::sync::Arc<RunLocal<u32>> = std::sync::Arc::new(RunLocal::with_max_runs(50));
        let handles: Vec<_> = (0..4)
            .map(|t| {
                let m = m.clone();
                std::thread::spawn(move || {
                    (0..100)
                        .filter(|i| m.with(&RunId::new(format!("{t}-{i}")), |_| ()).is_ok())
                        .count()
                })
            })
            .collect();
        let ok: usize = handles.into_iter().map(|h| h.join().unwrap()).sum();
        assert_eq!(ok, 50);
        assert_eq!(m.len(), 50);
    }
}
