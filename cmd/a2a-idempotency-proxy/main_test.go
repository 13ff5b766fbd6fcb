package main

import (
	"errors"
	"flag"
	"io"
	"log/slog"
	"net/url"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/middleware"
)

func TestParse(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	c, err := parse([]string{"-upstream", "http://127.0.0.1:8080"}, env(nil), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.listen != "127.0.0.1:8090" || c.admin != "127.0.0.1:8091" || c.store != defaultStore || c.mw.Lease != middleware.DefaultLease ||
		c.logFormat != "text" || !slices.Equal(c.tenantPaths, []string{"/tenants/{*}", "/{*}"}) {
		t.Errorf("defaults: listen %q admin %q store %q lease %v log %q tenant paths %q", c.listen, c.admin, c.store, c.mw.Lease, c.logFormat, c.tenantPaths)
	}
	dsn := "postgres://u:secret@db/keys"
	if c, err = parse([]string{"-upstream", "http://u"}, env(map[string]string{"IDEMPOTENCY_STORE": dsn}), io.Discard); err != nil || c.store != dsn {
		t.Errorf("store from $IDEMPOTENCY_STORE: %q, %v", c.store, err)
	}
	if c, err = parse([]string{"-upstream", "http://u", "-store", "a.db"}, env(map[string]string{"IDEMPOTENCY_STORE": dsn}), io.Discard); err != nil || c.store != "a.db" {
		t.Errorf("-store beats $IDEMPOTENCY_STORE: %q, %v", c.store, err)
	}
	for _, args := range [][]string{
		{},
		{"-upstream", "127.0.0.1:8080"},
		{"-upstream", "ftp://h"},
		{"-upstream", "http://h", "-public-url", "h:1"},
		{"-upstream", "http://h", "-public-url", "https://u:p@h"},
		{"-upstream", "http://h", "-read-timeout", "-1s"},
		{"-upstream", "http://h", "-log-level", "loud"},
		{"-upstream", "http://h", "-log-format", "xml"},
		{"-upstream", "http://h", "-trusted-proxies", "10.0.0.0/8,proxy.internal"},
		{"-upstream", "http://h", "-tenant-path", "/tenants"},
		{"-upstream", "http://h", "-tenant-path", "/t/{*}/{*}"},
		{"-upstream", "http://h", "-principal-header", "X User"},
		{"-upstream", "http://h", "-unbounded-paths", "upload"},
		{"-upstream", "http://h", "-max-body-bytes", "0"},
		{"-upstream", "http://h", "extra"},
	} {
		if _, err := parse(args, env(nil), io.Discard); err == nil {
			t.Errorf("parse(%q) accepted", args)
		}
	}
}

// Every flag may come from $IDEMPOTENCY_<NAME>; the command line wins; a bad value
// names its variable; the variable of earlier builds is refused, not ignored.
func TestParseEnvironment(t *testing.T) {
	vars := map[string]string{
		"IDEMPOTENCY_UPSTREAM": "http://10.0.0.5:8080", "IDEMPOTENCY_LISTEN": "0.0.0.0:9000", "IDEMPOTENCY_ADMIN": "",
		"IDEMPOTENCY_PUBLIC_URL": "https://agents.example.com/", "IDEMPOTENCY_TRUSTED_PROXIES": "10.0.0.0/8, 192.168.1.7",
		"IDEMPOTENCY_TENANT_PATH": "/orgs/{*}", "IDEMPOTENCY_PRINCIPAL_HEADER": "X-Authenticated-User",
		"IDEMPOTENCY_UNBOUNDED_PATHS": "/upload/,/files/", "IDEMPOTENCY_LOG_FORMAT": "json", "IDEMPOTENCY_LOG_LEVEL": "WARN",
		"IDEMPOTENCY_LEASE": "2m", "IDEMPOTENCY_EARLY_BIND": "off", "IDEMPOTENCY_MAX_BODY_BYTES": "2048",
		"IDEMPOTENCY_SWEEP_INTERVAL": "5m", "IDEMPOTENCY_TABLE": "keys2",
	}
	c, err := parse(nil, func(k string) string { return vars[k] }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.upstream.String() != "http://10.0.0.5:8080" || c.listen != "0.0.0.0:9000" || c.admin != "127.0.0.1:8091" ||
		c.publicURL != "https://agents.example.com" || len(c.trusted) != 2 || c.trusted[1].String() != "192.168.1.7/32" ||
		!slices.Equal(c.tenantPaths, []string{"/orgs/{*}"}) || c.principalHeader != "X-Authenticated-User" ||
		!slices.Equal(c.unbounded, []string{"/upload/", "/files/"}) || c.logFormat != "json" || c.logLevel != slog.LevelWarn ||
		c.mw.Lease != 2*time.Minute || c.mw.EarlyBind != middleware.EarlyBindOff || c.mw.MaxBodyBytes != 2048 ||
		c.sweepInterval != 5*time.Minute || c.table != "keys2" {
		t.Errorf("config from the environment: %+v", c)
	}
	c, err = parse([]string{"-listen", "127.0.0.1:1", "-tenant-path", "/a/{*},/b/{*}"}, func(k string) string { return vars[k] }, io.Discard)
	if err != nil || c.listen != "127.0.0.1:1" || !slices.Equal(c.tenantPaths, []string{"/a/{*}", "/b/{*}"}) {
		t.Errorf("the command line beats the environment: %q %q, %v", c.listen, c.tenantPaths, err)
	}
	_, err = parse(nil, func(k string) string {
		return map[string]string{"IDEMPOTENCY_UPSTREAM": "http://u", "IDEMPOTENCY_LEASE": "soon"}[k]
	}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "$IDEMPOTENCY_LEASE") {
		t.Errorf("a bad $IDEMPOTENCY_LEASE: %v; want an error naming it", err)
	}
	_, err = parse([]string{"-upstream", "http://u"}, func(k string) string {
		return map[string]string{oldStoreEnv: "postgres://db/keys"}[k]
	}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "IDEMPOTENCY_STORE") {
		t.Errorf("$%s set: %v; want an error that names $IDEMPOTENCY_STORE", oldStoreEnv, err)
	}
}

// -h prints every flag with its variable and is not an error of the program (main
// exits 0 on flag.ErrHelp); -version prints the version without needing -upstream.
func TestHelpAndVersion(t *testing.T) {
	var help strings.Builder
	if err := run(t.Context(), []string{"-h"}, func(string) string { return "" }, io.Discard, &help); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("run -h: %v, want flag.ErrHelp", err)
	}
	for _, want := range []string{"-public-url", "$IDEMPOTENCY_PUBLIC_URL", "-tenant-path", "$IDEMPOTENCY_STORE", "-version"} {
		if !strings.Contains(help.String(), want) {
			t.Errorf("-h lacks %q:\n%s", want, help.String())
		}
	}
	var out strings.Builder
	if err := run(t.Context(), []string{"-version"}, func(string) string { return "" }, &out, io.Discard); err != nil ||
		!strings.HasPrefix(out.String(), "a2a-idempotency-proxy ") || !strings.Contains(out.String(), runtime.Version()) {
		t.Errorf("run -version: %q, %v", out.String(), err)
	}
}

func TestMetricsText(t *testing.T) {
	m := newMetrics()
	m.observe(middleware.Event{Outcome: middleware.OutcomeReplayed, Binding: "JSONRPC", Version: "1.0"})
	m.observe(middleware.Event{Outcome: middleware.OutcomeReplayed, Binding: "JSONRPC", Version: "1.0"})
	m.observe(middleware.Event{Outcome: middleware.OutcomeClaimed, Binding: "HTTP+JSON", Version: "1.0", Streaming: true,
		BoundBy: middleware.BoundByAnswer, IndexTime: 3 * time.Millisecond})
	m.upstreamErrors.Add(3)
	m.swept(idempotency.PurgeReport{KeysDeleted: 5}, nil)
	m.inFlight(2)
	var b strings.Builder
	if err := m.write(&b); err != nil {
		t.Fatal(err)
	}
	// The kit's collector's families (middleware/metrics), then the proxy's own.
	for _, line := range []string{
		`a2a_idempotency_sends_total{binding="HTTP+JSON",outcome="claimed",protocol_version="1.0",streaming="true"} 1`,
		`a2a_idempotency_sends_total{binding="JSONRPC",outcome="replayed",protocol_version="1.0",streaming="false"} 2`,
		`a2a_idempotency_keys_bound_total{bound_by="answer"} 1`,
		`a2a_idempotency_index_duration_seconds_bucket{outcome="claimed",le="0.005"} 1`,
		`a2a_idempotency_proxy_upstream_errors_total 3`,
		`a2a_idempotency_proxy_sweeps_total{result="ok"} 1`,
		`a2a_idempotency_proxy_sweeps_total{result="failed"} 0`,
		`a2a_idempotency_proxy_keys_swept_total 5`,
		`a2a_idempotency_proxy_sends_in_flight 2`,
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
