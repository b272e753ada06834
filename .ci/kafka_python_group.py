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
import signal
import sys
import threading
import time

try:
    import kafka
    from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.admin import NewTopic
except ImportError as e:  # pragma: no cover
    sys.exit("kafka_python_group.py: the kafka module is missing (apt-get install python3-kafka): %s" % e)

from brokerd_ci import Broker, Script, api_version_kwargs

SCRIPT = Script("kafka_python_group.py")
log, fail = SCRIPT.log, SCRIPT.fail
TOPIC = "kafka-python-group"
GROUP = "kafka-python-g"
PARTITIONS = 2


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
    broker = Broker(SCRIPT)
    atexit.register(broker.stop)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: sys.exit(130))
    broker.start(kafka.__version__)
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
