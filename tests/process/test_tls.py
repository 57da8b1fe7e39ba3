"""Client TLS (`client_encryption_options`) on the real `rocksandra` process,
through the Python driver and cqlsh: TLS required, optional, mutual, the
Cassandra 5.0 PEM factory's inline keys, and bad key material stopping the
node at startup. Certificates are made per run by scripts/tls-test-certs.sh
(the openssl CLI): a CA, a server certificate for 127.0.0.1, a client
certificate from the CA and one from another CA.

    ROCKSANDRA_BIN=target/debug/rocksandra pytest tests/process/test_tls.py
"""

import contextlib
import os
import shutil
import ssl
import subprocess
import sys
import tempfile
import uuid

import pytest
from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile, NoHostAvailable
from cassandra.policies import RoundRobinPolicy

from test_durability import BIN, PORT, wait_for_port

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CQLSH = shutil.which("cqlsh", path=os.path.dirname(sys.executable)) or shutil.which("cqlsh")


@pytest.fixture(scope="module")
def certs():
    with tempfile.TemporaryDirectory() as d:
        subprocess.run(["bash", os.path.join(ROOT, "scripts", "tls-test-certs.sh"), d],
                       check=True)
        yield lambda name: os.path.join(d, name)


def tls_block(certs, **options):
    """A `client_encryption_options` block with the server's PEM keystore."""
    lines = ["client_encryption_options:",
             "  keystore: %s" % certs("server.pem"),
             "  keystore_password: unused-for-pem"]
    lines += ["  %s: %s" % (key, value) for key, value in options.items()]
    return "\n".join(lines) + "\n"


@contextlib.contextmanager
def server(config_text):
    with tempfile.TemporaryDirectory() as d:
        config = os.path.join(d, "rocksandra.yaml")
        with open(config, "w") as f:
            f.write(config_text)
        log_path = os.path.join(d, "server.log")
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(
                [BIN, "--config", config, "--data-dir", os.path.join(d, "data"),
                 "--listen-address", "127.0.0.1", "--native-port", str(PORT),
                 # No metrics endpoint: 9180 may be taken by another server on this host.
                 "--prometheus-port", "0", "--admin-port", "0"],
                stdout=log, stderr=log)
            try:
                wait_for_port(PORT)
                yield
            finally:
                proc.terminate()
                code = proc.wait(timeout=30)
        assert code == 0, "server exited with %d:\n%s" % (code, open(log_path).read()[-3000:])


