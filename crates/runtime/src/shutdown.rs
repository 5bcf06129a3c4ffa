//! One shutdown signal for a process: Ctrl-C, SIGTERM, or a programmatic trigger
//! (tests), observed by every component through a cheap clone.

use tokio::sync::watch;

/// A shutdown switch. Clones observe the same switch.
#[derive(Debug, Clone)]
pub struct Shutdown {
    sender: watch::Sender<bool>,
}

impl Default for Shutdown {
    fn default() -> Self {
        Self::new()
    }
}

impl Shutdown {
    #[must_use]
    pub fn new() -> Self {
        Self {
            sender: watch::Sender::new(false),
        }
    }

    /// Flips the switch; every waiter wakes.
    pub fn trigger(&self) {
        self.sender.send_replace(true);
    }

    /// Whether the switch was flipped.
    #[must_use]
    pub fn is_triggered(&self) -> bool {
        *self.sender.borrow()
    }

    /// Resolves once the switch is flipped.
    pub fn wait(&self) -> impl Future<Output = ()> + Send + 'static {
        let mut receiver = self.sender.subscribe();
        async move {
            // An error means the switch itself is gone, which ends the wait too.
            let _ = receiver.wait_for(|&down| down).await;
        }
    }

    /// Flips the switch on Ctrl-C or SIGTERM. Call once per process.
    pub fn trigger_on_signals(&self) {
        let this = self.clone();
        tokio::spawn(async move {
            let ctrl_c = tokio::signal::ctrl_c();
            #[cfg(unix)]
            {
                let mut term =
                    tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
                let sigterm = async {
                    match term.as_mut() {
                        Some(term) => {
                            term.recv().await;
                        }
                        None => std::future::pending::<()>().await,
                    }
                };
                tokio::select! {
                    _ = ctrl_c => {}
                    () = sigterm => {}
                }
            }
            #[cfg(not(unix))]
            // Without a Ctrl-C handler the process still stops by its other ways.
            let _ = ctrl_c.await;
            tracing::info!("shutdown requested");
            this.trigger();
        });
    }
}

/// Stops `tasks` taking more and waits, for at most `bound`, for those still running.
/// Returns how many were still running when the bound passed: a stopping service waits
/// for the work under way, but not forever.
pub async fn finish(tasks: &tokio_util::task::TaskTracker, bound: std::time::Duration) -> usize {
    tasks.close();
    if tokio::time::timeout(bound, tasks.wait()).await.is_ok() {
        0
    } else {
        tasks.len()
    }
}

#[cfg(test)]
mod tests {
    use super::Shutdown;

    #[tokio::test]
    async fn waiters_wake_on_trigger_including_late_ones() {
        let shutdown = Shutdown::new();
        let early = tokio::spawn(shutdown.wait());
        assert!(!shutdown.is_triggered());
        shutdown.trigger();
        early.await.expect("early waiter finishes");
        shutdown.wait().await; // a waiter after the trigger returns at once
        assert!(shutdown.is_triggered());
    }
}
