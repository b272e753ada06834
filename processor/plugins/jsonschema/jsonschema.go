package jsonschema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/brokerd/brokerd/processor"
)

func init() {
	processor.Register("json_schema", New)
}

// New builds the plugin from its config: {"schema": SCHEMA}.
func New(config map[string]any) (processor.Operator, error) {
	raw, ok := config["schema"]
	if !ok {
		return nil, errors.New("json_schema: config needs schema")
	}
	for k := range config {
		if k != "schema" {
			return nil, fmt.Errorf("json_schema: unknown config key %q", k)
		}
	}
	s, err := compile(normalize(raw), "#")
	if err != nil {
		return nil, fmt.Errorf("json_schema: %w", err)
	}
	return &validator{schema: s}, nil
}

// normalize turns YAML's map[string]any and numbers into JSON's shapes.
func normalize(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = normalize(e)
		}
		return out
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[fmt.Sprint(k)] = normalize(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normalize(e)
		}
		return out
	case int:
		return float64(x)
	case int64:
		return float64(x)
	case uint64:
		return float64(x)
	}
	return v
}

type schema struct {
	types                []string
	enum                 []any
	constant             any
	hasConst             bool
	properties           map[string]*schema
	required             []string
	noAdditional         bool
	additional           *schema
	items                *schema
	minItems, maxItems   *int
	minimum, maximum     *float64
	exclMin, exclMax     *float64
	minLength, maxLength *int
	pattern              *regexp.Regexp
}

var known = map[string]bool{
	"type": true, "enum": true, "const": true, "properties": true, "required": true,
	"additionalProperties": true, "items": true, "minItems": true, "maxItems": true,
	"minimum": true, "maximum": true, "exclusiveMinimum": true, "exclusiveMaximum": true,
	"minLength": true, "maxLength": true, "pattern": true,
	// Annotations, which do not validate.
	"$schema": true, "$id": true, "title": true, "description": true, "default": true, "examples": true,
}

var types = map[string]bool{"object": true, "array": true, "string": true, "number": true, "integer": true, "boolean": true, "null": true}

func compile(v any, at string) (*schema, error) {
	if b, ok := v.(bool); ok {
		if b {
			return &schema{}, nil
		}
		return &schema{types: []string{}}, nil // false: nothing is valid
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s: a schema must be an object or a boolean", at)
	}
	s := &schema{}
	for k, e := range m {
		if !known[k] {
			return nil, fmt.Errorf("%s: keyword %q is not supported", at, k)
		}
		var err error
		switch k {
		case "type":
			s.types, err = stringList(e)
			for _, t := range s.types {
				if !types[t] {
					err = fmt.Errorf("unknown type %q", t)
				}
			}
		case "enum":
			list, ok := e.([]any)
			if !ok {
				err = errors.New("enum must be an array")
			}
			s.enum = list
		case "const":
			s.constant, s.hasConst = e, true
		case "required":
			s.required, err = stringList(e)
		case "properties":
			props, ok := e.(map[string]any)
			if !ok {
				err = errors.New("properties must be an object")
				break
			}
			s.properties = map[string]*schema{}
			for name, ps := range props {
				if s.properties[name], err = compile(ps, at+"/properties/"+name); err != nil {
					return nil, err
				}
			}
		case "additionalProperties":
			if b, ok := e.(bool); ok {
				s.noAdditional = !b
			} else if s.additional, err = compile(e, at+"/additionalProperties"); err != nil {
				return nil, err
			}
		case "items":
			if s.items, err = compile(e, at+"/items"); err != nil {
				return nil, err
			}
		case "minItems":
			s.minItems, err = count(e)
		case "maxItems":
			s.maxItems, err = count(e)
		case "minLength":
			s.minLength, err = count(e)
		case "maxLength":
			s.maxLength, err = count(e)
		case "minimum":
			s.minimum, err = number(e)
		case "maximum":
			s.maximum, err = number(e)
		case "exclusiveMinimum":
			s.exclMin, err = number(e)
		case "exclusiveMaximum":
			s.exclMax, err = number(e)
		case "pattern":
			str, ok := e.(string)
			if !ok {
				err = errors.New("pattern must be a string")
				break
			}
			s.pattern, err = regexp.Compile(str)
		}
		if err != nil {
			return nil, fmt.Errorf("%s/%s: %w", at, k, err)
		}
	}
	return s, nil
}

func stringList(v any) ([]string, error) {
	if s, ok := v.(string); ok {
		return []string{s}, nil
	}
	list, ok := v.([]any)
	if !ok {
		return nil, errors.New("want a string or an array of strings")
	}
	out := make([]string, 0, len(list))
	for _, e := range list {
		s, ok := e.(string)
		if !ok {
			return nil, errors.New("want an array of strings")
		}
		out = append(out, s)
	}
	return out, nil
}

