package main

import (
	"context"
	"maps"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/a2akit/idempotency/examples/metrics/internal/metricsdemo"
	"github.com/a2akit/idempotency/middleware"
)

// The instruments carry the middleware's sends, with the names, units and
// attributes OpenTelemetry expects, and every duration an Event reported.
func TestInstruments(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer provider.Shutdown(context.Background())
	o, err := newObserver(provider.Meter("test"))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var events []middleware.Event
	h, err := metricsdemo.Handler(func(e middleware.Event) {
		o.observe(e)
		mu.Lock()
		events = append(events, e)
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	for _, key := range []string{"order-7f3a9c1e5b2d4a60", "order-0b1c2d3e4f5a6b7c"} {
		if err := metricsdemo.Sends(context.Background(), srv.Client(), srv.URL, key); err != nil {
			t.Fatal(err)
		}
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]metricdata.Metrics{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			got[m.Name] = m
		}
	}

	sends, ok := got["a2a.idempotency.sends"]
	if !ok || sends.Unit != "{send}" {
		t.Fatalf("a2a.idempotency.sends: %+v, want a counter in {send}", sends)
	}
	sum, ok := sends.Data.(metricdata.Sum[int64])
	if !ok || !sum.IsMonotonic {
		t.Fatalf("a2a.idempotency.sends is %T, want a monotonic int64 sum", sends.Data)
	}
	byOutcome := map[string]int64{}
	for _, dp := range sum.DataPoints {
		v, _ := dp.Attributes.Value(outcomeKey)
		byOutcome[v.AsString()] += dp.Value
		for _, k := range []attribute.Key{bindingKey, versionKey, streamingKey} {
			if !dp.Attributes.HasValue(k) {
				t.Errorf("a send data point without %s: %v", k, dp.Attributes)
			}
		}
	}
	if want := map[string]int64{"claimed": 2, "replayed": 2, "conflict": 2}; !maps.Equal(byOutcome, want) {
		t.Errorf("sends by outcome %v, want %v", byOutcome, want)
	}

	// Each duration instrument holds one measurement per Event that spent the time.
	mu.Lock()
	defer mu.Unlock()
	for name, of := range map[string]func(middleware.Event) time.Duration{
		"a2a.idempotency.index.duration":  func(e middleware.Event) time.Duration { return e.IndexTime },
		"a2a.idempotency.wait.duration":   func(e middleware.Event) time.Duration { return e.WaitTime },
		"a2a.idempotency.replay.duration": func(e middleware.Event) time.Duration { return e.ReplayTime },
	} {
		var want uint64
		var wantSum float64
		for _, e := range events {
			if d := of(e); d > 0 {
				want++
				wantSum += d.Seconds()
			}
		}
		m, ok := got[name]
		if want == 0 {
			if ok && m.Data.(metricdata.Histogram[float64]).DataPoints != nil {
				t.Errorf("%s has data points, but no Event spent that time", name)
			}
			continue
		}
		if !ok || m.Unit != "s" {
			t.Errorf("%s: %+v, want a histogram in s", name, m)
			continue
		}
		var n uint64
		var s float64
		for _, dp := range m.Data.(metricdata.Histogram[float64]).DataPoints {
			n += dp.Count
			s += dp.Sum
		}
		if n != want || s-wantSum > 1e-9 || wantSum-s > 1e-9 {
			t.Errorf("%s: %d measurements summing to %v, want %d summing to %v", name, n, s, want, wantSum)
		}
	}
}
