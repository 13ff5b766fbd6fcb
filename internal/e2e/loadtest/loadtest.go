// Package loadtest drives an A2A server that runs the kit with many concurrent keyed
// sends, and checks from the agent's own run counter that every key ran the agent at
// most once. internal/e2e/cmd/a2aload is its command line; the tests of this package run it
// against an in-process a2a-go server.
//
// Run has two phases. The load phase sends Config.Requests keyed sends (or stops
// after Config.Duration) from Config.Clients concurrent clients, on both bindings,
// unary and streaming: new keys, duplicates (a recent key with its own message
// again), conflicts (a recent key with a different message) and dropped sends (the
// client cancels mid-request, or closes a stream after its first event). The settle
// phase then resends, with the same key and message, every key that got no answer,
// until it is answered or Config.Settle runs out, the way a client retries.
//
// The checks, each a Violation when it fails:
//
//   - every answer for one key names the same task (or the same Message), and only
//     one of the key's messages is ever answered with a result;
//   - no key answered with a result is also answered TaskNotFound (the server keeps
//     every task while Run runs, so that answer can only come from a retry that the
//     server wrongly told its first attempt's task was gone);
//   - a conflicting send is refused with a message containing "already held", and
//     the message that holds the key never is;
//   - 409 and 503 answers carry Retry-After, and every answer to a keyed send names
//     the extension in A2A-Extensions;
//   - no other refusal (unless Config.TolerateErrors) and no unreadable answer;
//   - no two keys name the same task;
//   - when the server serves the middleware's metrics (Config.MetricsPath, the
//     format of middleware/metrics), the outcomes it observed agree with the
//     answers the clients got: each answer was observed as its outcome (a 503 as
//     unavailable, a 409 as in_flight, "already held" as conflict, a result as
//     claimed or replayed, ...), and the outcomes no answer matches are at most the
//     sends the clients dropped. The Report lists the outcomes next to the HTTP
//     statuses;
//   - the agent's run counter (GET Config.VarsPath, the expvar Config.RunsVar) grew by
//     at least the number of keys answered with a result and at most the number of
//     keys that may have run; when every key was answered, by exactly that number.
//
// The server must have no other clients while Run runs, since the counter counts
// every run.
package loadtest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/internal/testkit"
	"github.com/a2akit/idempotency/internal/testkit/wireclient"
)

// Config configures Run. Zero fields take the defaults named in their comments.
type Config struct {
	// BaseURL is the server's base URL, e.g. http://127.0.0.1:8080.
	BaseURL string
	// JSONRPCPath is the JSON-RPC endpoint; default "/jsonrpc".
	JSONRPCPath string
	// RESTPath is the mount point of the HTTP+JSON binding; default "/rest".
	RESTPath string
	// VarsPath serves the run counter as an expvar-style JSON object; default
	// "/debug/vars".
	VarsPath string
	// RunsVar names the run counter; default "agent_runs".
	RunsVar string
	// MetricsPath serves the middleware's outcomes in the Prometheus text format
	// (middleware/metrics); default "/metrics". A server that serves none there
	// (404) is checked without them.
	MetricsPath string
	// HTTPClient sends the requests; default a client over a fresh transport.
	HTTPClient *http.Client

	// Clients is how many clients send at once; default 32.
	Clients int
	// Requests bounds the sends of the load phase; default 2000.
	Requests int
	// Duration bounds the load phase; default 30s.
	Duration time.Duration
	// RequestTimeout bounds each send; default 30s.
	RequestTimeout time.Duration

	// Duplicates is the share of sends that repeat a recent key with its first
	// message; default 0.4. Conflicts is the share that reuse a recent key with a
	// different message; default 0.05. Drops is the share the client abandons
	// mid-request; default 0.05. Streaming is the share of streaming sends, and
	// JSONRPC the share of sends on the JSON-RPC binding (the others use HTTP+JSON);
	// default 0.5 each. Replies is the share of new keys whose text starts with
	// "reply", which the kit's test agent answers with a Message; default 0.
	// A negative value means 0.
	Duplicates, Conflicts, Drops, Streaming, JSONRPC, Replies float64
	// Recent is how many of the latest keys duplicates and conflicts pick from;
	// default twice Clients, so that duplicates often race their first send.
	Recent int

	// Settle bounds the settle phase; default 30s. Set it above the server's lease
	// when dropped sends may leave claims pending (a client that went away before the
	// agent started leaves its claim pending until the lease ends).
	Settle time.Duration
	// TolerateErrors accepts refusals other than the expected ones (an index failing
	// under a fault test makes the server refuse some sends); they are counted, and
	// the settle phase retries them.
	TolerateErrors bool
	// Seed seeds the choices; 0 picks one at random.
	Seed uint64
	// Logger receives progress; default discards.
	Logger *slog.Logger
}

