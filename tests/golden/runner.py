#!/usr/bin/env python3
"""Golden CQL suite: run tests/golden/cases/*.cql against a CQL server and
compare (or record) a canonical text rendering of every result.

    python tests/golden/runner.py --host 127.0.0.1 --port 9042 \
        [--record] [--protocol-version 3|4|5] [--server-name NAME]
        [--username USER --password PASSWORD] [cases...]

A case file is a sequence of CQL statements, each ending with ';' (semicolons
inside string literals, quoted identifiers, $$ bodies, comments and
BEGIN ... APPLY BATCH are fine).
Comment lines of the form '-- golden: ...' are markers:

    -- golden: skip-output          next statement: record only OK / ROWS / ERROR <class>
                                    (for output that legitimately differs per server)
    -- golden: fetch-size N         next statement: page size N (0: not paged); also prints the page count
    -- golden: sort-rows            next statement: sort rendered rows (order not specified)
    -- golden: sleep SECONDS         next statement: runs after a pause of SECONDS (a TTL to
                                    expire; keep it short)
    -- golden: consistency CL        next statement: run at consistency CL (ONE unless told;
                                    e.g. SERIAL, LOCAL_SERIAL, QUORUM)
    -- golden: serial-consistency CL next statement: serial consistency of a conditional
                                    update (SERIAL unless told)
    -- golden: bind V1, V2, ...     next statement: prepared, then executed with these
                                    values (Python literals; UNSET for an unset value;
                                    one {name: value} dict for named markers); its echo
                                    gets a '  -- bind ...' line
    -- golden: normalize RE => REPL from here to the end of the file, re.sub(RE, REPL)
                                    on every output line (not on echoed statements)
    -- golden: server-yaml LINE     the case needs a server whose cassandra.yaml has
                                    LINE (e.g. materialized_views_enabled: true)
    -- golden: login USER PASSWORD  the statements after it run on a new session logged
                                    in as USER (PasswordAuthenticator); its output is
                                    '> LOGIN USER' then OK or the refusal as an ERROR line
                                    ('ERROR BadCredentials/0x0100 <message>'), after which
                                    the previous session stays in use
    -- golden: login                back to the initial session (--username, or none)

Selection: without case names, the runner runs the cases whose server-yaml
lines are exactly its --server-yaml options (none by default), so one run
against a server covers the cases written for that server's configuration.
--list-server-configs prints each configuration cases need (a JSON list of
yaml lines per line); scripts/test-server.sh starts a server per
configuration.
Cases named auth_*.cql need a server with PasswordAuthenticator and
CassandraAuthorizer (scripts/cassandra/start.sh --auth; roles and permissions
caches off), with user_defined_functions_enabled, dynamic_data_masking_enabled
and materialized_views_enabled true: without --username the default case
list leaves them out, with --username it is just them.

Output, per statement: the statement echoed with '> ' prefixes, then
    OK                                  void / schema change / USE
    [name type, name type, ...]         for rows: column names and types,
    v1 | v2 | ...                       then one line per row,
    (N rows)                            and the count (', P pages' with fetch-size)
                                        (DESCRIBE results: the create_statement
                                        column is printed verbatim, indented,
                                        under the other columns of its row)
    ERROR <Name>/0x<code> <message>     server error: protocol error name, code, message
    WARNING <message>                   server warnings attached to the response(s),
                                        each distinct one once

Values are rendered deterministically: null, true/false, integers, floats with
Python repr (float columns are widened from 32 bits), decimals with their
scale, 'text' with '' escaping, 0x blobs, uuids as strings, timestamps as ISO
UTC with milliseconds, dates 'YYYY-MM-DD', times 'HH:MM:SS.nnnnnnnnn',
durations like 1mo2d3ns, inets as strings, [lists], {sets} (driver-sorted),
{maps: in server order}, (tuples), {udt_field: value} and vectors as [lists].

crates/server/tests/golden_cases.rs runs the same cases in process under
`cargo test`, with this runner's splitting, markers and rendering (and the
driver's decoding) written again in Rust in crates/server/tests/golden/:
change both together.

Exit status: 0 when every case matched (or was recorded), 1 otherwise. The last
line printed is 'N passed, M failed'.

Statement-level ratchet (for a server that does not match every case yet):
    --baseline FILE        JSON {case: statements that must match}; the exit
                           status is then 0 when every case matches at least
                           its baseline count of statements (a drop fails)
    --write-baseline FILE  write the per-case matched-statement counts (the
                           cases not run keep their counts in FILE)
Each statement's block (echo and output) counts as matched when it equals the
expected block at the same position. The counts are printed for every case.
"""

