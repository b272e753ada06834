package topic

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
)

// NewID returns a random topic ID: a version 4 UUID, as Kafka's topic IDs
// are. It is never all zeros (Kafka's "no ID"), and like Kafka it never
// starts with '-' in its string form, so it cannot be mistaken for a
// command-line flag.
func NewID() [16]byte {
	for {
		var id [16]byte
		rand.Read(id[:])          // never fails: crypto/rand aborts the process instead
		id[6] = id[6]&0x0f | 0x40 // version 4
		id[8] = id[8]&0x3f | 0x80 // RFC 4122 variant
		if id[0]>>2 != 62 {       // 62 is '-' in the URL-safe base64 alphabet
			return id
		}
	}
}

// FormatID returns the string form Kafka uses for a topic ID: URL-safe
// base64 without padding, 22 characters.
func FormatID(id [16]byte) string {
	return base64.RawURLEncoding.EncodeToString(id[:])
}

// ParseID parses the string form made by FormatID. Trailing '=' padding is
// accepted, as Kafka accepts it.
func ParseID(s string) ([16]byte, error) {
	var id [16]byte
	trimmed := s
	for len(trimmed) > 0 && trimmed[len(trimmed)-1] == '=' {
		trimmed = trimmed[:len(trimmed)-1]
	}
	if base64.RawURLEncoding.DecodedLen(len(trimmed)) != len(id) {
		return id, fmt.Errorf("topic ID %s: want 22 base64 characters", quote(s))
	}
	if _, err := base64.RawURLEncoding.Decode(id[:], []byte(trimmed)); err != nil {
		return [16]byte{}, fmt.Errorf("topic ID %s: %w", quote(s), err)
	}
	return id, nil
}
