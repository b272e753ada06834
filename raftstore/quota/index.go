package quota

import (
	"cmp"
	"slices"
	"sync/atomic"
)

// Entry is one entity with its quotas.
type Entry struct {
	Entity Entity `json:"entity"`
	Values Values `json:"values"`
}

// Index is an immutable view of the cluster's quotas, safe for any number
// of readers.
type Index struct {
	m   map[Entity]Values
	all []Entry // sorted (compareEntity)
	has [NumKeys]bool
	gen uint64
}

// generations numbers the indexes made, so that a cache can tell a newer
// index from the one it resolved against without keeping that one alive.
var generations atomic.Uint64

// NewIndex indexes entries; an entry without values is left out.
func NewIndex(entries map[Entity]Values) *Index {
	x := &Index{m: make(map[Entity]Values, len(entries)), gen: generations.Add(1)}
	for e, v := range entries {
		if v.Empty() {
			continue
		}
		x.m[e] = v
		x.all = append(x.all, Entry{Entity: e, Values: v})
		for k, q := range v {
			if q != 0 {
				x.has[k] = true
			}
		}
	}
	slices.SortFunc(x.all, func(a, b Entry) int { return compareEntity(a.Entity, b.Entity) })
	return x
}

func compareEntity(a, b Entity) int {
	return cmp.Or(cmp.Compare(a.User.Kind, b.User.Kind), cmp.Compare(a.User.Name, b.User.Name),
		cmp.Compare(a.ClientID.Kind, b.ClientID.Kind), cmp.Compare(a.ClientID.Name, b.ClientID.Name))
}

// Len is the number of entities with a quota.
func (x *Index) Len() int {
	if x == nil {
		return 0
	}
	return len(x.all)
}

// Gen is the index's generation: distinct for every index made in this
// process, and 0 for a nil index.
func (x *Index) Gen() uint64 {
	if x == nil {
		return 0
	}
	return x.gen
}

// Has reports whether any entity sets k: when none does, no client is
// limited on k and nothing need be measured.
func (x *Index) Has(k Key) bool { return x != nil && x.has[k] }

// All returns every entry, sorted. The caller must not change it.
func (x *Index) All() []Entry {
	if x == nil {
		return nil
	}
	return x.all
}

// Get returns an entity's quotas.
func (x *Index) Get(e Entity) (Values, bool) {
	if x == nil {
		return Values{}, false
	}
	v, ok := x.m[e]
	return v, ok
}

// Match is the quota that applies to a client for one key: the limit, and
// the names of what shares it (Kafka's metric tags): clients whose matches
// carry the same User and ClientID share one rate.
type Match struct {
	Limit    float64
	User     string
	ClientID string
	// Level is the precedence level (0-7, see Resolve) of the entity that
	// set the limit.
	Level uint8
}

// Resolve finds the quota on k for a client with user name user (the
// principal's name: "alice" for User:alice, "ANONYMOUS" without
// authentication) and client id clientID, in Kafka's order of precedence
// (ClientQuotaManager, docs "Quota Configuration"):
//
//  1. user and client id
//  2. user and the default client id
//  3. user
//  4. the default user and client id
//  5. the default user and the default client id
//  6. the default user
//  7. client id
//  8. the default client id
//
// The first entity with a value for k wins; ok is false when none has one.
// It does not allocate.
func (x *Index) Resolve(k Key, user, clientID string) (m Match, ok bool) {
	if !x.Has(k) {
		return m, false
	}
	u, c := Named(user), Named(clientID)
	levels := [...]struct {
		e          Entity
		tagU, tagC bool
	}{
		{Entity{u, c}, true, true},
		{Entity{u, Default}, true, true},
		{Entity{User: u}, true, false},
		{Entity{Default, c}, true, true},
		{Entity{Default, Default}, true, true},
		{Entity{User: Default}, true, false},
		{Entity{ClientID: c}, false, true},
		{Entity{ClientID: Default}, false, true},
	}
	for i, l := range levels {
		v, found := x.m[l.e]
		if !found || v[k] == 0 {
			continue
		}
		m.Limit, m.Level = v[k], uint8(i)
		if l.tagU {
			m.User = user
		}
		if l.tagC {
			m.ClientID = clientID
		}
		return m, true
	}
	return m, false
}

// Levels is the number of precedence levels Resolve tries (Match.Level).
const Levels = 8
