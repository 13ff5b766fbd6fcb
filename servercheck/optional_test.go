package servercheck_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/internal/testkit"
	"github.com/a2akit/idempotency/memstore"
	"github.com/a2akit/idempotency/servercheck"
)

// marking puts Idempotent-Replayed: true on answers: on all of them, or (seenOnly)
// on those to a send whose key (in the metadata, else, for a server that honours it,
// in the Idempotency-Key header) an earlier whole request carried, which is how a
// server that marks replays correctly marks them.
func marking(seenOnly, header bool) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		var mu sync.Mutex
		seen := map[string]bool{}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mark := !seenOnly
			if r.Method == http.MethodPost {
				body, err := io.ReadAll(r.Body)
				key := ""
				if header {
					key = r.Header.Get("Idempotency-Key")
				}
				if m := keyPattern.FindSubmatch(body); m != nil {
					key = string(m[1])
				}
				if err == nil && idempotency.ValidateKey(key) == nil {
					mu.Lock()
					mark = mark || seen[key]
					seen[key] = true
					mu.Unlock()
				}
				r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
			}
			if mark {
				w.Header().Set("Idempotent-Replayed", "true")
			}
			next.ServeHTTP(w, r)
		})
	}
}

// unmarked takes Idempotent-Replayed off every answer of next: a server that does
// not mark its replays, whatever the kit under it does.
func unmarked(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(unmarkedWriter{w}, r)
	})
}

type unmarkedWriter struct{ http.ResponseWriter }

func (w unmarkedWriter) WriteHeader(code int) {
	w.Header().Del("Idempotent-Replayed")
	w.ResponseWriter.WriteHeader(code)
}

func (w unmarkedWriter) Write(p []byte) (int, error) {
	w.Header().Del("Idempotent-Replayed")
	return w.ResponseWriter.Write(p)
}

func (w unmarkedWriter) Flush() { http.NewResponseController(w.ResponseWriter).Flush() }

func (w unmarkedWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// The replay marker is not claimed until a server sends it; a server that marks
// every answer, first sends included, fails; one that marks its replays passes.
func TestReplayedMarker(t *testing.T) {
	for _, tc := range []struct {
		name string
		wrap func(http.Handler) http.Handler
		want servercheck.Status
	}{
		{"absent", unmarked, servercheck.NotClaimed},
		{"on every answer", marking(false, false), servercheck.Fail},
		{"on replays", marking(true, false), servercheck.Pass},
		// The replay of a send keyed by the header alone is a replay, not an unkeyed send.
		{"on replays, the header carrier honoured", func(h http.Handler) http.Handler { return marking(true, true)(headerCarrier(true, true)(h)) }, servercheck.Pass},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := testkit.NewServer(t, testkit.Config{Index: memstore.New(memstore.Options{}), Wrap: tc.wrap})
			rep := check(t, srv.URL, servercheck.Options{})
			for _, iface := range []string{"JSONRPC", "HTTP+JSON"} {
				if r, _ := rep.Result("replayed-marker", iface); r.Status != tc.want {
					t.Errorf("replayed-marker on %s: %s (%s), want %s", iface, r.Status, r.Detail, tc.want)
				}
			}
			if tc.want == servercheck.Fail {
				if r, _ := rep.Result("replayed-marker", ""); !strings.Contains(r.Detail, "first send") {
					t.Errorf("the failure does not say a first send was marked: %s", r.Detail)
				}
			} else if !rep.OK() {
				t.Errorf("verdict %s, want pass", rep.Verdict)
			}
		})
	}
}

// headerCarrier reads the Idempotency-Key request header in front of the kit, and
// takes it off (the kit under it never sees it): honour moves the header's key into
// the message's metadata (the header alone deduplicates); refuseMismatch refuses a
// send whose two carriers differ. Both is what SPEC §2 asks of a server that honours
// the header.
func headerCarrier(honour, refuseMismatch bool) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			key := r.Header.Get("Idempotency-Key")
			r.Header.Del("Idempotency-Key")
			if r.Method != http.MethodPost || key == "" {
				next.ServeHTTP(w, r)
				return
			}
			body, _ := io.ReadAll(r.Body)
			var top map[string]any
			json.Unmarshal(body, &top)
			_, jsonrpc := top["jsonrpc"]
			holder := top
			if jsonrpc {
				holder, _ = top["params"].(map[string]any)
			}
			msg, _ := holder["message"].(map[string]any)
			if msg != nil {
				meta, _ := msg["metadata"].(map[string]any)
				if meta == nil {
					meta = map[string]any{}
					msg["metadata"] = meta
				}
				if have, ok := meta[idempotency.MetadataKey]; ok && have != key && refuseMismatch {
					w.Header().Set("A2A-Extensions", idempotency.ExtensionURI)
					w.Header().Set("Content-Type", "application/json")
					const text = "the Idempotency-Key header and the message's idempotency key differ: send one key"
					if jsonrpc {
						json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": top["id"], "error": map[string]any{"code": -32602, "message": text}})
					} else {
						w.WriteHeader(http.StatusBadRequest)
						json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"code": 400, "status": "INVALID_ARGUMENT", "message": text}})
					}
					return
				}
				if honour {
					meta[idempotency.MetadataKey] = key
				}
				body, _ = json.Marshal(top)
			}
			r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
			next.ServeHTTP(w, r)
		})
	}
}

// The header carrier is decided by behaviour: a server that honours it alone and
// refuses disagreeing carriers passes header-carrier; one that does neither (the
// kit without a carrier) does not claim it; one that does only one of the two
// fails, with the exchanges that showed it.
func TestHeaderCarrier(t *testing.T) {
	for _, tc := range []struct {
		name                   string
		honour, refuseMismatch bool
		want                   servercheck.Status
	}{
		{"honoured", true, true, servercheck.Pass},
		{"ignored", false, false, servercheck.NotClaimed},
		{"mismatch refused but not honoured alone", false, true, servercheck.Fail},
		{"honoured alone but mismatch accepted", true, false, servercheck.Fail},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := testkit.NewServer(t, testkit.Config{Index: memstore.New(memstore.Options{}), Wrap: headerCarrier(tc.honour, tc.refuseMismatch)})
			rep := check(t, srv.URL, servercheck.Options{Only: []string{"header-carrier", "extensions-header", "replayed-marker"}})
			if rep.OK() != (tc.want != servercheck.Fail) {
				t.Errorf("verdict %s", rep.Verdict)
			}
			for _, iface := range []string{"JSONRPC", "HTTP+JSON"} {
				r, _ := rep.Result("header-carrier", iface)
				if r.Status != tc.want {
					t.Errorf("header-carrier on %s: %s (%s), want %s", iface, r.Status, r.Detail, tc.want)
				}
				if tc.want == servercheck.Fail && len(r.Exchanges) < 3 {
					t.Errorf("header-carrier on %s failed with %d exchanges, want the three sends", iface, len(r.Exchanges))
				}
			}
			if rep.Requests > 1+2*4 {
				t.Errorf("%d requests for header-carrier on two interfaces, want at most 4 each", rep.Requests)
			}
		})
	}
}
