//! How schema changes spread through a cluster. One change at a time
//! cluster-wide, under the schema lock that the schema leader (the lowest
//! live normal node) hands out; each change starts from the newest schema
//! and is pushed to every live node before it is answered. A node that
//! hears (through gossip) of a newer epoch pulls the schema of the live
//! node with the highest epoch.
//!
//! It reaches other nodes only through `Shared`'s transport, and reads
//! time only through `Shared::now_micros` and the `pause` it is given, so
//! the deterministic simulation (`tests/simulation.rs`) runs it as a node
//! does.

use std::collections::HashSet;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use rocksandra_query::executor::{SchemaLease, SchemaSync};
use rocksandra_query::{Executor, QueryError};
use rocksandra_wire::Event;

use crate::coordinator::Shared;
use crate::message::{RemoteError, Request, Response, SchemaBlob};
use crate::messaging::SendError;
use crate::node::EventSink;
use crate::replies::Replies;
use crate::ring::MemberStatus;

/// How long a schema change waits for the cluster's schema lock, and for
/// every live node to take the new schema.
pub const SCHEMA_TIMEOUT: Duration = Duration::from_secs(10);
/// A schema lock whose holder went silent is free again after this.
pub const SCHEMA_LOCK_LEASE: Duration = Duration::from_secs(30);
/// The pause between two attempts at the schema lock.
pub const SCHEMA_LOCK_RETRY: Duration = Duration::from_millis(20);

/// Waits `Duration` (a thread sleep on a node; simulated time in tests).
pub type Pause = Arc<dyn Fn(Duration) + Send + Sync>;

