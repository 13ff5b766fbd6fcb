package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/a2akit/idempotency/internal/testkit"
	"github.com/a2akit/idempotency/memstore"
	"github.com/a2akit/idempotency/middleware"
)

func start(t *testing.T, cfg testkit.Config) string {
	t.Helper()
	srv, err := testkit.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv.URL
}

// The short form, in-process: a load against a server behind the kit passes, the
// same load against the bare server fails, and bad flags are refused.
func TestRun(t *testing.T) {
	kit := start(t, testkit.Config{Agent: testkit.Echo(0), Index: memstore.New(memstore.Options{}), Middleware: middleware.Options{Lease: time.Second}})
	bare := start(t, testkit.Config{Agent: testkit.Echo(0)})
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"load", []string{"-url", kit, "-clients", "8", "-requests", "300", "-duration", "5s", "-settle", "10s"}, 0, "every key exactly once"},
		{"burst", []string{"-url", kit, "-burst", "-keys", "3", "-copies", "8", "-duration", "20s"}, 0, "every key exactly once"},
		{"bare", []string{"-url", bare, "-clients", "4", "-requests", "100", "-drop", "0"}, 1, "VIOLATIONS"},
		{"bad share", []string{"-url", kit, "-dup", "1.5"}, 2, "between 0 and 1"},
		{"unreachable", []string{"-url", "http://127.0.0.1:1"}, 2, "a2aload:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errs bytes.Buffer
			code := run(context.Background(), tc.args, &out, &errs)
			t.Logf("stdout:\n%s\nstderr:\n%s", out.String(), errs.String())
			if code != tc.code {
				t.Fatalf("exit status %d, want %d", code, tc.code)
			}
			if !strings.Contains(out.String()+errs.String(), tc.want) {
				t.Errorf("output lacks %q", tc.want)
			}
		})
	}
}
