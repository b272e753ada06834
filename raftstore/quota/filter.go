package quota

import "fmt"

// MatchType is a DescribeClientQuotas component's match type.
type MatchType int8

// Kafka's match types.
const (
	MatchExact     MatchType = 0 // the named entity
	MatchDefault   MatchType = 1 // the default entity
	MatchSpecified MatchType = 2 // any entity with a component of the type
)

// Component is one DescribeClientQuotas filter component.
type Component struct {
	Type  string
	Match MatchType
	Name  *string
}

// filterPart is what one component asks of one entity component.
type filterPart struct {
	on    bool // the type is filtered
	exact bool // an exact (or default) match on want
	want  Part
}

// Filter is a validated DescribeClientQuotas filter.
type Filter struct {
	user, client filterPart
	ip           bool
	n            int
	strict       bool
}

// NewFilter validates components as Kafka's ClientQuotasImage.describe
// does: an empty or repeated type, a match string with DEFAULT or
// SPECIFIED, none with EXACT, an unknown match type, or ip combined with
// user or client-id are ErrInvalid; an unknown type is ErrUnsupportedType.
func NewFilter(components []Component, strict bool) (Filter, error) {
	f := Filter{strict: strict, n: len(components)}
	for _, c := range components {
		var dst *filterPart
		switch c.Type {
		case "":
			return f, fmt.Errorf("%w: invalid empty entity type", ErrInvalid)
		case TypeUser:
			dst = &f.user
		case TypeClientID:
			dst = &f.client
		case TypeIP:
			if f.ip {
				return f, fmt.Errorf("%w: entity type ip cannot appear more than once in the filter", ErrInvalid)
			}
			f.ip = true
			dst = &filterPart{}
		default:
			return f, fmt.Errorf("%w: %.64q", ErrUnsupportedType, c.Type)
		}
		if dst.on {
			return f, fmt.Errorf("%w: entity type %s cannot appear more than once in the filter", ErrInvalid, c.Type)
		}
		dst.on = true
		switch c.Match {
		case MatchExact:
			if c.Name == nil {
				return f, fmt.Errorf("%w: request specified MATCH_TYPE_EXACT, but set match string to null", ErrInvalid)
			}
			dst.exact, dst.want = true, Named(*c.Name)
		case MatchDefault:
			if c.Name != nil {
				return f, fmt.Errorf("%w: request specified MATCH_TYPE_DEFAULT, but also specified a match string", ErrInvalid)
			}
			dst.exact, dst.want = true, Default
		case MatchSpecified:
			if c.Name != nil {
				return f, fmt.Errorf("%w: request specified MATCH_TYPE_SPECIFIED, but also specified a match string", ErrInvalid)
			}
		default:
			return f, fmt.Errorf("%w: unknown match type %d", ErrInvalid, c.Match)
		}
	}
	if f.ip && (f.user.on || f.client.on) {
		return f, fmt.Errorf("%w: invalid entity filter component combination: ip should not be used with user or client-id", ErrInvalid)
	}
	return f, nil
}

func (p filterPart) matches(have Part) bool {
	if !p.on {
		return true
	}
	if have.Kind == PartNone {
		return false
	}
	return !p.exact || have == p.want
}

// Matches reports whether an entity passes the filter. An ip filter
// matches nothing: brokerd holds no ip quotas.
func (f Filter) Matches(e Entity) bool {
	if f.ip {
		return false
	}
	if f.strict {
		n := 0
		if e.User.Kind != PartNone {
			n++
		}
		if e.ClientID.Kind != PartNone {
			n++
		}
		if n != f.n {
			return false
		}
	}
	return f.user.matches(e.User) && f.client.matches(e.ClientID)
}

// Describe returns the entries that pass f, sorted.
func (x *Index) Describe(f Filter) []Entry {
	var out []Entry
	for _, e := range x.All() {
		if f.Matches(e.Entity) {
			out = append(out, e)
		}
	}
	return out
}
