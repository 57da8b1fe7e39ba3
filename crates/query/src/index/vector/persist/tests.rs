//! Saved graphs: the round trip (same neighbours, further inserts), and
//! what is refused (another sequence number, another index, damaged or
//! truncated files, too many points); the manifest's format 1 fixture.

use super::*;

const TABLE: TableId = TableId(42);
const COLUMN: ColumnId = ColumnId(3);
const KEY: GraphKey = (TABLE, COLUMN);
const SEQUENCE: u64 = 1234;

fn row(i: u32) -> RowKey {
    let clustering = i
        .is_multiple_of(2)
        .then(|| vec![i.to_be_bytes().to_vec(), b"c".to_vec()]);
    (PartitionKey::new(format!("p{i}").into_bytes()), clustering)
}

/// A point of a spiral: neighbours are unambiguous.
fn vector(i: u32) -> Vec<f32> {
    let t = i as f32 * 0.37;
    let r = 1.0 + i as f32 / 40.0;
    vec![t.cos() * r, t.sin() * r, r * 0.5]
}

fn built_graph(points: u32) -> Graph {
    let graph = Graph::new(Similarity::Euclidean, 3);
    for i in 0..points {
        assert!(graph.insert(row(i), &vector(i)));
    }
    graph.mark_built();
    graph
}

fn expected(sequence: Option<u64>) -> Expected {
    Expected {
        key: KEY,
        similarity: Similarity::Euclidean,
        dimension: 3,
        sequence,
    }
}

fn saved(points: u32) -> (tempfile::TempDir, Graph) {
    let dir = tempfile::tempdir().expect("temporary directory");
    let graph = built_graph(points);
    let written = save(dir.path(), KEY, &graph, Similarity::Euclidean, SEQUENCE).expect("save");
    assert_eq!(written, points as usize);
    (dir, graph)
}

fn manifest_path(dir: &Path) -> PathBuf {
    dir.join(format!("{}{MANIFEST_SUFFIX}", basename(KEY)))
}

fn queries() -> Vec<Vec<f32>> {
    (0..20)
        .map(|i| vector(i * 17 + 3))
        .chain([vec![0.0, 0.0, 0.0]])
        .collect()
}

#[test]
fn a_loaded_graph_proposes_the_same_neighbours() {
    let (dir, graph) = saved(500);
    let loaded = load(dir.path(), &expected(Some(SEQUENCE)))
        .expect("load")
        .expect("a saved graph");
    assert!(loaded.usable());
    assert_eq!(loaded.points(), 500);
    for q in queries() {
        assert_eq!(loaded.nearest(&q, 10), graph.nearest(&q, 10), "query {q:?}");
    }
    assert_eq!(loaded.nearest(&vector(250), 1), vec![row(250)]);
}

#[test]
fn a_loaded_graph_takes_further_points() {
    let (dir, _) = saved(300);
    let loaded = load(dir.path(), &expected(Some(SEQUENCE)))
        .expect("load")
        .expect("a saved graph");
    for i in 300..400 {
        assert!(loaded.insert(row(i), &vector(i)));
    }
    assert_eq!(loaded.points(), 400);
    assert!(loaded.usable());
    for i in [0, 150, 301, 350, 399] {
        assert_eq!(loaded.nearest(&vector(i), 1), vec![row(i)], "point {i}");
    }
    assert!(loaded.insert(row(1000), &[500.0, 500.0, 500.0]));
    assert_eq!(loaded.nearest(&[400.0, 400.0, 400.0], 1), vec![row(1000)]);
}

#[test]
fn an_empty_graph_round_trips() {
    let (dir, _) = saved(0);
    let loaded = load(dir.path(), &expected(Some(SEQUENCE)))
        .expect("load")
        .expect("a saved graph");
    assert!(loaded.usable());
    assert_eq!(loaded.points(), 0);
    assert!(loaded.insert(row(1), &vector(1)));
    assert_eq!(loaded.nearest(&vector(1), 1), vec![row(1)]);
}

#[test]
fn no_saved_graph_is_none() {
    let dir = tempfile::tempdir().expect("temporary directory");
    assert!(load(dir.path(), &expected(Some(SEQUENCE)))
        .expect("load")
        .is_none());
}

#[test]
fn a_graph_saved_at_another_sequence_number_is_refused() {
    let (dir, _) = saved(50);
    for opened in [Some(SEQUENCE + 1), Some(SEQUENCE - 1), None] {
        let refused = load(dir.path(), &expected(opened)).err();
        assert!(
            matches!(refused, Some(PersistError::Stale { saved: SEQUENCE, opened: o }) if o == opened),
            "{refused:?}"
        );
    }
}

