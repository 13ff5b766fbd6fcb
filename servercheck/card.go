package servercheck

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/a2akit/idempotency"
)

// Bindings, as A2A v1.0 cards name them (v0.3's transport names are the same).
const (
	BindingJSONRPC  = "JSONRPC"
	BindingHTTPJSON = "HTTP+JSON"
	BindingGRPC     = "GRPC"
)

// Interface is one interface the card lists.
type Interface struct {
	URL string `json:"url"`
	// Binding is the protocol binding: JSONRPC, HTTP+JSON, GRPC or another URI.
	Binding string `json:"binding"`
	// Version is the A2A protocol version the checker speaks to it: "1.0" or "0.3".
	Version string `json:"version"`
	Tenant  string `json:"tenant,omitempty"`
}

// String describes the interface as the report's table does: "JSONRPC 1.0 url",
// with " tenant t" when it has one.
func (i Interface) String() string {
	s := i.Binding + " " + i.Version + " " + i.URL
	if i.Tenant != "" {
		s += " tenant " + i.Tenant
	}
	return s
}

// checkable reports whether the checker speaks the interface's binding.
func (i Interface) checkable() bool {
	return i.Binding == BindingJSONRPC || i.Binding == BindingHTTPJSON
}

// card is what the checker read of the agent card.
type card struct {
	url        string
	advertised bool
	required   bool
	interfaces []Interface
	exchange   *Exchange
}

// wireCard holds the members of a v1.0 or v0.3 card the checker reads.
type wireCard struct {
	ProtocolVersion     string `json:"protocolVersion"`
	URL                 string `json:"url"`
	PreferredTransport  string `json:"preferredTransport"`
	SupportedInterfaces []struct {
		URL             string `json:"url"`
		ProtocolBinding string `json:"protocolBinding"`
		ProtocolVersion string `json:"protocolVersion"`
		Tenant          string `json:"tenant"`
	} `json:"supportedInterfaces"`
	AdditionalInterfaces []struct {
		URL       string `json:"url"`
		Transport string `json:"transport"`
	} `json:"additionalInterfaces"`
	Capabilities struct {
		Extensions []struct {
			URI      string `json:"uri"`
			Required bool   `json:"required"`
		} `json:"extensions"`
	} `json:"capabilities"`
}

// The well-known paths of the card: v1.0's, then v0.3's older one.
var cardPaths = []string{"/.well-known/agent-card.json", "/.well-known/agent.json"}

// readCard reads and parses the card of the server at base.
func (c *client) readCard(ctx context.Context, base string) (*card, error) {
	urls := []string{}
	if strings.HasSuffix(base, ".json") {
		urls = append(urls, base)
	} else {
		for _, p := range cardPaths {
			urls = append(urls, strings.TrimSuffix(base, "/")+p)
		}
	}
	var lastErr error
	for _, u := range urls {
		a, err := c.get(ctx, u, "")
		if err != nil {
			return nil, err
		}
		if a.status == http.StatusNotFound {
			lastErr = fmt.Errorf("GET %s: %d", u, a.status)
			continue
		}
		if a.status != http.StatusOK {
			return nil, fmt.Errorf("GET %s: HTTP %d", u, a.status)
		}
		var w wireCard
		if err := json.Unmarshal(a.body, &w); err != nil {
			return nil, fmt.Errorf("GET %s: the card is not JSON: %v", u, err)
		}
		cd := parseCard(&w)
		cd.url, cd.exchange = u, a.ex
		return cd, nil
	}
	return nil, lastErr
}

// parseCard reads the interfaces and the extension of a card: v1.0's
// supportedInterfaces, and v0.3's url and additionalInterfaces when the card has no
// v1.0 interfaces or declares a v0.3 protocolVersion.
func parseCard(w *wireCard) *card {
	cd := &card{}
	seen := map[Interface]bool{}
	add := func(i Interface) {
		if i.URL != "" && !seen[i] {
			seen[i] = true
			cd.interfaces = append(cd.interfaces, i)
		}
	}
	for _, si := range w.SupportedInterfaces {
		v := "1.0"
		if strings.HasPrefix(si.ProtocolVersion, "0.") {
			v = "0.3"
		}
		add(Interface{URL: si.URL, Binding: normBinding(si.ProtocolBinding), Version: v, Tenant: si.Tenant})
	}
	if len(w.SupportedInterfaces) == 0 || strings.HasPrefix(w.ProtocolVersion, "0.") {
		preferred := w.PreferredTransport
		if preferred == "" {
			preferred = BindingJSONRPC
		}
		add(Interface{URL: w.URL, Binding: normBinding(preferred), Version: "0.3"})
		for _, ai := range w.AdditionalInterfaces {
			add(Interface{URL: ai.URL, Binding: normBinding(ai.Transport), Version: "0.3"})
		}
	}
	for _, e := range w.Capabilities.Extensions {
		if e.URI == idempotency.ExtensionURI {
			cd.advertised, cd.required = true, e.Required
		}
	}
	return cd
}

// normBinding spells a binding as v1.0 cards do (v0.3 cards spell them the same;
// some write them in lower case, or HTTP+JSON as REST).
func normBinding(b string) string {
	switch strings.ToUpper(b) {
	case "JSONRPC", "JSON-RPC":
		return BindingJSONRPC
	case "HTTP+JSON", "REST", "HTTP_JSON":
		return BindingHTTPJSON
	case "GRPC":
		return BindingGRPC
	}
	return b
}

var checkCard = Check{ID: "card", Title: "The agent card lists the idempotency extension", Spec: "§2 agent card, §3 Agent card"}

// result reports the card check.
func (cd *card) result() Result {
	r := Result{Check: checkCard}
	names := make([]string, 0, len(cd.interfaces))
	for _, i := range cd.interfaces {
		names = append(names, i.Binding+" "+i.Version)
	}
	listed := fmt.Sprintf("%d interfaces (%s)", len(cd.interfaces), strings.Join(names, ", "))
	switch {
	case !cd.advertised:
		r.Status = NotClaimed
		r.Detail = "not advertised: capabilities.extensions does not list " + idempotency.ExtensionURI +
			", so the server claims nothing (force the checks to run them anyway); the card lists " + listed
		r.Exchanges = []*Exchange{cd.exchange}
	default:
		r.Status = Pass
		r.Detail = "advertised"
		if cd.required {
			r.Detail += " (required: true: clients that do not key their sends are refused)"
		}
		r.Detail += "; the card lists " + listed
	}
	return r
}
