//! Reaping: the agent is PID 1 of its cell, so every orphan in the cell becomes its child.
//! One task waits for SIGCHLD and collects every exited child; the commands the agent started
//! are handed their status, orphans are simply reaped.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::oneshot;

/// How a process ended, as waitpid(2) reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WaitStatus(pub i32);

impl WaitStatus {
    /// The exit code, if it exited.
    pub fn code(self) -> Option<i32> {
        libc::WIFEXITED(self.0).then(|| libc::WEXITSTATUS(self.0))
    }

    /// The signal, if one killed it.
    pub fn signal(self) -> Option<i32> {
        libc::WIFSIGNALED(self.0).then(|| libc::WTERMSIG(self.0))
    }
}

/// Children whose status someone is waiting for.
#[derive(Debug, Default)]
pub struct Reaper {
    waiting: RefCell<HashMap<i32, oneshot::Sender<WaitStatus>>>,
}

impl Reaper {
    /// Registers a child, right after it was started (before any await, so its SIGCHLD cannot
    /// be handled first).
    pub fn watch(&self, pid: i32) -> oneshot::Receiver<WaitStatus> {
        let (sender, receiver) = oneshot::channel();
        self.waiting.borrow_mut().insert(pid, sender);
        receiver
    }

    /// Collects every child that has exited.
    fn reap_all(&self) {
        loop {
            let mut status = 0;
            // SAFETY: waitpid writes the status into a local integer.
            let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
            if pid <= 0 {
                return;
            }
            if let Some(waiter) = self.waiting.borrow_mut().remove(&pid) {
                let _ = waiter.send(WaitStatus(status));
            }
        }
    }

    /// Runs forever, reaping on every SIGCHLD.
    pub async fn run(self: Rc<Self>) -> std::io::Result<()> {
        let mut children = signal(SignalKind::child())?;
        // Children that exited before the handler was installed.
        self.reap_all();
        while children.recv().await.is_some() {
            self.reap_all();
        }
        Ok(())
    }
}
