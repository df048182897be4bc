//! Services: long-running programs (dev servers, databases) started in a session of their own,
//! with stdout and stderr in one pipe (so the log keeps their order), a readiness probe, an
//! optional restart on failure, and a stop that escalates from SIGTERM to SIGKILL.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::os::fd::AsFd;
use std::rc::Rc;
use std::time::Duration;

use burrow_proto::service::{RestartPolicy, ServiceInfo, ServiceState};
use burrow_sandbox::Grouping;
use tokio::io::AsyncReadExt;
use tokio::net::unix::pipe;
use tokio::sync::Notify;

use crate::agent::Agent;
use crate::reaper::WaitStatus;
use crate::ring::OutputRing;
use crate::spawn::{Program, nonblocking, pipe as make_pipe, spawn};
use crate::unknown::Unknown;

/// Log a service keeps.
const LOG_BUFFER: usize = 4 << 20;

/// Pause before a failed service is started again.
const RESTART_DELAY: Duration = Duration::from_secs(1);

pub use burrow_proto::service::ServiceSpec;

/// One service.
#[derive(Debug)]
pub struct Service {
    spec: ServiceSpec,
    /// Its log.
    pub log: Rc<OutputRing>,
    state: Cell<ServiceState>,
    reason: RefCell<Option<String>>,
    exit: Cell<Option<WaitStatus>>,
    pid: Cell<Option<u32>>,
    restarts: Cell<u32>,
    stopping: Cell<bool>,
    /// Woken whenever the state changes.
    changed: Notify,
}

/// The agent's services.
#[derive(Debug, Default)]
pub struct Services {
    services: RefCell<BTreeMap<String, Rc<Service>>>,
}

/// Why a service request failed.
pub type ServiceResult<T> = Result<T, String>;

impl Services {
    /// Starts a service and waits until it is ready or has failed.
    pub async fn start(&self, agent: &Rc<Agent>, spec: ServiceSpec) -> ServiceResult<ServiceInfo> {
        if let Some(existing) = self.services.borrow().get(&spec.name)
            && matches!(
                existing.state.get(),
                ServiceState::Starting | ServiceState::Ready
            )
        {
            return Err(format!(
                "service {} is already running; stop it first",
                spec.name
            ));
        }
        let service = Rc::new(Service {
            log: OutputRing::new(LOG_BUFFER),
            state: Cell::new(ServiceState::Starting),
            reason: RefCell::new(None),
            exit: Cell::new(None),
            pid: Cell::new(None),
            restarts: Cell::new(0),
            stopping: Cell::new(false),
            changed: Notify::new(),
            spec,
        });
        launch(agent, &service)?;
        self.services
            .borrow_mut()
            .insert(service.spec.name.clone(), Rc::clone(&service));
        // Wait for the verdict of the readiness task.
        while service.state.get() == ServiceState::Starting {
            service.changed.notified().await;
        }
        Ok(service.info())
    }

    /// A service by name.
    pub fn get(&self, name: &str) -> Result<Rc<Service>, Unknown> {
        self.services
            .borrow()
            .get(name)
            .cloned()
            .ok_or_else(|| Unknown::new("service", name))
    }

    /// Every service.
    pub fn list(&self) -> Vec<ServiceInfo> {
        self.services.borrow().values().map(|s| s.info()).collect()
    }

    /// Whether any service is starting or ready.
    pub fn any_running(&self) -> bool {
        self.services
            .borrow()
            .values()
            .any(|s| matches!(s.state.get(), ServiceState::Starting | ServiceState::Ready))
    }

    /// Kills every service (the agent is exiting).
    pub fn kill_all(&self) {
        for service in self.services.borrow().values() {
            if let Some(pid) = service.pid.get() {
                crate::exec::kill_group(pid as i32, libc::SIGKILL);
            }
        }
    }
}

impl Service {
    /// Its status.
    pub fn info(&self) -> ServiceInfo {
        let exit = self.exit.get();
        ServiceInfo {
            name: self.spec.name.clone(),
            state: self.state.get(),
            reason: self.reason.borrow().clone(),
            exit_code: exit.and_then(WaitStatus::code),
            signal: exit.and_then(WaitStatus::signal),
            pid: self.pid.get(),
            restarts: self.restarts.get(),
            argv: self.spec.argv.clone(),
            log_end: self.log.end(),
        }
    }

    /// Its state.
    pub fn state(&self) -> ServiceState {
        self.state.get()
    }

