//! An approver for in-process UIs: interruptions go out on a channel, decisions come back.

use std::time::Duration;

use tokio::sync::{mpsc, oneshot};

use super::{Approver, Decision, Interruption};
use crate::error::BoxError;

/// One interruption waiting for a decision, as a [`ChannelApprover`]'s receiver gets it.
#[derive(Debug)]
pub struct ApprovalRequest {
    interruption: Interruption,
    reply: oneshot::Sender<Decision>,
}

impl ApprovalRequest {
    /// What is to be decided.
    pub fn interruption(&self) -> &Interruption {
        &self.interruption
    }

    /// Sends the decision back.
    ///
    /// # Errors
    /// The decision, when the run stopped waiting for it (its deadline passed or it was
    /// dropped).
    #[allow(clippy::result_large_err)]
    pub fn decide(self, decision: Decision) -> Result<(), Decision> {
        self.reply.send(decision)
    }
}

/// Sends each interruption to a channel and waits for the decision sent back through
/// [`ApprovalRequest::decide`]. A dropped request, a closed channel or a passed deadline is a
/// rejection (fail closed).
///
/// ```
/// use hooks_core::interrupt::{Approver, ChannelApprover, Decision};
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let (approver, mut requests) = ChannelApprover::new(16);
/// tokio::spawn(async move {
///     while let Some(request) = requests.recv().await {
///         let d = Decision::approve(request.interruption()).by("ui");
///         let _ = request.decide(d);
///     }
/// });
/// # let i: hooks_core::interrupt::Interruption = serde_json::from_value(serde_json::json!({
/// #   "id": "int-1", "run_id": "r", "tool_call_id": "c1", "tool_name": "t", "arguments": {},
/// #   "arguments_hash": "h", "reason": "why", "payload": null, "provider": "p"})).unwrap();
/// let decision = approver.decide(&i).await.unwrap().unwrap();
/// assert_eq!(decision.decided_by(), Some("ui"));
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct ChannelApprover {
    tx: mpsc::Sender<ApprovalRequest>,
    deadline: Option<Duration>,
}

impl ChannelApprover {
    /// An approver and the receiver its requests arrive on (`buffer` requests may wait).
    pub fn new(buffer: usize) -> (Self, mpsc::Receiver<ApprovalRequest>) {
        let (tx, rx) = mpsc::channel(buffer.max(1));
        (Self { tx, deadline: None }, rx)
    }

    /// Waits at most `deadline` for each decision (default: no deadline).
    #[must_use]
    pub fn with_deadline(mut self, deadline: Duration) -> Self {
        self.deadline = Some(deadline);
        self
    }
}

#[async_trait::async_trait]
impl Approver for ChannelApprover {
    async fn decide(&self, interruption: &Interruption) -> Result<Option<Decision>, BoxError> {
        let (reply, answer) = oneshot::channel();
        let request = ApprovalRequest {
            interruption: interruption.clone(),
            reply,
        };
        let ask = async {
            if self.tx.send(request).await.is_err() {
                return Err::<Option<Decision>, BoxError>(
                    "the approval channel is closed (no one is reading it)".into(),
                );
            }
            Ok(answer.await.ok())
        };
        match self.deadline {
            Some(d) => tokio::time::timeout(d, ask)
                .await
                .map_err(|_| BoxError::from(format!("no decision within {d:?}")))?,
            None => ask.await,
        }
    }
}
