package config

import (
	"slices"
	"strings"

	"github.com/brokerd/brokerd/topic"
)

// Key describes one configuration key.
type Key struct {
	Name string
	// Default is brokerd's default, as the key would be written; "" means
	// unset (for topic defaults: Kafka's own default applies).
	Default string
	Doc     string
	// Family groups keys that set one thing in different units
	// (log.retention.ms, .minutes, .hours). A source that sets any member
	// hides the members set by lower-precedence sources; within one source
	// Kafka's order applies (ms over minutes over hours).
	Family string
	// Topic marks a key that supplies a broker-level topic config default.
	Topic bool
	// Secret marks a key whose value holds passwords: errors and
	// --print-config show "(hidden)" instead.
	Secret bool
	check  func(v string) error
}

// aliases are Kafka's older names for a key: they set the key they name.
var aliases = map[string]string{
	"broker.id": "node.id",
	"log.dir":   "log.dirs",
}

// brokerKeys are the keys that configure the process itself.
var brokerKeys = []Key{
	{Name: "listeners", Default: "PLAINTEXT://127.0.0.1:9092", check: checkListeners,
		Doc: "The Kafka listeners, NAME://host:port,... (a bare host:port is PLAINTEXT). The name picks the security protocol in listener.security.protocol.map; an empty host listens on every interface."},
	{Name: "advertised.listeners", check: checkAdvertised,
		Doc: "What Metadata tells clients to connect to, per listener name, NAME://host:port,... A client is given the addresses of the listener it came in on. A listener not named here advertises its bound address, or this host's name when it binds every interface."},
	{Name: "listener.security.protocol.map", Default: defaultProtocolMap, check: checkProtocolMap,
		Doc: "The security protocol of each listener name, NAME:PROTOCOL,...: PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL (TLS, then SASL)."},
	{Name: "sasl.enabled.mechanisms", Default: "SCRAM-SHA-256,SCRAM-SHA-512", check: checkMechanisms,
		Doc: "SASL mechanisms of the SASL_PLAINTEXT and SASL_SSL listeners: SCRAM-SHA-256, SCRAM-SHA-512 and PLAIN (checked against the stored SCRAM credentials). Kafka's default GSSAPI is not supported; PLAIN is off by default since it sends the password itself."},
	{Name: "sasl.server.max.receive.size", Default: "524288", check: intRange(32, 64, 1<<31-1),
		Doc: "Largest frame a SASL listener reads before the client has authenticated; a larger one closes the connection before anything is allocated. brokerd reads these frames whole in each connection's 16 KiB read buffer, outside the shared memory pool, so it takes at most 16384 whatever this says (its mechanisms' messages are far smaller)."},
	{Name: "connections.max.reauth.ms", Default: "0", check: intRange(64, 0, maxReauthMillis),
		Doc: "KIP-368: a SASL session lasts this long; SaslAuthenticate v1+ tells the client, and a connection that has not re-authenticated by then is closed at its next request. 0: sessions do not expire. At most 31536000000 (a year)."},
	{Name: "connection.failed.authentication.delay.ms", Default: "100", check: intRange(32, 0, maxFailedAuthDelayMillis),
		Doc: "How long a connection whose SASL authentication failed waits before it is answered and closed (at most 4096 connections wait at once; more are closed at once). At most 60000 (a minute)."},
	{Name: "brokerd.sasl.bootstrap.users", Secret: true, check: checkBootstrapUsers,
		Doc: "Users the raft leader creates at start when they do not exist yet, NAME:MECHANISM:PASSWORD,... (MECHANISM is SCRAM-SHA-256 or SCRAM-SHA-512; a password may hold ':' but not ','). An existing user is never overwritten; followers do nothing. Hidden in errors and --print-config."},
	{Name: "ssl.keystore.type", Default: "PEM", check: oneOf("PEM"),
		Doc: "The key store's format. PEM only (KIP-651); Kafka's default JKS is not read."},
	{Name: "ssl.keystore.location",
		Doc: "The SSL listeners' key store: one PEM file holding the private key (unencrypted PKCS#8, PKCS#1 or SEC 1) and the certificate chain, leaf first. Read again on SIGHUP."},
	{Name: "ssl.truststore.type", Default: "PEM", check: oneOf("PEM"),
		Doc: "The trust store's format. PEM only (KIP-651)."},
	{Name: "ssl.truststore.location",
		Doc: "A PEM bundle of the CAs client certificates must chain to; needed when ssl.client.auth is requested or required. Read again on SIGHUP."},
	{Name: "ssl.client.auth", Default: "none", check: oneOf("none", "requested", "required"),
		Doc: "Client certificates on SSL listeners: none, requested (verified when given) or required (a client without one is refused)."},
	{Name: "ssl.principal.mapping.rules", Default: "DEFAULT", check: checkPrincipalRules,
		Doc: "How a client certificate's subject (RFC 2253, \"CN=alice,O=acme\") becomes the principal User:name: DEFAULT keeps it, RULE:pattern/replacement/[LU] rewrites it (first matching rule wins; no match refuses the client)."},
	{Name: "brokerd.authorizer.enabled", Default: "false", check: checkBool,
		Doc: "Authorize every Kafka request against the replicated ACLs (Kafka's authorizer.class.name). Off, every request is allowed and the ACL APIs answer SECURITY_DISABLED."},
	{Name: "super.users", check: checkSuperUsers,
		Doc: "Principals allowed everything whatever the ACLs say, User:name;User:other (semicolon-separated, as Kafka's)."},
	{Name: "allow.everyone.if.no.acl.found", Default: "false", check: checkBool,
		Doc: "With the authorizer on, let everyone use a resource that has no ACL at all (Kafka's key). Off, such a resource is refused to all but super users."},
	{Name: "log.dirs", Default: "./brokerd-data", check: checkDir,
		Doc: "The data directory: partition logs, raft's log and the state DB. One directory (alias: log.dir)."},
	{Name: "node.id", Default: "1", check: intRange(32, 1, 1<<31-1),
		Doc: "This node's id, also its raft server id (alias: broker.id)."},
	{Name: "broker.rack",
		Doc: "This node's rack. A consumer that sets client.rack (KIP-392) is told to fetch from a member in its rack, which serves it up to what it has applied."},
	{Name: "num.partitions", Default: "1", check: intRange(32, 1, 1<<31-1),
		Doc: "Partitions of auto-created topics and of CreateTopics asking for the default."},
	{Name: "default.replication.factor", Default: "1", check: intRange(16, 1, 1<<15-1),
		Doc: "Replication factor reported for topics created with the default. Every partition is replicated by raft to every node."},
	{Name: "auto.create.topics.enable", Default: "true", check: checkBool,
		Doc: "Create a topic when a client asks for its metadata or produces to it."},
	{Name: "log.retention.check.interval.ms", Default: "300000", check: intRange(64, 1, 1<<63-1),
		Doc: "How often the leader proposes a retention pass."},
	{Name: "socket.request.max.bytes", Default: "104857600", check: intRange(32, 1, 1<<31-1),
		Doc: "Largest Produce request frame accepted; other requests are capped at 1 MiB or this, whichever is smaller."},
	{Name: "connections.max.idle.ms", Default: "600000", check: intRange(64, 1, 1<<63-1),
		Doc: "Close a client connection idle for this long."},
	{Name: "queued.max.request.bytes", Default: "268435456", check: intRange(64, 1, 1<<63-1),
		Doc: "Memory budget for request frames held in flight across all connections, decoding included; an eighth is kept for small requests. Unlike Kafka's -1, it is always bounded."},
	{Name: "max.connections.per.ip", Default: "1000", check: intRange(32, 1, 1<<31-1),
		Doc: "Connections one client address (an IPv4 address, or an IPv6 /64) may have open; more are closed when accepted. Kafka's default is unlimited."},
	{Name: "group.min.session.timeout.ms", Default: "6000", check: intRange(32, 1, 1<<31-1),
		Doc: "Smallest session timeout a consumer-group member may ask for."},
	{Name: "group.max.session.timeout.ms", Default: "1800000", check: intRange(32, 1, 1<<31-1),
		Doc: "Largest session timeout a consumer-group member may ask for."},
	{Name: "group.initial.rebalance.delay.ms", Default: "3000", check: intRange(32, 0, 1<<31-1),
		Doc: "How long the first rebalance of an empty group waits for more members; 0: none."},
	{Name: "offsets.retention.minutes", Default: "10080", check: intRange(32, 1, 1<<31-1),
		Doc: "Committed offsets of a group that has been empty this long, and committed longer ago, are deleted."},
	{Name: "offsets.retention.check.interval.ms", Default: "600000", check: intRange(64, 1, 1<<63-1),
		Doc: "How often the coordinator looks for expired offsets."},
	{Name: "offset.metadata.max.bytes", Default: "4096", check: intRange(32, 0, 1<<31-1),
		Doc: "Longest metadata string an offset commit may carry."},
	{Name: "quota.window.num", Default: "11", check: intRange(32, 2, 64),
		Doc: "Samples a client quota's rate is measured over."},
	{Name: "quota.window.size.seconds", Default: "1", check: intRange(32, 1, 3600),
		Doc: "Length of one client quota rate sample."},
	{Name: "replica.lag.time.max.ms", Default: "30000", check: intRange(64, 1, 1<<63-1),
		Doc: "A member the raft leader has not heard from for this long leaves the ISR that Metadata reports."},
	{Name: "producer.id.expiration.ms", Default: "86400000", check: intRange(64, 1, 1<<63-1),
		Doc: "Forget an idempotent producer that has not written for this long; its retries then get UNKNOWN_PRODUCER_ID."},
	{Name: "transactional.id.expiration.ms", Default: "604800000", check: intRange(64, 1, 1<<63-1),
		Doc: "Forget a transactional id with no transaction in progress and no activity for this long, with its producer id."},
	{Name: "producer.id.expiration.check.interval.ms", Default: "600000", check: intRange(64, 1, 1<<63-1),
		Doc: "How often the leader proposes a pass of producer and transactional-id expiry."},
	{Name: "max.incremental.fetch.session.cache.slots", Default: "1000", check: intRange(32, 0, 1<<31-1),
		Doc: "How many incremental fetch sessions (KIP-227) this node keeps; 0: none, every fetch is a full fetch."},
	{Name: "brokerd.raft.listener", Default: "127.0.0.1:33145", check: checkHostPort,
		Doc: "Raft's listener, host:port."},
	{Name: "brokerd.raft.advertised.listener", check: checkAdvertisedHostPort,
		Doc: "The raft address peers dial, host:port. Default: brokerd.raft.listener."},
	{Name: "brokerd.raft.peers", check: checkPeers,
		Doc: "Static raft membership of a new cluster, id@host:port,... with this node included. Empty: a one-node group."},
	{Name: "brokerd.raft.dial.overrides", check: checkPeers,
		Doc: "Dial these peers at these addresses instead of the raft address in the membership, id@host:port,...: for a NAT or a proxy between nodes. Each node has its own."},
	{Name: "brokerd.raft.join", check: checkHostPortOrEmpty,
		Doc: "Join a running cluster: any member's admin address, host:port. The node asks to be added as a voter and catches up by snapshot; used instead of brokerd.raft.peers."},
	{Name: "brokerd.raft.snapshot.bytes", Default: "67108864", check: intRange(64, 1, 1<<63-1),
		Doc: "Take a raft snapshot (a manifest; raft then trims its log) after this many record bytes are applied."},
	{Name: "brokerd.raft.snapshot.interval.ms", Default: "30000", check: intRange(64, 1, 1<<63-1),
		Doc: "Take a raft snapshot this long after the last one if anything was applied since."},
	{Name: "brokerd.raft.trailing.logs", Default: "1024", check: intRange(64, 1, 1<<63-1),
		Doc: "Raft log entries kept behind a snapshot, so that a follower a little behind catches up from the log rather than by a snapshot install."},
	{Name: "brokerd.raft.trailing.bytes", Default: "268435456", check: intRange(64, 1, 1<<63-1),
		Doc: "Bound the raft log kept behind a snapshot by record bytes too: with large entries, fewer than brokerd.raft.trailing.logs are kept (at least 64)."},
	{Name: "brokerd.raft.log.store", Default: "wal", check: oneOf("wal", "boltdb"),
		Doc: "Raft's log store: wal (hashicorp/raft-wal) or boltdb (raft-boltdb)."},
	{Name: "brokerd.raft.wal.segment.bytes", Default: "0", check: zeroOrRange(32, 1<<20, 1<<31-1),
		Doc: "Size of raft-wal's segment files, allocated whole. 0: 64 MiB, or a 32nd of the data directory's filesystem when that is smaller (at least 1 MiB)."},
	{Name: "brokerd.storage.min.free.bytes", Default: "0", check: intRange(64, 0, 1<<63-1),
		Doc: "Free space to keep on the data directory's filesystem: below it, produce, processor steps and topic creation are refused with KAFKA_STORAGE_ERROR and /readyz says why, until space is freed. 0: a 20th of the filesystem, at least two raft-wal segments, at most 5 GiB."},
	{Name: "brokerd.admin.listener", Default: "127.0.0.1:9644", check: checkHostPortOrEmpty,
		Doc: "Admin HTTP listener: cluster membership, processors, /metrics, /healthz, /readyz, /debug/pprof/. Empty disables it. Open to anyone who reaches it unless brokerd.authorizer.enabled=true: keep it on 127.0.0.1 or a private network."},
	{Name: "brokerd.admin.tls.enabled", Default: "false", check: checkBool,
		Doc: "Serve the admin HTTP API over TLS (https), with the key store below; /healthz and /readyz stay on the same listener. The nodes call each other's admin API over https too, presenting this certificate."},
	{Name: "brokerd.admin.tls.keystore.location",
		Doc: "The admin API's key store, a PEM file with the private key and the certificate chain. Default: ssl.keystore.location. Read again on SIGHUP."},
	{Name: "brokerd.admin.tls.truststore.location",
		Doc: "A PEM bundle of the CAs that sign admin API client certificates and the other nodes' admin certificates. Default: ssl.truststore.location. Read again on SIGHUP."},
	{Name: "brokerd.admin.tls.client.auth", check: oneOf("", "none", "requested", "required"),
		Doc: "Client certificates on the admin API: none, requested (verified when given) or required. Default: requested when there is a trust store, else none. A certificate's principal (ssl.principal.mapping.rules) is what the ACLs name, as is a Basic user's."},
	{Name: "brokerd.raft.tls.enabled", Default: "false", check: checkBool,
		Doc: "Run raft between nodes over mutual TLS: each side presents its certificate and verifies the other's against the trust store (host names are not checked; give the cluster a CA of its own). Every node of a cluster must agree."},
	{Name: "brokerd.raft.tls.keystore.location",
		Doc: "Raft's key store, a PEM file with the private key and the certificate chain; the certificate must allow both server and client authentication (or name no extended key usage). Default: ssl.keystore.location. Read again on SIGHUP."},
	{Name: "brokerd.raft.tls.truststore.location",
		Doc: "A PEM bundle of the CAs whose certificates are raft peers: the nodes' CA, not the Kafka clients'. Required with brokerd.raft.tls.enabled (ssl.truststore.location is not used for raft). A peer's certificate must allow both server and client authentication. Read again on SIGHUP."},
	{Name: "brokerd.raft.tls.peer.principals",
		Doc: "Comma-separated principals (a certificate subject mapped by ssl.principal.mapping.rules, e.g. User:node1; \"User:\" may be left out) that raft peers must have, checked on both sides of a connection. Default: empty, any node certificate of brokerd.raft.tls.truststore.location."},
	{Name: "brokerd.metrics.partition.enable", Default: "true", check: checkBool,
		Doc: "Export per-partition series (log size, offsets, per-partition group lag) on /metrics."},
	{Name: "brokerd.log.level", Default: "info", check: oneOf("debug", "info", "warn", "error"),
		Doc: "Log level: debug, info, warn or error."},
	{Name: "brokerd.log.format", Default: "text", check: oneOf("text", "json"),
		Doc: "Log format: text or json (log/slog)."},
	{Name: "brokerd.shutdown.timeout.ms", Default: "30000", check: intRange(64, 1, 1<<63-1),
		Doc: "How long SIGTERM waits for requests in flight before closing connections."},
}

