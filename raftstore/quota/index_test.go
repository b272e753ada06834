package quota

import (
	"errors"
	"testing"
)

func ent(user, client Part) Entity { return Entity{User: user, ClientID: client} }

var none = Part{}

func TestResolvePrecedence(t *testing.T) {
	// Each level of Kafka's order, with every lower level also set: the
	// highest present wins, and the match names what shares it.
	levels := []struct {
		e          Entity
		user, cli  string // the match's tags
		limitValue float64
	}{
		{ent(Named("alice"), Named("app")), "alice", "app", 1},
		{ent(Named("alice"), Default), "alice", "app", 2},
		{ent(Named("alice"), none), "alice", "", 3},
		{ent(Default, Named("app")), "alice", "app", 4},
		{ent(Default, Default), "alice", "app", 5},
		{ent(Default, none), "alice", "", 6},
		{ent(none, Named("app")), "", "app", 7},
		{ent(none, Default), "", "app", 8},
	}
	for top := range levels {
		m := map[Entity]Values{}
		for _, l := range levels[top:] {
			m[l.e] = Values{ProducerByteRate: l.limitValue}
		}
		x := NewIndex(m)
		got, ok := x.Resolve(ProducerByteRate, "alice", "app")
		want := levels[top]
		if !ok || got.Limit != want.limitValue || got.User != want.user || got.ClientID != want.cli {
			t.Errorf("from level %d: got %+v %v, want limit %v tags %q/%q", top+1, got, ok, want.limitValue, want.user, want.cli)
		}
	}
}

func TestResolveCases(t *testing.T) {
	x := NewIndex(map[Entity]Values{
		ent(Named("alice"), none):       {ProducerByteRate: 100},
		ent(none, Named("app")):         {ConsumerByteRate: 50, ProducerByteRate: 70},
		ent(Default, none):              {RequestPercentage: 25},
		ent(Named("bob"), Named("app")): {ConsumerByteRate: 10},
		ent(Named("carol"), Default):    {ProducerByteRate: 5},
	})
	cases := []struct {
		name         string
		key          Key
		user, client string
		ok           bool
		want         Match
	}{
		{"user quota", ProducerByteRate, "alice", "app", true, Match{100, "alice", "", 2}},
		{"per key: consumer falls to client id", ConsumerByteRate, "alice", "app", true, Match{50, "", "app", 6}},
		{"user+client exact", ConsumerByteRate, "bob", "app", true, Match{10, "bob", "app", 0}},
		{"bob other client: client level", ConsumerByteRate, "bob", "other", false, Match{}},
		{"default user request quota", RequestPercentage, "ANONYMOUS", "x", true, Match{25, "ANONYMOUS", "", 5}},
		{"user with default client", ProducerByteRate, "carol", "any", true, Match{5, "carol", "any", 1}},
		{"nothing", ProducerByteRate, "dave", "other", false, Match{}},
	}
	for _, c := range cases {
		got, ok := x.Resolve(c.key, c.user, c.client)
		if ok != c.ok || got != c.want {
			t.Errorf("%s: got %+v %v, want %+v %v", c.name, got, ok, c.want, c.ok)
		}
	}
	// An empty client id is a client id like any other: the default
	// client id's quota applies to it (Kafka sanitizes "" the same way),
	// and it shares no rate with a named client.
	y := NewIndex(map[Entity]Values{
		ent(none, Default):      {ProducerByteRate: 9},
		ent(none, Named("app")): {ProducerByteRate: 70},
	})
	if got, ok := y.Resolve(ProducerByteRate, "dave", ""); !ok || got != (Match{9, "", "", 7}) {
		t.Errorf("empty client id: got %+v %v, want the default client id's quota", got, ok)
	}
	if n := testing.AllocsPerRun(100, func() { x.Resolve(ProducerByteRate, "alice", "app") }); n != 0 {
		t.Errorf("Resolve allocates %v times", n)
	}
}

func sp(s string) *string { return &s }

