package node

import (
	"context"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brokerd/brokerd/broker/wire"
	"github.com/brokerd/brokerd/internal/metrics"
)

// instrument wraps the broker's handler: it counts and times every request
// per API, counts bytes and records in (Produce) and out (Fetch), and logs
// every failed request once (a handler error, or a response carrying error
// codes) with its API, client id and address, rate-limited per API and
// error.
func instrument(h wire.Handler, m *metrics.Metrics, logger *slog.Logger, lim *logLimiter) wire.Handler {
	return func(ctx context.Context, req *wire.Request) (kmsg.Response, error) {
		api := kmsg.NameForKey(req.Header.APIKey)
		var tally metrics.ProduceTally
		produce, isProduce := req.Msg.(*kmsg.ProduceRequest)
		if isProduce {
			tally = m.TallyProduce(produce)
		}
		start := time.Now()
		resp, err := h(ctx, req)
		m.ObserveRequest(api, time.Since(start))
		if err != nil {
			if r, ok := resp.(*kmsg.ProduceResponse); ok && r != nil {
				// An acks=0 Produce that closes its connection: what it
				// handed to raft was appended.
				tally.Done(r)
			}
			m.CountError(api, "handler")
			logRequestError(logger, lim, req, api, "handler", "handler", slog.LevelWarn, slog.Any("err", err))
			return resp, err
		}
		switch r := resp.(type) {
		case *kmsg.ProduceResponse:
			if r == nil {
				tally.Done(nil)
				return resp, nil
			}
			tally.Done(r)
		case *kmsg.FetchResponse:
			if r != nil {
				m.FetchDone(r)
			}
		case nil:
			if isProduce {
				tally.Done(nil)
			}
			return resp, nil
		}
		codes := errorCodes(resp)
		if len(codes) == 0 {
			return resp, nil
		}
		desc, names := describeCodes(codes)
		for c := range codes {
			m.CountError(api, codeName(c))
		}
		logRequestError(logger, lim, req, api, desc, names, codesLevel(codes))
		return resp, nil
	}
}

func logRequestError(logger *slog.Logger, lim *logLimiter, req *wire.Request, api, errs, key string, level slog.Level, extra ...slog.Attr) {
	if !logger.Enabled(context.Background(), level) {
		return
	}
	ok, suppressed := lim.allow(api + "\x00" + key)
	if !ok {
		return
	}
	client := ""
	if req.Header.ClientID != nil {
		client = *req.Header.ClientID
	}
	addr := ""
	if req.RemoteAddr != nil {
		addr = req.RemoteAddr.String()
	}
	attrs := []slog.Attr{
		slog.String("api", api),
		slog.Int("api_version", int(req.Header.APIVersion)),
		slog.String("client_id", client),
		slog.String("addr", addr),
		slog.Int("correlation_id", int(req.Header.CorrelationID)),
		slog.String("errors", errs),
	}
	attrs = append(attrs, extra...)
	if suppressed > 0 {
		attrs = append(attrs, slog.Int("suppressed", suppressed))
	}
	logger.LogAttrs(context.Background(), level, "request failed", attrs...)
}
