//go:build cgo

package main

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/adapter"
	"github.com/a2akit/idempotency/adapter/keyedclient"
	"github.com/a2akit/idempotency/examples/internal/echo"
	"github.com/a2akit/idempotency/grpcbinding"
	"github.com/a2akit/idempotency/internal/testkit/examplerun"
)

// TestGRPC checks the gRPC binding: the card lists it, a keyed send over gRPC and its
// retries get one task, also when the retry comes over JSON-RPC, and the agent runs
// once.
func TestGRPC(t *testing.T) {
	srv := examplerun.Start(t, run, "-grpc", "127.0.0.1:0", "-store", filepath.Join(t.TempDir(), "keys.db"), "-delay", "0")
	target := srv.GRPC
	if target == "" {
		t.Fatalf("the server printed no gRPC address:\n%s", strings.Join(srv.Banner, "\n"))
	}
	ctx := context.Background()
	card, err := agentcard.DefaultResolver.Resolve(ctx, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(card.SupportedInterfaces, func(i *a2a.AgentInterface) bool {
		return i.ProtocolBinding == a2a.TransportProtocolGRPC && i.URL == target
	}) {
		t.Fatalf("the card lists no gRPC interface at %s: %+v", target, card.SupportedInterfaces)
	}
	client := func(binding a2a.TransportProtocol) *a2aclient.Client {
		opts := append(keyedclient.FactoryOptions(keyedclient.Options{}),
			grpcbinding.WithKeyedTransport(keyedclient.Options{}, grpc.WithTransportCredentials(insecure.NewCredentials())),
			a2aclient.WithConfig(a2aclient.Config{PreferredTransports: []a2a.TransportProtocol{binding}}))
		c, err := a2aclient.NewFromCard(ctx, card, opts...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Destroy() })
		return c
	}

	before := agentRuns(t, srv.URL)
	msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("over gRPC"))
	if err := adapter.SetMessageKey(msg, idempotency.NewKey()); err != nil {
		t.Fatal(err)
	}
	var ids []a2a.TaskID
	for _, binding := range []a2a.TransportProtocol{a2a.TransportProtocolGRPC, a2a.TransportProtocolGRPC, a2a.TransportProtocolJSONRPC} {
		res, err := client(binding).SendMessage(ctx, &a2a.SendMessageRequest{Message: msg})
		if err != nil {
			t.Fatalf("%s: %v", binding, err)
		}
		task, ok := res.(*a2a.Task)
		if !ok {
			t.Fatalf("%s: %T, want a task", binding, res)
		}
		ids = append(ids, task.ID)
	}
	if ids[1] != ids[0] || ids[2] != ids[0] {
		t.Fatalf("tasks %v, want one task for the key over both bindings", ids)
	}
	if runs := agentRuns(t, srv.URL) - before; runs != 1 {
		t.Fatalf("the agent ran %d times, want 1", runs)
	}
}

// agentRuns reads agent_runs from the server's /debug/vars.
func agentRuns(t *testing.T, url string) int64 {
	t.Helper()
	resp, err := http.Get(url + echo.VarsPath)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var vars struct {
		Runs int64 `json:"agent_runs"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&vars); err != nil {
		t.Fatal(err)
	}
	return vars.Runs
}
