//! The `HookRegistry`: providers in priority order, and dispatch of every event to them.

use std::any::Any;
use std::fmt;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures_util::FutureExt as _;
use futures_util::future::{Either, join_all, select};
use serde_json::Value;

use crate::error::{DispatchError, HookError, RegistryError};
use crate::event::{
    AfterInvocationEvent, AfterModelCallEvent, AfterToolCallEvent, BeforeInvocationEvent,
    BeforeModelCallEvent, BeforeToolCallEvent, HookEvent, HookSet, IterationEvent, Tracked,
};
use crate::priority::HookPriority;
use crate::provider::{CustomEvent, HookProvider};
use crate::state::RunId;

struct Entry {
    provider: Arc<dyn HookProvider>,
    name: Arc<str>,
    priority: HookPriority,
    hooks: HookSet,
    /// Events on which it was caught returning through a default body (warned once each).
    #[cfg(debug_assertions)]
    warned: std::sync::atomic::AtomicU16,
}

impl Entry {
    /// Debug builds: called when a hook call of `kind` returned through the trait's default
    /// body. A provider that declared its events (anything but [`HookSet::ALL`]) and left one
    /// of them unimplemented does nothing there, which is almost always a mistake: say so,
    /// once per provider and event.
    #[cfg(debug_assertions)]
    fn returned_through_default(&self, kind: HookEvent) {
        if self.hooks == HookSet::ALL {
            return;
        }
        let bit = 1u16 << kind.index();
        if self.warned.fetch_or(bit, Ordering::Relaxed) & bit == 0 {
            tracing::warn!(
                target: "hooks::registry",
                provider = &*self.name,
                event = kind.method_name(),
                "hook provider '{}' declares {} in hooks() but does not implement it, so it did nothing; implement the method or remove the event from hooks()",
                self.name,
                kind.method_name()
            );
        }
    }
}

/// Wraps a hook call's future so that, in debug builds, a call that returned through the
/// trait's default body is reported ([`Entry::returned_through_default`]).
macro_rules! probed {
    ($entry:expr, $kind:expr, $fut:expr) => {{
        let fut = $fut;
        #[cfg(debug_assertions)]
        let fut = {
            let entry: &Entry = $entry;
            let kind: HookEvent = $kind;
            crate::provider::Probe::new(fut, move || entry.returned_through_default(kind))
        };
        fut
    }};
}

/// Holds providers in priority order and dispatches events to them.
///
/// Build it once, wrap it in an [`Arc`], and share it among every concurrent run: dispatch takes
/// `&self`. Each event goes only to the providers that declared it (see
/// [`HookProvider::hooks`]); the per-event lists are computed when providers are added or
/// removed, so skipping costs nothing at dispatch time.
///
/// | event | order | a hook error |
/// |---|---|---|
/// | before invocation, before model call, before tool call | priority | stops at once, returned |
/// | after model call | reverse | stops at once, returned |
/// | after tool call, after invocation | reverse | all still run; the first error is returned |
/// | iteration start / end | concurrently | logged with the provider's name, never returned |
/// | custom event | priority | stops at once; the last non-empty reply is returned |
///
/// A provider that panics does not take the agent down: the panic becomes a [`DispatchError`]
/// naming the provider and the event, handled like any other error of that event.
///
/// ```
/// use hooks_core::{HookProvider, HookRegistry};
/// struct A;
/// impl HookProvider for A {}
///
/// let mut registry = HookRegistry::new();
/// registry.add(A).unwrap();
/// let err = registry.add(A).unwrap_err();
/// assert_eq!(err.to_string(), "Hook provider 'A' already registered");
/// assert!(registry.contains("A"));
/// ```
pub struct HookRegistry {
    /// In registration order.
    entries: Vec<Entry>,
    /// Each entry's priority on each event ([`HookProvider::priority_for`]), by
    /// [`HookEvent::index`]; only read when the lists are rebuilt, so kept out of the entries
    /// the hot path walks.
    priorities: Vec<[HookPriority; HookEvent::ALL.len()]>,
    by_event: [Box<[u32]>; HookEvent::ALL.len()],
    deadline: Option<(Duration, Arc<dyn Timer>)>,
    /// See [`streams_live`](Self::streams_live).
    streams_live: bool,
}