// topicFallbacks are broker keys that Kafka reads, in a coarser unit, when
// the topic default's main broker key is unset.
var topicFallbacks = []Key{
	{Name: "log.retention.minutes", Family: "log.retention.ms", Topic: true, check: intRange(32, -1<<31, 1<<31-1),
		Doc: "Retention time in minutes, read when log.retention.ms is unset. Negative: no limit."},
	{Name: "log.retention.hours", Family: "log.retention.ms", Topic: true, check: intRange(32, -1<<31, 1<<31-1),
		Doc: "Retention time in hours, read when log.retention.ms and .minutes are unset (Kafka's default 168). Negative: no limit."},
	{Name: "log.roll.hours", Family: "log.roll.ms", Topic: true, check: intRange(32, 1, 1<<31-1),
		Doc: "Roll a segment this many hours after its first record, read when log.roll.ms is unset."},
	{Name: "log.roll.jitter.hours", Family: "log.roll.jitter.ms", Topic: true, check: intRange(32, 0, 1<<31-1),
		Doc: "Segment roll jitter in hours, read when log.roll.jitter.ms is unset."},
	{Name: "log.flush.scheduler.interval.ms", Family: "log.flush.interval.ms", Topic: true, check: intRange(64, -1<<63, 1<<63-1),
		Doc: "Flush interval read when log.flush.interval.ms is unset."},
}