func count(v any) (*int, error) {
	f, ok := v.(float64)
	if !ok || f < 0 || f != math.Trunc(f) {
		return nil, errors.New("want a non-negative integer")
	}
	n := int(f)
	return &n, nil
}

func number(v any) (*float64, error) {
	f, ok := v.(float64)
	if !ok {
		return nil, errors.New("want a number")
	}
	return &f, nil
}

type validator struct{ schema *schema }

// Process passes a record whose value validates; otherwise the error says
// where and why (and the record goes to the dead-letter topic).
func (v *validator) Process(_ processor.State, r processor.Record, emit func(processor.Record)) error {
	dec := json.NewDecoder(bytes.NewReader(r.Value))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return fmt.Errorf("json_schema: the value is not JSON: %w", err)
	}
	if dec.More() {
		return errors.New("json_schema: the value holds more than one JSON value")
	}
	if err := v.schema.validate(doc, "$"); err != nil {
		return fmt.Errorf("json_schema: %w", err)
	}
	emit(r)
	return nil
}

func typeOf(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case json.Number:
		if _, err := x.Int64(); err == nil || !strings.ContainsAny(x.String(), ".eE") {
			return "integer"
		}
		if f, err := x.Float64(); err == nil && f == math.Trunc(f) {
			return "integer"
		}
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "unknown"
}

func (s *schema) validate(v any, at string) error {
	t := typeOf(v)
	if s.types != nil {
		ok := false
		for _, want := range s.types {
			ok = ok || want == t || (want == "number" && t == "integer")
		}
		if !ok {
			return fmt.Errorf("%s: %s, want %s", at, t, strings.Join(s.types, " or "))
		}
	}
	if s.hasConst && !equal(v, s.constant) {
		return fmt.Errorf("%s: not the constant %v", at, s.constant)
	}
	if s.enum != nil {
		ok := false
		for _, e := range s.enum {
			ok = ok || equal(v, e)
		}
		if !ok {
			return fmt.Errorf("%s: not one of %v", at, s.enum)
		}
	}
	switch x := v.(type) {
	case json.Number:
		f, _ := x.Float64()
		switch {
		case s.minimum != nil && f < *s.minimum:
			return fmt.Errorf("%s: %v < minimum %v", at, f, *s.minimum)
		case s.maximum != nil && f > *s.maximum:
			return fmt.Errorf("%s: %v > maximum %v", at, f, *s.maximum)
		case s.exclMin != nil && f <= *s.exclMin:
			return fmt.Errorf("%s: %v <= exclusiveMinimum %v", at, f, *s.exclMin)
		case s.exclMax != nil && f >= *s.exclMax:
			return fmt.Errorf("%s: %v >= exclusiveMaximum %v", at, f, *s.exclMax)
		}
	case string:
		n := utf8.RuneCountInString(x)
		switch {
		case s.minLength != nil && n < *s.minLength:
			return fmt.Errorf("%s: %d characters < minLength %d", at, n, *s.minLength)
		case s.maxLength != nil && n > *s.maxLength:
			return fmt.Errorf("%s: %d characters > maxLength %d", at, n, *s.maxLength)
		case s.pattern != nil && !s.pattern.MatchString(x):
			return fmt.Errorf("%s: does not match %s", at, s.pattern)
		}
	case []any:
		switch {
		case s.minItems != nil && len(x) < *s.minItems:
			return fmt.Errorf("%s: %d items < minItems %d", at, len(x), *s.minItems)
		case s.maxItems != nil && len(x) > *s.maxItems:
			return fmt.Errorf("%s: %d items > maxItems %d", at, len(x), *s.maxItems)
		}
		if s.items != nil {
			for i, e := range x {
				if err := s.items.validate(e, fmt.Sprintf("%s[%d]", at, i)); err != nil {
					return err
				}
			}
		}
	case map[string]any:
		for _, name := range s.required {
			if _, ok := x[name]; !ok {
				return fmt.Errorf("%s: required property %q is missing", at, name)
			}
		}
		names := make([]string, 0, len(x))
		for name := range x {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			ps, declared := s.properties[name]
			switch {
			case declared:
				if err := ps.validate(x[name], at+"."+name); err != nil {
					return err
				}
			case s.noAdditional:
				return fmt.Errorf("%s: property %q is not allowed", at, name)
			case s.additional != nil:
				if err := s.additional.validate(x[name], at+"."+name); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// equal compares a decoded JSON value with a schema's value.
func equal(v, want any) bool {
	if n, ok := v.(json.Number); ok {
		f, err := n.Float64()
		w, isNum := want.(float64)
		return err == nil && isNum && f == w
	}
	return reflect.DeepEqual(normalizeDoc(v), want)
}

func normalizeDoc(v any) any {
	switch x := v.(type) {
	case json.Number:
		f, _ := x.Float64()
		return f
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normalizeDoc(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = normalizeDoc(e)
		}
		return out
	}
	return v
}
