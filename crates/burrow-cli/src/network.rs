//! `--network allow:...` for `burrow run`: the proxy runs in burrow itself, on the port the
//! cell opened on its loopback, for as long as the command runs.

use std::sync::{Arc, Mutex};

use burrow_policy::Policy;
use burrow_proxy::{Denial, DenialSink, Proxy, Resolver};
use burrow_sandbox::Cell;

/// The connections refused so far, for the report.
#[derive(Debug, Default)]
pub struct Denials(Mutex<Vec<Denial>>);

impl Denials {
    /// Everything refused, in order; the list is left empty.
    pub fn take(&self) -> Vec<Denial> {
        self.0
            .lock()
            .map(|mut denials| std::mem::take(&mut *denials))
            .unwrap_or_default()
    }
}

impl DenialSink for Denials {
    fn denied(&self, denial: &Denial) {
        if let Ok(mut denials) = self.0.lock() {
            denials.push(denial.clone());
        }
    }
}

/// Serves the cell's proxy port, when its policy is `allow` mode; returns where the refusals
/// are collected. Starts threads: call it once the cell is cloned.
pub fn serve_allowlist(cell: &mut Cell, policy: &Policy) -> anyhow::Result<Arc<Denials>> {
    let denials = Arc::new(Denials::default());
    if let Some(listener) = cell.take_proxy_listener()? {
        let sink: Arc<dyn DenialSink> = denials.clone();
        Proxy::new(policy.network_rules.clone(), Resolver::from_env(), sink).spawn(listener)?;
    }
    Ok(denials)
}
