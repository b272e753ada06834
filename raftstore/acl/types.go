package acl

import "strings"

// ResourceType is Kafka's resource type, with its wire number.
type ResourceType int8

// Resource types (Kafka's numbers). DelegationToken is not served.
const (
	ResourceUnknown         ResourceType = 0
	ResourceAny             ResourceType = 1
	ResourceTopic           ResourceType = 2
	ResourceGroup           ResourceType = 3
	ResourceCluster         ResourceType = 4
	ResourceTransactionalID ResourceType = 5
	ResourceDelegationToken ResourceType = 6
	ResourceUser            ResourceType = 7
)

// PatternType is how a binding's resource name matches.
type PatternType int8

// Pattern types (Kafka's numbers). Any and Match occur only in filters.
const (
	PatternUnknown  PatternType = 0
	PatternAny      PatternType = 1
	PatternMatch    PatternType = 2
	PatternLiteral  PatternType = 3
	PatternPrefixed PatternType = 4
)

// Operation is what a binding allows or denies.
type Operation int8

// Operations (Kafka's numbers). Any occurs only in filters.
const (
	OpUnknown         Operation = 0
	OpAny             Operation = 1
	OpAll             Operation = 2
	OpRead            Operation = 3
	OpWrite           Operation = 4
	OpCreate          Operation = 5
	OpDelete          Operation = 6
	OpAlter           Operation = 7
	OpDescribe        Operation = 8
	OpClusterAction   Operation = 9
	OpDescribeConfigs Operation = 10
	OpAlterConfigs    Operation = 11
	OpIdempotentWrite Operation = 12
	OpCreateTokens    Operation = 13
	OpDescribeTokens  Operation = 14
)

// Permission is allow or deny.
type Permission int8

// Permissions (Kafka's numbers). Any occurs only in filters.
const (
	PermUnknown Permission = 0
	PermAny     Permission = 1
	PermDeny    Permission = 2
	PermAllow   Permission = 3
)

// Wildcards: the literal resource name matching every resource of its
// type, the principal matching every user, the host matching every host.
const (
	WildcardResource  = "*"
	WildcardPrincipal = "User:*"
	WildcardHost      = "*"
	// ClusterName is the one name of the Cluster resource.
	ClusterName = "kafka-cluster"
)

// Binding is one ACL: Kafka's AclBinding.
type Binding struct {
	ResourceType ResourceType `json:"rt"`
	ResourceName string       `json:"rn"`
	PatternType  PatternType  `json:"pt"`
	Principal    string       `json:"p"`
	Host         string       `json:"h"`
	Operation    Operation    `json:"op"`
	Permission   Permission   `json:"perm"`
}

// Filter selects bindings: Kafka's AclBindingFilter. A nil name,
// principal or host matches any.
type Filter struct {
	ResourceType ResourceType `json:"rt"`
	ResourceName *string      `json:"rn,omitempty"`
	PatternType  PatternType  `json:"pt"`
	Principal    *string      `json:"p,omitempty"`
	Host         *string      `json:"h,omitempty"`
	Operation    Operation    `json:"op"`
	Permission   Permission   `json:"perm"`
}

// Key is a binding's identity: two bindings with the same key are the
// same ACL (creating it again changes nothing).
func (b Binding) Key() string {
	var k strings.Builder
	k.Grow(16 + len(b.ResourceName) + len(b.Principal) + len(b.Host))
	k.Write([]byte{byte(b.ResourceType), byte(b.PatternType), byte(b.Operation), byte(b.Permission)})
	for _, s := range [...]string{b.ResourceName, b.Principal, b.Host} {
		k.Write([]byte{byte(len(s) >> 24), byte(len(s) >> 16), byte(len(s) >> 8), byte(len(s))})
		k.WriteString(s)
	}
	return k.String()
}

var resourceNames = map[ResourceType]string{
	ResourceUnknown: "Unknown", ResourceAny: "Any", ResourceTopic: "Topic", ResourceGroup: "Group",
	ResourceCluster: "Cluster", ResourceTransactionalID: "TransactionalId",
	ResourceDelegationToken: "DelegationToken", ResourceUser: "User",
}

func (t ResourceType) String() string {
	if s, ok := resourceNames[t]; ok {
		return s
	}
	return "Unknown"
}

var opNames = map[Operation]string{
	OpUnknown: "Unknown", OpAny: "Any", OpAll: "All", OpRead: "Read", OpWrite: "Write",
	OpCreate: "Create", OpDelete: "Delete", OpAlter: "Alter", OpDescribe: "Describe",
	OpClusterAction: "ClusterAction", OpDescribeConfigs: "DescribeConfigs",
	OpAlterConfigs: "AlterConfigs", OpIdempotentWrite: "IdempotentWrite",
	OpCreateTokens: "CreateTokens", OpDescribeTokens: "DescribeTokens",
}

func (o Operation) String() string {
	if s, ok := opNames[o]; ok {
		return s
	}
	return "Unknown"
}