func (c *Config) defaults() {
	def := func(p *float64, v float64) {
		switch {
		case *p == 0:
			*p = v
		case *p < 0:
			*p = 0
		}
	}
	def(&c.Duplicates, 0.4)
	def(&c.Conflicts, 0.05)
	def(&c.Drops, 0.05)
	def(&c.Streaming, 0.5)
	def(&c.JSONRPC, 0.5)
	c.Replies = max(c.Replies, 0)
	if c.JSONRPCPath == "" {
		c.JSONRPCPath = testkit.JSONRPCPath
	}
	if c.RESTPath == "" {
		c.RESTPath = testkit.RESTPath
	}
	if c.VarsPath == "" {
		c.VarsPath = testkit.VarsPath
	}
	if c.RunsVar == "" {
		c.RunsVar = testkit.RunsVar
	}
	if c.MetricsPath == "" {
		c.MetricsPath = testkit.MetricsPath
	}
	if c.Clients <= 0 {
		c.Clients = 32
	}
	if c.Requests <= 0 {
		c.Requests = 2000
	}
	if c.Duration <= 0 {
		c.Duration = 30 * time.Second
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = 30 * time.Second
	}
	if c.Recent <= 0 {
		c.Recent = 2 * c.Clients
	}
	if c.Settle <= 0 {
		c.Settle = 30 * time.Second
	}
	if c.Seed == 0 {
		c.Seed = rand.Uint64()
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.HTTPClient == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = 2 * c.Clients
		c.HTTPClient = &http.Client{Transport: tr}
	}
}

// Report is what Run saw.
type Report struct {
	Seed uint64
	// Sends counts the sends of both phases; Answers counts them by answer kind
	// ("task", "already-held", "in-flight", ...), with "dropped" for sends the client
	// abandoned before an answer and "no-answer" for transport failures.
	Sends   int
	Answers map[string]int
	// Statuses counts the answers by HTTP status.
	Statuses map[int]int
	// Outcomes counts the keyed sends the server's middleware observed during the
	// run, by outcome; nil when the server serves no metrics.
	Outcomes map[string]int64
	// Keys counts distinct keys; Conflicting the keys that were also sent with a
	// different message.
	Keys, Conflicting int
	// Answered counts keys answered with a result (task or Message), NotFound the
	// keys answered TaskNotFound, Unsettled the keys with neither when the settle phase
	// ended.
	Answered, NotFound, Unsettled int
	// RunsBefore and RunsAfter are the run counter before and after.
	RunsBefore, RunsAfter int64
	// LoadTime and SettleTime are how long the phases took.
	LoadTime, SettleTime time.Duration
	// Violations lists every check that failed.
	Violations []string
}

// Runs returns how many times the agent ran during Run.
func (r *Report) Runs() int64 { return r.RunsAfter - r.RunsBefore }

// OK reports whether every check passed.
func (r *Report) OK() bool { return len(r.Violations) == 0 }

// WriteTo writes a summary of r, its String.
func (r *Report) WriteTo(w io.Writer) (int64, error) {
	n, err := io.WriteString(w, r.String())
	return int64(n), err
}

// String returns a summary of r: the answers, the keys, the agent's runs and the
// violations.
func (r *Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "seed %d: %d sends in %v (load) + %v (settle)\n", r.Seed, r.Sends, r.LoadTime.Round(time.Millisecond), r.SettleTime.Round(time.Millisecond))
	kinds := make([]string, 0, len(r.Answers))
	for k := range r.Answers {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		fmt.Fprintf(&b, "  %-15s %d\n", k, r.Answers[k])
	}
	r.writeOutcomes(&b)
	fmt.Fprintf(&b, "keys: %d (%d also sent with another message); answered with a result %d, task not found %d, unsettled %d\n",
		r.Keys, r.Conflicting, r.Answered, r.NotFound, r.Unsettled)
	fmt.Fprintf(&b, "agent runs: %d (counter %d -> %d)\n", r.Runs(), r.RunsBefore, r.RunsAfter)
	if r.OK() {
		b.WriteString("OK: every key ran the agent at most once")
		if r.NotFound == 0 && r.Unsettled == 0 {
			b.WriteString(", and every key exactly once")
		}
		b.WriteString("\n")
	} else {
		fmt.Fprintf(&b, "%d VIOLATIONS:\n", len(r.Violations))
		for _, v := range r.Violations {
			fmt.Fprintf(&b, "  %s\n", v)
		}
	}
	return b.String()
}

