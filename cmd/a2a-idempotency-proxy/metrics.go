package main

import (
	"bytes"
	"io"
	"net/http"
	"runtime"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/expfmt"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/middleware"
	kitmetrics "github.com/a2akit/idempotency/middleware/metrics"
)

// Names of the proxy's own metrics; the middleware's come from middleware/metrics.
const (
	metricBuildInfo        = "a2a_idempotency_proxy_build_info"
	metricUpstreamDuration = "a2a_idempotency_proxy_upstream_request_duration_seconds"
	metricSendsInFlight    = "a2a_idempotency_proxy_sends_in_flight"
	metricUpstreamErrors   = "a2a_idempotency_proxy_upstream_errors_total"
	metricSweeps           = "a2a_idempotency_proxy_sweeps_total"
	metricKeysSwept        = "a2a_idempotency_proxy_keys_swept_total"
)

// metrics is what GET /metrics serves, in the Prometheus text format: the
// middleware's keyed sends through the kit's collector (outcomes, every series from
// zero, keys bound, the time spent in the index, waiting and replaying), then the
// proxy's own (build, upstream requests, sends in flight, upstream errors, sweeps)
// and the Go runtime's and the process's (go_*, process_*).
type metrics struct {
	sends *kitmetrics.Collector
	reg   *prometheus.Registry

	upstreamDuration *prometheus.HistogramVec
	sendsInFlight    prometheus.Gauge
	upstreamErrors   prometheus.Counter
	sweeps           *prometheus.CounterVec
	keysSwept        prometheus.Counter
}

func newMetrics() *metrics {
	ver, rev := buildInfo()
	m := &metrics{
		sends: kitmetrics.New(),
		reg:   prometheus.NewRegistry(),
		upstreamDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: metricUpstreamDuration,
			Help:    "Time from forwarding a request to the upstream to its response headers, by method and status code.",
			Buckets: kitmetrics.Buckets}, []string{"method", "code"}),
		sendsInFlight: prometheus.NewGauge(prometheus.GaugeOpts{Name: metricSendsInFlight,
			Help: "Sends (SendMessage and SendStreamingMessage, both bindings) the proxy is handling now, streams included."}),
		upstreamErrors: prometheus.NewCounter(prometheus.CounterOpts{Name: metricUpstreamErrors,
			Help: "Requests the upstream could not answer (connection refused, reset, timed out)."}),
		sweeps: prometheus.NewCounterVec(prometheus.CounterOpts{Name: metricSweeps,
			Help: "Retention sweeps run, by result (ok or failed)."}, []string{"result"}),
		keysSwept: prometheus.NewCounter(prometheus.CounterOpts{Name: metricKeysSwept,
			Help: "Keys deleted by retention sweeps."}),
	}
	m.sweeps.WithLabelValues("ok")
	m.sweeps.WithLabelValues("failed")
	build := prometheus.NewGauge(prometheus.GaugeOpts{Name: metricBuildInfo,
		Help:        "The proxy's build: 1, with its version, VCS revision and Go version as labels.",
		ConstLabels: prometheus.Labels{"version": ver, "revision": rev, "goversion": runtime.Version()}})
	build.Set(1)
	m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		build, m.upstreamDuration, m.sendsInFlight, m.upstreamErrors, m.sweeps, m.keysSwept)
	return m
}

// observe is the middleware's Options.Observe.
func (m *metrics) observe(e middleware.Event) { m.sends.Observe(e) }

// inFlight moves the sends-in-flight gauge by delta.
func (m *metrics) inFlight(delta int64) { m.sendsInFlight.Add(float64(delta)) }

// swept is the sweep runner's OnSweep.
func (m *metrics) swept(rep idempotency.PurgeReport, err error) {
	m.keysSwept.Add(float64(rep.KeysDeleted))
	if err != nil {
		m.sweeps.WithLabelValues("failed").Inc()
		return
	}
	m.sweeps.WithLabelValues("ok").Inc()
}

// instrument times rt's round trips to the upstream.
func (m *metrics) instrument(rt http.RoundTripper) http.RoundTripper {
	return promhttp.InstrumentRoundTripperDuration(m.upstreamDuration, rt)
}

// ServeHTTP writes the metrics in Prometheus text exposition format 0.0.4.
func (m *metrics) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var b bytes.Buffer
	if err := m.write(&b); err != nil {
		http.Error(w, "the metrics could not be gathered", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", kitmetrics.ContentType)
	w.Write(b.Bytes())
}

func (m *metrics) write(w io.Writer) error {
	if _, err := m.sends.WriteTo(w); err != nil {
		return err
	}
	fams, err := m.reg.Gather()
	if err != nil {
		return err
	}
	enc := expfmt.NewEncoder(w, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, f := range fams {
		if err := enc.Encode(f); err != nil {
			return err
		}
	}
	return nil
}
