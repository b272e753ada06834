#!/usr/bin/python3
"""Runs Debian's kafka-python (python3-kafka, 2.0.2) consumer groups against a
fresh brokerd.

A KafkaConsumer(group_id=...) with enable_auto_commit=False reads 60 records
and commits by hand (commit() and committed()); a second consumer of the group
resumes after the committed offsets; two consumers in one group share the
partitions (each polling in its own thread); KafkaAdminClient lists and
describes the group and its offsets.
Exits non-zero on any mismatch.

Run it with /usr/bin/python3 (the Debian interpreter that has the kafka
module). BROKERD_BIN, if set, is used instead of building ./cmd/brokerd;
KAFKA_PYTHON_API_VERSION=2.5.0 (for example) skips kafka-python's version
probe.
"""

import atexit
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

try:
    import kafka
    from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.admin import NewTopic
except ImportError as e:  # pragma: no cover
    sys.exit("kafka_python_group.py: the kafka module is missing (apt-get install python3-kafka): %s" % e)

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOPIC = "kafka-python-group"
GROUP = "kafka-python-g"
PARTITIONS = 2


def log(msg):
    print("kafka_python_group.py: " + msg, flush=True)


def fail(msg):
    print("kafka_python_group.py: FAIL: " + msg, file=sys.stderr, flush=True)
    sys.exit(1)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Broker:
    """A brokerd process in a temporary directory."""

    def __init__(self):
        self.tmp = tempfile.mkdtemp(prefix="brokerd-kafka-python-group-")
        self.proc = None
        self.log_path = os.path.join(self.tmp, "brokerd.log")
        self.failed = True

    def start(self):
        binary = os.environ.get("BROKERD_BIN")
        if not binary:
            binary = os.path.join(self.tmp, "brokerd")
            env = dict(os.environ, CGO_ENABLED="0")
            if subprocess.run(["go", "build", "-o", binary, "./cmd/brokerd"], cwd=REPO, env=env).returncode != 0:
                fail("go build ./cmd/brokerd failed")
        kport, aport, rport = free_port(), free_port(), free_port()
        self.addr = "127.0.0.1:%d" % kport
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            [binary, "--data-dir", os.path.join(self.tmp, "data"), "--kafka-addr", self.addr,
             "--admin-addr", "127.0.0.1:%d" % aport, "--raft-addr", "127.0.0.1:%d" % rport],
            stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 30
        while True:
            if self.proc.poll() is not None:
                fail("brokerd exited before it was ready (code %s)" % self.proc.returncode)
            try:
                with urllib.request.urlopen("http://127.0.0.1:%d/readyz" % aport, timeout=1) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.time() > deadline:
                fail("brokerd not ready after 30s")
            time.sleep(0.1)
        log("brokerd ready on %s (kafka-python %s)" % (self.addr, kafka.__version__))

    def commit(self):
        self._commit.set()
        if not self.committed.wait(30):
            fail("member %s did not commit within 30s (%s)" % (self.name, self.error))

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.failed and os.path.exists(self.log_path):
            with open(self.log_path, "rb") as f:
                tail = f.read()[-6000:]
            sys.stderr.write("---- brokerd log (tail) ----\n" + tail.decode("utf-8", "replace") + "\n")
        shutil.rmtree(self.tmp, ignore_errors=True)


def api_version_kwargs():
    v = os.environ.get("KAFKA_PYTHON_API_VERSION")
    if not v:
        return {}
    return {"api_version": tuple(int(x) for x in v.split("."))}


def produce(kw, tag, n):
    producer = KafkaProducer(acks="all", retries=3, request_timeout_ms=20000, **kw)
    for i in range(n):
        producer.send(TOPIC, value=("%s-%d" % (tag, i)).encode(), partition=i % PARTITIONS)
    producer.flush(timeout=30)
    producer.close()


def group_consumer(kw, name):
    # max_poll_interval_ms is also the rebalance timeout; kafka-python wants
    # its request timeout above it, since JoinGroup waits that long.
    return KafkaConsumer(TOPIC, group_id=GROUP, client_id=name, enable_auto_commit=False,
                         auto_offset_reset="earliest", session_timeout_ms=10000,
                         heartbeat_interval_ms=500, max_poll_interval_ms=20000,
                         request_timeout_ms=25000, **kw)