/// A source of sleeps, so the runtime-agnostic core can bound hook calls in time. The
/// feature `rt-tokio` provides one for tokio (`TokioTimer`).
pub trait Timer: Send + Sync + 'static {
    /// A future that completes after `duration`.
    fn sleep(&self, duration: Duration) -> Pin<Box<dyn Future<Output = ()> + Send>>;
}

impl Default for HookRegistry {
    fn default() -> Self {
        Self {
            entries: Vec::new(),
            priorities: Vec::new(),
            by_event: Default::default(),
            deadline: None,
            streams_live: true,
        }
    }
}

impl fmt::Debug for HookRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(d) = self.deadline() {
            write!(f, "(deadline {d:?}) ")?;
        }
        f.debug_list()
            .entries(
                self.entries
                    .iter()
                    .map(|e| (&*e.name, e.priority.value(), e.hooks)),
            )
            .finish()
    }
}

/// Runs a hook future and turns a panic inside it into a [`HookError`].
async fn guarded<T>(fut: impl Future<Output = Result<T, HookError>>) -> Result<T, HookError> {
    match AssertUnwindSafe(fut).catch_unwind().await {
        Ok(r) => r,
        Err(payload) => Err(panicked(payload)),
    }
}

pub(crate) fn panic_message(payload: &(dyn Any + Send)) -> &str {
    if let Some(s) = payload.downcast_ref::<&'static str>() {
        s
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s
    } else {
        "unknown panic payload"
    }
}

fn panicked(payload: Box<dyn Any + Send>) -> HookError {
    HookError::new(format!("panicked: {}", panic_message(payload.as_ref())))
}

/// Dispatch in priority order (or reverse), stopping at the first error.
///
/// One `catch_unwind` guards the whole loop (per-provider guards cost ~6 ns each); `at`
/// remembers which provider was running, so a panic is still attributed to it.
macro_rules! stop_at_first {
    ($self:ident, $kind:expr, $event:ident, $method:ident, $order:ident) => {{
        let kind: HookEvent = $kind;
        let subs = $self.subscribers(kind);
        if subs.is_empty() {
            return Ok(());
        }
        let at = AtomicUsize::new(0);
        let run = AssertUnwindSafe(async {
            for &i in subs.$order() {
                at.store(i as usize, Ordering::Relaxed);
                let entry = &$self.entries[i as usize];
                let fut = probed!(entry, kind, entry.provider.$method(&mut *$event));
                // Two arms so the common path (no deadline) awaits the hook directly.
                let r = match &$self.deadline {
                    None => fut.await,
                    Some(_) => $self.bounded(fut).await,
                };
                $event.tracker().commit(&entry.name);
                if let Err(e) = r {
                    return Err(DispatchError::new(&entry.name, kind, e));
                }
            }
            Ok(())
        })
        .catch_unwind()
        .await;
        match run {
            Ok(r) => r,
            Err(payload) => {
                let entry = &$self.entries[at.load(Ordering::Relaxed)];
                $event.tracker().commit(&entry.name);
                Err(DispatchError::new(&entry.name, kind, panicked(payload)))
            }
        }
    }};
}

