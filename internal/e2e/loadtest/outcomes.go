package loadtest

import (
	"bufio"
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/a2akit/idempotency/middleware/metrics"
)

// The server's side of a run: the outcomes its middleware reported (the counter
// metrics.SendsTotal at Config.MetricsPath, by outcome) set next to the answers the
// clients saw. They must agree: an outcome means what its client got.

// readOutcomes reads the server's keyed sends by outcome from Config.MetricsPath,
// and false when the server serves no such metrics.
func (r *run) readOutcomes(ctx context.Context) (map[string]int64, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.cfg.BaseURL+r.cfg.MetricsPath, nil)
	if err != nil {
		return nil, false, err
	}
	resp, err := r.cfg.HTTPClient.Do(req)
	if err != nil {
		return nil, false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return nil, false, nil
	}
	if resp.StatusCode != http.StatusOK {
		return nil, false, fmt.Errorf("GET %s: %s", r.cfg.MetricsPath, resp.Status)
	}
	out := map[string]int64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, metrics.SendsTotal+"{")
		if !ok {
			continue
		}
		labels, value, ok := strings.Cut(rest, "} ")
		_, outcome, found := strings.Cut(labels, `outcome="`)
		outcome, _, _ = strings.Cut(outcome, `"`)
		n, err := strconv.ParseFloat(value, 64)
		if !ok || !found || err != nil {
			return nil, false, fmt.Errorf("GET %s: unreadable line %q", r.cfg.MetricsPath, line)
		}
		out[outcome] += int64(n)
	}
	return out, true, sc.Err()
}

// stableOutcomes reads the outcomes until two readings 100ms apart agree (the
// handlers of abandoned sends may still be running), for at most two seconds.
func (r *run) stableOutcomes(ctx context.Context) (map[string]int64, bool, error) {
	last, ok, err := r.readOutcomes(ctx)
	for range 20 {
		if err != nil || !ok {
			return nil, ok, err
		}
		time.Sleep(100 * time.Millisecond)
		var now map[string]int64
		now, ok, err = r.readOutcomes(ctx)
		if err == nil && maps.Equal(now, last) {
			return now, true, nil
		}
		last = now
	}
	return last, ok, err
}

// outcomesDuring returns the outcomes after minus those before.
func outcomesDuring(before, after map[string]int64) map[string]int64 {
	d := map[string]int64{}
	for o, n := range after {
		if n -= before[o]; n != 0 {
			d[o] = n
		}
	}
	return d
}

// outcomeAnswers pairs the outcomes with the answers their clients get.
var outcomeAnswers = []struct {
	outcomes []string
	answers  []string
}{
	{[]string{"claimed", "replayed"}, []string{"task", "message"}},
	{[]string{"unavailable"}, []string{"unavailable"}},  // 503
	{[]string{"in_flight"}, []string{"in-flight"}},      // 409
	{[]string{"conflict"}, []string{"already-held"}},    // invalid params, "already held"
	{[]string{"task_gone"}, []string{"task-not-found"}}, // TaskNotFound
	{[]string{"refused", "unsupported", "released", "failed", "internal"}, []string{"refused", "unreadable"}},
	{[]string{"abandoned"}, nil},
}

// checkOutcomes checks that the server's outcomes agree with the clients' answers:
// each answer a client got was observed as its outcome, and the outcomes no answer
// matches are at most the sends the clients dropped (a dropped send is abandoned, or
// was answered as the client left).
func (r *run) checkOutcomes() {
	rep := &r.report
	lost := rep.Answers["dropped"] + rep.Answers["no-answer"]
	excess := 0
	for _, p := range outcomeAnswers {
		var o, a int
		for _, name := range p.outcomes {
			o += int(rep.Outcomes[name])
		}
		for _, name := range p.answers {
			a += rep.Answers[name]
		}
		if o < a {
			r.violation("the clients got %d answers %v, the server observed only %d sends %v", a, p.answers, o, p.outcomes)
		}
		excess += max(o-a, 0)
	}
	if excess > lost {
		r.violation("the server observed %d keyed sends that no client answer matches, the clients dropped only %d", excess, lost)
	}
	var total int64
	for _, n := range rep.Outcomes {
		total += n
	}
	if int(total) > rep.Sends {
		r.violation("the server observed %d keyed sends, the clients made %d", total, rep.Sends)
	}
}

// writeOutcomes writes the outcomes next to the statuses of the answers.
func (rep *Report) writeOutcomes(b *strings.Builder) {
	b.WriteString("HTTP statuses:")
	for _, s := range slices.Sorted(maps.Keys(rep.Statuses)) {
		fmt.Fprintf(b, " %d×%d", s, rep.Statuses[s])
	}
	b.WriteString("\n")
	if rep.Outcomes == nil {
		b.WriteString("server outcomes: not served\n")
		return
	}
	b.WriteString("server outcomes:")
	for _, o := range slices.Sorted(maps.Keys(rep.Outcomes)) {
		fmt.Fprintf(b, " %s %d", o, rep.Outcomes[o])
	}
	b.WriteString("\n")
}
