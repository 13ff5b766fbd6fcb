package testkit

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
)

// run executes one run of a for a new send of msg and returns its events and error.
func run(a *Agent, msg *a2a.Message) ([]a2a.Event, error) {
	ec := &a2asrv.ExecutorContext{TaskID: a2a.NewTaskID(), ContextID: "ctx", Message: msg}
	var evs []a2a.Event
	for ev, err := range a.Execute(context.Background(), ec) {
		if err != nil {
			return evs, err
		}
		evs = append(evs, ev)
	}
	return evs, nil
}

func TestAgentCountsRunsPerMessageAndReadsTheWaitWord(t *testing.T) {
	a := &Agent{WaitWord: true, Delay: time.Hour, Hold: make(chan struct{}), HoldPrefix: "block"}
	msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("wait 1ms hi"))
	for range 2 {
		evs, err := run(a, msg)
		if err != nil || len(evs) != 4 {
			t.Fatalf("run: %v, %d events; want the task's 4", err, len(evs))
		}
		art, ok := evs[2].(*a2a.TaskArtifactUpdateEvent)
		if !ok || art.Artifact.Parts[0].Text() != "echo: hi" {
			t.Fatalf("event %#v, want the artifact echo: hi", evs[2])
		}
	}
	if a.RunsOf(msg.ID) != 2 || a.RunsOf("other") != 0 || a.Runs() != 2 {
		t.Fatalf("runs %d of the message, %d of another, %d in all; want 2, 0, 2", a.RunsOf(msg.ID), a.RunsOf("other"), a.Runs())
	}
}

func TestAgentScriptAnswersForTheRun(t *testing.T) {
	errFirst := errors.New("first run")
	a := &Agent{Script: func(_ context.Context, _ *a2asrv.ExecutorContext, text string, run int64) (a2a.Event, error) {
		if run == 1 {
			return nil, errFirst
		}
		return nil, nil
	}}
	msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("x"))
	if _, err := run(a, msg); !errors.Is(err, errFirst) {
		t.Fatalf("first run: %v, want the script's error", err)
	}
	if evs, err := run(a, msg); err != nil || len(evs) != 4 {
		t.Fatalf("second run: %v, %d events; want the task", err, len(evs))
	}
}

func TestFaultyIndexFailAllAndHidingStore(t *testing.T) {
	ctx := context.Background()
	f := NewFaultyIndex(nil)
	f.SetFailAll(true)
	if _, _, err := f.Lookup(ctx, "s", "k"); !errors.Is(err, ErrInjected) {
		t.Fatalf("Lookup: %v, want ErrInjected", err)
	}
	s := &HidingStore{Store: NewStore()}
	s.Delete("t1")
	if _, err := s.Get(ctx, "t1"); !errors.Is(err, a2a.ErrTaskNotFound) {
		t.Fatalf("Get of a deleted task: %v, want ErrTaskNotFound", err)
	}
}