impl HookRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// A registry holding `providers`.
    ///
    /// # Errors
    /// [`RegistryError::AlreadyRegistered`] when two providers share a name.
    pub fn from_providers(
        providers: impl IntoIterator<Item = Arc<dyn HookProvider>>,
    ) -> Result<Self, RegistryError> {
        let mut r = Self::new();
        for p in providers {
            r.push(p)?;
        }
        r.reindex();
        Ok(r)
    }

    /// Adds a provider. To keep a handle on it (to read its records, say), add a clone of an
    /// [`Arc`]: `Arc<T>` and `Box<T>` are providers too.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use hooks_core::{HookProvider, HookRegistry};
    /// struct Counter;
    /// impl HookProvider for Counter {}
    ///
    /// let counter = Arc::new(Counter);
    /// let mut registry = HookRegistry::new();
    /// registry.add(Arc::clone(&counter))?;
    /// assert!(registry.contains("Counter"));
    /// # Ok::<(), hooks_core::RegistryError>(())
    /// ```
    ///
    /// # Errors
    /// [`RegistryError::AlreadyRegistered`] when its name is taken.
    pub fn add(&mut self, provider: impl HookProvider) -> Result<(), RegistryError> {
        self.push(Arc::new(provider))?;
        self.reindex();
        Ok(())
    }

    /// Adds a provider, builder style.
    ///
    /// # Errors
    /// [`RegistryError::AlreadyRegistered`] when its name is taken.
    pub fn with(mut self, provider: impl HookProvider) -> Result<Self, RegistryError> {
        self.add(provider)?;
        Ok(self)
    }

    fn push(&mut self, provider: Arc<dyn HookProvider>) -> Result<(), RegistryError> {
        let name: Arc<str> = provider.name().into();
        self.push_as(provider, name)
    }

    fn push_as(
        &mut self,
        provider: Arc<dyn HookProvider>,
        name: Arc<str>,
    ) -> Result<(), RegistryError> {
        if self.contains(&name) {
            return Err(RegistryError::AlreadyRegistered(name.to_string()));
        }
        // Ask the provider everything first: if one of its methods panics, nothing is half
        // added.
        // By each event's index (the lists are read with `event.index()`), not in
        // `HookEvent::ALL`'s lifecycle order.
        let mut priorities = [HookPriority::DEFAULT; HookEvent::ALL.len()];
        for event in HookEvent::ALL {
            priorities[event.index()] = provider.priority_for(event);
        }
        let hooks = provider.hooks();
        // A tie at OUTPUT_GUARD decides who sees a result first by registration order alone
        // (the later-registered runs first on after-events): say so where it happens.
        for event in HookEvent::ALL.into_iter().filter(|e| e.is_after()) {
            let at = event.index();
            if priorities[at] != HookPriority::OUTPUT_GUARD || !hooks.contains(event) {
                continue;
            }
            for (other, p) in self.entries.iter().zip(&self.priorities) {
                if p[at] == HookPriority::OUTPUT_GUARD && other.hooks.contains(event) {
                    tracing::warn!(
                        target: "hooks::registry",
                        provider = %name,
                        other = %other.name,
                        event = ?event,
                        "two providers take HookPriority::OUTPUT_GUARD on one after-event: `{name}`, registered later, runs first there and sees what `{}` would redact; give one of them a lower priority",
                        other.name
                    );
                }
            }
        }
        let entry = Entry {
            priority: provider.priority(),
            hooks,
            provider,
            name,
            #[cfg(debug_assertions)]
            warned: Default::default(),
        };
        self.priorities.push(priorities);
        self.entries.push(entry);
        Ok(())
    }

    /// Rebuilds each event's list of subscribers, in its priority order (stable: equal
    /// priorities keep registration order). "After" events walk their list backwards.
    fn reindex(&mut self) {
        for event in HookEvent::ALL {
            let mut subs: Vec<u32> = (0..self.entries.len() as u32)
                .filter(|&i| self.entries[i as usize].hooks.contains(event))
                .collect();
            subs.sort_by_key(|&i| self.priorities[i as usize][event.index()]);
            self.by_event[event.index()] = subs.into();
        }
        let after = HookEvent::AfterModelCall;
        self.streams_live = !self.entries.iter().zip(&self.priorities).any(|(e, p)| {
            e.hooks.contains(after)
                && p[after.index()].is_guard()
                && !e.hooks.contains(HookEvent::ModelDelta)
        });
    }

    /// Bounds every hook call to `deadline`: a provider that has not returned by then is
    /// abandoned, and the call becomes an error naming it, handled like any other error of its
    /// event. `timer` comes from the runtime (the core has none).
    ///
    /// ```
    /// # use std::{future::Future, pin::Pin, sync::Arc, time::Duration};
    /// # struct NoTimer;
    /// # impl hooks_core::Timer for NoTimer {
    /// #     fn sleep(&self, _: Duration) -> Pin<Box<dyn Future<Output = ()> + Send>> { Box::pin(std::future::pending()) }
    /// # }
    /// let mut registry = hooks_core::HookRegistry::new();
    /// registry.set_deadline(Duration::from_secs(5), Arc::new(NoTimer));
    /// ```
    pub fn set_deadline(&mut self, deadline: Duration, timer: Arc<dyn Timer>) {
        self.deadline = Some((deadline, timer));
    }

    /// Removes the per-hook deadline.
    pub fn clear_deadline(&mut self) {
        self.deadline = None;
    }

    /// The per-hook deadline, if any.
    pub fn deadline(&self) -> Option<Duration> {
        self.deadline.as_ref().map(|(d, _)| *d)
    }

    /// Runs one hook call, within the deadline when there is one.
    #[inline]
    async fn bounded<T, F>(&self, fut: F) -> Result<T, HookError>
    where
        F: Future<Output = Result<T, HookError>> + Unpin,
    {
        match &self.deadline {
            None => fut.await,
            Some((d, timer)) => match select(fut, timer.sleep(*d)).await {
                Either::Left((r, _)) => r,
                Either::Right(_) => Err(HookError::new(format!(
                    "did not return within {:.3}s and was abandoned (the registry's per-hook deadline)",
                    d.as_secs_f64()
                ))),
            },
        }
    }

    /// The registry a nested run dispatches through (see
    /// [`Agent::as_tool`](crate::agent::Agent::as_tool)): never fewer guards than the calling
    /// run's.
    ///
    /// - Without a registry of its own (`own` is `None`): every provider of `parent`.
    /// - With one: its providers, plus every provider of `parent` that guards — one whose
    ///   priority on any event it handles is in the security band or
    ///   [`HookPriority::OUTPUT_GUARD`] — unless the same provider is already there. A
    ///   different provider with a guard's name joins as `parent:<name>`.
    ///
    /// `opted_out` names providers of `parent` to leave out: explicit, and recorded in the
    /// nested run's changes by the driver. The per-hook deadline is the shorter of the two.
    ///
    /// ```
    /// use hooks_core::{HookPriority, HookProvider, HookRegistry};
    /// struct Guard;
    /// impl HookProvider for Guard {
    ///     fn priority(&self) -> HookPriority { HookPriority::SECURITY_DEFAULT }
    /// }
    /// struct Audit;
    /// impl HookProvider for Audit {}
    /// let parent = HookRegistry::new().with(Guard)?.with(Audit)?;
    /// let own = HookRegistry::new();
    /// let nested = HookRegistry::nested(&parent, Some(&own), &[])?;
    /// assert!(nested.contains("Guard") && !nested.contains("Audit"));
    /// let nested = HookRegistry::nested(&parent, None, &["Audit".to_owned()])?;
    /// assert!(nested.contains("Guard") && !nested.contains("Audit"));
    /// # Ok::<(), hooks_core::RegistryError>(())
    /// ```
    ///
    /// # Errors
    /// [`RegistryError::UnknownOptOut`] when `opted_out` names a provider `parent` does not
    /// have.
    pub fn nested(
        parent: &HookRegistry,
        own: Option<&HookRegistry>,
        opted_out: &[String],
    ) -> Result<HookRegistry, RegistryError> {
        if let Some(missing) = opted_out.iter().find(|n| !parent.contains(n)) {
            let names: Vec<&str> = parent.names().collect();
            return Err(RegistryError::UnknownOptOut(
                missing.clone(),
                names.join(", "),
            ));
        }
        let left_out = |e: &Entry| opted_out.iter().any(|n| **n == *e.name);
        let mut out = HookRegistry::new();
        match own {
            None => {
                for e in parent.entries.iter().filter(|e| !left_out(e)) {
                    out.push_as(Arc::clone(&e.provider), Arc::clone(&e.name))?;
                }
            }
            Some(own) => {
                for e in &own.entries {
                    out.push_as(Arc::clone(&e.provider), Arc::clone(&e.name))?;
                }
                for (e, p) in parent.entries.iter().zip(&parent.priorities) {
                    let guards = HookEvent::ALL
                        .iter()
                        .any(|&ev| e.hooks.contains(ev) && p[ev.index()].is_guard());
                    if !guards || left_out(e) {
                        continue;
                    }
                    let already = out
                        .entries
                        .iter()
                        .any(|o| Arc::ptr_eq(&o.provider, &e.provider));
                    if already {
                        continue;
                    }
                    let name: Arc<str> = if out.contains(&e.name) {
                        format!("parent:{}", e.name).into()
                    } else {
                        Arc::clone(&e.name)
                    };
                    out.push_as(Arc::clone(&e.provider), name)?;
                }
            }
        }
        out.reindex();
        let deadlines = [
            parent.deadline.as_ref(),
            own.and_then(|o| o.deadline.as_ref()),
        ];
        out.deadline = deadlines
            .into_iter()
            .flatten()
            .min_by_key(|(d, _)| *d)
            .map(|(d, t)| (*d, Arc::clone(t)));
        Ok(out)
    }

    /// The names of `parent`'s guards (see [`nested`](Self::nested)) this registry does not
    /// hold (the same provider, under any name), leaving out those named in `opted_out`.
    pub(crate) fn missing_guards_of(
        &self,
        parent: &HookRegistry,
        opted_out: &[String],
    ) -> Vec<String> {
        parent
            .entries
            .iter()
            .zip(&parent.priorities)
            .filter(|(e, p)| {
                HookEvent::ALL
                    .iter()
                    .any(|&ev| e.hooks.contains(ev) && p[ev.index()].is_guard())
            })
            .filter(|(e, _)| !opted_out.iter().any(|n| **n == *e.name))
            .filter(|(e, _)| {
                !self
                    .entries
                    .iter()
                    .any(|o| Arc::ptr_eq(&o.provider, &e.provider))
            })
            .map(|(e, _)| e.name.to_string())
            .collect()
    }

    /// Removes the provider named `name` and returns it.
    pub fn remove(&mut self, name: &str) -> Option<Arc<dyn HookProvider>> {
        let at = self.entries.iter().position(|e| &*e.name == name)?;
        let entry = self.entries.remove(at);
        self.priorities.remove(at);
        self.reindex();
        Some(entry.provider)
    }

    /// The provider named `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn HookProvider>> {
        self.entries
            .iter()
            .find(|e| &*e.name == name)
            .map(|e| &e.provider)
    }

    /// True when a provider named `name` is registered.
    pub fn contains(&self, name: &str) -> bool {
        self.entries.iter().any(|e| &*e.name == name)
    }

    /// How many providers there are.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The providers' names in [`priority`](HookProvider::priority) order (equal priorities
    /// in registration order): the order they run on "before" events unless a provider gives
    /// an event a priority of its own.
    pub fn names(&self) -> impl Iterator<Item = &str> + '_ {
        let mut order: Vec<&Entry> = self.entries.iter().collect();
        order.sort_by_key(|e| e.priority);
        order.into_iter().map(|e| &*e.name)
    }

    /// True when at least one provider handles `event`.
    pub fn has_subscribers(&self, event: HookEvent) -> bool {
        !self.subscribers(event).is_empty()
    }

    #[inline]
    fn subscribers(&self, event: HookEvent) -> &[u32] {
        &self.by_event[event.index()]
    }

    /// Dispatches `on_model_delta` in priority order (guards, in the security band, first).
    ///
    /// # Errors
    /// The first provider error (or panic); later providers do not run.
    pub async fn model_delta(
        &self,
        event: &mut crate::event::ModelDeltaEvent<'_>,
    ) -> Result<(), DispatchError> {
        stop_at_first!(self, HookEvent::ModelDelta, event, on_model_delta, iter)
    }

    /// True when a streamed reply's pieces may reach a consumer before the after-model-call
    /// hooks ran: no provider guards model output without handling the pieces (see
    /// [`stream`](crate::stream)).
    pub fn streams_live(&self) -> bool {
        self.streams_live
    }

    /// Dispatches `on_before_invocation` in priority order.
    ///
    /// # Errors
    /// The first provider error (or panic); later providers do not run.
    pub async fn before_invocation(
        &self,
        event: &mut BeforeInvocationEvent,
    ) -> Result<(), DispatchError> {
        stop_at_first!(
            self,
            HookEvent::BeforeInvocation,
            event,
            on_before_invocation,
            iter
        )
    }

    /// Dispatches `on_before_model_call` in priority order.
    ///
    /// # Errors
    /// The first provider error (or panic); later providers do not run.
    pub async fn before_model_call(
        &self,
        event: &mut BeforeModelCallEvent<'_>,
    ) -> Result<(), DispatchError> {
        stop_at_first!(
            self,
            HookEvent::BeforeModelCall,
            event,
            on_before_model_call,
            iter
        )
    }

    /// Dispatches `on_after_model_call` in reverse priority order.
    ///
    /// # Errors
    /// The first provider error (or panic); later providers do not run.
    pub async fn after_model_call(
        &self,
        event: &mut AfterModelCallEvent<'_>,
    ) -> Result<(), DispatchError> {
        stop_at_first!(
            self,
            HookEvent::AfterModelCall,
            event,
            on_after_model_call,
            rev_iter
        )
    }

    /// Dispatches `on_before_tool_call` in priority order.
    ///
    /// # Errors
    /// The first provider error (or panic); later providers do not run.
    pub async fn before_tool_call(
        &self,
        event: &mut BeforeToolCallEvent<'_>,
    ) -> Result<(), DispatchError> {
        stop_at_first!(
            self,
            HookEvent::BeforeToolCall,
            event,
            on_before_tool_call,
            iter
        )
    }

    /// Dispatches `on_after_tool_call` in reverse priority order; every provider runs.
    ///
    /// # Errors
    /// The first provider error (or panic), after all providers ran.
    pub async fn after_tool_call(
        &self,
        event: &mut AfterToolCallEvent<'_>,
    ) -> Result<(), DispatchError> {
        let kind = HookEvent::AfterToolCall;
        let subs = self.subscribers(kind);
        let mut first = None;
        // Like `stop_at_first!`, one guard for the loop; after a panic, resume with the next.
        let mut start = 0;
        while start < subs.len() {
            let at = AtomicUsize::new(start);
            let run = AssertUnwindSafe(async {
                for (n, &i) in subs.iter().rev().enumerate().skip(start) {
                    at.store(n, Ordering::Relaxed);
                    let entry = &self.entries[i as usize];
                    let fut = probed!(entry, kind, entry.provider.on_after_tool_call(&mut *event));
                    let r = match &self.deadline {
                        None => fut.await,
                        Some(_) => self.bounded(fut).await,
                    };
                    event.tracker().commit(&entry.name);
                    if let Err(e) = r {
                        first.get_or_insert_with(|| DispatchError::new(&entry.name, kind, e));
                    }
                }
            })
            .catch_unwind()
            .await;
            match run {
                Ok(()) => break,
                Err(payload) => {
                    let n = at.load(Ordering::Relaxed);
                    let entry = &self.entries[subs[subs.len() - 1 - n] as usize];
                    event.tracker().commit(&entry.name);
                    first.get_or_insert_with(|| {
                        DispatchError::new(&entry.name, kind, panicked(payload))
                    });
                    start = n + 1;
                }
            }
        }
        first.map_or(Ok(()), Err)
    }

    /// Dispatches `on_after_invocation` in reverse priority order; every provider runs.
    ///
    /// # Errors
    /// The first provider error (or panic), after all providers ran.
    pub async fn after_invocation(
        &self,
        event: &AfterInvocationEvent<'_>,
    ) -> Result<(), DispatchError> {
        let kind = HookEvent::AfterInvocation;
        let mut first = None;
        for &i in self.subscribers(kind).rev_iter() {
            let entry = &self.entries[i as usize];
            let fut = probed!(entry, kind, entry.provider.on_after_invocation(event));
            if let Err(e) = guarded(self.bounded(fut)).await {
                first.get_or_insert_with(|| DispatchError::new(&entry.name, kind, e));
            }
        }
        first.map_or(Ok(()), Err)
    }

    /// Dispatches `on_iteration_start` to every provider concurrently. Errors are logged as
    /// `tracing` warnings and handed back for inspection; they never stop the run.
    pub async fn iteration_start(&self, event: &IterationEvent<'_>) -> Vec<DispatchError> {
        self.concurrently(HookEvent::IterationStart, event).await
    }

    /// Dispatches `on_iteration_end` to every provider concurrently. Errors are logged as
    /// `tracing` warnings and handed back for inspection; they never stop the run.
    pub async fn iteration_end(&self, event: &IterationEvent<'_>) -> Vec<DispatchError> {
        self.concurrently(HookEvent::IterationEnd, event).await
    }

    async fn concurrently(
        &self,
        kind: HookEvent,
        event: &IterationEvent<'_>,
    ) -> Vec<DispatchError> {
        let subs = self.subscribers(kind);
        if subs.is_empty() {
            return Vec::new();
        }
        let results = join_all(subs.iter().map(|&i| {
            let entry = &self.entries[i as usize];
            let fut = match kind {
                HookEvent::IterationStart => entry.provider.on_iteration_start(event),
                _ => entry.provider.on_iteration_end(event),
            };
            let fut = probed!(entry, kind, fut);
            async move { (entry, guarded(self.bounded(fut)).await) }
        }))
        .await;
        let mut errors = Vec::new();
        for (entry, r) in results {
            if let Err(e) = r {
                let e = DispatchError::new(&entry.name, kind, e);
                tracing::warn!(
                    target: "hooks::registry",
                    provider = &*entry.name,
                    event = kind.method_name(),
                    run_id = event.run_id().as_str(),
                    "{e}"
                );
                errors.push(e);
            }
        }
        errors
    }

    /// Tells every provider that handles `on_run_abandoned` that `run_id` was dropped before it
    /// ended, in reverse priority order. Synchronous (it runs in a `Drop`); a panicking
    /// provider is logged and the others still run.
    pub fn run_abandoned(&self, run_id: &RunId) {
        let kind = HookEvent::RunAbandoned;
        for &i in self.subscribers(kind).rev_iter() {
            let entry = &self.entries[i as usize];
            let call = || entry.provider.on_run_abandoned(run_id);
            #[cfg(debug_assertions)]
            let call = || {
                let ((), hit) = crate::provider::through_default(call);
                if hit {
                    entry.returned_through_default(kind);
                }
            };
            let r = std::panic::catch_unwind(AssertUnwindSafe(call));
            if let Err(payload) = r {
                let e = DispatchError::new(&entry.name, kind, panicked(payload));
                tracing::warn!(target: "hooks::registry", provider = &*entry.name, run_id = run_id.as_str(), "{e}");
            }
        }
    }

    /// What each provider saves of a pausing run, by provider name (panics are logged and
    /// skipped).
    pub(crate) fn save_run_states(&self, run_id: &RunId) -> serde_json::Map<String, Value> {
        let mut out = serde_json::Map::new();
        for entry in &self.entries {
            match std::panic::catch_unwind(AssertUnwindSafe(|| {
                entry.provider.save_run_state(run_id)
            })) {
                Ok(Some(v)) => {
                    out.insert(entry.name.to_string(), v);
                }
                Ok(None) => {}
                Err(payload) => {
                    let e = panicked(payload);
                    tracing::warn!(target: "hooks::registry", provider = &*entry.name, run_id = run_id.as_str(), "saving the run's state panicked: {e}");
                }
            }
        }
        out
    }

    /// Hands each provider what it saved when the run paused; a provider that refuses (or is
    /// missing from this registry) is logged and the run resumes without it.
    pub(crate) fn restore_run_states(
        &self,
        run_id: &RunId,
        mut saved: serde_json::Map<String, Value>,
    ) {
        for entry in &self.entries {
            let Some(v) = saved.remove(&*entry.name) else {
                continue;
            };
            let r = std::panic::catch_unwind(AssertUnwindSafe(|| {
                entry.provider.restore_run_state(run_id, v)
            }))
            .unwrap_or_else(|payload| Err(panicked(payload)));
            if let Err(e) = r {
                tracing::warn!(target: "hooks::registry", provider = &*entry.name, run_id = run_id.as_str(), "the provider could not take back its state of the paused run: {e}");
            }
        }
        for name in saved.keys() {
            tracing::warn!(target: "hooks::registry", run_id = run_id.as_str(), "the paused run holds state of provider '{}', which this registry does not have; resume with the same providers", crate::text::preview(name, 64));
        }
    }

    /// Dispatches a custom event in priority order and returns the last non-empty reply.
    ///
    /// # Errors
    /// The first provider error (or panic); later providers do not run.
    pub async fn custom(&self, event: &CustomEvent<'_>) -> Result<Option<Value>, DispatchError> {
        let kind = HookEvent::Custom;
        let mut reply = None;
        for &i in self.subscribers(kind) {
            let entry = &self.entries[i as usize];
            let fut = probed!(entry, kind, entry.provider.on_custom_event(event));
            match guarded(self.bounded(fut)).await {
                Ok(Some(v)) => reply = Some(v),
                Ok(None) => {}
                Err(e) => return Err(DispatchError::new(&entry.name, kind, e)),
            }
        }
        Ok(reply)
    }
}

/// `iter` and `rev_iter` under one name each, so the dispatch macro can take either.
trait Order {
    fn rev_iter(&self) -> std::iter::Rev<std::slice::Iter<'_, u32>>;
}

impl Order for [u32] {
    fn rev_iter(&self) -> std::iter::Rev<std::slice::Iter<'_, u32>> {
        self.iter().rev()
    }
}