import argparse
import ast
import datetime
import json
import decimal
import difflib
import ipaddress
import math
import os
import re
import sys
import time
import uuid

from cassandra import ConsistencyLevel, protocol as cproto
from cassandra import cqltypes
from cassandra.auth import PlainTextAuthProvider
from cassandra.cluster import Cluster, ExecutionProfile, EXEC_PROFILE_DEFAULT
from cassandra.policies import RoundRobinPolicy, FallthroughRetryPolicy
from cassandra.query import SimpleStatement, UNSET_VALUE, tuple_factory
from cassandra.util import Date, Time, Duration, OrderedMapSerializedKey, SortedSet

HERE = os.path.dirname(os.path.abspath(__file__))
CASES_DIR = os.path.join(HERE, "cases")
EXPECTED_DIR = os.path.join(HERE, "expected")
ACTUAL_DIR = os.path.join(HERE, "actual")

# Protocol error codes (native_protocol_v4.spec section 9) -> names used in output.
ERROR_NAMES = {
    0x0000: "ServerError",
    0x000A: "ProtocolError",
    0x0100: "BadCredentials",
    0x1000: "Unavailable",
    0x1001: "Overloaded",
    0x1002: "IsBootstrapping",
    0x1003: "TruncateError",
    0x1100: "WriteTimeout",
    0x1200: "ReadTimeout",
    0x1300: "ReadFailure",
    0x1400: "FunctionFailure",
    0x1500: "WriteFailure",
    0x1600: "CDCWriteFailure",
    0x1700: "CASWriteUnknown",
    0x2000: "SyntaxError",
    0x2100: "Unauthorized",
    0x2200: "Invalid",
    0x2300: "ConfigError",
    0x2400: "AlreadyExists",
    0x2500: "Unprepared",
}


def _raw_server_errors():
    """Make the driver surface server ERROR responses as-is (code + message).

    By default it converts some of them into driver exceptions that drop the
    server's message (AlreadyExists, for one); the golden output wants the
    server's own words."""
    for cls in list(cproto.error_classes.values()) + [cproto.ErrorMessage]:
        cls.to_exception = lambda self: self


# ---------------------------------------------------------------------------
# Parsing case files
# ---------------------------------------------------------------------------

class Statement:
    def __init__(self, text, line, markers):
        self.text = text
        self.line = line
        self.markers = markers  # list of (name, arg)


def parse_bind_values(arg, line):
    """The values of a 'bind' marker: Python literals, with UNSET for an unset value."""
    def value(node):
        if isinstance(node, ast.Name) and node.id == "UNSET":
            return UNSET_VALUE
        if isinstance(node, ast.List):
            return [value(e) for e in node.elts]
        if isinstance(node, ast.Set):
            return {value(e) for e in node.elts}
        if isinstance(node, ast.Tuple):
            return tuple(value(e) for e in node.elts)
        if isinstance(node, ast.Dict):
            return {value(k): value(v) for k, v in zip(node.keys, node.values)}
        return ast.literal_eval(node)
    try:
        tree = ast.parse("[" + arg + "]", mode="eval").body
        values = value(tree)
    except (SyntaxError, ValueError) as err:
        raise ValueError("line %d: bad bind values %r: %s" % (line, arg, err))
    if len(values) == 1 and isinstance(values[0], dict) and all(isinstance(k, str) for k in values[0]):
        return values[0]  # named markers
    return values


def without_warnings(expected):
    """Expected output as a v3 client sees it: v3 frames carry no warnings
    (they came with v4), so the recorded WARNING lines cannot appear."""
    return "".join(line for line in expected.splitlines(keepends=True)
                   if not line.startswith("WARNING "))