// maxViolations bounds the violations a Report lists.
const maxViolations = 50

// keyState is what the clients know of one key.
type keyState struct {
	key      string
	mu       sync.Mutex
	messages []string // [0] is the key's own message; the others conflict with it
	texts    []string
	owner    string // the message answered with a result
	result   string // "task:<id>" or "message:<id>"
	notFound bool
	// notFoundFor lists the messages answered TaskNotFound.
	notFoundFor []string
	held        map[string]bool // messages refused as "already held"
}

// run is the state of one Run.
type run struct {
	cfg    Config
	client *wireclient.Client
	rng    *rand.Rand // guarded by mu
	mu     sync.Mutex
	keys   []*keyState
	report Report
	// markers holds every answer to wireclient.MarkerRule.
	markers wireclient.MarkerRule
}

// newRun returns the state of a run with cfg, which has its defaults set.
func newRun(cfg Config) *run {
	r := &run{
		cfg:    cfg,
		client: &wireclient.Client{BaseURL: cfg.BaseURL, JSONRPCPath: cfg.JSONRPCPath, RESTPath: cfg.RESTPath, HTTP: cfg.HTTPClient},
	}
	r.report.Answers = map[string]int{}
	r.report.Statuses = map[int]int{}
	return r
}

func (r *run) violation(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.report.Violations) < maxViolations {
		r.report.Violations = append(r.report.Violations, fmt.Sprintf(format, args...))
	} else if len(r.report.Violations) == maxViolations {
		r.report.Violations = append(r.report.Violations, "(more violations left out)")
	}
}

func (r *run) count(kind string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.report.Sends++
	r.report.Answers[kind]++
}

// job is one send of the load phase.
type job struct {
	k    *keyState
	i    int // index of the message in k.messages
	send wireclient.Send
	drop bool
}

// next returns the next job.
func (r *run) next() job {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := &r.cfg
	rng := r.rng
	var j job
	p := rng.Float64()
	recent := r.keys[max(0, len(r.keys)-c.Recent):]
	switch {
	case len(recent) > 0 && p < c.Duplicates:
		j.k = recent[rng.IntN(len(recent))]
	case len(recent) > 0 && p < c.Duplicates+c.Conflicts:
		j.k = recent[rng.IntN(len(recent))]
		j.k.mu.Lock()
		id := j.k.messages[0] + "-conflict-" + strconv.Itoa(len(j.k.messages))
		j.k.messages = append(j.k.messages, id)
		j.k.texts = append(j.k.texts, "conflicting send "+id)
		j.i = len(j.k.messages) - 1
		j.k.mu.Unlock()
	default:
		n := len(r.keys)
		key := idempotency.NewKey()
		id := fmt.Sprintf("load-%d-%s", n, key[:8])
		text := "hello " + id
		if rng.Float64() < c.Replies {
			text = "reply to " + id
		}
		j.k = &keyState{key: key, messages: []string{id}, texts: []string{text}, held: map[string]bool{}}
		r.keys = append(r.keys, j.k)
	}
	j.k.mu.Lock()
	j.send = wireclient.Send{MessageID: j.k.messages[j.i], Key: j.k.key, Text: j.k.texts[j.i], Binding: wireclient.HTTPJSON}
	j.k.mu.Unlock()
	if rng.Float64() < c.JSONRPC {
		j.send.Binding = wireclient.JSONRPC
	}
	j.send.Streaming = rng.Float64() < c.Streaming
	j.drop = rng.Float64() < c.Drops
	if j.drop && j.send.Streaming && rng.IntN(2) == 0 {
		j.send.StopAfterFirstEvent = true
	}
	return j
}

