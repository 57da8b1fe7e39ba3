//! The index of `Schema::table_by_storage_id` and `keyspace_by_storage_id`
//! answers as the scans do, over the built-in schema.

use super::*;
use crate::system::builtin_schema;

/// A table no other shares a storage id with.
fn lone_table(schema: &Schema) -> Arc<Table> {
    let tables: Vec<&Arc<Table>> = schema
        .keyspaces
        .values()
        .flat_map(|k| k.tables.values())
        .collect();
    let alone = |t: &&&Arc<Table>| {
        tables
            .iter()
            .filter(|o| o.storage_id == t.storage_id)
            .count()
            == 1
    };
    (*tables.iter().find(alone).expect("a table")).clone()
}

fn names(found: Option<(&Arc<Keyspace>, &Arc<Table>)>) -> Option<(String, String)> {
    found.map(|(k, t)| (k.name.clone(), t.name.clone()))
}

#[test]
fn answers_as_the_scan_does() {
    let schema = builtin_schema();
    let ids = schema.keyspaces.values().flat_map(|k| k.tables.values());
    for id in ids.map(|t| t.storage_id).chain([TableId(u64::MAX)]) {
        let indexed = names(schema.table_by_storage_id(id));
        assert_eq!(indexed, names(schema.scan_storage_id(id)), "{id:?}");
    }
    assert!(schema.table_by_storage_id(TableId(u64::MAX)).is_none());
}

#[test]
fn finds_the_keyspace_of_an_index_store() {
    let mut schema = builtin_schema();
    let table = lone_table(&schema);
    let mut indexed = Table::clone(&table);
    indexed.indexes.push(Index {
        name: "i".to_string(),
        kind: "COMPOSITES".to_string(),
        options: BTreeMap::new(),
        storage_id: Some(TableId(1 << 41)),
        built: true,
    });
    let keyspace = schema.keyspaces.get_mut(&table.keyspace).expect("keyspace");
    Arc::make_mut(keyspace)
        .tables
        .insert(indexed.name.clone(), Arc::new(indexed));
    let found = schema.keyspace_by_storage_id(TableId(1 << 41));
    assert_eq!(found.map(|k| k.name.clone()), Some(table.keyspace.clone()));
    assert!(
        schema.table_by_storage_id(TableId(1 << 41)).is_none(),
        "not a table's own id"
    );
    let own = schema.keyspace_by_storage_id(table.storage_id);
    assert_eq!(own.map(|k| k.name.clone()), Some(table.keyspace.clone()));
}

#[test]
fn a_change_after_the_index_was_built_is_seen() {
    let mut schema = builtin_schema();
    let table = lone_table(&schema);
    let old = table.storage_id;
    assert!(
        schema.table_by_storage_id(old).is_some(),
        "the index is built"
    );
    let mut moved = Table::clone(&table);
    moved.storage_id = TableId(1 << 40);
    let keyspace = schema.keyspaces.get_mut(&table.keyspace).expect("keyspace");
    Arc::make_mut(keyspace)
        .tables
        .insert(moved.name.clone(), Arc::new(moved));
    assert!(schema.table_by_storage_id(old).is_none(), "no stale hit");
    let found = names(schema.table_by_storage_id(TableId(1 << 40)));
    assert_eq!(found, Some((table.keyspace.clone(), table.name.clone())));
    let clone = schema.clone();
    assert!(clone.table_by_storage_id(TableId(1 << 40)).is_some());
}
