package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// writeJSON prints v as indented JSON.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("write json: %w", err)
	}
	return nil
}

// table prints aligned columns; empty cells print as "-", as Kafka's
// tools do.
func table(w io.Writer, header []string, rows [][]string) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range rows {
		cells := make([]string, len(r))
		for i, c := range r {
			if c == "" {
				c = "-"
			}
			cells[i] = c
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write table: %w", err)
	}
	return nil
}

// keyValues prints "KEY  value" lines aligned.
func keyValues(w io.Writer, kv [][2]string) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, p := range kv {
		fmt.Fprintf(tw, "%s\t%s\n", p[0], p[1])
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	return nil
}

func int32List(s []int32) string {
	parts := make([]string, len(s))
	for i, v := range s {
		parts[i] = fmt.Sprint(v)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// parseKVs reads repeated key=value flags.
func parseKVs(flag string, kvs []string) (map[string]string, error) {
	out := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("%s %q: want key=value", flag, kv)
		}
		out[k] = v
	}
	return out, nil
}