// Run runs the load and settle phases against cfg.BaseURL and checks the outcome. It
// returns an error only when it could not run (the run counter is unreadable);
// failed checks are the Report's Violations.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	cfg.defaults()
	r := newRun(cfg)
	r.rng = rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15))
	r.report.Seed = cfg.Seed
	before, err := r.readRuns(ctx)
	if err != nil {
		return nil, err
	}
	r.report.RunsBefore = before
	outcomes, served, err := r.readOutcomes(ctx)
	if err != nil {
		return nil, err
	}

	start := time.Now()
	r.load(ctx)
	r.report.LoadTime = time.Since(start)
	cfg.Logger.Info("load phase done", "sends", r.report.Sends, "keys", len(r.keys), "took", r.report.LoadTime)

	start = time.Now()
	r.settle(ctx)
	r.report.SettleTime = time.Since(start)

	after, err := r.stableRuns(ctx)
	if err != nil {
		return nil, err
	}
	r.report.RunsAfter = after
	if served {
		after, _, err := r.stableOutcomes(ctx)
		if err != nil {
			return nil, err
		}
		r.report.Outcomes = outcomesDuring(outcomes, after)
		r.checkOutcomes()
	}
	r.check()
	return &r.report, nil
}

// load runs the load phase.
func (r *run) load(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.Duration)
	defer cancel()
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		sends int
	)
	for range r.cfg.Clients {
		wg.Go(func() {
			for ctx.Err() == nil {
				mu.Lock()
				if sends >= r.cfg.Requests {
					mu.Unlock()
					return
				}
				sends++
				mu.Unlock()
				r.do(ctx, r.next())
			}
		})
	}
	wg.Wait()
}

// do sends j and records its answer.
func (r *run) do(ctx context.Context, j job) {
	sctx, cancel := context.WithTimeout(ctx, r.cfg.RequestTimeout)
	defer cancel()
	if j.drop && !j.send.StopAfterFirstEvent {
		r.mu.Lock()
		after := time.Duration(r.rng.Int64N(int64(3 * time.Millisecond)))
		r.mu.Unlock()
		t := time.AfterFunc(after, cancel)
		defer t.Stop()
	}
	a, err := r.client.Do(sctx, j.send)
	switch {
	case err == nil:
		r.record(j.k, j.send, a)
	case j.drop || ctx.Err() != nil:
		r.count("dropped")
	default:
		r.count("no-answer")
		r.cfg.Logger.Debug("send failed", "message", j.send.MessageID, "error", err)
	}
}

// record checks an answer to a send of k and records it.
func (r *run) record(k *keyState, s wireclient.Send, a wireclient.Answer) {
	r.count(a.Kind.String())
	r.markers.Check(s.Key, a)
	r.mu.Lock()
	r.report.Statuses[a.Status]++
	r.mu.Unlock()
	if !a.Extension {
		r.violation("message %s (%s): answer without the extension in A2A-Extensions: %v", s.MessageID, s.Binding, a)
	}
	// Violations are reported after k.mu is released: next takes r.mu, then k.mu.
	var vs []string
	defer func() {
		for _, v := range vs {
			r.violation("%s", v)
		}
	}()
	k.mu.Lock()
	defer k.mu.Unlock()
	switch a.Kind {
	case wireclient.Task, wireclient.Message:
		result := "task:" + a.TaskID
		if a.Kind == wireclient.Message {
			result = "message:" + a.MessageID
		}
		switch {
		case k.owner == "":
			k.owner, k.result = s.MessageID, result
		case k.owner != s.MessageID:
			vs = append(vs, fmt.Sprintf("key %s: messages %s and %s were both answered with a result (%s, %s)",
				idempotency.RedactKey(k.key), k.owner, s.MessageID, k.result, result))
		case k.result != result:
			vs = append(vs, fmt.Sprintf("key %s: answers for message %s name %s and %s", idempotency.RedactKey(k.key), s.MessageID, k.result, result))
		}
	case wireclient.TaskNotFound:
		k.notFound = true
		k.notFoundFor = append(k.notFoundFor, fmt.Sprintf("%s (%s, streaming %t)", s.MessageID, s.Binding, s.Streaming))
	case wireclient.AlreadyHeld:
		k.held[s.MessageID] = true
	case wireclient.InFlight, wireclient.Unavailable:
		if a.RetryAfter <= 0 {
			vs = append(vs, fmt.Sprintf("message %s (%s): %v without Retry-After", s.MessageID, s.Binding, a))
		}
	case wireclient.Refused:
		if !r.cfg.TolerateErrors {
			vs = append(vs, fmt.Sprintf("message %s (%s, streaming %t): unexpected refusal %v", s.MessageID, s.Binding, s.Streaming, a))
		}
	default:
		vs = append(vs, fmt.Sprintf("message %s (%s, streaming %t): unexpected answer %v: %.300s", s.MessageID, s.Binding, s.Streaming, a, a.Raw))
	}
}

