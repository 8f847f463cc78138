//! Persistent workers: a handler process started once that answers events as JSON lines.
//!
//! The protocol (one JSON object per line, UTF-8):
//! - **request** (to the worker's stdin): `{"id": 7, "event": {…the event as a command would
//!   get it on stdin…}}`
//! - **response** (on its stdout, in any order): `{"id": 7, "exit": 0, "output": {…}}` — `exit`
//!   means what a command's exit code means (0 go on, 2 block, other: a non-blocking error;
//!   default 0), `output` is what a command would print (a JSON object, or `stdout` as text),
//!   and `stderr` is the reason for `exit: 2`.
//!
//! Requests are multiplexed by id, so concurrent runs share one worker. A worker that exits,
//! writes a line that is not a response, writes a line over 1 MiB, or misses a request's
//! deadline is killed (with its process group) and started again for the next request; the
//! requests it had are failed (and follow the group's fail policy). Its stderr is discarded.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::sync::oneshot;

use crate::run::{MAX_OUTPUT, Reply, Verdict, kill_group, parse_output};
use crate::settings::HookEventName;

type Pending = Arc<Mutex<HashMap<u64, oneshot::Sender<Value>>>>;

/// Why a request got no reply.
enum Lost {
    /// The worker ended (or broke the protocol) with the request in flight: worth sending
    /// again to its successor.
    Ended(String),
    /// It could not be sent at all.
    Failed(String),
}

struct Live {
    stdin: tokio::process::ChildStdin,
    pending: Pending,
    pid: Option<u32>,
    /// Dropped with the worker: kills the process.
    _child: tokio::process::Child,
    /// Set by the reader when the worker's stdout ends.
    dead: Arc<std::sync::atomic::AtomicBool>,
    /// Which start of the worker this is.
    generation: u64,
    /// Replies read so far (a worker that answers is not stuck).
    replies: Arc<AtomicU64>,
}

/// One persistent worker process (started on first use).
pub(crate) struct Worker {
    command: String,
    cwd: PathBuf,
    live: tokio::sync::Mutex<Option<Live>>,
    next: AtomicU64,

    /// How many times it was started (for tests and logs).
    pub(crate) starts: AtomicU64,
}

impl Drop for Worker {
    fn drop(&mut self) {
        if let Some(live) = self.live.get_mut().take() {
            kill_group(live.pid);
        }
    }
}

impl Worker {
    pub(crate) fn new(command: String, cwd: PathBuf) -> Self {
        Self {
            command,
            cwd,
            live: tokio::sync::Mutex::new(None),
            next: AtomicU64::new(1),

            starts: AtomicU64::new(0),
        }
    }

