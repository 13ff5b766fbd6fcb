// Package retrydemo shows, against a running example server (examples/stdlib or
// examples/chi), the problem an idempotency key solves and the cure. The demo client
// (examples/demo) runs it for people to watch; the examples' tests run it to prove
// that what it prints is true.
//
// Run goes through four steps, printing what happens:
//
//  1. The problem: a message sent without a key, the client giving up while the agent
//     works (a cut connection), the same message sent again. The agent runs twice, and
//     there are two tasks.
//  2. The cure: a message sent with a key (adapter.SetMessageKey), cut the same way,
//     then retried with the same key and message until its task is done. Every answer
//     names the task the first attempt created, and the agent runs once.
//  3. The same key on a different message: the server refuses the send ("already
//     held").
//  4. The same in production form: a client built with keyedclient, whose HTTP
//     timeout cuts the first attempt, keys the send and retries it by itself; the
//     one call returns the first attempt's task, and the agent runs once.
//
// The agent's runs are read from the server's /debug/vars (expvar agent_runs) before
// and after each step, so the counts include any other client's sends: run the demo
// alone.
package retrydemo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/adapter"
	"github.com/a2akit/idempotency/adapter/keyedclient"
)

// Defaults of Options.
const (
	DefaultCut      = 500 * time.Millisecond
	DefaultInterval = 500 * time.Millisecond
)

// Options configure Run.
type Options struct {
	// URL is the server's base URL, where its agent card and /debug/vars are served.
	URL string
	// Binding is the A2A binding to send on: "jsonrpc" (the default) or "rest"
	// (HTTP+JSON).
	Binding string
	// Tenant, when set, is sent as the A2A tenant: in params.tenant on JSON-RPC, and on
	// HTTP+JSON through the card's interface with a tenant path segment.
	Tenant string
	// Cut is how long the client waits for the first attempt of a send before it gives
	// up, as if the connection had dropped; default DefaultCut. Start the server with a
	// -delay longer than Cut.
	Cut time.Duration
	// Interval is the pause between retries while the task is still running; default
	// DefaultInterval.
	Interval time.Duration
	// Out receives the demonstration's narrative; nil discards it.
	Out io.Writer
}

// Answer is what one answer to a send named.
type Answer struct {
	// Kind is "task" or "message".
	Kind string
	// ID is the task's id, or the reply Message's messageId.
	ID string
	// State is the task's state; empty for a Message.
	State a2a.TaskState
	// Text is the echo: the text of the task's artifacts, or of the Message.
	Text string
}

// Final reports whether the answer is the end of the send: a Message, or a task in a
// terminal state.
func (a Answer) Final() bool { return a.Kind == "message" || a.State.Terminal() }

func (a Answer) String() string {
	s := a.Kind + " " + a.ID
	if a.State != "" {
		s += ", " + string(a.State)
	}
	if a.Text != "" {
		s += fmt.Sprintf(", %q", a.Text)
	}
	return s
}

// Report is what Run observed.
type Report struct {
	// Step 1: the unkeyed message sent twice.
	UnkeyedCut    bool   // the first attempt was cut before it was answered
	UnkeyedAnswer Answer // the answer to the second send
	UnkeyedRuns   int64  // the agent's runs during step 1

	// Step 2: the keyed message, cut and retried.
	KeyedCut  bool     // the first attempt was cut before it was answered
	Answers   []Answer // the answers, in order (the first attempt's too when it was not cut)
	KeyedRuns int64    // the agent's runs during step 2

	// Step 3: the key reused for a different message.
	Refusal error // the error the send got; nil when it was accepted

	// Step 4: keyedclient.
	AutoAnswer Answer // what the one call returned
	AutoRuns   int64  // the agent's runs during step 4
}

// Check returns an error when the report shows that the cure did not hold: the keyed
// send ran the agent other than once, its answers named different tasks (or
// Messages), the last one is not final, the reused key was accepted, or keyedclient's
// send ran the agent other than once.
func (r *Report) Check() error {
	var errs []error
	if r.KeyedRuns != 1 {
		errs = append(errs, fmt.Errorf("the keyed send ran the agent %d times, want 1", r.KeyedRuns))
	}
	for _, a := range r.Answers {
		if a.ID != r.Answers[0].ID || a.Kind != r.Answers[0].Kind {
			errs = append(errs, fmt.Errorf("the keyed send's answers name different results: %v and %v", r.Answers[0], a))
			break
		}
	}
	if len(r.Answers) == 0 || !r.Answers[len(r.Answers)-1].Final() {
		errs = append(errs, errors.New("the keyed send never got a final answer"))
	}
	if r.Refusal == nil || !strings.Contains(r.Refusal.Error(), "already held") {
		errs = append(errs, fmt.Errorf("the key reused for a different message was not refused as already held: %v", r.Refusal))
	}
	if r.AutoRuns != 1 {
		errs = append(errs, fmt.Errorf("keyedclient's send ran the agent %d times, want 1", r.AutoRuns))
	}
	return errors.Join(errs...)
}

