"""Refused internode connections say why, on real processes: a node whose
certificate comes from another CA, a node without internode encryption
joining a TLS seed, and a TLS node joining a plain seed each fail to join.
On both ends an ERROR names the peer and the cause (unknown CA, protocol
mismatch), once however often the joiner retries; each joiner
exits, after its join timeout, with Cassandra's "Unable to contact any
seeds" and the cause, instead of waiting forever.

    /work/main/.venv/bin/pytest -q -p no:cacheprovider tests/cluster/test_internode_tls_refusals.py
"""

import os
import re
import subprocess
import tempfile
import time

from harness import ADDRESSES, STORAGE_PORT, Nodes

from test_internode_tls import ROOT, write_config

TLS_SEED, ROGUE, PLAIN_JOINER, PLAIN_SEED, TLS_JOINER = ADDRESSES[:5]
# The join timeout (SEED_WAIT, 15 s), the probes of the seeds, the exit.
EXIT_WITHIN = 60


def error_lines(text, *words):
    """The ERROR lines of a log that hold every one of `words`."""
    return [line for line in text.splitlines()
            if "ERROR" in line and all(w in line for w in words)]


def refusals(text, peer, cause):
    """The lines where a seed refused `peer` for `cause`. The peer is named
    by its connection's source address: on one host, nodes connect from
    127.0.0.1 whatever their listen address (so the seed tells the two
    joiners it refuses apart by cause)."""
    named = re.compile(r"Failed to properly handshake with peer (127\.0\.0\.1|%s):\d+\. "
                       r"Closing the channel\. " % re.escape(peer))
    return [line for line in error_lines(text, cause) if named.search(line)]


def test_refused_nodes_say_why_on_both_ends_and_exit():
    certs = tempfile.mkdtemp(prefix="rocksandra-internode-tls-")
    subprocess.run([os.path.join(ROOT, "scripts", "tls-test-certs.sh"), certs], check=True,
                   timeout=120)
    config = write_config(os.path.join(certs, "node.yaml"), os.path.join(certs, "node.pem"),
                          os.path.join(certs, "ca.pem"))
    # Trusts the seed's CA, but its own certificate is from another one.
    rogue = write_config(os.path.join(certs, "rogue.yaml"), os.path.join(certs, "rogue-node.pem"),
                         os.path.join(certs, "ca.pem"))
    nodes = Nodes()
    joiners = {}
    try:
        nodes.start(TLS_SEED, seeds=TLS_SEED, extra=["--config", config],
                    nodetool_config=config)
        nodes.start(PLAIN_SEED, seeds=PLAIN_SEED)
        nodes.wait_status({TLS_SEED: "UN"}, askers=[TLS_SEED], timeout=60)
        nodes.wait_status({PLAIN_SEED: "UN"}, askers=[PLAIN_SEED], timeout=60)
        started = time.monotonic()
        for ip, seed, extra in ((ROGUE, TLS_SEED, ["--config", rogue]),
                                (PLAIN_JOINER, TLS_SEED, []),
                                (TLS_JOINER, PLAIN_SEED, ["--config", config])):
            node = nodes.add(ip, seeds=seed, extra=extra)
            log = open(node.log_path, "ab")
            joiners[ip] = (subprocess.Popen(node.command(), stdout=log, stderr=log), log)

        for ip, (proc, log) in joiners.items():
            left = max(1, EXIT_WITHIN - (time.monotonic() - started))
            code = proc.wait(timeout=left)
            log.close()
            assert code != 0, (ip, nodes[ip].tail())
        took = time.monotonic() - started
        # Every report below came within one report interval (30 s): once
        # per peer and direction, though each joiner retried for 15 s.
        assert took < 30, took

        tls_seed_log = nodes[TLS_SEED].log_text()
        plain_seed_log = nodes[PLAIN_SEED].log_text()
        seed_tls = "%s:%d" % (TLS_SEED, STORAGE_PORT)
        seed_plain = "%s:%d" % (PLAIN_SEED, STORAGE_PORT)

        # A certificate from another CA: the seed names the peer and the
        # unknown CA; the joiner, that its certificate was refused.
        assert len(refusals(tls_seed_log, ROGUE, "unknown CA")) == 1, tls_seed_log
        rogue_log = nodes[ROGUE].log_text()
        assert len(error_lines(rogue_log, "->" + seed_tls, "failed to connect",
                               "refused this node's certificate: unknown CA")) == 1, rogue_log
        assert re.search(r"Unable to contact any seeds: \[%s\].*unknown CA" % re.escape(seed_tls),
                         rogue_log), rogue_log

        # Plain messages to a TLS-only port: a protocol mismatch, both ways.
        assert len(refusals(tls_seed_log, PLAIN_JOINER, "protocol mismatch")) == 1, tls_seed_log
        plain_log = nodes[PLAIN_JOINER].log_text()
        assert len(error_lines(plain_log, "->" + seed_tls, "protocol mismatch")) == 1, plain_log
        assert re.search(r"Unable to contact any seeds: \[%s\].*protocol mismatch"
                         % re.escape(seed_tls), plain_log), plain_log

        # A TLS handshake to a plain port: the same, the other way round.
        assert len(refusals(plain_seed_log, TLS_JOINER, "protocol mismatch")) == 1, \
            plain_seed_log
        tls_joiner_log = nodes[TLS_JOINER].log_text()
        assert len(error_lines(tls_joiner_log, "->" + seed_plain, "protocol mismatch")) == 1, \
            tls_joiner_log
        assert re.search(r"Unable to contact any seeds: \[%s\].*protocol mismatch"
                         % re.escape(seed_plain), tls_joiner_log), tls_joiner_log

        # The seeds carried on, alone.
        assert nodes[TLS_SEED].running() and nodes[PLAIN_SEED].running()
        for seed in (TLS_SEED, PLAIN_SEED):
            status = nodes[seed].nodetool("status").stdout
            for ip in joiners:
                assert ip not in status, status
    finally:
        for proc, log in joiners.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=30)
            log.close()
        codes = nodes.close()
    assert all(codes[ip] == 0 for ip in (TLS_SEED, PLAIN_SEED)), codes
