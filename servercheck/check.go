package servercheck

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Options configure a run. The zero value is ready to use.
type Options struct {
	// HTTPClient sends the requests; nil: a client of its own, with no overall
	// timeout (each request is bounded by the run's deadline and RequestTimeout).
	HTTPClient *http.Client
	// Timeout bounds the whole run; 0: 3 minutes.
	Timeout time.Duration
	// AgentDelay is how long the agent usually takes to answer a send: a hint. The
	// checker waits that much longer for each answer, and times the retries that
	// must arrive during a run by it. 0: the agent answers at once.
	AgentDelay time.Duration
	// RequestTimeout bounds one request; 0: 15 s plus twice AgentDelay.
	RequestTimeout time.Duration
	// Concurrency is the number of identical sends of the concurrent check; 0: 8.
	Concurrency int
	// MaxRequests bounds the number of requests of the whole run; 0: 300.
	MaxRequests int
	// Text begins the text of every message the checker sends; empty:
	// "idempotency check". An agent that answers some texts with a Message and
	// others with a task can be steered with it.
	Text string
	// Force runs the checks on a server whose card does not list the extension.
	Force bool
	// Only, when not empty, runs only the checks whose IDs it lists (the card is
	// always read).
	Only []string
	// Header is added to every request (an Authorization header, say).
	Header http.Header
}

// Status is the outcome of one check.
type Status string

// The statuses. Only Fail makes a report fail.
const (
	// Pass: the server did what SPEC requires.
	Pass Status = "pass"
	// Fail: the server did not; the result names the exchange that showed it.
	Fail Status = "fail"
	// NotClaimed: an optional behaviour (the replay marker, the header carrier)
	// that the server does not show, so nothing to hold it to.
	NotClaimed Status = "not claimed"
	// NotApplicable: the server's answers give the check nothing to check (a Message
	// replay against a server that answers with tasks).
	NotApplicable Status = "n/a"
	// NotChecked: the check could not run (a gRPC interface, the request budget or
	// the deadline ran out, a transport failure before the server answered).
	NotChecked Status = "not checked"
)

// Check describes one check.
type Check struct {
	// ID names the check (in Options.Only, the table and the JSON).
	ID string `json:"id"`
	// Title says what it checks, in a sentence.
	Title string `json:"title"`
	// Spec is its reference in SPEC.md.
	Spec string `json:"spec"`
}

// Result is the outcome of one check on one interface (or of the card check).
type Result struct {
	Check
	// Interface is the interface checked, as "JSONRPC 1.0 http://…"; empty for the
	// card.
	Interface string `json:"interface,omitempty"`
	Status    Status `json:"status"`
	// Detail says what was seen, in a sentence or two: on failure, what was wrong.
	Detail string `json:"detail"`
	// Exchanges are the exchanges that showed a failure (the first one first), or,
	// for a pass, none.
	Exchanges []*Exchange `json:"exchanges,omitempty"`
}

// Exchange is one request and what came back, as text a person reads (bodies cut to
// a few kilobytes).
type Exchange struct {
	Request  string `json:"request"`
	Response string `json:"response"`
	// Elapsed is how long the answer took, in milliseconds.
	Elapsed int64 `json:"elapsedMs"`
}

// Report is the outcome of a run.
type Report struct {
	// URL is the base URL checked.
	URL string `json:"url"`
	// CardURL is where the card was read.
	CardURL string `json:"cardUrl"`
	// Advertised reports whether the card lists the extension.
	Advertised bool `json:"advertised"`
	// Interfaces are the interfaces the card lists.
	Interfaces []Interface `json:"interfaces"`
	// Results are the outcomes, the card's first, then interface by interface.
	Results []Result `json:"results"`
	// Requests is how many requests the run sent, card included.
	Requests int64 `json:"requests"`
	// Duration is how long the run took, in milliseconds.
	Duration int64 `json:"durationMs"`
	// Verdict is "pass", "fail", "not advertised", or "incomplete" when no check
	// failed but some could not run (the deadline or the request budget ran out,
	// the server did not answer).
	Verdict string `json:"verdict"`
}

// OK reports whether everything the server claims holds: the extension is
// advertised (or the checks were forced) and no check failed.
func (r *Report) OK() bool { return r.Verdict == verdictPass }

