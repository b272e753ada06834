package config

import (
	"strings"
)

// EnvPrefix starts every environment variable brokerd reads.
const EnvPrefix = "BROKERD_"

// EnvName is the environment variable that sets key, by Confluent's Docker
// convention: "." becomes "_", "_" becomes "__", "-" becomes "___", upper
// case, with EnvPrefix in front. log.dirs is BROKERD_LOG_DIRS.
func EnvName(key string) string {
	var b strings.Builder
	b.WriteString(EnvPrefix)
	for _, c := range key {
		switch c {
		case '.':
			b.WriteByte('_')
		case '_':
			b.WriteString("__")
		case '-':
			b.WriteString("___")
		default:
			b.WriteString(strings.ToUpper(string(c)))
		}
	}
	return b.String()
}

// keyFromEnv inverts EnvName for a variable name without the prefix.
func keyFromEnv(name string) string {
	var b strings.Builder
	for i := 0; i < len(name); {
		if name[i] != '_' {
			b.WriteString(strings.ToLower(name[i : i+1]))
			i++
			continue
		}
		n := 0
		for i+n < len(name) && name[i+n] == '_' {
			n++
		}
		i += n
		// Runs longer than three read as "-" or "_" followed by dots,
		// greedily from the left, as Confluent's image does.
		for ; n >= 3; n -= 3 {
			b.WriteByte('-')
		}
		if n == 2 {
			b.WriteByte('_')
		} else if n == 1 {
			b.WriteByte('.')
		}
	}
	return b.String()
}

// envInput is one BROKERD_ variable resolved to a key.
type envInput struct {
	name, key, value string
	known            bool
}

// fromEnv picks the BROKERD_ variables out of environ ("NAME=value"
// strings). A variable that maps to no key comes back with known false. For
// brokerd's own keys the repeated prefix may be dropped: BROKERD_RAFT_PEERS
// sets brokerd.raft.peers.
func fromEnv(environ []string) []envInput {
	var out []envInput
	for _, kv := range environ {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || !strings.HasPrefix(name, EnvPrefix) || len(name) == len(EnvPrefix) {
			continue
		}
		key := keyFromEnv(name[len(EnvPrefix):])
		in := envInput{name: name, key: key, value: value}
		if _, ok := Lookup(key); ok {
			in.known = true
		} else if _, ok := Lookup("brokerd." + key); ok {
			in.key, in.known = "brokerd."+key, true
		}
		out = append(out, in)
	}
	return out
}