// Run runs the demonstration against the server at opts.URL. It returns an error when
// a step could not be carried out (the server is unreachable, a send failed
// unexpectedly); what the steps observed is in the Report, which Report.Check judges.
func Run(ctx context.Context, opts Options) (*Report, error) {
	d, err := newDemo(ctx, opts)
	if err != nil {
		return nil, err
	}
	rep := &Report{}
	for _, step := range []func(context.Context, *Report) error{d.problem, d.cure, d.reuse, d.keyedClient} {
		if err := step(ctx, rep); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// demo is one run of the demonstration.
type demo struct {
	opts  Options
	out   io.Writer
	base  string
	card  *a2a.AgentCard // the server's card, narrowed to the interface in use
	plain *a2aclient.Client
	keyed *a2aclient.Client
	http  *http.Client

	reusedKey string // the key of step 2, which step 3 reuses
}

func newDemo(ctx context.Context, opts Options) (*demo, error) {
	if opts.Cut <= 0 {
		opts.Cut = DefaultCut
	}
	if opts.Interval <= 0 {
		opts.Interval = DefaultInterval
	}
	if opts.Binding == "" {
		opts.Binding = "jsonrpc"
	}
	d := &demo{opts: opts, out: opts.Out, base: strings.TrimSuffix(opts.URL, "/"), http: &http.Client{Timeout: 10 * time.Second}}
	if d.out == nil {
		d.out = io.Discard
	}
	card, err := agentcard.NewResolver(d.http).Resolve(ctx, d.base)
	if err != nil {
		return nil, fmt.Errorf("read the agent card: %w", err)
	}
	iface, err := pickInterface(card, opts.Binding, opts.Tenant)
	if err != nil {
		return nil, err
	}
	narrowed := *card
	narrowed.SupportedInterfaces = []*a2a.AgentInterface{iface}
	d.card = &narrowed

	// A client as a2a-go builds it, and one whose sends keyedclient keys and retries.
	if d.plain, err = a2aclient.NewFromCard(ctx, d.card); err != nil {
		return nil, err
	}
	if d.keyed, err = a2aclient.NewFromCard(ctx, d.card, keyedclient.FactoryOptions(keyedclient.Options{Logger: d.logger()})...); err != nil {
		return nil, err
	}

	d.printf("%s at %s, %s binding: %s", card.Name, d.base, iface.ProtocolBinding, iface.URL)
	if iface.Tenant != "" {
		d.printf(", tenant %q", iface.Tenant)
	}
	d.printf("\nthe agent card declares the idempotency extension: %v\n", adapter.DeclaresExtension(card))
	return d, nil
}

// pickInterface returns a copy of the card's interface for binding ("jsonrpc" or
// "rest"). With a tenant, the HTTP+JSON interface is the one with a tenant path
// segment (the card names a tenant on it), and the copy names tenant instead.
func pickInterface(card *a2a.AgentCard, binding, tenant string) (*a2a.AgentInterface, error) {
	var protocol a2a.TransportProtocol
	switch binding {
	case "jsonrpc":
		protocol = a2a.TransportProtocolJSONRPC
	case "rest":
		protocol = a2a.TransportProtocolHTTPJSON
	default:
		return nil, fmt.Errorf("binding %q: want jsonrpc or rest", binding)
	}
	for _, iface := range card.SupportedInterfaces {
		if iface.ProtocolBinding != protocol {
			continue
		}
		// JSON-RPC carries the tenant in the request body on any endpoint; HTTP+JSON
		// needs the endpoint with a tenant path segment, which the card marks with a
		// tenant of its own.
		if protocol == a2a.TransportProtocolHTTPJSON && (tenant != "") != (iface.Tenant != "") {
			continue
		}
		picked := *iface
		if tenant != "" {
			picked.Tenant = tenant
		}
		return &picked, nil
	}
	if tenant != "" {
		return nil, fmt.Errorf("the agent card lists no %s interface for tenant %q", protocol, tenant)
	}
	return nil, fmt.Errorf("the agent card lists no %s interface", protocol)
}

// problem is step 1: an unkeyed message, cut and sent again, runs the agent twice.
func (d *demo) problem(ctx context.Context, rep *Report) error {
	d.printf("\n1. The problem: a send without an idempotency key\n")
	before, err := d.agentRuns(ctx)
	if err != nil {
		return err
	}
	msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("hello without a key"))
	first, cut, err := d.sendCut(ctx, d.plain, msg)
	if err != nil {
		return fmt.Errorf("unkeyed send: %w", err)
	}
	rep.UnkeyedCut = cut
	if !cut {
		d.printf("   (the server answered the first attempt within %v: %v; start it with a longer -delay to see the problem)\n", d.opts.Cut, answerOf(first))
	}
	res, err := d.plain.SendMessage(ctx, &a2a.SendMessageRequest{Message: msg})
	if err != nil {
		return fmt.Errorf("unkeyed re-send: %w", err)
	}
	rep.UnkeyedAnswer = answerOf(res)
	d.printf("   sent it again (same message, same messageId): %v\n", rep.UnkeyedAnswer)
	after, err := d.agentRuns(ctx)
	if err != nil {
		return err
	}
	rep.UnkeyedRuns = after - before
	d.printf("   agent_runs %d -> %d: the agent ran %s for one message\n", before, after, times(rep.UnkeyedRuns))
	return nil
}

// cure is step 2: a keyed message, cut and retried, runs the agent once, and every
// answer names the same task.
func (d *demo) cure(ctx context.Context, rep *Report) error {
	key := idempotency.NewKey()
	d.printf("\n2. The cure: the same with an idempotency key (%s)\n", idempotency.RedactKey(key))
	before, err := d.agentRuns(ctx)
	if err != nil {
		return err
	}
	msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("hello with a key"))
	if err := adapter.SetMessageKey(msg, key); err != nil {
		return err
	}
	first, cut, err := d.sendCut(ctx, d.keyed, msg)
	if err != nil {
		return fmt.Errorf("keyed send: %w", err)
	}
	rep.KeyedCut = cut
	if !cut {
		rep.Answers = append(rep.Answers, answerOf(first))
		d.printf("   (the server answered the first attempt within %v: %v; start it with a longer -delay to see a cut)\n", d.opts.Cut, rep.Answers[0])
	}
	// Retry at least once, and until the answer is final.
	for n := 1; n == 1 || !rep.Answers[len(rep.Answers)-1].Final(); n++ {
		if n > 1 {
			if err := sleep(ctx, d.opts.Interval); err != nil {
				return err
			}
		}
		res, err := d.keyed.SendMessage(ctx, &a2a.SendMessageRequest{Message: msg})
		if err != nil {
			return fmt.Errorf("keyed retry %d: %w", n, err)
		}
		a := answerOf(res)
		rep.Answers = append(rep.Answers, a)
		d.printf("   retry %d, same key and message: %v\n", n, a)
	}
	after, err := d.agentRuns(ctx)
	if err != nil {
		return err
	}
	rep.KeyedRuns = after - before
	same := true
	for _, a := range rep.Answers {
		same = same && a.ID == rep.Answers[0].ID
	}
	if same {
		d.printf("   all %d answers name %s %s\n", len(rep.Answers), rep.Answers[0].Kind, rep.Answers[0].ID)
	} else {
		d.printf("   the answers name different results\n")
	}
	d.printf("   agent_runs %d -> %d: the agent ran %s\n", before, after, times(rep.KeyedRuns))

	// Step 3 reuses the key.
	d.reusedKey = key
	return nil
}

