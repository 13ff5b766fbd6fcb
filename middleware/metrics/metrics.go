// Package metrics counts what the idempotency middleware did and serves it in the
// Prometheus text exposition format, with the standard library only: set
// [Collector.Observe] as [middleware.Options.Observe] and serve the [Collector] at
// /metrics.
//
// The metrics, named the Prometheus way (base units, counters ending in _total):
//
//	a2a_idempotency_sends_total{outcome,binding,protocol_version,streaming}  counter
//	a2a_idempotency_keys_bound_total{bound_by}                               counter
//	a2a_idempotency_index_duration_seconds{outcome}                          histogram
//	a2a_idempotency_wait_duration_seconds{outcome}                           histogram
//	a2a_idempotency_replay_duration_seconds{outcome}                         histogram
//
// sends_total counts every keyed send by its [middleware.Outcome], the A2A protocol
// binding and protocol version it came in, and whether it streamed; keys_bound_total
// the first sends that bound their key, by [middleware.BoundBy]. Every series of the
// two counters exists at zero from the start (each outcome, binding, protocol version
// and streaming mode the kit knows; each way a key is bound), so that an alert on
// increase(a2a_idempotency_sends_total{outcome="unavailable"}[5m]) sees the first
// incident, not only the second. Each histogram
// observes the sends that spent that kind of time ([middleware.Event.IndexTime],
// WaitTime, ReplayTime), so that a send that did not wait does not pull the wait
// quantiles to zero. The scope is never a label: it is as unbounded as the tenants.
//
// A server that already uses a metrics library exports the same Events through it
// instead; the examples module shows prometheus/client_golang and OpenTelemetry.
package metrics

import (
	"bufio"
	"cmp"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/a2akit/idempotency/middleware"
)

// Names of the metrics a [Collector] serves.
const (
	SendsTotal     = "a2a_idempotency_sends_total"
	KeysBoundTotal = "a2a_idempotency_keys_bound_total"
	IndexDuration  = "a2a_idempotency_index_duration_seconds"
	WaitDuration   = "a2a_idempotency_wait_duration_seconds"
	ReplayDuration = "a2a_idempotency_replay_duration_seconds"
)

// ContentType is the Content-Type of the text exposition format the Collector serves.
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

// defaultCapacity sizes the maps of a new Collector: about one series per outcome.
const defaultCapacity = 16

// Buckets are the upper bounds, in seconds, of the histograms' buckets: from half a
// millisecond (an in-memory index call) to ten seconds (beyond the default
// IndexTimeout and ReplayWait).
var Buckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

// A Collector turns the middleware's Events into counters and histograms. Its
// methods are safe for concurrent use; the zero value is not, use [New].
type Collector struct {
	mu     sync.Mutex
	sends  map[sendLabels]uint64
	bound  map[middleware.BoundBy]uint64
	timers [3]map[middleware.Outcome]*histogram // index, wait, replay
}

type sendLabels struct {
	outcome   middleware.Outcome
	binding   string
	version   string
	streaming bool
}

// Outcomes, Bindings, ProtocolVersions and BoundBys are the label values whose
// counter series a new Collector starts at zero: every value the middleware and
// grpcbinding report. An Event with another value still counts, in a series of its
// own from then on.
var (
	Outcomes = []middleware.Outcome{
		middleware.OutcomeClaimed, middleware.OutcomeReleased, middleware.OutcomeFailed, middleware.OutcomeReplayed,
		middleware.OutcomeInFlight, middleware.OutcomeConflict, middleware.OutcomeRefused, middleware.OutcomeUnsupported,
		middleware.OutcomeUnavailable, middleware.OutcomeTaskGone, middleware.OutcomeInternal, middleware.OutcomeUnreplayable,
		middleware.OutcomeAbandoned,
	}
	Bindings         = []middleware.ProtocolBinding{middleware.BindingJSONRPC, middleware.BindingHTTPJSON, middleware.BindingGRPC}
	ProtocolVersions = []middleware.ProtocolVersion{middleware.Version10, middleware.Version03}
	BoundBys         = []middleware.BoundBy{middleware.BoundByAdapter, middleware.BoundByAnswer}
)

// New returns a Collector whose counter series all stand at zero.
func New() *Collector {
	c := &Collector{
		sends: make(map[sendLabels]uint64, len(Outcomes)*len(Bindings)*len(ProtocolVersions)*2),
		bound: make(map[middleware.BoundBy]uint64, len(BoundBys)),
	}
	for _, o := range Outcomes {
		for _, b := range Bindings {
			for _, v := range ProtocolVersions {
				c.sends[sendLabels{o, string(b), string(v), false}] = 0
				c.sends[sendLabels{o, string(b), string(v), true}] = 0
			}
		}
	}
	for _, by := range BoundBys {
		c.bound[by] = 0
	}
	for i := range c.timers {
		c.timers[i] = make(map[middleware.Outcome]*histogram, defaultCapacity)
	}
	return c
}

// Observe counts e. It is fast enough to be [middleware.Options.Observe] itself.
func (c *Collector) Observe(e middleware.Event) {
	l := sendLabels{e.Outcome, string(e.Binding), string(e.Version), e.Streaming}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sends[l]++
	if e.BoundBy != middleware.BoundByNone {
		c.bound[e.BoundBy]++
	}
	for i, d := range [...]time.Duration{e.IndexTime, e.WaitTime, e.ReplayTime} {
		if d <= 0 {
			continue
		}
		h := c.timers[i][e.Outcome]
		if h == nil {
			h = &histogram{counts: make([]uint64, len(Buckets))}
			c.timers[i][e.Outcome] = h
		}
		h.observe(d.Seconds())
	}
}

