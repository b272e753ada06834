// Package acl owns brokerd's access control model, Kafka's: a binding
// grants or denies a principal, from a host, an operation on a resource
// pattern (a literal name, the wildcard "*", or a prefix). It holds the
// types (with Kafka's wire numbers), the validation of a new binding and of
// a filter, the filter matching that DescribeAcls and DeleteAcls use, and
// the Index that authorizes a request: deny wins, Read, Write, Delete and
// Alter imply Describe, AlterConfigs implies DescribeConfigs, All matches
// every operation.
//
// It knows nothing of raft or of the Kafka wire: raftstore replicates
// bindings as data and builds an Index from them; broker asks the Index.
package acl
