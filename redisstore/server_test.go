package redisstore_test

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/redisstore"
)

// privateServer starts a redis-server of the test's own, on a Unix socket, with the
// given settings (the shared server's must not change under other tests), and
// returns a client of it. It skips the test when redis-server is not installed.
func privateServer(t *testing.T, settings ...string) *redis.Client {
	t.Helper()
	dir := t.TempDir()
	sock := filepath.Join(dir, "redis.sock")
	startServer(t, dir, append([]string{"--port", "0", "--unixsocket", sock}, settings...)...)
	rdb := redis.NewClient(&redis.Options{Network: "unix", Addr: sock})
	t.Cleanup(func() { rdb.Close() })
	waitPing(t, rdb)
	return rdb
}

// startServer starts redis-server without persistence, in dir, with args, and stops
// it when t ends (showing its output when t failed). It skips t when redis-server is
// not installed.
func startServer(t *testing.T, dir string, args ...string) {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server is not installed; this test starts a server of its own")
	}
	cmd := exec.Command(bin, append([]string{"--save", "", "--appendonly", "no", "--dir", dir}, args...)...)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("redis-server:\n%s", out.String())
		}
	})
}

// waitPing waits up to 15 seconds for the server of rdb to answer.
func waitPing(t *testing.T, rdb *redis.Client) {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); rdb.Ping(context.Background()).Err() != nil; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the private redis-server did not answer within 15s")
		}
	}
}

// TestHonoursKeys: a server that evicts keys, or a replica, does not honour keys; one
// with noeviction does, whatever its maxmemory.
func TestHonoursKeys(t *testing.T) {
	rdb := privateServer(t, "--maxmemory", "64mb", "--maxmemory-policy", "noeviction")
	s, err := redisstore.New(rdb, redisstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := s.Check(ctx); err != nil || !s.HonoursKeys(ctx) {
		t.Errorf("noeviction: Check = %v, HonoursKeys = %v; want nil, true", err, s.HonoursKeys(ctx))
	}
	for _, policy := range []string{"allkeys-lru", "volatile-ttl", "allkeys-random"} {
		rdb.ConfigSet(ctx, "maxmemory-policy", policy)
		if err := s.Check(ctx); !errors.Is(err, redisstore.ErrUnsafeServer) || !strings.Contains(err.Error(), policy) || s.HonoursKeys(ctx) {
			t.Errorf("%s: Check = %v, HonoursKeys = %v; want ErrUnsafeServer naming the policy, false", policy, err, s.HonoursKeys(ctx))
		}
	}
	rdb.ConfigSet(ctx, "maxmemory", "0") // no bound: nothing is evicted, whatever the policy
	if err := s.Check(ctx); err != nil {
		t.Errorf("maxmemory 0: Check = %v, want nil", err)
	}
	rdb.ConfigSet(ctx, "maxmemory-policy", "noeviction")
	// A replica (of a primary that is not there: the role is what counts).
	if err := rdb.Do(ctx, "REPLICAOF", "127.0.0.1", "1").Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.Check(ctx); !errors.Is(err, redisstore.ErrUnsafeServer) || s.HonoursKeys(ctx) {
		t.Errorf("replica: Check = %v; want ErrUnsafeServer", err)
	}
	rdb.Close()
	if !s.HonoursKeys(ctx) {
		t.Error("HonoursKeys = false for a server that does not answer; want true (the calls fail closed)")
	}
}

// TestOutOfMemory: a server at maxmemory with noeviction refuses new claims and binds,
// which the store reports as ErrFull, whole (nothing half-written), without a bound
// (the claim is one SET) and with one (a script that counts); releases and
// extensions, which take no memory, still run, and a released key frees its place.
func TestOutOfMemory(t *testing.T) {
	for _, b := range bounds {
		t.Run(b.name, func(t *testing.T) {
			rdb := privateServer(t, "--maxmemory", "4mb", "--maxmemory-policy", "noeviction")
			limit := b.limit
			if limit > 0 {
				limit = 1_000_000 // counted, never reached
			}
			s, err := redisstore.New(rdb, redisstore.Options{MaxKeysPerScope: limit})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			var claims []idempotency.Claim
			var full error
			for i := 0; full == nil && i < 100_000; i++ {
				c, err := s.Claim(ctx, "", key(i), "m", time.Minute)
				if err != nil {
					full = err
					break
				}
				claims = append(claims, c)
			}
			if !errors.Is(full, idempotency.ErrFull) {
				t.Fatalf("claims until the server is full: %v after %d claims, want ErrFull", full, len(claims))
			}
			n := len(claims)
			names := n // the keys claimed, and the scope's set when counted: the refused claim wrote nothing
			if limit > 0 {
				names++
				if c, err := s.Capacity(ctx, ""); err != nil || c.Held != n {
					t.Errorf("Capacity = %+v, %v; want the %d keys claimed (the refused claim counted nothing)", c, err, n)
				}
			}
			if got := rdb.DBSize(ctx).Val(); got != int64(names) {
				t.Errorf("the server holds %d keys after %d claims; want %d", got, n, names)
			}
			if err := s.Bind(ctx, "", key(0), claims[0].Token, idempotency.Binding{Reply: make([]byte, 1<<20)}); !errors.Is(err, idempotency.ErrFull) {
				t.Errorf("Bind of a 1 MiB reply on a full server = %v, want ErrFull", err)
			}
			if rec, _, err := s.Lookup(ctx, "", key(0)); err != nil || !rec.Pending() {
				t.Errorf("after the refused bind: %+v, %v; want the key pending as it was", rec, err)
			}
			if err := s.Extend(ctx, "", key(1), claims[1].Token, time.Hour); err != nil {
				t.Errorf("Extend on a full server: %v", err)
			}
			for i := range n { // all but the one extended (a refused 1 MiB bind may hold its buffer a while)
				if i == 1 {
					continue
				}
				if err := s.Release(ctx, "", key(i), claims[i].Token); err != nil {
					t.Fatalf("Release on a full server: %v", err)
				}
			}
			if _, err := s.Claim(ctx, "", key(n+1), "m", time.Minute); err != nil {
				t.Errorf("a claim after releases freed memory: %v", err)
			}
		})
	}
}
