package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is set at build time:
//
//	go build -ldflags "-X main.version=1.2.3" ./cmd/brokerd
var version = "dev"

// buildInfo is what `brokerd version` reports.
type buildInfo struct {
	Version   string `json:"version"`
	Module    string `json:"module"`
	ModuleVer string `json:"module_version"`
	GoVersion string `json:"go_version"`
	Platform  string `json:"platform"`
	Revision  string `json:"revision,omitempty"`
	Time      string `json:"revision_time,omitempty"`
	Modified  bool   `json:"modified,omitempty"`
}

func readBuildInfo() buildInfo {
	b := buildInfo{Version: version, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	b.Module, b.ModuleVer = bi.Main.Path, bi.Main.Version
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Revision = s.Value
		case "vcs.time":
			b.Time = s.Value
		case "vcs.modified":
			b.Modified = s.Value == "true"
		}
	}
	return b
}

func newVersionCmd() *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print brokerd's version and build",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			b := readBuildInfo()
			switch format {
			case "json":
				return writeJSON(cmd.OutOrStdout(), b)
			case "text":
			default:
				return fmt.Errorf("--format %q: want text or json", format)
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "brokerd %s\n", b.Version)
			kv := [][2]string{{"module", b.Module + " " + b.ModuleVer}, {"go", b.GoVersion}, {"platform", b.Platform}}
			if b.Revision != "" {
				rev := b.Revision
				if b.Modified {
					rev += " (modified)"
				}
				kv = append(kv, [2]string{"revision", rev}, [2]string{"revision time", b.Time})
			}
			return keyValues(w, kv)
		},
	}
	cmd.Flags().StringVar(&format, "format", "text", "output format: text or json")
	return cmd
}
