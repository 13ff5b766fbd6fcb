package adapter_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/a2aproject/a2a-go/v2/a2asrv/taskstore"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/adapter"
	"github.com/a2akit/idempotency/internal/testkit"
	"github.com/a2akit/idempotency/middleware"
)

func TestSetMessageKeyKeepsOtherMetadata(t *testing.T) {
	const other = "https://example.com/ext/geo/v1"
	msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("hi"))
	msg.Metadata = map[string]any{other: map[string]any{"lat": 1.5}}
	msg.Extensions = []string{other}
	key := idempotency.NewKey()

	if err := adapter.SetMessageKey(msg, key); err != nil {
		t.Fatal(err)
	}
	if _, ok := msg.Metadata[other]; !ok {
		t.Error("SetMessageKey dropped another extension's metadata")
	}
	if want := []string{other, idempotency.ExtensionURI}; !slices.Equal(msg.Extensions, want) {
		t.Errorf("extensions %v, want %v", msg.Extensions, want)
	}
	got, ok, err := adapter.MessageKey(msg)
	if err != nil || !ok || got != key {
		t.Errorf("MessageKey = %q, %v, %v; want %q, true, nil", got, ok, err, key)
	}

	// The key travels in the message's own metadata on the wire, as the middleware
	// reads it.
	wire, err := json.Marshal(msg)
	if err != nil {
		t.Fatal(err)
	}
	var decoded struct {
		Metadata map[string]any `json:"metadata"`
	}
	if err := json.Unmarshal(wire, &decoded); err != nil {
		t.Fatal(err)
	}
	if k, ok, err := idempotency.KeyOf(decoded.Metadata); err != nil || !ok || k != key {
		t.Errorf("the wire form carries key %q (ok=%v, err=%v), want %q", k, ok, err, key)
	}
}

func TestSetMessageKeyRefusesMalformedKey(t *testing.T) {
	msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("hi"))
	for key, want := range map[string]error{
		"short":                             idempotency.ErrKeyTooShort,
		"0123456789abcdef/":                 idempotency.ErrKeyInvalidCharacter,
		string(make([]byte, 256)):           idempotency.ErrKeyTooLong,
		"0123456789abcdef 0123456789abcdef": idempotency.ErrKeyInvalidCharacter,
	} {
		if err := adapter.SetMessageKey(msg, key); !errors.Is(err, want) {
			t.Errorf("SetMessageKey(%q) = %v, want %v", key, err, want)
		}
	}
	if msg.Metadata != nil || msg.Extensions != nil {
		t.Errorf("refused keys changed the message: metadata %v, extensions %v", msg.Metadata, msg.Extensions)
	}
}

func TestMessageKeyOfUnkeyedAndMalformed(t *testing.T) {
	if _, ok, err := adapter.MessageKey(nil); ok || err != nil {
		t.Errorf("MessageKey(nil) = %v, %v; want no key", ok, err)
	}
	msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("hi"))
	if _, ok, err := adapter.MessageKey(msg); ok || err != nil {
		t.Errorf("MessageKey(no metadata) = %v, %v; want no key", ok, err)
	}
	msg.Metadata = map[string]any{idempotency.MetadataKey: 42.0}
	if _, _, err := adapter.MessageKey(msg); !errors.Is(err, idempotency.ErrKeyNotString) {
		t.Errorf("MessageKey(number) error %v, want ErrKeyNotString", err)
	}
}

func TestDeclareExtensionLeavesOperatorEntry(t *testing.T) {
	mine := a2a.AgentExtension{URI: idempotency.ExtensionURI, Description: "ours", Required: true}
	card := &a2a.AgentCard{Capabilities: a2a.AgentCapabilities{Extensions: []a2a.AgentExtension{mine}}}
	if err := adapter.DeclareExtension(card); err != nil {
		t.Fatal(err)
	}
	if len(card.Capabilities.Extensions) != 1 || card.Capabilities.Extensions[0].Description != "ours" {
		t.Errorf("DeclareExtension changed the operator's entry: %+v", card.Capabilities.Extensions)
	}
	// A signed card that already declares it is fine as it is.
	card.Signatures = []a2a.AgentCardSignature{{Protected: "e30", Signature: "c2ln"}}
	if err := adapter.DeclareExtension(card); err != nil {
		t.Errorf("DeclareExtension on a signed card that declares the extension: %v", err)
	}
	signed := &a2a.AgentCard{Signatures: card.Signatures}
	if err := adapter.DeclareExtension(signed); !errors.Is(err, adapter.ErrCardSigned) || len(signed.Capabilities.Extensions) != 0 {
		t.Errorf("DeclareExtension on a signed card: %v, extensions %v; want ErrCardSigned and no change", err, signed.Capabilities.Extensions)
	}
}

// userFromHeader is the test server's authentication: the X-User header names the
// caller.
type userFromHeader struct {
	a2asrv.PassthroughCallInterceptor
}

