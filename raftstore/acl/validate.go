package acl

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Bounds on bindings, checked when a binding is created (and again where
// raft applies it, so that a replica never holds more).
const (
	// MaxFieldBytes bounds a resource name, principal or host.
	MaxFieldBytes = 16 << 10
	// MaxBindings bounds the bindings a cluster holds.
	MaxBindings = 100_000
	// MaxPerCommand bounds the bindings one create, or the filters one
	// delete, carries.
	MaxPerCommand = 1000
	// MaxCommandBytes bounds one create or delete as raft carries it
	// (encoded): 1,000 bindings of 16 KiB fields would otherwise make a
	// 48 MiB raft entry.
	MaxCommandBytes = 1 << 20
	// MaxStateBytes bounds the bindings a cluster holds by their Size
	// summed.
	MaxStateBytes = 64 << 20
)

// Size is what a binding counts against MaxStateBytes: its strings and
// its four small fields.
func (b Binding) Size() int {
	return len(b.ResourceName) + len(b.Principal) + len(b.Host) + 4
}

// ErrInvalid is a binding or filter that Kafka refuses (INVALID_REQUEST).
var ErrInvalid = errors.New("invalid ACL")

// ErrTooMany is a create that would hold more than MaxBindings.
var ErrTooMany = errors.New("too many ACLs")

// ErrTooLarge is a command over MaxCommandBytes, or a create that would
// hold more than MaxStateBytes.
var ErrTooLarge = errors.New("ACLs too large")

// Validate checks a binding to be created, as Kafka's controller does:
// concrete resource type, pattern, operation and permission; a principal
// of the form Type:name; a non-empty host and name; the Cluster resource
// named kafka-cluster.
func (b Binding) Validate() error {
	switch b.ResourceType {
	case ResourceTopic, ResourceGroup, ResourceCluster, ResourceTransactionalID, ResourceUser:
	default:
		return fmt.Errorf("%w: resource type %d is not one a binding may name", ErrInvalid, b.ResourceType)
	}
	if b.PatternType != PatternLiteral && b.PatternType != PatternPrefixed {
		return fmt.Errorf("%w: pattern type %d (a binding is literal or prefixed)", ErrInvalid, b.PatternType)
	}
	if b.Operation < OpAll || b.Operation > OpIdempotentWrite {
		return fmt.Errorf("%w: operation %d", ErrInvalid, b.Operation)
	}
	if b.Permission != PermAllow && b.Permission != PermDeny {
		return fmt.Errorf("%w: permission %d", ErrInvalid, b.Permission)
	}
	if b.ResourceName == "" {
		return fmt.Errorf("%w: empty resource name", ErrInvalid)
	}
	if b.ResourceType == ResourceCluster && b.ResourceName != ClusterName {
		return fmt.Errorf("%w: the cluster resource is named %s, not %q", ErrInvalid, ClusterName, b.ResourceName)
	}
	if typ, name, ok := strings.Cut(b.Principal, ":"); !ok || typ == "" || name == "" {
		return fmt.Errorf("%w: principal %q is not of the form User:name", ErrInvalid, b.Principal)
	}
	if b.Host == "" {
		return fmt.Errorf("%w: empty host (use * for every host)", ErrInvalid)
	}
	for _, f := range []string{b.ResourceName, b.Principal, b.Host} {
		if len(f) > MaxFieldBytes {
			return fmt.Errorf("%w: a field of %d bytes (at most %d)", ErrInvalid, len(f), MaxFieldBytes)
		}
		// JSON (the raft command, the state DB) would silently replace
		// the invalid bytes: the binding kept would not be the one made.
		if !utf8.ValidString(f) {
			return fmt.Errorf("%w: %q is not valid UTF-8", ErrInvalid, f)
		}
	}
	return nil
}

// Validate checks a filter as Kafka does: no unknown field, and bounded
// strings.
func (f Filter) Validate() error {
	if f.ResourceType == ResourceUnknown || f.ResourceType > ResourceUser || f.ResourceType < 0 {
		return fmt.Errorf("%w: filter resource type %d", ErrInvalid, f.ResourceType)
	}
	if f.PatternType == PatternUnknown || f.PatternType > PatternPrefixed || f.PatternType < 0 {
		return fmt.Errorf("%w: filter pattern type %d", ErrInvalid, f.PatternType)
	}
	if f.Operation == OpUnknown || f.Operation > OpDescribeTokens || f.Operation < 0 {
		return fmt.Errorf("%w: filter operation %d", ErrInvalid, f.Operation)
	}
	if f.Permission == PermUnknown || f.Permission > PermAllow || f.Permission < 0 {
		return fmt.Errorf("%w: filter permission %d", ErrInvalid, f.Permission)
	}
	for _, s := range []*string{f.ResourceName, f.Principal, f.Host} {
		if s != nil && len(*s) > MaxFieldBytes {
			return fmt.Errorf("%w: a filter field of %d bytes (at most %d)", ErrInvalid, len(*s), MaxFieldBytes)
		}
		if s != nil && !utf8.ValidString(*s) {
			return fmt.Errorf("%w: filter field %q is not valid UTF-8", ErrInvalid, *s)
		}
	}
	return nil
}

// Matches reports whether the filter selects b, with Kafka's rules: a
// concrete pattern type matches that type with the exact name; Any
// matches every pattern type with the exact name; Match matches the
// bindings that apply to the named resource (the literal name, the
// wildcard, and every prefix of the name).
func (f Filter) Matches(b Binding) bool {
	if f.ResourceType != ResourceAny && f.ResourceType != b.ResourceType {
		return false
	}
	if f.PatternType != PatternAny && f.PatternType != PatternMatch && f.PatternType != b.PatternType {
		return false
	}
	if f.ResourceName != nil {
		name := *f.ResourceName
		if f.PatternType == PatternMatch {
			switch b.PatternType {
			case PatternLiteral:
				if b.ResourceName != name && b.ResourceName != WildcardResource {
					return false
				}
			case PatternPrefixed:
				if !strings.HasPrefix(name, b.ResourceName) {
					return false
				}
			default:
				return false
			}
		} else if b.ResourceName != name {
			return false
		}
	}
	if f.Principal != nil && *f.Principal != b.Principal {
		return false
	}
	if f.Host != nil && *f.Host != b.Host {
		return false
	}
	if f.Operation != OpAny && f.Operation != b.Operation {
		return false
	}
	return f.Permission == PermAny || f.Permission == b.Permission
}
