package grpcbinding

import (
	"context"
	"strings"

	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/middleware"
)

// extendedCard lists the extension in card, the service's answer to
// GetExtendedAgentCard, as the middleware lists it on the public card, when the
// index can honour keys: optional, with middleware.ExtensionDescription. An entry of
// the operator's own for the URI is left alone, and so is a signed card that does not
// list it (adding the entry would break its signatures; the HTTP middleware logs why).
func (i *Interceptors) extendedCard(ctx context.Context, card *a2apb.AgentCard) {
	if card == nil || !i.sends.Honours(ctx) {
		return
	}
	for _, e := range card.GetCapabilities().GetExtensions() {
		if strings.EqualFold(strings.TrimSpace(e.GetUri()), idempotency.ExtensionURI) {
			return
		}
	}
	if len(card.GetSignatures()) > 0 {
		return
	}
	if card.Capabilities == nil {
		card.Capabilities = &a2apb.AgentCapabilities{}
	}
	card.Capabilities.Extensions = append(card.Capabilities.Extensions, &a2apb.AgentExtension{
		Uri: idempotency.ExtensionURI, Description: middleware.ExtensionDescription, Required: false,
	})
}
