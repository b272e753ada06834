package cli

// The processor plugins every brokerd has. A custom build adds its own by
// importing them too (examples/custom-brokerd).
import _ "github.com/brokerd/brokerd/processor/plugins/jsonschema"
