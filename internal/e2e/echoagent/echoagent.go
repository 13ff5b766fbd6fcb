// Package echoagent is the a2a-go v2 agent of the end-to-end tests. It creates a task,
// reports it working, waits, adds an artifact echoing the message's text and
// completes. A message text "wait <duration> <rest>" waits that long instead of
// Agent.Delay; a text (after the wait prefix) that begins with "reply" is answered
// with a Message and no task, after the wait. It counts the runs it started.
package echoagent

import (
	"context"
	"iter"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
)

var _ a2asrv.AgentExecutor = (*Agent)(nil)

// Agent is the echo agent. The zero value answers at once.
type Agent struct {
	// Delay is how long a run works before it completes, unless its message says.
	Delay time.Duration
	runs  atomic.Int64
	byID  sync.Map // message id -> *atomic.Int64
}

// Runs returns how many runs started.
func (a *Agent) Runs() int64 { return a.runs.Load() }

// RunsOf returns how many runs started for the message messageID.
func (a *Agent) RunsOf(messageID string) int64 {
	if n, ok := a.byID.Load(messageID); ok {
		return n.(*atomic.Int64).Load()
	}
	return 0
}

// plan reads the wait and the text of a message: "wait 3s hello" waits 3 s.
func (a *Agent) plan(text string) (time.Duration, string) {
	rest, ok := strings.CutPrefix(text, "wait ")
	if !ok {
		return a.Delay, text
	}
	word, tail, _ := strings.Cut(rest, " ")
	d, err := time.ParseDuration(word)
	if err != nil {
		return a.Delay, text
	}
	return d, tail
}

func (a *Agent) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		a.runs.Add(1)
		if ec.Message != nil {
			n, _ := a.byID.LoadOrStore(ec.Message.ID, new(atomic.Int64))
			n.(*atomic.Int64).Add(1)
		}
		text := ""
		if ec.Message != nil && len(ec.Message.Parts) > 0 {
			text = ec.Message.Parts[0].Text()
		}
		wait, text := a.plan(text)
		reply := ec.StoredTask == nil && strings.HasPrefix(text, "reply")
		if !reply {
			if ec.StoredTask == nil && !yield(a2a.NewSubmittedTask(ec, ec.Message), nil) {
				return
			}
			if !yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, nil), nil) {
				return
			}
		}
		if wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				yield(nil, ctx.Err())
				return
			}
		}
		if reply {
			yield(a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart("echo: "+text)), nil)
			return
		}
		if !yield(a2a.NewArtifactEvent(ec, a2a.NewTextPart("echo: "+text)), nil) {
			return
		}
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, nil), nil)
	}
}

func (a *Agent) Cancel(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
	}
}