def tls_context(certs, ca="ca.pem", identity=None):
    """Verifies the server against `ca`, host name (IP SAN) included."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.load_verify_locations(certs(ca))
    assert context.check_hostname and context.verify_mode == ssl.CERT_REQUIRED
    if identity:
        context.load_cert_chain(certs(identity + ".crt"), certs(identity + ".key"))
    return context


@contextlib.contextmanager
def session(ssl_context=None, protocol_version=5):
    profile = ExecutionProfile(load_balancing_policy=RoundRobinPolicy())
    cluster = Cluster(["127.0.0.1"], port=PORT, protocol_version=protocol_version,
                      ssl_context=ssl_context, execution_profiles={EXEC_PROFILE_DEFAULT: profile},
                      connect_timeout=10)
    try:
        yield cluster.connect()
    finally:
        cluster.shutdown()


def refused(ssl_context=None):
    """The driver cannot connect; returns the error it saw."""
    with pytest.raises(NoHostAvailable) as info:
        with session(ssl_context):
            pass
    return str(info.value)


def round_trip(s):
    """Schema, a write and a read over the session: real queries, real answers."""
    ks = "tls_" + uuid.uuid4().hex[:8]
    s.execute("CREATE KEYSPACE %s WITH replication = "
              "{'class': 'SimpleStrategy', 'replication_factor': 1}" % ks)
    s.execute("CREATE TABLE %s.t (k int PRIMARY KEY, v text)" % ks)
    s.execute("INSERT INTO %s.t (k, v) VALUES (1, 'over tls')" % ks)
    assert s.execute("SELECT v FROM %s.t WHERE k = 1" % ks).one().v == "over tls"
    prepared = s.prepare("SELECT v FROM %s.t WHERE k = ?" % ks)
    assert s.execute(prepared, [1]).one().v == "over tls"
    return ks


def test_tls_required_serves_verified_tls_clients_and_refuses_plain_ones(certs):
    with server(tls_block(certs, enabled="true", optional="false")):
        with session(tls_context(certs)) as s:
            ks = round_trip(s)
            assert s.execute("SELECT release_version FROM system.local").one().release_version
        with session(tls_context(certs), protocol_version=4) as s:
            assert s.execute("SELECT v FROM %s.t WHERE k = 1" % ks).one().v == "over tls"
        # A plain client gets no CQL from a TLS-only port.
        refused()
        # The server really presents the CA's certificate: a client trusting
        # another CA refuses it.
        assert "certificate verify failed" in refused(tls_context(certs, ca="rogue-ca.pem"))


def test_tls_optional_accepts_plain_and_tls_on_one_port(certs):
    with server(tls_block(certs, enabled="true", optional="true")):
        with session(tls_context(certs)) as s:
            ks = round_trip(s)
        with session() as s:
            assert s.execute("SELECT v FROM %s.t WHERE k = 1" % ks).one().v == "over tls"


def test_require_client_auth_refuses_clients_without_a_ca_signed_certificate(certs):
    config = tls_block(certs, enabled="true", require_client_auth="true",
                       truststore=certs("ca.pem"), truststore_password="unused")
    with server(config):
        refused(tls_context(certs))
        refused(tls_context(certs, identity="rogue"))
        refused()
        with session(tls_context(certs, identity="client")) as s:
            round_trip(s)


def indented(text, spaces):
    return "".join(" " * spaces + line + "\n" for line in text.strip().splitlines())


def test_cassandra_5_pem_factory_with_inline_keys(certs):
    def read(name):
        with open(certs(name)) as f:
            return f.read()

    config = ("client_encryption_options:\n"
              "  enabled: true\n"
              "  require_client_auth: true\n"
              "  accepted_protocols: [TLSv1.3]\n"
              "  ssl_context_factory:\n"
              "    class_name: org.apache.cassandra.security.PEMBasedSslContextFactory\n"
              "    parameters:\n"
              "      private_key: |\n" + indented(read("server.key") + read("server.crt"), 8) +
              "      trusted_certificates: |\n" + indented(read("ca.pem"), 8))
    with server(config):
        with session(tls_context(certs, identity="client")) as s:
            round_trip(s)
        # Only TLSv1.3 is accepted.
        old = tls_context(certs, identity="client")
        old.maximum_version = ssl.TLSVersion.TLSv1_2
        refused(old)


def cqlsh(*args, env_extra=None):
    assert CQLSH, "cqlsh not installed (scripts/test-env.sh)"
    cmd = [CQLSH, "127.0.0.1", str(PORT), "--no-color", "--connect-timeout=20"] + list(args)
    env = dict(os.environ, CQLSH_NO_BUNDLED="TRUE", HOME=os.environ.get("HOME", "/tmp"))
    env.update(env_extra or {})
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)


def test_cqlsh_with_ssl(certs, tmp_path):
    config = tls_block(certs, enabled="true", require_client_auth="true",
                       truststore=certs("ca.pem"))
    cqlshrc = tmp_path / "cqlshrc"
    cqlshrc.write_text("[ssl]\ncertfile = %s\nvalidate = true\nuserkey = %s\nusercert = %s\n"
                       % (certs("ca.pem"), certs("client.key"), certs("client.crt")))
    with server(config):
        proc = cqlsh("--ssl", "--cqlshrc", str(cqlshrc), "-e",
                     "CREATE KEYSPACE cqlsh_tls WITH replication = "
                     "{'class': 'SimpleStrategy', 'replication_factor': 1};"
                     "CREATE TABLE cqlsh_tls.t (k int PRIMARY KEY, v text);"
                     "INSERT INTO cqlsh_tls.t (k, v) VALUES (7, 'via cqlsh');"
                     "SELECT k, v FROM cqlsh_tls.t;")
        assert proc.returncode == 0, proc.stderr
        assert "via cqlsh" in proc.stdout and "(1 rows)" in proc.stdout, proc.stdout
        # Without --ssl cqlsh speaks plain CQL and is refused.
        plain = cqlsh("--cqlshrc", str(cqlshrc), "-e", "SELECT k FROM cqlsh_tls.t;")
        assert plain.returncode != 0 and "via cqlsh" not in plain.stdout
        # --ssl without a client certificate: the server asks for one and refuses.
        anonymous_rc = tmp_path / "anonymous-cqlshrc"
        anonymous_rc.write_text("[ssl]\ncertfile = %s\n" % certs("ca.pem"))
        anonymous = cqlsh("--ssl", "--cqlshrc", str(anonymous_rc), "-e",
                          "SELECT k FROM cqlsh_tls.t;")
        assert anonymous.returncode != 0 and "via cqlsh" not in anonymous.stdout
        # (cqlsh 6.2.2 on driver 3.30.1 does not check the server's certificate
        # whatever `validate` says: the driver sets SSLContext.options where it
        # means verify_mode. The driver tests above check server verification.)


@pytest.mark.parametrize("options, message", [
    ({"enabled": "true", "keystore": "/nonexistent/keystore.pem"},
     "cannot read keystore /nonexistent/keystore.pem: No such file or directory"),
    ({"enabled": "true", "store_type": "JKS"}, "store_type 'JKS' is not supported"),
    ({"enabled": "true", "require_client_auth": "true"}, "require_client_auth needs a truststore"),
    ({"enabled": "true", "cipher_suites": "[TLS_RSA_WITH_AES_128_CBC_SHA]"},
     "cipher suite 'TLS_RSA_WITH_AES_128_CBC_SHA' is not supported"),
])
def test_bad_tls_configuration_stops_the_node_at_startup(certs, options, message):
    with tempfile.TemporaryDirectory() as d:
        config = os.path.join(d, "rocksandra.yaml")
        text = tls_block(certs, **options)
        if "keystore" in options:
            text = text.replace("  keystore: %s\n" % certs("server.pem"), "")
        with open(config, "w") as f:
            f.write(text)
        proc = subprocess.run(
            [BIN, "--config", config, "--data-dir", os.path.join(d, "data"),
             "--native-port", str(PORT), "--prometheus-port", "0", "--admin-port", "0"],
            capture_output=True, text=True, timeout=60)
        assert proc.returncode != 0
        assert message in proc.stderr, proc.stderr
        assert not os.path.exists(os.path.join(d, "data")), "storage was not opened"
