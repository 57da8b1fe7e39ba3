//! Schema changes under the simulation's faults. CREATE KEYSPACE,
//! CREATE TABLE, ALTER TABLE ADD/DROP and DROP TABLE run as CQL through
//! random nodes' executors, which spread them as a node does
//! (`SchemaExchange`: the schema lock on the lowest live node, pushes to
//! the live nodes, pulls of newer epochs heard of in gossip), among
//! updates and reads of the tables they make. A few names are used over
//! and over, so tables are dropped and made again under the same name,
//! and a node often does not know (yet, or any more) the table a client
//! names.
//!
//! Checked along the way: a write through a node that does not know the
//! table (or the column) is refused with the error Cassandra gives
//! ("table .. does not exist", "Undefined column name ..") before
//! anything is sent; a read shows only values written to that very table
//! (by storage id) and column. Checked at the end, after healing and
//! letting gossip settle: every node has the same schema (epoch, version,
//! tables and columns); every replica of a table holds, for each of its
//! columns, the newest write that reached any replica (hidden if the
//! column was dropped after it); no node holds data of a dropped table.

use super::*;

use rocksandra_query::schema::is_system_keyspace;

const KEYSPACES: [&str; 3] = ["sim", "ks0", "ks1"];
const TABLES: [&str; 2] = ["t0", "t1"];
const COLUMNS: [&str; 3] = ["c0", "c1", "c2"];

/// An update of one column of a table that schema changes make.
#[derive(Clone, Debug)]
pub(super) struct SchemaWrite {
    step: usize,
    table: String,
    column: &'static str,
    key: usize,
    timestamp: i64,
    /// The storage id the coordinator resolved the name to (None: it did
    /// not know the table or the column, and refused the write).
    instance: Option<u64>,
    acknowledged: bool,
}

/// What the schema steps did.
#[derive(Default)]
pub(super) struct Model {
    /// By id, which is also the value written.
    writes: Vec<SchemaWrite>,
    /// The storage id of every user table some node had, with its name.
    instances: BTreeMap<u64, String>,
}

/// The storage ids of the tables outside the system keyspaces.
pub(super) fn user_tables(schema: &Schema) -> Vec<TableId> {
    let mut ids: Vec<TableId> = schema
        .keyspaces
        .values()
        .filter(|k| !is_system_keyspace(&k.name))
        .flat_map(|k| k.storage_ids())
        .collect();
    ids.sort_by_key(|id| id.0);
    ids
}

/// The tables schema steps made, in a schema.
fn made_tables(schema: &Schema) -> Vec<Arc<Table>> {
    let (_, kv) = super::schema();
    schema
        .keyspaces
        .values()
        .filter(|k| !is_system_keyspace(&k.name))
        .flat_map(|k| k.tables.values())
        .filter(|t| t.storage_id != kv.storage_id)
        .cloned()
        .collect()
}

/// What a schema describes for the report: epoch and its tables.
fn describe(schema: &Schema) -> String {
    let tables: Vec<String> = made_tables(schema)
        .iter()
        .map(|t| {
            let columns: Vec<&str> = t.columns.iter().map(|c| c.name.as_str()).collect();
            format!(
                "{}.{}#{}({})",
                t.keyspace,
                t.name,
                t.storage_id.0,
                columns.join(",")
            )
        })
        .collect();
    format!(
        "epoch {} version {} [{}]",
        schema.epoch,
        hex::encode(schema.version),
        tables.join(" ")
    )
}

/// The newest drop of `column` in `table` (cells at or before it stay
/// hidden, even once the column is added again).
fn dropped_at(table: &Table, column: &str) -> Option<i64> {
    table
        .dropped
        .iter()
        .filter(|d| d.name == column)
        .map(|d| d.dropped_time)
        .max()
}

impl Sim {
    pub(super) fn schema_step(&mut self, step: usize) {
        match self.schema_rng.below(10) {
            0..=2 => self.schema_change(step),
            3..=6 => self.schema_write(step),
            _ => self.schema_read(step),
        }
    }

