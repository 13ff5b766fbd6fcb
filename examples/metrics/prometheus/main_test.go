package main

import (
	"context"
	"maps"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/a2akit/idempotency/examples/metrics/internal/metricsdemo"
	"github.com/a2akit/idempotency/middleware"
	"github.com/a2akit/idempotency/middleware/metrics"
)

// scrape GETs url and parses it with Prometheus's own text parser.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("Prometheus's parser refused %s: %v", url, err)
	}
	return fams
}

// The example's /metrics serves the middleware's sends.
func TestServer(t *testing.T) {
	h, err := newServer(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	if err := metricsdemo.Sends(context.Background(), srv.Client(), srv.URL, "order-7f3a9c1e5b2d4a60"); err != nil {
		t.Fatal(err)
	}
	fams := scrape(t, srv.URL+"/metrics")
	got := map[string]float64{}
	for _, m := range fams[metrics.SendsTotal].GetMetric() {
		got[label(m, "outcome")] += m.GetCounter().GetValue()
	}
	// Every outcome is there from the start; three counted.
	want := map[string]float64{}
	for _, o := range metrics.Outcomes {
		want[string(o)] = 0
	}
	want["claimed"], want["replayed"], want["conflict"] = 1, 1, 1
	if !maps.Equal(got, want) {
		t.Errorf("sends by outcome %v, want %v", got, want)
	}
}

// The example exports what the kit's collector does: the same families, series and
// values, each read back by Prometheus's parser.
func TestSameAsCollector(t *testing.T) {
	reg := prometheus.NewRegistry()
	o := newObserver(reg)
	c := metrics.New()
	a2a, err := metricsdemo.Handler(func(e middleware.Event) {
		o.observe(e)
		c.Observe(e)
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(a2a)
	defer srv.Close()
	for _, key := range []string{"order-7f3a9c1e5b2d4a60", "order-0b1c2d3e4f5a6b7c"} {
		if err := metricsdemo.Sends(context.Background(), srv.Client(), srv.URL, key); err != nil {
			t.Fatal(err)
		}
	}
	ours := httptest.NewServer(c)
	defer ours.Close()
	theirs := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer theirs.Close()
	a, b := scrape(t, ours.URL), scrape(t, theirs.URL)
	for _, name := range []string{metrics.SendsTotal, metrics.KeysBoundTotal, metrics.IndexDuration, metrics.WaitDuration, metrics.ReplayDuration} {
		if a[name] == nil && b[name] == nil {
			continue // no series yet in either (the parser drops an empty family)
		}
		if a[name].GetType() != typeOf(name) {
			t.Errorf("%s: type %v, want %v", name, a[name].GetType(), typeOf(name))
		}
		sa, sb := series(a[name]), series(b[name])
		if !slices.Equal(slices.Sorted(maps.Keys(sa)), slices.Sorted(maps.Keys(sb))) {
			t.Errorf("%s: the collector has series %v, client_golang %v", name, slices.Sorted(maps.Keys(sa)), slices.Sorted(maps.Keys(sb)))
			continue
		}
		for k, va := range sa {
			if vb := sb[k]; !slices.EqualFunc(va, vb, func(x, y float64) bool { return math.Abs(x-y) < 1e-9 }) {
				t.Errorf("%s{%s}: the collector has %v, client_golang %v", name, k, va, vb)
			}
		}
	}
	// Not a comparison of empty families: each send asked the index, the replays read
	// their task, and the first sends' answers bound their keys (the counters' other
	// series stand at zero from the start, in both).
	for name, want := range map[string]int{metrics.SendsTotal: 3, metrics.IndexDuration: 3, metrics.ReplayDuration: 1, metrics.KeysBoundTotal: 1} {
		got := 0
		for _, m := range a[name].GetMetric() {
			if m.GetCounter() == nil || m.GetCounter().GetValue() > 0 {
				got++
			}
		}
		if got != want {
			t.Errorf("%s: %d series counted, want %d", name, got, want)
		}
	}
}

func typeOf(name string) dto.MetricType {
	if strings.HasSuffix(name, "_total") {
		return dto.MetricType_COUNTER
	}
	return dto.MetricType_HISTOGRAM
}

// series returns a family's values by their labels: a counter's value, or a
// histogram's count, sum and cumulative bucket counts.
func series(f *dto.MetricFamily) map[string][]float64 {
	out := map[string][]float64{}
	for _, m := range f.GetMetric() {
		var ls []string
		for _, l := range m.GetLabel() {
			ls = append(ls, l.GetName()+"="+l.GetValue())
		}
		k := strings.Join(ls, ",")
		switch {
		case m.Counter != nil:
			out[k] = []float64{m.GetCounter().GetValue()}
		case m.Histogram != nil:
			h := m.GetHistogram()
			v := []float64{float64(h.GetSampleCount()), h.GetSampleSum()}
			for _, b := range h.GetBucket() {
				if !math.IsInf(b.GetUpperBound(), 1) { // client_golang leaves +Inf implicit
					v = append(v, b.GetUpperBound(), float64(b.GetCumulativeCount()))
				}
			}
			out[k] = v
		}
	}
	return out
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
