#!/usr/bin/python3
"""Runs Debian's kafka-python (python3-kafka, 2.0.2) against a fresh brokerd.

KafkaAdminClient.create_topics, KafkaProducer(acks='all') sending 100 records
and flushing, a group-less KafkaConsumer (assign + seek_to_beginning) reading
them back, and beginning_offsets / end_offsets. Exits non-zero on any
mismatch.

Run it with /usr/bin/python3 (the Debian interpreter that has the kafka
module), not a pyenv python3 that may come first on PATH.

kafka-python probes the broker version with ApiVersions v0; set
KAFKA_PYTHON_API_VERSION=2.5.0 (for example) to skip the probe. BROKERD_BIN,
if set, is used instead of building ./cmd/brokerd.
"""

import atexit
import signal
import sys
import time

try:
    import kafka
    from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.admin import NewTopic
    from kafka.errors import TopicAlreadyExistsError
except ImportError as e:  # pragma: no cover
    sys.exit("kafka_python.py: the kafka module is missing (apt-get install python3-kafka): %s" % e)

from brokerd_ci import Broker, Script, api_version_kwargs

SCRIPT = Script("kafka_python.py")
fail = SCRIPT.fail
TOPIC = "kafka-python-test"
N = 100


def main():
    broker = Broker(SCRIPT)
    atexit.register(broker.stop)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: sys.exit(130))
    broker.start(kafka.__version__)
    kw = dict(bootstrap_servers=[broker.addr], request_timeout_ms=20000, **api_version_kwargs())

    admin = KafkaAdminClient(client_id="brokerd-ci-admin", **kw)
    print("kafka_python.py: broker version as probed by kafka-python: %s" % (admin.config["api_version"],))
    admin.create_topics([NewTopic(name=TOPIC, num_partitions=2, replication_factor=1)], timeout_ms=10000)
    try:
        admin.create_topics([NewTopic(name=TOPIC, num_partitions=2, replication_factor=1)], timeout_ms=10000)
        fail("create_topics of an existing topic did not raise TopicAlreadyExistsError")
    except TopicAlreadyExistsError:
        pass
    if TOPIC not in admin.list_topics():
        fail("list_topics does not show %s" % TOPIC)
    admin.close()
    print("kafka_python.py: ok: create_topics, list_topics")

    producer = KafkaProducer(acks="all", client_id="brokerd-ci-producer", retries=3, **kw)
    futures = []
    for i in range(N):
        futures.append(producer.send(TOPIC, key=b"k%d" % i, value=b"value-%d" % i,
                                     partition=i % 2, headers=[("i", str(i).encode())]))
    producer.flush(timeout=30)
    placed = {}
    for i, f in enumerate(futures):
        md = f.get(timeout=30)
        placed[i] = (md.partition, md.offset)
        if md.partition != i % 2 or md.offset != i // 2:
            fail("record %d acknowledged at partition %d offset %d, want %d/%d" % (i, md.partition, md.offset, i % 2, i // 2))
    producer.close()
    print("kafka_python.py: ok: %d records sent with acks=all and flushed" % N)

    consumer = KafkaConsumer(group_id=None, enable_auto_commit=False, client_id="brokerd-ci-consumer",
                             consumer_timeout_ms=1000, **kw)
    tps = [TopicPartition(TOPIC, 0), TopicPartition(TOPIC, 1)]
    consumer.assign(tps)
    consumer.seek_to_beginning(*tps)
    got = []
    deadline = time.time() + 30
    while len(got) < N and time.time() < deadline:
        for tp, recs in consumer.poll(timeout_ms=500).items():
            got.extend(recs)
    # Anything extra would show up now.
    for tp, recs in consumer.poll(timeout_ms=500).items():
        got.extend(recs)
    if len(got) != N:
        fail("consumed %d records, want exactly %d" % (len(got), N))
    seen = set()
    for r in got:
        i = int(r.value.decode().split("-")[1])
        if (r.partition, r.offset) != placed[i] or r.key != b"k%d" % i or r.headers != [("i", str(i).encode())]:
            fail("record %d came back as partition %d offset %d key %r headers %r" % (i, r.partition, r.offset, r.key, r.headers))
        seen.add(i)
    if seen != set(range(N)):
        fail("records missing: %s" % sorted(set(range(N)) - seen))
    print("kafka_python.py: ok: %d records read back without a group (assign + seek_to_beginning)" % N)

    begin = consumer.beginning_offsets(tps)
    end = consumer.end_offsets(tps)
    for tp in tps:
        if begin[tp] != 0 or end[tp] != N // 2:
            fail("%s: beginning_offsets %d end_offsets %d, want 0 and %d" % (tp, begin[tp], end[tp], N // 2))
    consumer.close()
    print("kafka_python.py: ok: beginning_offsets / end_offsets")
    broker.failed = False
    print("kafka_python.py: PASS")


if __name__ == "__main__":
    main()
