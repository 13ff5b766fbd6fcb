package testkit

import (
	"io"
	"net/http"

	"github.com/a2aproject/a2a-go/v2/a2asrv"
)

// WithCard is a Config.Wrap that serves the agent card card returns (JSON text,
// built when asked, so that it can name the server's URL) in place of the server's
// own; every other request goes to the server.
func WithCard(card func() string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != a2asrv.WellKnownAgentCardPath {
				next.ServeHTTP(w, r)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, card())
		})
	}
}
