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
// on those to a send whose key an earlier whole request carried, which is how a
// server that marks replays correctly marks them.
func marking(seenOnly bool) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		var mu sync.Mutex
		seen := map[string]bool{}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mark := !seenOnly
			if r.Method == http.MethodPost {
				body, err := io.ReadAll(r.Body)
				if m := keyPattern.FindSubmatch(body); err == nil && m != nil && idempotency.ValidateKey(string(m[1])) == nil {
					mu.Lock()
					mark = mark || seen[string(m[1])]
					seen[string(m[1])] = true
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

// unmarking takes the replay marker off every answer: a server that does not send it.
func unmarking(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(&unmarkedWriter{w}, r)
	})
}

type unmarkedWriter struct{ http.ResponseWriter }

func (u *unmarkedWriter) WriteHeader(code int) {
	u.Header().Del(idempotency.ReplayedHeader)
	u.ResponseWriter.WriteHeader(code)
}

func (u *unmarkedWriter) Write(b []byte) (int, error) {
	u.Header().Del(idempotency.ReplayedHeader)
	return u.ResponseWriter.Write(b)
}

func (u *unmarkedWriter) Flush() {
	if f, ok := u.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (u *unmarkedWriter) Unwrap() http.ResponseWriter { return u.ResponseWriter }

// The replay marker is not claimed until a server sends it; a server that marks
// every answer, first sends included, fails; one that marks its replays passes, the
// kit among them.
func TestReplayedMarker(t *testing.T) {
	for _, tc := range []struct {
		name string
		wrap func(http.Handler) http.Handler
		want servercheck.Status
	}{
		{"absent", unmarking, servercheck.NotClaimed},
		{"the kit", nil, servercheck.Pass},
		{"on every answer", marking(false), servercheck.Fail},
		{"on replays", marking(true), servercheck.Pass},
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

// headerCarrier honours the Idempotency-Key request header in front of the kit: it
// moves the header's key into the message's metadata, and refuses a send whose two
// carriers differ, as SPEC §2 asks of a server that honours it.
func headerCarrier(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get("Idempotency-Key")
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
			if have, ok := meta[idempotency.MetadataKey]; ok && have != key {
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
			meta[idempotency.MetadataKey] = key
			body, _ = json.Marshal(top)
		}
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		next.ServeHTTP(w, r)
	})
}

// A server that honours the header carrier passes header-carrier: the kit itself,
// and a server that translates the header into the metadata key.
func TestHeaderCarrier(t *testing.T) {
	for _, wrap := range []func(http.Handler) http.Handler{nil, headerCarrier} {
		srv := testkit.NewServer(t, testkit.Config{Index: memstore.New(memstore.Options{}), Wrap: wrap})
		rep := check(t, srv.URL, servercheck.Options{Only: []string{"header-carrier", "extensions-header", "replayed-marker"}})
		if !rep.OK() {
			t.Fatalf("verdict %s, want pass", rep.Verdict)
		}
		for _, iface := range []string{"JSONRPC", "HTTP+JSON"} {
			if r, _ := rep.Result("header-carrier", iface); r.Status != servercheck.Pass {
				t.Errorf("header-carrier on %s: %s (%s), want pass", iface, r.Status, r.Detail)
			}
		}
	}
}
