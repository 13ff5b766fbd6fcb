package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/memstore"
)

// downIndex is a key store whose every read fails with the driver's text.
type downIndex struct{ idempotency.KeyIndex }

func (downIndex) Lookup(context.Context, string, string) (idempotency.Record, bool, error) {
	return idempotency.Record{}, false, errors.New("dial tcp 127.0.0.1:15432: connect: connection refused")
}

// Issue 28: /healthz repeated the database's error text. /readyz says what is down
// (the key store, the upstream), never the driver's text, which goes to the log once
// per change; /livez answers while the process does.
func TestReadiness(t *testing.T) {
	var logs bytes.Buffer
	upOK := true
	a := &admin{
		store:    &keyStore{index: memstore.New(memstore.Options{}), name: "SQLite file k.db"},
		upstream: func(context.Context) bool { return upOK },
		met:      newMetrics(),
		log:      slog.New(slog.NewTextHandler(&logs, nil)),
	}
	h := a.handler()
	get := func(path string) (int, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		b, _ := io.ReadAll(rec.Body)
		return rec.Code, string(b)
	}
	for _, path := range []string{"/readyz", "/healthz"} {
		if code, body := get(path); code != http.StatusOK || body != "key store: ok\nupstream: ok\n" {
			t.Errorf("%s while all is up: %d %q", path, code, body)
		}
	}
	a.store.index = downIndex{}
	upOK = false
	for range 3 {
		code, body := get("/readyz")
		if code != http.StatusServiceUnavailable || !strings.Contains(body, "key store: unavailable") ||
			!strings.Contains(body, "upstream: unavailable") || strings.Contains(body, "dial tcp") || strings.Contains(body, "15432") {
			t.Errorf("/readyz while the store and the upstream are down: %d %q", code, body)
		}
	}
	if code, body := get("/livez"); code != http.StatusOK || body != "ok\n" {
		t.Errorf("/livez: %d %q", code, body)
	}
	if n := strings.Count(logs.String(), "connection refused"); n != 1 {
		t.Errorf("the driver's error is logged %d times over three checks, want once:\n%s", n, logs.String())
	}
	a.store.index = memstore.New(memstore.Options{})
	upOK = true
	if code, _ := get("/readyz"); code != http.StatusOK || !strings.Contains(logs.String(), "answers again") {
		t.Errorf("/readyz after recovery: %d; logs:\n%s", code, logs.String())
	}
}
