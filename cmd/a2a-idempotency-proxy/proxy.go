package main

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"time"
)

// Where A2A serves the agent card: since v0.3, and before (still served by many v0.3
// servers). The middleware adds the extension to the card at either path.
const (
	agentCardPath       = "/.well-known/agent-card.json"
	legacyAgentCardPath = "/.well-known/agent.json"
)

// newProxy returns the handler that passes requests on to the upstream: headers and
// status kept, streams flushed as they come (FlushInterval -1), the agent card's
// interface URLs rewritten to the public URL.
func newProxy(c *config, log *slog.Logger, met *metrics) http.Handler {
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.DialContext = (&net.Dialer{Timeout: c.dialTimeout, KeepAlive: 30 * time.Second}).DialContext
	transport.ResponseHeaderTimeout = c.headerTimeout
	transport.MaxIdleConnsPerHost = 256
	upstream := c.upstream
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(upstream)
			pr.SetXForwarded()
			if isCard(pr.In) {
				// The card is edited on its way back: ask for it uncompressed (the
				// transport still takes gzip and unpacks it).
				pr.Out.Header.Del("Accept-Encoding")
			}
		},
		Transport:     transport,
		FlushInterval: -1,
		ErrorLog:      slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if errors.Is(err, context.Canceled) && r.Context().Err() != nil {
				return // the client left; nobody to answer
			}
			met.upstreamErrors.Add(1)
			log.LogAttrs(r.Context(), slog.LevelWarn, "upstream request failed", slog.String("method", r.Method),
				slog.String("path", r.URL.Path), slog.Any("error", err))
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.WriteHeader(http.StatusBadGateway)
			w.Write([]byte("the A2A server behind the idempotency proxy could not be reached; retry later\n"))
		},
	}
}

func isCard(r *http.Request) bool {
	return r.Method == http.MethodGet && (r.URL.Path == agentCardPath || r.URL.Path == legacyAgentCardPath)
}

// adminHandler serves /healthz, /livez and /metrics.
func adminHandler(st *keyStore, met *metrics) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if err := st.ready(r.Context()); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte("key store unavailable: " + err.Error() + "\n"))
			return
		}
		w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /livez", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write([]byte("ok\n"))
	})
	mux.Handle("GET /metrics", met)
	return mux
}
