package middleware_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/internal/testkit"
	"github.com/a2akit/idempotency/internal/testkit/mwtest"
	"github.com/a2akit/idempotency/internal/testkit/wireclient"
	"github.com/a2akit/idempotency/memstore"
	"github.com/a2akit/idempotency/middleware"
)

// Every error the kit makes carries an ErrorInfo of its own (middleware.ReasonDomain)
// beside A2A's, so that a client tells the kit's 409 (in flight) from A2A v1.1's
// generation mismatch (-32010, ABORTED, also 409), which the kit never answers.
func TestKitReasons(t *testing.T) {
	faulty := testkit.NewFaultyIndex(memstore.New(memstore.Options{}))
	h := mwtest.New(t, mwtest.Config{Index: faulty})
	none := mwtest.New(t, mwtest.Config{NoIndex: true})
	for _, b := range wireclient.Bindings {
		for _, streaming := range []bool{false, true} {
			c := &wireclient.Client{BaseURL: h.Server.URL, HTTP: h.HTTP}
			do := func(c *wireclient.Client, id, key, text string) wireclient.Answer {
				t.Helper()
				a, err := c.Do(context.Background(), wireclient.Send{Binding: b, Streaming: streaming, MessageID: id, Key: key, Text: text})
				if err != nil {
					t.Fatal(err)
				}
				return a
			}
			want := func(a wireclient.Answer, reason string) {
				t.Helper()
				if a.KitReason != reason || a.Replayed {
					t.Fatalf("%s streaming %v: %v, kit reason %q; want %s", b, streaming, a, a.KitReason, reason)
				}
				if b == wireclient.JSONRPC && a.Code == -32010 || strings.Contains(string(a.Raw), "ABORTED") {
					t.Fatalf("%s: %s: the kit answers A2A v1.1's generation mismatch", b, a.Raw)
				}
			}
			key := idempotency.NewKey()
			if a := do(c, idempotency.NewKey(), key, "echo"); a.Kind != wireclient.Task {
				t.Fatalf("first send: %v", a)
			}
			want(do(c, idempotency.NewKey(), key, "echo"), middleware.ReasonKeyReused)
			want(do(c, idempotency.NewKey(), "short", "echo"), middleware.ReasonInvalid)
			want(do(&wireclient.Client{BaseURL: none.Server.URL, HTTP: none.HTTP}, idempotency.NewKey(), idempotency.NewKey(), "echo"),
				middleware.ReasonCannotHonour)
			faulty.SetFail(testkit.OpClaim, true)
			want(do(c, idempotency.NewKey(), idempotency.NewKey(), "echo"), middleware.ReasonUnavailable)
			faulty.SetFail(testkit.OpClaim, false)

			// In flight: the first attempt holds before creating anything.
			held, heldID := idempotency.NewKey(), idempotency.NewKey()
			done := make(chan struct{})
			go func() {
				defer close(done)
				_, _ = c.Do(context.Background(), wireclient.Send{Binding: b, MessageID: heldID, Key: held, Text: "hold"})
			}()
			for deadline := time.Now().Add(10 * time.Second); h.Agent.RunsOf(heldID) == 0 && time.Now().Before(deadline); {
				time.Sleep(10 * time.Millisecond) // until the first attempt runs
			}
			a := do(c, heldID, held, "hold")
			want(a, middleware.ReasonInFlight)
			if a.Status != 409 || b == wireclient.HTTPJSON && !strings.Contains(string(a.Raw), `"status":"UNAVAILABLE"`) ||
				b == wireclient.JSONRPC && a.Code != -32000 {
				t.Fatalf("%s: in flight answered %v: %s", b, a, a.Raw)
			}
			h.ReleaseAgents()
			<-done
			h = mwtest.New(t, mwtest.Config{Index: faulty}) // a fresh gate
		}
	}
}

// a2a-go's clients still type the kit's refusals as A2A errors: the kit's ErrorInfo
// comes after A2A's, and their HTTP+JSON client reads only A2A's domain.
func TestKitReasonsKeepA2ATypes(t *testing.T) {
	h := mwtest.New(t, mwtest.Config{})
	for _, d := range mwtest.Dialects {
		c := h.Client(d, "", h.Server.URL)
		key := idempotency.NewKey()
		msg := func() *a2a.SendMessageRequest {
			m := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("echo"))
			if err := idempotency.ValidateKey(key); err != nil {
				t.Fatal(err)
			}
			m.Metadata = map[string]any{idempotency.MetadataKey: key}
			return &a2a.SendMessageRequest{Message: m}
		}
		if _, err := c.SendMessage(context.Background(), msg()); err != nil {
			t.Fatal(err)
		}
		_, err := c.SendMessage(context.Background(), msg())
		if !errors.Is(err, a2a.ErrInvalidParams) || !strings.Contains(err.Error(), "already held") {
			t.Fatalf("%s: key reused: %v, want a2a.ErrInvalidParams", d, err)
		}
	}
}
