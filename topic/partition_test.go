package topic

import (
	"errors"
	"math"
	"strings"
	"testing"
)

func TestPartitionDir(t *testing.T) {
	tests := []struct {
		topic string
		p     int32
		want  string
	}{
		{"orders", 0, "orders-0"},
		{"orders", 12, "orders-12"},
		{"my-topic", 3, "my-topic-3"},
		{"trailing-", 1, "trailing--1"},
		{"a.b_c", math.MaxInt32, "a.b_c-2147483647"},
	}
	for _, tt := range tests {
		if got := PartitionDir(tt.topic, tt.p); got != tt.want {
			t.Errorf("PartitionDir(%q, %d) = %q, want %q", tt.topic, tt.p, got, tt.want)
		}
		topic, p, err := ParsePartitionDir(tt.want)
		if err != nil || topic != tt.topic || p != tt.p {
			t.Errorf("ParsePartitionDir(%q) = %q, %d, %v; want %q, %d", tt.want, topic, p, err, tt.topic, tt.p)
		}
	}
}

func TestParsePartitionDirErrors(t *testing.T) {
	tests := []struct {
		dir     string
		nameErr bool
	}{
		{dir: "orders"},
		{dir: "orders-"},
		{dir: "-0", nameErr: true},
		{dir: "orders-x"},
		{dir: "orders-+1"},
		{dir: "orders-01"},
		{dir: "orders-2147483648"},
		{dir: "orders-1.delete"},
		{dir: "bad topic-0", nameErr: true},
		{dir: "..-0", nameErr: true},
		{dir: strings.Repeat("a", 250) + "-0", nameErr: true},
	}
	for _, tt := range tests {
		_, _, err := ParsePartitionDir(tt.dir)
		if err == nil {
			t.Errorf("ParsePartitionDir(%q) = nil error", tt.dir)
			continue
		}
		if got := errors.Is(err, ErrInvalidName); got != tt.nameErr {
			t.Errorf("ParsePartitionDir(%q) = %v; wraps ErrInvalidName = %v, want %v", tt.dir, err, got, tt.nameErr)
		}
	}
}
