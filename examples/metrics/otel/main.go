// Command otel exports what the idempotency middleware did through OpenTelemetry
// metrics: an echo agent (a2a-go, JSON-RPC at /jsonrpc) behind the middleware, whose
// Options.Observe feeds OpenTelemetry instruments, here read every -interval and
// written to stdout (a real server puts its OTLP exporter there).
//
//	go run ./examples/metrics/otel -addr 127.0.0.1:8080 -interval 10s
//
// The instruments, named the OpenTelemetry way (dotted names, units in UCUM):
//
//	a2a.idempotency.sends             counter    {send}  a2a.idempotency.outcome, a2a.binding, a2a.version, a2a.streaming
//	a2a.idempotency.keys.bound        counter    {key}   a2a.idempotency.bound_by
//	a2a.idempotency.index.duration    histogram  s       a2a.idempotency.outcome
//	a2a.idempotency.wait.duration     histogram  s       a2a.idempotency.outcome
//	a2a.idempotency.replay.duration   histogram  s       a2a.idempotency.outcome
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/stdout/stdoutmetric"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/a2akit/idempotency/examples/metrics/internal/metricsdemo"
	"github.com/a2akit/idempotency/middleware"
	"github.com/a2akit/idempotency/middleware/metrics"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "`address` to listen on")
	interval := flag.Duration("interval", 10*time.Second, "how often the metrics are written to stdout")
	flag.Parse()
	exp, err := stdoutmetric.New()
	if err != nil {
		log.Fatal(err)
	}
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp, sdkmetric.WithInterval(*interval))))
	defer provider.Shutdown(context.Background())
	o, err := newObserver(provider.Meter("github.com/a2akit/idempotency/middleware"))
	if err != nil {
		log.Fatal(err)
	}
	h, err := metricsdemo.Handler(o.observe)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("A2A JSON-RPC at http://%s%s\n", *addr, metricsdemo.JSONRPCPath)
	log.Fatal(http.ListenAndServe(*addr, h))
}

// Attribute keys of the instruments.
const (
	outcomeKey   = attribute.Key("a2a.idempotency.outcome")
	boundByKey   = attribute.Key("a2a.idempotency.bound_by")
	bindingKey   = attribute.Key("a2a.binding")
	versionKey   = attribute.Key("a2a.protocol_version")
	streamingKey = attribute.Key("a2a.streaming")
)

// observer turns the middleware's Events into OpenTelemetry measurements.
type observer struct {
	sends, bound        metric.Int64Counter
	index, wait, replay metric.Float64Histogram
}

func newObserver(m metric.Meter) (*observer, error) {
	var o observer
	var errs [5]error
	o.sends, errs[0] = m.Int64Counter("a2a.idempotency.sends", metric.WithUnit("{send}"),
		metric.WithDescription("Keyed sends the idempotency middleware handled, by outcome."))
	o.bound, errs[1] = m.Int64Counter("a2a.idempotency.keys.bound", metric.WithUnit("{key}"),
		metric.WithDescription("Keys that first sends bound to their task or reply, by what bound them."))
	duration := func(name, help string) (metric.Float64Histogram, error) {
		return m.Float64Histogram(name, metric.WithUnit("s"), metric.WithDescription(help),
			metric.WithExplicitBucketBoundaries(metrics.Buckets...))
	}
	o.index, errs[2] = duration("a2a.idempotency.index.duration", "Time keyed sends spent in calls to the idempotency index.")
	o.wait, errs[3] = duration("a2a.idempotency.wait.duration", "Time retries spent waiting for an in-flight first attempt.")
	o.replay, errs[4] = duration("a2a.idempotency.replay.duration", "Time retries spent reading the first attempt's task.")
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return &o, nil
}

// observe is the middleware's Options.Observe.
func (o *observer) observe(e middleware.Event) {
	ctx := context.Background()
	outcome := outcomeKey.String(string(e.Outcome))
	o.sends.Add(ctx, 1, metric.WithAttributes(outcome, bindingKey.String(string(e.Binding)),
		versionKey.String(string(e.Version)), streamingKey.Bool(e.Streaming)))
	if e.BoundBy != middleware.BoundByNone {
		o.bound.Add(ctx, 1, metric.WithAttributes(boundByKey.String(string(e.BoundBy))))
	}
	// Only the sends that spent the time, as the kit's collector does.
	byOutcome := metric.WithAttributes(outcome)
	for _, t := range []struct {
		h metric.Float64Histogram
		d time.Duration
	}{{o.index, e.IndexTime}, {o.wait, e.WaitTime}, {o.replay, e.ReplayTime}} {
		if t.d > 0 {
			t.h.Record(ctx, t.d.Seconds(), byOutcome)
		}
	}
}
