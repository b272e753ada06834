package topic

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Type is the type of a config value. The numbers are the ConfigType codes
// of Kafka's DescribeConfigs response (version 3 and later), so a broker can
// send them unchanged.
type Type int

// Config value types.
const (
	TypeUnknown Type = 0
	Boolean     Type = 1 // "true" or "false", any case
	String      Type = 2
	Int         Type = 3 // 32-bit signed decimal
	Long        Type = 5 // 64-bit signed decimal
	Double      Type = 6 // 64-bit float
	List        Type = 7 // comma-separated strings
)

// String returns the type's name as Kafka's documentation spells it.
func (t Type) String() string {
	switch t {
	case Boolean:
		return "boolean"
	case String:
		return "string"
	case Int:
		return "int"
	case Long:
		return "long"
	case Double:
		return "double"
	case List:
		return "list"
	}
	return "unknown"
}

// Parsers. Like Kafka's ConfigDef, each trims surrounding white space before
// parsing.

func parseBool(v string) (bool, error) {
	switch s := strings.TrimSpace(v); {
	case strings.EqualFold(s, "true"):
		return true, nil
	case strings.EqualFold(s, "false"):
		return false, nil
	}
	return false, errors.New("not a boolean: want true or false")
}

func parseInt(v string, bits int) (int64, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, bits)
	if err != nil {
		if errors.Is(err, strconv.ErrRange) {
			return 0, fmt.Errorf("out of range for a %d-bit integer", bits)
		}
		return 0, errors.New("not an integer")
	}
	return n, nil
}

func parseDouble(v string) (float64, error) {
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || math.IsNaN(f) {
		return 0, errors.New("not a number")
	}
	return f, nil
}

// parseList splits a list value on commas, trimming each element. An empty
// value is an empty list.
func parseList(v string) []string {
	s := strings.TrimSpace(v)
	if s == "" {
		return nil
	}
	parts := strings.Split(s, ",")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}
