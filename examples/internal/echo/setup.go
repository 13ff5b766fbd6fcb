package echo

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/a2akit/idempotency/sqlstore"
	"github.com/a2akit/idempotency/sqlstore/a2atasks"
)

// Flags are the command line every example server shares: where it listens (-addr)
// and how its agent behaves (-delay, -reply).
type Flags struct {
	Addr  string
	Delay time.Duration
	Reply string // task or message
}

// AddFlags registers the shared flags on fs; their values are read after fs.Parse.
func AddFlags(fs *flag.FlagSet) *Flags {
	f := new(Flags)
	fs.StringVar(&f.Addr, "addr", "127.0.0.1:8080", "`host:port` to listen on; port 0 picks a free port")
	fs.DurationVar(&f.Delay, "delay", 2*time.Second, "how long the agent works before it completes")
	fs.StringVar(&f.Reply, "reply", "task", "what the agent answers with: task or message")
	return f
}

// Agent returns the agent the flags describe, or an error for a -reply other than
// task or message.
func (f *Flags) Agent() (*Agent, error) {
	if f.Reply != "task" && f.Reply != "message" {
		return nil, fmt.Errorf("-reply %q: want task or message", f.Reply)
	}
	return &Agent{Delay: f.Delay, ReplyMessage: f.Reply == "message"}, nil
}

// String describes the agent for the server's banner: "-delay 2s, -reply task".
func (f *Flags) String() string { return fmt.Sprintf("-delay %v, -reply %s", f.Delay, f.Reply) }

// OpenStores opens the database at store (a SQLite file path or a postgres:// URL,
// [sqlstore.Open]) and returns the key index (sqlstore) and the task store
// (a2atasks) side by side in it, in their default tables, with the task table
// migrated. The key index knows the task table, so a retry finds a key's task in
// the same database; close closes the database.
func OpenStores(ctx context.Context, store string) (keys *sqlstore.Store, tasks *a2atasks.Store, close func() error, err error) {
	db, err := sqlstore.Open(ctx, store)
	if err != nil {
		return nil, nil, nil, err
	}
	keys, err = sqlstore.New(db, sqlstore.Options{TaskTable: a2atasks.DefaultTable})
	if err == nil {
		tasks, err = a2atasks.New(db, a2atasks.Options{Keys: keys})
	}
	if err == nil {
		err = tasks.Migrate(ctx)
	}
	if err != nil {
		return nil, nil, nil, errors.Join(err, db.Close())
	}
	return keys, tasks, db.Close, nil
}
