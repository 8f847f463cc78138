//! A thread's own subscriber sees its events even when another thread reached the callsite
//! first with no subscriber at all (see `hooks_core::test_util::set_thread_subscriber`).
//!
//! One test in its own binary: the process-wide interest cache is what is being tested, so
//! nothing else may touch it first.

#![allow(missing_docs, clippy::unwrap_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use hooks_core::test_util::set_thread_subscriber;
use tracing::subscriber::Interest;
use tracing::{Event, Metadata, Subscriber, span};

/// Counts the events it is given.
#[derive(Clone, Default)]
struct Count(Arc<AtomicUsize>);

impl Subscriber for Count {
    fn register_callsite(&self, _: &'static Metadata<'static>) -> Interest {
        Interest::always()
    }
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &span::Attributes<'_>) -> span::Id {
        span::Id::from_u64(1)
    }
    fn record(&self, _: &span::Id, _: &span::Record<'_>) {}
    fn record_follows_from(&self, _: &span::Id, _: &span::Id) {}
    fn event(&self, _: &Event<'_>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
    fn enter(&self, _: &span::Id) {}
    fn exit(&self, _: &span::Id) {}
}

fn emit() {
    tracing::info!("one event");
}

#[test]
fn a_callsite_first_reached_by_a_thread_without_subscriber_still_reaches_ours() {
    let count = Count::default();
    let _guard = set_thread_subscriber(count.clone());
    // With plain `set_default`, ours would be the only registered dispatcher, so this thread's
    // default (none) would decide the callsite's interest for the whole process: never.
    std::thread::spawn(emit).join().unwrap();
    assert_eq!(
        count.0.load(Ordering::SeqCst),
        0,
        "the other thread's event is not ours"
    );
    emit();
    emit();
    assert_eq!(count.0.load(Ordering::SeqCst), 2);
}
