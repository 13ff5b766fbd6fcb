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

// Command is a server a test runs as a child process: a program that prints
// "listening <base URL>" on the first line of its standard output once it accepts
// connections, and serves until it is killed (the crash test's server, and the
// restart and replica tests' one).
type Command struct {
	// URL is the base URL the server printed.
	URL string

	cmd    *exec.Cmd
	exited chan struct{}
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
// waits until it listens. It kills the server when tb ends.
func StartCommand(tb testing.TB, bin string, logs io.Writer, args ...string) *Command {
	tb.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Stderr = logs
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	c := &Command{cmd: cmd, exited: make(chan struct{})}
	listening := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			listening <- strings.TrimPrefix(sc.Text(), "listening ")
		}
		close(listening)
		for sc.Scan() {
		}
	}()
	go func() {
		cmd.Wait()
		close(c.exited)
	}()
	tb.Cleanup(c.Kill)
	select {
	case url, ok := <-listening:
		if !ok || !strings.HasPrefix(url, "http://") {
			c.Kill()
			tb.Fatalf("%s did not start (see its log)", filepath.Base(bin))
		}
		c.URL = url
	case <-time.After(30 * time.Second):
		c.Kill()
		tb.Fatalf("%s did not start within 30s", filepath.Base(bin))
	}
	return c
}

// Kill kills the server with SIGKILL and waits until it is gone. Killing a server
// that is gone does nothing.
func (c *Command) Kill() {
	c.cmd.Process.Kill()
	<-c.exited
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
