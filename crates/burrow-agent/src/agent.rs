//! The agent's shared state: the workspace, the reaper, the running commands, and activity for
//! the idle timeout.

use std::cell::{Cell, RefCell};
use std::collections::HashSet;
use std::rc::Rc;

use std::time::{Duration, Instant};

use crate::files::Workspace;
use crate::reaper::Reaper;

/// Everything the connections share.
#[derive(Debug)]
pub struct Agent {
    /// The workspace files are confined to.
    pub workspace: Workspace,
    /// Collects exited children.
    pub reaper: Rc<Reaper>,
    /// Largest file a single write may carry.
    pub max_write: u64,
    /// Connections and commands in progress.
    pub activity: Activity,
    /// Added to each command's seccomp filter: what the agent may do and commands may not.
    pub command_filter: burrow_sandbox::CommandFilter,
    /// /dev/null, the stdin of commands that get none.
    pub null: std::os::fd::OwnedFd,
    /// Interactive shells.
    pub shells: crate::shells::Shells,
    /// Persistent command sessions.
    pub sessions: crate::sessions::Sessions,
    /// Services.
    pub services: crate::services::Services,
    groups: RefCell<HashSet<i32>>,
}

impl Agent {
    /// A new agent for `workspace`.
    pub fn new(
        workspace: Workspace,
        max_write: u64,
        command_filter: burrow_sandbox::CommandFilter,
        null: std::os::fd::OwnedFd,
    ) -> Agent {
        Agent {
            workspace,
            reaper: Rc::new(Reaper::default()),
            max_write,
            activity: Activity::default(),
            command_filter,
            null,
            shells: crate::shells::Shells::default(),
            sessions: crate::sessions::Sessions::default(),
            services: crate::services::Services::default(),
            groups: RefCell::new(HashSet::new()),
        }
    }

    /// Records a running command's process group.
    pub fn track_group(&self, group: i32) {
        self.groups.borrow_mut().insert(group);
    }

    /// Forgets a finished command's process group.
    pub fn untrack_group(&self, group: i32) {
        self.groups.borrow_mut().remove(&group);
    }

    /// Kills every running command, shell, session and service (before the agent exits,
    /// ending the cell).
    pub fn kill_all(&self) {
        for group in self.groups.borrow().iter() {
            crate::exec::kill_group(*group, libc::SIGKILL);
        }
        self.shells.kill_all();
        self.sessions.kill_all();
        self.services.kill_all();
    }
}

/// Counts what keeps the agent busy; the idle timer runs only while nothing does.
#[derive(Debug)]
pub struct Activity {
    active: Rc<Cell<usize>>,
    since: Rc<Cell<Instant>>,
}

/// Something in progress; dropping it ends it.
#[derive(Debug)]
pub struct Busy {
    active: Rc<Cell<usize>>,
    since: Rc<Cell<Instant>>,
}

impl Default for Activity {
    fn default() -> Activity {
        Activity {
            active: Rc::new(Cell::new(0)),
            since: Rc::new(Cell::new(Instant::now())),
        }
    }
}

impl Activity {
    /// Marks the start of a connection or a command.
    pub fn begin(&self) -> Busy {
        self.active.set(self.active.get() + 1);
        self.since.set(Instant::now());
        Busy {
            active: Rc::clone(&self.active),
            since: Rc::clone(&self.since),
        }
    }

    /// How long nothing has been in progress, if nothing is.
    pub fn idle_for(&self) -> Option<Duration> {
        self.quiet_since().map(|since| since.elapsed())
    }

    /// Since when nothing has been in progress, if nothing is.
    pub fn quiet_since(&self) -> Option<Instant> {
        (self.active.get() == 0).then(|| self.since.get())
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.active.set(self.active.get().saturating_sub(1));
        self.since.set(Instant::now());
    }
}
