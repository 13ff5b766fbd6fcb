package benchmark_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/a2akit/idempotency/internal/testkit"
	"github.com/a2akit/idempotency/internal/testkit/testdb"
	"github.com/a2akit/idempotency/internal/testkit/wireclient"
)

// BenchmarkSends measures sends to a bare a2a-go echo server and to the same server
// behind the kit; see the package documentation for what each sub-benchmark compares.
// Names follow benchstat's key=value convention:
//
//	BenchmarkSends/conc=8/binding=JSONRPC/mode=unary/send=first/index=mem
func BenchmarkSends(b *testing.B) {
	type leaf struct {
		send, index string
		taskReader  bool
		streamToo   bool // also measured in stream mode
	}
	throughput := []leaf{
		{send: "unkeyed", index: "mem", streamToo: true},
		{send: "first", index: "mem", streamToo: true},
		{send: "first-samebody", index: "mem"},
		{send: "first", index: "sqlite"},
		{send: "first", index: "postgres"},
	}
	latency := []leaf{
		{send: "replay", index: "mem", streamToo: true},
		{send: "replay", index: "mem", taskReader: true},
		{send: "replay", index: "sqlite"},
		{send: "replay", index: "postgres"},
	}
	for _, set := range []struct {
		conc   int
		leaves []leaf
	}{{8, throughput}, {1, latency}} {
		for _, binding := range wireclient.Bindings {
			for _, streaming := range []bool{false, true} {
				for _, l := range set.leaves {
					if streaming && !l.streamToo {
						continue
					}
					mode := "unary"
					if streaming {
						mode = "stream"
					}
					index := l.index
					if l.taskReader {
						index += "-taskreader"
					}
					name := fmt.Sprintf("conc=%d/binding=%s/mode=%s/send=%s/index=%s", set.conc, binding, mode, l.send, index)
					shape := shape{conc: set.conc, binding: binding, streaming: streaming}
					b.Run(name, func(b *testing.B) {
						switch l.send {
						case "unkeyed":
							benchUnkeyed(b, shape)
						case "first":
							benchFirst(b, shape, l.index)
						case "first-samebody":
							benchFirstSameBody(b, shape, l.index)
						case "replay":
							benchReplay(b, shape, l.index, l.taskReader)
						}
					})
				}
			}
		}
	}
}

// shape is what every send of a sub-benchmark shares.
type shape struct {
	conc      int
	binding   wireclient.Binding
	streaming bool
}

// benchUnkeyed compares unkeyed sends through the middleware with unkeyed sends to the
// bare server.
func benchUnkeyed(b *testing.B, sh shape) {
	bare := start(b, sh, testkit.Config{Agent: testkit.Echo(0)})
	kit := start(b, sh, testkit.Config{Agent: testkit.Echo(0), Index: testdb.ForTest(b, "mem", 0)})
	measure(b, sh.conc, kit.unkeyed("k"), bare.unkeyed("b"), "kit/bare", throughputRatio)
}

// benchFirst compares keyed first sends through the middleware with unkeyed sends to
// the bare server.
func benchFirst(b *testing.B, sh shape, index string) {
	ix := testdb.ForTest(b, index, 4*sh.conc)
	bare := start(b, sh, testkit.Config{Agent: testkit.Echo(0)})
	kit := start(b, sh, testkit.Config{Agent: testkit.Echo(0), Index: ix})
	measure(b, sh.conc, kit.first(testkit.RandomName("first-")), bare.unkeyed("b"), "kit/bare", throughputRatio)
}

// benchFirstSameBody compares keyed first sends through the middleware with the same
// keyed sends to the bare server, which runs them as ordinary messages: the kit's own
// cost, without a2a-go's cost of carrying the key's metadata in the task's history.
func benchFirstSameBody(b *testing.B, sh shape, index string) {
	ix := testdb.ForTest(b, index, 4*sh.conc)
	bare := start(b, sh, testkit.Config{Agent: testkit.Echo(0)})
	kit := start(b, sh, testkit.Config{Agent: testkit.Echo(0), Index: ix})
	measure(b, sh.conc, kit.first(testkit.RandomName("first-")), bare.first(testkit.RandomName("bare-")), "kit/bare", throughputRatio)
}