def split_statements(source):
    """Split a case file into statements and collect '-- golden:' markers.

    Returns a list of Statement, ('normalize', pattern, repl) and
    ('login'[, user, password]) tuples in file order."""
    items = []
    pending = []          # markers for the next statement
    buf = []
    start_line = None
    line = 1
    i = 0
    n = len(source)

    def at_statement_start():
        return not "".join(buf).strip()

    while i < n:
        c = source[i]
        two = source[i:i + 2]
        if two == "--" or two == "//":
            end = source.find("\n", i)
            end = n if end < 0 else end
            comment = source[i:end]
            m = re.match(r"--\s*golden:\s*(\S+)\s*(.*)$", comment)
            if m and at_statement_start():
                name, arg = m.group(1), m.group(2).strip()
                if name == "normalize":
                    pat, sep, repl = arg.partition("=>")
                    if not sep:
                        raise ValueError("line %d: normalize needs 'RE => REPL'" % line)
                    items.append(("normalize", pat.strip(), repl.strip()))
                elif name in ("skip-output", "sort-rows"):
                    pending.append((name, None))
                elif name == "fetch-size":
                    pending.append((name, int(arg)))
                elif name == "sleep":
                    pending.append((name, float(arg)))
                elif name in ("consistency", "serial-consistency"):
                    if arg.upper() not in ConsistencyLevel.name_to_value:
                        raise ValueError("line %d: unknown consistency level %r" % (line, arg))
                    pending.append((name, ConsistencyLevel.name_to_value[arg.upper()]))
                elif name == "bind":
                    pending.append((name, parse_bind_values(arg, line)))
                elif name == "server-yaml":
                    pass  # read by server_yaml(): how the server must be configured
                elif name == "login":
                    words = arg.split()
                    if len(words) not in (0, 2):
                        raise ValueError("line %d: login needs USER PASSWORD (or nothing)" % line)
                    if pending:
                        raise ValueError("line %d: login between a marker and its statement" % line)
                    items.append(("login",) + tuple(words))
                else:
                    raise ValueError("line %d: unknown golden marker %r" % (line, name))
            elif not at_statement_start():
                buf.append(comment)
            i = end
            continue
        if two == "/*":
            end = source.find("*/", i + 2)
            end = n if end < 0 else end + 2
            chunk = source[i:end]
            line += chunk.count("\n")
            if not at_statement_start():
                buf.append(chunk)
            i = end
            continue
        if c in "'\"" or two == "$$":
            if start_line is None:
                start_line = line
            if two == "$$":
                end = source.find("$$", i + 2)
                end = n if end < 0 else end + 2
            else:
                j = i + 1
                while j < n:
                    if source[j] == c:
                        if j + 1 < n and source[j + 1] == c:
                            j += 2
                            continue
                        break
                    j += 1
                end = min(j + 1, n)
            chunk = source[i:end]
            line += chunk.count("\n")
            buf.append(chunk)
            i = end
            continue
        if c == ";":
            text = "".join(buf).strip()
            if re.match(r"(?i)BEGIN\b", text) and not re.search(r"(?i)\bAPPLY\s+BATCH$", text):
                buf.append(c)  # a ';' inside BEGIN ... APPLY BATCH
                i += 1
                continue
            if text:
                items.append(Statement(text, start_line, pending))
            elif pending:
                raise ValueError("line %d: marker before an empty statement" % line)
            pending = []
            buf = []
            start_line = None
            i += 1
            continue
        if c == "\n":
            line += 1
        elif not c.isspace() and start_line is None:
            start_line = line
        buf.append(c)
        i += 1
    if "".join(buf).strip():
        raise ValueError("line %s: statement without a terminating ';'" % start_line)
    return items


# ---------------------------------------------------------------------------
# Rendering
# ---------------------------------------------------------------------------

