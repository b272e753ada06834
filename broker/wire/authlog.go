package wire

import (
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Failed authentications are the client's doing, and their reasons carry
// what the client sent (a mechanism name, a parse error quoting a SCRAM
// message): each string is cut to maxLoggedString bytes, and they are
// logged at Info at most once per authFailLogEvery, with how many failed
// since; the others at Debug. Passwords never reach these reasons: PLAIN
// failures name no part of the token.
const (
	maxLoggedString  = 128
	authFailLogEvery = 10 * time.Second
)

// logAuthFailure logs a failed authentication.
func (c *conn) logAuthFailure(reason error) {
	mech, why := truncateForLog(c.auth.mech), truncateForLog(reason.Error())
	s := c.srv
	s.mu.Lock()
	s.authFailed++
	now := time.Now()
	if now.Sub(s.authFailAt) < authFailLogEvery {
		s.mu.Unlock()
		c.logger().Debug("wire: SASL authentication failed", "mechanism", mech, "reason", why)
		return
	}
	n := s.authFailed
	s.authFailAt, s.authFailed = now, 0
	s.mu.Unlock()
	c.logger().Info("wire: SASL authentication failed", "mechanism", mech, "reason", why, "failed_since_last_log", n)
}

// truncateForLog cuts s to maxLoggedString bytes, on a rune boundary,
// marking the cut.
func truncateForLog(s string) string {
	if len(s) <= maxLoggedString {
		return s
	}
	cut := maxLoggedString
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strings.ToValidUTF8(s[:cut], "?") + "...(" + strconv.Itoa(len(s)) + " bytes)"
}
