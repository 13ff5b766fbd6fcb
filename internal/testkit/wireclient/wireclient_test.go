package wireclient_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/internal/testkit"
	"github.com/a2akit/idempotency/internal/testkit/wireclient"
	"github.com/a2akit/idempotency/memstore"
)

// The client reads tasks, Messages, replays and refusals on both bindings, unary
// and streamed, from a real a2a-go server behind the middleware.
func TestAnswers(t *testing.T) {
	srv, err := testkit.Start(testkit.Config{Agent: testkit.Echo(0), Index: memstore.New(memstore.Options{})})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	c := &wireclient.Client{BaseURL: srv.URL}
	ctx := context.Background()
	n := 0
	for _, b := range wireclient.Bindings {
		for _, streaming := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/streaming=%t", b, streaming), func(t *testing.T) {
				n++
				do := func(s wireclient.Send, want wireclient.Kind) wireclient.Answer {
					t.Helper()
					a, err := c.Do(ctx, s)
					if err != nil {
						t.Fatalf("%+v: %v", s, err)
					}
					if a.Kind != want {
						t.Fatalf("%+v: got %v, want %v; raw %s", s, a, want, a.Raw)
					}
					return a
				}
				s := wireclient.Send{Binding: b, Streaming: streaming, MessageID: fmt.Sprintf("m-%d", n), Text: "hello"}
				unkeyed := do(s, wireclient.Task)
				if unkeyed.Extension {
					t.Errorf("unkeyed answer names the extension")
				}
				if streaming && unkeyed.Events < 2 {
					t.Errorf("stream of %d events", unkeyed.Events)
				}
				s.MessageID += "-keyed"
				s.Key = idempotency.NewKey()
				first := do(s, wireclient.Task)
				if !first.Extension {
					t.Errorf("keyed answer does not name the extension")
				}
				replay := do(s, wireclient.Task)
				if replay.TaskID != first.TaskID {
					t.Errorf("replay names task %s, first send %s", replay.TaskID, first.TaskID)
				}
				other := s
				other.MessageID += "-other"
				do(other, wireclient.AlreadyHeld)
				r := wireclient.Send{Binding: b, Streaming: streaming, MessageID: s.MessageID + "-reply", Key: idempotency.NewKey(), Text: "reply please"}
				m1 := do(r, wireclient.Message)
				m2 := do(r, wireclient.Message)
				if m1.MessageID == "" || m1.MessageID != m2.MessageID {
					t.Errorf("message replies %q and %q", m1.MessageID, m2.MessageID)
				}
				bad := s
				bad.Key = "short"
				if a := do(bad, wireclient.Refused); a.Reason != "INVALID_PARAMS" && a.Reason != "INVALID_ARGUMENT" {
					t.Errorf("malformed key: %v", a)
				}
			})
		}
	}
	if got, want := srv.Runs(), int64(4*3); got != want {
		t.Errorf("agent ran %d times, want %d", got, want)
	}
	hc := srv.URL + testkit.VarsPath
	if runs, err := testkit.ReadRuns(ctx, nilClient(), hc, ""); err != nil || runs != srv.Runs() {
		t.Errorf("ReadRuns = %d, %v; want %d", runs, err, srv.Runs())
	}
}

func nilClient() *http.Client { return http.DefaultClient }
