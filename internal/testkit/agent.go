package testkit

import (
	"context"
	"iter"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
)

// Agent is an a2asrv.AgentExecutor whose behaviour a test controls. The zero value
// creates a task, reports it working, adds an artifact "echo: <text>" and completes
// it; a Message reply reads "reply: <text>".
type Agent struct {
	// Delay is how long each run works, after reporting the task working (before a
	// Message reply). With Jitter, each run waits a random time in [0, Delay].
	Delay  time.Duration
	Jitter bool
	// WaitWord lets a message set its own delay: a text "wait <duration> <rest>"
	// (a time.ParseDuration duration) works that long instead of Delay, and the
	// agent reads the text as <rest> from then on.
	WaitWord bool
	// ReplyMessage makes the agent answer every new send with a Message instead of a
	// task; ReplyPrefix only the new sends whose text begins with it.
	ReplyMessage bool
	ReplyPrefix  string
	// AskFirst makes a new task end in INPUT_REQUIRED instead of COMPLETED, so that a
	// follow-up can be sent to it; the follow-up then completes the task.
	AskFirst bool
	// Hold, when not nil, is a gate: the agent waits until it receives from Hold (a
	// close releases every run, a send one run) or the execution's context ends: a
	// task agent waits after reporting WORKING, a Message agent before replying.
	Hold chan struct{}
	// HoldPrefix, when set, gates only the runs whose text begins with it.
	HoldPrefix string
	// Fail, when set, makes each run fail with it where it would have completed.
	Fail error
	// Started, when not nil, receives the task id each time the agent starts. It must
	// be buffered or read, or the agent blocks.
	Started chan a2a.TaskID
	// OnRun, when set, is called as each run starts, before anything else, with the
	// run's executor context. The crash test records runs with it in a place that
	// survives the process.
	OnRun func(ctx context.Context, ec *a2asrv.ExecutorContext)
	// Script, when set, is called once a run is counted and its text read (after
	// WaitWord), with the run's number for its message id (1 for the first). When it
	// returns an event or an error, the run yields that and ends; when it returns
	// (nil, nil), the run goes on as configured.
	Script func(ctx context.Context, ec *a2asrv.ExecutorContext, text string, run int64) (a2a.Event, error)

	runs atomic.Int64
	byID sync.Map // message id -> *atomic.Int64
}

var _ a2asrv.AgentExecutor = (*Agent)(nil)

// Runs returns how many times the agent started.
func (a *Agent) Runs() int64 { return a.runs.Load() }

// RunsOf returns how many times the agent started for the message messageID.
func (a *Agent) RunsOf(messageID string) int64 {
	if n, ok := a.byID.Load(messageID); ok {
		return n.(*atomic.Int64).Load()
	}
	return 0
}

// Execute implements a2asrv.AgentExecutor.
func (a *Agent) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		if a.OnRun != nil {
			a.OnRun(ctx, ec)
		}
		a.runs.Add(1)
		var run int64
		if ec.Message != nil {
			n, _ := a.byID.LoadOrStore(ec.Message.ID, new(atomic.Int64))
			run = n.(*atomic.Int64).Add(1)
		}
		if a.Started != nil {
			a.Started <- ec.TaskID
		}
		text := ""
		if ec.Message != nil && len(ec.Message.Parts) > 0 {
			text = ec.Message.Parts[0].Text()
		}
		delay, text := a.plan(text)
		if a.Script != nil {
			if ev, err := a.Script(ctx, ec, text, run); ev != nil || err != nil {
				yield(ev, err)
				return
			}
		}
		if ec.StoredTask == nil && (a.ReplyMessage || a.ReplyPrefix != "" && strings.HasPrefix(text, a.ReplyPrefix)) {
			if err := a.work(ctx, delay, text); err != nil {
				yield(nil, err)
				return
			}
			reply := a2a.NewMessage(a2a.MessageRoleAgent, a2a.NewTextPart("reply: "+text))
			reply.ContextID = ec.ContextID
			yield(reply, nil)
			return
		}
		if ec.StoredTask == nil && !yield(a2a.NewSubmittedTask(ec, ec.Message), nil) {
			return
		}
		if !yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, nil), nil) {
			return
		}
		if err := a.work(ctx, delay, text); err != nil {
			yield(nil, err)
			return
		}
		if !yield(a2a.NewArtifactEvent(ec, a2a.NewTextPart("echo: "+text)), nil) {
			return
		}
		final := a2a.TaskStateCompleted
		if ec.StoredTask == nil && a.AskFirst {
			final = a2a.TaskStateInputRequired
		}
		yield(a2a.NewStatusUpdateEvent(ec, final, nil), nil)
	}
}

// plan returns how long a run for text works, and the text it answers: with
// WaitWord, "wait 3s hello" works 3 s and answers "hello".
func (a *Agent) plan(text string) (time.Duration, string) {
	if a.WaitWord {
		if rest, ok := strings.CutPrefix(text, "wait "); ok {
			word, tail, _ := strings.Cut(rest, " ")
			if d, err := time.ParseDuration(word); err == nil {
				return d, tail
			}
		}
	}
	return a.Delay, text
}

// work waits at the gate (if it holds text), then for delay, and returns Fail; it returns the
// context's error when the context ends first.
func (a *Agent) work(ctx context.Context, delay time.Duration, text string) error {
	if a.Hold != nil && strings.HasPrefix(text, a.HoldPrefix) {
		select {
		case <-a.Hold:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	d := delay
	if a.Jitter && d > 0 {
		d = rand.N(d + 1)
	}
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return a.Fail
}

// Cancel implements a2asrv.AgentExecutor.
func (a *Agent) Cancel(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
	}
}

// Echo returns the agent of the load, crash and fault harnesses: each run works a
// random time up to delay, and a new send whose text begins with "reply" is answered
// with a Message.
func Echo(delay time.Duration) *Agent {
	return &Agent{Delay: delay, Jitter: true, ReplyPrefix: "reply"}
}