// settle resends every key that has no answer until it has one or the settle phase
// ends.
func (r *run) settle(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.Settle)
	defer cancel()
	todo := make(chan *keyState)
	var wg sync.WaitGroup
	for range r.cfg.Clients {
		wg.Go(func() {
			for k := range todo {
				r.settleKey(ctx, k)
			}
		})
	}
	for _, k := range r.keys {
		k.mu.Lock()
		done := k.owner != "" || k.notFound
		k.mu.Unlock()
		if !done {
			todo <- k
		}
	}
	close(todo)
	wg.Wait()
}

// settleKey resends k's messages, in turn, until one is answered.
func (r *run) settleKey(ctx context.Context, k *keyState) {
	delay := 10 * time.Millisecond
	for i := 0; ctx.Err() == nil; i++ {
		k.mu.Lock()
		if k.owner != "" || k.notFound {
			k.mu.Unlock()
			return
		}
		m := i % len(k.messages)
		last := m == len(k.messages)-1
		s := wireclient.Send{Binding: wireclient.Bindings[i%2], MessageID: k.messages[m], Key: k.key, Text: k.texts[m]}
		k.mu.Unlock()
		sctx, cancel := context.WithTimeout(ctx, r.cfg.RequestTimeout)
		a, err := r.client.Do(sctx, s)
		cancel()
		wait := delay
		switch {
		case err != nil:
			if ctx.Err() == nil {
				r.count("no-answer")
			}
		case a.Kind == wireclient.AlreadyHeld && !last:
			r.record(k, s, a)
			continue // try the key's next message at once
		default:
			r.record(k, s, a)
			if a.RetryAfter > 0 {
				wait = min(a.RetryAfter, time.Second)
			}
		}
		delay = min(2*delay, time.Second)
		pause(ctx, wait)
	}
}

func (r *run) readRuns(ctx context.Context) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return testkit.ReadRuns(ctx, r.cfg.HTTPClient, r.cfg.BaseURL+r.cfg.VarsPath, r.cfg.RunsVar)
}

// stableRuns reads the run counter until two readings 100ms apart agree (runs of
// abandoned sends may still be starting), for at most two seconds.
func (r *run) stableRuns(ctx context.Context) (int64, error) {
	last, err := r.readRuns(ctx)
	for range 20 {
		if err != nil {
			return 0, err
		}
		time.Sleep(100 * time.Millisecond)
		var n int64
		n, err = r.readRuns(ctx)
		if err == nil && n == last {
			return n, nil
		}
		last = n
	}
	return last, err
}

// check runs the checks that need the whole run.
func (r *run) check() {
	rep := &r.report
	rep.Keys = len(r.keys)
	tasks := map[string]string{}
	var vs []string
	for _, k := range r.keys {
		k.mu.Lock()
		if len(k.messages) > 1 {
			rep.Conflicting++
		}
		switch {
		case k.owner != "":
			rep.Answered++
			if other, dup := tasks[k.result]; dup {
				vs = append(vs, fmt.Sprintf("keys %s and %s both name %s", idempotency.RedactKey(other), idempotency.RedactKey(k.key), k.result))
			}
			tasks[k.result] = k.key
			if len(k.notFoundFor) > 0 {
				vs = append(vs, fmt.Sprintf("key %s: answered %s, and also TaskNotFound to %s: a retry while the first "+
					"attempt was still running was told that its task does not exist", idempotency.RedactKey(k.key), k.result,
					strings.Join(k.notFoundFor, ", ")))
			}
			if k.held[k.owner] {
				vs = append(vs, fmt.Sprintf("key %s: message %s holds the key but was refused as already held", idempotency.RedactKey(k.key), k.owner))
			}
		case k.notFound:
			rep.NotFound++
		default:
			rep.Unsettled++
		}
		k.mu.Unlock()
	}
	for _, v := range vs {
		r.violation("%s", v)
	}
	if err := r.markers.Err(); err != nil {
		r.violation("%v", err)
	}
	// The run count's verdict goes first, past the bound on the list.
	runs := rep.Runs()
	lo, hi := int64(rep.Answered), int64(rep.Answered+rep.NotFound+rep.Unsettled)
	switch {
	case runs < lo:
		rep.Violations = append([]string{fmt.Sprintf("the agent ran %d times, but %d keys were answered with a result: "+
			"the run counter is wrong, or another server answered", runs, lo)}, rep.Violations...)
	case runs > hi:
		rep.Violations = append([]string{fmt.Sprintf("the agent ran %d times for %d keys that may have run "+
			"(%d answered with a result): some key ran more than once", runs, hi, lo)}, rep.Violations...)
	}
}

