package testkit

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2asrv"
)

// Command is a server a test runs as a child process: a program that prints a
// line naming its base URL on its standard output once it accepts connections
// ("listening <base URL>", see [Listening]), and serves until it is stopped (the
// crash test's server, the restart and replica tests' one, the sidecar, the
// upstreams and examples of the e2e tests).
type Command struct {
	// URL is the base URL the server printed.
	URL string
	// Line is the line of standard output that named URL.
	Line string
	// Process is the running process, for a test that signals it.
	Process *os.Process

	exited  chan struct{}
	waitErr error
}

// BuildCommand builds the main package pkg (an import path) into a temporary
// directory of tb, with the go command of the running toolchain, and returns the
// binary's path.
func BuildCommand(tb testing.TB, pkg string) string {
	tb.Helper()
	// go test puts the go command of the running toolchain first on PATH.
	goTool, err := exec.LookPath("go")
	if err != nil {
		tb.Fatalf("the go command is needed to build %s: %v", pkg, err)
	}
	bin := filepath.Join(tb.TempDir(), filepath.Base(pkg))
	if out, err := exec.Command(goTool, "build", "-o", bin, pkg).CombinedOutput(); err != nil {
		tb.Fatalf("go build %s: %v\n%s", pkg, err, out)
	}
	return bin
}

// StartCommand starts bin with args, its standard error written to logs, and
// waits until it listens ([StartProcess]). It kills the server when tb ends.
func StartCommand(tb testing.TB, bin string, logs io.Writer, args ...string) *Command {
	tb.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Stderr = logs
	return StartProcess(tb, cmd, nil)
}

// Listening reads a base URL from a line "… listening <URL>[,] …", the line the
// kit's servers, the sidecar and the e2e upstreams print once they listen.
func Listening(line string) (string, bool) {
	_, rest, ok := strings.Cut(line, "listening ")
	if !ok {
		return "", false
	}
	url := strings.TrimSuffix(strings.Fields(rest + " ")[0], ",")
	return url, strings.HasPrefix(url, "http://") || strings.HasPrefix(url, "https://")
}

// StartProcess starts cmd and waits, 30 s at most, for the first line of its standard
// output from which urlOf reads the server's URL (nil: [Listening]); the test
// fails if the process ends or the time passes first. When cmd.Stderr is nil,
// Start keeps the process's standard error and writes it to tb if tb failed. The
// process is killed when tb ends.
func StartProcess(tb testing.TB, cmd *exec.Cmd, urlOf func(line string) (string, bool)) *Command {
	tb.Helper()
	if urlOf == nil {
		urlOf = Listening
	}
	name := filepath.Base(cmd.Path)
	var logs *Buffer
	if cmd.Stderr == nil {
		logs = &Buffer{}
		cmd.Stderr = logs
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	c := &Command{Process: cmd.Process, exited: make(chan struct{})}
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if _, ok := urlOf(sc.Text()); ok {
				lines <- sc.Text()
				break
			}
		}
		close(lines)
		io.Copy(io.Discard, stdout)
	}()
	go func() {
		c.waitErr = cmd.Wait()
		close(c.exited)
	}()
	tb.Cleanup(func() {
		c.Kill()
		if logs != nil && tb.Failed() {
			tb.Logf("%s's log:\n%s", name, logs.String())
		}
	})
	select {
	case line, ok := <-lines:
		if !ok {
			c.Kill()
			tb.Fatalf("%s exited before it listened (see its log)", name)
		}
		c.URL, _ = urlOf(line)
		c.Line = line
	case <-time.After(30 * time.Second):
		c.Kill()
		tb.Fatalf("%s did not listen within 30s", name)
	}
	return c
}

// Kill kills the server with SIGKILL and waits until it is gone. Killing a server
// that is gone does nothing.
func (c *Command) Kill() {
	c.Process.Kill()
	<-c.exited
}

// Wait waits until the process ends and returns how it ended, as
// [exec.Cmd.Wait] does.
func (c *Command) Wait() error {
	<-c.exited
	return c.waitErr
}

// ServeCommand is the main loop of a server that StartCommand runs: it listens on
// addr, builds the server cfg describes ([New]) with the base URL it listens at as
// cfg.BaseURL, prints "listening <base URL>" on standard output and serves until the
// process is killed.
func ServeCommand(addr string, cfg Config) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	cfg.BaseURL = "http://" + ln.Addr().String()
	srv, err := New(cfg)
	if err != nil {
		return err
	}
	fmt.Printf("listening %s\n", cfg.BaseURL)
	return (&http.Server{Handler: srv.Handler, ReadHeaderTimeout: 10 * time.Second}).Serve(ln)
}

// RunFile opens the file at path (created if missing) that counts an agent's runs
// across processes, and returns an [Agent.OnRun] that appends the line "<message
// id>" to it as each run starts, or "<message id> <name>" when name is not empty.
// Each line is one write(2) on an O_APPEND file: whole, and in the page cache (which
// outlives the process) before the agent goes on. A failed write ends the process
// with status 3. Read the file with [ReadRunFile].
func RunFile(path, name string) (func(context.Context, *a2asrv.ExecutorContext), error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	suffix := "\n"
	if name != "" {
		suffix = " " + name + "\n"
	}
	return func(_ context.Context, ec *a2asrv.ExecutorContext) {
		if _, err := f.Write([]byte(ec.Message.ID + suffix)); err != nil {
			fmt.Fprintln(os.Stderr, "recording a run:", err)
			os.Exit(3)
		}
	}, nil
}

// ReadRunFile reads a file that [RunFile] writes: how many runs each message id
// had, and the names of the processes that ran them.
func ReadRunFile(path string) (runs map[string]int, by map[string][]string, err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	runs, by = map[string]int{}, map[string][]string{}
	for line := range strings.SplitSeq(string(data), "\n") {
		if line == "" {
			continue
		}
		id, name, _ := strings.Cut(line, " ")
		runs[id]++
		if name != "" {
			by[id] = append(by[id], name)
		}
	}
	return runs, by, nil
}
