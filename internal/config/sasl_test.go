package config

import (
	"strings"
	"testing"
)

// TestBootstrapUsersErrorsHidePasswords: a password with a comma splits
// its entry; the error repeats no field of it. It failed when the error
// quoted the user and mechanism of the malformed entry ("horse",
// "battery": the password's pieces).
func TestBootstrapUsersErrorsHidePasswords(t *testing.T) {
	for _, v := range []string{
		"admin:SCRAM-SHA-256:Tr0ub4dor,horse:battery:staple",
		"admin:SCRAM-SHA-256:Tr0ub4dor,horse",
		"horse:battery",
	} {
		_, err := ParseBootstrapUsers(v)
		if err == nil {
			t.Fatalf("%q accepted", v)
		}
		for _, secret := range []string{"horse", "battery", "staple", "Tr0ub4dor"} {
			if strings.Contains(err.Error(), secret) {
				t.Errorf("%q: error %q holds %q", v, err, secret)
			}
		}
	}
}
