package redisstore_test

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/conformance"
	"github.com/a2akit/idempotency/redisstore"
)

// TestClusterConformance runs the suite through a *redis.ClusterClient on a Redis
// Cluster of one node of the test's own, which holds every slot. A node in cluster
// mode refuses a script whose keys lie in different hash slots (CROSSSLOT), so the
// suite passing there shows that every script's keys share a slot.
func TestClusterConformance(t *testing.T) {
	addr := clusterNode(t)
	for _, b := range bounds {
		t.Run(b.name, func(t *testing.T) {
			conformance.RunHarness(t, func(t *testing.T) conformance.Harness {
				clock := conformance.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
				opts := redisstore.Options{Prefix: "c" + randomHex() + ":", MaxKeysPerScope: b.limit, Now: clock.Now, TTL: conformanceTTL}
				open := func() (*redisstore.Store, error) {
					rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{addr}, ContextTimeoutEnabled: true})
					t.Cleanup(func() { rdb.Close() })
					return redisstore.New(rdb, opts)
				}
				ix, err := open()
				if err != nil {
					t.Fatal(err)
				}
				return conformance.Harness{
					Index:      ix,
					Advance:    clock.Advance,
					TTL:        conformanceTTL,
					OpenHandle: func() (idempotency.KeyIndex, error) { return open() },
				}
			})
		})
	}
}

// clusterNode starts a redis-server in cluster mode on a free loopback port, gives it
// every slot, waits for the cluster to be ok, and returns its address.
func clusterNode(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server is not installed; the cluster test starts a node of its own")
	}
	var port int
	for range 20 { // a port whose cluster bus port (+10000) is free too
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port = ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		if bus, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port+10000)); port+10000 < 65536 && err == nil {
			bus.Close()
			break
		}
		port = 0
	}
	if port == 0 {
		t.Skip("no free port pair for a cluster node")
	}
	dir := t.TempDir()
	startServer(t, dir, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--cluster-enabled", "yes",
		"--cluster-config-file", dir+"/nodes.conf")
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	node := redis.NewClient(&redis.Options{Addr: addr})
	defer node.Close()
	ctx := context.Background()
	waitPing(t, node)
	deadline := time.Now().Add(15 * time.Second)
	if err := node.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", 0, 16383).Err(); err != nil {
		t.Fatal(err)
	}
	for {
		info, _ := node.ClusterInfo(ctx).Result()
		if strings.Contains(info, "cluster_state:ok") {
			return addr
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cluster was not ok within 15s:\n%s", info)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestClusterRefusesCrossSlot: the node refuses a script over two slots, so the
// conformance run above would have failed had the store's keys not shared one.
func TestClusterRefusesCrossSlot(t *testing.T) {
	addr := clusterNode(t)
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	err := rdb.Eval(context.Background(), "return redis.call('SET', KEYS[1], 1) and redis.call('SET', KEYS[2], 1)", []string{"{a}x", "{b}x"}).Err()
	if err == nil || !strings.Contains(err.Error(), "slot") {
		t.Errorf("a script over two slots: %v; want the node to refuse it", err)
	}
}
