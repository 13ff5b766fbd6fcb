package metrics_test

import (
	"bufio"
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"math"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2akit/idempotency/middleware"
	"github.com/a2akit/idempotency/middleware/metrics"
)

// sample is one parsed sample line.
type sample struct {
	name   string
	labels map[string]string
	value  float64
}

// exposition is a parsed text exposition: the TYPE of each family and the samples
// in order.
type exposition struct {
	types   map[string]string
	help    map[string]string
	samples []sample
}

// parse reads the text exposition format strictly: every sample belongs to a family
// announced by HELP and TYPE before it, names and label names are valid, label values
// are quoted with only the three escapes, values are numbers, and a family's samples
// are together.
func parse(t *testing.T, text string) *exposition {
	t.Helper()
	ex := &exposition{types: map[string]string{}, help: map[string]string{}}
	family := ""
	done := map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "# "); ok {
			kw, rest, _ := strings.Cut(rest, " ")
			name, arg, ok := strings.Cut(rest, " ")
			if !ok || !validName(name) {
				t.Fatalf("line %d: bad comment %q", n, line)
			}
			switch kw {
			case "HELP":
				if family != "" && family != name {
					done[family] = true
				}
				if done[name] {
					t.Fatalf("line %d: family %s appears twice", n, name)
				}
				family = name
				ex.help[name] = arg
			case "TYPE":
				if name != family || ex.types[name] != "" {
					t.Fatalf("line %d: TYPE %s not right after its HELP", n, name)
				}
				switch arg {
				case "counter", "gauge", "histogram", "summary", "untyped":
				default:
					t.Fatalf("line %d: bad type %q", n, arg)
				}
				ex.types[name] = arg
			default:
				t.Fatalf("line %d: unknown comment %q", n, line)
			}
			continue
		}
		s := parseSample(t, n, line)
		base := s.name
		if ex.types[family] == "histogram" {
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				if b, ok := strings.CutSuffix(s.name, suffix); ok && b == family {
					base = b
				}
			}
		}
		if base != family {
			t.Fatalf("line %d: sample %s outside its family (in %s)", n, s.name, family)
		}
		ex.samples = append(ex.samples, s)
	}
	if !strings.HasSuffix(text, "\n") {
		t.Fatalf("exposition does not end with a line feed")
	}
	return ex
}

func parseSample(t *testing.T, n int, line string) sample {
	t.Helper()
	s := sample{labels: map[string]string{}}
	i := strings.IndexAny(line, "{ ")
	if i < 0 {
		t.Fatalf("line %d: no value in %q", n, line)
	}
	s.name, line = line[:i], line[i:]
	if !validName(s.name) {
		t.Fatalf("line %d: bad metric name %q", n, s.name)
	}
	if rest, ok := strings.CutPrefix(line, "{"); ok {
		line = rest
		for !strings.HasPrefix(line, "}") {
			name, rest, ok := strings.Cut(line, `="`)
			if !ok || !validName(name) || strings.Contains(name, ":") {
				t.Fatalf("line %d: bad label in %q", n, line)
			}
			var val strings.Builder
			j := 0
			for ; j < len(rest) && rest[j] != '"'; j++ {
				if rest[j] == '\\' {
					j++
					switch {
					case j >= len(rest):
						t.Fatalf("line %d: dangling escape", n)
					case rest[j] == 'n':
						val.WriteByte('\n')
					case rest[j] == '\\' || rest[j] == '"':
						val.WriteByte(rest[j])
					default:
						t.Fatalf("line %d: bad escape \\%c", n, rest[j])
					}
					continue
				}
				val.WriteByte(rest[j])
			}
			if j >= len(rest) {
				t.Fatalf("line %d: unterminated label value", n)
			}
			if _, dup := s.labels[name]; dup {
				t.Fatalf("line %d: label %s twice", n, name)
			}
			s.labels[name] = val.String()
			line = strings.TrimPrefix(rest[j+1:], ",")
		}
		line = line[1:]
	}
	v, ok := strings.CutPrefix(line, " ")
	if !ok {
		t.Fatalf("line %d: no space before the value", n)
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		t.Fatalf("line %d: bad value %q", n, v)
	}
	s.value = f
	return s
}

