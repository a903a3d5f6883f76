package leader

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/cilium/hive/cell"
	"github.com/cilium/hive/hivetest"
	"github.com/cilium/statedb"

	"github.com/heraldlb/herald/tables"
)

// A leader-only job runs once per term, its context ends with the term,
// what a term decided is cleared after it, and a run that fails while its
// term goes on is tried again in the same term.
func TestJobFollowsTerms(t *testing.T) {
	db := statedb.New()
	leadership, err := tables.NewLeadershipTable(db)
	if err != nil {
		t.Fatal(err)
	}
	lead := func(leading bool, term uint64) {
		wtxn := db.WriteTxn(leadership)
		_, _, _ = leadership.Insert(wtxn, &tables.Leadership{Lease: "test", Leading: leading, Term: term, ValidUntil: time.Now().Add(time.Hour)})
		wtxn.Commit()
	}

	var (
		mu      sync.Mutex
		log     []string
		started = make(chan uint64, 10)
		failing = true
	)
	note := func(s string) { mu.Lock(); log = append(log, s); mu.Unlock() }
	job := Job{DB: db, Leadership: leadership, Lease: "test", Name: "test job", RetryAfter: 10 * time.Millisecond,
		Run: func(ctx context.Context, term uint64, _ func()) error {
			mu.Lock()
			fail := failing && term == 2
			failing = failing && !fail
			mu.Unlock()
			started <- term
			if fail {
				note("run 2 failed")
				return errors.New("cannot list")
			}
			<-ctx.Done()
			note("run ended")
			return nil
		},
		Clear: func() { note("clear") },
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		health, _ := cell.NewSimpleHealth()
		job.Follow(ctx, health, hivetest.Logger(t, hivetest.LogLevel(slog.LevelError)))
	}()

	expect := func(term uint64) {
		t.Helper()
		select {
		case got := <-started:
			if got != term {
				t.Fatalf("run started in term %d, want %d", got, term)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no run started in term %d", term)
		}
	}
	lead(true, 1)
	expect(1)
	lead(false, 1) // the term ends: the run's context with it
	lead(true, 2)
	expect(2) // fails on its own...
	expect(2) // ...and is tried again in the same term
	lead(true, 3)
	expect(3)
	cancel()
	<-done

	want := []string{"run ended", "clear", "run 2 failed", "clear", "run ended", "clear", "run ended", "clear"}
	mu.Lock()
	defer mu.Unlock()
	if len(log) != len(want) {
		t.Fatalf("events %q, want %q", log, want)
	}
	for i := range want {
		if log[i] != want[i] {
			t.Fatalf("events %q, want %q", log, want)
		}
	}
}
