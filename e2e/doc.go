// Package e2e holds end-to-end tests of brokerd: real Kafka clients
// (franz-go, sarama, kafka-go) against an in-process node, crash and restart
// tests against a brokerd subprocess, and raw-protocol tests that send
// malformed and pipelined frames. The package has no non-test code.
//
// Environment:
//   - BROKERD_BIN: a prebuilt brokerd for the subprocess tests (otherwise
//     the tests build ./cmd/brokerd once per test binary).
//   - BROKERD_LONG_TESTS=1: longer fault variants (more kill -9 rounds at a
//     higher produce rate, more garbage frames, longer sustained produce).
//   - BROKERD_E2E_VERBOSE=1: stream broker and client logs to stderr at
//     debug level; otherwise they are printed only for failed tests.
package e2e