#[test]
fn a_graph_of_another_index_is_refused() {
    let (dir, _) = saved(50);
    let cosine = Expected {
        similarity: Similarity::Cosine,
        ..expected(Some(SEQUENCE))
    };
    let wider = Expected {
        dimension: 4,
        ..expected(Some(SEQUENCE))
    };
    for other in [cosine, wider] {
        let refused = load(dir.path(), &other).err();
        assert!(
            matches!(refused, Some(PersistError::IndexChanged)),
            "{refused:?}"
        );
    }
}

fn assert_malformed(dir: &Path) {
    let refused = load(dir, &expected(Some(SEQUENCE))).err();
    assert!(
        matches!(refused, Some(PersistError::Malformed(_))),
        "{refused:?}"
    );
}

#[test]
fn a_corrupted_manifest_is_refused() {
    let (dir, _) = saved(50);
    let path = manifest_path(dir.path());
    let good = std::fs::read(&path).expect("manifest");
    for at in [0, 5, 30, good.len() / 2, good.len() - 1] {
        let mut bad = good.clone();
        bad[at] ^= 0x40;
        std::fs::write(&path, &bad).expect("write");
        assert_malformed(dir.path());
    }
}

#[test]
fn a_truncated_manifest_is_refused() {
    let (dir, _) = saved(50);
    let path = manifest_path(dir.path());
    let good = std::fs::read(&path).expect("manifest");
    for len in [0, 3, 4, 20, good.len() / 2, good.len() - 1] {
        std::fs::write(&path, &good[..len]).expect("write");
        assert_malformed(dir.path());
    }
}

#[test]
fn truncated_or_corrupted_graph_files_are_refused() {
    let (dir, _) = saved(200);
    for path in hnsw_paths(dir.path(), KEY) {
        let good = std::fs::read(&path).expect("graph file");
        std::fs::write(&path, &good[..good.len() / 2]).expect("truncate");
        assert_malformed(dir.path());
        let mut flipped = good.clone();
        flipped[good.len() / 3] ^= 1;
        std::fs::write(&path, &flipped).expect("corrupt");
        assert_malformed(dir.path());
        std::fs::write(&path, &good).expect("restore");
    }
    assert!(load(dir.path(), &expected(Some(SEQUENCE)))
        .expect("load")
        .is_some());
}

#[test]
fn a_manifest_over_the_point_limit_is_refused_before_reading_rows() {
    let header = Header {
        key: KEY,
        similarity: Similarity::Euclidean,
        dimension: 3,
        sequence: SEQUENCE,
        files: [FileSum::default(); 2],
    };
    let mut bytes = encode(&header, &[]);
    // The point count: the 8 bytes before the checksum of a row-less manifest.
    let count_at = bytes.len() - 12;
    let too_many = GRAPH_POINTS_MAX as u64 + 1;
    bytes[count_at..count_at + 8].copy_from_slice(&too_many.to_le_bytes());
    let body = bytes.len() - 4;
    let crc = crc32fast::hash(&bytes[..body]);
    bytes[body..].copy_from_slice(&crc.to_le_bytes());
    assert!(matches!(decode(&bytes), Err(PersistError::TooManyPoints(n)) if n == too_many));
}

#[test]
fn the_manifest_round_trips_its_rows() {
    let header = Header {
        key: KEY,
        similarity: Similarity::DotProduct,
        dimension: 7,
        sequence: u64::MAX,
        files: [FileSum { bytes: 9, crc: 1 }, FileSum { bytes: 10, crc: 2 }],
    };
    let rows: Vec<RowKey> = (0..5)
        .map(row)
        .chain([(PartitionKey::new(Vec::new()), Some(Vec::new()))])
        .collect();
    let (decoded, decoded_rows) = decode(&encode(&header, &rows)).expect("decode");
    assert_eq!(decoded, header);
    assert_eq!(decoded_rows, rows);
}

#[test]
fn the_manifest_format_1_is_stable() {
    let header = Header {
        key: (TableId(7), ColumnId(2)),
        similarity: Similarity::Cosine,
        dimension: 3,
        sequence: 99,
        files: [FileSum { bytes: 5, crc: 6 }, FileSum { bytes: 8, crc: 9 }],
    };
    let rows = vec![
        (PartitionKey::new(b"k".to_vec()), None),
        (PartitionKey::new(b"l".to_vec()), Some(vec![b"c".to_vec()])),
    ];
    let bytes = encode(&header, &rows);
    assert_eq!(hex::encode(&bytes), FORMAT_1_FIXTURE);
    assert_eq!(decode(&bytes).expect("decode"), (header, rows));
}

/// A manifest as format 1 writes it (the layout in `persist`'s header).
const FORMAT_1_FIXTURE: &str = "5256474d01000000070000000000000002000000000300000063000000000000000500000000000000060000000800000000000000090000000200000000000000010000006bffffffff010000006c01000000010000006317a9d590";