// benchReplay compares retries of completed keyed sends with keyed first sends, on
// one server behind the kit.
func benchReplay(b *testing.B, sh shape, index string, taskReader bool) {
	ix := testdb.ForTest(b, index, 4*sh.conc)
	kit := start(b, sh, testkit.Config{Agent: testkit.Echo(0), Index: ix, TaskReader: taskReader})
	// The keys to replay, sent once and completed before the clock starts.
	const keys = 256
	prefix := testkit.RandomName("replay-")
	first := kit.first(prefix)
	for i := range keys {
		if err := first(i); err != nil {
			b.Fatal(err)
		}
	}
	replay := func(i int) error { return first(i % keys) }
	measure(b, sh.conc, replay, kit.first(testkit.RandomName("first-")), "replay/first", latencyRatio)
}

// target is a running server and a client of it.
type target struct {
	sh  shape
	srv *testkit.Running
	c   *wireclient.Client
}

// start starts a server configured by cfg, closed when b ends.
func start(b *testing.B, sh shape, cfg testkit.Config) *target {
	b.Helper()
	srv := testkit.NewServer(b, cfg)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 4 * sh.conc
	tr.DisableCompression = true
	b.Cleanup(tr.CloseIdleConnections) // before NewServer's cleanup closes the server
	return &target{sh: sh, srv: srv, c: &wireclient.Client{BaseURL: srv.URL, HTTP: &http.Client{Transport: tr}}}
}

// unkeyed returns an operation that sends unkeyed message prefix-i.
func (t *target) unkeyed(prefix string) func(i int) error {
	return func(i int) error {
		return t.post(wireclient.Send{Binding: t.sh.binding, Streaming: t.sh.streaming,
			MessageID: prefix + "-" + strconv.Itoa(i), Text: "hello"})
	}
}

// first returns an operation that sends message prefix-i keyed with prefix-i (a
// first send, unless that i was sent before).
func (t *target) first(prefix string) func(i int) error {
	return func(i int) error {
		id := prefix + "-" + strconv.Itoa(i)
		return t.post(wireclient.Send{Binding: t.sh.binding, Streaming: t.sh.streaming,
			MessageID: id, Key: "key-" + id, Text: "hello"})
	}
}

var bufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// taskMark is in every answer that carries a task: the result of a unary send, and
// the first event of a stream.
var taskMark = []byte(`"task":{`)

// post sends s and checks that the answer carries a task; it reads the whole answer.
func (t *target) post(s wireclient.Send) error {
	req, err := t.c.Request(context.Background(), s, s.Body())
	if err != nil {
		return err
	}
	resp, err := t.c.HTTP.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	buf := bufs.Get().(*bytes.Buffer)
	defer bufs.Put(buf)
	buf.Reset()
	if _, err := io.Copy(buf, resp.Body); err != nil {
		return err
	}
	body := buf.Bytes()
	if resp.StatusCode != http.StatusOK || !bytes.Contains(body, taskMark) || bytes.Contains(body, []byte(`"error":`)) {
		return fmt.Errorf("%s %s: HTTP %d: %.300s", s.Binding, t.c.URL(s), resp.StatusCode, body)
	}
	return nil
}

// A ratio turns the times of the kit's side and of the baseline into the reported
// ratio.
type ratio func(kit, base time.Duration) float64

// throughputRatio is the kit's throughput over the baseline's.
func throughputRatio(kit, base time.Duration) float64 { return base.Seconds() / kit.Seconds() }

// latencyRatio is the kit's time per send over the baseline's.
func latencyRatio(kit, base time.Duration) float64 { return kit.Seconds() / base.Seconds() }

// measure runs kit and base b.N times each, conc at a time, in ten alternating
// rounds (testkit.Alternate), and reports the kit's ns/op and sends/s, the baseline's ns/op, and their
// ratio under unit.
func measure(b *testing.B, conc int, kit, base func(i int) error, unit string, r ratio) {
	b.Helper()
	// Warm up: open the connections, and let each server take its first sends.
	const warm = 1 << 40
	for _, op := range []func(int) error{kit, base} {
		if _, err := testkit.Parallel(conc, warm, warm+4*conc, op); err != nil {
			b.Fatal(err)
		}
	}
	kitTime, baseTime := testkit.Alternate(b, conc, 0, kit, base)
	b.ReportMetric(float64(kitTime.Nanoseconds())/float64(b.N), "ns/op")
	b.ReportMetric(float64(b.N)/kitTime.Seconds(), "sends/s")
	b.ReportMetric(float64(baseTime.Nanoseconds())/float64(b.N), "base-ns/op")
	b.ReportMetric(r(kitTime, baseTime), unit)
}
