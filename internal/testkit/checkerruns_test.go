package testkit

import (
	"context"
	"fmt"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
)

// errorsOf records the errors a helper reports instead of failing the test.
type errorsOf struct {
	testing.TB
	errs []string
}

func (e *errorsOf) Helper() {}

func (e *errorsOf) Errorf(format string, args ...any) {
	e.errs = append(e.errs, fmt.Sprintf(format, args...))
}

// A keyed message run twice is reported; unkeyed and header-carrier ones are not;
// the runs of the lost-answer messages are summed.
func TestCheckerRunsKeyedOnce(t *testing.T) {
	var runs CheckerRuns
	for _, text := range []string{"x (lost-answer JSONRPC)", "x (lost-answer HTTP+JSON)", "x (replay)", "x (replay)",
		"x (unkeyed JSONRPC)", "x (unkeyed JSONRPC)", "x (header-carrier)", "x (header-carrier)"} {
		runs.OnRun(context.Background(), &a2asrv.ExecutorContext{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(text))})
	}
	rec := &errorsOf{TB: t}
	if lost := runs.KeyedOnce(rec); lost != 2 {
		t.Errorf("lost-answer runs %d, want 2", lost)
	}
	if len(rec.errs) != 1 {
		t.Errorf("reported %q, want one error, for the replay message", rec.errs)
	}
}
