// Command prometheus exports what the idempotency middleware did through
// prometheus/client_golang: an echo agent (a2a-go, JSON-RPC at /jsonrpc) behind the
// middleware, whose Options.Observe feeds the counters and histograms that /metrics
// serves.
//
//	go run ./examples/metrics/prometheus -addr 127.0.0.1:8080
//
// The metrics are the ones the kit's own collector (middleware/metrics) writes, with
// the same names and labels, for a server that registers everything with one
// prometheus.Registry:
//
//	a2a_idempotency_sends_total{outcome,binding,version,streaming}
//	a2a_idempotency_keys_bound_total{bound_by}
//	a2a_idempotency_{index,wait,replay}_duration_seconds{outcome}
package main

import (
	"flag"
	"fmt"
	"log"
	"net/http"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/a2akit/idempotency/examples/metrics/internal/metricsdemo"
	"github.com/a2akit/idempotency/middleware"
	"github.com/a2akit/idempotency/middleware/metrics"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "`address` to listen on")
	flag.Parse()
	h, err := newServer(prometheus.NewRegistry())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("A2A JSON-RPC at http://%s%s, metrics at http://%s/metrics\n", *addr, metricsdemo.JSONRPCPath, *addr)
	log.Fatal(http.ListenAndServe(*addr, h))
}

// newServer returns the A2A server with its metrics, registered with reg, at /metrics.
func newServer(reg *prometheus.Registry) (http.Handler, error) {
	o := newObserver(reg)
	a2a, err := metricsdemo.Handler(o.observe)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/", a2a)
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	return mux, nil
}

// observer turns the middleware's Events into Prometheus metrics.
type observer struct {
	sends, bound        *prometheus.CounterVec
	index, wait, replay *prometheus.HistogramVec
}

func newObserver(reg prometheus.Registerer) *observer {
	duration := func(name, help string) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: metrics.Buckets},
			[]string{"outcome"})
	}
	o := &observer{
		sends: prometheus.NewCounterVec(prometheus.CounterOpts{Name: metrics.SendsTotal,
			Help: "Keyed sends the idempotency middleware handled, by outcome."},
			[]string{"outcome", "binding", "protocol_version", "streaming"}),
		bound: prometheus.NewCounterVec(prometheus.CounterOpts{Name: metrics.KeysBoundTotal,
			Help: "Keys that first sends bound to their task or reply, by what bound them."}, []string{"bound_by"}),
		index:  duration(metrics.IndexDuration, "Time keyed sends spent in calls to the idempotency index."),
		wait:   duration(metrics.WaitDuration, "Time retries spent waiting for an in-flight first attempt."),
		replay: duration(metrics.ReplayDuration, "Time retries spent reading the first attempt's task."),
	}
	reg.MustRegister(o.sends, o.bound, o.index, o.wait, o.replay)
	// Every counter series at zero from the start, as the kit's collector has them, so
	// that increase() sees the first incident.
	for _, oc := range metrics.Outcomes {
		for _, b := range metrics.Bindings {
			for _, v := range metrics.ProtocolVersions {
				o.sends.WithLabelValues(string(oc), string(b), string(v), "false")
				o.sends.WithLabelValues(string(oc), string(b), string(v), "true")
			}
		}
	}
	for _, by := range metrics.BoundBys {
		o.bound.WithLabelValues(string(by))
	}
	return o
}

// observe is the middleware's Options.Observe.
func (o *observer) observe(e middleware.Event) {
	outcome := string(e.Outcome)
	o.sends.WithLabelValues(outcome, string(e.Binding), string(e.Version), strconv.FormatBool(e.Streaming)).Inc()
	if e.BoundBy != middleware.BoundByNone {
		o.bound.WithLabelValues(string(e.BoundBy)).Inc()
	}
	// Only the sends that spent the time, as the kit's collector does.
	if e.IndexTime > 0 {
		o.index.WithLabelValues(outcome).Observe(e.IndexTime.Seconds())
	}
	if e.WaitTime > 0 {
		o.wait.WithLabelValues(outcome).Observe(e.WaitTime.Seconds())
	}
	if e.ReplayTime > 0 {
		o.replay.WithLabelValues(outcome).Observe(e.ReplayTime.Seconds())
	}
}
