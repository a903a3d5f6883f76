package k8swatch

import (
	"context"
	"fmt"

	"github.com/heraldlb/herald/tables"
)

// freshness implements tables.Freshness for the reflectors that can catch
// up (those whose rows carry their object's resourceVersion).
type freshness struct {
	catchUps map[string]func(context.Context) error
}

func newFreshness() *freshness { return &freshness{catchUps: map[string]func(context.Context) error{}} }

func (f *freshness) provide() tables.Freshness { return f }

func (f *freshness) CatchUp(ctx context.Context, names ...string) error {
	for _, name := range names {
		catchUp, ok := f.catchUps[name]
		if !ok {
			return fmt.Errorf("table %s cannot catch up with the API server (not reflected here)", name)
		}
		if err := catchUp(ctx); err != nil {
			return fmt.Errorf("table %s: %w", name, err)
		}
	}
	return nil
}