func validName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_' || r == ':' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z':
		case '0' <= r && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// value returns the value of the sample name with exactly labels, or fails.
func (ex *exposition) value(t *testing.T, name string, labels ...string) float64 {
	t.Helper()
	for _, s := range ex.samples {
		if s.name != name || len(s.labels) != len(labels)/2 {
			continue
		}
		match := true
		for i := 0; i < len(labels); i += 2 {
			if s.labels[labels[i]] != labels[i+1] {
				match = false
			}
		}
		if match {
			return s.value
		}
	}
	t.Fatalf("no sample %s%v", name, labels)
	return 0
}

func (ex *exposition) count(name string) int {
	n := 0
	for _, s := range ex.samples {
		if s.name == name {
			n++
		}
	}
	return n
}

func scrape(t *testing.T, c *metrics.Collector) *exposition {
	t.Helper()
	rec := httptest.NewRecorder()
	c.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if ct := rec.Header().Get("Content-Type"); ct != metrics.ContentType {
		t.Fatalf("Content-Type %q, want %q", ct, metrics.ContentType)
	}
	var direct bytes.Buffer
	n, err := c.WriteTo(&direct)
	if err != nil || n != int64(direct.Len()) || direct.String() != rec.Body.String() {
		t.Fatalf("WriteTo returned %d, %v for %d bytes, or differs from ServeHTTP", n, err, direct.Len())
	}
	return parse(t, rec.Body.String())
}

func TestEmpty(t *testing.T) {
	ex := scrape(t, metrics.New())
	for name, typ := range map[string]string{
		metrics.SendsTotal: "counter", metrics.KeysBoundTotal: "counter",
		metrics.IndexDuration: "histogram", metrics.WaitDuration: "histogram", metrics.ReplayDuration: "histogram",
	} {
		if ex.types[name] != typ || ex.help[name] == "" {
			t.Errorf("%s: type %q help %q, want type %s and a help text", name, ex.types[name], ex.help[name], typ)
		}
	}
	// Every counter series is there at zero, so that the first incident counts.
	want := map[string]bool{}
	for _, o := range metrics.Outcomes {
		for _, b := range metrics.Bindings {
			for _, v := range metrics.ProtocolVersions {
				for _, streaming := range []string{"false", "true"} {
					want[fmt.Sprintf("%s{binding=%s,outcome=%s,protocol_version=%s,streaming=%s}", metrics.SendsTotal, b, o, v, streaming)] = true
				}
			}
		}
	}
	for _, by := range metrics.BoundBys {
		want[fmt.Sprintf("%s{bound_by=%s}", metrics.KeysBoundTotal, by)] = true
	}
	for _, s := range ex.samples {
		keys := slices.Sorted(maps.Keys(s.labels))
		var ls []string
		for _, k := range keys {
			ls = append(ls, k+"="+s.labels[k])
		}
		id := s.name + "{" + strings.Join(ls, ",") + "}"
		if !want[id] || s.value != 0 {
			t.Errorf("an empty collector wrote %s %v", id, s.value)
		}
		delete(want, id)
	}
	for id := range want {
		t.Errorf("an empty collector lacks %s at 0", id)
	}
}

// The label values a Collector starts at zero are every Outcome, ProtocolBinding,
// ProtocolVersion and BoundBy the middleware package declares: a new outcome cannot
// be forgotten here.
func TestZeroSeriesCoverTheMiddleware(t *testing.T) {
	fset := token.NewFileSet()
	declared := map[string][]string{}
	files, err := filepath.Glob("../*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, spec := range g.Specs {
				vs := spec.(*ast.ValueSpec)
				typ, ok := vs.Type.(*ast.Ident)
				if !ok || len(vs.Values) != 1 {
					continue
				}
				lit, ok := vs.Values[0].(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					continue
				}
				v, _ := strconv.Unquote(lit.Value)
				declared[typ.Name] = append(declared[typ.Name], v)
			}
		}
	}
	for typ, have := range map[string][]string{
		"Outcome": sortedStrings(metrics.Outcomes), "ProtocolBinding": sortedStrings(metrics.Bindings),
		"ProtocolVersion": sortedStrings(metrics.ProtocolVersions), "BoundBy": sortedStrings(metrics.BoundBys),
	} {
		want := slices.DeleteFunc(slices.Sorted(slices.Values(declared[typ])), func(v string) bool { return v == "" })
		if !slices.Equal(have, want) {
			t.Errorf("%s: the collector starts %q at zero; the middleware declares %q", typ, have, want)
		}
	}
}

