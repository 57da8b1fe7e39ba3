//! Data-driven tests: CQL text in, canonical printed text or error out, and
//! the round-trip property parse(print(parse(s))) == parse(s) for every case.

use rocksandra_cql::{parse_script, parse_statement};

/// `(input, expected)`: expected `"="` means the input is already canonical;
/// `"ERR <prefix>"` means parsing fails with a message starting with `<prefix>`.
const CASES: &[(&str, &str)] = &[
    // ---- SELECT
    ("SELECT * FROM t", "="),
    ("select a, B, \"C\" from KS.T", "SELECT a, b, \"C\" FROM ks.t"),
    ("SELECT JSON DISTINCT a FROM t", "="),
    ("SELECT json FROM t", "="),
    ("SELECT distinct, json FROM t", "="),
    ("SELECT DISTINCT distinct FROM t", "="),
    ("SELECT a AS x, writetime(b), maxwritetime(b), ttl(c) AS t FROM t", "="),
    ("SELECT token(a, b), count(*), COUNT(1), now() FROM t", "SELECT token(a, b), count(*), count(1), now() FROM t"),
    ("SELECT CAST(a AS text), ks.f(a, 1) FROM t", "="),
    ("SELECT m['k'], s[1..3], s[..2], s[1..], u.f, u.f.g FROM t", "="),
    ("SELECT a + 1, a - b * 2, (a + b) * c, -a, - 1, -1 FROM t", "SELECT a + 1, a - b * 2, (a + b) * c, -a, - 1, -1 FROM t"),
    ("SELECT (int) ?, (text) 'x', [1, a], {1, 2}, {'a': 1}, {f: 1}, (a, b) FROM t", "="),
    ("SELECT * FROM t WHERE a = 1 AND b > 2 AND c <= ? AND d IN (1, 2) AND e CONTAINS 3 AND f CONTAINS KEY 'k' AND g LIKE 'x%' AND h != 4", "="),
    ("SELECT * FROM t WHERE (c1, c2) > (1, 2) AND (c1, c2) IN ((1, 2), (3, 4)) AND (a, b) IN ?", "="),
    ("SELECT * FROM t WHERE token(a, b) > token(1, 2) AND token(a) <= ?", "="),
    ("SELECT * FROM t WHERE m['k'] = 'v' AND v IS NOT NULL AND a IN () AND b IN (1)", "="),
    ("SELECT a, count(*) FROM t WHERE a = 1 GROUP BY a, b ORDER BY b DESC, c PER PARTITION LIMIT 2 LIMIT 10 ALLOW FILTERING", "SELECT a, count(*) FROM t WHERE a = 1 GROUP BY a, b ORDER BY b DESC, c ASC PER PARTITION LIMIT 2 LIMIT 10 ALLOW FILTERING"),
    ("SELECT * FROM t ORDER BY v ANN OF [1.0, 2.5] LIMIT :n", "="),
    ("SELECT key, type, ttl, writetime, count, values, filtering, status FROM t", "="),
    ("SELECT \"select\", \"Key\" FROM \"My Table\"", "="),
    ("SELECT * FROM t WHERE a = 'it''s' AND b = $$it's$$", "SELECT * FROM t WHERE a = 'it''s' AND b = 'it''s'"),
    ("SELECT * FROM t WHERE a = 123456789012345678901234567890 AND b = -5 AND c = 1.5e-3 AND d = NaN AND e = -Infinity AND f = Infinity", "="),
    ("SELECT * FROM t WHERE a = true AND b = FALSE AND c = null AND d = 0xCAFE AND e = 123e4567-e89b-12d3-a456-426655440000", "SELECT * FROM t WHERE a = true AND b = false AND c = null AND d = 0xCAFE AND e = 123e4567-e89b-12d3-a456-426655440000"),
    ("SELECT * FROM t WHERE a = 1h30m AND b = P1DT2H AND c = -2d AND d = P0001-02-03T04:05:06", "="),
    ("SELECT * FROM t WHERE a = (int) ? AND b = [[1], [2]] AND c = {'k': {1, 2}} AND d = {f: 1, \"G\": 'x'} AND e = (1, 'a')", "="),
    ("SELECT * FROM t WHERE a = 1 + 2 * 3 - 4 / 5 % 6 AND b = - now() AND c = ks.f(?, :x)", "="),
    ("SELECT * FROM t -- comment\n WHERE /* block */ a = 1 // trailing", "SELECT * FROM t WHERE a = 1"),
    // ---- INSERT
    ("INSERT INTO ks.t (a, b) VALUES (1, 'x')", "="),
    ("INSERT INTO t (a, b) VALUES (?, :b) IF NOT EXISTS USING TTL 10 AND TIMESTAMP 123", "="),
    ("INSERT INTO t (a) VALUES (1) USING TIMESTAMP ? AND TTL ?", "="),
    ("INSERT INTO t JSON '{\"a\": 1}'", "="),
    ("INSERT INTO t JSON ? DEFAULT UNSET IF NOT EXISTS", "="),
    ("INSERT INTO t JSON '{}' DEFAULT NULL", "INSERT INTO t JSON '{}'"),
    // ---- UPDATE
    ("UPDATE t SET a = 1, b = b + [1], c = [0] + c, d = d - {2}, e['k'] = 'v', u.f = 3 WHERE k = 1", "="),
    ("UPDATE t USING TTL 5 SET c += 1, d -= 2 WHERE k = ? IF EXISTS", "UPDATE t USING TTL 5 SET c = c + 1, d = d - 2 WHERE k = ? IF EXISTS"),
    ("UPDATE t SET a = 1 WHERE k = 1 IF a = 1 AND b['x'] > 2 AND u.f != 3 AND c IN (1, 2)", "="),
    ("UPDATE t SET a = 1 WHERE k = 1 IF exists = 1", "="),
    ("UPDATE t SET a = b + 1 WHERE k = 1", "ERR Only expressions of the form X = X +<value> are supported."),
    // ---- DELETE
    ("DELETE FROM t WHERE k = 1", "="),
    ("DELETE a, m['k'], u.f FROM ks.t USING TIMESTAMP 99 WHERE k IN (1, 2) IF EXISTS", "="),
    ("DELETE FROM t WHERE k = 1 IF a = 2", "="),
    ("DELETE FROM t USING TTL 1 WHERE k = 1", "ERR line 1:20 mismatched input 'TTL' expecting K_TIMESTAMP"),
    // ---- BATCH
    ("BEGIN BATCH INSERT INTO t (a) VALUES (1); UPDATE t SET a = 2 WHERE k = 1; DELETE FROM t WHERE k = 2; APPLY BATCH", "="),
    ("begin unlogged batch using timestamp 1 insert into t (a) values (?) apply batch", "BEGIN UNLOGGED BATCH USING TIMESTAMP 1 INSERT INTO t (a) VALUES (?); APPLY BATCH"),
    ("BEGIN COUNTER BATCH UPDATE t SET c = c + 1 WHERE k = 1; APPLY BATCH", "="),
    ("BEGIN BATCH SELECT * FROM t APPLY BATCH", "ERR line 1:12 mismatched input 'SELECT' expecting K_APPLY"),
    // ---- keyspaces, USE, TRUNCATE
    ("CREATE KEYSPACE IF NOT EXISTS ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1} AND durable_writes = false", "="),
    ("ALTER KEYSPACE IF EXISTS ks WITH replication = {'class': 'NetworkTopologyStrategy', 'dc1': 3}", "="),
    ("DROP KEYSPACE IF EXISTS ks", "="),
    ("USE \"MyKs\"", "="),
    ("TRUNCATE TABLE ks.t", "TRUNCATE ks.t"),
    ("TRUNCATE t", "="),
    // ---- tables
    ("CREATE TABLE IF NOT EXISTS ks.t (a int, b text, c timeuuid, d frozen<map<text, list<int>>> STATIC, v vector<float, 3>, PRIMARY KEY ((a, b), c)) WITH CLUSTERING ORDER BY (c DESC) AND COMPACT STORAGE AND comment = 'x' AND compaction = {'class': 'LeveledCompactionStrategy'} AND gc_grace_seconds = 10", "="),
    ("CREATE TABLE t (k int PRIMARY KEY, v varchar, u ks.my_type, w tuple<int, text>, x 'org.Custom')", "CREATE TABLE t (k int, v text, u ks.my_type, w tuple<int, text>, x 'org.Custom', PRIMARY KEY (k))"),
    ("CREATE TABLE t (k int, c int, PRIMARY KEY (k, c),)", "CREATE TABLE t (k int, c int, PRIMARY KEY (k, c))"),
    ("CREATE TABLE t (k int PRIMARY KEY, c int, PRIMARY KEY (k))", "ERR Multiple PRIMARY KEY specified for table 't' (exactly one required)"),
    ("CREATE TABLE t (k int PRIMARY KEY) WITH a = 1 AND a = 2", "ERR Multiple definitions for property 'a'"),
    ("CREATE TABLE t (k int PRIMARY KEY) WITH caching = ALL AND x = ?", "ERR line 1:62 Invalid property value"),
    ("ALTER TABLE IF EXISTS t ADD IF NOT EXISTS (a int, b set<text>)", "="),
    ("ALTER TABLE t ADD a int static", "ALTER TABLE t ADD a int STATIC"),
    ("ALTER TABLE t DROP IF EXISTS a", "="),
    ("ALTER TABLE t DROP (a, b) USING TIMESTAMP 12", "="),
    ("ALTER TABLE t DROP COMPACT STORAGE", "="),
    ("ALTER TABLE t DROP compact", "="),
    ("ALTER TABLE t RENAME IF EXISTS a TO b AND c TO d", "="),
    ("ALTER TABLE t WITH comment = 'c' AND default_time_to_live = 0", "="),
    ("ALTER TABLE t ALTER c TYPE blob", "="),
    (
        "CREATE TABLE t (k int PRIMARY KEY, v text MASKED WITH mask_inner(1, null), s int static masked with default)",
        "CREATE TABLE t (k int, v text MASKED WITH mask_inner(1, null), s int STATIC MASKED WITH mask_default(), PRIMARY KEY (k))",
    ),
    (
        "CREATE TABLE t (k int PRIMARY KEY, masked int MASKED WITH system.mask_null())",
        "CREATE TABLE t (k int, masked int MASKED WITH system.mask_null(), PRIMARY KEY (k))",
    ),
    ("ALTER TABLE t ALTER v MASKED WITH mask_replace('x')", "="),
    ("ALTER TABLE t ALTER IF EXISTS v MASKED WITH DEFAULT", "ALTER TABLE t ALTER IF EXISTS v MASKED WITH mask_default()"),
    ("ALTER TABLE t ALTER v DROP MASKED", "="),
    ("ALTER TABLE t ADD v int MASKED WITH mask_default()", "="),
    ("DROP TABLE IF EXISTS ks.t", "="),
    // ---- types
    ("CREATE TYPE IF NOT EXISTS ks.address (street text, \"Zip\" int, tags frozen<set<text>>)", "="),
    ("ALTER TYPE ks.address ADD IF NOT EXISTS country text", "="),
    ("ALTER TYPE address RENAME street TO road AND city TO town", "="),
    ("DROP TYPE IF EXISTS ks.address", "="),
    ("CREATE TABLE t (k int PRIMARY KEY, a \"int\")", "CREATE TABLE t (k int, a \"int\", PRIMARY KEY (k))"),
    // ---- indexes
    ("CREATE INDEX IF NOT EXISTS idx ON ks.t (v)", "="),
    ("CREATE INDEX ON t (keys(m))", "CREATE INDEX ON t (KEYS(m))"),
    ("CREATE INDEX i ON t (VALUES(m), ENTRIES(n), FULL(f), keys)", "="),
    ("CREATE CUSTOM INDEX i ON t (v) USING 'StorageAttachedIndex' WITH OPTIONS = {'similarity_function': 'cosine'}", "CREATE CUSTOM INDEX i ON t (v) USING 'StorageAttachedIndex' WITH options = {'similarity_function': 'cosine'}"),
    ("DROP INDEX IF EXISTS ks.idx", "="),
    // ---- materialized views
    ("CREATE MATERIALIZED VIEW IF NOT EXISTS ks.mv AS SELECT a, b FROM ks.t WHERE a IS NOT NULL AND b IS NOT NULL PRIMARY KEY (b, a) WITH CLUSTERING ORDER BY (a ASC) AND comment = 'v'", "="),
    ("CREATE MATERIALIZED VIEW mv AS SELECT * FROM t WHERE a IS NOT NULL PRIMARY KEY ((a, b))", "CREATE MATERIALIZED VIEW mv AS SELECT * FROM t WHERE a IS NOT NULL PRIMARY KEY ((a, b))"),
    ("ALTER MATERIALIZED VIEW mv WITH comment = 'x'", "="),
    ("DROP MATERIALIZED VIEW IF EXISTS ks.mv", "="),
    // ---- triggers
    ("CREATE TRIGGER IF NOT EXISTS trg ON ks.t USING 'org.Trigger'", "="),
    ("DROP TRIGGER IF EXISTS trg ON ks.t", "="),
    // ---- functions and aggregates
    ("CREATE OR REPLACE FUNCTION ks.f(a int, b text) CALLED ON NULL INPUT RETURNS text LANGUAGE java AS $$return b + a;$$", "="),
    ("CREATE FUNCTION IF NOT EXISTS f() RETURNS NULL ON NULL INPUT RETURNS int LANGUAGE java AS 'return 1;'", "CREATE FUNCTION IF NOT EXISTS f() RETURNS NULL ON NULL INPUT RETURNS int LANGUAGE java AS $$return 1;$$"),
    ("CREATE AGGREGATE ks.avg(int) SFUNC avg_state STYPE tuple<int, bigint> FINALFUNC avg_final INITCOND (0, 0)", "="),
    ("CREATE OR REPLACE AGGREGATE IF NOT EXISTS a(int, text) SFUNC s STYPE int", "="),
    ("DROP FUNCTION IF EXISTS ks.f(int, text)", "="),
    ("DROP FUNCTION f", "="),
    ("DROP AGGREGATE ks.avg()", "="),
    // ---- roles and users
    ("CREATE ROLE IF NOT EXISTS alice WITH PASSWORD = 'p' AND LOGIN = true AND SUPERUSER = false AND OPTIONS = {'a': 1}", "="),
    ("CREATE ROLE r WITH HASHED PASSWORD = 'h' AND ACCESS TO DATACENTERS {'dc1', 'dc2'} AND ACCESS FROM ALL CIDRS", "="),
    ("CREATE ROLE r WITH ACCESS TO ALL DATACENTERS AND ACCESS FROM CIDRS {'region1'}", "="),
    ("SELECT * FROM t WHERE token(k) IN (1, 2)", "ERR line 1:31 no viable alternative at input 'IN'"),
    ("CREATE ROLE r WITH GENERATED PASSWORD", "ERR line 1:19 no viable alternative at input 'GENERATED' (CREATE ROLE r WITH [GENERATED]...)"),
    ("ALTER ROLE IF EXISTS 'Bob' WITH LOGIN = false", "ALTER ROLE IF EXISTS \"Bob\" WITH LOGIN = false"),
    ("CREATE ROLE r WITH LOGIN = true AND LOGIN = false", "ERR Multiple definition for property 'LOGIN'"),
    ("ALTER ROLE r WITH PASSWORD = 'a' AND HASHED PASSWORD = 'b'", "ERR Options 'password' and 'hashed password' are mutually exclusive"),
    ("CREATE ROLE r WITH ACCESS TO ALL DATACENTERS AND ACCESS TO ALL DATACENTERS", "CREATE ROLE r WITH ACCESS TO ALL DATACENTERS AND ACCESS TO ALL DATACENTERS"),
    ("CREATE ROLE \"\"", "ERR line 1:12 no viable alternative at input '\"\"' (CREATE ROLE [\"\"])"),
    ("CREATE ROLE r WITH SUPERUSER = 'yes'", "ERR line 1:31 mismatched input 'yes' expecting BOOLEAN (...ROLE r WITH SUPERUSER = ['ye]...)"),
    ("CREATE ROLE r WITH LOGIN = 'it''s'", "ERR line 1:27 mismatched input 'it's' expecting BOOLEAN (...ROLE r WITH LOGIN = ['it']...)"),
    ("DROP ROLE IF EXISTS r", "="),
    ("CREATE USER IF NOT EXISTS bob WITH PASSWORD 'pw' SUPERUSER", "="),
    ("CREATE USER 'Carol' WITH HASHED PASSWORD 'h' NOSUPERUSER", "="),
    ("ALTER USER bob WITH PASSWORD 'x'", "="),
    ("DROP USER IF EXISTS bob", "="),
    ("LIST USERS", "="),
    ("GRANT SELECT ON KEYSPACE ks TO r", "="),
    ("GRANT ALL PERMISSIONS ON ALL KEYSPACES TO r", "="),
    ("grant all on ks.t to r", "GRANT ALL PERMISSIONS ON TABLE ks.t TO r"),
    ("GRANT MODIFY PERMISSION ON TABLE t TO r", "GRANT MODIFY ON TABLE t TO r"),
    ("GRANT EXECUTE ON FUNCTION ks.f(int, text) TO r", "="),
    ("GRANT EXECUTE ON ALL FUNCTIONS IN KEYSPACE ks TO r", "="),
    ("GRANT DESCRIBE ON ALL ROLES TO r", "="),
    ("GRANT AUTHORIZE ON ROLE other TO r", "="),
    ("GRANT SELECT ON ALL MBEANS TO r", "="),
    ("GRANT SELECT ON MBEAN 'org:type=X' TO r", "="),
    ("REVOKE CREATE ON ALL FUNCTIONS FROM r", "="),
    ("GRANT manager TO alice", "="),
    ("REVOKE manager FROM alice", "="),
    ("LIST ALL", "LIST ALL PERMISSIONS"),
    ("LIST SELECT ON KEYSPACE ks OF r NORECURSIVE", "="),
    ("LIST ROLES", "="),
    ("LIST ROLES OF r NORECURSIVE", "="),
    // ---- describe
    ("DESCRIBE CLUSTER", "="),
    ("DESC FULL SCHEMA", "DESCRIBE FULL SCHEMA"),
    ("DESCRIBE SCHEMA WITH INTERNALS", "="),
    ("DESCRIBE KEYSPACES", "="),
    ("DESCRIBE ONLY KEYSPACE ks WITH INTERNALS", "="),
    ("DESCRIBE KEYSPACE", "="),
    ("DESCRIBE TABLES", "="),
    ("DESC COLUMNFAMILY ks.t", "DESCRIBE TABLE ks.t"),
    ("DESCRIBE TYPES", "="),
    ("DESCRIBE TYPE ks.address", "="),
    ("DESCRIBE FUNCTIONS", "="),
    ("DESCRIBE FUNCTION ks.f", "="),
    ("DESCRIBE AGGREGATES", "="),
    ("DESCRIBE AGGREGATE a", "="),
    ("DESCRIBE INDEX ks.i", "="),
    ("DESCRIBE MATERIALIZED VIEW ks.mv", "="),
    ("DESCRIBE ks.something WITH INTERNALS", "="),
    ("DESCRIBE \"type\"", "="),
    ("DESCRIBE type", "DESCRIBE \"type\""),
    // ---- errors
    ("SELECT FROM t", "ERR line 1:7 no viable alternative at input 'FROM' (SELECT [FROM]...)"),
    ("SELEC * FROM t", "ERR line 1:0 no viable alternative at input 'SELEC' ([SELEC]...)"),
    ("SELECT a, b x FROM t", "ERR line 1:12 mismatched input 'x' expecting K_FROM (SELECT a, b [x]...)"),
    ("SELECT m[..] FROM t", "ERR line 1:8 mismatched input '[' expecting K_FROM (SELECT m[[]..]...)"),
    ("DELETE s[1..2] FROM t WHERE k = 1", "ERR line 1:10 mismatched input '..' expecting ']' (DELETE s[1[..]2...)"),
    ("DELETE m['a'..'b'] FROM t WHERE k = 1", "ERR line 1:12 mismatched input '..' expecting ']' (DELETE m['a'[..]'...)"),
    ("SELECT k FROM t WHERE m['a'] IN (1, 2)", "ERR line 1:29 no viable alternative at input 'IN' (... t WHERE m['a'] [IN]...)"),
    ("SELECT * FROM t WHERE", "ERR line 0:-1 no viable alternative at input '<EOF>'"),
    ("SELECT * FROM t WHERE a = 'oops", "ERR line 1:31 mismatched character '<EOF>' expecting '''"),
    ("SELECT * FROM t\nWHERE a = @", "ERR line 2:10 no viable alternative at character '@'"),
    ("SELECT * FROM t /* open", "ERR line 1:23 mismatched character '<EOF>' expecting '*'"),
    ("INSERT INTO t (a) VALUES (1) garbage", "ERR line 1:29 mismatched input 'garbage' expecting EOF"),
    ("CREATE TABLE select (a int PRIMARY KEY)", "ERR line 1:13 no viable alternative at input 'select'"),
    ("", "ERR line 0:-1 no viable alternative at input '<EOF>'"),
    ("SELECT * FROM t WHERE a = b", "ERR line 1:26 no viable alternative at input 'b'"),
    ("UPDATE c SET u.tags = u.tags + {'d'} WHERE p = 6", "ERR line 1:29 no viable alternative at input '+' (...c SET u.tags = [u].tags...)"),
    ("INSERT INTO d (p, i, du) VALUES (0, 18, P1.5Y)", "ERR line 1:43 no viable alternative at input '5Y' (... VALUES (0, 18, [P1].5Y...)"),
    ("SELECT count(DISTINCT a) FROM g", "ERR line 1:22 no viable alternative at input 'a' (SELECT count([DISTINCT] a...)"),
    ("SELECT count(distinct) FROM g", "="),
    ("UPDATE kv SET v = 'x' WHERE k = 1 IF EXISTS AND n = 1", "ERR line 1:44 no viable alternative at input 'AND' (...WHERE k = 1 IF [EXISTS] AND...)"),
    ("UPDATE kv SET v = 'x' WHERE k = 1 IF n = 1 IF EXISTS", "ERR line 1:43 mismatched input 'IF' expecting EOF (...1 IF n = 1 [IF] EXISTS)"),
    ("SELECT * FROM t WHERE p = 1 ORDER c", "ERR line 1:34 mismatched input 'c' expecting K_BY (...WHERE p = 1 ORDER [c])"),
    ("SELECT * FROM t WHERE p = 1 GARBAGE", "ERR line 1:28 no viable alternative at input 'GARBAGE' (...t WHERE p = 1 [GARBAGE])"),
    ("INSERT INTO t VALUES (1, 2)", "ERR line 1:14 no viable alternative at input 'VALUES' (INSERT INTO [t] VALUES...)"),
    ("SELECT k FROM t WHERE abs(i) = 1 ALLOW FILTERING", "ERR line 1:25 no viable alternative at input '(' (SELECT k FROM t WHERE [abs](...)"),
    ("INSERT INTO d (p, i, du) VALUES (0, 9, p0000-00-01t00:00:00)", "ERR line 1:44 no viable alternative at input '-00' (... VALUES (0, 9, [p0000]-00...)"),
    ("INSERT INTO durations (p, i, du) VALUES (0, 9, 1x)", "ERR line 1:48 no viable alternative at input 'x' (...VALUES (0, 9, 1[x]...)"),
    ("INSERT INTO inets (p, i, ip) VALUES (0, 9, 127.0.0.1)", "ERR line 1:48 no viable alternative at input '.' (...VALUES (0, 9, 127.0[.]...)"),
    ("CREATE TYPE int (a int)", "ERR line 1:16 mismatched input '(' expecting '.' (CREATE TYPE int [(]...)"),
    ("DROP TYPE IF EXISTS ks.text", "="),
    ("CREATE TABLE t (v vector<float, 0>)", "ERR vectors may only have positive dimensions; given 0"),
    // The parser had read one token past the '>' (the snippet reaches it).
    ("CREATE TABLE badd (k int PRIMARY KEY, v vector<float>)", "ERR line 1:52 mismatched input '>' expecting ',' (...PRIMARY KEY, v vector<float[>]))"),
    // A prepend followed by more: decided at the first '+', failed at the second.
    ("UPDATE t SET l = [0] + l + [4] WHERE k = 1", "ERR line 1:25 no viable alternative at input '+' (...SET l = [0] [+] l...)"),
    ("UPDATE t SET l = [0] + l, m = 1 WHERE k = 1", "="),
    // Another column's name after `c = x +`: the value is read first.
    ("UPDATE t SET l = m + l WHERE k = 1", "ERR line 1:23 no viable alternative at input 'WHERE' (...SET l = m + [l] WHERE...)"),
    ("UPDATE t SET l = m + [1] WHERE k = 1", "ERR Only expressions of the form X = X +<value> are supported."),
    // ALL and names mixed in one statement: the grammar's action throws.
    ("ALTER ROLE r WITH PASSWORD = 'p' AND ACCESS TO ALL DATACENTERS AND ACCESS TO DATACENTERS {'x'}", "ERR Failed parsing statement: [ALTER ROLE r WITH PASSWORD = 'p' AND ACCESS TO ALL DATACENTERS AND ACCESS TO DATACENTERS {'x'}] reason: IllegalArgumentException All has been set"),
    ("CREATE ROLE r WITH ACCESS TO DATACENTERS {'a'} AND ACCESS TO ALL DATACENTERS", "ERR Failed parsing statement: [CREATE ROLE r WITH ACCESS TO DATACENTERS {'a'} AND ACCESS TO ALL DATACENTERS] reason: IllegalArgumentException DCs have already been set"),
    ("CREATE ROLE r WITH ACCESS FROM ALL CIDRS AND ACCESS FROM CIDRS {'g'}", "ERR Failed parsing statement: [CREATE ROLE r WITH ACCESS FROM ALL CIDRS AND ACCESS FROM CIDRS {'g'}] reason: IllegalArgumentException All has been set"),
    ("CREATE ROLE r WITH ACCESS TO ALL DATACENTERS AND ACCESS FROM CIDRS {'g'}", "="),
    // A float literal beyond a double's range: its preferred type's check throws.
    ("INSERT INTO fl (p, d) VALUES (0, 1e309)", "ERR Failed parsing statement: [INSERT INTO fl (p, d) VALUES (0, 1e309)] reason: NumberFormatException Character I is neither a decimal digit number, decimal point, nor \"e\" notation exponential mark."),
    ("SELECT * FROM de WHERE c = -1e400", "ERR Failed parsing statement: [SELECT * FROM de WHERE c = -1e400] reason: NumberFormatException Character I is neither a decimal digit number, decimal point, nor \"e\" notation exponential mark."),
    ("INSERT INTO de (p, c) VALUES (0, 1e-400)", "="),
    ("INSERT INTO de (p, c) VALUES (0, 1.7976931348623157e308)", "="),
    // Cassandra's lexer reads a '-' and the number after it as one signed
    // token, and a '-' before an 'n' or an 'i' as the start of -NaN or -Infinity.
    ("INSERT INTO du (k, d) VALUES (10, 1h-1m)", "ERR line 1:36 no viable alternative at input '-1m' (...d) VALUES (10, 1h[-1m]...)"),
    ("SELECT k FROM h WHERE k = 1-1", "ERR line 1:27 no viable alternative at input '-1' (... h WHERE k = 1[-1])"),
    ("INSERT INTO h (k) VALUES (1-1)", "ERR line 1:27 no viable alternative at input '-1' (...h (k) VALUES (1[-1]...)"),
    ("SELECT k-1 FROM h", "ERR line 1:8 no viable alternative at input '-1' (SELECT [k]-1"),
    ("SELECT k - 1 FROM h", "="),
    ("UPDATE h SET v = 1-1 WHERE k = 1", "ERR line 1:18 no viable alternative at input '-1' (... h SET v = 1[-1]...)"),
    ("UPDATE cnt SET n = n-1 WHERE k = 1", "UPDATE cnt SET n = n - 1 WHERE k = 1"),
    ("SELECT k FROM h WHERE k = 1 LIMIT 1-1", "ERR line 1:35 mismatched input '-1' expecting EOF (... k = 1 LIMIT 1[-1])"),
    ("INSERT INTO h (k) VALUES (-1) USING TTL 10-1", "ERR line 1:42 mismatched input '-1' expecting EOF (... (-1) USING TTL 10[-1])"),
    ("INSERT INTO w (k, i) VALUES (1, -0x01)", "ERR line 1:34 no viable alternative at input 'x01' (...i) VALUES (1, -0[x01]...)"),
    ("SELECT -ti, -si, -i, -bi FROM x WHERE k = 2", "ERR line 1:19 mismatched character ',' expecting set null"),
    ("CREATE INDEX bad-name ON t (w)", "ERR line 1:19 mismatched character 'm' expecting set null"),
    ("SELECT k FROM h WHERE k = -in", "ERR line 1:29 mismatched character '<EOF>' expecting set null"),
    ("SELECT k FROM h WHERE k = -nine", "ERR line 1:28 mismatched character 'i' expecting set null"),
    ("SELECT k FROM h WHERE k = -Infinity", "="),
    // An empty tuple type: ANTLR's recovery leaves a null type to an action.
    ("CREATE TABLE t25 (k int PRIMARY KEY, v tuple<>)", "ERR Failed parsing statement: [CREATE TABLE t25 (k int PRIMARY KEY, v tuple<>)] reason: NullPointerException Cannot invoke \"org.apache.cassandra.cql3.CQL3Type$Raw.supportsFreezing()\" because \"t\" is null"),
];

