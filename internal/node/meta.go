package node

import (
	"bufio"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// metaFile is Kafka's name for the file that pins a data directory to a
// cluster and a node.
const metaFile = "meta.properties"

// loadOrCreateMeta returns the data directory's cluster id, creating the
// file on first start. A data directory that belongs to another node id is
// refused: starting on it would mix two nodes' state.
func loadOrCreateMeta(dataDir string, nodeID int32) (string, error) {
	path := filepath.Join(dataDir, metaFile)
	props, err := readProperties(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		id := newClusterID()
		body := fmt.Sprintf("# written by brokerd on first start\nversion=1\ncluster.id=%s\nnode.id=%d\n", id, nodeID)
		if err := writeFileSync(path, []byte(body)); err != nil {
			return "", fmt.Errorf("write %s: %w", path, err)
		}
		return id, nil
	case err != nil:
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	if v := props["node.id"]; v != strconv.Itoa(int(nodeID)) {
		return "", fmt.Errorf("data directory %s belongs to node.id %s (its %s says so), but this node was started with node.id %d: start it with --node-id %s, or point --data-dir at this node's own directory", dataDir, v, path, nodeID, v)
	}
	id := props["cluster.id"]
	if id == "" {
		return "", fmt.Errorf("%s has no cluster.id line (it is written at the first start and never changed): restore it from a backup, or move the data directory aside to start this node afresh", path)
	}
	return id, nil
}

// newClusterID is a random 16-byte id in Kafka's URL-safe base64 form.
func newClusterID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

func readProperties(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		out[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return out, sc.Err()
}

// writeFileSync writes a file durably: temp file, fsync, rename, fsync dir.
func writeFileSync(path string, data []byte) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