// sortedStrings returns the values of xs, one of the middleware's string types, as
// sorted strings.
func sortedStrings[S ~string](xs []S) []string {
	var out []string
	for _, x := range xs {
		out = append(out, string(x))
	}
	slices.Sort(out)
	return out
}

func TestCountsAndHistograms(t *testing.T) {
	c := metrics.New()
	first := middleware.Event{Outcome: middleware.OutcomeClaimed, Binding: "JSONRPC", Version: "1.0",
		BoundBy: middleware.BoundByAdapter, IndexTime: 2 * time.Millisecond}
	retry := middleware.Event{Outcome: middleware.OutcomeReplayed, Binding: "HTTP+JSON", Version: "0.3", Streaming: true,
		IndexTime: 300 * time.Microsecond, WaitTime: 40 * time.Millisecond, ReplayTime: 7 * time.Second}
	refused := middleware.Event{Outcome: middleware.OutcomeRefused, Binding: "JSONRPC", Version: "1.0"}
	for range 3 {
		c.Observe(first)
	}
	c.Observe(retry)
	c.Observe(refused)
	c.Observe(middleware.Event{Outcome: middleware.OutcomeClaimed, Binding: "JSONRPC", Version: "1.0",
		BoundBy: middleware.BoundByAnswer, IndexTime: 20 * time.Second})

	ex := scrape(t, c)
	if got := ex.value(t, metrics.SendsTotal, "outcome", "claimed", "binding", "JSONRPC", "protocol_version", "1.0", "streaming", "false"); got != 4 {
		t.Errorf("claimed sends %v, want 4", got)
	}
	if got := ex.value(t, metrics.SendsTotal, "outcome", "replayed", "binding", "HTTP+JSON", "protocol_version", "0.3", "streaming", "true"); got != 1 {
		t.Errorf("replayed sends %v, want 1", got)
	}
	if got := ex.value(t, metrics.KeysBoundTotal, "bound_by", "adapter"); got != 3 {
		t.Errorf("keys bound by the adapter %v, want 3", got)
	}
	if got := ex.value(t, metrics.KeysBoundTotal, "bound_by", "answer"); got != 1 {
		t.Errorf("keys bound by the answer %v, want 1", got)
	}
	if n := ex.count(metrics.KeysBoundTotal); n != 2 {
		t.Errorf("%d bound series, want 2 (a send that bound nothing counts in none)", n)
	}

	// The claimed sends' index time: three at 2ms, one at 20s (past every bucket).
	idx := metrics.IndexDuration
	for _, b := range []struct {
		le   string
		want float64
	}{{"0.001", 0}, {"0.0025", 3}, {"10", 3}, {"+Inf", 4}} {
		if got := ex.value(t, idx+"_bucket", "outcome", "claimed", "le", b.le); got != b.want {
			t.Errorf("claimed index bucket le=%s: %v, want %v", b.le, got, b.want)
		}
	}
	if got := ex.value(t, idx+"_count", "outcome", "claimed"); got != 4 {
		t.Errorf("claimed index count %v, want 4", got)
	}
	if got := ex.value(t, idx+"_sum", "outcome", "claimed"); math.Abs(got-20.006) > 1e-9 {
		t.Errorf("claimed index sum %v, want 20.006", got)
	}
	if got := ex.value(t, metrics.WaitDuration+"_bucket", "outcome", "replayed", "le", "0.05"); got != 1 {
		t.Errorf("replayed wait bucket le=0.05: %v, want 1", got)
	}
	if got := ex.value(t, metrics.ReplayDuration+"_bucket", "outcome", "replayed", "le", "5"); got != 0 {
		t.Errorf("replayed replay bucket le=5: %v, want 0", got)
	}
	// Only sends that spent the time are observed: no claimed send waited, and the
	// refusal spent no time at all.
	if n := ex.count(metrics.WaitDuration + "_count"); n != 1 {
		t.Errorf("%d wait histograms, want 1 (the replay's)", n)
	}
	for _, s := range ex.samples {
		if s.labels["outcome"] == "refused" && s.name != metrics.SendsTotal {
			t.Errorf("a refusal that spent no time is in %s", s.name)
		}
	}
	checkHistograms(t, ex)
}

