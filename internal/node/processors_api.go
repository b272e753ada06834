package node

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/brokerd/brokerd/processor"
	"github.com/brokerd/brokerd/raftstore"
)

// The processors' admin API. Every request is served by the leader, which
// runs the processors; another member forwards it there.
func (n *Node) processorRoutes(mux guardedMux) {
	mux.HandleFunc("POST /v1/processors", n.onLeader(n.deployProcessors))
	mux.HandleFunc("GET /v1/processors", n.onLeader(n.listProcessors))
	mux.HandleFunc("GET /v1/processors/{name}", n.onLeader(n.getProcessor))
	mux.HandleFunc("POST /v1/processors/{name}/pause", n.onLeader(n.pauseProcessor(true)))
	mux.HandleFunc("POST /v1/processors/{name}/resume", n.onLeader(n.pauseProcessor(false)))
	mux.HandleFunc("DELETE /v1/processors/{name}", n.onLeader(n.deleteProcessor))
	mux.HandleFunc("GET /v1/processors/{name}/state/{key}", n.onLeader(n.processorState))
}

func (n *Node) deployProcessors(w http.ResponseWriter, r *http.Request, body []byte) {
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	specs, err := processor.Deploy(ctx, n.store, body)
	if err != nil {
		httpError(w, processorStatus(err), err)
		return
	}
	var out []processor.Description
	for _, s := range specs {
		if p, ok := n.store.Processor(s.Name); ok {
			out = append(out, processor.Describe(n.store, n.processors, p))
		}
	}
	writeJSONResponse(w, http.StatusCreated, out)
}

func (n *Node) listProcessors(w http.ResponseWriter, _ *http.Request, _ []byte) {
	out := []processor.Description{}
	for _, p := range n.store.Processors() {
		out = append(out, processor.Describe(n.store, n.processors, p))
	}
	writeJSONResponse(w, http.StatusOK, out)
}

func (n *Node) getProcessor(w http.ResponseWriter, r *http.Request, _ []byte) {
	p, ok := n.store.Processor(r.PathValue("name"))
	if !ok {
		httpError(w, http.StatusNotFound, fmt.Errorf("%w: %s", raftstore.ErrUnknownProcessor, r.PathValue("name")))
		return
	}
	writeJSONResponse(w, http.StatusOK, processor.Describe(n.store, n.processors, p))
}

func (n *Node) pauseProcessor(paused bool) func(http.ResponseWriter, *http.Request, []byte) {
	return func(w http.ResponseWriter, r *http.Request, _ []byte) {
		name := r.PathValue("name")
		if err := n.store.SetProcessorPaused(r.Context(), name, paused); err != nil {
			httpError(w, processorStatus(err), err)
			return
		}
		p, _ := n.store.Processor(name)
		if p == nil {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		writeJSONResponse(w, http.StatusOK, processor.Describe(n.store, n.processors, p))
	}
}

func (n *Node) deleteProcessor(w http.ResponseWriter, r *http.Request, _ []byte) {
	if err := n.store.DeleteProcessor(r.Context(), r.PathValue("name")); err != nil {
		httpError(w, processorStatus(err), err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (n *Node) processorState(w http.ResponseWriter, r *http.Request, _ []byte) {
	name, key := r.PathValue("name"), r.PathValue("key")
	p, ok := n.store.Processor(name)
	if !ok {
		httpError(w, http.StatusNotFound, fmt.Errorf("%w: %s", raftstore.ErrUnknownProcessor, name))
		return
	}
	v, ok, err := processor.QueryState(n.store, p, key)
	if err != nil {
		httpError(w, processorStatus(err), err)
		return
	}
	if !ok {
		httpError(w, http.StatusNotFound, fmt.Errorf("processor %s holds no state for key %q", name, key))
		return
	}
	writeJSONResponse(w, http.StatusOK, map[string]any{"key": key, "value": v})
}

func processorStatus(err error) int {
	switch {
	case errors.Is(err, processor.ErrBadSpec), errors.Is(err, raftstore.ErrInvalidProcessor):
		return http.StatusBadRequest
	case errors.Is(err, raftstore.ErrUnknownProcessor):
		return http.StatusNotFound
	case errors.Is(err, raftstore.ErrProcessorExists):
		return http.StatusConflict
	}
	return statusOf(err)
}
