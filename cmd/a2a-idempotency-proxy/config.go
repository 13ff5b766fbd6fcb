package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"net/url"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/middleware"
	"github.com/a2akit/idempotency/sqlstore"
)

// envPrefix prefixes the environment variable of every flag: -public-url is also
// $IDEMPOTENCY_PUBLIC_URL. It is the project's one prefix (the examples read
// $IDEMPOTENCY_STORE, the tests $IDEMPOTENCY_POSTGRES_DSN).
const envPrefix = "IDEMPOTENCY_"

// oldStoreEnv is the variable earlier builds read for -store; it is refused rather
// than ignored, so that a deployment that set it does not silently get the default
// SQLite file instead of its shared database.
const oldStoreEnv = "A2A_IDEMPOTENCY_PROXY_STORE"

// defaultStore is the -store default.
const defaultStore = "idempotency-proxy.db"

// version and revision are the sidecar's version and VCS revision; the Dockerfile
// sets them with -ldflags "-X main.version=... -X main.revision=...". When empty,
// what the go command recorded is used: the module version of go install
// ("(devel)" in a checkout) and vcs.revision.
var version, revision = "", ""

// earlyBindModes are the values of -early-bind.
var earlyBindModes = map[string]middleware.EarlyBind{
	"auto": middleware.EarlyBindAuto, "always": middleware.EarlyBindAlways, "off": middleware.EarlyBindOff,
}

// config is what the flags set.
type config struct {
	listen    string
	admin     string
	upstream  *url.URL
	publicURL string
	store     string
	table     string
	// pgDriver is the database/sql driver of a postgres:// store: "pgx" or "pq".
	pgDriver  string
	logLevel  slog.Level
	logFormat string

	// trusted are the peers whose X-Forwarded-Host/-Proto and Forwarded headers the
	// card's URLs may come from.
	trusted []netip.Prefix
	// tenantPaths are the tenant path templates of REST sends, and routes the
	// scope decision made of them (middleware.TenantRoutes), which learns the
	// upstream card's HTTP+JSON mounts as the proxy serves the card.
	tenantPaths []string
	routes      *middleware.TenantRoutes
	// principalHeader names the header an authenticating proxy sets to the caller,
	// to whom every key is bound (Options.Principal); empty: none.
	principalHeader string
	// unbounded are path prefixes whose bodies are not bounded (uploads).
	unbounded []string

	mw middleware.Options

	readHeaderTimeout time.Duration
	readTimeout       time.Duration
	writeTimeout      time.Duration
	idleTimeout       time.Duration
	shutdownTimeout   time.Duration
	dialTimeout       time.Duration
	headerTimeout     time.Duration

	sweepInterval time.Duration
	keyMaxAge     time.Duration

	// showVersion is -version: print the version and exit.
	showVersion bool
}

// listFlag is a flag that takes a comma-separated list and may be given more than
// once; its default is replaced by the first value given.
type listFlag struct {
	values *[]string
	set    bool
}

func (l *listFlag) String() string {
	if l.values == nil {
		return ""
	}
	return strings.Join(*l.values, ",")
}

func (l *listFlag) Set(v string) error {
	if !l.set {
		*l.values, l.set = nil, true
	}
	for s := range strings.SplitSeq(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*l.values = append(*l.values, s)
		}
	}
	return nil
}