// BurstConfig configures Burst.
type BurstConfig struct {
	// BaseURL, JSONRPCPath, RESTPath, VarsPath, RunsVar and HTTPClient are as in
	// Config.
	BaseURL, JSONRPCPath, RESTPath, VarsPath, RunsVar string
	HTTPClient                                        *http.Client
	// Keys is how many keys each binding and mode sends; default 100.
	Keys int
	// Copies is how many identical sends of each key start at once; default 64.
	Copies int
	// Timeout bounds the whole burst; default 2 minutes.
	Timeout time.Duration
}

// Burst is SPEC §5's exactly-once check: on each binding, unary and streaming, it
// sends Copies identical keyed sends (same key, same message) of each of Keys keys at
// once, resending any that is answered 409 or 503 or fails, until each is answered.
// Then the agent must have run exactly Keys times for each binding and mode, and every
// answer for one key must name the same task. Failed checks are the Report's
// Violations; an error means Burst could not run.
func Burst(ctx context.Context, bc BurstConfig) (*Report, error) {
	if bc.Keys <= 0 {
		bc.Keys = 100
	}
	if bc.Copies <= 0 {
		bc.Copies = 64
	}
	if bc.Timeout <= 0 {
		bc.Timeout = 2 * time.Minute
	}
	cfg := Config{BaseURL: bc.BaseURL, JSONRPCPath: bc.JSONRPCPath, RESTPath: bc.RESTPath, VarsPath: bc.VarsPath,
		RunsVar: bc.RunsVar, HTTPClient: bc.HTTPClient, Clients: bc.Copies}
	cfg.defaults()
	r := newRun(cfg)
	ctx, cancel := context.WithTimeout(ctx, bc.Timeout)
	defer cancel()
	start := time.Now()
	first, err := r.readRuns(ctx)
	if err != nil {
		return nil, err
	}
	r.report.RunsBefore = first
	for _, b := range wireclient.Bindings {
		for _, streaming := range []bool{false, true} {
			before, err := r.readRuns(ctx)
			if err != nil {
				return nil, err
			}
			keys := make([]*keyState, bc.Keys)
			for i := range keys {
				key := idempotency.NewKey()
				id := fmt.Sprintf("burst-%s-%t-%d-%s", b, streaming, i, key[:8])
				keys[i] = &keyState{key: key, messages: []string{id}, texts: []string{"hello " + id}, held: map[string]bool{}}
				s := wireclient.Send{Binding: b, Streaming: streaming, MessageID: id, Key: key, Text: "hello " + id}
				go1 := make(chan struct{})
				var wg sync.WaitGroup
				for range bc.Copies {
					wg.Go(func() {
						<-go1
						r.untilAnswered(ctx, keys[i], s)
					})
				}
				close(go1)
				wg.Wait()
			}
			r.keys = append(r.keys, keys...)
			after, err := r.stableRuns(ctx)
			if err != nil {
				return nil, err
			}
			if got := after - before; got != int64(bc.Keys) {
				r.violation("%s, streaming %t: the agent ran %d times for %d keys sent %d times each", b, streaming, got, bc.Keys, bc.Copies)
			}
			if ctx.Err() != nil {
				r.violation("the burst ran out of time (%v)", bc.Timeout)
				break
			}
		}
	}
	r.report.LoadTime = time.Since(start)
	last, err := r.stableRuns(ctx)
	if err != nil {
		return nil, err
	}
	r.report.RunsAfter = last
	r.check()
	return &r.report, nil
}

// untilAnswered sends s, and sends it again after a 409, a 503 or a failure, until it
// is answered otherwise or ctx ends.
func (r *run) untilAnswered(ctx context.Context, k *keyState, s wireclient.Send) {
	delay := 10 * time.Millisecond
	for ctx.Err() == nil {
		sctx, cancel := context.WithTimeout(ctx, r.cfg.RequestTimeout)
		a, err := r.client.Do(sctx, s)
		cancel()
		wait := delay
		switch {
		case err != nil:
			if ctx.Err() == nil {
				r.count("no-answer")
			}
		case a.Kind == wireclient.InFlight || a.Kind == wireclient.Unavailable:
			r.record(k, s, a)
			if a.RetryAfter > 0 {
				wait = min(a.RetryAfter, time.Second)
			}
		default:
			r.record(k, s, a)
			return
		}
		delay = min(2*delay, time.Second)
		pause(ctx, wait)
	}
}

// pause waits for d, or until ctx ends.
func pause(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
