// Command hop is the baseline the sidecar's cost is measured against: a plain
// httputil.ReverseProxy in front of one upstream, tuned as a production hop would
// be (keep-alive to the upstream with up to 256 idle connections, streams flushed as
// they come), and doing nothing else. When it listens it prints one line, "listening
// http://127.0.0.1:port", to stdout.
//
//	go run ./cost/hop -upstream http://127.0.0.1:8080
package main

import (
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"time"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "`host:port` to listen on; port 0 picks a free port")
	upstream := flag.String("upstream", "", "base `URL` of the server behind the hop (required)")
	flag.Parse()
	u, err := url.Parse(*upstream)
	if err != nil || u.Host == "" {
		fmt.Fprintln(os.Stderr, "hop: -upstream must be a base URL, e.g. http://127.0.0.1:8080")
		os.Exit(2)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "hop:", err)
		os.Exit(1)
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.MaxIdleConnsPerHost = 256
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(u)
			pr.SetXForwarded()
		},
		Transport:     transport,
		FlushInterval: -1,
		ErrorLog:      log.New(os.Stderr, "hop: ", 0),
	}
	fmt.Println("listening http://" + ln.Addr().String())
	srv := &http.Server{Handler: proxy, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	if err := srv.Serve(ln); err != nil {
		fmt.Fprintln(os.Stderr, "hop:", err)
		os.Exit(1)
	}
}