func TestEntityFromWire(t *testing.T) {
	cases := []struct {
		parts []WirePart
		want  Entity
		err   error
	}{
		{[]WirePart{{TypeUser, sp("a")}}, ent(Named("a"), none), nil},
		{[]WirePart{{TypeClientID, nil}, {TypeUser, nil}}, ent(Default, Default), nil},
		{nil, Entity{}, ErrInvalid},
		{[]WirePart{{TypeUser, sp("a")}, {TypeUser, sp("b")}}, Entity{}, ErrInvalid},
		{[]WirePart{{"group", sp("a")}}, Entity{}, ErrInvalid},
		{[]WirePart{{TypeIP, nil}}, Entity{}, ErrInvalid},
		{[]WirePart{{TypeUser, sp("")}}, Entity{}, ErrInvalid},
		{[]WirePart{{TypeClientID, sp(string(make([]byte, MaxNameBytes+1)))}}, Entity{}, ErrInvalid},
	}
	for i, c := range cases {
		got, err := EntityFromWire(c.parts)
		if c.err != nil {
			if !errors.Is(err, c.err) {
				t.Errorf("%d: err %v, want %v", i, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%d: %+v %v", i, got, err)
		}
	}
}

func TestAlterationApply(t *testing.T) {
	e := ent(Named("u"), none)
	cases := []struct {
		ops  []Op
		cur  Values
		want Values
		ok   bool
	}{
		{[]Op{{Key: "producer_byte_rate", Value: 1024}}, Values{}, Values{1024, 0, 0}, true},
		{[]Op{{Key: "request_percentage", Value: 12.5}}, Values{}, Values{0, 0, 12.5}, true},
		{[]Op{{Key: "consumer_byte_rate", Remove: true}}, Values{1, 2, 3}, Values{1, 0, 3}, true},
		{[]Op{{Key: "producer_byte_rate", Value: 10.5}}, Values{}, Values{}, false},
		{[]Op{{Key: "producer_byte_rate", Value: 0}}, Values{}, Values{}, false},
		{[]Op{{Key: "producer_byte_rate", Value: -1}}, Values{}, Values{}, false},
		{[]Op{{Key: "connection_creation_rate", Value: 1}}, Values{}, Values{}, false},
		{[]Op{{Key: "producer_byte_rate", Value: 1}, {Key: "producer_byte_rate", Remove: true}}, Values{}, Values{}, false},
		{[]Op{{Key: "producer_byte_rate", Value: 1e300}}, Values{}, Values{}, false},
	}
	for i, c := range cases {
		a := Alteration{Entity: e, Ops: c.ops}
		got, err := a.Apply(c.cur)
		if c.ok != (err == nil) || (c.ok && got != c.want) {
			t.Errorf("%d: %v %v", i, got, err)
		}
		if !c.ok && !errors.Is(err, ErrInvalid) {
			t.Errorf("%d: error %v is not ErrInvalid", i, err)
		}
	}
}

func TestFilter(t *testing.T) {
	x := NewIndex(map[Entity]Values{
		ent(Named("alice"), none):     {1, 0, 0},
		ent(Named("alice"), Default):  {2, 0, 0},
		ent(Default, none):            {3, 0, 0},
		ent(none, Named("app")):       {4, 0, 0},
		ent(Named("bob"), Named("x")): {5, 0, 0},
	})
	cases := []struct {
		name   string
		comps  []Component
		strict bool
		want   int
		err    error
	}{
		{"all", nil, false, 5, nil},
		{"strict nothing", nil, true, 0, nil},
		{"user alice", []Component{{TypeUser, MatchExact, sp("alice")}}, false, 2, nil},
		{"user alice strict", []Component{{TypeUser, MatchExact, sp("alice")}}, true, 1, nil},
		{"default user", []Component{{TypeUser, MatchDefault, nil}}, false, 1, nil},
		{"any user", []Component{{TypeUser, MatchSpecified, nil}}, false, 4, nil},
		{"any user and client", []Component{{TypeUser, MatchSpecified, nil}, {TypeClientID, MatchSpecified, nil}}, false, 2, nil},
		{"ip", []Component{{TypeIP, MatchSpecified, nil}}, false, 0, nil},
		{"empty type", []Component{{"", MatchSpecified, nil}}, false, 0, ErrInvalid},
		{"twice", []Component{{TypeUser, MatchSpecified, nil}, {TypeUser, MatchDefault, nil}}, false, 0, ErrInvalid},
		{"exact without name", []Component{{TypeUser, MatchExact, nil}}, false, 0, ErrInvalid},
		{"default with name", []Component{{TypeUser, MatchDefault, sp("a")}}, false, 0, ErrInvalid},
		{"bad match", []Component{{TypeUser, 7, nil}}, false, 0, ErrInvalid},
		{"unknown type", []Component{{"group", MatchSpecified, nil}}, false, 0, ErrUnsupportedType},
		{"ip with user", []Component{{TypeIP, MatchSpecified, nil}, {TypeUser, MatchSpecified, nil}}, false, 0, ErrInvalid},
	}
	for _, c := range cases {
		f, err := NewFilter(c.comps, c.strict)
		if c.err != nil {
			if !errors.Is(err, c.err) {
				t.Errorf("%s: err %v, want %v", c.name, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if got := x.Describe(f); len(got) != c.want {
			t.Errorf("%s: %d entries, want %d: %+v", c.name, len(got), c.want, got)
		}
	}
}
