//! `StatementCtx`: what a statement may use of the node while it runs:
//! a snapshot of the published schema, the data proxy, the storage engine, the clock
//! and randomness (`Env`), the node's identity, its settings, and a way to
//! run the server's own CQL (reads and writes of `system_auth` and
//! `system_traces`). The executor builds one for each statement and hands
//! it to the statement modules (`select`, `modify`, `auth`, ...), which so
//! never see the executor.
//!
//! **Invariant**: no module a ctx is handed to names the executor; the
//! executor depends on them, never the reverse (`tests/layers.rs`).

use std::sync::{Arc, RwLock};

use rocksandra_cql::ast::{ParsedStatement, Select};
use rocksandra_data::LocalTime;
use rocksandra_storage::Engine;
use rocksandra_wire::Consistency;

use crate::error::Result;
use crate::index::vector::Graphs;
use crate::proxy::{DataProxy, RmwLock};
use crate::read_thresholds::ReadThresholds;
use crate::request::{Env, Outcome, Request};
use crate::schema::{KeyspaceTypes, Schema};
use crate::settings::Settings;
use crate::term::EvalContext;
use crate::tombstones::{TombstoneThresholds, TombstoneVerdict};
use crate::NodeInfo;

/// Runs a statement the server issues itself, as a client's is run
/// (authorized, guarded, dispatched): the executor.
pub trait RunStatement {
    fn run(
        &self,
        parsed: &ParsedStatement,
        request: &Request,
        values: &[rocksandra_wire::Value],
    ) -> Result<Outcome>;
}

/// The node as one statement sees it. Cheap to build: references, and
/// the schema's snapshot (one lock, one reference count).
pub struct StatementCtx<'a> {
    /// The schema published when the ctx was built: every part of a
    /// statement sees the same one, whatever another node or statement
    /// publishes meanwhile. A schema change's own follow-up work (an
    /// index's entries, a view's rows, the creator's grants) takes a new
    /// ctx, which sees the change.
    pub(crate) schema: Arc<Schema>,
    /// Where user data goes: the cluster's coordinator, or local storage.
    pub(crate) data: &'a dyn DataProxy,
    /// Whether `data` is the cluster's coordinator.
    pub(crate) clustered: bool,
    /// The storage engine of this node.
    pub(crate) engine: &'a Arc<dyn Engine>,
    pub(crate) env: &'a Env,
    pub(crate) node: &'a RwLock<NodeInfo>,
    /// Serializes read-before-write statements (conditional updates, list
    /// index operations, counters) on this node.
    pub(crate) rmw_lock: &'a Arc<RmwLock>,
    /// The HNSW graphs of SAI vector indexes (`index::vector`), on a node
    /// alone.
    pub(crate) vector_graphs: &'a Arc<Graphs>,
    pub(crate) settings: &'a Settings,
    pub(crate) runner: &'a dyn RunStatement,
}

impl<'a> StatementCtx<'a> {
    pub(crate) fn schema(&self) -> Arc<Schema> {
        self.schema.clone()
    }

    pub(crate) fn data(&self) -> &'a dyn DataProxy {
        self.data
    }

    /// Whether user data goes through a cluster's coordinator.
    pub(crate) fn is_clustered(&self) -> bool {
        self.clustered
    }

    pub(crate) fn engine(&self) -> &'a Arc<dyn Engine> {
        self.engine
    }

    pub(crate) fn node(&self) -> NodeInfo {
        self.node.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    pub(crate) fn now_micros(&self) -> i64 {
        (self.env.now_micros)()
    }

    /// The clock in milliseconds (the auth caches' time).
    pub(crate) fn now_millis(&self) -> i64 {
        self.now_micros().div_euclid(1_000)
    }

    pub(crate) fn local_now(&self, request: &Request) -> LocalTime {
        match request.now_in_seconds {
            Some(s) => LocalTime(i64::from(s)),
            None => LocalTime(self.now_micros().div_euclid(1_000_000)),
        }
    }

    /// What term evaluation needs for a statement on `keyspace`.
    pub(crate) fn eval_context<'e>(
        &self,
        schema: &'e Schema,
        keyspace: &'e str,
        values: &'e [rocksandra_wire::Value],
        random: &'e dyn Fn() -> u64,
    ) -> EvalContext<'e> {
        EvalContext {
            binds: values,
            now_micros: self.now_micros(),
            keyspace,
            types: KeyspaceTypes(
                schema
                    .keyspace(keyspace)
                    .map(|k| k.types.as_slice())
                    .unwrap_or(&[]),
            ),
            schema: Some(schema),
            random,
            stand_ins: false,
        }
    }

    /// What term evaluation needs at PREPARE, before any value is bound:
    /// terms evaluate to stand-ins (`EvalContext::stand_ins`).
    pub(crate) fn prepare_eval_context<'e>(
        &self,
        schema: &'e Schema,
        keyspace: &'e str,
        random: &'e dyn Fn() -> u64,
    ) -> EvalContext<'e> {
        EvalContext {
            stand_ins: true,
            ..self.eval_context(schema, keyspace, &[], random)
        }
    }

    /// `tombstone_warn_threshold` and `tombstone_failure_threshold`.
    pub(crate) fn tombstone_thresholds(&self) -> TombstoneThresholds {
        self.settings.tombstones.get()
    }

    /// The read thresholds when `read_thresholds_enabled`; None otherwise.
    pub(crate) fn read_thresholds(&self) -> Option<ReadThresholds> {
        self.settings.read_thresholds.enabled()
    }

    /// Whether a read that met `tombstones` calls for the thresholds'
    /// warning or failure (which `check_tombstones` gives).
    pub(crate) fn tombstones_past_warn(&self, tombstones: u64) -> bool {
        self.settings.tombstones.get().verdict(tombstones) != TombstoneVerdict::Within
    }

    /// Cassandra's tombstone warning or failure for a read (`tombstones`).
    pub(crate) fn check_tombstones(
        &self,
        tombstones: u64,
        live: usize,
        select: &Select,
        consistency: Consistency,
    ) -> Result<Option<String>> {
        let node = || self.node().broadcast_address;
        self.settings
            .tombstones
            .check(tombstones, live, select, consistency, node)
    }

    /// Runs a statement of the server's own (see `RunStatement`).
    pub(crate) fn run(
        &self,
        parsed: &ParsedStatement,
        request: &Request,
        values: &[rocksandra_wire::Value],
    ) -> Result<Outcome> {
        self.runner.run(parsed, request, values)
    }
}
