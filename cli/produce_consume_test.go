package cli

import (
	"bufio"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/brokerd/brokerd/clients/consume"
	"github.com/brokerd/brokerd/clients/produce"
)

func TestProduceConsume(t *testing.T) {
	b := broker(t)
	mustRun(t, "", "topic", "create", "clicks", "-p", "2", "-b", b)
	out := mustRun(t, "u1:home\nu2:cart\nu1:pay\nnokey\n", "produce", "clicks", "-k", ":", "-H", "src=web", "-H", "v=2", "-b", b)
	if !strings.Contains(out, "produced 4 records") {
		t.Errorf("produce: %q", out)
	}

	out = mustRun(t, "", "consume", "clicks", "-e", "-f", `%t|%k|%v|%h|%K|%S\n`, "-b", b)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	sort.Strings(lines)
	want := []string{"clicks||nokey|src=web,v=2|-1|5", "clicks|u1|home|src=web,v=2|2|4", "clicks|u1|pay|src=web,v=2|2|3", "clicks|u2|cart|src=web,v=2|2|4"}
	sort.Strings(want)
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("consume -e -f:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}

	// Keyed records of one key land in one partition, in order.
	out = mustRun(t, "", "consume", "clicks", "-e", "-f", `%k %p %o %v\n`, "-b", b)
	var p1, p2 string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(l)
		if len(f) == 4 && f[0] == "u1" {
			if f[3] == "home" {
				p1 = f[1]
			} else {
				p2 = f[1]
			}
		}
	}
	if p1 == "" || p1 != p2 {
		t.Errorf("key u1 went to partitions %q and %q:\n%s", p1, p2, out)
	}

	// JSON, one object per line.
	out = mustRun(t, "", "consume", "clicks", "-n", "4", "--format", "json", "-b", b)
	sc := bufio.NewScanner(strings.NewReader(out))
	n := 0
	for sc.Scan() {
		var r consume.JSONRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("json line %q: %v", sc.Text(), err)
		}
		if r.Topic != "clicks" || r.Value == nil || len(r.Headers) != 2 || r.Timestamp <= 0 {
			t.Errorf("json record %+v", r)
		}
		n++
	}
	if n != 4 {
		t.Errorf("-n 4 printed %d records", n)
	}
}

func TestConsumeOffsets(t *testing.T) {
	b := broker(t)
	mustRun(t, "", "topic", "create", "seq", "-p", "1", "-b", b)
	var in strings.Builder
	for i := range 10 {
		fmt.Fprintf(&in, "v%d\n", i)
	}
	out := mustRun(t, in.String(), "produce", "seq", "--format", "json", "-b", b)
	var res produce.Result
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.Records != 10 || len(res.Partitions) != 1 || res.Partitions[0].LastOffset != 9 {
		t.Fatalf("produce --format json: %q %v", out, err)
	}
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"-o", "start", "-n", "3"}, "0:v0 1:v1 2:v2"},
		{[]string{"-o", "7", "-e"}, "7:v7 8:v8 9:v9"},
		{[]string{"-o", "-2", "-e"}, "8:v8 9:v9"},
		{[]string{"-o", "end", "-e"}, ""},
		{[]string{"-o", "@0", "-n", "1"}, "0:v0"},
		{[]string{"-o", "100", "-e"}, ""},
	}
	for _, tt := range tests {
		args := append([]string{"consume", "seq", "-f", `%o:%v `, "-b", b}, tt.args...)
		out := strings.TrimSpace(mustRun(t, "", args...))
		if out != tt.want {
			t.Errorf("consume %v: %q, want %q", tt.args, out, tt.want)
		}
	}
	for _, bad := range [][]string{{"-o", "middle"}, {"-f", "%x"}, {"-f", "%v", "--format", "json"}, {"-n", "-1"}} {
		args := append([]string{"consume", "seq", "-b", b}, bad...)
		if _, _, err := run(t, "", args...); err == nil {
			t.Errorf("consume %v succeeded", bad)
		}
	}
}

func TestProducePartition(t *testing.T) {
	b := broker(t)
	mustRun(t, "", "topic", "create", "pinned", "-p", "3", "-b", b)
	out := mustRun(t, "a\nb\nc\n", "produce", "pinned", "-p", "2", "-b", b)
	if !strings.Contains(out, "partition 2: offsets 0-2") {
		t.Errorf("produce -p 2: %q", out)
	}
	out = mustRun(t, "", "consume", "pinned", "-e", "-f", `%p`, "-b", b)
	if out != "222" {
		t.Errorf("records not all in partition 2: %q", out)
	}
	if _, _, err := run(t, "x\n", "produce", "pinned", "-H", "novalue", "-b", b); err == nil {
		t.Error("a header without = was accepted")
	}
}

func TestProgressOnlyOnTerminal(t *testing.T) {
	var buf strings.Builder
	if p := newProgress(&buf, &buf, false, "x", 10); p != nil {
		t.Error("progress shown on a non-terminal")
	}
	var p *progress // a nil progress does nothing
	p.update(1)
	p.done()
}