// The verdicts.
const (
	verdictPass          = "pass"
	verdictFail          = "fail"
	verdictNotAdvertised = "not advertised"
	verdictIncomplete    = "incomplete"
)

// incomplete reports whether a check of an interface the checker speaks could not
// run (the deadline, the request budget, a transport failure): then the report
// cannot say that everything claimed holds.
func (r *Report) incomplete() bool {
	for _, res := range r.Results {
		if res.Status == NotChecked && res.ID != checkInterface.ID {
			return true
		}
	}
	return false
}

// Failed returns the results that failed.
func (r *Report) Failed() []Result {
	var out []Result
	for _, res := range r.Results {
		if res.Status == Fail {
			out = append(out, res)
		}
	}
	return out
}

// Result returns the result of the check id on the interface whose description
// begins with iface ("" matches any), and whether there is one.
func (r *Report) Result(id, iface string) (Result, bool) {
	for _, res := range r.Results {
		if res.ID == id && strings.HasPrefix(res.Interface, iface) {
			return res, true
		}
	}
	return Result{}, false
}

// ErrCard is returned (wrapped) by Run when the agent card cannot be read.
var ErrCard = errors.New("servercheck: the agent card cannot be read")

// Run checks the A2A server at base (its agent card is at
// base/.well-known/agent-card.json; a URL of the card itself is accepted too). It
// returns an error only when the card cannot be read or parsed, or ctx ends before
// it is read; everything after that is in the report.
func Run(ctx context.Context, base string, opts Options) (*Report, error) {
	start := time.Now()
	opts = opts.withDefaults()
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	c := &client{opts: opts, hc: opts.HTTPClient, budget: int64(opts.MaxRequests)}
	if c.hc == nil {
		c.hc = &http.Client{Transport: &http.Transport{Proxy: http.ProxyFromEnvironment, MaxIdleConnsPerHost: 64}}
	}
	rep := &Report{URL: base}
	card, err := c.readCard(ctx, base)
	rep.Requests = c.sent.Load()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCard, err)
	}
	rep.CardURL, rep.Advertised, rep.Interfaces = card.url, card.advertised, card.interfaces
	rep.Results = append(rep.Results, card.result())

	if card.advertised || opts.Force {
		// The interfaces, and the checks across them, run side by side (each send has
		// a key of its own, so they cannot meet); their results are reported in the
		// card's order, the checks across interfaces last.
		results := make([][]Result, len(card.interfaces)+1)
		var wg sync.WaitGroup
		for i, iface := range card.interfaces {
			wg.Go(func() { results[i] = c.checkInterface(ctx, iface) })
		}
		wg.Go(func() { results[len(card.interfaces)] = c.checkAcross(ctx, card.interfaces) })
		wg.Wait()
		for _, rs := range results {
			rep.Results = append(rep.Results, rs...)
		}
	}
	rep.Requests = c.sent.Load()
	rep.Duration = time.Since(start).Milliseconds()
	switch {
	case !card.advertised && !opts.Force:
		rep.Verdict = verdictNotAdvertised
	case len(rep.Failed()) > 0:
		rep.Verdict = verdictFail
	case rep.incomplete():
		rep.Verdict = verdictIncomplete
	default:
		rep.Verdict = verdictPass
	}
	return rep, nil
}

func (o Options) withDefaults() Options {
	if o.Timeout <= 0 {
		o.Timeout = 3 * time.Minute
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = 15*time.Second + 2*o.AgentDelay
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 8
	}
	if o.MaxRequests <= 0 {
		o.MaxRequests = 300
	}
	if o.Text == "" {
		o.Text = "idempotency check"
	}
	return o
}

// wanted reports whether the check id runs.
func (o Options) wanted(id string) bool {
	if len(o.Only) == 0 {
		return true
	}
	for _, w := range o.Only {
		if w == id {
			return true
		}
	}
	return false
}

// client sends the checker's requests and counts them.
type client struct {
	opts   Options
	hc     *http.Client
	sent   atomic.Int64
	budget int64
}

// errBudget is returned by a request past Options.MaxRequests.
var errBudget = errors.New("the request budget (Options.MaxRequests) is spent")

// take counts one request, or returns errBudget when the budget is spent.
func (c *client) take() error {
	if c.sent.Add(1) > c.budget {
		c.sent.Add(-1)
		return errBudget
	}
	return nil
}