/// Checks one case; returns a description of what went wrong.
fn check(input: &str, expected: &str) -> Result<(), String> {
    let parsed = parse_statement(input);
    if let Some(prefix) = expected.strip_prefix("ERR ") {
        return match parsed {
            Ok(p) => Err(format!(
                "{input:?} parsed as {p} but should fail with {prefix:?}"
            )),
            Err(e) if e.to_string().starts_with(prefix) => Ok(()),
            Err(e) => Err(format!("{input:?}: got error {e}, want prefix {prefix:?}")),
        };
    }
    let parsed = parsed.map_err(|e| format!("{input:?} failed: {e}"))?;
    let printed = parsed.to_string();
    let want = if expected == "=" { input } else { expected };
    if printed != want {
        return Err(format!(
            "{input:?}\n   printed {printed:?}\n   want    {want:?}"
        ));
    }
    let reparsed =
        parse_statement(&printed).map_err(|e| format!("{printed:?} did not reparse: {e}"))?;
    if reparsed != parsed {
        return Err(format!("round trip of {input:?} changed the AST"));
    }
    Ok(())
}

#[test]
fn golden_cases() {
    let failures: Vec<String> = CASES
        .iter()
        .filter_map(|(input, expected)| check(input, expected).err())
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn scripts_split_on_semicolons() {
    let script = "USE ks; ; SELECT * FROM t WHERE a = ?;\nINSERT INTO t (a) VALUES (?);";
    let statements = parse_script(script).expect("should parse");
    assert_eq!(statements.len(), 3);
    assert_eq!(statements[0].bind_variables.len(), 0);
    assert_eq!(statements[1].bind_variables.len(), 1);
    assert_eq!(statements[2].bind_variables[0].index, 0);
    let err = parse_script("USE ks SELECT").expect_err("should fail");
    assert_eq!(err.line, 1);
    assert_eq!(err.column, 7);
}

#[test]
fn deep_nesting_is_an_error_not_a_crash() {
    for (open, close) in [("[", "]"), ("(", ")"), ("{", "}")] {
        let depth = 10_000;
        let text = format!(
            "SELECT * FROM t WHERE a = {}1{}",
            open.repeat(depth),
            close.repeat(depth)
        );
        let err = parse_statement(&text).expect_err("should fail");
        assert!(err.message.contains("nesting"), "{err}");
    }
    let negations = format!("SELECT {}a FROM t", "- ".repeat(10_000));
    assert!(parse_statement(&negations).is_err());
    let types = format!(
        "CREATE TABLE t (a {}int{})",
        "list<".repeat(5000),
        ">".repeat(5000)
    );
    assert!(parse_statement(&types).is_err());
    let shallow = format!(
        "SELECT * FROM t WHERE a = {}1{}",
        "[".repeat(20),
        "]".repeat(20)
    );
    assert!(parse_statement(&shallow).is_ok());
}
