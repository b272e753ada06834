package processor

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/vm"
)

// Expressions (github.com/expr-lang/expr) see a record as:
//
//	key        string
//	value      the parsed JSON when the value parses as JSON, else a string
//	headers    map of header key to value (strings)
//	timestamp  ms
//	partition, offset
//	topic

// exprEnv is the expression environment of one record. value is typed
// any, so expressions may reach into parsed JSON freely; a wrong guess is
// an error at run time, and the record goes to the dead-letter topic.
type exprEnv struct {
	Key       string            `expr:"key"`
	Value     any               `expr:"value"`
	Headers   map[string]string `expr:"headers"`
	Timestamp int64             `expr:"timestamp"`
	Partition int               `expr:"partition"`
	Offset    int64             `expr:"offset"`
	Topic     string            `expr:"topic"`
}

// noHeaders is the headers of every record without any: one shared map,
// which expressions only read.
var noHeaders = map[string]string{}

func env(r *Record) exprEnv {
	var value any
	if r.parsedFrom != nil && len(r.parsedFrom) == len(r.Value) && len(r.Value) > 0 && &r.parsedFrom[0] == &r.Value[0] {
		value = r.parsed
	} else {
		value = string(r.Value)
		if len(r.Value) > 0 {
			if v, err := parseJSON(r.Value); err == nil {
				value = v
			}
			r.parsed, r.parsedFrom = value, r.Value
		}
	}
	headers := noHeaders
	if len(r.Headers) > 0 {
		headers = make(map[string]string, len(r.Headers))
		for _, h := range r.Headers {
			headers[h.Key] = string(h.Value)
		}
	}
	return exprEnv{Key: string(r.Key), Value: value, Headers: headers, Timestamp: r.Timestamp,
		Partition: int(r.Partition), Offset: r.Offset, Topic: r.Topic}
}

// program is a compiled expression with the VM that runs it, reused from
// record to record (a stage runs on one goroutine).
type program struct {
	prog *vm.Program
	vm   vm.VM
}

func compileExpr(code string, opts ...expr.Option) (*program, error) {
	p, err := expr.Compile(code, append([]expr.Option{expr.Env(exprEnv{})}, opts...)...)
	if err != nil {
		return nil, err
	}
	return &program{prog: p}, nil
}

// run evaluates the expression over env.
func (p *program) run(env exprEnv) (any, error) { return p.vm.Run(p.prog, env) }

// toBytes renders an expression's result as a key or value: a string or
// bytes as they are, nil as null, anything else as JSON.
func toBytes(v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return nil, nil
	case string:
		return []byte(x), nil
	case []byte:
		return x, nil
	}
	b, err := appendJSON(nil, v)
	if err != nil {
		return nil, fmt.Errorf("encode result: %w", err)
	}
	return b, nil
}

// toFloat reads an expression's result as a number.
func toFloat(v any) (float64, error) {
	switch x := v.(type) {
	case int:
		return float64(x), nil
	case int64:
		return float64(x), nil
	case float64:
		return x, nil
	case float32:
		return float64(x), nil
	case string:
		f, err := strconv.ParseFloat(x, 64)
		if err != nil {
			return 0, fmt.Errorf("not a number: %q", x)
		}
		return f, nil
	case json.Number:
		return x.Float64()
	}
	return 0, fmt.Errorf("not a number: %v (%T)", v, v)
}
