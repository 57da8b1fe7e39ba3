"""Shared fixtures for the Python driver tests.

The server under test is $ROCKSANDRA_HOST:$ROCKSANDRA_PORT (default
127.0.0.1:9042): Apache Cassandra 5.0.6 (scripts/cassandra/start.sh) or ours.
"""

import os
import uuid

import pytest
from cassandra import ConsistencyLevel
from cassandra.cluster import Cluster, ExecutionProfile, EXEC_PROFILE_DEFAULT
from cassandra.policies import RoundRobinPolicy

HOST = os.environ.get("ROCKSANDRA_HOST", "127.0.0.1")
PORT = int(os.environ.get("ROCKSANDRA_PORT", "9042"))


def make_cluster(protocol_version=4, **kwargs):
    profile = ExecutionProfile(
        load_balancing_policy=RoundRobinPolicy(),
        consistency_level=ConsistencyLevel.ONE,
        request_timeout=30,
    )
    return Cluster([HOST], port=PORT, protocol_version=protocol_version,
                   execution_profiles={EXEC_PROFILE_DEFAULT: profile},
                   connect_timeout=10, control_connection_timeout=10, **kwargs)


@pytest.fixture(scope="session", params=[3, 4, 5], ids=["v3", "v4", "v5"])
def protocol_version(request):
    return request.param


@pytest.fixture(scope="session")
def cluster(protocol_version):
    c = make_cluster(protocol_version)
    c.connect()
    yield c
    c.shutdown()


@pytest.fixture(scope="session")
def session(cluster):
    s = cluster.connect()
    yield s
    s.shutdown()


@pytest.fixture()
def keyspace(session, request):
    """A fresh keyspace (SimpleStrategy RF 1) per test, dropped afterwards."""
    name = "drv_" + uuid.uuid4().hex[:12]
    session.execute(
        "CREATE KEYSPACE %s WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}" % name)
    session.set_keyspace(name)
    yield name
    session.execute("DROP KEYSPACE IF EXISTS %s" % name)
