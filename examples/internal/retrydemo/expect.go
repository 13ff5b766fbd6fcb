package retrydemo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// CheckTask judges the report of a demonstration against an agent that creates tasks
// and works longer than the demo's cut: besides what [Report.Check] judges, the
// unkeyed message ran and was answered with the completed echo; the keyed first
// attempt was cut, every retry named the same task, the first while the agent was
// still working and the last completed; keyedclient's send got a task.
func (r *Report) CheckTask() error {
	var errs []error
	wrong := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if !r.UnkeyedCut {
		wrong("the unkeyed first attempt was answered within the cut; the agent should still have been working")
	}
	if a := r.UnkeyedAnswer; a.Kind != "task" || a.State != a2a.TaskStateCompleted || a.Text != "echo: hello without a key" {
		wrong("the unkeyed re-send got %v, want a completed task echoing the message", a)
	}
	if r.UnkeyedRuns < 1 {
		wrong("the unkeyed sends ran the agent %d times, want at least 1", r.UnkeyedRuns)
	}
	if !r.KeyedCut {
		wrong("the keyed first attempt was answered within the cut; the agent should still have been working")
	}
	if len(r.Answers) < 2 {
		wrong("the keyed send got %d answers, want a retry during the run and one after it: %v", len(r.Answers), r.Answers)
		return errors.Join(errs...)
	}
	first, last := r.Answers[0], r.Answers[len(r.Answers)-1]
	if first.Kind != "task" || first.ID == "" || first.Final() {
		wrong("the first retry got %v, want the task still running (a retry does not wait for the run)", first)
	}
	for _, a := range r.Answers {
		if a.Kind != "task" || a.ID != first.ID {
			wrong("a retry got %v, want task %s like the first retry", a, first.ID)
		}
	}
	if last.State != a2a.TaskStateCompleted || last.Text != "echo: hello with a key" {
		wrong("the last retry got %v, want the task completed with the echo", last)
	}
	if r.AutoAnswer.Kind != "task" || r.AutoAnswer.ID == "" {
		wrong("keyedclient's send got %v, want a task", r.AutoAnswer)
	}
	return errors.Join(append(errs, r.Check())...)
}

// CheckMessage judges the report of a demonstration against an agent that answers
// at once with a Message: besides what [Report.Check] judges, the unkeyed message,
// sent twice, ran the agent twice, and every keyed answer is the same Message with
// the echo.
func (r *Report) CheckMessage() error {
	var errs []error
	wrong := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if a := r.UnkeyedAnswer; a.Kind != "message" || a.Text != "echo: hello without a key" {
		wrong("the unkeyed re-send got %v, want a Message echoing the message", a)
	}
	if r.UnkeyedRuns != 2 {
		wrong("the unkeyed message, sent twice, ran the agent %d times, want 2 (nothing deduplicates it)", r.UnkeyedRuns)
	}
	if len(r.Answers) < 2 {
		wrong("the keyed send got %d answers, want the first attempt's and a retry's: %v", len(r.Answers), r.Answers)
	}
	for _, a := range r.Answers {
		if a.Kind != "message" || a.ID != r.Answers[0].ID || a.Text != "echo: hello with a key" {
			wrong("a keyed answer was %v, want Message %s echoing the message, like the first", a, r.Answers[0].ID)
		}
	}
	return errors.Join(append(errs, r.Check())...)
}

// TaskDemo and MessageDemo run the demonstration against the server at url on
// binding, in tenant when set, for an agent that works for about a second (first
// attempts are cut after 300 ms) or answers at once with a Message, narrating to out.
// They return what went wrong: a step that could not be carried out, or what
// [Report.CheckTask] or [Report.CheckMessage] found. The examples' tests run them.
func TaskDemo(ctx context.Context, url, binding, tenant string, out io.Writer) error {
	return runAndCheck(ctx, url, binding, tenant, out, (*Report).CheckTask)
}

// MessageDemo: see [TaskDemo].
func MessageDemo(ctx context.Context, url, binding, tenant string, out io.Writer) error {
	return runAndCheck(ctx, url, binding, tenant, out, (*Report).CheckMessage)
}

func runAndCheck(ctx context.Context, url, binding, tenant string, out io.Writer, check func(*Report) error) error {
	rep, err := Run(ctx, Options{URL: url, Binding: binding, Tenant: tenant, Cut: 300 * time.Millisecond, Interval: 100 * time.Millisecond, Out: out})
	if err != nil {
		return fmt.Errorf("the demonstration failed: %w", err)
	}
	return check(rep)
}
