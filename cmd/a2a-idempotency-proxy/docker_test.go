//go:build cgo && linux

package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/a2akit/idempotency/internal/testkit"
)

// dockerfile is what TestDockerEntrypoint reads of ../../Dockerfile.
type dockerfile struct {
	stages     int
	buildLine  string            // the RUN line that runs go build
	buildDir   string            // WORKDIR of the build stage
	args       map[string]string // ARG defaults
	env        map[string]string // ENV of the final stage
	user       string
	workdir    string
	volumes    []string
	expose     []string
	entrypoint []string
	cmd        []string
	copies     []string // COPY lines of the final stage
}

// readDockerfile parses the instructions the test needs, joining continued lines.
func readDockerfile(t *testing.T, path string) *dockerfile {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	d := &dockerfile{args: map[string]string{}, env: map[string]string{}}
	var lines []string
	cont := ""
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "#") {
			continue
		}
		if s, ok := strings.CutSuffix(strings.TrimRight(l, " \t"), `\`); ok {
			cont += s + " "
			continue
		}
		lines = append(lines, cont+l)
		cont = ""
	}
	for _, l := range lines {
		inst, rest, _ := strings.Cut(strings.TrimSpace(l), " ")
		rest = strings.TrimSpace(rest)
		switch strings.ToUpper(inst) {
		case "FROM":
			d.stages++
			d.env, d.copies = map[string]string{}, nil
		case "ARG":
			k, v, _ := strings.Cut(rest, "=")
			d.args[k] = v
		case "WORKDIR":
			if d.stages == 1 {
				d.buildDir = rest
			}
			d.workdir = rest
		case "RUN":
			if strings.Contains(rest, "go build") {
				d.buildLine = rest
			}
		case "ENV":
			for _, kv := range words(rest) {
				k, v, _ := strings.Cut(kv, "=")
				d.env[k] = v
			}
		case "USER":
			d.user = rest
		case "VOLUME":
			json.Unmarshal([]byte(rest), &d.volumes)
		case "EXPOSE":
			d.expose = strings.Fields(rest)
		case "COPY":
			d.copies = append(d.copies, rest)
		case "ENTRYPOINT":
			if err := json.Unmarshal([]byte(rest), &d.entrypoint); err != nil {
				t.Fatalf("ENTRYPOINT %s: not the exec form: %v", rest, err)
			}
		case "CMD":
			if err := json.Unmarshal([]byte(rest), &d.cmd); err != nil {
				t.Fatalf("CMD %s: not the exec form: %v", rest, err)
			}
		}
	}
	return d
}

// words splits s at spaces outside double quotes, removing the quotes.
func words(s string) []string {
	var out []string
	var cur strings.Builder
	quoted, any := false, false
	for _, c := range s {
		switch {
		case c == '"':
			quoted, any = !quoted, true
		case (c == ' ' || c == '\t') && !quoted:
			if any || cur.Len() > 0 {
				out = append(out, cur.String())
			}
			cur.Reset()
			any = false
		default:
			cur.WriteRune(c)
		}
	}
	if any || cur.Len() > 0 {
		out = append(out, cur.String())
	}
	return out
}

// docker build is not available on this machine, so the test does what the image
// does: it checks the Dockerfile's shape (multi-stage, non-root, a volume for the
// SQLite file, exec-form entrypoint), runs its go build line, then runs the
// entrypoint with the image's environment (its /data is a directory of the test's,
// and the listeners take free loopback ports, as `docker run -e` would set them),
// as the image's user when the test runs as root. Through it, a keyed send is
// claimed in the SQLite file and its retry replayed; -version and -h exit 0.
func TestDockerEntrypoint(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the sidecar: not in -short")
	}
	d := readDockerfile(t, "../../Dockerfile")
	if d.stages < 2 {
		t.Errorf("the Dockerfile has %d stage(s), want a build stage and a runtime stage", d.stages)
	}
	if d.user == "" || d.user == "root" || strings.HasPrefix(d.user, "0") {
		t.Errorf("USER %q: the image must run as a non-root user", d.user)
	}
	if !strings.Contains(d.buildLine, "CGO_ENABLED=1") {
		t.Errorf("the build line does not enable cgo, which SQLite needs: %s", d.buildLine)
	}
	if len(d.entrypoint) == 0 || !filepath.IsAbs(d.entrypoint[0]) {
		t.Fatalf("ENTRYPOINT %q: want the binary's absolute path, exec form", d.entrypoint)
	}
	copied := false
	for _, c := range d.copies {
		copied = copied || (strings.Contains(c, "--from=") && strings.HasSuffix(c, " "+d.entrypoint[0]))
	}
	if !copied {
		t.Errorf("no COPY --from of the build stage puts the binary at %s: %q", d.entrypoint[0], d.copies)
	}
	store := d.env["IDEMPOTENCY_STORE"]
	if len(d.volumes) != 1 || !strings.HasPrefix(store, d.volumes[0]+"/") || d.workdir != d.volumes[0] {
		t.Errorf("IDEMPOTENCY_STORE %q, VOLUME %q, WORKDIR %q: want the SQLite file in the volume", store, d.volumes, d.workdir)
	}
	for i, name := range []string{"IDEMPOTENCY_LISTEN", "IDEMPOTENCY_ADMIN"} {
		if want := "0.0.0.0:" + strings.Split(strings.Join(d.expose, " ")+" ", " ")[i]; d.env[name] != want {
			t.Errorf("%s %q, EXPOSE %q: want %s", name, d.env[name], d.expose, want)
		}
	}

	// The build line, from the module root as the build stage's WORKDIR is the
	// repository's root.
	line, _, _ := strings.Cut(d.buildLine[strings.Index(d.buildLine, "go build"):], "&&")
	w := words(os.Expand(line, func(k string) string { return map[string]string{"VERSION": "v9.9.9-test", "REVISION": "abc123"}[k] }))
	if w[0] != "go" || w[1] != "build" {
		t.Fatalf("build line %q", line)
	}
	shared, err := os.MkdirTemp("", "entrypoint")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(shared) })
	os.Chmod(shared, 0o755)
	bin := filepath.Join(shared, "a2a-idempotency-proxy")
	for i := range w {
		if i > 0 && w[i-1] == "-o" {
			w[i] = bin
		}
	}
	build := exec.Command(w[0], w[1:]...)
	build.Dir = "../.."
	build.Env = append(os.Environ(), "CGO_ENABLED=1")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(w, " "), err, out)
	}
	data := filepath.Join(shared, "data")
	if err := os.Mkdir(data, 0o755); err != nil {
		t.Fatal(err)
	}

	up := testkit.NewServer(t, testkit.Config{})
	env := []string{"PATH=/usr/bin:/bin"}
	for k, v := range d.env {
		if strings.HasPrefix(v, d.volumes[0]+"/") {
			v = data + strings.TrimPrefix(v, d.volumes[0])
		}
		env = append(env, k+"="+v)
	}
	env = append(env, "IDEMPOTENCY_UPSTREAM="+up.URL, "IDEMPOTENCY_LISTEN=127.0.0.1:0", "IDEMPOTENCY_ADMIN=127.0.0.1:0")
	command := func(args ...string) *exec.Cmd {
		cmd := exec.Command(bin, append(append(d.entrypoint[1:], d.cmd...), args...)...)
		cmd.Env, cmd.Dir = env, data
		if os.Getuid() == 0 {
			uid, gid, err := parseUser(d.user)
			if err != nil {
				t.Fatalf("USER %q: %v", d.user, err)
			}
			os.Chown(data, uid, gid)
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
		}
		return cmd
	}

	for _, args := range [][]string{{"-version"}, {"-h"}} {
		out, err := command(args...).CombinedOutput()
		if err != nil {
			t.Errorf("entrypoint %s: %v\n%s", args, err, out)
		}
		if args[0] == "-version" && !strings.Contains(string(out), "a2a-idempotency-proxy v9.9.9-test (revision abc123") {
			t.Errorf("-version: %s", out)
		}
	}

	cmd := command()
	stdout, _ := cmd.StdoutPipe()
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	logs := &testkit.Buffer{}
	go io.Copy(logs, stderr)
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		if err := cmd.Wait(); err != nil {
			t.Errorf("the entrypoint after SIGTERM: %v", err)
		}
		if t.Failed() {
			t.Logf("entrypoint logs:\n%s", logs.String())
		}
	})
	var started string
	select {
	case started = <-firstLines(stdout):
	case <-time.After(30 * time.Second):
		t.Fatalf("the entrypoint did not listen within 30s:\n%s", logs.String())
	}
	m := regexp.MustCompile(`listening (http://\S+), upstream .*, admin (http://\S+), keys in (.*)$`).FindStringSubmatch(started)
	if m == nil || m[3] != "SQLite file "+filepath.Join(data, "idempotency-proxy.db") {
		t.Fatalf("startup line %q: want the SQLite file in the volume", started)
	}
	body := restSend(t, "msg-image-1", "key-through-the-image-000001", "hello")
	_, first := post(t, m[1]+"/tenants/acme/message:send", body)
	_, retry := post(t, m[1]+"/tenants/acme/message:send", body)
	if taskID(first) == "" || taskID(retry) != taskID(first) || up.Runs() != 1 {
		t.Errorf("first %s, retry %s, %d runs: want one run, the retry replayed", first, retry, up.Runs())
	}
	if _, err := os.Stat(filepath.Join(data, "idempotency-proxy.db")); err != nil {
		t.Errorf("the SQLite file: %v", err)
	}
	for _, path := range []string{"/livez", "/readyz"} {
		resp, err := http.Get(m[2] + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s: %d", path, resp.StatusCode)
		}
	}
	// The image logs JSON, one object a line.
	time.Sleep(100 * time.Millisecond)
	for l := range strings.Lines(logs.String()) {
		var v map[string]any
		if json.Unmarshal([]byte(l), &v) != nil || v["msg"] == nil {
			t.Errorf("a log line is not a JSON object: %q", l)
			break
		}
	}
}

// parseUser reads USER uid[:gid] (numeric, as an image without /etc/passwd needs).
func parseUser(user string) (uid, gid int, err error) {
	u, g, ok := strings.Cut(user, ":")
	if uid, err = strconv.Atoi(u); err != nil {
		return 0, 0, err
	}
	gid = uid
	if ok {
		gid, err = strconv.Atoi(g)
	}
	return uid, gid, err
}