def render_type(t):
    """CQL text of a driver cqltype class, as it arrives in result metadata."""
    if issubclass(t, cqltypes.VectorType):
        return "vector<%s, %d>" % (render_type(t.subtype), t.vector_size)
    if issubclass(t, cqltypes.UserType):
        return "%s.%s" % (t.keyspace, t.typename)
    if issubclass(t, cqltypes.TupleType):
        return "tuple<%s>" % ", ".join(render_type(s) for s in t.subtypes)
    if t.subtypes:
        return "%s<%s>" % (t.typename, ", ".join(render_type(s) for s in t.subtypes))
    if t.typename == "varchar":  # same wire type as text; CQL calls it text
        return "text"
    if issubclass(t, cqltypes._UnrecognizedType) or "." in t.typename:
        return "'%s'" % t.cass_parameterized_type(full=True)
    return t.typename


def render_float(f):
    if math.isnan(f):
        return "NaN"
    if math.isinf(f):
        return "Infinity" if f > 0 else "-Infinity"
    return repr(f)


def render_text(s):
    out = []
    for ch in s:
        if ch == "'":
            out.append("''")
        elif ch == "\\":
            out.append("\\\\")
        elif ch.isprintable():
            out.append(ch)
        else:
            out.append(repr(ch)[1:-1])
    return "'" + "".join(out) + "'"


