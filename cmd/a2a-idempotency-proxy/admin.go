package main

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/a2akit/idempotency"
)

// admin serves the admin listener: GET /livez, /readyz (and /healthz, its earlier
// name) and /metrics.
type admin struct {
	store *keyStore
	// upstream reports whether the upstream serves its agent card through the
	// proxy, within ctx.
	upstream func(ctx context.Context) bool
	met      *metrics
	log      *slog.Logger

	// storeDown and upstreamDown remember the last answers, so that only changes are
	// logged, however often the checks run.
	storeDown, upstreamDown atomic.Bool
}

func (a *admin) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /livez", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", a.ready)
	mux.HandleFunc("GET /healthz", a.ready)
	mux.Handle("GET /metrics", a.met)
	return mux
}

// ready answers 200 when the key store and the upstream answer, else 503; the body
// has a line per check saying which is down, never the store's or the network's
// error text (that goes to the log, once per change).
func (a *admin) ready(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), idempotency.DefaultHealthTimeout)
	defer cancel()
	storeErr := idempotency.CheckIndex(ctx, a.store.index)
	upOK := a.upstream(ctx)
	var b strings.Builder
	if storeErr == nil {
		b.WriteString("key store: ok\n")
	} else {
		b.WriteString("key store: unavailable (keyed sends are refused with 503 until it answers)\n")
	}
	if upOK {
		b.WriteString("upstream: ok\n")
	} else {
		b.WriteString("upstream: unavailable (its agent card could not be read)\n")
	}
	if was := a.storeDown.Swap(storeErr != nil); was != (storeErr != nil) {
		if storeErr != nil {
			a.log.Warn("readiness: the key store does not answer", "store", a.store.name, "error", storeErr)
		} else {
			a.log.Info("readiness: the key store answers again", "store", a.store.name)
		}
	}
	if was := a.upstreamDown.Swap(!upOK); was != !upOK {
		if !upOK {
			a.log.Warn("readiness: the upstream does not serve its agent card")
		} else {
			a.log.Info("readiness: the upstream serves its agent card again")
		}
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if storeErr != nil || !upOK {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	w.Write([]byte(b.String()))
}
