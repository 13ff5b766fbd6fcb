package testkit

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2asrv"
)

// CheckerRuns counts an agent's runs by the text of their message, for the tests that
// run servercheck against a server: its OnRun is an Agent's OnRun.
type CheckerRuns struct {
	mu   sync.Mutex
	runs map[string]int
}

// OnRun counts the run of ec's message; it is an Agent's OnRun.
func (c *CheckerRuns) OnRun(_ context.Context, ec *a2asrv.ExecutorContext) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.runs == nil {
		c.runs = map[string]int{}
	}
	if ec.Message != nil && len(ec.Message.Parts) > 0 {
		c.runs[ec.Message.Parts[0].Text()]++
	}
}

// KeyedOnce fails t unless every keyed message the checker sent ran at most once.
// Unkeyed sends and sends keyed by the header alone (which the kit does not honour
// yet) may run twice. It returns how many times the agent ran for the messages whose
// first answer the checker lost (its lost-answer check), to be compared with the
// number of interfaces checked: once each, its retries answered from it.
func (c *CheckerRuns) KeyedOnce(t testing.TB) (lost int) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	for text, n := range c.runs {
		if strings.Contains(text, "(unkeyed") || strings.Contains(text, "(header-carrier") {
			continue
		}
		if n > 1 {
			t.Errorf("the agent ran %d times for %q, a keyed message", n, text)
		}
		if strings.Contains(text, "(lost-answer") {
			lost += n
		}
	}
	return lost
}
