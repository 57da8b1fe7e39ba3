"""Membership under internode TLS with client certificates, on real
processes: three nodes with `internode_encryption: all` and
`require_client_auth: true`; a fourth node holding a certificate the
truststore signs bootstraps (streaming its ranges over TLS), serves reads,
and decommissions (streaming them back); a fifth process whose certificate
comes from another CA never becomes a member, and no node learns of it.

    /work/main/.venv/bin/pytest -q -p no:cacheprovider tests/cluster/test_internode_tls_membership.py
"""

import os
import re
import subprocess
import tempfile
import time

from cassandra import ConsistencyLevel as CL

from harness import ADDRESSES, Nodes, bound, stmt

from test_internode_tls import ROOT, write_config

A, B, C, D, E = ADDRESSES[:5]
THREE = (A, B, C)


def test_a_signed_node_joins_and_leaves_and_a_stranger_never_joins():
    certs = tempfile.mkdtemp(prefix="rocksandra-internode-tls-")
    subprocess.run([os.path.join(ROOT, "scripts", "tls-test-certs.sh"), certs], check=True,
                   timeout=120)
    config = write_config(os.path.join(certs, "node.yaml"), os.path.join(certs, "node.pem"),
                          os.path.join(certs, "ca.pem"))
    rogue = write_config(os.path.join(certs, "rogue.yaml"), os.path.join(certs, "rogue-node.pem"),
                         os.path.join(certs, "ca.pem"))
    nodes = Nodes()
    stranger = None
    try:
        for ip in THREE:
            nodes.start(ip, extra=["--config", config], nodetool_config=config)
        nodes.wait_status({ip: "UN" for ip in THREE}, timeout=60)
        session = nodes.connect(A)
        session.execute("CREATE KEYSPACE tls WITH replication = "
                        "{'class': 'SimpleStrategy', 'replication_factor': 2}")
        session.execute("CREATE TABLE tls.t (k int PRIMARY KEY, v text)")
        insert = session.prepare("INSERT INTO tls.t (k, v) VALUES (?, ?)")
        want = {k: "v%d" % k for k in range(300)}
        for k, v in want.items():
            session.execute(bound(insert, (k, v), CL.ALL))

        # A stranger with a certificate from another CA, seeded at A.
        stranger_node = nodes.add(E, extra=["--config", rogue])
        stranger_log = open(os.path.join(nodes.root, "stranger.log"), "wb")
        stranger = subprocess.Popen(stranger_node.command(), stdout=stranger_log,
                                    stderr=stranger_log)

        # A signed node bootstraps over TLS and serves its ranges.
        nodes.start(D, extra=["--config", config], nodetool_config=config)
        nodes.wait_status({ip: "UN" for ip in THREE + (D,)}, askers=list(THREE) + [D],
                          timeout=90)
        assert re.search(r"bootstrap streamed .*", nodes[D].log_text()), nodes[D].tail()
        via_d = nodes.connect(D)
        rows = {r.k: r.v for r in via_d.execute(stmt("SELECT k, v FROM tls.t", CL.ALL))}
        assert rows == want

        # It leaves again, streaming what it held to the others.
        nodes[D].nodetool("decommission", timeout=180)
        nodes.wait_status({ip: "UN" for ip in THREE}, askers=list(THREE), timeout=60)
        rows = {r.k: r.v for r in session.execute(stmt("SELECT k, v FROM tls.t", CL.ALL))}
        assert rows == want

        # The stranger, running all along, is no member anywhere.
        time.sleep(2)
        assert stranger.poll() is None or stranger.returncode != 0
        for ip in THREE:
            status = nodes[ip].nodetool("status").stdout
            assert E not in status, status
            peers = [r.peer for r in nodes.connect(ip).execute("SELECT peer FROM system.peers")]
            assert E not in [str(p) for p in peers], peers
    finally:
        if stranger is not None and stranger.poll() is None:
            stranger.kill()
            stranger.wait(timeout=30)
        codes = nodes.close()
    assert all(c in (0, None) for ip, c in codes.items() if ip != E), codes
