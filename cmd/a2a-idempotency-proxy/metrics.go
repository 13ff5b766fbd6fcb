package main

import (
	"cmp"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/a2akit/idempotency/middleware"
)

// metrics counts what the proxy did, for GET /metrics in Prometheus text format.
type metrics struct {
	mu       sync.Mutex
	outcomes map[outcomeLabels]*atomic.Int64

	upstreamErrors atomic.Int64
	sweeps         atomic.Int64
	sweepErrors    atomic.Int64
	keysDeleted    atomic.Int64
}

type outcomeLabels struct {
	outcome, binding, version string
	streaming                 bool
}

func newMetrics() *metrics { return &metrics{outcomes: map[outcomeLabels]*atomic.Int64{}} }

// observe is the middleware's Options.Observe.
func (m *metrics) observe(e middleware.Event) {
	l := outcomeLabels{string(e.Outcome), string(e.Binding), string(e.Version), e.Streaming}
	m.mu.Lock()
	n, ok := m.outcomes[l]
	if !ok {
		n = new(atomic.Int64)
		m.outcomes[l] = n
	}
	m.mu.Unlock()
	n.Add(1)
}

func (m *metrics) swept(keys int64, err error) {
	m.sweeps.Add(1)
	m.keysDeleted.Add(keys)
	if err != nil {
		m.sweepErrors.Add(1)
	}
}

// serveHTTP writes the metrics in Prometheus text exposition format 0.0.4.
func (m *metrics) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	m.write(w)
}

func (m *metrics) write(w io.Writer) {
	m.mu.Lock()
	labels := make([]outcomeLabels, 0, len(m.outcomes))
	for l := range m.outcomes {
		labels = append(labels, l)
	}
	m.mu.Unlock()
	slices.SortFunc(labels, func(a, b outcomeLabels) int {
		return cmp.Or(cmp.Compare(a.outcome, b.outcome), cmp.Compare(a.binding, b.binding),
			cmp.Compare(a.version, b.version), cmp.Compare(strconv.FormatBool(a.streaming), strconv.FormatBool(b.streaming)))
	})
	fmt.Fprintln(w, "# HELP a2a_idempotency_sends_total Keyed sends the middleware handled, by outcome.")
	fmt.Fprintln(w, "# TYPE a2a_idempotency_sends_total counter")
	for _, l := range labels {
		m.mu.Lock()
		n := m.outcomes[l].Load()
		m.mu.Unlock()
		fmt.Fprintf(w, "a2a_idempotency_sends_total{outcome=%q,binding=%q,version=%q,streaming=\"%t\"} %d\n",
			l.outcome, l.binding, l.version, l.streaming, n)
	}
	counter(w, "a2a_idempotency_proxy_upstream_errors_total", "Requests the upstream could not answer (connection refused, reset, timed out).", m.upstreamErrors.Load())
	counter(w, "a2a_idempotency_proxy_sweeps_total", "Retention sweeps run.", m.sweeps.Load())
	counter(w, "a2a_idempotency_proxy_sweep_errors_total", "Retention sweeps that failed.", m.sweepErrors.Load())
	counter(w, "a2a_idempotency_proxy_keys_swept_total", "Keys deleted by retention sweeps.", m.keysDeleted.Load())
}

func counter(w io.Writer, name, help string, v int64) {
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s counter\n%s %d\n", name, help, name, name, v)
}
