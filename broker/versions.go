package broker

import (
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// apiRange is an advertised version range.
type apiRange struct{ min, max int16 }

// supported is every API brokerd implements, with the versions it answers.
// Only what is here is advertised in ApiVersions; everything else closes the
// connection.
var supported = map[int16]apiRange{
	int16(kmsg.Produce):                 {3, 11},
	int16(kmsg.Fetch):                   {4, 16},
	int16(kmsg.ListOffsets):             {0, 8},
	int16(kmsg.Metadata):                {0, 12},
	int16(kmsg.ApiVersions):             {0, 4},
	int16(kmsg.CreateTopics):            {0, 7},
	int16(kmsg.DeleteTopics):            {0, 6},
	int16(kmsg.InitProducerID):          {0, 4},
	int16(kmsg.OffsetForLeaderEpoch):    {0, 4},
	int16(kmsg.DescribeConfigs):         {0, 4},
	int16(kmsg.AlterConfigs):            {0, 2},
	int16(kmsg.DescribeLogDirs):         {0, 4},
	int16(kmsg.CreatePartitions):        {0, 3},
	int16(kmsg.DeleteRecords):           {0, 2},
	int16(kmsg.IncrementalAlterConfigs): {0, 1},
	int16(kmsg.DescribeCluster):         {0, 1},
	int16(kmsg.FindCoordinator):         {0, 5},
	int16(kmsg.JoinGroup):               {0, 9},
	int16(kmsg.SyncGroup):               {0, 5},
	int16(kmsg.Heartbeat):               {0, 4},
	int16(kmsg.LeaveGroup):              {0, 5},
	int16(kmsg.OffsetCommit):            {0, 9},
	int16(kmsg.OffsetFetch):             {0, 9},
	int16(kmsg.DescribeGroups):          {0, 5},
	int16(kmsg.ListGroups):              {0, 4},
	int16(kmsg.DeleteGroups):            {0, 2},
	int16(kmsg.OffsetDelete):            {0, 0},
	// Transactions (version 1 semantics: no KIP-890 part 2 epoch bump).
	int16(kmsg.AddPartitionsToTxn):   {0, 3},
	int16(kmsg.AddOffsetsToTxn):      {0, 3},
	int16(kmsg.EndTxn):               {0, 3},
	int16(kmsg.TxnOffsetCommit):      {0, 3},
	int16(kmsg.DescribeProducers):    {0, 0},
	int16(kmsg.DescribeTransactions): {0, 0},
	int16(kmsg.ListTransactions):     {0, 1},
	// SASL (KIP-43, KIP-152, KIP-368): answered by broker/wire itself,
	// advertised on every listener as Kafka does; a PLAINTEXT or SSL
	// listener answers a handshake with ILLEGAL_SASL_STATE.
	int16(kmsg.SASLHandshake):    {0, 1},
	int16(kmsg.SASLAuthenticate): {0, 2},
	// SCRAM credentials (KIP-554).
	int16(kmsg.DescribeUserSCRAMCredentials): {0, 0},
	int16(kmsg.AlterUserSCRAMCredentials):    {0, 0},
	// ACLs (acls.go).
	int16(kmsg.DescribeACLs): {0, 3},
	int16(kmsg.CreateACLs):   {0, 3},
	int16(kmsg.DeleteACLs):   {0, 3},
	// Client quotas (quotas.go, quota_enforce.go).
	int16(kmsg.DescribeClientQuotas): {0, 1},
	int16(kmsg.AlterClientQuotas):    {0, 1},
}

// Versions reports the advertised range of an API key (a wire.Versions).
func (b *Broker) Versions(key int16) (int16, int16, bool) {
	r, ok := supported[key]
	return r.min, r.max, ok
}

func (b *Broker) apiVersions(r *kmsg.ApiVersionsRequest) kmsg.Response {
	resp := kmsg.NewPtrApiVersionsResponse()
	for _, k := range sortedKeys() {
		v := supported[k]
		resp.ApiKeys = append(resp.ApiKeys, kmsg.ApiVersionsResponseApiKey{ApiKey: k, MinVersion: v.min, MaxVersion: v.max})
	}
	return resp
}

func sortedKeys() []int16 { return slices.Sorted(maps.Keys(supported)) }