def render_value(v):
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return render_float(v)
    if isinstance(v, decimal.Decimal):
        return str(v)
    if isinstance(v, str):
        return render_text(v)
    if isinstance(v, (bytes, bytearray, memoryview)):
        return "0x" + bytes(v).hex()
    if isinstance(v, uuid.UUID):
        return str(v)
    if isinstance(v, datetime.datetime):
        if v.tzinfo is not None:
            v = v.astimezone(datetime.timezone.utc).replace(tzinfo=None)
        return v.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (v.microsecond // 1000)
    if isinstance(v, Date):
        return str(v)
    if isinstance(v, Time):
        return str(v)
    if isinstance(v, Duration):
        return render_duration(v)
    if isinstance(v, (ipaddress.IPv4Address, ipaddress.IPv6Address)):
        return str(v)
    if isinstance(v, (OrderedMapSerializedKey, dict)):
        return "{" + ", ".join("%s: %s" % (render_value(k), render_value(x)) for k, x in v.items()) + "}"
    if isinstance(v, (SortedSet, set, frozenset)):
        items = list(v) if isinstance(v, SortedSet) else sorted(v)
        return "{" + ", ".join(render_value(x) for x in items) + "}"
    if isinstance(v, list):
        return "[" + ", ".join(render_value(x) for x in v) + "]"
    if isinstance(v, tuple) and hasattr(v, "_fields"):  # UDT as a namedtuple
        return "{" + ", ".join("%s: %s" % (f, render_value(x)) for f, x in zip(v._fields, v)) + "}"
    if isinstance(v, tuple):
        return "(" + ", ".join(render_value(x) for x in v) + ")"
    if hasattr(v, "__dict__") and type(v).__module__.startswith("cassandra"):
        # UDT class made by the driver
        return "{" + ", ".join("%s: %s" % (k, render_value(x)) for k, x in vars(v).items()) + "}"
    return repr(v)


def render_bind(values):
    """A bind marker's values, rendered for the echo."""
    def one(v):
        return "UNSET" if v is UNSET_VALUE else render_value(v)
    if isinstance(values, dict):
        return "{" + ", ".join("%s: %s" % (k, one(v)) for k, v in values.items()) + "}"
    return ", ".join(one(v) for v in values)


def render_duration(d):
    """Like Cassandra's Duration.toString(): [-]NyNmoNdNhNmNsNmsNusNns."""
    months, days, nanos = d.months, d.days, d.nanoseconds
    neg = months < 0 or days < 0 or nanos < 0
    months, days, nanos = abs(months), abs(days), abs(nanos)
    parts = []
    for amount, unit in ((months // 12, "y"), (months % 12, "mo"), (days, "d")):
        if amount:
            parts.append("%d%s" % (amount, unit))
    for size, unit in ((3600 * 10**9, "h"), (60 * 10**9, "m"), (10**9, "s"),
                       (10**6, "ms"), (10**3, "us"), (1, "ns")):
        if nanos >= size:
            parts.append("%d%s" % (nanos // size, unit))
            nanos %= size
    return ("-" if neg else "") + ("".join(parts) or "0s")


def render_error(err):
    if isinstance(err, cproto.ErrorMessage):
        name = ERROR_NAMES.get(err.code, type(err).__name__)
        return "ERROR %s/0x%04x %s" % (name, err.code, err.message)
    return "ERROR client:%s %s" % (type(err).__name__, str(err).replace("\n", " "))


def render_login_error(err):
    """A refused login: the driver wraps the server's AUTHENTICATION error in
    AuthenticationFailed (inside NoHostAvailable), as text; keep the code and
    the server's message, drop the host and port."""
    for cause in getattr(err, "errors", {}).values() or [err]:
        m = re.search(r'code=([0-9a-fA-F]{4}) \[[^\]]*\] message="(.*)"$', str(cause), re.S)
        if m:
            code = int(m.group(1), 16)
            return "ERROR %s/0x%04x %s" % (ERROR_NAMES.get(code, "Unknown"), code, m.group(2))
    return "ERROR client:%s %s" % (type(err).__name__, str(err).replace("\n", " "))


# ---------------------------------------------------------------------------
# Running
# ---------------------------------------------------------------------------

def execute(session, stmt):
    """Run one statement; return the list of output lines (without the echo)."""
    markers = dict(stmt.markers)
    fetch_size = markers.get("fetch-size")
    skip = "skip-output" in markers
    # fetch-size 0: no paging at all (the request carries no page size).
    options = dict(fetch_size=None if fetch_size == 0 else (fetch_size or 5000),
                   consistency_level=markers.get("consistency", ConsistencyLevel.ONE),
                   serial_consistency_level=markers.get("serial-consistency"))
    if "sleep" in markers:
        time.sleep(markers["sleep"])
    try:
        if "bind" in markers:
            query = session.prepare(stmt.text)
            for name, value in options.items():
                setattr(query, name, value)
            rs = session.execute(query, markers["bind"])
        else:
            rs = session.execute(SimpleStatement(stmt.text, **options))
        rows = list(rs.current_rows) if rs.column_names is not None else []
        pages = 1
        warnings = list(rs.response_future.warnings or [])
        while rs.has_more_pages:
            rs.fetch_next_page()
            rows.extend(rs.current_rows)
            pages += 1
            warnings.extend(rs.response_future.warnings or [])
    except Exception as err:  # server errors and client-side errors alike
        if skip:
            line = render_error(err)
            return [" ".join(line.split(" ")[:2])]
        return [render_error(err)]

    out = []
    if rs.column_names is None:
        out.append("OK")
    elif skip:
        out.append("ROWS (output skipped)")
    else:
        cols = ", ".join("%s %s" % (name, render_type(typ))
                         for name, typ in zip(rs.column_names, rs.column_types))
        out.append("[" + cols + "]")
        if rs.column_names[-1] == "create_statement":
            # DESCRIBE: print the CQL text verbatim (indented) under its row
            lines = []
            for row in rows:
                lines.append(" | ".join(render_value(v) for v in row[:-1]))
                lines.extend("    " + l for l in (row[-1] or "null").split("\n"))
        else:
            lines = [" | ".join(render_value(v) for v in row) for row in rows]
        if "sort-rows" in markers:
            lines.sort()
        out.extend(lines)
        if fetch_size:
            out.append("(%d rows, %d pages)" % (len(rows), pages))
        else:
            out.append("(%d rows)" % len(rows))
    if not skip:
        seen = set()
        for w in warnings:  # each page repeats its warnings: print each once
            w = " ".join(str(w).split())
            if w not in seen:
                seen.add(w)
                out.append("WARNING " + w)
    return out


def run_case(cluster, make_cluster, path):
    """Run one case file on `cluster` (the initial login); `make_cluster(user,
    password)` makes the clusters its login markers switch to."""
    with open(path, encoding="utf-8") as f:
        items = split_statements(f.read())
    initial = session = cluster.connect()
    login_cluster = None  # the cluster of the current login marker, if any
    normalizers = []
    out = []

    def emit(line):
        for pat, repl in normalizers:
            line = pat.sub(repl, line)
        out.append(line)

    try:
        for item in items:
            if isinstance(item, tuple) and item[0] == "normalize":
                normalizers.append((re.compile(item[1]), item[2]))
                continue
            if isinstance(item, tuple):  # login
                if len(item) == 1:
                    out.append("> LOGIN")
                    result, new_cluster, new_session = "OK", None, initial
                else:
                    out.append("> LOGIN " + item[1])
                    new_cluster = make_cluster(item[1], item[2])
                    try:
                        new_session = new_cluster.connect()
                        result = "OK"
                    except Exception as err:  # refused: keep the session we had
                        new_cluster.shutdown()
                        emit(render_login_error(err))
                        out.append("")
                        continue
                if login_cluster is not None:
                    login_cluster.shutdown()
                login_cluster, session = new_cluster, new_session
                emit(result)
                out.append("")
                continue
            for i, text_line in enumerate(item.text.splitlines()):
                out.append(("> " if i == 0 else "  ") + text_line.rstrip() + (";" if i == len(item.text.splitlines()) - 1 else ""))
            bind = dict(item.markers).get("bind")
            if bind is not None:
                out.append("  -- bind " + render_bind(bind))
            for line in execute(session, item):
                emit(line)
            out.append("")
    finally:
        if login_cluster is not None:
            login_cluster.shutdown()
        initial.shutdown()
    return "\n".join(out).rstrip("\n") + "\n"


def server_yaml(path):
    """The yaml lines a case's server needs ('-- golden: server-yaml' markers)."""
    with open(path, encoding="utf-8") as f:
        return sorted(m.group(1).strip() for m in
                      re.finditer(r"(?m)^--\s*golden:\s*server-yaml\s+(.*)$", f.read()))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--host", default=os.environ.get("ROCKSANDRA_HOST", "127.0.0.1"))
    ap.add_argument("--port", type=int, default=int(os.environ.get("ROCKSANDRA_PORT", "9042")))
    ap.add_argument("--protocol-version", type=int, choices=(3, 4, 5), default=4)
    ap.add_argument("--username", help="log in as USER (PasswordAuthenticator); runs the auth_* cases")
    ap.add_argument("--password", help="the --username's password")
    ap.add_argument("--record", action="store_true",
                    help="write tests/golden/expected/<case>.out instead of comparing")
    ap.add_argument("--server-name",
                    help="also write actual output to tests/golden/actual/<NAME>/<case>.out")
    ap.add_argument("--quiet", action="store_true", help="do not print diffs")
    ap.add_argument("--baseline", help="JSON file of per-case matched-statement minimums")
    ap.add_argument("--write-baseline", help="write per-case matched-statement counts here")
    ap.add_argument("--server-yaml", action="append", default=[],
                    help="a yaml line the server was started with (selects the cases that need it)")
    ap.add_argument("--list-server-configs", action="store_true",
                    help="print the server configurations cases need, one JSON list per line")
    ap.add_argument("cases", nargs="*",
                    help="case names or .cql paths (default: every tests/golden/cases/*.cql)")
    args = ap.parse_args(argv)
    if (args.username is None) != (args.password is None):
        ap.error("--username and --password go together")

    if args.cases:
        paths = []
        for c in args.cases:
            p = c if c.endswith(".cql") else os.path.join(CASES_DIR, c + ".cql")
            if not os.path.exists(p):
                ap.error("no such case: %s" % c)
            paths.append(p)
    else:
        want_auth = args.username is not None
        paths = sorted(os.path.join(CASES_DIR, f) for f in os.listdir(CASES_DIR)
                       if f.endswith(".cql") and f.startswith("auth_") == want_auth)
        if args.list_server_configs:
            for config in sorted({tuple(server_yaml(p)) for p in paths} - {()}):
                print(json.dumps(list(config)))
            return 0
        wanted = sorted(line.strip() for line in args.server_yaml)
        paths = [p for p in paths if server_yaml(p) == wanted]

    _raw_server_errors()
    profile = ExecutionProfile(
        load_balancing_policy=RoundRobinPolicy(),
        retry_policy=FallthroughRetryPolicy(),
        consistency_level=ConsistencyLevel.ONE,
        row_factory=tuple_factory,
        request_timeout=60,
    )

    def make_cluster(username, password):
        auth = PlainTextAuthProvider(username=username, password=password) if username else None
        return Cluster([args.host], port=args.port, protocol_version=args.protocol_version,
                       execution_profiles={EXEC_PROFILE_DEFAULT: profile}, auth_provider=auth,
                       connect_timeout=10, control_connection_timeout=10)

    cluster = make_cluster(args.username, args.password)
    passed = failed = 0
    matched_counts = {}
    baseline = None
    if args.baseline:
        with open(args.baseline, encoding="utf-8") as f:
            baseline = json.load(f)
    below = []
    try:
        for path in paths:
            name = os.path.splitext(os.path.basename(path))[0]
            t0 = time.monotonic()
            try:
                actual = run_case(cluster, make_cluster, path)
            except Exception as err:  # a broken case file or a lost connection
                actual = "RUNNER FAILURE: %s: %s\n" % (type(err).__name__, err)
            elapsed = time.monotonic() - t0
            if args.server_name:
                d = os.path.join(ACTUAL_DIR, args.server_name)
                os.makedirs(d, exist_ok=True)
                with open(os.path.join(d, name + ".out"), "w", encoding="utf-8") as f:
                    f.write(actual)
            expected_path = os.path.join(EXPECTED_DIR, name + ".out")
            if args.record:
                os.makedirs(EXPECTED_DIR, exist_ok=True)
                with open(expected_path, "w", encoding="utf-8") as f:
                    f.write(actual)
                ok = not actual.startswith("RUNNER FAILURE")
                print("%-32s recorded (%.1fs)%s" % (name, elapsed, "" if ok else "  " + actual.strip()))
            else:
                try:
                    with open(expected_path, encoding="utf-8") as f:
                        expected = f.read()
                except FileNotFoundError:
                    expected = None
                if expected is not None and args.protocol_version < 4:
                    expected = without_warnings(expected)
                ok = expected == actual
                exp_blocks = split_blocks(expected or "")
                act_blocks = split_blocks(actual)
                matched = sum(1 for e, a in zip(exp_blocks, act_blocks) if e == a)
                matched_counts[name] = matched
                status = "ok" if ok else ("FAILED" if expected is not None else "FAILED (no expected output)")
                print("%-32s %s (%.1fs) %d/%d statements match" % (name, status, elapsed, matched, len(exp_blocks)))
                if baseline is not None and matched < baseline.get(name, 0):
                    below.append("%s: %d < baseline %d" % (name, matched, baseline.get(name, 0)))
                if not ok and not args.quiet:
                    diff = difflib.unified_diff(
                        (expected or "").splitlines(keepends=True), actual.splitlines(keepends=True),
                        fromfile="expected/%s.out" % name, tofile="actual/%s.out" % name)
                    sys.stdout.writelines(diff)
            if ok:
                passed += 1
            else:
                failed += 1
    finally:
        cluster.shutdown()
    print("%d passed, %d failed" % (passed, failed))
    total_matched = sum(matched_counts.values())
    if matched_counts:
        print("%d statements match" % total_matched)
    if args.write_baseline:
        counts = {}
        if os.path.exists(args.write_baseline):
            with open(args.write_baseline, encoding="utf-8") as f:
                counts = json.load(f)
        counts.update(matched_counts)
        with open(args.write_baseline, "w", encoding="utf-8") as f:
            json.dump(counts, f, indent=2, sort_keys=True)
            f.write("\n")
    if baseline is not None:
        for line in below:
            print("BELOW BASELINE " + line)
        return 0 if not below else 1
    return 0 if failed == 0 else 1


def split_blocks(text):
    """The output of each statement: blocks start at lines beginning with '> '."""
    blocks, current = [], []
    for line in text.splitlines():
        if line.startswith("> ") and current:
            blocks.append("\n".join(current).rstrip())
            current = []
        current.append(line)
    if current:
        blocks.append("\n".join(current).rstrip())
    return blocks


if __name__ == "__main__":
    sys.exit(main())