    /// A keyspace, table and column name: mostly a column some node has,
    /// else any of the names in use.
    fn pick_name(&mut self) -> (&'static str, &'static str, &'static str) {
        let known: Vec<_> = self.known_columns().into_iter().collect();
        if !known.is_empty() && self.schema_rng.per_mille(750) {
            return known[self.schema_rng.below(known.len())];
        }
        let keyspace = KEYSPACES[self.schema_rng.below(KEYSPACES.len())];
        let table = TABLES[self.schema_rng.below(TABLES.len())];
        let column = COLUMNS[self.schema_rng.below(COLUMNS.len())];
        (keyspace, table, column)
    }

    /// The columns of made tables that some node's schema has.
    fn known_columns(&self) -> BTreeSet<(&'static str, &'static str, &'static str)> {
        let named = |pool: &[&'static str], name: &str| pool.iter().copied().find(|n| *n == name);
        let mut known = BTreeSet::new();
        for node in &self.nodes {
            for table in made_tables(&node.executor.schema()) {
                let (Some(keyspace), Some(name)) = (
                    named(&KEYSPACES, &table.keyspace),
                    named(&TABLES, &table.name),
                ) else {
                    continue;
                };
                for column in &table.columns {
                    if let Some(column) = named(&COLUMNS, &column.name) {
                        known.insert((keyspace, name, column));
                    }
                }
            }
        }
        known
    }

    /// A schema change through a random node.
    fn schema_change(&mut self, step: usize) {
        let Some(c) = self.schema_rng.pick(&self.running()) else {
            return;
        };
        let (keyspace, table, column) = self.pick_name();
        let cql = match self.schema_rng.below(6) {
            0 => format!(
                "CREATE KEYSPACE {} WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': {RF}}}",
                KEYSPACES[1 + self.schema_rng.below(KEYSPACES.len() - 1)]
            ),
            1 | 2 => format!("CREATE TABLE {keyspace}.{table} (k text PRIMARY KEY, c0 bigint)"),
            3 => format!("ALTER TABLE {keyspace}.{table} ADD {column} bigint"),
            4 => format!("ALTER TABLE {keyspace}.{table} DROP {column}"),
            _ => format!("DROP TABLE {keyspace}.{table}"),
        };
        let result = self.nodes[c]
            .executor
            .query(&cql, &rocksandra_query::Request::default());
        let outcome = match &result {
            Ok(_) => "ok".to_string(),
            Err(e) => format!("{e}"),
        };
        self.count(
            match &result {
                Ok(_) => "schema change applied",
                Err(QueryError::Server(_)) => "schema change without the lock",
                Err(_) => "schema change refused",
            },
            1,
        );
        let via = self.nodes[c].address;
        self.note(format!("{step}: {cql} via {via} -> {outcome}"));
        self.remember_tables(c);
    }

    fn remember_tables(&mut self, i: usize) {
        for table in made_tables(&self.nodes[i].executor.schema()) {
            let name = format!("{}.{}", table.keyspace, table.name);
            self.schema_model.instances.insert(table.storage_id.0, name);
        }
    }

    /// An update of one column through a random node, which must refuse
    /// it if it does not know the table or the column.
    fn schema_write(&mut self, step: usize) {
        let Some(c) = self.schema_rng.pick(&self.running()) else {
            return;
        };
        let (keyspace, table, column) = self.pick_name();
        let k = self.schema_rng.below(KEYS);
        let cl =
            [Consistency::One, Consistency::Quorum, Consistency::All][self.schema_rng.below(3)];
        self.next_timestamp = self.next_timestamp.max(self.clock.load(Ordering::SeqCst)) + 1;
        let timestamp = self.next_timestamp;
        let id = self.schema_model.writes.len();
        let known = self.nodes[c]
            .executor
            .schema()
            .table(keyspace, table)
            .map(|t| (t.storage_id.0, t.column(column).is_some()));
        let cql = format!(
            "UPDATE {keyspace}.{table} USING TIMESTAMP {timestamp} SET {column} = {id} WHERE k = 'k{k}'"
        );
        let request = rocksandra_query::Request {
            consistency: cl,
            ..Default::default()
        };
        let result = self.nodes[c].executor.query(&cql, &request);
        let via = self.nodes[c].address;
        let outcome = match &result {
            Ok(_) => "ok".to_string(),
            Err(e) => format!("{}: {e}", error_kind(e)),
        };
        self.note(format!(
            "{step}: swrite#{id} {cql} {} via {via} (knows {known:?}) -> {outcome}",
            cl_name(cl)
        ));
        self.judge_refusal(step, id, &cql, known, &result);
        self.count(
            match (&result, known) {
                (Ok(_), _) => "schema write acknowledged",
                (Err(_), None) => "schema write to an unknown table refused",
                (Err(_), Some((_, false))) => "schema write to an unknown column refused",
                (Err(_), _) => "schema write failed",
            },
            1,
        );
        self.schema_model.writes.push(SchemaWrite {
            step,
            table: format!("{keyspace}.{table}"),
            column,
            key: k,
            timestamp,
            instance: known.filter(|(_, has)| *has).map(|(id, _)| id),
            acknowledged: result.is_ok(),
        });
    }

    /// A write naming a table (or column) its coordinator does not know
    /// fails with Cassandra's InvalidRequest, and nothing of it reaches a
    /// replica.
    fn judge_refusal(
        &mut self,
        step: usize,
        id: usize,
        cql: &str,
        known: Option<(u64, bool)>,
        result: &Result<rocksandra_query::Outcome, QueryError>,
    ) {
        let expected = match known {
            None => "does not exist",
            Some((_, false)) => "Undefined column name",
            Some((_, true)) => return,
        };
        let right = matches!(result, Err(QueryError::Invalid(m)) if m.contains(expected));
        if !right {
            self.violations.push(format!(
                "step {step}: swrite#{id} ({cql}) through a node that does not know it: {result:?}, not an InvalidRequest \"..{expected}..\""
            ));
        }
        let timestamp = self.next_timestamp;
        let landed = self
            .landed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .any(|(_, _, t)| *t == timestamp);
        if landed {
            self.violations.push(format!(
                "step {step}: swrite#{id} ({cql}) was refused, yet reached a replica"
            ));
        }
    }

    /// A read of one column through a random node that knows it.
    fn schema_read(&mut self, step: usize) {
        let Some(c) = self.schema_rng.pick(&self.running()) else {
            return;
        };
        let (keyspace, name, column) = self.pick_name();
        let k = self.schema_rng.below(KEYS);
        let cl =
            [Consistency::One, Consistency::Quorum, Consistency::All][self.schema_rng.below(3)];
        let schema = self.nodes[c].executor.schema();
        let Some(table) = schema.table(keyspace, name).cloned() else {
            return;
        };
        let Some(id) = table.column(column).map(|c| c.id) else {
            return;
        };
        let result = self.nodes[c].coordinator.read_partition(
            &schema,
            &table,
            &full_read(&table, k),
            cl,
            self.now(),
        );
        let via = self.nodes[c].address;
        let seen = result.as_ref().ok().and_then(|p| observed(p, id));
        let line = match &result {
            Ok(_) => format!("{seen:?}"),
            Err(e) => error_kind(e).to_string(),
        };
        self.note(format!(
            "{step}: sread {keyspace}.{name}#{}.{column} k{k} {} via {via} -> {line}",
            table.storage_id.0,
            cl_name(cl)
        ));
        if result.is_ok() {
            self.count("schema read answered", 1);
            let what = format!("step {step}: read of {keyspace}.{name}.{column} k{k}");
            self.check_written_there(&what, &table, column, k, seen);
        }
    }

    /// A value read from `column` of `table` at key `k` was written there:
    /// to that table (by storage id, not only by name) and column.
    fn check_written_there(
        &mut self,
        what: &str,
        table: &Table,
        column: &str,
        k: usize,
        seen: Option<(i64, i64)>,
    ) {
        let Some((value, timestamp)) = seen else {
            return;
        };
        let write = usize::try_from(value)
            .ok()
            .and_then(|i| self.schema_model.writes.get(i));
        let there = write.is_some_and(|w| {
            w.instance == Some(table.storage_id.0)
                && w.column == column
                && w.key == k
                && w.timestamp == timestamp
        });
        if !there {
            let written = write.map_or("none".to_string(), |w| {
                format!(
                    "swrite#{value} at step {} to {}#{:?}.{} k{}",
                    w.step, w.table, w.instance, w.column, w.key
                )
            });
            self.violations.push(format!(
                "{what} (table #{}) returned {value}@{timestamp}, never written there (the write: {written})",
                table.storage_id.0
            ));
        }
    }

    /// Node `a` stops and starts again: its executor opens the schema it
    /// stored; the lock it held as leader is forgotten.
    pub(super) fn restart(&mut self, a: IpAddr) {
        let Some(i) = self.nodes.iter().position(|n| n.address == a) else {
            return;
        };
        let generation = self.count_restart();
        let seed = self.schema_rng.next();
        let node = &self.nodes[i];
        let (executor, exchange) = start_executor(
            &self.network,
            &node.shared,
            &self.clock,
            &node.schema_dir,
            &node.reopening,
            seed,
            generation,
        );
        self.nodes[i].executor = executor;
        self.nodes[i].exchange = exchange;
    }

    fn count_restart(&mut self) -> u64 {
        self.count("restarted", 1);
        self.network
            .faults()
            .counts
            .get("restarted")
            .copied()
            .unwrap_or(1)
    }

    /// Every running node pulls the newest schema it hears of.
    pub(super) fn pull_schemas(&mut self) {
        for i in self.running() {
            if let Err(e) = self.nodes[i].exchange.pull_newest() {
                let a = self.nodes[i].address;
                self.note(format!("{a} cannot pull the newest schema: {e}"));
            }
        }
    }

    /// Gossip and pulls until every running node has the newest schema
    /// (a few rounds: each sees the others' epochs, then pulls).
    pub(super) fn settle_schema(&mut self) {
        for _ in 0..3 {
            self.publish_topology();
            if self.config.schema_pull {
                self.pull_schemas();
            }
        }
        self.publish_topology();
    }

    /// After healing and settling: one schema everywhere, each table's
    /// replicas with the newest writes of its columns, no dropped table's
    /// data anywhere.
    pub(super) fn check_schema(&mut self) {
        self.settle_schema();
        let running = self.running();
        let Some(&first) = running.first() else {
            return;
        };
        for &i in &running {
            self.remember_tables(i);
        }
        let agreed = self.nodes[first].executor.schema_blob();
        let differ: Vec<usize> = running
            .iter()
            .copied()
            .filter(|i| self.nodes[*i].executor.schema_blob() != agreed)
            .collect();
        if !differ.is_empty() {
            let views: Vec<String> = running
                .iter()
                .map(|i| {
                    let n = &self.nodes[*i];
                    format!("{}: {}", n.address, describe(&n.executor.schema()))
                })
                .collect();
            self.violations.push(format!(
                "after settling, the nodes' schemas differ:\n    {}",
                views.join("\n    ")
            ));
            return;
        }
        let schema = self.nodes[first].executor.schema();
        self.note(format!("agreed schema: {}", describe(&schema)));
        for table in made_tables(&schema) {
            self.check_made_table(&schema, &table);
        }
        self.check_dropped(&schema);
    }

    /// A table every node knows: an ALL read of each key (which repairs
    /// the replicas), then every replica holds, for each column, the
    /// newest write to that table and column that reached any replica
    /// and is newer than the column's last drop.
    fn check_made_table(&mut self, schema: &Arc<Schema>, table: &Arc<Table>) {
        let name = format!("{}.{}#{}", table.keyspace, table.name, table.storage_id.0);
        let columns: Vec<(&'static str, ColumnId)> = COLUMNS
            .iter()
            .filter_map(|c| table.column(c).map(|col| (*c, col.id)))
            .collect();
        let strategy = Strategy::Simple { rf: RF };
        for k in 0..KEYS {
            let Some(c) = self.schema_rng.pick(&self.running()) else {
                return;
            };
            let read = full_read(table, k);
            match self.nodes[c].coordinator.read_partition(
                schema,
                table,
                &read,
                Consistency::All,
                self.now(),
            ) {
                Ok(p) => {
                    for (column, id) in &columns {
                        let what = format!("final ALL read of {name}.{column} k{k}");
                        self.check_written_there(&what, table, column, k, observed(&p, *id));
                    }
                }
                Err(e) => self
                    .violations
                    .push(format!("final ALL read of {name} k{k} failed: {e:?}")),
            }
            let replicas = self.nodes[c]
                .shared
                .topology()
                .replicas(&strategy, key(k).token);
            for (column, id) in &columns {
                let expected = self.newest_landed(table, column, k);
                for replica in &replicas {
                    let got = self.network.engines[replica]
                        .read_partition(&read, self.now())
                        .map(|p| observed(&p, *id));
                    if got.as_ref().ok() != Some(&expected) {
                        self.violations.push(format!(
                            "at the end: replica {replica} holds {got:?} for {name}.{column} k{k}, the last write wins {expected:?}"
                        ));
                    }
                }
            }
        }
    }

    /// The newest write to `column` of `table` at key `k` that reached a
    /// replica, unless the column was dropped after it.
    fn newest_landed(&self, table: &Table, column: &str, k: usize) -> Option<(i64, i64)> {
        let landed = self.landed.lock().unwrap_or_else(|p| p.into_inner());
        let hidden_until = dropped_at(table, column).unwrap_or(i64::MIN);
        self.schema_model
            .writes
            .iter()
            .enumerate()
            .filter(|(_, w)| {
                w.instance == Some(table.storage_id.0)
                    && w.column == column
                    && w.key == k
                    && w.timestamp > hidden_until
                    && landed.contains(&(table.storage_id.0, key(k).key, w.timestamp))
            })
            .max_by_key(|(_, w)| w.timestamp)
            .map(|(id, w)| (id as i64, w.timestamp))
    }

    /// No node in the ring holds a row of a table the schema dropped.
    fn check_dropped(&mut self, schema: &Schema) {
        let live: BTreeSet<u64> = user_tables(schema).iter().map(|t| t.0).collect();
        let dropped: Vec<(u64, String)> = self
            .schema_model
            .instances
            .iter()
            .filter(|(id, _)| !live.contains(id))
            .map(|(id, name)| (*id, name.clone()))
            .collect();
        for (id, name) in dropped {
            if !schema.dropped_tables.contains(&id) {
                self.violations.push(format!(
                    "table {name}#{id} is gone from the schema but not among its dropped tables"
                ));
            }
            for node in self.nodes.iter().filter(|n| n.status.is_some()) {
                let keys = self.network.engines[&node.address].partition_keys(
                    TableId(id),
                    TokenRange::full(),
                    None,
                    1,
                );
                if keys.is_ok_and(|k| !k.is_empty()) {
                    self.violations.push(format!(
                        "{} still holds rows of the dropped table {name}#{id}",
                        node.address
                    ));
                }
            }
        }
        let acknowledged = self
            .schema_model
            .writes
            .iter()
            .filter(|w| w.acknowledged)
            .count();
        self.note(format!(
            "schema writes acknowledged: {acknowledged} of {}",
            self.schema_model.writes.len()
        ));
    }
}