class Member(threading.Thread):
    """A group consumer polling in its own thread. It commits when asked and
    closes when stopped."""

    def __init__(self, kw, name):
        super().__init__(daemon=True)
        self.name = name
        self.consumer = group_consumer(kw, name)
        self.values = set()
        self.error = None
        self._assigned = frozenset()
        self._halt = threading.Event()
        self._commit = threading.Event()
        self.committed = threading.Event()
        self._lock = threading.Lock()

    def run(self):
        try:
            while not self._halt.is_set():
                for recs in self.consumer.poll(timeout_ms=200).values():
                    for r in recs:
                        with self._lock:
                            self.values.add(r.value.decode())
                with self._lock:
                    self._assigned = frozenset(tp.partition for tp in self.consumer.assignment())
                if self._commit.is_set() and not self.committed.is_set():
                    self.consumer.commit()
                    self.committed.set()
            self.consumer.close()
        except Exception as e:  # reported by the main thread
            self.error = e

    def assigned(self):
        with self._lock:
            return self._assigned

    def commit(self):
        self._commit.set()
        if not self.committed.wait(30):
            fail("member %s did not commit within 30s (%s)" % (self.name, self.error))

    def stop(self):
        self._halt.set()
        self.join(60)


def read(consumers, want, timeout=40):
    """Polls the consumers in turn until want distinct values arrived."""
    got = {}
    deadline = time.time() + timeout
    while len(got) < want and time.time() < deadline:
        for c in consumers:
            for recs in c.poll(timeout_ms=200).values():
                for r in recs:
                    got.setdefault(r.value.decode(), []).append(c.config["client_id"])
    return got


def main():
    broker = Broker()
    atexit.register(broker.stop)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: sys.exit(130))
    broker.start()
    kw = dict(bootstrap_servers=[broker.addr], **api_version_kwargs())
    tps = [TopicPartition(TOPIC, p) for p in range(PARTITIONS)]

    admin = KafkaAdminClient(client_id="brokerd-ci-admin", request_timeout_ms=20000, **kw)
    admin.create_topics([NewTopic(name=TOPIC, num_partitions=PARTITIONS, replication_factor=1)], timeout_ms=10000)
    produce(kw, "first", 60)
    log("ok: 60 records produced")

    # 1. A group member reads everything and commits by hand.
    c1 = group_consumer(kw, "c1")
    got = read([c1], 60)
    if len(got) != 60:
        fail("the group consumer read %d of 60 records" % len(got))
    c1.commit()
    for tp in tps:
        if c1.committed(tp) != 30:
            fail("committed(%s) is %s after commit(), want 30" % (tp, c1.committed(tp)))
    c1.close()
    log("ok: KafkaConsumer(group_id=...) read 60 records, commit() and committed() agree")

    # 2. The next member of the group resumes after the committed offsets.
    produce(kw, "second", 20)
    c2 = group_consumer(kw, "c2")
    got = read([c2], 20)
    old = [v for v in got if v.startswith("first-")]
    if old or len(got) != 20:
        fail("the second consumer read %d records, %d of them already committed" % (len(got), len(old)))
    c2.commit()
    c2.close()
    log("ok: a second consumer of the group resumed after the committed offsets")

    # 3. Two members share the partitions. Each polls in its own thread: a
    # member's JoinGroup waits until the other has rejoined too.
    members = [Member(kw, "a"), Member(kw, "b")]
    for m in members:
        m.start()
    deadline = time.time() + 40
    while time.time() < deadline:
        assigned = [m.assigned() for m in members]
        if all(assigned) and not (assigned[0] & assigned[1]) and len(assigned[0] | assigned[1]) == PARTITIONS:
            break
        time.sleep(0.2)
    else:
        fail("two members did not split the partitions: %s" % [m.assigned() for m in members])
    log("ok: two members split the partitions: %s" % [sorted(m.assigned()) for m in members])
    produce(kw, "third", 20)
    deadline = time.time() + 40
    while time.time() < deadline and sum(len(m.values) for m in members) < 20:
        time.sleep(0.2)
    got = set()
    for m in members:
        got |= m.values
    if len(got) != 20 or any(not v.startswith("third-") for v in got):
        fail("two members read %d records (%s), want the 20 new ones" % (len(got), sorted(got)[:5]))
    for m in members:
        m.commit()

    groups = [g[0] for g in admin.list_consumer_groups()]
    if GROUP not in groups:
        fail("list_consumer_groups %s does not show %s" % (groups, GROUP))
    desc = admin.describe_consumer_groups([GROUP])[0]
    if desc.state != "Stable" or len(desc.members) != 2:
        fail("describe_consumer_groups: state %s with %d members, want Stable with 2" % (desc.state, len(desc.members)))
    offsets = admin.list_consumer_group_offsets(GROUP)
    for tp in tps:
        if tp not in offsets or offsets[tp].offset != 50:
            fail("list_consumer_group_offsets: %s, want 50 for every partition" % offsets)
    for m in members:
        m.stop()
    for m in members:
        if m.error:
            fail("member %s: %s" % (m.name, m.error))
    admin.close()
    log("ok: both members read the new records and committed; list, describe and offsets of the group")

    broker.failed = False
    log("PASS")


if __name__ == "__main__":
    main()
