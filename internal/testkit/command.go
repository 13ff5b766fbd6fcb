package testkit

import (
	"bufio"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