    fn start(&self) -> Result<Live, String> {
        let mut cmd = tokio::process::Command::new("sh");
        cmd.arg("-c")
            .arg(&self.command)
            .current_dir(&self.cwd)
            .env("CLAUDE_PROJECT_DIR", &self.cwd)
            .env("HOOKS_PROJECT_DIR", &self.cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true);
        #[cfg(unix)]
        cmd.process_group(0);
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("cannot start the worker: {e}"))?;
        let pid = child.id();
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            kill_group(pid);
            return Err("the worker has no pipes".into());
        };
        let generation = self.starts.fetch_add(1, Ordering::Relaxed) + 1;
        let replies = Arc::new(AtomicU64::new(0));
        let counted = Arc::clone(&replies);
        let pending: Pending = Arc::default();
        let dead = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (p, d) = (Arc::clone(&pending), Arc::clone(&dead));
        tokio::spawn(async move {
            let mut reader = BufReader::new(stdout);
            let mut line = Vec::new();
            loop {
                line.clear();
                // One line at most MAX_OUTPUT bytes (+ the newline): longer is a broken worker.
                let read = (&mut reader)
                    .take(MAX_OUTPUT as u64 + 1)
                    .read_until(b'\n', &mut line)
                    .await;
                match read {
                    Ok(0) | Err(_) => break,
                    Ok(_) if line.len() > MAX_OUTPUT => break,
                    Ok(_) => {}
                }
                let Ok(Value::Object(reply)) = serde_json::from_slice::<Value>(&line) else {
                    break;
                };
                let Some(id) = reply.get("id").and_then(Value::as_u64) else {
                    break;
                };
                counted.fetch_add(1, Ordering::SeqCst);
                let waiter = p.lock().unwrap_or_else(PoisonError::into_inner).remove(&id);
                if let Some(w) = waiter {
                    let _ = w.send(Value::Object(reply));
                }
            }
            // Dead or broken: every waiting request fails now, and the next one restarts it.
            d.store(true, Ordering::SeqCst);
            p.lock().unwrap_or_else(PoisonError::into_inner).clear();
        });
        Ok(Live {
            stdin,
            pending,
            pid,
            _child: child,
            dead,
            generation,
            replies,
        })
    }

    /// Sends one event to the live worker (starting one if needed) and waits for its reply.
    async fn send(&self, input: &Value, sent: &(AtomicU64, AtomicU64)) -> Result<Value, Lost> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        let line = format!("{}\n", json!({"id": id, "event": input}));
        {
            let mut live = self.live.lock().await;
            if live.as_ref().is_none_or(|l| l.dead.load(Ordering::SeqCst)) {
                if let Some(old) = live.take() {
                    kill_group(old.pid);
                }
                *live = Some(self.start().map_err(Lost::Failed)?);
            }
            let l = live
                .as_mut()
                .ok_or_else(|| Lost::Failed("the worker did not start".into()))?;
            sent.0.store(l.generation, Ordering::SeqCst);
            sent.1
                .store(l.replies.load(Ordering::SeqCst), Ordering::SeqCst);
            l.pending
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(id, tx);
            if l.dead.load(Ordering::SeqCst) {
                // It ended between the check above and now: the reader may have cleared the
                // waiters before this one was added.
                l.pending
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .remove(&id);
                return Err(Lost::Ended(
                    "the worker ended before the request was sent".into(),
                ));
            }
            let written = async {
                l.stdin.write_all(line.as_bytes()).await?;
                l.stdin.flush().await
            }
            .await;
            if let Err(e) = written {
                l.dead.store(true, Ordering::SeqCst);
                return Err(Lost::Ended(format!("cannot write to the worker: {e}")));
            }
        }
        rx.await.map_err(|_| {
            Lost::Ended("the worker ended (or broke the protocol) before it answered".to_owned())
        })
    }

    /// Sends one event and waits (at most `timeout`) for its reply.
    pub(crate) async fn ask(
        &self,
        event: HookEventName,
        input: &Value,
        timeout: Duration,
    ) -> Reply {
        let failed = |e: String| Reply {
            error: Some(e),
            ..Reply::default()
        };
        let deadline = tokio::time::Instant::now() + timeout;
        // A request the worker lost because it ended — killed for another request's missed
        // deadline, or crashed on another request — is sent once more to its successor
        // within the same deadline, so one run cannot make another's request fail.
        let mut tries = 0;
        // Which start of the worker got the request, and how many replies it had read then.
        let sent = (AtomicU64::new(0), AtomicU64::new(0));
        let reply = loop {
            tries += 1;
            match tokio::time::timeout_at(deadline, self.send(input, &sent)).await {
                Ok(Ok(reply)) => break reply,
                Ok(Err(Lost::Ended(e))) if tries < 2 => {
                    tracing::debug!(target: "hooks::command", "{e}; sending the request again");
                }
                Ok(Err(Lost::Ended(e) | Lost::Failed(e))) => return failed(e),
                Err(_) => {
                    // Stuck on this request: only the worker that got it is killed (not one
                    // started since), and only if it can be reached at once.
                    // A worker that answered anything since is busy, not stuck: only this
                    // request fails.
                    let (generation, replies) =
                        (sent.0.load(Ordering::SeqCst), sent.1.load(Ordering::SeqCst));
                    if let Ok(mut live) =
                        tokio::time::timeout(Duration::from_millis(50), self.live.lock()).await
                        && live.as_ref().is_some_and(|l| {
                            l.generation == generation
                                && l.replies.load(Ordering::SeqCst) == replies
                        })
                        && let Some(l) = live.take()
                    {
                        kill_group(l.pid);
                    }
                    return failed(format!("timed out after {timeout:?}"));
                }
            }
        };
        let text = |k: &str| {
            reply
                .get(k)
                .and_then(Value::as_str)
                .unwrap_or("")
                .trim()
                .to_owned()
        };
        match reply.get("exit").map_or(Some(0), Value::as_i64) {
            Some(0) => match reply.get("output") {
                Some(o @ Value::Object(_)) => parse_output(event, &o.to_string()),
                _ => parse_output(event, &text("stdout")),
            },
            Some(2) => {
                let reason = text("stderr");
                Reply {
                    verdict: Some(Verdict::Deny),
                    reason: Some(if reason.is_empty() {
                        "blocked by a hook worker".to_owned()
                    } else {
                        reason
                    }),
                    ..Reply::default()
                }
            }
            Some(code) => failed(format!(
                "the worker answered exit {code}: {}",
                hooks_core::text::preview(&text("stderr"), 500)
            )),
            None => failed("the worker's `exit` is not an integer".into()),
        }
    }
}
