package node

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/brokerd/brokerd/raftstore"
)

// Snapshot installs skip the segment files a follower already holds: the
// leader asks the follower's admin API which it holds, with checksums
// (raftstore/dedupe.go).

// maxHeldBody bounds a held-files query or answer.
const maxHeldBody = 64 << 20

// heldSegments answers POST /v1/cluster/segments/held: of the files in the
// body, those this node holds at exactly the size asked, with checksums.
func (n *Node) heldSegments(w http.ResponseWriter, r *http.Request) {
	var want []raftstore.HeldFile
	if err := json.NewDecoder(io.LimitReader(r.Body, maxHeldBody)).Decode(&want); err != nil {
		httpError(w, http.StatusBadRequest, fmt.Errorf("decode held-files query: %w", err))
		return
	}
	held, err := n.store.HeldSegments(r.Context(), want)
	if err != nil {
		httpError(w, http.StatusInternalServerError, err)
		return
	}
	writeJSONResponse(w, http.StatusOK, held)
}

// askHeld asks member node, through its registered admin address, which
// of want it holds.
func (n *Node) askHeld(ctx context.Context, node int32, want []raftstore.HeldFile) ([]raftstore.HeldFile, error) {
	st := n.started.Load()
	if st == nil {
		return nil, errors.New("not started")
	}
	b, ok := st.Registered(node)
	if !ok || b.Admin == "" {
		return nil, fmt.Errorf("node %d has no admin address registered", node)
	}
	body, err := json.Marshal(want)
	if err != nil {
		return nil, fmt.Errorf("encode held-files query: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, n.adminURL(b.Admin, "/v1/cluster/segments/held"), bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("held-files query to node %d: %w", node, err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := n.adminHTTP.Do(req)
	if err != nil {
		return nil, fmt.Errorf("held-files query to node %d: %w", node, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return nil, fmt.Errorf("held-files query to node %d: %s: %s", node, resp.Status, bytes.TrimSpace(msg))
	}
	var held []raftstore.HeldFile
	// An answer entry carries a checksum its question did not.
	if err := json.NewDecoder(io.LimitReader(resp.Body, 4*maxHeldBody)).Decode(&held); err != nil {
		return nil, fmt.Errorf("held-files answer from node %d: %w", node, err)
	}
	return held, nil
}