// checkHistograms checks every histogram series: buckets cumulative, in order of le,
// ending with +Inf equal to _count.
func checkHistograms(t *testing.T, ex *exposition) {
	t.Helper()
	last := map[string]float64{}
	lastLE := map[string]float64{}
	for _, s := range ex.samples {
		base, ok := strings.CutSuffix(s.name, "_bucket")
		if !ok || ex.types[base] != "histogram" {
			continue
		}
		series := base + "/" + s.labels["outcome"]
		le, err := strconv.ParseFloat(s.labels["le"], 64)
		if err != nil {
			t.Fatalf("%s: bad le %q", series, s.labels["le"])
		}
		if prev, seen := lastLE[series]; seen && le <= prev {
			t.Errorf("%s: le %v after %v", series, le, prev)
		}
		if s.value < last[series] {
			t.Errorf("%s: bucket le=%v is %v, below the one before (%v)", series, le, s.value, last[series])
		}
		last[series], lastLE[series] = s.value, le
		if math.IsInf(le, 1) {
			if c := ex.value(t, base+"_count", "outcome", s.labels["outcome"]); c != s.value {
				t.Errorf("%s: +Inf bucket %v, count %v", series, s.value, c)
			}
		}
	}
}

// Label values are escaped: a binding name with a quote, a backslash and a line
// feed reads back as it was.
func TestLabelEscaping(t *testing.T) {
	c := metrics.New()
	const odd = "a\"b\\c\nd"
	c.Observe(middleware.Event{Outcome: middleware.OutcomeClaimed, Binding: odd})
	ex := scrape(t, c)
	if got := ex.value(t, metrics.SendsTotal, "outcome", "claimed", "binding", odd, "protocol_version", "", "streaming", "false"); got != 1 {
		t.Errorf("escaped series %v, want 1", got)
	}
}

// Observe and WriteTo may run at once (run with -race).
func TestConcurrent(t *testing.T) {
	c := metrics.New()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				c.Observe(middleware.Event{Outcome: middleware.OutcomeReplayed, Binding: "JSONRPC", Version: "1.0",
					Streaming: g%2 == 0, WaitTime: time.Duration(i) * time.Millisecond})
			}
		})
	}
	wg.Go(func() {
		for range 20 {
			c.WriteTo(new(bytes.Buffer))
		}
	})
	wg.Wait()
	ex := scrape(t, c)
	total := ex.value(t, metrics.SendsTotal, "outcome", "replayed", "binding", "JSONRPC", "protocol_version", "1.0", "streaming", "true") +
		ex.value(t, metrics.SendsTotal, "outcome", "replayed", "binding", "JSONRPC", "protocol_version", "1.0", "streaming", "false")
	if total != 1600 {
		t.Errorf("counted %v sends, want 1600", total)
	}
	// i == 0 waited no time and is not observed.
	if got := ex.value(t, metrics.WaitDuration+"_count", "outcome", "replayed"); got != 8*199 {
		t.Errorf("wait count %v, want %d", got, 8*199)
	}
	checkHistograms(t, ex)
}

func BenchmarkObserve(b *testing.B) {
	c := metrics.New()
	e := middleware.Event{Outcome: middleware.OutcomeClaimed, Binding: "JSONRPC", Version: "1.0",
		BoundBy: middleware.BoundByAdapter, IndexTime: time.Millisecond}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			c.Observe(e)
		}
	})
}
