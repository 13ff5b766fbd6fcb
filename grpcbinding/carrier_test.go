package grpcbinding

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/middleware"
)

// rawAnswer is what a raw gRPC send got: the task it names (or the error), and
// whether its header metadata carried the replay marker.
type rawAnswer struct {
	taskID   string
	err      error
	replayed bool
	header   metadata.MD
}

// rawSend sends a message with messageID, keyed in its metadata with metaKey (none
// when empty) and in the idempotency-key request metadata with header, on the raw
// gRPC client, unary or streaming (reading the whole stream).
func rawSend(t testing.TB, c a2apb.A2AServiceClient, streaming bool, messageID, metaKey string, header ...string) rawAnswer {
	t.Helper()
	msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("hello"))
	msg.ID = messageID
	if metaKey != "" {
		msg.Metadata = map[string]any{idempotency.MetadataKey: metaKey}
	}
	in := rawRequest(t, &a2a.SendMessageRequest{Message: msg})
	ctx := context.Background()
	for _, v := range header {
		ctx = metadata.AppendToOutgoingContext(ctx, "idempotency-key", v)
	}
	var a rawAnswer
	if !streaming {
		res, err := c.SendMessage(ctx, in, grpc.Header(&a.header))
		a.err = err
		a.taskID = res.GetTask().GetId()
	} else {
		st, err := c.SendStreamingMessage(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		for {
			ev, err := st.Recv()
			if err == io.EOF {
				break
			}
			if err != nil {
				a.err = err
				break
			}
			if a.taskID == "" {
				a.taskID = ev.GetTask().GetId() + ev.GetStatusUpdate().GetTaskId()
			}
		}
		a.header, _ = st.Header()
	}
	a.replayed = len(a.header.Get("idempotent-replayed")) == 1 && a.header.Get("idempotent-replayed")[0] == "true"
	return a
}

// The idempotency-key request metadata is the key's second carrier on gRPC, as the
// Idempotency-Key header is on HTTP.
func TestKeyMetadataCarrier(t *testing.T) {
	for _, streaming := range []bool{false, true} {
		t.Run(fmt.Sprintf("streaming=%v", streaming), func(t *testing.T) {
			s := startServer(t, serverConfig{keyed: true})
			c := s.raw(t)
			served := func(a rawAnswer, replayed bool) string {
				t.Helper()
				if a.err != nil || a.taskID == "" || a.replayed != replayed {
					t.Fatalf("answer task %q, err %v, replayed %v (header %v); want a task, replayed %v", a.taskID, a.err, a.replayed, a.header, replayed)
				}
				return a.taskID
			}
			refused := func(a rawAnswer, text string) {
				t.Helper()
				g := wantStatus(t, a.err, codes.InvalidArgument, "INVALID_PARAMS", text)
				if g.kitReason != middleware.ReasonInvalid || a.replayed {
					t.Fatalf("kit reason %q, replayed %v; want %s, no marker", g.kitReason, a.replayed, middleware.ReasonInvalid)
				}
			}
			key, id := idempotency.NewKey(), idempotency.NewKey()
			task := served(rawSend(t, c, streaming, id, "", key), false)
			if got := served(rawSend(t, c, streaming, id, "", key), true); got != task {
				t.Fatalf("metadata-only retry: task %s, want %s", got, task)
			}
			if got := served(rawSend(t, c, streaming, id, key), true); got != task {
				t.Fatalf("message-keyed retry of a metadata-keyed send: task %s, want %s", got, task)
			}
			key2, id2 := idempotency.NewKey(), idempotency.NewKey()
			task2 := served(rawSend(t, c, streaming, id2, key2), false)
			if got := served(rawSend(t, c, streaming, id2, "", key2), true); got != task2 {
				t.Fatalf("carrier-only retry of a message-keyed send: task %s, want %s", got, task2)
			}
			key3, id3 := idempotency.NewKey(), idempotency.NewKey()
			task3 := served(rawSend(t, c, streaming, id3, key3, key3), false)
			if got := served(rawSend(t, c, streaming, id3, key3, key3), true); got != task3 {
				t.Fatalf("retry with both carriers: task %s, want %s", got, task3)
			}
			wantRuns(t, s, 3)

			bad := idempotency.NewKey()
			refused(rawSend(t, c, streaming, bad, idempotency.NewKey(), idempotency.NewKey()), "carry different idempotency keys")
			refused(rawSend(t, c, streaming, bad, "", "short"), "Idempotency-Key header: idempotency key is too short")
			refused(rawSend(t, c, streaming, bad, "", key, key), "header is repeated")
			refused(rawSend(t, c, streaming, bad, key, "short"), "too short")
			wantRuns(t, s, 3)
		})
	}
}

// Through a2a-go's own gRPC client, the kit's refusals keep the A2A type a2a-go
// gives them (it types a status by its last ErrorInfo), with the kit's reason beside
// (TestReuseRefused: a key reused).
func TestRefusalsTypedForA2AGoClient(t *testing.T) {
	s := startServer(t, serverConfig{keyed: true})
	key := idempotency.NewKey()
	raw := s.raw(t)
	req := rawRequest(t, keyedRequest(t, key))
	_, _ = raw.SendMessage(context.Background(), req)
	_, err := raw.SendMessage(context.Background(), rawRequest(t, keyedRequest(t, key)))
	if g := statusOf(t, err); g.kitReason != middleware.ReasonKeyReused || g.info.GetDomain() != "a2a-protocol.org" {
		t.Fatalf("key reused: kit reason %q, last ErrorInfo %v; want %s, A2A's last", g.kitReason, g.info, middleware.ReasonKeyReused)
	}

	u := startServer(t, serverConfig{keyed: true, noIndex: true})
	_, err = u.client(t, a2a.TransportProtocolGRPC).SendMessage(context.Background(), keyedRequest(t, idempotency.NewKey()))
	if !errors.Is(err, a2a.ErrUnsupportedOperation) {
		t.Fatalf("cannot honour: %v, want a2a.ErrUnsupportedOperation", err)
	}
	_, err = u.raw(t).SendMessage(context.Background(), rawRequest(t, keyedRequest(t, idempotency.NewKey())))
	if g := statusOf(t, err); g.kitReason != middleware.ReasonCannotHonour {
		t.Fatalf("cannot honour: kit reason %q, want %s", g.kitReason, middleware.ReasonCannotHonour)
	}
}
