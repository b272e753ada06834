// Command custom-brokerd is brokerd with one more processor plugin,
// "upper", which upper-cases record values: a spec stage "plugin: upper".
package main

import (
	"bytes"

	"github.com/brokerd/brokerd/cli"
	"github.com/brokerd/brokerd/processor"
)

type upper struct{}

func (upper) Process(_ processor.State, r processor.Record, emit func(processor.Record)) error {
	r.Value = bytes.ToUpper(r.Value)
	emit(r)
	return nil
}

func main() {
	processor.Register("upper", func(map[string]any) (processor.Operator, error) { return upper{}, nil })
	cli.Main()
}
