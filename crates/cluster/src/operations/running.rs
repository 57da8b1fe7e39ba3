//! The long operations running on this node (decommission, removenode,
//! rebuild, repair), so that a nodetool that asks for one already running
//! (its first nodetool was killed, or lost its connection, and the
//! operator runs the command again) attaches to it: it waits for that
//! operation's end and reports its outcome, instead of starting a second
//! one or failing because the first changed the node's state.

use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;

use super::OperationError;
use crate::message::AdminCommand;

/// Operations running at once that can be attached to; more run without
/// being listed (they are rare: an operator starts each by hand).
pub const RUNNING_OPERATIONS_MAX: usize = 64;

/// Which running operation a command would start again: None for commands
/// that are not long operations. The options that do not change the work
/// (decommission's `--force`) are left out.
pub fn operation_key(command: &AdminCommand) -> Option<String> {
    Some(match command {
        AdminCommand::Decommission { .. } => "decommission".into(),
        AdminCommand::RemoveNode { host_id } => format!("removenode {host_id}"),
        AdminCommand::Rebuild { source_dc } => match source_dc {
            Some(dc) => format!("rebuild from {dc}"),
            None => "rebuild".into(),
        },
        AdminCommand::Repair {
            keyspace,
            tables,
            primary_range,
            range,
        } => {
            let mut key = String::from("repair");
            if let Some(keyspace) = keyspace {
                key.push_str(&format!(" of {keyspace}"));
            }
            if !tables.is_empty() {
                key.push_str(&format!(" ({})", tables.join(", ")));
            }
            if *primary_range {
                key.push_str(" on its primary ranges");
            }
            if let Some(r) = range {
                key.push_str(&format!(
                    " of ({}, {}]",
                    r.start_exclusive.0, r.end_inclusive.0
                ));
            }
            key
        }
        _ => return None,
    })
}

struct Operation {
    key: String,
    started: Instant,
    outcome: Mutex<Option<Outcome>>,
    ended: Condvar,
}

/// How an operation ended, shared by the commands attached to it.
pub type Outcome = Result<String, Arc<OperationError>>;

/// The operations running now.
#[derive(Default)]
pub struct RunningOperations {
    list: Mutex<Vec<Arc<Operation>>>,
}

impl RunningOperations {
    /// Runs `work` as the operation `key`, or, when one is running
    /// already, waits for it and returns its outcome, preceded by a line
    /// that says so.
    pub fn run_or_attach(
        &self,
        key: String,
        work: impl FnOnce() -> Result<String, OperationError>,
    ) -> Outcome {
        let operation = match self.join(key) {
            Joined::Attached(running) => return attach(&running),
            Joined::Started(operation) => operation,
        };
        let outcome = work().map_err(Arc::new);
        if let Some(operation) = operation {
            *operation.outcome.lock().unwrap_or_else(|p| p.into_inner()) = Some(outcome.clone());
            operation.ended.notify_all();
            let mut list = self.list.lock().unwrap_or_else(|p| p.into_inner());
            list.retain(|o| !Arc::ptr_eq(o, &operation));
        }
        outcome
    }

    /// The running operation `key`, or a new one this caller runs (not
    /// listed past `RUNNING_OPERATIONS_MAX`).
    fn join(&self, key: String) -> Joined {
        let mut list = self.list.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(running) = list.iter().find(|o| o.key == key) {
            return Joined::Attached(running.clone());
        }
        if list.len() >= RUNNING_OPERATIONS_MAX {
            return Joined::Started(None);
        }
        let operation = Arc::new(Operation {
            key,
            started: Instant::now(),
            outcome: Mutex::new(None),
            ended: Condvar::new(),
        });
        list.push(operation.clone());
        Joined::Started(Some(operation))
    }

    /// The keys of the operations running now (oldest first).
    pub fn running(&self) -> Vec<String> {
        let list = self.list.lock().unwrap_or_else(|p| p.into_inner());
        list.iter().map(|o| o.key.clone()).collect()
    }
}

enum Joined {
    /// The same operation was running: wait for it.
    Attached(Arc<Operation>),
    /// This caller runs it (listed unless too many run).
    Started(Option<Arc<Operation>>),
}