// histogram counts observations per bucket of Buckets (not cumulative; the
// exposition sums them).
type histogram struct {
	counts []uint64
	count  uint64
	sum    float64
}

func (h *histogram) observe(v float64) {
	if i, _ := slices.BinarySearch(Buckets, v); i < len(Buckets) {
		h.counts[i]++
	}
	h.count++
	h.sum += v
}

// ServeHTTP serves the metrics in the text exposition format.
func (c *Collector) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", ContentType)
	c.WriteTo(w)
}

// WriteTo writes the metrics to w in the Prometheus text exposition format
// (version 0.0.4), series sorted by their labels, and returns the bytes written.
// A histogram with no series yet is written with its HELP and TYPE lines only.
func (c *Collector) WriteTo(w io.Writer) (int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cw := &countingWriter{w: w}
	bw := bufio.NewWriter(cw)
	e := &expo{w: bw}

	e.family(SendsTotal, "counter", "Keyed sends the idempotency middleware handled, by outcome.")
	sends := sortedKeys(c.sends, func(a, b sendLabels) int {
		return cmp.Or(cmp.Compare(a.outcome, b.outcome), cmp.Compare(a.binding, b.binding),
			cmp.Compare(a.version, b.version), cmp.Compare(strconv.FormatBool(a.streaming), strconv.FormatBool(b.streaming)))
	})
	for _, l := range sends {
		e.sample(SendsTotal, labels{"binding", l.binding, "outcome", string(l.outcome), "protocol_version", l.version,
			"streaming", strconv.FormatBool(l.streaming)}, float64(c.sends[l]))
	}

	e.family(KeysBoundTotal, "counter", "Keys that first sends bound to their task or reply, by what bound them.")
	for _, by := range sortedKeys(c.bound, cmp.Compare) {
		e.sample(KeysBoundTotal, labels{"bound_by", string(by)}, float64(c.bound[by]))
	}

	for i, f := range [...]struct{ name, help string }{
		{IndexDuration, "Time keyed sends spent in calls to the idempotency index."},
		{WaitDuration, "Time retries spent waiting for an in-flight first attempt."},
		{ReplayDuration, "Time retries spent reading the first attempt's task."},
	} {
		e.family(f.name, "histogram", f.help)
		for _, o := range sortedKeys(c.timers[i], cmp.Compare) {
			e.histogram(f.name, "outcome", string(o), c.timers[i][o])
		}
	}
	if e.err == nil {
		e.err = bw.Flush()
	}
	return cw.n, e.err
}

func sortedKeys[K comparable, V any](m map[K]V, compare func(a, b K) int) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, compare)
	return keys
}

// labels are label names and values, alternating, names in order.
type labels []string

// expo writes the exposition format, keeping the first error.
type expo struct {
	w   io.Writer
	err error
	buf []byte
}

func (e *expo) write(b []byte) {
	if e.err == nil {
		_, e.err = e.w.Write(b)
	}
}

func (e *expo) family(name, typ, help string) {
	e.buf = append(e.buf[:0], "# HELP "...)
	e.buf = append(e.buf, name...)
	e.buf = append(e.buf, ' ')
	e.buf = append(e.buf, help...)
	e.buf = append(e.buf, "\n# TYPE "...)
	e.buf = append(e.buf, name...)
	e.buf = append(e.buf, ' ')
	e.buf = append(e.buf, typ...)
	e.buf = append(e.buf, '\n')
	e.write(e.buf)
}

func (e *expo) sample(name string, ls labels, v float64) {
	e.buf = append(e.buf[:0], name...)
	if len(ls) > 0 {
		e.buf = append(e.buf, '{')
		for i := 0; i < len(ls); i += 2 {
			if i > 0 {
				e.buf = append(e.buf, ',')
			}
			e.buf = append(e.buf, ls[i]...)
			e.buf = append(e.buf, `="`...)
			e.buf = append(e.buf, labelEscaper.Replace(ls[i+1])...)
			e.buf = append(e.buf, '"')
		}
		e.buf = append(e.buf, '}')
	}
	e.buf = append(e.buf, ' ')
	e.buf = appendFloat(e.buf, v)
	e.buf = append(e.buf, '\n')
	e.write(e.buf)
}

func (e *expo) histogram(name, label, value string, h *histogram) {
	var cum uint64
	for i, ub := range Buckets {
		cum += h.counts[i]
		e.sample(name+"_bucket", labels{label, value, "le", string(appendFloat(nil, ub))}, float64(cum))
	}
	e.sample(name+"_bucket", labels{label, value, "le", "+Inf"}, float64(h.count))
	e.sample(name+"_sum", labels{label, value}, h.sum)
	e.sample(name+"_count", labels{label, value}, float64(h.count))
}

// appendFloat appends v as the exposition format writes numbers.
func appendFloat(b []byte, v float64) []byte {
	switch {
	case math.IsInf(v, 1):
		return append(b, "+Inf"...)
	case math.IsInf(v, -1):
		return append(b, "-Inf"...)
	}
	return strconv.AppendFloat(b, v, 'g', -1, 64)
}

// labelEscaper escapes a label value: backslash, double quote and line feed.
var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

type countingWriter struct {
	w io.Writer
	n int64
}

func (cw *countingWriter) Write(p []byte) (int, error) {
	n, err := cw.w.Write(p)
	cw.n += int64(n)
	return n, err
}
