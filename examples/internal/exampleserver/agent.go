package exampleserver

import (
	"context"
	"expvar"
	"iter"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
)

// runs counts the agent's runs in this process: the expvar agent_runs, served at
// /debug/vars.
var runs = expvar.NewInt("agent_runs")

// Agent is an a2asrv.AgentExecutor that echoes the text of each message after
// working for Delay. It creates a task (SUBMITTED, WORKING, an artifact "echo: <text>",
// COMPLETED), or, with ReplyMessage, answers a new message with a Message
// "echo: <text>" instead. The zero value answers at once with a task.
type Agent struct {
	// Delay is how long each run works before it completes: long enough, in a demo,
	// for a client to give up on the first attempt and retry while the run goes on.
	Delay time.Duration
	// ReplyMessage makes the agent answer a new message with a Message, creating no
	// task.
	ReplyMessage bool
}

var _ a2asrv.AgentExecutor = (*Agent)(nil)

// Execute implements a2asrv.AgentExecutor.
func (a *Agent) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		runs.Add(1)
		echo := "echo: " + textOf(ec.Message)
		if a.ReplyMessage && ec.StoredTask == nil {
			if err := work(ctx, a.Delay); err != nil {
				yield(nil, err)
				return
			}
			reply := a2a.NewMessage(a2a.MessageRoleAgent, a2a.NewTextPart(echo))
			reply.ContextID = ec.ContextID
			yield(reply, nil)
			return
		}
		if ec.StoredTask == nil {
			if !yield(a2a.NewSubmittedTask(ec, ec.Message), nil) {
				return
			}
		}
		if !yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, nil), nil) {
			return
		}
		if err := work(ctx, a.Delay); err != nil {
			yield(nil, err)
			return
		}
		if !yield(a2a.NewArtifactEvent(ec, a2a.NewTextPart(echo)), nil) {
			return
		}
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, nil), nil)
	}
}

// Cancel implements a2asrv.AgentExecutor: the task is canceled.
func (a *Agent) Cancel(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
	}
}

// work stands for the agent's work: it waits for d, or until ctx ends. a2a-go runs
// the agent on a context detached from the request, so a client that goes away does
// not stop it.
func work(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// textOf joins the text parts of msg.
func textOf(msg *a2a.Message) string {
	if msg == nil {
		return ""
	}
	var texts []string
	for _, p := range msg.Parts {
		if t := p.Text(); t != "" {
			texts = append(texts, t)
		}
	}
	return strings.Join(texts, " ")
}
