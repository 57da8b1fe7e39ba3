import json, sys
from cassandra.cluster import Cluster
c = Cluster(['127.0.0.1'], port=9142)
s = c.connect()
out = {}
def q(name, cql):
    try:
        rs = s.execute(cql)
        cols = rs.column_names
        rows = [[repr(v) for v in r] for r in rs]
        out[name] = {"cols": cols, "types": [str(t.typename if hasattr(t,'typename') else t) for t in (rs.column_types or [])], "rows": rows}
    except Exception as e:
        out[name] = {"error": str(e)}
for t in ['keyspaces','tables','columns','indexes','dropped_columns','types','triggers','views','functions','aggregates','column_masks']:
    q('schema.'+t, f"SELECT * FROM system_schema.{t}" if t!='dropped_columns' else "SELECT keyspace_name, table_name, column_name, CAST(dropped_time AS bigint) AS dropped_time, kind, type FROM system_schema.dropped_columns")
for t in ['keyspaces','tables','columns']:
    q('vschema.'+t, f"SELECT * FROM system_virtual_schema.{t}")
q('local', "SELECT * FROM system.local")
q('peers', "SELECT * FROM system.peers")
q('peers_v2', "SELECT * FROM system.peers_v2")
json.dump(out, open('/tmp/cdump/dump.json','w'), indent=1)
print(len(out))
