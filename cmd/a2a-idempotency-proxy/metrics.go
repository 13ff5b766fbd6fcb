package main

import (
	"fmt"
	"io"
	"net/http"
	"sync/atomic"

	"github.com/a2akit/idempotency/middleware"
	kitmetrics "github.com/a2akit/idempotency/middleware/metrics"
)

// metrics counts what the proxy did, for GET /metrics in Prometheus text format: the
// middleware's keyed sends through the kit's collector (outcomes, keys bound, the
// time spent in the index, waiting and replaying), then the proxy's own counters.
type metrics struct {
	sends *kitmetrics.Collector

	upstreamErrors atomic.Int64
	sweeps         atomic.Int64
	sweepErrors    atomic.Int64
	keysDeleted    atomic.Int64
}

func newMetrics() *metrics { return &metrics{sends: kitmetrics.New()} }

// observe is the middleware's Options.Observe.
func (m *metrics) observe(e middleware.Event) { m.sends.Observe(e) }

func (m *metrics) swept(keys int64, err error) {
	m.sweeps.Add(1)
	m.keysDeleted.Add(keys)
	if err != nil {
		m.sweepErrors.Add(1)
	}
}

// ServeHTTP writes the metrics in Prometheus text exposition format 0.0.4.
func (m *metrics) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", kitmetrics.ContentType)
	m.write(w)
}

func (m *metrics) write(w io.Writer) {
	m.sends.WriteTo(w)
	counter(w, "a2a_idempotency_proxy_upstream_errors_total", "Requests the upstream could not answer (connection refused, reset, timed out).", m.upstreamErrors.Load())
	counter(w, "a2a_idempotency_proxy_sweeps_total", "Retention sweeps run.", m.sweeps.Load())
	counter(w, "a2a_idempotency_proxy_sweep_errors_total", "Retention sweeps that failed.", m.sweepErrors.Load())
	counter(w, "a2a_idempotency_proxy_keys_swept_total", "Keys deleted by retention sweeps.", m.keysDeleted.Load())
}

func counter(w io.Writer, name, help string, v int64) {
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s counter\n%s %d\n", name, help, name, name, v)
}
