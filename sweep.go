package idempotency

import (
	"context"
	"log/slog"
	"time"
)

// DefaultSweepInterval is how often a [SweepRunner] sweeps when its Interval is zero.
const DefaultSweepInterval = time.Hour

// A SweepRunner runs a [Sweeper]'s retention sweep on a ticker, so that a server does
// not write the loop itself:
//
//	go idempotency.SweepRunner{Sweeper: store, Policy: policy, Logger: logger}.Run(ctx)
//
// The first sweep runs one Interval after Run starts (a process that restarts often
// does not sweep on every start), then every Interval, each bounded by ctx; sweeps
// never overlap. After each sweep it logs one line (Info with the counts, Warn with
// the error when the sweep failed) and calls OnSweep. A sweep that fails is not
// retried before the next tick: PurgeExpired is safe to run again, and the keys it
// missed are still old at the next one.
type SweepRunner struct {
	// Sweeper is what is swept: a KeyIndex that implements Sweeper, or a store that
	// sweeps tasks and keys together (sqlstore/a2atasks). Required.
	Sweeper Sweeper
	// Policy says which keys (and tasks) each sweep deletes.
	Policy RetentionPolicy
	// Interval is the time between two sweeps; zero means [DefaultSweepInterval], and
	// a negative value turns the sweep off (Run returns at once).
	Interval time.Duration
	// Logger receives one line per sweep; nil means slog.Default().
	Logger *slog.Logger
	// OnSweep, when set, is called after each sweep with its report and error (for
	// metrics). An error that only says ctx ended is not reported.
	OnSweep func(PurgeReport, error)
}

// Run sweeps until ctx ends, then returns. It panics when Sweeper is nil: that is a
// configuration error, found when the program starts.
func (r SweepRunner) Run(ctx context.Context) {
	if r.Sweeper == nil {
		panic("idempotency: SweepRunner.Run with a nil Sweeper")
	}
	interval := r.Interval
	switch {
	case interval < 0:
		return
	case interval == 0:
		interval = DefaultSweepInterval
	}
	log := r.Logger
	if log == nil {
		log = slog.Default()
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		r.sweep(ctx, log)
	}
}

// sweep runs one sweep and reports it.
func (r SweepRunner) sweep(ctx context.Context, log *slog.Logger) {
	start := time.Now()
	rep, err := r.Sweeper.PurgeExpired(ctx, r.Policy)
	if err != nil && ctx.Err() != nil {
		return // stopping: not a failure of the store
	}
	attrs := []slog.Attr{
		slog.Int64("keys_deleted", rep.KeysDeleted), slog.Int64("tasks_deleted", rep.TasksDeleted),
		slog.Int("batches", rep.Batches), slog.Bool("complete", rep.Complete),
		slog.Duration("took", time.Since(start)),
	}
	if err != nil {
		log.LogAttrs(ctx, slog.LevelWarn, "idempotency: retention sweep failed; the next one runs in an interval",
			append(attrs, slog.String("error", err.Error()))...)
	} else {
		log.LogAttrs(ctx, slog.LevelInfo, "idempotency: retention sweep", attrs...)
	}
	if r.OnSweep != nil {
		r.OnSweep(rep, err)
	}
}
