package grpcbinding

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/adapter"
	"github.com/a2akit/idempotency/internal/testkit"
)

// userMetadata names the caller in these tests, read by metadataAuth as a server's
// authentication would read a bearer token.
const userMetadata = "x-test-user"

// sendAs sends req over the generated client as user and returns what came back,
// named: "task <id>" or "message <text>" of the first answer.
func sendAs(ctx context.Context, c a2apb.A2AServiceClient, user string, streaming bool, req *a2apb.SendMessageRequest) (string, error) {
	ctx = metadata.AppendToOutgoingContext(ctx, userMetadata, user)
	name := func(task *a2apb.Task, msg *a2apb.Message) string {
		if msg != nil {
			return "message " + msg.GetParts()[0].GetText()
		}
		return "task " + task.GetId()
	}
	if !streaming {
		res, err := c.SendMessage(ctx, req)
		if err != nil {
			return "", err
		}
		return name(res.GetTask(), res.GetMessage()), nil
	}
	stream, err := c.SendStreamingMessage(ctx, req)
	if err != nil {
		return "", err
	}
	first := ""
	for {
		ev, err := stream.Recv()
		switch {
		case errors.Is(err, io.EOF):
			return first, nil
		case err != nil:
			return first, err
		case first == "":
			first = name(ev.GetTask(), ev.GetMessage())
		}
	}
}

// TestCallersOwnTheirKeys: with Options.Principal bound to the server's own
// authentication (Principal), another caller's gRPC retry of a caller's key and
// message gets INVALID_ARGUMENT "already held", never the first caller's task, stream
// or Message reply; the caller's own retry is replayed; the agent ran once.
func TestCallersOwnTheirKeys(t *testing.T) {
	for _, streaming := range []bool{false, true} {
		for _, word := range []string{"echo", "reply"} {
			t.Run(fmt.Sprintf("%s/stream=%v", word, streaming), func(t *testing.T) {
				agent := &testkit.Agent{ReplyPrefix: "reply"}
				s := startServer(t, serverConfig{agent: agent, keyed: true, interceptors: []a2asrv.CallInterceptor{testkit.UserAuth(userMetadata)},
					opts: Options{Principal: Principal(testkit.UserAuth(userMetadata))}})
				c := s.raw(t)
				msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(word+" secret of alice"))
				if err := adapter.SetMessageKey(msg, idempotency.NewKey()); err != nil {
					t.Fatal(err)
				}
				req := rawRequest(t, &a2a.SendMessageRequest{Message: msg})
				ctx := context.Background()
				want, err := sendAs(ctx, c, "alice", streaming, req)
				if err != nil {
					t.Fatalf("alice's send: %v", err)
				}
				got, err := sendAs(ctx, c, "mallory", streaming, req)
				if got != "" || err == nil {
					t.Fatalf("mallory's retry of alice's key: %q, %v; want the already-held refusal", got, err)
				}
				g := wantStatus(t, err, codes.InvalidArgument, "INVALID_PARAMS", "already held")
				if strings.Contains(g.message, "secret") || strings.Contains(g.message, string(msg.ID)) {
					t.Fatalf("the refusal discloses the first send: %s", g.message)
				}
				if got, err := sendAs(ctx, c, "alice", streaming, req); err != nil || got != want {
					t.Fatalf("alice's retry: %q, %v; want %q", got, err, want)
				}
				if n := agent.RunsOf(msg.ID); n != 1 {
					t.Fatalf("the agent ran %d times, want 1", n)
				}
			})
		}
	}
}

// TestCheckContent: with CheckContent on gRPC and HTTP alike, a gRPC retry with the
// first attempt's key and message id but another text is INVALID_ARGUMENT "already
// held", never replayed; the same message retried over gRPC and over JSON-RPC (a
// fingerprint of the same content across bindings) is replayed; the agent ran once.
func TestCheckContent(t *testing.T) {
	agent := &testkit.Agent{}
	s := startServer(t, serverConfig{agent: agent, keyed: true, opts: Options{CheckContent: true}})
	c := s.raw(t)
	msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("echo one"))
	msg.ReferenceTasks = []a2a.TaskID{"earlier"}
	if err := adapter.SetMessageKey(msg, idempotency.NewKey()); err != nil {
		t.Fatal(err)
	}
	req := &a2a.SendMessageRequest{Message: msg}
	ctx := context.Background()
	want, err := sendAs(ctx, c, "", false, rawRequest(t, req))
	if err != nil {
		t.Fatalf("first send: %v", err)
	}
	for _, streaming := range []bool{false, true} {
		if got, err := sendAs(ctx, c, "", streaming, rawRequest(t, req)); err != nil || got != want {
			t.Fatalf("retry (stream=%v): %q, %v; want %q", streaming, got, err, want)
		}
	}
	res, err := s.client(t, a2a.TransportProtocolJSONRPC).SendMessage(ctx, req)
	if task, ok := res.(*a2a.Task); err != nil || !ok || "task "+string(task.ID) != want {
		t.Fatalf("JSON-RPC retry of the same message: %v, %v; want %s", res, err, want)
	}
	changed := *msg
	changed.Parts = a2a.ContentParts{a2a.NewTextPart("echo two")}
	_, err = sendAs(ctx, c, "", false, rawRequest(t, &a2a.SendMessageRequest{Message: &changed}))
	wantStatus(t, err, codes.InvalidArgument, "INVALID_PARAMS", "already held")
	if n := agent.RunsOf(msg.ID); n != 1 {
		t.Fatalf("the agent ran %d times, want 1", n)
	}
}
