package testkit

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2asrv"
)

// Proxy forwards requests to a server. The POST requests it is told to lose are
// forwarded in full, and the proxy waits for the upstream response; it then drops
// the connection to the client without answering, or, for a response that is an
// event stream, after passing on its first event.
type Proxy struct {
	// URL is the proxy's base URL, to be used in place of the server's.
	URL string

	mu    sync.Mutex
	posts int
	lose  func(n int) bool
}

// NewProxy starts a proxy in front of target (a base URL). lose is called with the
// 1-based number of each POST request and reports whether to lose its response. The
// proxy rewrites the URLs of the agent card it passes on to point at itself. It is
// closed when the test ends.
func NewProxy(t testing.TB, target string, lose func(n int) bool) *Proxy {
	t.Helper()
	upstream, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(nil)
	p := &Proxy{URL: "http://" + srv.Listener.Addr().String(), lose: lose}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(upstream)
			pr.Out.Host = upstream.Host
		},
		FlushInterval: -1,
		ModifyResponse: func(resp *http.Response) error {
			if resp.Request.Method != http.MethodGet || !strings.HasSuffix(resp.Request.URL.Path, a2asrv.WellKnownAgentCardPath) {
				return nil
			}
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				return err
			}
			_ = resp.Body.Close()
			body = bytes.ReplaceAll(body, []byte(target), []byte(p.URL))
			resp.Body = io.NopCloser(bytes.NewReader(body))
			resp.ContentLength = int64(len(body))
			resp.Header.Del("Content-Length")
			return nil
		},
	}
	srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || !p.loses() {
			rp.ServeHTTP(w, r)
			return
		}
		p.forwardAndDrop(w, r, upstream)
	})
	srv.Start()
	t.Cleanup(srv.Close)
	return p
}

// Posts returns how many POST requests reached the proxy.
func (p *Proxy) Posts() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.posts
}

func (p *Proxy) loses() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.posts++
	return p.lose(p.posts)
}

// forwardAndDrop sends r upstream, waits for the response, and drops the client's
// connection: at once for a unary response, after the first event of a stream.
func (p *Proxy) forwardAndDrop(w http.ResponseWriter, r *http.Request, upstream *url.URL) {
	out := r.Clone(context.WithoutCancel(r.Context()))
	out.RequestURI = ""
	out.URL.Scheme, out.URL.Host, out.Host = upstream.Scheme, upstream.Host, upstream.Host
	resp, err := http.DefaultTransport.RoundTrip(out)
	if err == nil {
		defer resp.Body.Close()
		if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			passFirstEvent(w, resp)
		} else {
			_, _ = io.Copy(io.Discard, resp.Body)
		}
	}
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	_ = conn.Close()
}

// passFirstEvent writes the response's headers and its first SSE event to w.
func passFirstEvent(w http.ResponseWriter, resp *http.Response) {
	var event bytes.Buffer
	buf := make([]byte, 1)
	for !bytes.HasSuffix(event.Bytes(), []byte("\n\n")) {
		if _, err := resp.Body.Read(buf); err != nil {
			break
		}
		event.WriteByte(buf[0])
	}
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(event.Bytes())
	_ = http.NewResponseController(w).Flush()
}

// WaitFor calls cond until it reports true, and fails the test when it has not after
// 10 seconds. It synchronizes a test with the server's background work; it asserts
// nothing about how long the work takes.
func WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
