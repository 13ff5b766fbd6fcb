package servercheck

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/a2akit/idempotency"
)

// WriteText writes the report for a person: the interfaces, a table of the results
// (check, interface, status, detail), the verdict, and the exchanges of the first
// failure.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Agent card: %s\n", r.CardURL)
	fmt.Fprintf(&b, "Extension %s: ", idempotency.ExtensionURI)
	if r.Advertised {
		b.WriteString("advertised\n")
	} else {
		b.WriteString("NOT advertised\n")
	}
	for i, iface := range r.Interfaces {
		fmt.Fprintf(&b, "Interface %d: %s\n", i+1, iface)
	}
	b.WriteString("\n")
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CHECK\tINTERFACE\tSTATUS\tSPEC\tDETAIL")
	ifaceNo := map[string]int{}
	for i, iface := range r.Interfaces {
		ifaceNo[iface.String()] = i + 1
	}
	for _, res := range r.Results {
		where := "card"
		if res.Interface != "" {
			var nos []string
			for _, part := range strings.Split(res.Interface, across) {
				nos = append(nos, fmt.Sprintf("#%d", ifaceNo[part]))
			}
			where = strings.Join(nos, "→")
			if len(nos) == 1 {
				where += " " + strings.SplitN(res.Interface, " ", 2)[0]
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", res.ID, where, strings.ToUpper(string(res.Status)), res.Spec, res.Detail)
	}
	tw.Flush()
	fmt.Fprintf(&b, "\n%d requests in %v\n", r.Requests, (time.Duration(r.Duration) * time.Millisecond).Round(10*time.Millisecond))
	failed := r.Failed()
	switch r.Verdict {
	case verdictPass:
		b.WriteString("VERDICT: PASS: everything the server claims holds\n")
	case verdictNotAdvertised:
		b.WriteString("VERDICT: NOT ADVERTISED: the card does not list the extension, so the server claims nothing; nothing was checked\n")
	case verdictIncomplete:
		b.WriteString("VERDICT: INCOMPLETE: no check failed, but some could not run (see NOT CHECKED)\n")
	default:
		fmt.Fprintf(&b, "VERDICT: FAIL: %d checks failed\n", len(failed))
	}
	for _, res := range r.Results {
		if res.ID == checkInterface.ID && res.Status == NotChecked {
			fmt.Fprintf(&b, "Not checked: %s (%s)\n", res.Interface, res.Detail)
		}
	}
	if len(failed) > 0 {
		f := failed[0]
		fmt.Fprintf(&b, "\nFirst failure: %s on %s (SPEC %s)\n%s\n", f.ID, f.Interface, f.Spec, f.Detail)
		for i, ex := range f.Exchanges {
			fmt.Fprintf(&b, "\n--- exchange %d (%d ms)\n>>> %s\n<<< %s\n", i+1, ex.Elapsed, indent(ex.Request), indent(ex.Response))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func indent(s string) string {
	return strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n    ")
}

// WriteJSON writes the report as one indented JSON object, for CI.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// String returns the report as WriteText writes it.
func (r *Report) String() string {
	var b strings.Builder
	r.WriteText(&b)
	return b.String()
}
