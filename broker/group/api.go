package group

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Protocol is one protocol a member supports (an assignor, for consumers)
// with its metadata (the subscription).
type Protocol struct {
	Name     string `json:"name"`
	Metadata []byte `json:"metadata,omitempty"`
}

// JoinRequest is a JoinGroup request, version differences resolved.
type JoinRequest struct {
	Group      string
	MemberID   string
	InstanceID *string
	ClientID   string
	ClientHost string
	// SessionTimeout and RebalanceTimeout are the member's; JoinGroup v0
	// has no rebalance timeout and uses the session timeout for both.
	SessionTimeout   time.Duration
	RebalanceTimeout time.Duration
	ProtocolType     string
	Protocols        []Protocol
	// RequireKnownMemberID is set from v4 on for dynamic members: a first
	// join gets MEMBER_ID_REQUIRED and a member id to join with (KIP-394).
	RequireKnownMemberID bool
	// SupportSkipAssignment is set from v9 on: a static leader that rejoins
	// without changes is told to skip the assignment (KIP-814).
	SupportSkipAssignment bool
}

// MemberMetadata is what the leader learns about each member.
type MemberMetadata struct {
	MemberID   string
	InstanceID *string
	Metadata   []byte
}

// JoinResult answers a JoinRequest. On error, MemberID is the request's (or,
// with MEMBER_ID_REQUIRED, the id to join with) and Generation is -1.
type JoinResult struct {
	Err            *kerr.Error
	MemberID       string
	Generation     int32
	ProtocolType   *string
	Protocol       *string
	LeaderID       string
	SkipAssignment bool
	// Members is set for the leader only: every member's metadata for the
	// chosen protocol.
	Members []MemberMetadata
}

// SyncRequest is a SyncGroup request. Assignments are read only from the
// leader, in CompletingRebalance.
type SyncRequest struct {
	Group        string
	Generation   int32
	MemberID     string
	InstanceID   *string
	ProtocolType *string
	Protocol     *string
	Assignments  []Assignment
}

// Assignment is one member's part of the leader's plan.
type Assignment struct {
	MemberID   string
	Assignment []byte
}

// SyncResult answers a SyncRequest.
type SyncResult struct {
	Err          *kerr.Error
	ProtocolType *string
	Protocol     *string
	Assignment   []byte
}

// HeartbeatRequest is a Heartbeat request.
type HeartbeatRequest struct {
	Group      string
	Generation int32
	MemberID   string
	InstanceID *string
}

// LeavingMember is one member of a LeaveGroup request: by member id, or by
// instance id alone (an administrative removal of a static member).
type LeavingMember struct {
	MemberID   string
	InstanceID *string
}

// Description is DescribeGroups' view of a group.
type Description struct {
	State        string
	ProtocolType string
	Protocol     string
	Members      []MemberDescription
}

// MemberDescription describes one member. Metadata and Assignment are set
// only in the Stable state, as Kafka does.
type MemberDescription struct {
	MemberID   string
	InstanceID *string
	ClientID   string
	ClientHost string
	Metadata   []byte
	Assignment []byte
}

// Listing is ListGroups' view of a group.
type Listing struct {
	Group        string
	ProtocolType string
	State        string
}
