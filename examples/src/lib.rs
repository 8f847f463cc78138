//! Runnable examples of the hooks library; see `examples/`.