/// Why this node could not take another node's schema.
#[derive(Debug, thiserror::Error)]
pub enum SchemaPullError {
    #[error("{0}")]
    Send(#[from] SendError),
    #[error("unexpected answer to a schema pull: {0:?}")]
    Unexpected(Box<Response>),
    /// Some live nodes did not answer in time.
    #[error("no schema from {0:?}")]
    NoAnswer(HashSet<IpAddr>),
    /// A live node answered otherwise, or could not be asked.
    #[error("no schema from {address}: {answer:?}")]
    NoSchema {
        address: IpAddr,
        answer: Box<Result<Response, SendError>>,
    },
    /// The executor refused the schema.
    #[error("{0}")]
    Install(#[from] QueryError),
}

/// One node's part in spreading schema changes.
pub struct SchemaExchange {
    shared: Arc<Shared>,
    executor: Arc<Executor>,
    events: EventSink,
    pause: Pause,
    /// On the schema leader: who holds the schema lock, since when
    /// (`now_micros`).
    lock: Mutex<Option<(IpAddr, i64)>>,
}

impl SchemaExchange {
    pub fn new(
        shared: Arc<Shared>,
        executor: Arc<Executor>,
        events: EventSink,
        pause: Pause,
    ) -> Arc<SchemaExchange> {
        Arc::new(SchemaExchange {
            shared,
            executor,
            events,
            pause,
            lock: Mutex::new(None),
        })
    }

    /// The executor's hook: its schema changes go through this exchange.
    pub fn sync(self: &Arc<Self>) -> Arc<dyn SchemaSync> {
        Arc::new(ExchangeSync(Arc::downgrade(self)))
    }

    /// Answers the schema requests (pull, push, lock); Err(request) for
    /// the others.
    pub fn handle(&self, from: IpAddr, request: Request) -> Result<Response, Request> {
        Ok(match request {
            Request::SchemaPull => {
                let (epoch, version, json) = self.executor.schema_blob();
                Response::Schema(SchemaBlob {
                    epoch,
                    version,
                    json,
                })
            }
            Request::SchemaPush { schema } => match self.install(&schema) {
                Ok(()) => Response::Ack,
                Err(e) => Response::Error(RemoteError::Failed(e.to_string())),
            },
            Request::SchemaLock { release } => self.lock_schema(from, release),
            other => return Err(other),
        })
    }

    /// Installs the schema of the live node with the highest epoch, if it
    /// is newer than this node's (blocking).
    pub fn pull_newest(&self) -> Result<(), SchemaPullError> {
        let topology = self.shared.topology();
        let (epoch, _, _) = self.executor.schema_blob();
        let newest = topology
            .nodes
            .values()
            .filter(|v| v.alive && v.member.address != self.shared.local)
            .max_by_key(|v| (v.schema_epoch, std::cmp::Reverse(v.member.address)));
        let Some(source) = newest.filter(|v| v.schema_epoch > epoch) else {
            return Ok(());
        };
        self.pull_from(source.member.address)
    }

    /// Installs `address`'s schema if it is newer than this node's.
    pub fn pull_from(&self, address: IpAddr) -> Result<(), SchemaPullError> {
        match self
            .shared
            .messaging
            .call(address, Request::SchemaPull, SCHEMA_TIMEOUT)
        {
            Ok(Response::Schema(blob)) => self.install(&blob),
            Ok(other) => Err(SchemaPullError::Unexpected(Box::new(other))),
            Err(e) => Err(SchemaPullError::Send(e)),
        }
    }

    fn install(&self, blob: &SchemaBlob) -> Result<(), SchemaPullError> {
        let changes = self.executor.install_schema(blob.epoch, &blob.json)?;
        for change in changes {
            (self.events)(Event::SchemaChange(change));
        }
        Ok(())
    }

    /// The node that hands out the schema lock: the lowest address among
    /// the live normal nodes.
    fn leader(&self) -> IpAddr {
        let topology = self.shared.topology();
        topology
            .nodes
            .values()
            .filter(|v| v.alive && v.member.status == MemberStatus::Normal)
            .map(|v| v.member.address)
            .min()
            .unwrap_or(self.shared.local)
    }

    fn now_micros(&self) -> i64 {
        (self.shared.now_micros)()
    }

    fn lock_schema(&self, holder: IpAddr, release: bool) -> Response {
        let mut lock = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        if release {
            if lock.is_some_and(|(h, _)| h == holder) {
                *lock = None;
            }
            return Response::Ack;
        }
        let now = self.now_micros();
        let lease = SCHEMA_LOCK_LEASE.as_micros() as i64;
        match *lock {
            Some((h, since)) if h != holder && now.saturating_sub(since) < lease => {
                Response::Error(RemoteError::Overloaded(format!(
                    "schema change in progress on {h}"
                )))
            }
            _ => {
                *lock = Some((holder, now));
                Response::Ack
            }
        }
    }

    /// Asks `leader` (this node or another) for the schema lock.
    fn ask_lock(&self, leader: IpAddr, release: bool) -> Response {
        if leader == self.shared.local {
            return self.lock_schema(leader, release);
        }
        self.shared
            .messaging
            .call(leader, Request::SchemaLock { release }, SCHEMA_TIMEOUT)
            .unwrap_or_else(|e| Response::Error(RemoteError::Failed(e.to_string())))
    }

    fn acquire(&self) -> Result<SchemaLease, QueryError> {
        let local = self.shared.local;
        let deadline = self.now_micros() + SCHEMA_TIMEOUT.as_micros() as i64;
        let leader = loop {
            let leader = self.leader();
            let answer = self.ask_lock(leader, false);
            if answer == Response::Ack {
                break leader;
            }
            if self.now_micros() > deadline {
                return Err(crate::query_error::schema_lock_refused(leader, &answer));
            }
            (self.pause)(SCHEMA_LOCK_RETRY);
        };
        // Start from the newest schema of the live nodes, as they answer
        // now (gossip may lag): a change made on an older one would take
        // an epoch another schema has, and the two would never meet.
        if let Err(e) = self.pull_from_live() {
            self.ask_lock(leader, true);
            return Err(crate::query_error::schema_change_refused(&e));
        }
        Ok(SchemaLease(u64::from(leader == local)))
    }

    /// Asks every other live node for its schema and installs the newest
    /// (if newer than this node's); fails if one does not answer.
    fn pull_from_live(&self) -> Result<(), SchemaPullError> {
        let (replies, mut waiting) = self.send_to_live(|| Request::SchemaPull);
        let mut newest: Option<SchemaBlob> = None;
        while !waiting.is_empty() {
            let Some((address, result)) = replies.next() else {
                return Err(SchemaPullError::NoAnswer(waiting));
            };
            match result {
                Ok(Response::Schema(blob)) => {
                    if newest.as_ref().is_none_or(|n| blob.epoch > n.epoch) {
                        newest = Some(blob);
                    }
                }
                other => {
                    return Err(SchemaPullError::NoSchema {
                        address,
                        answer: Box::new(other),
                    })
                }
            }
            waiting.remove(&address);
        }
        match newest {
            Some(blob) => self.install(&blob),
            None => Ok(()),
        }
    }

    fn publish(&self, executor: &Executor) {
        let (epoch, version, json) = executor.schema_blob();
        let blob = SchemaBlob {
            epoch,
            version,
            json,
        };
        let (replies, mut waiting) = self.send_to_live(|| Request::SchemaPush {
            schema: blob.clone(),
        });
        while !waiting.is_empty() {
            let Some((address, result)) = replies.next() else {
                tracing::warn!("no answer to schema epoch {epoch} from {waiting:?}");
                break;
            };
            if !matches!(result, Ok(Response::Ack)) {
                tracing::warn!("{address} did not take schema epoch {epoch}: {result:?}");
            }
            waiting.remove(&address);
        }
    }

    /// Sends `request()` to every other live node; their answers (awaited
    /// for `SCHEMA_TIMEOUT`) and the nodes asked.
    fn send_to_live(&self, request: impl Fn() -> Request) -> (Replies, HashSet<IpAddr>) {
        let topology = self.shared.topology();
        let (tx, rx) = std::sync::mpsc::channel();
        let mut asked = HashSet::new();
        for view in topology.nodes.values() {
            let address = view.member.address;
            if view.alive && address != self.shared.local {
                self.shared.messaging.send(address, request(), tx.clone());
                asked.insert(address);
            }
        }
        (Replies::within(rx, SCHEMA_TIMEOUT), asked)
    }

    fn release(&self) {
        self.ask_lock(self.leader(), true);
    }
}

/// `SchemaSync` for the executor (a weak handle: the exchange holds the
/// executor).
struct ExchangeSync(Weak<SchemaExchange>);

impl ExchangeSync {
    fn exchange(&self) -> Result<Arc<SchemaExchange>, QueryError> {
        self.0
            .upgrade()
            .ok_or_else(|| QueryError::Server("the node is shutting down".into()))
    }
}

impl SchemaSync for ExchangeSync {
    fn acquire(&self, _executor: &Executor) -> Result<SchemaLease, QueryError> {
        self.exchange()?.acquire()
    }

    fn publish(&self, executor: &Executor, _lease: SchemaLease) -> Result<(), QueryError> {
        let exchange = self.exchange()?;
        exchange.publish(executor);
        exchange.release();
        Ok(())
    }

    fn release(&self, _lease: SchemaLease) {
        if let Ok(exchange) = self.exchange() {
            exchange.release();
        }
    }
}
