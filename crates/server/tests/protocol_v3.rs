//! A whole node (`Service`, RocksDB in a temporary directory) spoken to in
//! protocol v3 through the raw test client: what a v3 driver sees of
//! prepared statements, v4's types and bind-count errors.

use bytes::Bytes;
use rocksandra_data::types::{CqlType, NativeType};
use rocksandra_server::config::Config;
use rocksandra_wire::{
    Batch, BatchQuery, BatchStatement, BatchType, ColumnsMetadata, Consistency, Execute, Prepare,
    ProtocolVersion, Query, Request, Response, ResultBody, Value,
};

mod common;
use common::{expect_result as result, int, params, query, Client, Node};

fn error_message(response: Response) -> String {
    match response {
        Response::Error(e) => e.message,
        other => panic!("expected an ERROR, got {other:?}"),
    }
}

fn one_insert_batch(values: Vec<Value>) -> Request {
    Request::Batch(Batch {
        batch_type: BatchType::Logged,
        statements: vec![BatchStatement {
            query: BatchQuery::Text("INSERT INTO ks.t (k, v) VALUES (?, ?)".to_string()),
            values,
        }],
        consistency: Consistency::One,
        serial_consistency: None,
        default_timestamp_micros: None,
        keyspace: None,
        now_in_seconds: None,
    })
}

async fn prepared_in_v3(client: &mut Client) {
    let prepare = Prepare {
        query: "INSERT INTO ks.t (k, v, d) VALUES (?, ?, ?)".to_string(),
        keyspace: None,
    };
    let ResultBody::Prepared(prepared) = result(client.request(3, Request::Prepare(prepare)).await)
    else {
        panic!("PREPARE answers Prepared");
    };
    // No partition key indexes in v3 (drivers route by the table's metadata).
    assert!(prepared.bind_metadata.pk_indexes.is_empty());
    // date is a custom type in v3, by its class name.
    assert_eq!(
        prepared.bind_metadata.columns[2].cql_type,
        CqlType::Custom("org.apache.cassandra.db.marshal.SimpleDateType".to_string())
    );
    let day = Value::Bytes(Bytes::copy_from_slice(&(1u32 << 31).to_be_bytes()));
    let execute = |id: &Bytes, values| {
        Request::Execute(Execute {
            id: id.clone(),
            result_metadata_id: None,
            params: params(values),
        })
    };
    let ok = execute(&prepared.id, vec![int(1), int(10), day]);
    result(client.request(4, ok).await);
    let short = execute(&prepared.id, vec![int(2)]);
    assert_eq!(
        error_message(client.request(5, short).await),
        "there were 3 markers(?) in CQL but 1 bound variables"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_v3_client_prepares_binds_and_reads() {
    let config = Config {
        prometheus_port: None,
        ..Config::default()
    };
    let node = Node::start(config).await;
    let mut client = Client::ready(node.native, ProtocolVersion::V3).await;
    for statement in [
        "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
        "CREATE TABLE ks.t (k int PRIMARY KEY, v int, d date)",
    ] {
        result(client.request(2, query(statement)).await);
    }
    prepared_in_v3(&mut client).await;

    // QUERY and BATCH word a wrong bind count differently, as Cassandra does.
    let short_query = Request::Query(Query {
        query: "INSERT INTO ks.t (k, v) VALUES (?, ?)".to_string(),
        params: params(vec![int(3)]),
    });
    assert_eq!(
        error_message(client.request(6, short_query).await),
        "there were 2 markers(?) in CQL but 1 bound variables"
    );
    assert_eq!(
        error_message(client.request(7, one_insert_batch(vec![int(3)])).await),
        "There were 2 markers(?) in CQL but 1 bound variables"
    );
    result(
        client
            .request(8, one_insert_batch(vec![int(3), int(30)]))
            .await,
    );

    let ResultBody::Rows(rows) = result(client.request(9, query("SELECT k, d FROM ks.t")).await)
    else {
        panic!("SELECT answers Rows");
    };
    assert_eq!(rows.rows.len(), 2);
    let ColumnsMetadata::Specs(specs) = &rows.metadata.columns else {
        panic!("metadata requested");
    };
    assert_eq!(specs[0].cql_type, CqlType::Native(NativeType::Int));
    assert!(matches!(&specs[1].cql_type, CqlType::Custom(c) if c.ends_with("SimpleDateType")));

    node.stop().await;
}
