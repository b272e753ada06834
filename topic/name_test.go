package topic

import (
	"errors"
	"strings"
	"testing"
)

func TestValidateName(t *testing.T) {
	tests := []struct {
		name string
		in   string
		ok   bool
	}{
		{"simple", "orders", true},
		{"all legal chars", "Az09._-", true},
		{"single char", "a", true},
		{"dash only", "-", true},
		{"dots inside", "a..b", true},
		{"three dots", "...", true},
		{"underscore prefix", "__consumer_offsets", true},
		{"249 chars", strings.Repeat("a", 249), true},
		{"empty", "", false},
		{"dot", ".", false},
		{"dot dot", "..", false},
		{"250 chars", strings.Repeat("a", 250), false},
		{"space", "a b", false},
		{"slash", "a/b", false},
		{"backslash", `a\b`, false},
		{"colon", "a:b", false},
		{"plus", "a+b", false},
		{"NUL", "a\x00b", false},
		{"newline", "a\n", false},
		{"unicode letter", "tópico", false},
		{"unicode digit", "a٣", false},
		{"emoji", "🙂", false},
		{"invalid utf8", "a\xffb", false},
		{"unicode within 249 bytes", strings.Repeat("é", 100), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateName(tt.in)
			if tt.ok && err != nil {
				t.Fatalf("ValidateName(%q) = %v, want nil", tt.in, err)
			}
			if !tt.ok {
				if err == nil {
					t.Fatalf("ValidateName(%q) = nil, want an error", tt.in)
				}
				if !errors.Is(err, ErrInvalidName) {
					t.Fatalf("ValidateName(%q) = %v, want it to wrap ErrInvalidName", tt.in, err)
				}
			}
		})
	}
}

func TestValidateNameMessageBounded(t *testing.T) {
	long := strings.Repeat("x", 10_000)
	err := ValidateName(long)
	if err == nil || len(err.Error()) > 200 {
		t.Fatalf("error for a 10000-byte name: %v", err)
	}
	bad := strings.Repeat("x", 200) + "!"
	if err := ValidateName(bad); err == nil || len(err.Error()) > 250 {
		t.Fatalf("error for a long name with a bad char: %v", err)
	}
}

func TestCollidesWith(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{"a.b", "a_b", true},
		{"a_b", "a.b", true},
		{"a.b_c", "a_b.c", true},
		{"a.b", "a.b", false},
		{"a_b", "a_b", false},
		{"ab", "a_b", false},
		{"a-b", "a_b", false},
		{"a.b", "a.c", false},
		{"", "", false},
	}
	for _, tt := range tests {
		if got := CollidesWith(tt.a, tt.b); got != tt.want {
			t.Errorf("CollidesWith(%q, %q) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
		if CollidesWith(tt.a, tt.b) && CollisionKey(tt.a) != CollisionKey(tt.b) {
			t.Errorf("CollisionKey disagrees with CollidesWith for %q, %q", tt.a, tt.b)
		}
	}
}

func TestHasCollisionChars(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{"plain", false},
		{"with-dash", false},
		{"with.dot", true},
		{"with_underscore", true},
	}
	for _, tt := range tests {
		if got := HasCollisionChars(tt.in); got != tt.want {
			t.Errorf("HasCollisionChars(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestIsInternal(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{"__consumer_offsets", true},
		{"__transaction_state", true},
		{"__consumer_offsets2", false},
		{"orders", false},
	}
	for _, tt := range tests {
		if got := IsInternal(tt.in); got != tt.want {
			t.Errorf("IsInternal(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}
