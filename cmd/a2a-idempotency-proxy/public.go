package main

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync/atomic"
	"time"

	"github.com/a2akit/idempotency"
)

// publicKey is the context key of the base URL a card request's interface URLs are
// rewritten to.
type publicKey struct{}

// publicBaseFrom returns the base URL the card guard chose for the request of ctx.
func publicBaseFrom(ctx context.Context) (string, bool) {
	b, ok := ctx.Value(publicKey{}).(string)
	return b, ok
}

// publicBases decides the base URL a card's interface URLs point at, for each card
// request: -public-url when set; else the X-Forwarded-Host/-Proto or Forwarded
// headers of a peer in -trusted-proxies; else a loopback Host (a developer's
// machine). Otherwise it refuses: a Host a client chose is never advertised, since
// anything that caches the card in front of the sidecar would then send other
// clients to that host.
type publicBases struct {
	fixed   string
	trusted []netip.Prefix
	log     *slog.Logger
	// lastWarn is when the refusal was last logged (UnixNano), to log it at most
	// once a minute.
	lastWarn atomic.Int64
}

// guard serves card requests with the chosen base URL in their context, or refuses
// them with 503; every other request passes as it is.
func (p *publicBases) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !isCardRequest(r) {
			next.ServeHTTP(w, r)
			return
		}
		base, ok := p.base(r)
		if !ok {
			p.refused(r)
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Cache-Control", "no-store")
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte(`{"error":{"code":503,"status":"UNAVAILABLE","message":"this server does not know the URL clients reach it at, ` +
				`so it does not serve its agent card; its operator sets -public-url"}}` + "\n"))
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), publicKey{}, base)))
	})
}

// isCardRequest reports whether r asks for the agent card (GET or HEAD).
func isCardRequest(r *http.Request) bool {
	return (r.Method == http.MethodGet || r.Method == http.MethodHead) &&
		(r.URL.Path == agentCardPath || r.URL.Path == legacyAgentCardPath)
}

// base returns the base URL for r's card, or false when the sidecar cannot know it.
func (p *publicBases) base(r *http.Request) (string, bool) {
	if p.fixed != "" {
		return p.fixed, true
	}
	if p.fromTrusted(r) {
		if proto, host, ok := forwarded(r.Header); ok {
			return proto + "://" + host, true
		}
	}
	if validHost(r.Host) && isLoopbackHost(r.Host) {
		return "http://" + r.Host, true
	}
	return "", false
}

// fromTrusted reports whether r's peer is one of the trusted proxies.
func (p *publicBases) fromTrusted(r *http.Request) bool {
	if len(p.trusted) == 0 {
		return false
	}
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return false
	}
	a := ap.Addr().Unmap()
	for _, t := range p.trusted {
		if t.Contains(a) {
			return true
		}
	}
	return false
}

// refused logs a refused card request, at most once a minute.
func (p *publicBases) refused(r *http.Request) {
	now := time.Now().UnixNano()
	last := p.lastWarn.Load()
	if now-last < int64(time.Minute) || !p.lastWarn.CompareAndSwap(last, now) {
		return
	}
	msg := "agent card request refused: the proxy does not know its public URL, and does not advertise the Host a client sent; " +
		"set -public-url (or -trusted-proxies, for a reverse proxy that sets X-Forwarded-Host or Forwarded)"
	if len(p.trusted) > 0 {
		msg = "agent card request refused: it came from no -trusted-proxies peer (or without X-Forwarded-Host/Forwarded) and its Host " +
			"is not loopback; set -public-url, or add the reverse proxy's address to -trusted-proxies"
	}
	p.log.LogAttrs(r.Context(), slog.LevelWarn, msg, slog.String("host", idempotency.LogValue(r.Host)),
		slog.String("remote", r.RemoteAddr), slog.String("note", "logged at most once a minute"))
}

// forwarded returns the scheme and host a reverse proxy says the client reached: the
// last element of Forwarded with a host (RFC 7239), else the last values of
// X-Forwarded-Host and X-Forwarded-Proto. The last value is the one the trusted peer
// wrote; those before it may be the client's own. The scheme defaults to http.
func forwarded(h http.Header) (proto, host string, ok bool) {
	if vs := h.Values("Forwarded"); len(vs) > 0 {
		elems := strings.Split(strings.Join(vs, ","), ",")
		for i := len(elems) - 1; i >= 0; i-- {
			var fp, fh string
			for pair := range strings.SplitSeq(elems[i], ";") {
				k, v, _ := strings.Cut(strings.TrimSpace(pair), "=")
				v = strings.Trim(v, `"`)
				switch strings.ToLower(k) {
				case "host":
					fh = v
				case "proto":
					fp = strings.ToLower(v)
				}
			}
			if fh != "" {
				return checkForwarded(fp, fh)
			}
		}
	}
	fh := lastValue(h.Values("X-Forwarded-Host"))
	if fh == "" {
		return "", "", false
	}
	return checkForwarded(strings.ToLower(lastValue(h.Values("X-Forwarded-Proto"))), fh)
}

func checkForwarded(proto, host string) (string, string, bool) {
	if proto == "" {
		proto = "http"
	}
	if (proto != "http" && proto != "https") || !validHost(host) {
		return "", "", false
	}
	return proto, host, true
}

// lastValue returns the last comma-separated value of a header's values.
func lastValue(vs []string) string {
	if len(vs) == 0 {
		return ""
	}
	v := vs[len(vs)-1]
	if i := strings.LastIndexByte(v, ','); i >= 0 {
		v = v[i+1:]
	}
	return strings.TrimSpace(v)
}

// validHost reports whether s is a host or host:port and nothing more (no path,
// user information, space or control character).
func validHost(s string) bool {
	if s == "" || len(s) > 255 {
		return false
	}
	for _, c := range []byte(s) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-._:[]", c) >= 0) {
			return false
		}
	}
	return true
}

// isLoopbackHost reports whether the host of a Host header is localhost or a
// loopback address.
func isLoopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.Unmap().IsLoopback()
}
