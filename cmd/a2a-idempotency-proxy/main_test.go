package main

import (
	"io"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/a2akit/idempotency/middleware"
)

func TestParse(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	c, err := parse([]string{"-upstream", "http://127.0.0.1:8080"}, env(nil), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.listen != "127.0.0.1:8090" || c.admin != "127.0.0.1:8091" || c.store != defaultStore || c.mw.Lease != middleware.DefaultLease {
		t.Errorf("defaults: listen %q admin %q store %q lease %v", c.listen, c.admin, c.store, c.mw.Lease)
	}
	dsn := "postgres://u:secret@db/keys"
	if c, err = parse([]string{"-upstream", "http://u"}, env(map[string]string{storeEnv: dsn}), io.Discard); err != nil || c.store != dsn {
		t.Errorf("store from $%s: %q, %v", storeEnv, c.store, err)
	}
	if c, err = parse([]string{"-upstream", "http://u", "-store", "a.db"}, env(map[string]string{storeEnv: dsn}), io.Discard); err != nil || c.store != "a.db" {
		t.Errorf("-store beats $%s: %q, %v", storeEnv, c.store, err)
	}
	if strings.Contains(storeName(dsn), "secret") {
		t.Errorf("storeName(%q) = %q shows the password", dsn, storeName(dsn))
	}
	for _, args := range [][]string{
		{},
		{"-upstream", "127.0.0.1:8080"},
		{"-upstream", "ftp://h"},
		{"-upstream", "http://h", "-public-url", "h:1"},
		{"-upstream", "http://h", "-read-timeout", "-1s"},
		{"-upstream", "http://h", "-log-level", "loud"},
		{"-upstream", "http://h", "extra"},
	} {
		if _, err := parse(args, env(nil), io.Discard); err == nil {
			t.Errorf("parse(%q) accepted", args)
		}
	}
}

func TestMetricsText(t *testing.T) {
	m := newMetrics()
	m.observe(middleware.Event{Outcome: middleware.OutcomeReplayed, Binding: "JSONRPC", Version: "1.0"})
	m.observe(middleware.Event{Outcome: middleware.OutcomeReplayed, Binding: "JSONRPC", Version: "1.0"})
	m.observe(middleware.Event{Outcome: middleware.OutcomeClaimed, Binding: "HTTP+JSON", Version: "1.0", Streaming: true,
		BoundBy: middleware.BoundByAnswer, IndexTime: 3 * time.Millisecond})
	m.upstreamErrors.Add(3)
	var b strings.Builder
	m.write(&b)
	// The kit's collector's families (middleware/metrics), then the proxy's own.
	for _, line := range []string{
		`a2a_idempotency_sends_total{binding="HTTP+JSON",outcome="claimed",protocol_version="1.0",streaming="true"} 1`,
		`a2a_idempotency_sends_total{binding="JSONRPC",outcome="replayed",protocol_version="1.0",streaming="false"} 2`,
		`a2a_idempotency_keys_bound_total{bound_by="answer"} 1`,
		`a2a_idempotency_index_duration_seconds_bucket{outcome="claimed",le="0.005"} 1`,
		`a2a_idempotency_proxy_upstream_errors_total 3`,
		`# TYPE a2a_idempotency_sends_total counter`,
		`# TYPE a2a_idempotency_index_duration_seconds histogram`,
	} {
		if !strings.Contains(b.String(), line+"\n") {
			t.Errorf("metrics lack %q:\n%s", line, b.String())
		}
	}
}

func TestRewriteCard(t *testing.T) {
	up, _ := url.Parse("http://10.0.0.5:8080/a2a/")
	card := []byte(`{"name":"x",  "supportedInterfaces":[{"url":"http://10.0.0.5:8080/a2a/jsonrpc","protocolBinding":"JSONRPC"},` +
		`{"url":"https://agent.internal/a2a/rest?v=1","protocolBinding":"HTTP+JSON"},{"url":"/relative"}],"url":"http://10.0.0.5:8080/a2a"}`)
	out, ok := rewriteCard(card, up, "https://agents.example.com/echo")
	want := `{"name":"x",  "supportedInterfaces":[{"url":"https://agents.example.com/echo/jsonrpc","protocolBinding":"JSONRPC"},` +
		`{"url":"https://agents.example.com/echo/rest?v=1","protocolBinding":"HTTP+JSON"},{"url":"/relative"}],"url":"https://agents.example.com/echo"}`
	if !ok || string(out) != want {
		t.Errorf("rewriteCard:\n got %s, %v\nwant %s", out, ok, want)
	}
	if _, ok := rewriteCard([]byte(`{"url":"http://10.0.0.5:8080/a2a","signatures":[{"protected":"x","signature":"y"}]}`), up, "https://p"); ok {
		t.Error("rewriteCard rewrote a signed card")
	}
}