    /// Stops it: SIGTERM to its process group, SIGKILL after `grace`.
    pub async fn stop(&self, grace: Duration) -> ServiceInfo {
        let Some(pid) = self.pid.get() else {
            return self.info();
        };
        self.stopping.set(true);
        crate::exec::kill_group(pid as i32, libc::SIGTERM);
        let exited = tokio::time::timeout(grace, async {
            while self.pid.get().is_some() {
                self.changed.notified().await;
            }
        })
        .await;
        let reason = if exited.is_ok() {
            "sigterm"
        } else {
            crate::exec::kill_group(pid as i32, libc::SIGKILL);
            while self.pid.get().is_some() {
                self.changed.notified().await;
            }
            "sigkill"
        };
        self.set(ServiceState::Stopped, Some(reason));
        self.info()
    }

    fn set(&self, state: ServiceState, reason: Option<&str>) {
        self.state.set(state);
        *self.reason.borrow_mut() = reason.map(str::to_owned);
        self.changed.notify_waiters();
    }
}

/// Starts the service's process, its log pump, its exit watch and (when starting) its
/// readiness probe.
fn launch(agent: &Rc<Agent>, service: &Rc<Service>) -> ServiceResult<()> {
    let failed =
        |error: std::io::Error| format!("cannot start service {}: {error}", service.spec.name);
    let (log_read, log_write) = make_pipe().map_err(failed)?;
    let program = Program {
        argv: &service.spec.argv,
        env: &service.spec.env,
        cwd: &service.spec.cwd,
    };
    let pid = spawn(
        agent,
        &program,
        [agent.null.as_fd(), log_write.as_fd(), log_write.as_fd()],
        Grouping::Session,
    )
    .map_err(|errno| failed(std::io::Error::from_raw_os_error(errno)))?;
    let exited = agent.reaper.watch(pid as i32);
    drop(log_write);
    service.pid.set(Some(pid));
    service.exit.set(None);
    let log = nonblocking(log_read)
        .and_then(pipe::Receiver::from_owned_fd)
        .map_err(failed)?;
    tokio::task::spawn_local(pump_log(log, Rc::clone(&service.log)));

    let watched = Rc::clone(service);
    let agent_for_restart = Rc::clone(agent);
    tokio::task::spawn_local(async move {
        let status = exited.await.ok();
        // What it left in its session goes with it.
        crate::exec::kill_group(pid as i32, libc::SIGKILL);
        watched.pid.set(None);
        watched.exit.set(status);
        let failure = status.is_none_or(|s| s.code() != Some(0));
        match watched.state.get() {
            _ if watched.stopping.get() => watched.changed.notify_waiters(),
            ServiceState::Starting => {
                watched.set(ServiceState::Failed, Some("exited_before_ready"));
            }
            ServiceState::Ready if failure && watched.spec.restart == RestartPolicy::OnFailure => {
                watched.set(ServiceState::Exited, None);
                tokio::time::sleep(RESTART_DELAY).await;
                if watched.stopping.get() {
                    return;
                }
                watched.restarts.set(watched.restarts.get() + 1);
                watched.set(ServiceState::Starting, None);
                if let Err(error) = launch(&agent_for_restart, &watched) {
                    watched.log.push(format!("burrow: {error}\n").as_bytes());
                    watched.set(ServiceState::Failed, Some("restart_failed"));
                }
            }
            ServiceState::Ready => watched.set(ServiceState::Exited, None),
            ServiceState::Failed | ServiceState::Exited | ServiceState::Stopped => {
                watched.changed.notify_waiters();
            }
        }
    });

    let probed = Rc::clone(service);
    let agent = Rc::clone(agent);
    tokio::task::spawn_local(async move {
        let ready = match probed.spec.ready.clone() {
            None => true,
            Some(probe) => {
                let deadline = tokio::time::Instant::now() + probed.spec.ready_timeout;
                loop {
                    if probed.state.get() != ServiceState::Starting {
                        return;
                    }
                    if crate::probes::check(&agent, &probe, &probed.spec).await {
                        break true;
                    }
                    if tokio::time::Instant::now() + probed.spec.interval > deadline {
                        break false;
                    }
                    tokio::time::sleep(probed.spec.interval).await;
                }
            }
        };
        if probed.state.get() != ServiceState::Starting {
            return;
        }
        if ready {
            probed.set(ServiceState::Ready, None);
        } else {
            probed.stopping.set(true);
            if let Some(pid) = probed.pid.get() {
                crate::exec::kill_group(pid as i32, libc::SIGKILL);
            }
            probed.set(ServiceState::Failed, Some("readiness_timeout"));
        }
    });
    Ok(())
}

async fn pump_log(mut log: pipe::Receiver, ring: Rc<OutputRing>) {
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        match log.read(&mut buffer).await {
            Ok(0) | Err(_) => break,
            Ok(n) => ring.push(&buffer[..n]),
        }
    }
}
