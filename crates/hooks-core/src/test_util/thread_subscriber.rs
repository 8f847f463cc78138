//! A thread's own `tracing` subscriber that sees every event, whatever other test threads do.
//!
//! `tracing` caches, per callsite and for the whole process, whether any subscriber is
//! interested in it; the cache is filled the first time any thread reaches the callsite. While
//! at most one dispatcher is registered, the registering thread's own default decides alone.
//! So when tests run in parallel threads, each with its own subscriber from `set_default`, a
//! sibling thread with no subscriber (or one filtering at a higher level) can reach a callsite
//! first and switch it off for every thread: a test that asserts what its capture saw fails
//! now and then, and a test that asserts what its capture did *not* see passes without having
//! seen anything.
//!
//! [`set_thread_subscriber`] first registers two inert dispatchers that live as long as the
//! process and answer "sometimes" for every callsite. With two of them always registered, every
//! cached interest is computed over all dispatchers and is at least "sometimes", which makes
//! `tracing` ask the current thread's subscriber about each event; and the process's maximum
//! level stays at `TRACE`, so no level is filtered before a subscriber is asked.

use std::sync::OnceLock;

use tracing::dispatcher::Dispatch;
use tracing::subscriber::{DefaultGuard, Interest};
use tracing::{Event, Metadata, Subscriber, span};

/// Keeps every callsite's cached interest at "sometimes"; never enables anything itself.
struct Anchor;

impl Subscriber for Anchor {
    fn register_callsite(&self, _: &'static Metadata<'static>) -> Interest {
        Interest::sometimes()
    }
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        false
    }
    fn max_level_hint(&self) -> Option<tracing::level_filters::LevelFilter> {
        Some(tracing::level_filters::LevelFilter::TRACE)
    }
    fn new_span(&self, _: &span::Attributes<'_>) -> span::Id {
        span::Id::from_u64(1)
    }
    fn record(&self, _: &span::Id, _: &span::Record<'_>) {}
    fn record_follows_from(&self, _: &span::Id, _: &span::Id) {}
    fn event(&self, _: &Event<'_>) {}
    fn enter(&self, _: &span::Id) {}
    fn exit(&self, _: &span::Id) {}
}

static ANCHORS: OnceLock<[Dispatch; 2]> = OnceLock::new();

/// Registers the two anchor dispatchers once per process (see the module docs).
fn anchor() {
    ANCHORS.get_or_init(|| [Dispatch::new(Anchor), Dispatch::new(Anchor)]);
}

/// Sets `subscriber` as this thread's default until the guard drops, like
/// [`tracing::subscriber::set_default`], but such that every event this thread emits reaches it
/// even while other test threads, with or without subscribers of their own, reach the same
/// callsites first.
///
/// Use it for every thread-local capture in a test binary that runs more than one test; call it
/// before anything in the process creates a dispatcher, i.e. in every test that installs one.
///
/// ```
/// use hooks_core::test_util::set_thread_subscriber;
///
/// let _guard = set_thread_subscriber(tracing::subscriber::NoSubscriber::default());
/// tracing::info!("seen by this thread's subscriber only");
/// ```
pub fn set_thread_subscriber<S>(subscriber: S) -> DefaultGuard
where
    S: Subscriber + Send + Sync + 'static,
{
    anchor();
    tracing::subscriber::set_default(subscriber)
}

/// Runs `f` with `subscriber` as this thread's default, like [`tracing::subscriber::with_default`],
/// with the guarantee of [`set_thread_subscriber`].
pub fn with_thread_subscriber<S, T>(subscriber: S, f: impl FnOnce() -> T) -> T
where
    S: Subscriber + Send + Sync + 'static,
{
    let _guard = set_thread_subscriber(subscriber);
    f()
}