// reuse is step 3: the key of step 2 on a different message is refused.
func (d *demo) reuse(ctx context.Context, rep *Report) error {
	d.printf("\n3. The same key on a different message\n")
	msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("a different message"))
	if err := adapter.SetMessageKey(msg, d.reusedKey); err != nil {
		return err
	}
	res, err := d.keyed.SendMessage(ctx, &a2a.SendMessageRequest{Message: msg})
	if err == nil {
		d.printf("   accepted: %v\n", answerOf(res))
		return nil
	}
	rep.Refusal = err
	d.printf("   refused: %v\n", err)
	return nil
}

// keyedClient is step 4: keyedclient keys a send and retries it after its HTTP
// client's timeout cut the first attempt.
func (d *demo) keyedClient(ctx context.Context, rep *Report) error {
	d.printf("\n4. keyedclient does it for you: a key on every send, retries after a timeout\n")
	auto, err := a2aclient.NewFromCard(ctx, d.card, keyedclient.FactoryOptions(keyedclient.Options{
		// The HTTP client gives up on each attempt after Cut, like a dropped connection.
		// A retry is answered at once, from the first attempt's task.
		HTTPClient: &http.Client{Timeout: d.opts.Cut},
		Retry:      keyedclient.RetryPolicy{InitialDelay: d.opts.Interval},
		Logger:     d.logger(),
	})...)
	if err != nil {
		return err
	}
	before, err := d.agentRuns(ctx)
	if err != nil {
		return err
	}
	res, err := auto.SendMessage(ctx, &a2a.SendMessageRequest{
		Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("hello from keyedclient")),
	})
	if err != nil {
		return fmt.Errorf("keyedclient send: %w", err)
	}
	rep.AutoAnswer = answerOf(res)
	after, err := d.agentRuns(ctx)
	if err != nil {
		return err
	}
	rep.AutoRuns = after - before
	d.printf("   one SendMessage call returned: %v\n", rep.AutoAnswer)
	d.printf("   agent_runs %d -> %d: the agent ran %s\n", before, after, times(rep.AutoRuns))
	return nil
}

