// Package e2e holds end-to-end tests of brokerd: real Kafka clients
// (franz-go, sarama, kafka-go) against an in-process node, crash and restart
// tests against a brokerd subprocess, and raw-protocol tests that send
// malformed frames. The package has no non-test code.
//
// Set BROKERD_LONG_TESTS=1 for the longer fault variants, and
// BROKERD_E2E_VERBOSE=1 to stream broker logs to stderr instead of printing
// them only for failed tests.
package e2e
