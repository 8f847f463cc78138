//! CPU-heavy hook work off the executor: [`offload`].

/// Runs `work` — CPU-heavy and synchronous, like scanning a megabyte for personal data — where
/// it does not stall the executor, and returns its result.
///
/// With the feature `rt-tokio` and inside a tokio runtime, it runs on tokio's blocking pool:
/// other tasks on this thread keep moving, and the registry's per-hook deadline can fire (the
/// hook's future is then dropped and the result discarded). Otherwise it runs right here.
/// A panic in `work` is raised again in the caller, so the registry reports it like any other.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let n = hooks_core::offload(|| (0..1_000u64).sum::<u64>()).await;
/// assert_eq!(n, 499_500);
/// # });
/// ```
pub async fn offload<T, F>(work: F) -> T
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    #[cfg(feature = "rt-tokio")]
    if let Ok(handle) = tokio::runtime::Handle::try_current() {
        return match handle.spawn_blocking(work).await {
            Ok(out) => out,
            Err(e) => match e.try_into_panic() {
                Ok(payload) => std::panic::resume_unwind(payload),
                // Cancelled only when the runtime shuts down under us.
                Err(_) => std::panic::panic_any("the runtime shut down during offloaded work"),
            },
        };
    }
    work()
}