// sendCut sends msg and gives up after Cut. cut reports whether it gave up; res is
// the answer when it did not.
func (d *demo) sendCut(ctx context.Context, client *a2aclient.Client, msg *a2a.Message) (res a2a.SendMessageResult, cut bool, err error) {
	cutCtx, cancel := context.WithTimeout(ctx, d.opts.Cut)
	defer cancel()
	d.printf("   sent %q (messageId %s)\n", msg.Parts[0].Text(), msg.ID)
	res, err = client.SendMessage(cutCtx, &a2a.SendMessageRequest{Message: msg})
	if err != nil && cutCtx.Err() != nil && ctx.Err() == nil {
		d.printf("   no answer after %v: the client gave up (%v), as if the connection had dropped;\n"+
			"   did the server get the message? the client cannot know\n", d.opts.Cut, cutCtx.Err())
		return nil, true, nil
	}
	return res, false, err
}

// agentRuns reads agent_runs from the server's /debug/vars.
func (d *demo) agentRuns(ctx context.Context) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, d.base+"/debug/vars", nil)
	if err != nil {
		return 0, err
	}
	resp, err := d.http.Do(req)
	if err != nil {
		return 0, fmt.Errorf("read agent_runs: %w", err)
	}
	defer resp.Body.Close()
	var vars struct {
		AgentRuns *int64 `json:"agent_runs"`
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("read agent_runs: GET %s/debug/vars: %s", d.base, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(&vars); err != nil || vars.AgentRuns == nil {
		return 0, fmt.Errorf("read agent_runs: %s/debug/vars has no agent_runs (is this one of the kit's example servers?)", d.base)
	}
	return *vars.AgentRuns, nil
}

// logger returns the logger keyedclient reports its retries to: the narrative.
func (d *demo) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(indent{d.out}, &slog.HandlerOptions{
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	}))
}

func (d *demo) printf(format string, args ...any) { fmt.Fprintf(d.out, format, args...) }

// indent writes each record of the logger indented under the step it belongs to.
type indent struct{ w io.Writer }

func (i indent) Write(p []byte) (int, error) {
	if _, err := io.WriteString(i.w, "   keyedclient: "); err != nil {
		return 0, err
	}
	return i.w.Write(p)
}

// answerOf describes the answer to a send.
func answerOf(res a2a.SendMessageResult) Answer {
	switch v := res.(type) {
	case *a2a.Task:
		a := Answer{Kind: "task", ID: string(v.ID), State: v.Status.State}
		var texts []string
		for _, art := range v.Artifacts {
			texts = append(texts, partsText(art.Parts))
		}
		a.Text = strings.Join(texts, " ")
		return a
	case *a2a.Message:
		return Answer{Kind: "message", ID: v.ID, Text: partsText(v.Parts)}
	}
	return Answer{Kind: fmt.Sprintf("%T", res)}
}

func partsText(parts a2a.ContentParts) string {
	var texts []string
	for _, p := range parts {
		if t := p.Text(); t != "" {
			texts = append(texts, t)
		}
	}
	return strings.Join(texts, " ")
}

func times(n int64) string {
	if n == 1 {
		return "once"
	}
	return fmt.Sprintf("%d times", n)
}

func sleep(ctx context.Context, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