/// Waits for `operation` to end; its outcome, after a line saying this
/// command attached to it.
fn attach(operation: &Operation) -> Outcome {
    let since = operation.started.elapsed().as_secs();
    tracing::info!(
        "nodetool attached to the {} running for {since} s",
        operation.key
    );
    let mut outcome = operation.outcome.lock().unwrap_or_else(|p| p.into_inner());
    let ended = loop {
        if let Some(ended) = outcome.as_ref() {
            break ended.clone();
        }
        outcome = operation
            .ended
            .wait(outcome)
            .unwrap_or_else(|p| p.into_inner());
    };
    let header = format!(
        "A {} was running already (started {since} s before this command): attached to it.\n",
        operation.key
    );
    match ended {
        Ok(text) => Ok(format!("{header}{text}")),
        Err(failure) => Err(Arc::new(OperationError::Attached { header, failure })),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;

    #[test]
    fn a_second_command_attaches_to_the_running_operation() {
        let running = Arc::new(RunningOperations::default());
        let (started_tx, started_rx) = mpsc::channel();
        let (finish_tx, finish_rx) = mpsc::channel::<()>();
        let first = {
            let running = running.clone();
            std::thread::spawn(move || {
                running.run_or_attach("decommission".into(), || {
                    started_tx.send(()).unwrap();
                    finish_rx.recv().unwrap();
                    Ok("Decommissioned.\n".into())
                })
            })
        };
        started_rx.recv().unwrap();
        assert_eq!(running.running(), vec!["decommission".to_string()]);
        let second = {
            let running = running.clone();
            std::thread::spawn(move || {
                running.run_or_attach("decommission".into(), || {
                    panic!("a second decommission must not start")
                })
            })
        };
        // The second waits for the first to end.
        std::thread::sleep(Duration::from_millis(100));
        assert!(!second.is_finished());
        finish_tx.send(()).unwrap();
        assert_eq!(
            first.join().unwrap().expect("decommissioned"),
            "Decommissioned.\n"
        );
        let attached = second.join().unwrap().expect("the first's outcome");
        assert!(
            attached.starts_with("A decommission was running already"),
            "{attached}"
        );
        assert!(attached.ends_with("Decommissioned.\n"), "{attached}");
        // Once ended, the same command starts a new operation.
        assert!(running.running().is_empty());
        let again = running.run_or_attach("decommission".into(), || {
            Err(OperationError::NotNormal("JOINING"))
        });
        assert_eq!(
            again.expect_err("refused").to_string(),
            "Node is in JOINING state; only a NORMAL node can be decommissioned"
        );
    }

    #[test]
    fn different_operations_run_side_by_side_and_failures_reach_the_attached() {
        let running = Arc::new(RunningOperations::default());
        let (finish_tx, finish_rx) = mpsc::channel::<()>();
        let (started_tx, started_rx) = mpsc::channel();
        let repair = {
            let running = running.clone();
            std::thread::spawn(move || {
                running.run_or_attach("repair of ks".into(), || {
                    started_tx.send(()).unwrap();
                    finish_rx.recv().unwrap();
                    Err(OperationError::NotReplicated("ks".into()))
                })
            })
        };
        started_rx.recv().unwrap();
        // Another keyspace's repair is another operation.
        let other = running.run_or_attach("repair of other".into(), || Ok("done\n".into()));
        assert_eq!(other.expect("done"), "done\n");
        let attached = {
            let running = running.clone();
            std::thread::spawn(move || {
                running.run_or_attach("repair of ks".into(), || Ok("x".into()))
            })
        };
        std::thread::sleep(Duration::from_millis(50));
        finish_tx.send(()).unwrap();
        assert!(repair.join().unwrap().is_err());
        let e = attached.join().unwrap().expect_err("the first's failure");
        assert!(
            e.to_string()
                .ends_with("Keyspace ks is not replicated; nothing to repair"),
            "{e}"
        );
    }

    #[test]
    fn keys_name_the_work_not_the_options_that_do_not_change_it() {
        let decommission = |force| AdminCommand::Decommission { force };
        assert_eq!(
            operation_key(&decommission(true)),
            operation_key(&decommission(false))
        );
        let repair = |keyspace: Option<&str>, primary_range| AdminCommand::Repair {
            keyspace: keyspace.map(str::to_string),
            tables: vec![],
            primary_range,
            range: None,
        };
        assert_eq!(
            operation_key(&repair(Some("ks"), false)).as_deref(),
            Some("repair of ks")
        );
        assert_ne!(
            operation_key(&repair(Some("ks"), true)),
            operation_key(&repair(Some("ks"), false))
        );
        assert_eq!(operation_key(&AdminCommand::Netstats), None);
    }
}
