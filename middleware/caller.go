package middleware

import (
	"errors"
	"fmt"
	"net/http"
)

// ErrNoPrincipal refuses a keyed send whose caller a binding's Principal option
// named as empty; its text is the refusal's message.
var ErrNoPrincipal = errors.New("this server binds idempotency keys to their caller, and the keyed send names none: " +
	"send it authenticated")

// PrincipalHeader returns an [Options.Principal] that takes the caller from the
// request header name, as an authenticating proxy in front of the server sets it (for
// example X-Authenticated-User). A keyed send without the header, or that names its
// caller more than once, is refused. Use it only when every request passes through
// that proxy, which must drop the header from what clients send: a client that can
// set it can claim to be anyone.
func PrincipalHeader(name string) func(r *http.Request) (string, error) {
	return func(r *http.Request) (string, error) {
		switch v := r.Header.Values(name); {
		case len(v) > 1:
			return "", fmt.Errorf("the request names its caller in %s more than once; send it through the "+
				"authenticating proxy in front of this server", name)
		case len(v) == 0 || v[0] == "":
			return "", fmt.Errorf("the request lacks the %s header that the authenticating proxy in front of this "+
				"server sets; send it through that proxy", name)
		default:
			return v[0], nil
		}
	}
}

// identify returns the scope of the keyed send s read from r (whose body is body),
// and sets ks's Principal and Fingerprint as Options.Principal and
// Options.CheckContent ask.
func (m *middleware) identify(r *http.Request, ks *Send, s *send, body []byte) (string, error) {
	scope, err := m.scope(r, s.tenant)
	if err != nil {
		return "", err
	}
	if m.principal != nil {
		p, err := m.principal(r)
		switch {
		case err != nil:
			return "", err
		case p == "":
			return "", ErrNoPrincipal
		}
		ks.Principal = p
	}
	if m.checkContent {
		fp, err := bodyFingerprint(body, s.d.framing() == BindingJSONRPC)
		if err != nil {
			return "", err
		}
		ks.Fingerprint = fp
	}
	return scope, nil
}
