package quota

import (
	"errors"
	"fmt"
	"strconv"
)

// Entity types, as Kafka names them on the wire.
const (
	TypeUser     = "user"
	TypeClientID = "client-id"
	TypeIP       = "ip"
)

// Bounds of the replicated quota state.
const (
	// MaxNameBytes bounds a user or client id name.
	MaxNameBytes = 1024
	// MaxEntities bounds the quota entities the cluster holds.
	MaxEntities = 10000
	// MaxPerCommand bounds the alterations of one request.
	MaxPerCommand = 1000
)

// Errors. ErrInvalid and ErrTooMany answer INVALID_REQUEST;
// ErrUnsupportedType answers UNSUPPORTED_VERSION in DescribeClientQuotas,
// as Kafka does.
var (
	ErrInvalid         = errors.New("invalid client quota")
	ErrTooMany         = errors.New("too many client quota entities")
	ErrUnsupportedType = errors.New("unsupported client quota entity type")
)

// PartKind says whether an entity has a component of a type, and whether
// it is the default (Kafka's <default>, a null name on the wire).
type PartKind uint8

// Part kinds.
const (
	PartNone PartKind = iota
	PartDefault
	PartNamed
)

// Part is one component of an entity.
type Part struct {
	Kind PartKind `json:"k,omitempty"`
	Name string   `json:"n,omitempty"`
}

// Named returns a named part.
func Named(name string) Part { return Part{Kind: PartNamed, Name: name} }

// Default is the default part (<default>).
var Default = Part{Kind: PartDefault}

// NamePtr returns the part's wire name: nil for the default.
func (p Part) NamePtr() *string {
	if p.Kind != PartNamed {
		return nil
	}
	s := p.Name
	return &s
}

func (p Part) String() string {
	switch p.Kind {
	case PartDefault:
		return "<default>"
	case PartNamed:
		return p.Name
	}
	return ""
}

// Entity is what a quota is set on: a user, a client id, or both. It is
// comparable, and used as a map key.
type Entity struct {
	User     Part `json:"user"`
	ClientID Part `json:"client_id"`
}

func (e Entity) String() string {
	switch {
	case e.User.Kind != PartNone && e.ClientID.Kind != PartNone:
		return fmt.Sprintf("user=%s,client-id=%s", e.User, e.ClientID)
	case e.User.Kind != PartNone:
		return "user=" + e.User.String()
	case e.ClientID.Kind != PartNone:
		return "client-id=" + e.ClientID.String()
	}
	return "<empty entity>"
}

// Validate checks an entity as Kafka's controller does: at least one
// component, no empty names, and (brokerd's bound) no name longer than
// MaxNameBytes.
func (e Entity) Validate() error {
	if e.User.Kind == PartNone && e.ClientID.Kind == PartNone {
		return fmt.Errorf("%w: invalid empty client quota entity", ErrInvalid)
	}
	for _, p := range []struct {
		typ  string
		part Part
	}{{TypeUser, e.User}, {TypeClientID, e.ClientID}} {
		switch p.part.Kind {
		case PartNone, PartDefault:
			if p.part.Name != "" {
				return fmt.Errorf("%w: a %s without a name carries one", ErrInvalid, p.typ)
			}
		case PartNamed:
			if p.part.Name == "" {
				return fmt.Errorf("%w: empty %s not supported", ErrInvalid, p.typ)
			}
			if len(p.part.Name) > MaxNameBytes {
				return fmt.Errorf("%w: %s name of %d bytes (at most %d)", ErrInvalid, p.typ, len(p.part.Name), MaxNameBytes)
			}
		default:
			return fmt.Errorf("%w: %s component of kind %d", ErrInvalid, p.typ, p.part.Kind)
		}
	}
	return nil
}

// StoreKey is the entity's key in the state DB: unique, with the names
// length-prefixed so that no two entities share one.
func (e Entity) StoreKey() []byte {
	k := make([]byte, 0, 8+len(e.User.Name)+len(e.ClientID.Name))
	k = append(k, byte(e.User.Kind), byte(e.ClientID.Kind))
	k = strconv.AppendInt(k, int64(len(e.User.Name)), 10)
	k = append(k, ':')
	k = append(k, e.User.Name...)
	return append(k, e.ClientID.Name...)
}

// WirePart is one entity component as the Kafka APIs carry it: a type and
// a nullable name (null is the default).
type WirePart struct {
	Type string
	Name *string
}

// EntityFromWire builds an entity from its wire components, refusing
// what Kafka's controller refuses with INVALID_REQUEST: an empty entity, a
// type twice, an unknown type, an empty name. An ip entity (Kafka's
// connection_creation_rate) is not supported by brokerd.
func EntityFromWire(parts []WirePart) (Entity, error) {
	var e Entity
	if len(parts) == 0 {
		return e, fmt.Errorf("%w: invalid empty client quota entity", ErrInvalid)
	}
	for _, p := range parts {
		var dst *Part
		switch p.Type {
		case TypeUser:
			dst = &e.User
		case TypeClientID:
			dst = &e.ClientID
		case TypeIP:
			return e, fmt.Errorf("%w: ip quotas (connection_creation_rate) are not supported", ErrInvalid)
		default:
			return e, fmt.Errorf("%w: unhandled client quota entity type: %.64q", ErrInvalid, p.Type)
		}
		if dst.Kind != PartNone {
			return e, fmt.Errorf("%w: invalid client quota entity, duplicate entity entry %s", ErrInvalid, p.Type)
		}
		if p.Name == nil {
			*dst = Default
		} else {
			*dst = Named(*p.Name)
		}
	}
	return e, e.Validate()
}

// Wire lists the entity's components, user first.
func (e Entity) Wire() []WirePart {
	var out []WirePart
	if e.User.Kind != PartNone {
		out = append(out, WirePart{Type: TypeUser, Name: e.User.NamePtr()})
	}
	if e.ClientID.Kind != PartNone {
		out = append(out, WirePart{Type: TypeClientID, Name: e.ClientID.NamePtr()})
	}
	return out
}