func (userFromHeader) Before(ctx context.Context, callCtx *a2asrv.CallContext, req *a2asrv.Request) (context.Context, any, error) {
	if v, ok := callCtx.ServiceParams().Get("X-User"); ok && len(v) == 1 {
		callCtx.User = a2asrv.NewAuthenticatedUser(v[0], nil)
	}
	return ctx, nil, nil
}

// TaskReader reads a task as its owner: with the user the server's authentication
// would see, and hides it from anyone else as not found.
func TestTaskReaderOwnership(t *testing.T) {
	agent := &testkit.Agent{}
	srv := testkit.NewServer(t, testkit.Config{Executor: agent,
		HandlerOptions: []a2asrv.RequestHandlerOption{a2asrv.WithCallInterceptors(userFromHeader{})},
	})
	alice := httptest.NewRequest(http.MethodPost, "/jsonrpc", nil)
	alice.Header.Set("X-User", "alice")

	// alice creates a task.
	ctx := a2aclient.AttachServiceParams(context.Background(), a2aclient.ServiceParams{"X-User": {"alice"}})
	res, err := client(t, srv.Card, a2a.TransportProtocolJSONRPC).SendMessage(ctx, &a2a.SendMessageRequest{
		Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("mine")),
	})
	if err != nil {
		t.Fatal(err)
	}
	task := res.(*a2a.Task)

	byHeader := adapter.NewTaskReader(srv.Store, adapter.TaskReaderOptions{
		User: func(ctx context.Context, r *http.Request) (*a2asrv.User, error) {
			if name := r.Header.Get("X-User"); name != "" {
				return a2asrv.NewAuthenticatedUser(name, nil), nil
			}
			return nil, nil
		},
	})
	body, err := byHeader.ReadTask(context.Background(), alice, "", string(task.ID))
	if err != nil {
		t.Fatalf("alice reading her task: %v", err)
	}
	var got a2a.Task
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	if got.ID != task.ID || got.Status.State != a2a.TaskStateCompleted || len(got.History) != len(task.History) || len(got.Artifacts) != 1 {
		t.Errorf("read %+v, want task %s as the send returned it", got, task.ID)
	}

	anonymous := httptest.NewRequest(http.MethodPost, "/jsonrpc", nil)
	for name, reader := range map[string]*adapter.TaskReader{
		"anonymous default":   adapter.NewTaskReader(srv.Store, adapter.TaskReaderOptions{}),
		"anonymous by header": byHeader,
	} {
		if _, err := reader.ReadTask(context.Background(), anonymous, "", string(task.ID)); !errors.Is(err, middleware.ErrTaskNotFound) {
			t.Errorf("%s reading alice's task: %v, want ErrTaskNotFound", name, err)
		}
	}
	if _, err := byHeader.ReadTask(context.Background(), alice, "", "no-such-task"); !errors.Is(err, middleware.ErrTaskNotFound) {
		t.Errorf("reading a task that does not exist: %v, want ErrTaskNotFound", err)
	}
}

// failingStore is a task store whose reads fail the way a database's do, with text
// that must never reach a client.
type failingStore struct {
	taskstore.Store
	err error
}

func (s failingStore) Get(ctx context.Context, id a2a.TaskID) (*taskstore.StoredTask, error) {
	return nil, s.err
}

// TaskReader's errors say what happened, not what the store said: the store's text
// (a host name, a SQL statement) goes to the log, and stays in the error chain for
// errors.Is.
func TestTaskReaderErrorsHideStoreText(t *testing.T) {
	const secret = `pq: password authentication failed for user "app" (host db-7.internal)`
	var logs strings.Builder
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	r := httptest.NewRequest(http.MethodPost, "/jsonrpc", nil)
	for name, tc := range map[string]struct {
		err      error
		notFound bool
	}{
		"store down": {err: errors.New(secret)},
		"not found":  {err: fmt.Errorf("%w: %s", a2a.ErrTaskNotFound, secret), notFound: true},
		"deadline":   {err: fmt.Errorf("%s: %w", secret, context.DeadlineExceeded)},
	} {
		logs.Reset()
		reader := adapter.NewTaskReader(failingStore{err: tc.err}, adapter.TaskReaderOptions{Logger: logger})
		_, err := reader.ReadTask(context.Background(), r, "", "task-1")
		if err == nil || strings.Contains(err.Error(), "db-7") || strings.Contains(err.Error(), "password") {
			t.Errorf("%s: error %q, want one without the store's text", name, err)
		}
		if !errors.Is(err, tc.err) || errors.Is(err, middleware.ErrTaskNotFound) != tc.notFound {
			t.Errorf("%s: error %v does not wrap the store's error (or ErrTaskNotFound=%v)", name, err, tc.notFound)
		}
		if !tc.notFound && !strings.Contains(logs.String(), "db-7") {
			t.Errorf("%s: the store's error was not logged:\n%s", name, logs.String())
		}
	}
}
