package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/a2akit/idempotency/middleware"
	"github.com/a2akit/idempotency/middleware/cardedit"
)

// Where A2A serves the agent card: since v0.3, and before (still served by many v0.3
// servers). The middleware adds the extension to the card at either path.
const (
	agentCardPath       = "/.well-known/agent-card.json"
	legacyAgentCardPath = "/.well-known/agent.json"
)

// newProxy returns the handler that passes requests on to the upstream: headers and
// status kept, streams flushed as they come (FlushInterval -1), the agent card's
// interface URLs rewritten to the public URL.
func newProxy(c *config, log *slog.Logger, met *metrics) http.Handler {
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.DialContext = (&net.Dialer{Timeout: c.dialTimeout, KeepAlive: 30 * time.Second}).DialContext
	transport.ResponseHeaderTimeout = c.headerTimeout
	transport.MaxIdleConnsPerHost = 256
	upstream := c.upstream
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(upstream)
			pr.SetXForwarded()
			if isCard(pr.In) {
				// The card is edited on its way back: ask for it uncompressed (the
				// transport still takes gzip and unpacks it).
				pr.Out.Header.Del("Accept-Encoding")
			}
		},
		ModifyResponse: func(resp *http.Response) error { return pointCard(resp, c, log) },
		Transport:      met.instrument(transport),
		FlushInterval:  -1,
		ErrorLog:       slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if errors.Is(err, context.Canceled) && r.Context().Err() != nil {
				return // the client left; nobody to answer
			}
			if tooLarge(err) { // the body limit cut the forward (limit.go)
				middleware.WriteTooLarge(w, r, c.mw.MaxBodyBytes)
				return
			}
			met.upstreamErrors.Add(1)
			log.LogAttrs(r.Context(), slog.LevelWarn, "upstream request failed", slog.String("method", r.Method),
				slog.String("path", r.URL.Path), slog.Any("error", err))
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.WriteHeader(http.StatusBadGateway)
			w.Write([]byte("the A2A server behind the idempotency proxy could not be reached; retry later\n"))
		},
	}
}

// pointCard points the interface URLs of an agent card the upstream answered with at
// the proxy's public URL, editing the card's bytes (every other byte stays as the
// upstream wrote it). A signed card is left alone: the edit would break its
// signature.
func pointCard(resp *http.Response, c *config, log *slog.Logger) error {
	p := resp.Request.URL.Path
	if resp.Request.Method != http.MethodGet || resp.StatusCode != http.StatusOK ||
		(!strings.HasSuffix(p, agentCardPath) && !strings.HasSuffix(p, legacyAgentCardPath)) ||
		resp.Header.Get("Content-Encoding") != "" {
		return nil
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxCardBytes+1))
	resp.Body.Close()
	if err != nil {
		return err
	}
	if len(body) > maxCardBytes {
		return fmt.Errorf("the upstream's agent card exceeds %d bytes", maxCardBytes)
	}
	// The card guard (public.go) chose the public URL; a card request that did not
	// pass it is not answered, rather than answered with the upstream's URLs.
	public, ok := publicBaseFrom(resp.Request.Context())
	if !ok {
		return errors.New("agent card request without a public URL")
	}
	c.routes.LearnCard(body, c.upstream.Path) // where HTTP+JSON sends carry no path tenant
	if out, ok := rewriteCard(body, c.upstream, public); ok {
		if !bytes.Equal(out, body) && resp.Header.Get("Etag") != "" {
			sum := sha256.Sum256(out)
			resp.Header.Set("Etag", `"`+base64.RawURLEncoding.EncodeToString(sum[:])+`"`)
		}
		body = out
	} else if signed(body) {
		log.Warn("the upstream's agent card is signed, so its interface URLs are not rewritten to the proxy's; " +
			"sign a card that names the proxy's public URL")
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
	return nil
}

// maxCardBytes bounds the agent card the proxy edits.
const maxCardBytes = 1 << 20

// rewriteCard returns card with every interface URL pointed at public: the part of
// the URL below the upstream's base path is kept, its scheme, host and the base path
// are replaced. ok is false when the card is not a JSON object or is signed.
func rewriteCard(card []byte, upstream *url.URL, public string) (out []byte, ok bool) {
	if signed(card) {
		return nil, false
	}
	base := strings.TrimSuffix(upstream.EscapedPath(), "/")
	return cardedit.RewriteInterfaceURLs(card, func(old string) string {
		u, err := url.Parse(old)
		if err != nil || !u.IsAbs() {
			return old
		}
		p := u.EscapedPath()
		if rest, ok := strings.CutPrefix(p, base); ok && (rest == "" || rest[0] == '/') {
			p = rest
		}
		if u.RawQuery != "" {
			p += "?" + u.RawQuery
		}
		return public + p
	})
}

// signed reports whether card carries signatures.
func signed(card []byte) bool {
	var c struct {
		Signatures []json.RawMessage `json:"signatures"`
	}
	return json.Unmarshal(card, &c) == nil && len(c.Signatures) > 0
}

func isCard(r *http.Request) bool {
	return r.Method == http.MethodGet && (r.URL.Path == agentCardPath || r.URL.Path == legacyAgentCardPath)
}
