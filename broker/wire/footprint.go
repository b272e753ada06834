package wire

import (
	"reflect"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// decodeAmplification is how many bytes a non-Produce frame is charged per
// frame byte until it is decoded. kmsg bounds each array by the bytes left,
// but in flexible versions every struct may carry a tagged-field section,
// and kmsg keeps unknown tags in a map per struct: three wire bytes
// (count 1, tag, size 0) cost a map of about 300 bytes. Crafted frames reach
// about 100 allocated bytes per frame byte (see the amplification fuzz
// test), so a 1 MiB frame is charged 128 MiB while it decodes.
const decodeAmplification = 128

// Rough heap costs of a map[uint32][]byte as kmsg's Tags allocates it:
// a small map is one group; a large one's tables and the ones it grew
// out of come to about 105 bytes an entry, up to 160 for a thousand.
const (
	mapBaseBytes  = 320
	mapEntryBytes = 160
)

// footprint estimates the heap bytes a decoded request holds beyond its
// frame: the request struct, slices, copied strings and tag maps. Byte
// slices are not counted, since kmsg points them into the frame.
func footprint(msg kmsg.Request) int64 {
	v := reflect.ValueOf(msg)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return 0
	}
	p := planFor(v.Type())
	return p.walk(v, 0)
}

// maxFootprintDepth stops the walk on an unexpectedly deep value; kmsg
// requests nest a few levels at most.
const maxFootprintDepth = 32

// walkPlan says, for one type, where heap memory can hang off a value: it
// is built once per request type so the walk does no type analysis.
type walkPlan struct {
	kind     reflect.Kind
	elemSize int64       // pointer and slice element size
	elem     *walkPlan   // pointer, slice and array element; nil if it holds no heap
	fields   []fieldPlan // struct fields that hold heap
}

type fieldPlan struct {
	index int
	plan  *walkPlan
}

func (p *walkPlan) walk(v reflect.Value, depth int) int64 {
	if depth > maxFootprintDepth {
		return 0
	}
	switch p.kind {
	case reflect.String:
		return int64(v.Len())
	case reflect.Pointer:
		if v.IsNil() {
			return 0
		}
		n := p.elemSize
		if p.elem != nil {
			n += p.elem.walk(v.Elem(), depth+1)
		}
		return n
	case reflect.Struct:
		var n int64
		for _, f := range p.fields {
			n += f.plan.walk(v.Field(f.index), depth+1)
		}
		return n
	case reflect.Array:
		var n int64
		for i := range v.Len() {
			n += p.elem.walk(v.Index(i), depth+1)
		}
		return n
	case reflect.Slice:
		n := int64(v.Cap()) * p.elemSize
		if p.elem != nil {
			for i := range v.Len() {
				n += p.elem.walk(v.Index(i), depth+1)
			}
		}
		return n
	case reflect.Map:
		if v.IsNil() {
			return 0
		}
		return mapBaseBytes + int64(v.Len())*mapEntryBytes
	}
	return 0
}

// plans caches a walk plan per request type.
var plans sync.Map // reflect.Type -> *walkPlan

func planFor(t reflect.Type) *walkPlan {
	if p, ok := plans.Load(t); ok {
		return p.(*walkPlan)
	}
	p := buildPlan(t, map[reflect.Type]*walkPlan{})
	plans.Store(t, p)
	return p
}

// buildPlan returns t's plan, or nil if a value of type t holds no heap
// memory that footprint counts. building holds the plans under
// construction, so that a type referring to itself terminates.
func buildPlan(t reflect.Type, building map[reflect.Type]*walkPlan) *walkPlan {
	if p, ok := building[t]; ok {
		return p
	}
	p := &walkPlan{kind: t.Kind()}
	building[t] = p
	switch t.Kind() {
	case reflect.String, reflect.Map:
		return p
	case reflect.Pointer:
		p.elemSize = int64(t.Elem().Size())
		p.elem = buildPlan(t.Elem(), building)
		return p
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			break // points into the frame
		}
		p.elemSize = int64(t.Elem().Size())
		p.elem = buildPlan(t.Elem(), building)
		return p
	case reflect.Array:
		if p.elem = buildPlan(t.Elem(), building); p.elem != nil {
			return p
		}
	case reflect.Struct:
		for i := range t.NumField() {
			if fp := buildPlan(t.Field(i).Type, building); fp != nil {
				p.fields = append(p.fields, fieldPlan{index: i, plan: fp})
			}
		}
		if len(p.fields) > 0 {
			return p
		}
	}
	building[t] = nil
	return nil
}