// envName is the environment variable of flag name.
func envName(name string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// parse reads args, then the environment through getenv for every flag args did not
// set, into a config.
func parse(args []string, getenv func(string) string, stderr io.Writer) (*config, error) {
	c := &config{tenantPaths: []string{"/tenants/{*}", "/{*}"}, pgDriver: "pgx"}
	fs := flag.NewFlagSet("a2a-idempotency-proxy", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var upstream, trusted string
	fs.StringVar(&c.listen, "listen", "127.0.0.1:8090", "`host:port` clients reach the proxy at; port 0 picks a free port")
	fs.StringVar(&c.admin, "admin", "127.0.0.1:8091", "`host:port` of the admin listener (/livez, /readyz, /metrics); empty turns it off")
	fs.StringVar(&upstream, "upstream", "", "base `URL` of the A2A server behind the proxy (required), e.g. http://127.0.0.1:8080")
	fs.StringVar(&c.publicURL, "public-url", "", "base `URL` clients reach the proxy at, e.g. https://agents.example.com; the agent card's interface URLs "+
		"are rewritten to it. Without it they come from the X-Forwarded-Host/-Proto or Forwarded headers of a -trusted-proxies peer, "+
		"or from a loopback Host; any other card request is refused (503), never answered with the Host a client sent")
	fs.StringVar(&trusted, "trusted-proxies", "", "comma-separated `CIDRs` (or addresses) of the reverse proxies in front whose X-Forwarded-Host, "+
		"X-Forwarded-Proto and Forwarded headers name the public URL, e.g. 10.0.0.0/8")
	fs.StringVar(&c.store, "store", defaultStore, "key store `URL`: a SQLite file path (or sqlite:PATH), a postgres:// DSN, or redis:// (put a DSN "+
		"with a password in $"+envName("store")+": any local user can read a command line)")
	fs.StringVar(&c.table, "table", sqlstore.DefaultTable, "key table `name` (SQL stores)")
	fs.Func("postgres-driver", "`driver` of a postgres:// store: pgx (github.com/jackc/pgx/v5, the default) or pq (github.com/lib/pq)", func(v string) error {
		if v != "pgx" && v != "pq" {
			return fmt.Errorf("want pgx or pq")
		}
		c.pgDriver = v
		return nil
	})
	fs.Var(&listFlag{values: &c.tenantPaths}, "tenant-path", "tenant path `templates` of HTTP+JSON sends, comma-separated, tried in order, in the syntax "+
		"of a2a-go's NewTenantRESTHandler ('*' one segment, {} the tenant): a send to /tenants/acme/message:send is in tenant acme's key space "+
		"whatever its body says. A send under a path no template matches is scoped by its whole path")
	fs.StringVar(&c.principalHeader, "principal-header", "", "`header` an authenticating proxy in front sets to the caller (e.g. X-Authenticated-User); "+
		"every key is bound to its caller, so that another caller's retry of it is refused as already held, and the header is required on keyed sends. "+
		"Only safe when every request passes that proxy")
	fs.Var(&listFlag{values: &c.unbounded}, "unbounded-paths", "comma-separated path `prefixes` whose request bodies -max-body-bytes does not bound "+
		"(uploads that are not A2A); the middleware does not read them either")
	fs.TextVar(&c.logLevel, "log-level", slog.LevelInfo, "log `level`: DEBUG, INFO, WARN or ERROR (keys are redacted at every level)")
	fs.StringVar(&c.logFormat, "log-format", "text", "log `format`: text or json (one JSON object a line)")
	fs.DurationVar(&c.mw.Lease, "lease", middleware.DefaultLease, "how long a claimed send may stay unbound before an identical retry may take it over")
	fs.Func("early-bind", "`mode` of forwarding keyed blocking sends as streaming sends to learn their task at the first event: "+
		"auto (when the upstream's card says it streams; the proxy reads the card every minute), always, or off (default auto)", func(v string) error {
		mode, ok := earlyBindModes[v]
		if !ok {
			return fmt.Errorf("want auto, always or off")
		}
		c.mw.EarlyBind = mode
		return nil
	})
	fs.DurationVar(&c.mw.ReplayWait, "replay-wait", middleware.DefaultReplayWait, "how long a retry waits for the first attempt's task before answering 409; negative: no wait")
	fs.Int64Var(&c.mw.MaxBodyBytes, "max-body-bytes", middleware.DefaultMaxBodyBytes, "largest request body the proxy forwards (every body, "+
		"except under -unbounded-paths); larger ones get 413 in the binding's shape")
	fs.DurationVar(&c.mw.IndexTimeout, "store-timeout", middleware.DefaultIndexTimeout, "bound on each key store call; a slower call fails the keyed send closed (503)")
	fs.DurationVar(&c.readHeaderTimeout, "read-header-timeout", 10*time.Second, "http.Server ReadHeaderTimeout of the public listener")
	fs.DurationVar(&c.readTimeout, "read-timeout", time.Minute, "http.Server ReadTimeout of the public listener (headers and body)")
	fs.DurationVar(&c.writeTimeout, "write-timeout", 0, "http.Server WriteTimeout of the public listener; 0: none (streams and long blocking sends may last minutes)")
	fs.DurationVar(&c.idleTimeout, "idle-timeout", 2*time.Minute, "http.Server IdleTimeout: how long an idle keep-alive connection stays open")
	fs.DurationVar(&c.shutdownTimeout, "shutdown-timeout", 30*time.Second, "how long a graceful shutdown waits for requests in flight")
	fs.DurationVar(&c.dialTimeout, "upstream-dial-timeout", 10*time.Second, "bound on connecting to the upstream")
	fs.DurationVar(&c.headerTimeout, "upstream-header-timeout", 0, "bound on the upstream's response headers; 0: none (a blocking send answers when the agent is done)")
	fs.DurationVar(&c.sweepInterval, "sweep-interval", time.Hour, "how often keys past -key-max-age are deleted; 0 turns the sweep off")
	fs.DurationVar(&c.keyMaxAge, "key-max-age", idempotency.DefaultKeyMaxAge, "how old a key must be for the sweep to delete it")
	fs.BoolVar(&c.showVersion, "version", false, "print the version and exit")
	fs.VisitAll(func(f *flag.Flag) {
		if f.Name != "version" {
			f.Usage += " ($" + envName(f.Name) + ")"
		}
	})
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: a2a-idempotency-proxy -upstream URL [flags]\n\n"+
			"Every flag may also be set by the environment variable named after it (%sFLAG_NAME); a flag on the command line wins.\n\n", envPrefix)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if c.showVersion {
		return c, nil
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var envErr error
	fs.VisitAll(func(f *flag.Flag) {
		if v := getenv(envName(f.Name)); v != "" && !set[f.Name] && f.Name != "version" {
			if err := fs.Set(f.Name, v); err != nil {
				envErr = errors.Join(envErr, fmt.Errorf("$%s %q: %w", envName(f.Name), v, err))
			}
		}
	})
	if envErr != nil {
		return nil, envErr
	}
	if getenv(oldStoreEnv) != "" {
		return nil, fmt.Errorf("$%s is no longer read: name the key store in $%s (or -store)", oldStoreEnv, envName("store"))
	}
	return c, c.check(upstream, trusted)
}

// check validates what parse read.
func (c *config) check(upstream, trusted string) error {
	if upstream == "" {
		return errors.New("-upstream is required: the base URL of the A2A server, e.g. -upstream http://127.0.0.1:8080")
	}
	u, err := url.Parse(upstream)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("-upstream %q: want an http:// or https:// URL with a host", upstream)
	}
	c.upstream = u
	if c.publicURL != "" {
		p, err := url.Parse(c.publicURL)
		if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" || p.RawQuery != "" || p.Fragment != "" || p.User != nil {
			return fmt.Errorf("-public-url %q: want an http:// or https:// URL with a host (and a path, if any), nothing else", c.publicURL)
		}
		c.publicURL = strings.TrimSuffix(c.publicURL, "/")
	}
	if c.trusted, err = parsePrefixes(trusted); err != nil {
		return fmt.Errorf("-trusted-proxies: %w", err)
	}
	if c.routes, err = middleware.NewTenantRoutes(c.tenantPaths...); err != nil {
		return fmt.Errorf("-tenant-path: %w", err)
	}
	if c.principalHeader != "" && !validHeaderName(c.principalHeader) {
		return fmt.Errorf("-principal-header %q: not a header name", c.principalHeader)
	}
	for _, p := range c.unbounded {
		if !strings.HasPrefix(p, "/") {
			return fmt.Errorf("-unbounded-paths %q: a path prefix starts with /", p)
		}
	}
	if c.logFormat != "text" && c.logFormat != "json" {
		return fmt.Errorf("-log-format %q: want text or json", c.logFormat)
	}
	if c.mw.MaxBodyBytes <= 0 {
		return fmt.Errorf("-max-body-bytes %d: must be positive", c.mw.MaxBodyBytes)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"read-header-timeout", c.readHeaderTimeout}, {"read-timeout", c.readTimeout}, {"write-timeout", c.writeTimeout},
		{"idle-timeout", c.idleTimeout}, {"shutdown-timeout", c.shutdownTimeout}, {"upstream-dial-timeout", c.dialTimeout},
		{"upstream-header-timeout", c.headerTimeout}, {"sweep-interval", c.sweepInterval}, {"key-max-age", c.keyMaxAge},
	} {
		if d.v < 0 {
			return fmt.Errorf("-%s %v: must not be negative", d.name, d.v)
		}
	}
	if c.store == "" {
		return errors.New("-store is empty: name a SQLite file, a postgres:// DSN or a redis:// URL")
	}
	return nil
}

// parsePrefixes reads a comma-separated list of CIDRs or addresses.
func parsePrefixes(list string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for s := range strings.SplitSeq(list, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		if p, err := netip.ParsePrefix(s); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(s)
		if err != nil {
			return nil, fmt.Errorf("%q is neither a CIDR nor an IP address", s)
		}
		out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
	}
	return out, nil
}

// validHeaderName reports whether s is an HTTP header field name (an RFC 9110 token).
func validHeaderName(s string) bool {
	for _, c := range []byte(s) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return s != ""
}

// buildInfo returns the sidecar's version and VCS revision, as built.
func buildInfo() (ver, rev string) {
	ver, rev = version, revision
	if bi, ok := debug.ReadBuildInfo(); ok {
		if ver == "" {
			ver = bi.Main.Version
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && rev == "" {
				rev = s.Value
			}
		}
	}
	if ver == "" {
		ver = "(devel)"
	}
	if rev == "" {
		rev = "unknown"
	}
	return ver, rev
}

// versionLine is what -version prints.
func versionLine() string {
	ver, rev := buildInfo()
	return fmt.Sprintf("a2a-idempotency-proxy %s (revision %s, %s, %s/%s)", ver, rev, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