var (
	keyList []Key
	keyMap  map[string]*Key
)

func init() {
	keyList = append(keyList, brokerKeys...)
	keyList = append(keyList, topicFallbacks...)
	for _, d := range topic.Defs() {
		if d.BrokerKey == "" {
			continue
		}
		k := Key{Name: d.BrokerKey, Topic: true, check: d.Validate,
			Doc: "Default " + d.Name + " of topics without an override (Kafka's default: " + d.Default + "). " + d.Doc}
		switch d.BrokerKey {
		case "log.retention.ms", "log.roll.ms", "log.roll.jitter.ms", "log.flush.interval.ms":
			k.Family = d.BrokerKey
		}
		if d.BrokerKey == "log.retention.ms" {
			// Kafka reads any negative broker retention as "no limit".
			k.check = intRange(64, -1<<63, 1<<63-1)
		}
		keyList = append(keyList, k)
	}
	slices.SortFunc(keyList, func(a, b Key) int { return strings.Compare(a.Name, b.Name) })
	keyMap = make(map[string]*Key, len(keyList))
	for i := range keyList {
		keyMap[keyList[i].Name] = &keyList[i]
	}
}

// Keys returns every key brokerd reads, sorted by name.
func Keys() []Key { return slices.Clone(keyList) }

// Lookup returns the key called name; an alias (broker.id, log.dir) returns
// the key it stands for.
func Lookup(name string) (Key, bool) {
	if a, ok := aliases[name]; ok {
		name = a
	}
	k, ok := keyMap[name]
	if !ok {
		return Key{}, false
	}
	return *k, true
}

// Aliases returns Kafka's older key names and the key each one sets.
func Aliases() map[string]string {
	out := make(map[string]string, len(aliases))
	for k, v := range aliases {
		out[k] = v
	}
	return out
}

// Check validates a value for the key.
func (k Key) Check(v string) error {
	if k.check == nil {
		return nil
	}
	return k.check(v)
}
